#!/usr/bin/python3
"""Writes small whole-ViT checkpoints of each family attnscope reads into tests/data/vit_families/.

Run with Debian's Python (python3-torch, python3-torchvision):
    /usr/bin/python3 tools/make_vit_family_fixtures.py

All models are 32 x 32 images, patches of 8 (16 patches), D = 48, 4 heads, 2 blocks, MLP 96, 5 classes,
every parameter drawn anew (torchvision zero-initialises the head, which would hide a wrong head).
pixels.npy [1, 3, 32, 32] is the input of every case. Per case folder:
  torchvision/      torchvision.models.VisionTransformer's state_dict: model.pth (torch.save) and
                    model.safetensors; logits, norm (the encoder's output, after encoder.ln) and
                    block<i>_attn ([1, h, N, N]: self_attention called again on ln_1's output with
                    need_weights=True, average_attn_weights=False) from the module itself; and
                    block1_x / block1_out: one attention layer's input and output, for run --block 1.
  hf_classifier/    the same weights under Hugging Face ViTForImageClassification's names
                    (pytorch_model.bin): query/key/value are in_proj's three row blocks. transformers is
                    not in Debian, so the numbers are torchvision's module with every LayerNorm's eps set
                    to 1e-12 (Hugging Face's default): the same computation, line for line.
                    block1_<name>: block 1's attention run by HfViTSelfAttention below, the lines of
                    transformers' ViTSelfAttention and ViTSelfOutput (query_layer, key_layer,
                    value_layer, attention_scores, attention_probs, context_layer, hidden_states).
  hf_model/         ViTModel's names (no "vit." prefix, a pooler, no classifier): norm and attention only.
  deit_distilled/   timm DeiT distilled names (cls_token, dist_token, pos_embed [1, 2 + P, D], head and
                    head_dist). timm is not in Debian: the blocks are torchvision's EncoderBlock (the
                    same pre-norm block), the embedding and the mean of both heads are written out below
                    as timm's VisionTransformerDistilled does them in eval.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision
from torchvision.models.vision_transformer import EncoderBlock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import write_safetensors  # noqa: E402
from torch_fixtures import hf_vit_names, randomize, save_npy  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "vit_families")
S, P, D, H, DEPTH, M, K = 32, 8, 48, 4, 2, 96, 5


def save(case, name, t):
    save_npy(os.path.join(OUT, case), name, t)


class HfViTSelfAttention(nn.Module):
    """transformers' ViTSelfAttention followed by ViTSelfOutput (eager attention), line for line: the
    lines attnscope shows for a Hugging Face ViT's steps are these (tests/test_vit_families.cpp finds
    each of them in this file). forward returns every intermediate tensor as well."""

    def __init__(self, dim, heads):
        super().__init__()
        self.num_attention_heads = heads
        self.attention_head_size = dim // heads
        self.all_head_size = dim
        self.query, self.key, self.value = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.dropout = nn.Dropout(0.0)
        self.output = nn.Module()
        self.output.dense, self.output.dropout = nn.Linear(dim, dim), nn.Dropout(0.0)

    def transpose_for_scores(self, x):
        x = x.view(x.size()[:-1] + (self.num_attention_heads, self.attention_head_size))
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        mixed_query_layer = self.query(hidden_states)
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = self.transpose_for_scores(mixed_query_layer)
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        context_layer = context_layer.view(new_context_layer_shape)
        hidden_states = self.output.dense(context_layer)
        hidden_states = self.output.dropout(hidden_states)
        return {"query_layer": query_layer, "key_layer": key_layer, "value_layer": value_layer,
                "attention_scores": attention_scores, "attention_probs": attention_probs,
                "context_layer": context_layer, "hidden_states": hidden_states}


def block_attention(blocks, x):
    """Runs the blocks on x, and every block's per-head attention from its own self_attention."""
    attns = []
    for blk in blocks:
        y = blk.ln_1(x)
        _, a = blk.self_attention(y, y, y, need_weights=True, average_attn_weights=False)
        attns.append(a)
        x = blk(x)
    return x, attns


