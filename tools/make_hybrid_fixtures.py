#!/usr/bin/python3
"""Write PyTorch fixtures for attnscope's hybrid ViT (a CNN stem instead of linear patches) into
OUT_DIR (tests/data/hybrid).

Run with Debian's python3-torch:  /usr/bin/python3 tools/make_hybrid_fixtures.py tests/data/hybrid

The stem is timm's HybridEmbed with a small backbone: per stage nn.Conv2d(k, stride 2, padding k//2)
-> nn.BatchNorm2d (eval, running statistics far from 0 and 1) -> nn.ReLU, as one nn.Sequential
(patch_embed.backbone.<3i> conv, <3i+1> BatchNorm, <3i+2> ReLU), then patch_embed.proj, a 1x1
nn.Conv2d to D, flatten(2).transpose(1, 2). The rest is make_vit_golden's timm-compatible
VisionTransformer (class token, position embedding, pre-norm blocks, head).

Each case folder holds model.safetensors (the state_dict, F32, num_batches_tracked as I64, as torch
saves it, and __metadata__ num_heads), pixels.npy [1, 3, H, W], one .npy per recorded stem step
(stem<i>_conv, stem<i>_bn, stem<i>_relu), patches.npy [1, P, C] (the stem's feature map as rows),
patch_embed.npy [1, P, D], embed.npy [1, N, D], logits.npy [1, K] and meta.json.
"""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn

from make_vit_golden import VisionTransformer, save, write_checkpoint


class HybridEmbed(nn.Module):
    def __init__(self, channels, dim, kernel, conv_bias):
        super().__init__()
        layers, c_in = [], 3
        for c in channels:
            layers += [nn.Conv2d(c_in, c, kernel, stride=2, padding=kernel // 2, bias=conv_bias), nn.BatchNorm2d(c),
                       nn.ReLU()]
            c_in = c
        self.backbone = nn.Sequential(*layers)
        self.proj = nn.Conv2d(c_in, dim, kernel_size=1)

    def forward(self, x):
        return self.proj(self.backbone(x)).flatten(2).transpose(1, 2)  # [B, 3, H, W] -> [B, P, D]


def randomize(model, gen):
    """Weights large enough that every step matters; BatchNorm's statistics far from 0 and 1."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2 and name not in ("cls_token", "pos_embed"):
                fan_in = p[0].numel()
                p.copy_(torch.randn(p.shape, generator=gen) * (2.0 / math.sqrt(fan_in)))
            elif name.endswith("weight"):  # LayerNorm and BatchNorm scales
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(0.5 * torch.randn(m.running_mean.shape, generator=gen))
                m.running_var.copy_(0.5 + 1.5 * torch.rand(m.running_var.shape, generator=gen))
                m.num_batches_tracked.fill_(1000)


CASES = [
    # name, image, stem channels, kernel, conv bias, dim, depth, heads, classes
    ("i64_s8_16_k3_d32_h2_l2", 64, (8, 16), 3, False, 32, 2, 2, 5),
    ("i32_s4_8_8_k5_bias_d16_h2_l1", 32, (4, 8, 8), 5, True, 16, 1, 2, 3),
]


def make_case(out_dir, name, image, channels, kernel, conv_bias, dim, depth, heads, classes, seed):
    gen = torch.Generator().manual_seed(seed)
    stride = 2 ** len(channels)
    model = VisionTransformer(image, stride, classes, dim, depth, heads, mlp_ratio=2.0)
    model.patch_embed = HybridEmbed(channels, dim, kernel, conv_bias)
    model.eval()
    randomize(model, gen)
    pixels = torch.randn(1, 3, image, image, generator=gen)
    case_dir = os.path.join(out_dir, name)
    os.makedirs(case_dir, exist_ok=True)
    with torch.no_grad():
        x = pixels
        for i, layer in enumerate(model.patch_embed.backbone):  # every stem step, as attnscope records it
            x = layer(x)
            save(os.path.join(case_dir, f"stem{i // 3}_{('conv', 'bn', 'relu')[i % 3]}.npy"), x)
        save(os.path.join(case_dir, "patches.npy"), x.flatten(2).transpose(1, 2))
        patch_embed = model.patch_embed.proj(x).flatten(2).transpose(1, 2)
        save(os.path.join(case_dir, "patch_embed.npy"), patch_embed)
        embed = model.embed(pixels)
        save(os.path.join(case_dir, "embed.npy"), embed)
        logits = model(pixels)
        save(os.path.join(case_dir, "logits.npy"), logits)
    write_checkpoint(os.path.join(case_dir, "model.safetensors"), model, {"num_heads": heads}, "F32")
    save(os.path.join(case_dir, "pixels.npy"), pixels)
    grid = image // stride
    meta = {"image_size": image, "stem_channels": list(channels), "stem_kernel": kernel, "conv_bias": conv_bias,
            "patch_size": stride, "grid": grid, "tokens": 1 + grid * grid, "dim": dim, "depth": depth,
            "heads": heads, "mlp_hidden": 2 * dim, "classes": classes, "seed": seed, "torch": torch.__version__}
    with open(os.path.join(case_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/hybrid"
    torch.set_num_threads(1)
    for i, case in enumerate(CASES):
        make_case(out_dir, *case, seed=4000 + i)
    print("wrote", len(CASES), "hybrid ViT cases to", out_dir)


if __name__ == "__main__":
    main()
