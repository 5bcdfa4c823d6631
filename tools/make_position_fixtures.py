#!/usr/bin/python3
"""Why position embeddings matter, measured with PyTorch on the demo ViT (Debian's python3-torch):

    /usr/bin/python3 tools/make_position_fixtures.py

The experiment: the demo model with and without its position embeddings (pos_embed.zero_()) on a
picture and on the same picture with its 8x8 patches shuffled. The permutation is the one attnscope
uses (core/vit/positions.hpp): a Fisher-Yates shuffle driven by splitmix64 from a seed; shuffled
patch i shows original patch order[i].

Writes
  tests/data/vit/positions/   the fixture of tests/test_positions.cpp, for assets/samples/06_triangle.png
                              and seed 7:
      pixels.npy              [1, 3, 64, 64] the normalized picture
      shuffled_pixels.npy     [1, 3, 64, 64] the picture with its patches shuffled
      {pos,nopos}_logits.npy           [1, 4] the model on the picture
      {pos,nopos}_shuffled_logits.npy  [1, 4] the model on the shuffled picture
      {pos,nopos}_shuffled_attn3.npy   [1, 3, 65, 65] the last block's attention on the shuffled picture
      expected.json           the order, and what torch measured: max |attn_shuffled - attn[o, o]| over
                              all blocks (o: the permutation on the tokens, class token kept), max
                              |probs_shuffled - probs|
  assets/models/demo_vit.positions.json
                              correct predictions on the 160 held-out images (tests/data/vit/heldout)
                              with and without position embeddings, as is and shuffled (seed 1, one
                              permutation for every image), and the mean probability of the true
                              class; the Image panel and README show it
  assets/models/where_vit.positions.json
                              the same for the position-task model (tools/train_where_vit.py) on its
                              160 held-out images (tests/data/vit/heldout_where)
"""
import copy
import json
import os
import struct
import sys

import numpy as np
import torch
import torchvision.io

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_vit_golden import VisionTransformer, forward_with_attention  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "assets", "models")
PICTURE = os.path.join(ROOT, "assets", "samples", "06_triangle.png")
FIXTURE_SEED, ACCURACY_SEED = 7, 1
MASK64 = (1 << 64) - 1


def patch_permutation(patches, seed):
    """attnscope's patch_permutation: Fisher-Yates with splitmix64 (core/vit/positions.hpp)."""
    state = seed

    def next_value():
        nonlocal state
        state = (state + 0x9E3779B97F4A7C15) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    order = list(range(patches))
    for i in range(patches - 1, 0, -1):
        j = next_value() % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def shuffle_patches(x, p, order):
    """[B, 3, H, W] with its p x p patches moved: shuffled patch i is original patch order[i]."""
    B, C, H, W = x.shape
    gh, gw = H // p, W // p
    patches = x.reshape(B, C, gh, p, gw, p).permute(0, 2, 4, 1, 3, 5).reshape(B, gh * gw, C, p, p)
    patches = patches[:, torch.tensor(order)]
    return patches.reshape(B, gh, gw, C, p, p).permute(0, 3, 1, 4, 2, 5).reshape(B, C, H, W)


def load_model(path):
    """A ViT written by tools/train_*_vit.py (F16, timm names), in float32; and its metadata."""
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__")
    data = blob[8 + n:]
    state = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = {"F16": np.float16, "F32": np.float32}[info["dtype"]]
        array = np.frombuffer(data[begin:end], dtype=dtype).reshape(info["shape"]).astype(np.float32)
        state[name] = torch.from_numpy(array.copy())
    dim = state["patch_embed.proj.weight"].shape[0]
    patch = state["patch_embed.proj.weight"].shape[2]
    depth = len({k.split(".")[1] for k in state if k.startswith("blocks.")})
    classes = state["head.weight"].shape[0]
    mlp_ratio = state["blocks.0.mlp.fc1.weight"].shape[0] / dim
    image = int(meta["image_size"])
    model = VisionTransformer(image, patch, classes, dim, depth, int(meta["num_heads"]), mlp_ratio)
    model.load_state_dict(state)
    model.eval()
    return model, meta


def normalize(rgb_uint8, meta):
    """[3, H, W] uint8 -> [1, 3, H, W] normalized like the model was trained (64x64: no resize)."""
    mean = torch.tensor(json.loads(meta["mean"])).view(1, 3, 1, 1)
    std = torch.tensor(json.loads(meta["std"])).view(1, 3, 1, 1)
    return (rgb_uint8.float().unsqueeze(0) / 255.0 - mean) / std


