#!/usr/bin/python3
"""Median milliseconds of a PyTorch eager ViT-B/16 forward on one 224x224 image (random weights).

timm is not packaged in Debian, so this is timm's VisionTransformer written out in torch with timm's
parameter names (patch_embed.proj, cls_token, pos_embed, blocks.<i>.{norm1, attn.qkv, attn.proj,
norm2, mlp.fc1, mlp.fc2}, norm, head) and its forward: pre-norm blocks, LayerNorm eps 1e-6, exact GELU.

usage: /usr/bin/python3 bench/torch_vit.py THREADS REPEAT   -> prints one JSON line
"""
import sys

import torch
from torch import nn

sys.path.insert(0, __file__.rsplit("/", 2)[0] + "/tools")
from make_golden import ViTAttention  # noqa: E402  the reference's attention class
from torch_timing import print_forward_times  # noqa: E402


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = ViTAttention(dim, num_heads=heads, qkv_bias=True)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, hidden)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PatchEmbed(nn.Module):
    def __init__(self, patch, dim):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class VisionTransformer(nn.Module):
    def __init__(self, image=224, patch=16, dim=768, depth=12, heads=12, hidden=3072, classes=1000):
        super().__init__()
        self.patch_embed = PatchEmbed(patch, dim)
        n = (image // patch) ** 2 + 1
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 1e-6)
        self.pos_embed = nn.Parameter(torch.randn(1, n, dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(dim, heads, hidden) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch_embed(x)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        x = x + self.pos_embed
        x = self.blocks(x)
        x = self.norm(x)
        return self.head(x[:, 0])


def main():
    threads, repeat = map(int, sys.argv[1:3])
    torch.manual_seed(0)
    m = VisionTransformer().eval()
    print_forward_times(m, torch.randn(1, 3, 224, 224), threads, warmup=2, repeat=repeat)


if __name__ == "__main__":
    main()
