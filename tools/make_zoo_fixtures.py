#!/usr/bin/python3
"""Write the bug zoo's own fixtures into OUT_DIR (tests/data/zoo).

Run with Debian's python3-torch:  /usr/bin/python3 tools/make_zoo_fixtures.py tests/data/zoo

The other zoo bugs are checked against tests/data/activations/bug_*.  These two have no fixture
there: qkv reshaped to (3, B, h, N, c) without the permute, and q @ k without the transpose
(PyTorch's own error message, and the shapes of both operands).
B=2, N=5, C=24, h=4 (c=6), like the activation fixtures.
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn

B, N, C, H = 2, 5, 24, 4
c = C // H


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/zoo"
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(11)
    qkv_layer, proj = nn.Linear(C, 3 * C, bias=True), nn.Linear(C, C)
    x = torch.randn(B, N, C)
    scale = c ** -0.5
    with torch.no_grad():
        qkv = qkv_layer(x)
        heads = qkv.reshape(B, N, 3, H, c).reshape(3, B, H, N, c)  # BUG: no permute
        q, k, v = heads.unbind(0)
        scores = q @ k.transpose(-2, -1)
        attn = (scores * scale).softmax(dim=-1)
        context = attn @ v
        merged = context.transpose(1, 2).reshape(B, N, C)
        tensors = {"x": x, "qkv.weight": qkv_layer.weight, "qkv.bias": qkv_layer.bias, "proj.weight": proj.weight,
                   "proj.bias": proj.bias, "qkv": qkv, "qkv_heads": heads, "q": q, "k": k, "v": v,
                   "scores": scores, "attn": attn, "context": context, "merged": merged, "out": proj(merged)}
        np.savez_compressed(os.path.join(out, "reshape_without_permute.npz"),
                            **{n: t.numpy().astype("<f4") for n, t in tensors.items()})
        q, k, v = qkv.reshape(B, N, 3, H, c).permute(2, 0, 3, 1, 4).unbind(0)
        try:
            q @ k  # BUG: k not transposed
            message = ""
        except RuntimeError as e:
            message = str(e)
    with open(os.path.join(out, "k_not_transposed.json"), "w") as f:
        json.dump({"q": list(q.shape), "k": list(k.shape), "torch_error": message}, f, indent=2)
    print("wrote zoo fixtures to", out)


if __name__ == "__main__":
    main()
