#!/usr/bin/python3
"""Write PyTorch fixtures for attnscope's patch merging (Swin's hierarchy) into OUT_DIR/<case>/.

Run with Debian's python3-torch:  /usr/bin/python3 tools/make_patch_merge_golden.py tests/data/patch_merge

Each case runs a windowed block (Swin's window_partition, roll, mask and window_reverse around the
reference ViTAttention, from make_window_golden.py), then Swin's PatchMerging as the Swin paper
describes it (Liu et al. 2021, section 3.1: "the first patch merging layer concatenates the features
of each group of 2 x 2 neighboring patches, and applies a linear layer on the 4C-dimensional
concatenated features ... the output dimension is set to 2C"; the official code gathers the four
neighbours with strided slices in the order x0 = [0::2, 0::2], x1 = [1::2, 0::2], x2 = [0::2, 1::2],
x3 = [1::2, 1::2] and normalizes with LayerNorm(4C) before the bias-free linear), then a second
windowed block on the merged grid with 2C channels and twice the heads. A stage whose grid is not
larger than the window uses one window of the whole grid and no shift, as Swin's blocks do.

Written: input.npy, weights.safetensors (stage 1's attention), stage2.safetensors (stage 2's),
norm_weight.npy, norm_bias.npy, reduction_weight.npy, and torch's value of every recorded step
checked by tests/test_beyond.cpp, named as attnscope names them.
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import ViTAttention, write_safetensors  # noqa: E402
from make_window_golden import windowed  # noqa: E402

CASES = [
    # name, B, H (grid side), C, h, M, shift
    ("b2_g8_c16_h2_m4_shift", 2, 8, 16, 2, 4, True),    # stage 2: a 4 x 4 grid = one window, no shift
    ("b1_g16_c8_h1_m4_shift", 1, 16, 8, 1, 4, True),    # stage 2: 8 x 8 grid, shifted 4 x 4 windows
    ("b1_g8_c8_h2_m2_plain", 1, 8, 8, 2, 2, False),     # stage 2: 4 x 4 grid in 2 x 2 windows
]


class PatchMerging(nn.Module):
    """Swin's patch merging: 2 x 2 neighbouring tokens -> one token, 4C -> LayerNorm -> 2C."""

    def __init__(self, input_resolution, dim):
        super().__init__()
        self.input_resolution = input_resolution
        self.dim = dim
        self.norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x, steps):
        H, W = self.input_resolution
        B, L, C = x.shape
        assert L == H * W and H % 2 == 0 and W % 2 == 0
        x = x.view(B, H, W, C)
        steps["patch_merge_grid"] = x
        parts = {"x0": x[:, 0::2, 0::2, :], "x1": x[:, 1::2, 0::2, :],
                 "x2": x[:, 0::2, 1::2, :], "x3": x[:, 1::2, 1::2, :]}  # [B, H/2, W/2, C] each
        for name, part in parts.items():
            steps["patch_merge_" + name] = part
        x = torch.cat(list(parts.values()), -1)  # [B, H/2, W/2, 4C]
        steps["patch_merge_cat"] = x
        x = x.view(B, -1, 4 * C)  # [B, H/2*W/2, 4C]
        steps["patch_merge_flat"] = x
        x = self.norm(x)
        steps["patch_merge_norm"] = x
        x = self.reduction(x)  # [B, H/2*W/2, 2C]
        steps["patch_merge_reduction"] = x
        return x


def stage_window(H, M, shift):
    return (H, False) if H <= M else (M, shift)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/patch_merge"
    torch.set_num_threads(1)
    for i, (name, B, H, C, h, M, shift) in enumerate(CASES):
        torch.manual_seed(5000 + i)
        attn1 = ViTAttention(C, num_heads=h, qkv_bias=True).eval()
        merge = PatchMerging((H, H), C).eval()
        attn2 = ViTAttention(2 * C, num_heads=2 * h, qkv_bias=True).eval()
        steps = {}
        with torch.no_grad():
            for m in (attn1, attn2):
                m.qkv.bias.uniform_(-0.5, 0.5)
            # LayerNorm starts as weight 1, bias 0: other values make the test see both.
            merge.norm.weight.uniform_(0.5, 1.5)
            merge.norm.bias.uniform_(-0.5, 0.5)
            x = torch.randn(B, H * H, C)
            s1 = windowed(attn1, x, H, M, shift)
            steps["tokens_out"] = s1["tokens_out"]
            y = merge(s1["tokens_out"], steps)
            M2, shift2 = stage_window(H // 2, M, shift)
            s2 = windowed(attn2, y, H // 2, M2, shift2)
            for step in ("windows", "attn", "out", "tokens_out"):
                steps["stage2_" + step] = s2[step]
        case_dir = os.path.join(out_dir, name)
        os.makedirs(case_dir, exist_ok=True)
        for file, m in (("weights.safetensors", attn1), ("stage2.safetensors", attn2)):
            write_safetensors(os.path.join(case_dir, file),
                              {"qkv.weight": m.qkv.weight, "qkv.bias": m.qkv.bias,
                               "proj.weight": m.proj.weight, "proj.bias": m.proj.bias})
        arrays = {"input": x, "norm_weight": merge.norm.weight, "norm_bias": merge.norm.bias,
                  "reduction_weight": merge.reduction.weight, **steps}
        for step, t in arrays.items():
            np.save(os.path.join(case_dir, step + ".npy"), np.ascontiguousarray(t.detach().numpy().astype("<f4")))
        strides = {k: list(v.stride()) for k, v in steps.items() if k.startswith("patch_merge_")}
        with open(os.path.join(case_dir, "meta.json"), "w") as f:
            json.dump({"batch": B, "tokens": H * H, "dim": C, "heads": h, "qkv_bias": True, "window": M,
                       "shift": shift, "stage2_window": M2, "stage2_shift": shift2, "strides": strides,
                       "torch": torch.__version__}, f, indent=2)
        print(f"{case_dir}: grid {H} -> {H // 2}, C {C} -> {2 * C}, heads {h} -> {2 * h}, "
              f"stage 2 window {M2} shift={shift2}")


if __name__ == "__main__":
    main()
