#!/usr/bin/python3
"""Write PyTorch autograd fixtures for attnscope's backward pass into OUT_DIR/<case>/.

Run with Debian's python3-torch, after building attnscope (the dropout case reads attnscope's own
dropout masks, see below):

    /usr/bin/python3 tools/make_grad_golden.py tests/data/grad build/app/attnscope

The loss is sum(y * G) with y the layer's output (out_drop) and G an upstream gradient, so
dloss/dy = G. Each case folder holds input.npy, weights.safetensors (timm names), G.npy,
grad_<step>.npy for every pinned step (retain_grad on each intermediate of the reference's
ViTAttention.forward), grad_<param>.npy for qkv.weight, qkv.bias (when there is one),
proj.weight, proj.bias, and meta.json with the config. The autograd is run in float64 on the
float32 inputs, so the fixtures are the exact gradients of the float32 problem up to float64
rounding.

Dropout: PyTorch's random masks cannot be reproduced by attnscope's generator, so the dropout
case takes attnscope's masks (the forward's attn_drop != 0 where attn > 0, out_drop != 0 where
out != 0, from `attnscope run --dump`) and applies them in PyTorch as dropout does (mask / (1-p)).
The masks are an input of the reference here; the gradients are PyTorch's.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import ViTAttention, write_safetensors  # noqa: E402

STEPS = ["input", "qkv", "qkv_split", "qkv_heads", "q", "k", "v", "k_t", "scores", "scaled", "attn",
         "attn_drop", "context", "context_t", "merged", "out", "out_drop"]

CASES = [
    # name, B, N, C, h, qkv_bias, input scale, scaled, training (attn_drop, proj_drop), seed
    dict(name="nobias_b2_n5_c8_h2", B=2, N=5, C=8, h=2, qkv_bias=False, x_scale=1.0, scaled=True, drop=None, seed=11),
    dict(name="bias_b1_n4_c12_h3", B=1, N=4, C=12, h=3, qkv_bias=True, x_scale=1.0, scaled=True, drop=None, seed=12),
    dict(name="dropout_b2_n4_c8_h2", B=2, N=4, C=8, h=2, qkv_bias=True, x_scale=1.0, scaled=True, drop=(0.25, 0.2),
         seed=13),
    # The softmax-saturation demo: no scale, large head_dim, large inputs: attention is one-hot
    # and the gradient into the scores vanishes.
    dict(name="saturated_noscale_b1_n4_c48_h1", B=1, N=4, C=48, h=1, qkv_bias=False, x_scale=3.0, scaled=False,
         drop=None, seed=14),
    # Masks (attnscope --causal --valid-tokens 3,5): masked_fill(-inf) between scaled and softmax;
    # the hidden scores get no gradient.
    dict(name="masked_causal_b2_n5_c8_h2", B=2, N=5, C=8, h=2, qkv_bias=True, x_scale=1.0, scaled=True, drop=None,
         seed=15, causal=True, valid=[3, 5]),
]


def npy(path, t):
    np.save(path, np.ascontiguousarray(t.detach().numpy().astype("<f4")))


def attnscope_masks(exe, case_dir, case):
    """attnscope's dropout masks for this case's config (they depend on the seed and shapes only)."""
    p_attn, p_proj = case["drop"]
    with tempfile.TemporaryDirectory() as dump:
        cmd = [exe, "run", "--input", os.path.join(case_dir, "input.npy"),
               "--weights", os.path.join(case_dir, "weights.safetensors"), "--heads", str(case["h"]),
               "--seed", str(case["seed"]), "--training", "--attn-drop", str(p_attn), "--proj-drop", str(p_proj),
               "--dump", dump]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        load = lambda s: torch.from_numpy(np.load(os.path.join(dump, s + ".npy"))).double()
        attn, attn_drop, out, out_drop = load("attn"), load("attn_drop"), load("out"), load("out_drop")
    assert (attn > 0).all() and (out != 0).all(), "a zero before dropout would hide the mask"
    return (attn_drop != 0).double(), (out_drop != 0).double()


def make_case(out_dir, exe, case):
    torch.manual_seed(case["seed"])
    B, N, C, h = case["B"], case["N"], case["C"], case["h"]
    m = ViTAttention(C, num_heads=h, qkv_bias=case["qkv_bias"]).eval()
    with torch.no_grad():
        if case["qkv_bias"]:  # the reference initialises zeros; random values test the bias gradient path
            m.qkv.bias.uniform_(-0.5, 0.5)
    x = torch.randn(B, N, C) * case["x_scale"]
    G = torch.randn(B, N, C)
    case_dir = os.path.join(out_dir, case["name"])
    os.makedirs(case_dir, exist_ok=True)
    weights = {"qkv.weight": m.qkv.weight}
    if case["qkv_bias"]:
        weights["qkv.bias"] = m.qkv.bias
    weights["proj.weight"] = m.proj.weight
    weights["proj.bias"] = m.proj.bias
    write_safetensors(os.path.join(case_dir, "weights.safetensors"), weights)
    npy(os.path.join(case_dir, "input.npy"), x)
    npy(os.path.join(case_dir, "G.npy"), G)

    masks = attnscope_masks(exe, case_dir, case) if case["drop"] else None
    p_attn, p_proj = case["drop"] or (0.0, 0.0)

    # The reference's forward in float64 on the float32 values, retain_grad on every intermediate.
    m = m.double()
    x = x.double().requires_grad_(True)
    if not case["scaled"]:
        m.scale = 1.0  # attnscope --no-scale: the reference's self.scale switched off
    scale = m.scale
    s = {"input": x}
    s["qkv"] = m.qkv(x)
    s["qkv_split"] = s["qkv"].reshape(B, N, 3, h, C // h)
    s["qkv_heads"] = s["qkv_split"].permute(2, 0, 3, 1, 4)
    s["q"], s["k"], s["v"] = s["qkv_heads"].unbind(0)
    s["k_t"] = s["k"].transpose(-2, -1)
    s["scores"] = s["q"] @ s["k_t"]
    s["scaled"] = s["scores"] * scale
    logits = s["scaled"]
    if case.get("causal") or case.get("valid"):
        keep = torch.ones(B, N, N, dtype=torch.bool)
        if case.get("causal"):
            keep &= torch.ones(N, N, dtype=torch.bool).tril()
        for b, valid in enumerate(case.get("valid") or []):
            keep[b, :, valid:] = False
        s["masked"] = logits = s["scaled"].masked_fill(~keep[:, None], float("-inf"))
    s["attn"] = logits.softmax(dim=-1)
    s["attn_drop"] = s["attn"] * masks[0] / (1 - p_attn) if masks else m.attn_drop(s["attn"])
    s["context"] = s["attn_drop"] @ s["v"]
    s["context_t"] = s["context"].transpose(1, 2)
    s["merged"] = s["context_t"].reshape(B, N, C)
    s["out"] = m.proj(s["merged"])
    s["out_drop"] = s["out"] * masks[1] / (1 - p_proj) if masks else m.proj_drop(s["out"])
    assert [n for n in s if n != "masked"] == STEPS
    if not masks and "masked" not in s:
        assert torch.allclose(s["out_drop"], m(x)), "step-by-step forward differs from ViTAttention.forward"
    for t in s.values():
        t.retain_grad()
    (s["out_drop"] * G.double()).sum().backward()

    for step, t in s.items():
        npy(os.path.join(case_dir, "grad_" + step + ".npy"), t.grad)
    for name, p in m.named_parameters():
        npy(os.path.join(case_dir, "grad_" + name + ".npy"), p.grad)
    meta = {"batch": B, "tokens": N, "dim": C, "heads": h, "qkv_bias": case["qkv_bias"], "seed": case["seed"],
            "scaled": case["scaled"], "causal": bool(case.get("causal")), "valid_tokens": case.get("valid") or [],
            "training": bool(case["drop"]), "attn_drop": p_attn, "proj_drop": p_proj,
            "max_attn": float(s["attn"].max()), "grad_scores_norm": float(s["scores"].grad.norm()),
            "torch": torch.__version__}
    with open(os.path.join(case_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
    print(case["name"], "max attn %.6f" % meta["max_attn"], "||grad_scores|| %.3g" % meta["grad_scores_norm"])


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/grad"
    exe = sys.argv[2] if len(sys.argv) > 2 else "build/app/attnscope"
    torch.set_num_threads(1)
    for case in CASES:
        make_case(out_dir, exe, case)
    print("wrote", len(CASES), "cases to", out_dir)


if __name__ == "__main__":
    main()
