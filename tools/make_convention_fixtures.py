#!/usr/bin/python3
"""Writes one attention layer under each naming convention attnscope reads into tests/data/conventions/.

Run with Debian's Python (it has torch):  /usr/bin/python3 tools/make_convention_fixtures.py

Each case folder holds input.npy ([B, N, C], what `attnscope run --input` takes), the layer's
weights as the library saved them (weights.pt by torch.save of the module's state_dict, and the
same tensors as weights.safetensors), meta.json, and the steps the module itself computed:
  reference_mha/        the article's MultiHeadAttention (its code copied below), every step, and
                        acts.pt: some of its intermediates saved with torch.save
  nn_mha_batch_first/   torch.nn.MultiheadAttention(batch_first=True): out and the per-head attn
                        (need_weights=True, average_attn_weights=False)
  nn_mha_seq_first/     the same with batch_first=False (the module takes [N, B, C]; input.npy
                        and out.npy are its tensors transposed to [B, N, C])
  hugging_face/         nn_mha_batch_first's weights under Hugging Face ViT's names in a
                        pytorch_model.bin (torch.save), its in_proj rows split into query, key, value
  nested_checkpoint/    the reference class inside a model, saved as a training checkpoint
                        {"model": state_dict, "epoch": ...}: blocks.0 and blocks.1 (--block)
  cross_attention/      weights.pt of nn.MultiheadAttention(kdim=C/2, vdim=C/4): q_proj_weight,
                        k_proj_weight, v_proj_weight of three widths, which attnscope refuses
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import write_safetensors  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "conventions")
B, N, C, H = 2, 7, 24, 4


class MultiHeadAttention(nn.Module):
    """The reference article's first class (sections 1-4), unchanged."""

    def __init__(self, embed_dim=768, num_heads=8, dropout=0.1):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.qkv_proj = nn.Linear(embed_dim, embed_dim * 3)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv_proj(x)
        qkv = qkv.reshape(B, N, 3, self.num_heads, self.head_dim)
        qkv = qkv.permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * (self.head_dim ** -0.5)
        attn = attn.softmax(dim=-1)
        attn = self.dropout(attn)
        out = attn @ v
        out = out.transpose(1, 2)
        out = out.reshape(B, N, C)
        out = self.out_proj(out)
        return out


def reference_steps(m, x):
    """The class's forward, one recorded tensor per line, under attnscope's step names."""
    B, N, C = x.shape
    s = {"input": x, "qkv": m.qkv_proj(x)}
    s["qkv_split"] = s["qkv"].reshape(B, N, 3, m.num_heads, m.head_dim)
    s["qkv_heads"] = s["qkv_split"].permute(2, 0, 3, 1, 4)
    s["q"], s["k"], s["v"] = s["qkv_heads"][0], s["qkv_heads"][1], s["qkv_heads"][2]
    s["k_t"] = s["k"].transpose(-2, -1)
    s["scores"] = s["q"] @ s["k_t"]
    s["scaled"] = s["scores"] * (m.head_dim ** -0.5)
    s["attn"] = s["scaled"].softmax(dim=-1)
    s["attn_drop"] = m.dropout(s["attn"])
    s["context"] = s["attn_drop"] @ s["v"]
    s["context_t"] = s["context"].transpose(1, 2)
    s["merged"] = s["context_t"].reshape(B, N, C)
    s["out"] = m.out_proj(s["merged"])
    return s


def save(case, name, t):
    np.save(os.path.join(OUT, case, name + ".npy"), np.ascontiguousarray(t.detach().numpy().astype("<f4")))


def write_case(case, state_dict, x, steps, meta, weights_file="weights.pt"):
    os.makedirs(os.path.join(OUT, case), exist_ok=True)
    torch.save(state_dict, os.path.join(OUT, case, weights_file))
    write_safetensors(os.path.join(OUT, case, "weights.safetensors"), state_dict)
    save(case, "input", x)
    for name, t in steps.items():
        save(case, name, t)
    with open(os.path.join(OUT, case, "meta.json"), "w") as f:
        json.dump(dict(meta, batch=x.shape[0], tokens=x.shape[1], dim=x.shape[2], heads=H), f, indent=1)


