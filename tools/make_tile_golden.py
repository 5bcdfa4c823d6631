#!/usr/bin/python3
"""Write PyTorch fixtures for the flash path's attention map on demand into OUT_DIR/<case>/.

Run with Debian's python3-torch:  /usr/bin/python3 tools/make_tile_golden.py tests/data/tiles

The reference ViTAttention (tools/make_golden.py), masked like tools/make_mask_golden.py
(attn.masked_fill(~keep[:, None], -inf) before the softmax) and with self.scale = 1 for the
--no-scale case. Each case holds input.npy, weights.safetensors, attn.npy [B, h, N, N],
overview.npy: F.max_pool2d(attn, block, ceil_mode=True), the max of every block x block block
(the last row and column of blocks clipped at N), row_max.npy and row_sum.npy [B, h, N]: the final
m and l of the online softmax, m = max_j s_ij and l = sum_j exp(s_ij - m_i) over the masked, scaled
scores s (hidden keys add 0), and meta.json.
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import ViTAttention, write_safetensors  # noqa: E402
from make_mask_golden import keep_mask  # noqa: E402

CASES = [
    # name, B, N, C, h, causal, valid_tokens (None: all valid), scaled, overview block
    ("causal_padding_b2_n37_c16_h2", 2, 37, 16, 2, True, [30, 37], True, 4),
    ("noscale_b1_n29_c16_h2", 1, 29, 16, 2, False, None, False, 3),
]


def attention_map(m, x, causal, valid):
    """attn [B, h, N, N] and the softmax's row max m and row sum l [B, h, N]."""
    B, N, C = x.shape
    keep = keep_mask(B, N, causal, valid)
    qkv = m.qkv(x).reshape(B, N, 3, m.num_heads, C // m.num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv.unbind(0)
    scores = ((q @ k.transpose(-2, -1)) * m.scale).masked_fill(~keep[:, None], float("-inf"))
    attn = scores.softmax(dim=-1)
    assert torch.isfinite(attn).all(), "no row may be fully masked"
    row_max = scores.amax(dim=-1)
    row_sum = torch.exp(scores - row_max[..., None]).sum(dim=-1)
    return attn, row_max, row_sum


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/tiles"
    torch.set_num_threads(1)
    for i, (name, B, N, C, h, causal, valid, scaled, block) in enumerate(CASES):
        torch.manual_seed(3000 + i)
        m = ViTAttention(C, num_heads=h, qkv_bias=True).eval()
        if not scaled:
            m.scale = 1.0
        with torch.no_grad():
            m.qkv.bias.uniform_(-0.5, 0.5)
            x = torch.randn(B, N, C)
            attn, row_max, row_sum = attention_map(m, x, causal, valid)
            overview = F.max_pool2d(attn, kernel_size=block, stride=block, ceil_mode=True)
        case_dir = os.path.join(out_dir, name)
        os.makedirs(case_dir, exist_ok=True)
        write_safetensors(os.path.join(case_dir, "weights.safetensors"),
                          {"qkv.weight": m.qkv.weight, "qkv.bias": m.qkv.bias,
                           "proj.weight": m.proj.weight, "proj.bias": m.proj.bias})
        for step, t in (("input", x), ("attn", attn), ("overview", overview), ("row_max", row_max),
                        ("row_sum", row_sum)):
            np.save(os.path.join(case_dir, step + ".npy"), np.ascontiguousarray(t.detach().numpy().astype("<f4")))
        with open(os.path.join(case_dir, "meta.json"), "w") as f:
            json.dump({"batch": B, "tokens": N, "dim": C, "heads": h, "qkv_bias": True, "causal": causal,
                       "valid_tokens": valid, "scaled": scaled, "overview_block": block,
                       "torch": torch.__version__}, f, indent=2)
        print(f"{case_dir}: causal={causal} valid={valid} scaled={scaled} overview {tuple(overview.shape)}")


if __name__ == "__main__":
    main()