gen = torch.Generator().manual_seed(7)
pixels = torch.randn(1, 3, S, S, generator=gen)
os.makedirs(OUT, exist_ok=True)
np.save(os.path.join(OUT, "pixels.npy"), pixels.numpy().astype("<f4"))

with torch.no_grad():
    # ---- torchvision ------------------------------------------------------------------------------
    tv = randomize(torchvision.models.VisionTransformer(image_size=S, patch_size=P, num_layers=DEPTH, num_heads=H,
                                                       hidden_dim=D, mlp_dim=M, num_classes=K), gen).eval()
    logits = tv(pixels)
    tokens = tv._process_input(pixels)
    tokens = torch.cat([tv.class_token.expand(1, -1, -1), tokens], dim=1)
    x = tv.encoder.dropout(tokens + tv.encoder.pos_embedding)
    x, attns = block_attention(tv.encoder.layers, x)
    norm = tv.encoder.ln(x)
    assert torch.allclose(tv.heads(norm[:, 0]), logits), "the step-by-step forward differs from VisionTransformer"
    sd = tv.state_dict()
    os.makedirs(os.path.join(OUT, "torchvision"), exist_ok=True)
    torch.save(sd, os.path.join(OUT, "torchvision", "model.pth"))
    write_safetensors(os.path.join(OUT, "torchvision", "model.safetensors"), sd)
    save("torchvision", "logits", logits)
    save("torchvision", "norm", norm)
    for i, a in enumerate(attns):
        save("torchvision", f"block{i}_attn", a)
    # One attention layer alone: block 1's self_attention on its ln_1 output.
    x1 = tv.encoder.layers[0](tv.encoder.dropout(tokens + tv.encoder.pos_embedding))
    y1 = tv.encoder.layers[1].ln_1(x1)
    out1, _ = tv.encoder.layers[1].self_attention(y1, y1, y1, need_weights=False)
    save("torchvision", "block1_x", y1)
    save("torchvision", "block1_out", out1)

    # ---- Hugging Face names, eps 1e-12 --------------------------------------------------------------
    for m in tv.modules():
        if isinstance(m, nn.LayerNorm):
            m.eps = 1e-12
    hf_logits = tv(pixels)
    x = tv.encoder.dropout(tokens + tv.encoder.pos_embedding)
    x, hf_attns = block_attention(tv.encoder.layers, x)
    hf_norm = tv.encoder.ln(x)

    cls = hf_vit_names(sd, "vit.", DEPTH, D)
    cls["classifier.weight"] = sd["heads.head.weight"].clone()
    cls["classifier.bias"] = sd["heads.head.bias"].clone()
    os.makedirs(os.path.join(OUT, "hf_classifier"), exist_ok=True)
    torch.save(cls, os.path.join(OUT, "hf_classifier", "pytorch_model.bin"))
    save("hf_classifier", "logits", hf_logits)
    save("hf_classifier", "norm", hf_norm)
    for i, a in enumerate(hf_attns):
        save("hf_classifier", f"block{i}_attn", a)
    # Block 1's attention run by Hugging Face's lines on its layernorm_before output: every
    # intermediate, and the same output as torchvision's self_attention.
    hf_attention = HfViTSelfAttention(D, H).eval()
    hf_attention.load_state_dict({k[len("vit.encoder.layer.1.attention."):].replace("attention.", "", 1): v
                                  for k, v in cls.items() if k.startswith("vit.encoder.layer.1.attention.")})
    layer1 = tv.encoder.layers[1]
    y1 = layer1.ln_1(tv.encoder.layers[0](tv.encoder.dropout(tokens + tv.encoder.pos_embedding)))
    hf_steps = hf_attention(y1)
    assert torch.allclose(hf_steps["hidden_states"], layer1.self_attention(y1, y1, y1, need_weights=False)[0],
                          atol=1e-5), "Hugging Face's lines differ from nn.MultiheadAttention"
    for name, t in hf_steps.items():
        save("hf_classifier", f"block1_{name}", t)

    base = hf_vit_names(sd, "", DEPTH, D)
    base["pooler.dense.weight"] = torch.randn(D, D, generator=gen)  # ViTModel's pooler: not on the path to norm
    base["pooler.dense.bias"] = torch.randn(D, generator=gen)
    os.makedirs(os.path.join(OUT, "hf_model"), exist_ok=True)
    torch.save(base, os.path.join(OUT, "hf_model", "pytorch_model.bin"))
    save("hf_model", "norm", hf_norm)
    for i, a in enumerate(hf_attns):
        save("hf_model", f"block{i}_attn", a)

    # ---- timm DeiT distilled ------------------------------------------------------------------------
    blocks = nn.ModuleList([EncoderBlock(H, D, M, 0.0, 0.0, nn.LayerNorm) for _ in range(DEPTH)])
    for blk in blocks:
        blk.ln_1.eps = blk.ln_2.eps = 1e-6
    randomize(blocks, gen).eval()
    patch = randomize(nn.Conv2d(3, D, P, P), gen)
    cls_token, dist_token = torch.randn(1, 1, D, generator=gen), torch.randn(1, 1, D, generator=gen)
    pos_embed = 0.3 * torch.randn(1, 2 + (S // P) ** 2, D, generator=gen)
    norm_layer = randomize(nn.LayerNorm(D, eps=1e-6), gen)
    head, head_dist = randomize(nn.Linear(D, K), gen), randomize(nn.Linear(D, K), gen)
    # timm: x = patch_embed(x); x = cat((cls, dist, x)) + pos_embed; blocks; norm;
    #       eval: (head(x[:, 0]) + head_dist(x[:, 1])) / 2
    x = patch(pixels).flatten(2).transpose(1, 2)
    x = torch.cat((cls_token.expand(1, -1, -1), dist_token.expand(1, -1, -1), x), dim=1) + pos_embed
    x, deit_attns = block_attention(blocks, x)
    deit_norm = norm_layer(x)
    deit_logits = (head(deit_norm[:, 0]) + head_dist(deit_norm[:, 1])) / 2
    timm = {"cls_token": cls_token, "dist_token": dist_token, "pos_embed": pos_embed,
            "patch_embed.proj.weight": patch.weight, "patch_embed.proj.bias": patch.bias}
    for i, blk in enumerate(blocks):
        pairs = {"norm1": blk.ln_1, "attn.proj": blk.self_attention.out_proj, "norm2": blk.ln_2,
                 "mlp.fc1": blk.mlp[0], "mlp.fc2": blk.mlp[3]}
        for name, mod in pairs.items():
            timm[f"blocks.{i}.{name}.weight"], timm[f"blocks.{i}.{name}.bias"] = mod.weight, mod.bias
        timm[f"blocks.{i}.attn.qkv.weight"] = blk.self_attention.in_proj_weight
        timm[f"blocks.{i}.attn.qkv.bias"] = blk.self_attention.in_proj_bias
    for name, mod in {"norm": norm_layer, "head": head, "head_dist": head_dist}.items():
        timm[name + ".weight"], timm[name + ".bias"] = mod.weight, mod.bias
    timm = {k: v.detach().clone() for k, v in timm.items()}
    os.makedirs(os.path.join(OUT, "deit_distilled"), exist_ok=True)
    write_safetensors(os.path.join(OUT, "deit_distilled", "model.safetensors"), timm)
    torch.save({"model": timm}, os.path.join(OUT, "deit_distilled", "checkpoint.pth"))  # as DeiT's training saves it
    save("deit_distilled", "logits", deit_logits)
    save("deit_distilled", "norm", deit_norm)
    for i, a in enumerate(deit_attns):
        save("deit_distilled", f"block{i}_attn", a)
print("wrote", OUT, file=sys.stderr)
