#!/usr/bin/python3
"""Write PyTorch fixtures for the ViT block's DropPath (stochastic depth) and LayerScale into OUT_DIR.

Run with Debian's python3-torch, after building attnscope (it draws the masks):
    /usr/bin/python3 tools/make_drop_path_golden.py tests/data/drop_path [build/app/attnscope]

timm is not packaged for Debian, so the block is written here as timm writes it (timm/layers/drop.py,
timm/models/vision_transformer.py):

    def drop_path(x, drop_prob, training):
        if drop_prob == 0. or not training: return x
        keep_prob = 1 - drop_prob
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
        return x.div(keep_prob) * random_tensor
    class LayerScale: forward(x) = x * self.gamma                  # gamma [D], init_values
    x = x + self.drop_path1(self.ls1(self.attn(self.norm1(x))))
    x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
    dpr = [x.item() for x in torch.linspace(0, drop_path_rate, depth)]

except that random_tensor is not drawn by torch's bernoulli_ but read from attnscope's own dump
(`attnscope vit --drop-path P --training --seed S --dump`), mask != 0, so both run the same coin
flips. The rest of the model is make_vit_golden.py's timm-compatible VisionTransformer.

Written into OUT_DIR/<case>/: model.safetensors (with blocks.<i>.ls1.gamma, ls2.gamma), pixels.npy
[B, 3, H, W], the masks block<I>_drop_path<K>_mask.npy [B, 1, 1] as attnscope dumped them, torch's
value of every recorded block step (block<I>_<step>.npy: attn_out, ls1, drop_path1, residual1, fc2,
ls2, drop_path2, residual2), logits.npy (training), logits_eval.npy (model.eval(): DropPath the
identity), grad_output.npy G [B, K] and, from autograd on loss = sum(logits * G), the gradient of
every block's ls<K> (the branch before DropPath) and drop_path<K> outputs: block<I>_grad_<step>.npy.
meta.json holds the config, dpr and the seed; OUT_DIR/dpr.json timm's dpr lists
(torch.linspace(0, rate, depth)) for a few depths and rates.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import steps_of  # noqa: E402
from make_vit_golden import Mlp, VisionTransformer, randomize, save, write_checkpoint  # noqa: E402

CASES = [
    # name, image, patch, dim, depth, heads, MLP ratio, classes, batch, drop_path_rate, seed
    ("b4_i32_p8_d32_h2_l3_dp0.6", 32, 8, 32, 3, 2, 2.0, 5, 4, 0.6, 7),
]


class LayerScale(nn.Module):
    def __init__(self, dim, init_values):
        super().__init__()
        self.gamma = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x):
        return x * self.gamma


def drop_path(x, drop_prob, training, random_tensor):
    """timm's drop_path with random_tensor [B, 1, 1] of 0s and 1s given (attnscope's coin flips)."""
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    return x.div(keep_prob) * random_tensor


def add_layer_scale(model, gen):
    """timm's ls1, ls2 in every block, with gammas far from init_values so the test can see them."""
    dim = model.cls_token.shape[-1]
    for blk in model.blocks:
        blk.ls1 = LayerScale(dim, 1.0)
        blk.ls2 = LayerScale(dim, 1.0)
        with torch.no_grad():
            blk.ls1.gamma.copy_(0.5 + 0.5 * torch.randn(dim, generator=gen))
            blk.ls2.gamma.copy_(0.5 + 0.5 * torch.randn(dim, generator=gen))


def forward(model, x, dpr, masks, training):
    """(logits, steps) with steps[i][name] every recorded step of block i; masks[i][k] [B, 1, 1] of 0/1."""
    x = model.embed(x)
    steps = []
    for i, blk in enumerate(model.blocks):
        s = {"attn_out": steps_of(blk.attn, blk.norm1(x))["out_drop"]}
        s["ls1"] = blk.ls1(s["attn_out"])
        s["drop_path1"] = drop_path(s["ls1"], dpr[i], training, masks[i][0])
        s["residual1"] = x + s["drop_path1"]
        s["fc2"] = blk.mlp(blk.norm2(s["residual1"]))
        s["ls2"] = blk.ls2(s["fc2"])
        s["drop_path2"] = drop_path(s["ls2"], dpr[i], training, masks[i][1])
        s["residual2"] = s["residual1"] + s["drop_path2"]
        x = s["residual2"]
        steps.append(s)
    return model.head(model.norm(x)[:, 0]), steps


