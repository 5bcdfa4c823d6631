#!/usr/bin/python3
"""Write PyTorch fixtures for attnscope's masks (and the flash / KV-cache paths) into OUT_DIR/<case>/.

Run with Debian's python3-torch:  /usr/bin/python3 tools/make_mask_golden.py tests/data/masks

The reference ViTAttention (tools/make_golden.py) with one line added between the scale and the
softmax:  attn = attn.masked_fill(~keep[:, None], float("-inf")), where keep[b, i, j] is
(j <= i if causal) and (j < valid_tokens[b]). Each case holds input.npy, weights.safetensors,
the steps masked, attn, context, merged, out (float32), and meta.json.
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import ViTAttention, write_safetensors  # noqa: E402

CASES = [
    # name, B, N, C, h, causal, valid_tokens (None: all valid)
    ("causal_b2_n16_c16_h2", 2, 16, 16, 2, True, None),
    ("padding_b2_n16_c16_h2", 2, 16, 16, 2, False, [12, 16]),
    ("causal_padding_b2_n10_c24_h2", 2, 10, 24, 2, True, [7, 3]),
]


def keep_mask(B, N, causal, valid):
    """[B, N, N'] True where query i may see key j: causal (j <= i) and/or key padding (j < valid[b])."""
    keep = torch.ones(B, N, N, dtype=torch.bool)
    if causal:
        keep &= torch.ones(N, N).tril().bool()
    if valid is not None:
        keep &= (torch.arange(N)[None, :] < torch.tensor(valid)[:, None])[:, None, :]
    return keep


def masked_steps(m, x, causal, valid):
    B, N, C = x.shape
    keep = keep_mask(B, N, causal, valid)
    qkv = m.qkv(x).reshape(B, N, 3, m.num_heads, C // m.num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv.unbind(0)
    attn = (q @ k.transpose(-2, -1)) * m.scale
    s = {"input": x, "q": q, "k": k, "v": v, "scaled": attn}
    s["masked"] = attn.masked_fill(~keep[:, None], float("-inf"))
    s["attn"] = s["masked"].softmax(dim=-1)
    s["context"] = m.attn_drop(s["attn"]) @ v
    s["merged"] = s["context"].transpose(1, 2).reshape(B, N, C)
    s["out"] = m.proj_drop(m.proj(s["merged"]))
    assert torch.isfinite(s["attn"]).all(), "no row may be fully masked"
    return s


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/masks"
    torch.set_num_threads(1)
    for i, (name, B, N, C, h, causal, valid) in enumerate(CASES):
        torch.manual_seed(2000 + i)
        m = ViTAttention(C, num_heads=h, qkv_bias=True).eval()
        with torch.no_grad():
            m.qkv.bias.uniform_(-0.5, 0.5)
            x = torch.randn(B, N, C)
            s = masked_steps(m, x, causal, valid)
        case_dir = os.path.join(out_dir, name)
        os.makedirs(case_dir, exist_ok=True)
        write_safetensors(os.path.join(case_dir, "weights.safetensors"),
                          {"qkv.weight": m.qkv.weight, "qkv.bias": m.qkv.bias,
                           "proj.weight": m.proj.weight, "proj.bias": m.proj.bias})
        for step in ("input", "masked", "attn", "context", "merged", "out"):
            np.save(os.path.join(case_dir, step + ".npy"),
                    np.ascontiguousarray(s[step].detach().numpy().astype("<f4")))
        with open(os.path.join(case_dir, "meta.json"), "w") as f:
            json.dump({"batch": B, "tokens": N, "dim": C, "heads": h, "qkv_bias": True, "causal": causal,
                       "valid_tokens": valid, "torch": torch.__version__}, f, indent=2)
        print(f"{case_dir}: causal={causal} valid={valid}")


if __name__ == "__main__":
    main()
