#!/usr/bin/python3
"""Write PyTorch fixtures for the AVX-512 linear kernel (core/kernels/packed_linear) into OUT_DIR/<case>/.

Run with Debian's python3-torch:  /usr/bin/python3 tools/make_linear_golden.py tests/data/linear

x, W and b are given by integer formulas (the test builds the same tensors, so they are not
committed): x in multiples of 2^-7 within [-1, 1], W of 2^-8 within [-0.41, 0.41], b of 2^-4. Every
product is then a multiple of 2^-15, and every partial sum, in any order, is below 2^9 (checked
here: the sum of |x_k w_k| + |b| of each output): 24 significant bits, exact in float32 whatever
the order. So PyTorch's float32 result equals the float64 one (checked here: torch_f32_error = 0),
and the test asks attnscope for that exact result: any slip in
the kernel's layout (a wrong row, column, panel or pass) changes it. Rounding with real weights is
covered by the ViT golden cases (tests/data/vit), which run through the same kernel.
Each case holds y.npy: F.linear(x, W, b) in float64, stored as float32, and meta.json.

The case matmul_2x3_n20_k45_m64 is torch.matmul(a, b) of the same kind of exact values, a
[2, 3, 20, 45] and b [2, 3, 45, 64] = columns 64:128 of a [2, 3, 45, 192] tensor (rows 192 apart, as
v sits in qkv), for the in-place tile of attn @ v (core/kernels/packed_linear: in_place_matmul).

The shapes reach every edge of the kernel: rows not a multiple of its 14-row tile, more rows than
one 336-row pass, more than 3072 input features (two passes over k), output features not a multiple
of its 32-wide panel, no bias.
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

CASES = [
    # name, rows, in, out, bias
    ("rows340_in784_out40_bias", 340, 784, 40, True),
    ("rows197_in768_out64_nobias", 197, 768, 64, False),
    ("rows5_in64_out33_bias", 5, 64, 33, True),
    ("rows20_in3100_out40_bias", 20, 3100, 40, True),
]


def inputs(rows, inp, out):
    """The formulas of tests/test_packed_linear.cpp, exact in float32."""
    r = np.arange(rows, dtype=np.int64)[:, None]
    k = np.arange(inp, dtype=np.int64)[None, :]
    o = np.arange(out, dtype=np.int64)[:, None]
    x = (((r * 131 + k * 71) % 257) - 128).astype(np.float64) / 128.0
    w = (((o * 97 + k * 13) % 211) - 105).astype(np.float64) / 256.0
    b = (((np.arange(out) * 29) % 17) - 8).astype(np.float64) / 16.0
    return x, w, b


MATMUL = ("matmul_2x3_n20_k45_m64", (2, 3), 20, 45, 64, 192, 64)  # name, batch, n, k, m, b's row length, b's first column


def matmul_inputs(batch, n, k, width):
    """a [*batch, n, k] and the whole [*batch, k, width] that b is a window of, exact in float32."""
    i = np.arange(int(np.prod(batch)) * n * k, dtype=np.int64).reshape(*batch, n, k)
    j = np.arange(int(np.prod(batch)) * k * width, dtype=np.int64).reshape(*batch, k, width)
    a = ((i * 37 % 255) - 127).astype(np.float64) / 128.0
    b = ((j * 53 % 209) - 104).astype(np.float64) / 256.0
    return a, b


def write_case(out_dir, name, exact, err, fields):
    """OUT_DIR/NAME/y.npy (exact, stored as float32) and meta.json (fields, the float32 error, torch's version)."""
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "y.npy"), exact.float().numpy())
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump({**fields, "torch_f32_error": err, "torch": torch.__version__}, f, indent=1)
    print(f"{name}: torch float32 error {err:.3g}, |y| max {exact.abs().max().item():.3g}")


def main(out_dir):
    for name, rows, inp, out, bias in CASES:
        x, w, b = (torch.from_numpy(a) for a in inputs(rows, inp, out))
        bound = (x.abs() @ w.abs().T + b.abs()).max().item()
        assert bound < 2 ** 9, f"{name}: a partial sum may reach {bound}, beyond float32's 24 bits at 2^-15"
        exact = F.linear(x, w, b if bias else None)
        f32 = F.linear(x.float(), w.float(), b.float() if bias else None)
        err = (f32.double() - exact).abs().max().item()
        assert err == 0, f"{name}: float32 is not exact ({err}); the formulas no longer fit 24 bits"
        write_case(out_dir, name, exact, err, {"rows": rows, "in": inp, "out": out, "bias": bias})

    name, batch, n, k, m, width, first = MATMUL
    a, whole = (torch.from_numpy(v) for v in matmul_inputs(batch, n, k, width))
    b = whole[..., first:first + m]
    exact = torch.matmul(a, b)
    err = (torch.matmul(a.float(), b.float()).double() - exact).abs().max().item()
    assert err == 0, f"{name}: float32 is not exact ({err})"
    write_case(out_dir, name, exact, err,
               {"batch": list(batch), "n": n, "k": k, "m": m, "width": width, "first": first})


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/linear")