def randomized(module, gen):
    """Every parameter drawn anew, so that a bias left out or a swapped projection shows."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
    return module


def main():
    gen = torch.Generator().manual_seed(21)
    x = torch.randn(B, N, C, generator=gen)

    with torch.no_grad():
        # The article's class: its own nn.Linear initialisation (bias on), eval() so dropout is off.
        torch.manual_seed(5)
        ref = MultiHeadAttention(C, H, dropout=0.1).eval()
        s = reference_steps(ref, x)
        assert torch.equal(s["out"], ref(x)), "line-by-line forward differs from MultiHeadAttention.forward"
        write_case("reference_mha", ref.state_dict(), x, {k: v for k, v in s.items() if k != "input"},
                   {"convention": "reference MultiHeadAttention"})
        # The class's intermediates as a user saves them (q, k, v are views of one storage), for `check`.
        acts = {"x": x, "qkv": s["qkv"], "q": s["q"], "k": s["k"], "v": s["v"], "attn": s["attn"], "out": s["out"]}
        torch.save(acts, os.path.join(OUT, "reference_mha", "acts.pt"))
        # The same with a common bug: the scale applied after the softmax.
        buggy = (s["scores"].softmax(dim=-1)) * (ref.head_dim ** -0.5)
        torch.save(dict(acts, attn=buggy), os.path.join(OUT, "reference_mha", "acts_bug.pt"))

        # nn.MultiheadAttention, batch first: PyTorch's own attention and its per-head weights.
        mha = randomized(nn.MultiheadAttention(C, H, batch_first=True), gen).eval()
        out, attn = mha(x, x, x, need_weights=True, average_attn_weights=False)
        write_case("nn_mha_batch_first", mha.state_dict(), x, {"out": out, "attn": attn},
                   {"convention": "nn.MultiheadAttention"})

        # Sequence first (the default): the module takes [N, B, C].
        mha_sf = randomized(nn.MultiheadAttention(C, H), gen).eval()
        out_sf, attn_sf = mha_sf(x.transpose(0, 1), x.transpose(0, 1), x.transpose(0, 1), need_weights=True,
                                 average_attn_weights=False)
        write_case("nn_mha_seq_first", mha_sf.state_dict(), x, {"out": out_sf.transpose(0, 1), "attn": attn_sf},
                   {"convention": "nn.MultiheadAttention"})

        # Hugging Face ViT's names for the batch-first module's weights: query, key, value are the
        # in_proj rows [0, C), [C, 2C), [2C, 3C); attention.output.dense is out_proj.
        sd = mha.state_dict()
        w, b = sd["in_proj_weight"], sd["in_proj_bias"]
        pre = "vit.encoder.layer.0.attention."
        hf = {pre + "attention.query.weight": w[:C], pre + "attention.query.bias": b[:C],
              pre + "attention.key.weight": w[C:2 * C], pre + "attention.key.bias": b[C:2 * C],
              pre + "attention.value.weight": w[2 * C:], pre + "attention.value.bias": b[2 * C:],
              pre + "output.dense.weight": sd["out_proj.weight"], pre + "output.dense.bias": sd["out_proj.bias"]}
        hf = {k: v.clone() for k, v in hf.items()}
        write_case("hugging_face", hf, x, {"out": out, "attn": attn}, {"convention": "Hugging Face"},
                   weights_file="pytorch_model.bin")

        # The article's class as block 1 of a model, saved in a training checkpoint.
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([nn.ModuleDict({"attn": MultiHeadAttention(C, H)}) for _ in range(2)])

        model = randomized(Model(), gen).eval()
        s1 = reference_steps(model.blocks[1]["attn"], x)
        os.makedirs(os.path.join(OUT, "nested_checkpoint"), exist_ok=True)
        torch.save({"model": model.state_dict(), "epoch": 7, "best_acc": 0.5},
                   os.path.join(OUT, "nested_checkpoint", "checkpoint.pth"))
        save("nested_checkpoint", "input", x)
        for name in ("attn", "out"):
            save("nested_checkpoint", name, s1[name])

        # Cross-attention: keys and values of other widths, so separate q/k/v_proj_weight.
        cross = randomized(nn.MultiheadAttention(C, H, kdim=C // 2, vdim=C // 4, batch_first=True), gen)
        os.makedirs(os.path.join(OUT, "cross_attention"), exist_ok=True)
        torch.save(cross.state_dict(), os.path.join(OUT, "cross_attention", "weights.pt"))
    print("wrote", OUT, file=sys.stderr)


if __name__ == "__main__":
    main()
