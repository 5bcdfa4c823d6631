#!/usr/bin/python3
"""Write PyTorch golden cases for attnscope's Vision Transformer into OUT_DIR (tests/data/vit).

Run with Debian's python3-torch:  /usr/bin/python3 tools/make_vit_golden.py tests/data/vit

timm is not packaged for Debian, so this file holds a timm-compatible VisionTransformer: the same
parameter names (patch_embed.proj, cls_token, pos_embed, blocks.<i>.norm1/attn/norm2/mlp.fc1/
mlp.fc2, norm, head) and the same math (class token, pre-norm blocks, fused qkv Linear with bias,
LayerNorm eps 1e-6, exact erf GELU, head on the class token). Its attention is the reference's
ViTAttention from make_golden.py. tools/train_demo_vit.py trains the demo model with it.

Cases (random weights, large enough that attention is far from uniform):
  meta_*:   F16 weights with __metadata__ num_heads, labels, mean, std, image_size, patch_size
  nometa_*: F32 without metadata (heads = dim / 64), written by make_golden.write_safetensors
Each case folder holds model.safetensors, pixels.npy [1, 3, H, W], logits.npy,
block<I>_attn.npy [1, h, N, N] and meta.json. The folder resize/ holds the images and the
torch F.interpolate results the image loader is checked against; rollout/ random attention and
its rollout computed in NumPy.
"""
import json
import math
import os
import struct
import sys
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from make_golden import ViTAttention, steps_of, write_safetensors


# ---- the timm-compatible model ------------------------------------------------------------
class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()  # exact erf GELU, as timm's default
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = ViTAttention(dim, num_heads=num_heads, qkv_bias=True)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        x = x + self.mlp(self.norm2(x))
        return x


class PatchEmbed(nn.Module):
    def __init__(self, patch_size, dim):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)  # [B, 3, H, W] -> [B, P, D]


