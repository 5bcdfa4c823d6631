#!/usr/bin/python3
"""Write PyTorch golden cases for attnscope's attention pipeline into OUT_DIR/<case>/.

Run with Debian's python3-torch:  /usr/bin/python3 tools/make_golden.py tests/data/golden

Each case folder holds the input x (input.npy), the weights under timm's names
(weights.safetensors), the expected tensor of every pinned step (<step>.npy) as computed by the
reference's ViTAttention (../shared/seed), and meta.json with the config. The module's own
forward() output is checked against the step-by-step recomputation before anything is written.
"""
import ctypes
import json
import os
import struct
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn


class ViTAttention(nn.Module):
    """The reference article's ViTAttention, unchanged."""

    def __init__(self, dim, num_heads=8, qkv_bias=False, attn_drop=0., proj_drop=0.):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        nn.init.xavier_uniform_(self.qkv.weight)
        if qkv_bias:
            nn.init.zeros_(self.qkv.bias)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads)
        qkv = qkv.permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


def steps_of(m, x):
    """The pinned steps, one line of the reference's forward each."""
    B, N, C = x.shape
    s = {"input": x}
    s["qkv"] = m.qkv(x)
    s["qkv_split"] = s["qkv"].reshape(B, N, 3, m.num_heads, C // m.num_heads)
    s["qkv_heads"] = s["qkv_split"].permute(2, 0, 3, 1, 4)
    s["q"], s["k"], s["v"] = s["qkv_heads"].unbind(0)
    s["k_t"] = s["k"].transpose(-2, -1)
    s["scores"] = s["q"] @ s["k_t"]
    s["scaled"] = s["scores"] * m.scale
    s["attn"] = s["scaled"].softmax(dim=-1)
    s["attn_drop"] = m.attn_drop(s["attn"])
    s["context"] = s["attn_drop"] @ s["v"]
    s["context_t"] = s["context"].transpose(1, 2)
    s["merged"] = s["context_t"].reshape(B, N, C)
    s["out"] = m.proj(s["merged"])
    s["out_drop"] = m.proj_drop(s["out"])
    return s


def write_safetensors(path, tensors):
    """Writes F32 tensors in the safetensors layout: u64 header length, JSON header, data."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = np.ascontiguousarray(t.detach().numpy().astype("<f4")).tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


CASES = [
    # name, B, N, C, h, qkv_bias, input scale, weight scale
    ("bias_b2_n16_c64_h4", 2, 16, 64, 4, True, 1.0, 1.0),
    ("nobias_b1_n10_c48_h6", 1, 10, 48, 6, False, 1.0, 1.0),
    ("onehead_b2_n7_c32_h1", 2, 7, 32, 1, True, 1.0, 1.0),
    # scaled scores far above 88, where a softmax without the max subtraction overflows float32
    ("large_b1_n12_c32_h2", 1, 12, 32, 2, False, 6.0, 4.0),
]

# The large case is ill-conditioned: its scores reach ~4000, so float32 rounding inside sgemm (1e-3
# there) depends on the order in which OpenBLAS's kernels sum, and softmax amplifies it: PyTorch on
# the AVX-512 "SkylakeX" kernels differs from PyTorch on the Haswell kernels by 2.3e-4 in context.
# So that case also gets the steps PyTorch computes on each of these kernels, as <step>.<core>.npy;
# the test compares with the file of the kernels it runs on. Cooperlake (AVX-512 with BF16) sums as
# SkylakeX does; it gets files of its own because the test looks for the name OpenBLAS reports.
KERNEL_VARIANTS = ["SkylakeX", "Cooperlake"]
# The CPU flags each variant's kernels need (/proc/cpuinfo).
VARIANT_FLAGS = {"SkylakeX": ("avx512f", "avx512bw", "avx512dq", "avx512vl"),
                 "Cooperlake": ("avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_bf16")}
VARIANT_STEPS = ["scores", "scaled", "attn", "attn_drop", "context", "context_t", "merged", "out", "out_drop"]


def openblas_core():
    """The kernels of the OpenBLAS that torch runs on (Debian's torch links libblas.so.3)."""
    lib = ctypes.CDLL("libblas.so.3")
    lib.openblas_get_corename.restype = ctypes.c_char_p
    return lib.openblas_get_corename().decode()


def make_case(out_dir, name, B, N, C, h, qkv_bias, x_scale, w_scale, seed, variant=None):
    torch.manual_seed(seed)
    m = ViTAttention(C, num_heads=h, qkv_bias=qkv_bias).eval()
    with torch.no_grad():
        m.qkv.weight.mul_(w_scale)
        if qkv_bias:  # the reference initialises zeros; random values test that the bias is added
            m.qkv.bias.uniform_(-0.5, 0.5)
    x = torch.randn(B, N, C) * x_scale
    with torch.no_grad():
        s = steps_of(m, x)
        reference_out = m(x)
    assert torch.equal(s["out_drop"], reference_out), "step-by-step forward differs from ViTAttention.forward"
    if name.startswith("large"):
        assert s["scaled"].max() > 88, "the large case must push scaled scores past 88"
        assert torch.isfinite(s["attn"]).all()

    case_dir = os.path.join(out_dir, name)
    os.makedirs(case_dir, exist_ok=True)
    if variant:
        core = openblas_core()
        assert core == variant, f"asked for OpenBLAS's {variant} kernels, torch runs on {core}"
        for step in VARIANT_STEPS:
            np.save(os.path.join(case_dir, f"{step}.{variant}.npy"),
                    np.ascontiguousarray(s[step].detach().numpy().astype("<f4")))
        return m
    weights = {"qkv.weight": m.qkv.weight}
    if qkv_bias:
        weights["qkv.bias"] = m.qkv.bias
    weights["proj.weight"] = m.proj.weight
    weights["proj.bias"] = m.proj.bias
    write_safetensors(os.path.join(case_dir, "weights.safetensors"), weights)
    for step, t in s.items():
        np.save(os.path.join(case_dir, step + ".npy"), np.ascontiguousarray(t.detach().numpy().astype("<f4")))
    meta = {"batch": B, "tokens": N, "dim": C, "heads": h, "qkv_bias": qkv_bias, "seed": seed,
            "max_scaled": float(s["scaled"].max()), "torch": torch.__version__,
            # what PyTorch's tensor looks like at each step: views keep the storage, copies do not
            "strides": {k: list(t.stride()) for k, t in s.items()},
            "contiguous": {k: t.is_contiguous() for k, t in s.items()},
            "shares_storage_with_qkv": {k: t.storage().data_ptr() == s["qkv"].storage().data_ptr()
                                        for k, t in s.items()}}
    with open(os.path.join(case_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
    return m


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--variant":  # the child run of write_variants()
        torch.set_num_threads(1)
        i = next(i for i, c in enumerate(CASES) if c[0].startswith("large"))
        make_case(sys.argv[3], *CASES[i], seed=1000 + i, variant=sys.argv[2])
        return
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/golden"
    torch.set_num_threads(1)
    for i, case in enumerate(CASES):
        m = make_case(out_dir, *case, seed=1000 + i)
        if case[0].startswith("nobias"):
            # The same weights inside a timm-style checkpoint, as block 3 of 4, for --block.
            ckpt = {}
            for b in range(4):
                for key in ("qkv.weight", "proj.weight", "proj.bias"):
                    t = dict(m.named_parameters())[key]
                    ckpt[f"blocks.{b}.attn.{key}"] = t if b == 3 else torch.zeros_like(t)
            ckpt["cls_token"] = torch.zeros(1, 1, case[3])
            write_safetensors(os.path.join(out_dir, case[0], "checkpoint_blocks.safetensors"), ckpt)
    print("wrote", len(CASES), "cases to", out_dir)
    write_variants(out_dir)


def write_variants(out_dir):
    """The large case once more in a child process per kernel (OpenBLAS picks them when loaded)."""
    flags = open("/proc/cpuinfo").read().split()
    for core in KERNEL_VARIANTS:
        if not all(f in flags for f in VARIANT_FLAGS[core]):
            print(f"skipped the {core} variant: this CPU lacks {', '.join(VARIANT_FLAGS[core])} (the committed files stay)")
            continue
        env = dict(os.environ, OPENBLAS_CORETYPE=core)
        subprocess.run([sys.executable, os.path.abspath(__file__), "--variant", core, out_dir], env=env, check=True)
        print("wrote the large case's steps on the", core, "kernels")


if __name__ == "__main__":
    main()