def attnscope_masks(attnscope, case_dir, depth, rate, seed):
    """attnscope's masks [B, 1, 1] (0 or 1/(1-p)) for every block and branch, from its --dump."""
    with tempfile.TemporaryDirectory() as dump:
        subprocess.run([attnscope, "vit", "--model", os.path.join(case_dir, "model.safetensors"), "--pixels",
                        os.path.join(case_dir, "pixels.npy"), "--drop-path", str(rate), "--training", "--seed",
                        str(seed), "--dump", dump, "--force"], check=True, stdout=subprocess.DEVNULL)
        masks = []
        for i in range(depth):
            pair = []
            for k in (1, 2):
                name = f"block{i}_drop_path{k}_mask.npy"
                shutil.copy(os.path.join(dump, name), os.path.join(case_dir, name))
                pair.append(torch.from_numpy(np.load(os.path.join(dump, name))))
            masks.append(pair)
        return masks


def make_case(out_dir, attnscope, name, image, patch, dim, depth, heads, mlp_ratio, classes, batch, rate, seed):
    gen = torch.Generator().manual_seed(3000 + seed)
    model = VisionTransformer(image, patch, classes, dim, depth, heads, mlp_ratio)
    randomize(model, gen)
    add_layer_scale(model, gen)
    pixels = torch.randn(batch, 3, image, image, generator=gen)
    case_dir = os.path.join(out_dir, name)
    os.makedirs(case_dir, exist_ok=True)
    write_checkpoint(os.path.join(case_dir, "model.safetensors"), model, {"num_heads": heads}, "F32")
    save(os.path.join(case_dir, "pixels.npy"), pixels)

    dpr = [x.item() for x in torch.linspace(0, rate, depth)]
    scaled = attnscope_masks(attnscope, case_dir, depth, rate, seed)
    masks = []
    for i, pair in enumerate(scaled):
        for m in pair:  # attnscope's mask is random_tensor / keep_prob
            assert m.shape == (batch, 1, 1)
            expected = torch.where(m != 0, torch.tensor(1.0 / (1.0 - dpr[i])), torch.tensor(0.0))
            assert torch.allclose(m, expected.float(), rtol=1e-6, atol=0), (i, m.flatten(), dpr[i])
        masks.append([(m != 0).float() for m in pair])
    dropped = sum(int((m == 0).sum()) for pair in masks[1:] for m in pair)
    kept = sum(int((m != 0).sum()) for pair in masks[1:] for m in pair)
    assert dropped >= 2 and kept >= 2, f"seed {seed}: {dropped} dropped, {kept} kept branches; pick another seed"

    G = torch.randn(batch, classes, generator=gen)
    logits, steps = forward(model, pixels, dpr, masks, True)
    for s in steps:
        for k in (1, 2):
            s[f"ls{k}"].retain_grad()
            s[f"drop_path{k}"].retain_grad()
    (logits * G).sum().backward()
    for i, s in enumerate(steps):
        for step, t in s.items():
            save(os.path.join(case_dir, f"block{i}_{step}.npy"), t)
        for k in (1, 2):
            for step in (f"ls{k}", f"drop_path{k}"):
                save(os.path.join(case_dir, f"block{i}_grad_{step}.npy"), s[step].grad)
            # A dropped sample's branch gets no gradient at all.
            for b in range(batch):
                if masks[i][k - 1][b] == 0:
                    assert torch.all(s[f"ls{k}"].grad[b] == 0)
    save(os.path.join(case_dir, "logits.npy"), logits)
    save(os.path.join(case_dir, "grad_output.npy"), G)
    with torch.no_grad():
        logits_eval, _ = forward(model.eval(), pixels, dpr, masks, False)
    save(os.path.join(case_dir, "logits_eval.npy"), logits_eval)
    meta = {"image_size": image, "patch_size": patch, "dim": dim, "depth": depth, "heads": heads,
            "mlp_hidden": int(dim * mlp_ratio), "classes": classes, "batch": batch, "drop_path_rate": rate,
            "dpr": dpr, "seed": seed, "dropped_branches_after_block0": dropped, "torch": torch.__version__}
    with open(os.path.join(case_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)


# (depth, drop_path_rate) of timm's dpr lists written to dpr.json: ViT-B's, DeiT III's and odd ones.
DPR_CASES = [(12, 0.1), (24, 0.4), (12, 0.2), (3, 0.6), (7, 0.3), (1, 0.5), (2, 0.9)]


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/drop_path"
    attnscope = sys.argv[2] if len(sys.argv) > 2 else "build/app/attnscope"
    torch.set_num_threads(1)
    for case in CASES:
        make_case(out_dir, attnscope, *case)
    dpr = [{"depth": d, "rate": r, "dpr": [x.item() for x in torch.linspace(0, r, d)]} for d, r in DPR_CASES]
    with open(os.path.join(out_dir, "dpr.json"), "w") as f:
        json.dump(dpr, f, indent=2)
    print("wrote", len(CASES), "DropPath/LayerScale cases to", out_dir)


if __name__ == "__main__":
    main()