class VisionTransformer(nn.Module):
    def __init__(self, img_size, patch_size, num_classes, embed_dim, depth, num_heads, mlp_ratio=4.0):
        super().__init__()
        self.num_heads = num_heads
        grid = img_size // patch_size
        self.patch_embed = PatchEmbed(patch_size, embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.randn(1, 1 + grid * grid, embed_dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(embed_dim, num_heads, mlp_ratio) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
        self.head = nn.Linear(embed_dim, num_classes)

    def embed(self, x):
        x = self.patch_embed(x)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        return x + self.pos_embed

    def forward(self, x):
        x = self.blocks(self.embed(x))
        return self.head(self.norm(x)[:, 0])


def forward_with_attention(model, x):
    """(logits, [attn of every block]) where attn is the post-softmax [B, h, N, N]."""
    x = model.embed(x)
    attns = []
    for blk in model.blocks:
        s = steps_of(blk.attn, blk.norm1(x))
        attns.append(s["attn"])
        x = x + s["out_drop"]
        x = x + blk.mlp(blk.norm2(x))
    return model.head(model.norm(x)[:, 0]), attns


# ---- files --------------------------------------------------------------------------------
def write_checkpoint(path, model, metadata, dtype):
    """The model's state_dict as safetensors with __metadata__ (string values), F16 or F32; integer
    tensors (BatchNorm's num_batches_tracked) as I64, as torch keeps them."""
    header, blobs, offset = {}, [], 0
    header["__metadata__"] = {k: v if isinstance(v, str) else json.dumps(v) for k, v in metadata.items()}
    for name, t in model.state_dict().items():
        kind = "I64" if t.dtype == torch.int64 else dtype
        blob = np.ascontiguousarray(t.detach().numpy().astype({"F16": "<f2", "F32": "<f4", "I64": "<i8"}[kind])).tobytes()
        header[name] = {"dtype": kind, "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    os.replace(path + ".tmp", path)


def write_png(path, rgb):
    """An 8-bit PNG (colour type 2 for [H, W, 3], 0 for [H, W]) without PIL; every row uses the Up filter."""
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    height, width = rgb.shape[:2]
    colour = 2 if rgb.ndim == 3 else 0
    rows = rgb.reshape(height, -1)
    up = np.concatenate([rows[:1], rows[1:] - rows[:-1]])  # uint8 arithmetic wraps mod 256, as PNG's Up filter
    raw = b"".join(b"\x02" + up[y].tobytes() for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def save(path, t):
    np.save(path, np.ascontiguousarray(t.detach().numpy().astype("<f4")))


# ---- golden cases -------------------------------------------------------------------------
CASES = [
    # name, image, patch, dim, depth, heads, MLP ratio, classes, metadata (and F16 weights)
    ("meta_i32_p8_d64_h4_l2", 32, 8, 64, 2, 4, 4.0, 10, True),
    ("nometa_i48_p8_d128_h2_l3", 48, 8, 128, 3, 2, 2.0, 7, False),
]


def randomize(model, gen):
    """Weights far from timm's near-zero init, so attention rows are peaked and residuals matter."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            fan_in = p.shape[1] * (p[0, 0].numel() if p.dim() == 4 else 1) if p.dim() >= 2 else 1
            if name.endswith("norm1.weight") or name.endswith("norm2.weight") or name == "norm.weight":
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=gen))
            elif p.dim() >= 2 and name not in ("cls_token", "pos_embed"):
                p.copy_(torch.randn(p.shape, generator=gen) * (2.0 / math.sqrt(fan_in)))
            else:
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))


def make_case(out_dir, name, image, patch, dim, depth, heads, mlp_ratio, classes, with_meta, seed):
    gen = torch.Generator().manual_seed(seed)
    model = VisionTransformer(image, patch, classes, dim, depth, heads, mlp_ratio).eval()
    randomize(model, gen)
    if with_meta:  # saved as F16: compute with the rounded weights attnscope will read
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.half().float())
    pixels = torch.randn(1, 3, image, image, generator=gen)
    with torch.no_grad():
        logits, attns = forward_with_attention(model, pixels)
        assert torch.allclose(logits, model(pixels), rtol=0, atol=0), "recorded forward differs from forward()"
    assert all(a.max() > 0.3 for a in attns), "attention too uniform to test anything"
    case_dir = os.path.join(out_dir, name)
    os.makedirs(case_dir, exist_ok=True)
    path = os.path.join(case_dir, "model.safetensors")
    if with_meta:
        labels = [f"class {i}" for i in range(classes)]
        write_checkpoint(path, model, {"num_heads": heads, "labels": labels, "mean": [0.5, 0.4, 0.3],
                                       "std": [0.2, 0.25, 0.3], "image_size": image, "patch_size": patch}, "F16")
    else:
        write_safetensors(path, dict(model.state_dict()))
    save(os.path.join(case_dir, "pixels.npy"), pixels)
    save(os.path.join(case_dir, "logits.npy"), logits)
    for i, a in enumerate(attns):
        save(os.path.join(case_dir, f"block{i}_attn.npy"), a)
    meta = {"image_size": image, "patch_size": patch, "dim": dim, "depth": depth, "heads": heads,
            "mlp_hidden": int(dim * mlp_ratio), "classes": classes, "metadata": with_meta, "seed": seed,
            "torch": torch.__version__}
    with open(os.path.join(case_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)


def make_resize_cases(out_dir):
    """Images of odd sizes, and torch's F.interpolate(bilinear, align_corners=False) of them."""
    rng = np.random.default_rng(7)
    os.makedirs(out_dir, exist_ok=True)
    cases = {"down": (37, 50, 32), "up": (13, 20, 32), "same": (16, 16, 16)}  # name: H, W, output side
    for name, (h, w, side) in cases.items():
        rgb = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
        write_png(os.path.join(out_dir, name + ".png"), rgb)
        x = torch.from_numpy(rgb).permute(2, 0, 1).float().div(255.0)[None]  # [1, 3, H, W] in [0, 1]
        y = F.interpolate(x, size=(side, side), mode="bilinear", align_corners=False)
        save(os.path.join(out_dir, name + "_resized.npy"), y[0])
    gray = rng.integers(0, 256, size=(9, 11), dtype=np.uint8)
    write_png(os.path.join(out_dir, "gray.png"), gray)
    save(os.path.join(out_dir, "gray.npy"), torch.from_numpy(gray).float().div(255.0)[None].expand(3, -1, -1))
    with open(os.path.join(out_dir, "not_an_image.png"), "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n this is not a PNG body")


def make_rollout_case(out_dir):
    """Random attention of 3 blocks (h = 3, a 3 x 3 grid) and its rollout in NumPy, per head fusion:
    Abnar & Zuidema 2020 as in vit-explain, with the rows renormalized after adding the identity."""
    rng = np.random.default_rng(11)
    os.makedirs(out_dir, exist_ok=True)
    n = 10
    attns = []
    for b in range(3):
        scores = rng.normal(0, 2, size=(1, 3, n, n))
        a = np.exp(scores - scores.max(-1, keepdims=True))
        attns.append((a / a.sum(-1, keepdims=True)).astype("<f4"))
        np.save(os.path.join(out_dir, f"block{b}_attn.npy"), attns[-1])
    for fusion in ("mean", "max", "min"):
        result = np.eye(n)
        for a in attns:
            fused = getattr(a[0].astype(np.float64), fusion)(axis=0)
            fused = fused + np.eye(n)
            fused = fused / fused.sum(axis=-1, keepdims=True)
            result = fused @ result
        np.save(os.path.join(out_dir, f"rollout_{fusion}.npy"), result.astype("<f4"))


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/vit"
    torch.set_num_threads(1)
    for i, case in enumerate(CASES):
        make_case(out_dir, *case, seed=2000 + i)
    make_resize_cases(os.path.join(out_dir, "resize"))
    make_rollout_case(os.path.join(out_dir, "rollout"))
    print("wrote", len(CASES), "ViT cases, the resize and the rollout cases to", out_dir)


if __name__ == "__main__":
    main()
