#!/usr/bin/python3
"""Train attnscope's position-task ViT: the label is WHERE the red shape is, not what it is.

The demo ViT (tools/train_demo_vit.py) names the shape of the red object. That answer is the same
wherever the object sits, so the model has no use for its position embeddings: removing them or
shuffling the patches leaves its held-out accuracy at 100%. This model sees the same pictures and
answers the quadrant that holds the red shape, which no model can do without knowing where each
patch came from. It starts from the demo model's weights (its class token already gathers the red
shape's patches) with a fresh head and is fine-tuned on the new labels; tools/make_position_fixtures.py measures both models with and without position
embeddings, as is and with shuffled patches (the Image panel's Positions tab and README show it).

Run with Debian's python3-torch (CPU, one thread, fixed seeds):

    /usr/bin/python3 tools/train_where_vit.py

Writes
  assets/models/where_vit.safetensors  F16, timm names, the same metadata keys as demo_vit
  assets/models/where_vit.json         test accuracy on 2000 fresh pictures
  tests/data/vit/heldout_where/        160 fresh pictures (seed 2) as one 16x10 mosaic, their labels
                                       and red-shape patches (the layout of tests/data/vit/heldout)
The architecture is the demo's (64x64 pictures, 8x8 patches, D=96, 4 blocks of 3 heads).
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

from make_position_fixtures import load_model
from make_vit_golden import write_checkpoint, write_png
from train_demo_vit import IMAGE, make_images, target_patches, to_tensor, train

LABELS = ["top left", "top right", "bottom left", "bottom right"]
HALF = IMAGE // 2
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_where_images(rng, n):
    """uint8 pictures [n, H, W, 3], quadrant labels [n], red-shape masks [n, H, W].

    The demo's pictures, keeping only those whose red shape lies wholly inside one quadrant;
    label = 2 * (bottom half) + (right half)."""
    kept_images, kept_labels, kept_masks, count = [], [], [], 0
    while count < n:
        images, _, masks = make_images(rng, 2 * n)
        top, bottom = masks[:, :HALF].any(axis=(1, 2)), masks[:, HALF:].any(axis=(1, 2))
        left, right = masks[:, :, :HALF].any(axis=(1, 2)), masks[:, :, HALF:].any(axis=(1, 2))
        inside = (top != bottom) & (left != right)
        kept_images.append(images[inside])
        kept_labels.append((2 * bottom + right)[inside].astype(np.int64))
        kept_masks.append(masks[inside])
        count += int(inside.sum())
    return (np.concatenate(kept_images)[:n], np.concatenate(kept_labels)[:n], np.concatenate(kept_masks)[:n])


def sincos_2d(grid, dim):
    """[grid * grid, dim] fixed 2-D sine-cosine position embeddings (row, then column; a quarter of
    the channels each for sin and cos of each axis), as MAE initialises them. The demo model never
    needed its learned ones, which stayed near their small random start; these give every patch a
    distinct, smooth place from the first step, and fine-tuning goes on from there."""
    quarter = dim // 4
    frequencies = 1.0 / 10000 ** (torch.arange(quarter, dtype=torch.float32) / quarter)  # [dim/4]
    rows, cols = torch.meshgrid(torch.arange(grid, dtype=torch.float32), torch.arange(grid, dtype=torch.float32),
                                indexing="ij")
    angles_r = rows.reshape(-1, 1) * frequencies  # [grid*grid, dim/4]
    angles_c = cols.reshape(-1, 1) * frequencies
    return torch.cat([angles_r.sin(), angles_r.cos(), angles_c.sin(), angles_c.cos()], dim=1)


def accuracy(model, images, labels, mean, std):
    model.eval()
    with torch.no_grad():
        predicted = torch.cat([model(to_tensor(images[i:i + 250], mean, std)).argmax(1)
                               for i in range(0, len(images), 250)])
    model.train()
    return float((predicted.numpy() == labels).mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=40_000, help="training pictures (fresh every step)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--out", default=ROOT, help="repository root to write into")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    log = lambda text: print(text, flush=True)

    # The demo model, its normalisation kept so both models read a picture the same way.
    model, demo_meta = load_model(os.path.join(ROOT, "assets", "models", "demo_vit.safetensors"))
    mean, std = json.loads(demo_meta["mean"]), json.loads(demo_meta["std"])
    model.head.reset_parameters()
    with torch.no_grad():
        model.pos_embed[0, 1:] = sincos_2d(IMAGE // int(demo_meta["patch_size"]), model.pos_embed.shape[-1])
    model.train()
    train(model, args.samples, args.batch, mean, std, log, draw=make_where_images, lr=args.lr)
    with torch.no_grad():  # measure the weights as saved: rounded to float16
        for p in model.parameters():
            p.copy_(p.half().float())
    test_images, test_labels, _ = make_where_images(np.random.default_rng(5), 2000)
    test_accuracy = accuracy(model, test_images, test_labels, mean, std)
    log(f"test accuracy {test_accuracy:.4f} on 2000 fresh pictures")

    models_dir = os.path.join(args.out, "assets", "models")
    heldout_dir = os.path.join(args.out, "tests", "data", "vit", "heldout_where")
    for d in (models_dir, heldout_dir):
        os.makedirs(d, exist_ok=True)
    metadata = {"num_heads": demo_meta["num_heads"], "labels": LABELS, "mean": mean, "std": std, "image_size": IMAGE,
                "patch_size": demo_meta["patch_size"], "task": "the label is the quadrant that holds the red object",
                "source": "tools/train_where_vit.py"}
    write_checkpoint(os.path.join(models_dir, "where_vit.safetensors"), model, metadata, "F16")
    with open(os.path.join(models_dir, "where_vit.json"), "w") as f:
        json.dump({"test_accuracy": test_accuracy, "test_images": len(test_images), "train_samples": args.samples,
                   "labels": LABELS, "torch": torch.__version__}, f, indent=2)

    images, labels, masks = make_where_images(np.random.default_rng(2), 160)
    mosaic = images.reshape(10, 16, IMAGE, IMAGE, 3).transpose(0, 2, 1, 3, 4).reshape(10 * IMAGE, 16 * IMAGE, 3)
    write_png(os.path.join(heldout_dir, "images.png"), mosaic)
    heldout_accuracy = accuracy(model, images, labels, mean, std)
    with open(os.path.join(heldout_dir, "labels.json"), "w") as f:
        json.dump({"tile": IMAGE, "columns": 16, "labels": LABELS, "label": labels.tolist(),
                   "target_patches": [np.flatnonzero(t).tolist() for t in target_patches(masks)],
                   "torch_accuracy": heldout_accuracy}, f)
    log(f"held-out (160, seed 2): accuracy {heldout_accuracy:.4f}")


if __name__ == "__main__":
    sys.exit(main())
