#!/usr/bin/python3
"""Train attnscope's demo Vision Transformer on a synthetic task and save it with timm's names.

Run with Debian's python3-torch (CPU, one thread, fixed seeds; 1250 steps of 128 fresh images;
the whole script took 13.5 minutes on a quiet 2-core machine):

    /usr/bin/python3 tools/train_demo_vit.py            # writes the files below
    /usr/bin/python3 tools/train_demo_vit.py --samples 20000   # a quick smoke run

The task: 64x64 images with three to five coloured shapes (circle, square, triangle, cross) on a
striped, grainy background; exactly one shape is red, and the label is the shape of the red one.
The answer depends on one object, so a model that solves it must look at that object, and its
class-token attention can be checked against the object's patches.

Writes
  assets/models/demo_vit.safetensors   F16, timm names, __metadata__ num_heads, labels (JSON list),
                                       mean, std (JSON lists), image_size, patch_size
  assets/models/demo_vit.json          what the run measured: test accuracy, class-token attention
                                       mass on the red shape's patches per block, chance level
  assets/samples/<NN>_<label>.png      a dozen 64x64 sample images (seed 3)
  tests/data/vit/heldout/images.png    160 fresh 64x64 images (seed 2) as one 16x10 mosaic, and
  tests/data/vit/heldout/labels.json   their labels and red-shape patches, for attnscope's own test
The model is a timm-compatible VisionTransformer (tools/make_vit_golden.py).
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from make_vit_golden import VisionTransformer, forward_with_attention, write_checkpoint, write_png

LABELS = ["circle", "square", "triangle", "cross"]
IMAGE, PATCH, DIM, DEPTH, HEADS, MLP_RATIO = 64, 8, 96, 4, 3, 2.0
GRID = IMAGE // PATCH
RED = np.array([215, 35, 35])
OTHER_COLOURS = np.array([[40, 160, 60], [45, 85, 205], [225, 200, 45], [235, 235, 235], [40, 185, 195],
                          [150, 70, 185]])
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---- the synthetic task -------------------------------------------------------------------
def shape_masks(kind, cx, cy, r):
    """[B, H, W] masks of one shape per image; kind, cx, cy, r are [B] arrays."""
    yy, xx = np.mgrid[0:IMAGE, 0:IMAGE].astype(np.float32) + 0.5
    dx, dy = xx[None] - cx[:, None, None], yy[None] - cy[:, None, None]
    r = r[:, None, None]
    circle = dx * dx + dy * dy <= r * r
    square = (np.abs(dx) <= 0.8 * r) & (np.abs(dy) <= 0.8 * r)
    # an upward triangle with apex (0, -r) and base corners (+-r, 0.8r)
    triangle = (dy <= 0.8 * r) & (1.8 * np.abs(dx) <= (dy + r))
    arm = 0.33 * r
    cross = ((np.abs(dx) <= arm) & (np.abs(dy) <= r)) | ((np.abs(dy) <= arm) & (np.abs(dx) <= r))
    kinds = kind[:, None, None]
    return np.where(kinds == 0, circle, np.where(kinds == 1, square, np.where(kinds == 2, triangle, cross)))


def background(rng, n):
    """[n, H, W, 3] float: a muted base colour, stripes at a random angle and frequency, grain."""
    yy, xx = np.mgrid[0:IMAGE, 0:IMAGE].astype(np.float32)
    base = rng.uniform(70, 150, size=(n, 1, 1, 3))
    base[..., 0] = np.minimum(base[..., 0], base[..., 1] + 10)  # never a reddish background
    angle = rng.uniform(0, math.pi, size=(n, 1, 1))
    freq = rng.uniform(0.08, 0.3, size=(n, 1, 1))
    stripes = np.sin(freq * (xx * np.cos(angle) + yy * np.sin(angle)) * 2 * math.pi)
    amplitude = rng.uniform(10, 30, size=(n, 1, 1, 1))
    blotches = rng.normal(0, 8, size=(n, IMAGE // 4, IMAGE // 4, 1)).repeat(4, 1).repeat(4, 2)  # 4x4-pixel grain
    return base + amplitude * stripes[..., None] + blotches


def make_images(rng, n):
    """uint8 images [n, H, W, 3], labels [n], red-shape masks [n, H, W]."""
    img = background(rng, n)
    count = rng.integers(3, 6, size=n)  # objects per image, one of them red
    placed = np.zeros((n, 0, 3))  # cx, cy, r of the objects placed so far
    labels = rng.integers(0, len(LABELS), size=n)
    target = None
    for k in range(5):
        r = rng.uniform(6, 10, size=n)
        cx, cy = rng.uniform(r, IMAGE - r), rng.uniform(r, IMAGE - r)
        for _ in range(30):  # resample centres that overlap an object placed before
            d = np.sqrt((cx[:, None] - placed[..., 0]) ** 2 + (cy[:, None] - placed[..., 1]) ** 2)
            clash = (d < r[:, None] + placed[..., 2] + 2).any(axis=1)
            if not clash.any():
                break
            cx = np.where(clash, rng.uniform(r, IMAGE - r), cx)
            cy = np.where(clash, rng.uniform(r, IMAGE - r), cy)
        kind = labels if k == 0 else rng.integers(0, len(LABELS), size=n)
        mask = shape_masks(kind, cx, cy, r) & (k < count)[:, None, None]
        mask &= ~clash[:, None, None] if k > 0 else True  # drop a distractor that found no free spot
        colour = RED if k == 0 else OTHER_COLOURS[rng.integers(0, len(OTHER_COLOURS), size=n)]
        colour = np.broadcast_to(colour, (n, 3)) + rng.normal(0, 12, size=(n, 3))
        img = np.where(mask[..., None], colour[:, None, None, :], img)
        if k == 0:
            target = mask
        placed = np.concatenate([placed, np.stack([cx, cy, np.where(mask.any(axis=(1, 2)), r, -100)], 1)[:, None]], 1)
    return np.clip(np.round(img), 0, 255).astype(np.uint8), labels, target


def target_patches(mask):
    """[n, GRID*GRID] bool: the patches holding at least one pixel of the red shape."""
    return mask.reshape(-1, GRID, PATCH, GRID, PATCH).any(axis=(2, 4)).reshape(-1, GRID * GRID)


def to_tensor(images, mean, std):
    x = torch.from_numpy(images).permute(0, 3, 1, 2).float().div(255.0)
    return (x - torch.tensor(mean).view(1, 3, 1, 1)) / torch.tensor(std).view(1, 3, 1, 1)


# ---- training and measuring ---------------------------------------------------------------
def evaluate(model, images, labels, mask, mean, std):
    """Accuracy, and per block the mean class-token attention (averaged over heads) on the red shape."""
    model.eval()
    correct, mass = 0, np.zeros(DEPTH)
    on_target = torch.from_numpy(target_patches(mask))
    with torch.no_grad():
        for i in range(0, len(images), 250):
            logits, attns = forward_with_attention(model, to_tensor(images[i:i + 250], mean, std))
            correct += (logits.argmax(1).numpy() == labels[i:i + 250]).sum()
            for b, a in enumerate(attns):
                cls_row = a[:, :, 0, 1:].mean(1)  # [B, P] class-token query, mean over heads
                mass[b] += (cls_row * on_target[i:i + 250]).sum().item()
    model.train()
    return correct / len(images), mass / len(images)


def train(model, samples, batch, mean, std, log, draw=make_images, lr=2e-3):
    """AdamW with warm-up and cosine decay on fresh images from draw(rng, batch) every step."""
    steps = samples // batch
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.05)
    warmup = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(1.0, s / steps))))
    rng = np.random.default_rng(1)
    start, running = time.time(), None
    for step in range(steps):
        images, labels, _ = draw(rng, batch)
        loss = F.cross_entropy(model(to_tensor(images, mean, std)), torch.from_numpy(labels))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        running = loss.item() if running is None else 0.98 * running + 0.02 * loss.item()
        if step % 50 == 0 or step == steps - 1:
            log(f"step {step}/{steps} samples {(step + 1) * batch} loss {running:.4f} "
                f"lr {sched.get_last_lr()[0]:.2e} {time.time() - start:.0f}s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=160_000, help="training images (fresh every step)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--out", default=ROOT, help="repository root to write into")
    args = ap.parse_args()
    torch.set_num_threads(1)  # faster than 2 threads for this size (DESIGN.md)
    torch.manual_seed(0)
    log = lambda text: print(text, flush=True)

    stats_images, _, _ = make_images(np.random.default_rng(4), 2000)
    pixels = stats_images.reshape(-1, 3) / 255.0
    mean, std = [round(float(v), 3) for v in pixels.mean(0)], [round(float(v), 3) for v in pixels.std(0)]
    log(f"mean {mean} std {std}")

    model = VisionTransformer(IMAGE, PATCH, len(LABELS), DIM, DEPTH, HEADS, MLP_RATIO)
    train(model, args.samples, args.batch, mean, std, log)
    with torch.no_grad():  # measure the weights as saved: rounded to float16
        for p in model.parameters():
            p.copy_(p.half().float())

    test_images, test_labels, test_mask = make_images(np.random.default_rng(5), 2000)
    accuracy, mass = evaluate(model, test_images, test_labels, test_mask, mean, std)
    chance = float(target_patches(test_mask).mean())
    log(f"test accuracy {accuracy:.4f} on 2000 fresh images; class-token attention on the red shape per block "
        f"{np.round(mass, 3).tolist()} (chance {chance:.3f})")

    models_dir, samples_dir = os.path.join(args.out, "assets", "models"), os.path.join(args.out, "assets", "samples")
    heldout_dir = os.path.join(args.out, "tests", "data", "vit", "heldout")
    for d in (models_dir, samples_dir, heldout_dir):
        os.makedirs(d, exist_ok=True)
    metadata = {"num_heads": HEADS, "labels": LABELS, "mean": mean, "std": std, "image_size": IMAGE,
                "patch_size": PATCH, "task": "the label is the shape of the red object",
                "source": "tools/train_demo_vit.py"}
    write_checkpoint(os.path.join(models_dir, "demo_vit.safetensors"), model, metadata, "F16")
    report = {"test_accuracy": accuracy, "test_images": len(test_images), "train_samples": args.samples,
              "cls_attention_on_target_per_block": np.round(mass, 4).tolist(), "chance": round(chance, 4),
              "labels": LABELS, "torch": torch.__version__}
    with open(os.path.join(models_dir, "demo_vit.json"), "w") as f:
        json.dump(report, f, indent=2)

    # A dozen samples (seed 3): the first three of each class.
    images, labels, _ = make_images(np.random.default_rng(3), 64)
    for c, name in enumerate(LABELS):
        for j, i in enumerate(np.flatnonzero(labels == c)[:3]):
            write_png(os.path.join(samples_dir, f"{3 * c + j:02d}_{name}.png"), images[i])

    # 160 held-out images (seed 2) as one 16 x 10 mosaic (under 1 MB), for attnscope's own accuracy test.
    images, labels, mask = make_images(np.random.default_rng(2), 160)
    mosaic = images.reshape(10, 16, IMAGE, IMAGE, 3).transpose(0, 2, 1, 3, 4).reshape(10 * IMAGE, 16 * IMAGE, 3)
    write_png(os.path.join(heldout_dir, "images.png"), mosaic)
    heldout_acc, heldout_mass = evaluate(model, images, labels, mask, mean, std)
    with open(os.path.join(heldout_dir, "labels.json"), "w") as f:
        json.dump({"tile": IMAGE, "columns": 16, "labels": LABELS, "label": labels.tolist(),
                   "target_patches": [np.flatnonzero(t).tolist() for t in target_patches(mask)],
                   "torch_accuracy": heldout_acc, "torch_last_block_cls_mass": round(float(heldout_mass[-1]), 4)}, f)
    log(f"held-out (160, seed 2): accuracy {heldout_acc:.4f}, last-block class-token mass {heldout_mass[-1]:.3f}")


if __name__ == "__main__":
    sys.exit(main())
