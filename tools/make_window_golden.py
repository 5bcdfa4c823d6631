#!/usr/bin/python3
"""Write PyTorch fixtures for attnscope's windowed attention into OUT_DIR/<case>/.

Run with Debian's python3-torch:  /usr/bin/python3 tools/make_window_golden.py tests/data/windows

Swin Transformer's own window_partition, window_reverse, torch.roll and attention mask
(Liu et al. 2021, microsoft/Swin-Transformer models/swin_transformer.py), with the reference
ViTAttention's weights (no relative position bias, which attnscope does not model) doing the
attention inside each window: the mask is added as -100 exactly as Swin does.
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import ViTAttention, write_safetensors  # noqa: E402

CASES = [
    # name, B, H (grid side), C, h, M, shift
    ("plain_b1_g8_c16_h2_m4", 1, 8, 16, 2, 4, False),
    ("shift_b1_g8_c16_h2_m4", 1, 8, 16, 2, 4, True),
]


def window_partition(x, window_size):
    B, H, W, C = x.shape
    x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)


def window_reverse(windows, window_size, H, W):
    B = int(windows.shape[0] / (H * W / window_size / window_size))
    x = windows.view(B, H // window_size, W // window_size, window_size, window_size, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)


def swin_attn_mask(H, W, M, s):
    img_mask = torch.zeros((1, H, W, 1))
    h_slices = (slice(0, -M), slice(-M, -s), slice(-s, None))
    w_slices = (slice(0, -M), slice(-M, -s), slice(-s, None))
    cnt = 0
    for hs in h_slices:
        for ws in w_slices:
            img_mask[:, hs, ws, :] = cnt
            cnt += 1
    mask_windows = window_partition(img_mask, M).view(-1, M * M)
    attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
    return attn_mask.masked_fill(attn_mask != 0, float(-100.0)).masked_fill(attn_mask == 0, float(0.0))


def windowed(m, x, H, M, shift):
    B, N, C = x.shape
    s = M // 2 if shift else 0
    out = {"input": x}
    g = x.view(B, H, H, C)
    if shift:
        g = torch.roll(g, shifts=(-s, -s), dims=(1, 2))
    xw = window_partition(g, M).view(-1, M * M, C)
    out["windows"] = xw
    Bw, n, _ = xw.shape
    qkv = m.qkv(xw).reshape(Bw, n, 3, m.num_heads, C // m.num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv.unbind(0)
    attn = (q @ k.transpose(-2, -1)) * m.scale
    if shift:
        mask = swin_attn_mask(H, H, M, s)
        nW = mask.shape[0]
        attn = attn.view(Bw // nW, nW, m.num_heads, n, n) + mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, m.num_heads, n, n)
    attn = attn.softmax(dim=-1)
    out["attn"] = attn
    y = (attn @ v).transpose(1, 2).reshape(Bw, n, C)
    y = m.proj(y)
    out["out"] = y
    g = window_reverse(y.view(-1, M, M, C), M, H, H)
    if shift:
        g = torch.roll(g, shifts=(s, s), dims=(1, 2))
    out["tokens_out"] = g.reshape(B, H * H, C)
    return out


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/windows"
    torch.set_num_threads(1)
    for i, (name, B, H, C, h, M, shift) in enumerate(CASES):
        torch.manual_seed(3000 + i)
        m = ViTAttention(C, num_heads=h, qkv_bias=True).eval()
        with torch.no_grad():
            m.qkv.bias.uniform_(-0.5, 0.5)
            x = torch.randn(B, H * H, C)
            s = windowed(m, x, H, M, shift)
        case_dir = os.path.join(out_dir, name)
        os.makedirs(case_dir, exist_ok=True)
        write_safetensors(os.path.join(case_dir, "weights.safetensors"),
                          {"qkv.weight": m.qkv.weight, "qkv.bias": m.qkv.bias,
                           "proj.weight": m.proj.weight, "proj.bias": m.proj.bias})
        for step, t in s.items():
            np.save(os.path.join(case_dir, step + ".npy"), np.ascontiguousarray(t.detach().numpy().astype("<f4")))
        with open(os.path.join(case_dir, "meta.json"), "w") as f:
            json.dump({"batch": B, "tokens": H * H, "dim": C, "heads": h, "qkv_bias": True, "window": M,
                       "shift": shift, "torch": torch.__version__}, f, indent=2)
        print(f"{case_dir}: window {M} shift={shift}")


if __name__ == "__main__":
    main()