def without_pos_embed(model):
    clone = copy.deepcopy(model)
    with torch.no_grad():
        clone.pos_embed.zero_()
    return clone


def max_shuffle_difference(attns, attns_shuffled, order):
    """max over blocks of |attn_shuffled[:, :, t, u] - attn[:, :, o(t), o(u)]|, the class token kept."""
    o = torch.tensor([0] + [1 + i for i in order])
    return max(float((s - a[:, :, o][:, :, :, o]).abs().max()) for a, s in zip(attns, attns_shuffled))


def save(path, t):
    np.save(path, np.ascontiguousarray(t.detach().numpy().astype("<f4")))


def make_fixture(model, nopos, meta, out):
    os.makedirs(out, exist_ok=True)
    x = normalize(torchvision.io.read_image(PICTURE), meta)
    order = patch_permutation(64, FIXTURE_SEED)
    xs = shuffle_patches(x, 8, order)
    save(os.path.join(out, "pixels.npy"), x)
    save(os.path.join(out, "shuffled_pixels.npy"), xs)
    expected = {"picture": "assets/samples/06_triangle.png", "seed": FIXTURE_SEED, "order": order,
                "torch": torch.__version__}
    for name, m in (("pos", model), ("nopos", nopos)):
        logits, attns = forward_with_attention(m, x)
        logits_s, attns_s = forward_with_attention(m, xs)
        save(os.path.join(out, name + "_logits.npy"), logits)
        save(os.path.join(out, name + "_shuffled_logits.npy"), logits_s)
        save(os.path.join(out, name + "_shuffled_attn3.npy"), attns_s[-1])
        expected[name] = {
            "max_attn_difference": max_shuffle_difference(attns, attns_s, order),
            "max_probs_difference": float((logits_s.softmax(-1) - logits.softmax(-1)).abs().max()),
            "prediction": int(logits.argmax()), "shuffled_prediction": int(logits_s.argmax())}
        print(f"{name}: torch max |attn_shuffled - attn[o, o]| = {expected[name]['max_attn_difference']:.3g}, "
              f"max |probs difference| = {expected[name]['max_probs_difference']:.3g}")
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)


def heldout_accuracy(model, nopos, meta, heldout):
    labels = json.load(open(os.path.join(heldout, "labels.json")))
    mosaic = torchvision.io.read_image(os.path.join(heldout, "images.png"))  # [3, rows * tile, columns * tile]
    tile, columns, count = labels["tile"], labels["columns"], len(labels["label"])
    images = torch.cat([normalize(mosaic[:, (i // columns) * tile:(i // columns + 1) * tile,
                                         (i % columns) * tile:(i % columns + 1) * tile], meta) for i in range(count)])
    target = torch.tensor(labels["label"])
    order = patch_permutation(64, ACCURACY_SEED)
    shuffled = shuffle_patches(images, 8, order)
    correct, true_prob = {}, {}
    for name, m in (("pos_embed", model), ("no_pos_embed", nopos)):
        correct[name], true_prob[name] = {}, {}
        for arrangement, x in (("as_is", images), ("shuffled", shuffled)):
            probs = m(x).softmax(-1)  # [160, 4]
            correct[name][arrangement] = int((probs.argmax(-1) == target).sum())
            true_prob[name][arrangement] = round(float(probs[torch.arange(count), target].mean()), 6)
    return {"images": count, "seed": ACCURACY_SEED, "correct": correct, "mean_true_class_prob": true_prob,
            "measured_by": "tools/make_position_fixtures.py", "torch": torch.__version__}


def main():
    torch.set_num_threads(1)
    for name, heldout in (("demo_vit", "heldout"), ("where_vit", "heldout_where")):
        model, meta = load_model(os.path.join(MODELS, name + ".safetensors"))
        nopos = without_pos_embed(model)
        with torch.no_grad():
            if name == "demo_vit":
                make_fixture(model, nopos, meta, os.path.join(ROOT, "tests", "data", "vit", "positions"))
            table = heldout_accuracy(model, nopos, meta, os.path.join(ROOT, "tests", "data", "vit", heldout))
        with open(os.path.join(MODELS, name + ".positions.json"), "w") as f:
            json.dump(table, f, indent=1)
        print(name, "held-out accuracy:", json.dumps(table["correct"]))


if __name__ == "__main__":
    main()
