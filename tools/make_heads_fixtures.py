#!/usr/bin/python3
"""Writes files whose head count only their configuration (or nobody) knows, into tests/data/heads/.

Run with Debian's Python (python3-torch, python3-torchvision):
    /usr/bin/python3 tools/make_heads_fixtures.py

A state dict never says how many heads its attention has: [3D, D] in_proj weights are the same for 1 head
of 64 or 4 heads of 16. Every model here has 4 heads at D = 64, where the usual head size 64 would give 1.
  vit/                torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=3,
                      num_heads=4, hidden_dim=64, mlp_dim=128, num_classes=5), every parameter drawn anew:
                      model.pth (torch.save(model.state_dict())), pixels.npy [1, 3, 32, 32], logits.npy and
                      block<i>_attn.npy [1, 4, 17, 17] (self_attention called on ln_1's output with
                      need_weights=True, average_attn_weights=False).
  checkpoint/         the same model as a training checkpoint: torch.save({"epoch": 3, "model": state_dict,
                      "optimizer": Adam's state_dict after one step, "config": {"num_heads": 4, ...}}).
  hf_folder/          the same weights under Hugging Face ViTForImageClassification's names
                      (pytorch_model.bin) beside a config.json with num_attention_heads 4. transformers is
                      not in Debian: the names are mapped as tools/make_vit_family_fixtures.py does, and the
                      logits and block<i>_attn are torchvision's module with every LayerNorm's eps at 1e-12
                      (Hugging Face's).
  encoder/            nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model=64, nhead=4,
                      dim_feedforward=128, batch_first=True), num_layers=2): enc.pt (its state_dict),
                      x.npy [2, 10, 64], block1_out.npy and block1_attn.npy (layers[1].self_attn(x, x, x),
                      the weights per head); enc_hparams.pt: {"state_dict": ..., "hparams": {"nhead": 4}}.
"""
import json
import os
import sys

import torch
import torch.nn as nn
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_fixtures import hf_vit_names, randomize, save_npy  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "heads")
S, P, D, H, DEPTH, M, K = 32, 8, 64, 4, 3, 128, 5


def save(case, name, t):
    save_npy(os.path.join(OUT, case), name, t)


def vit_outputs(tv, pixels):
    """logits and each block's per-head attention, from the module's own layers."""
    logits = tv(pixels)
    x = tv._process_input(pixels)
    x = torch.cat([tv.class_token.expand(x.shape[0], -1, -1), x], dim=1)
    x = tv.encoder.dropout(x + tv.encoder.pos_embedding)
    attns = []
    for layer in tv.encoder.layers:
        y = layer.ln_1(x)
        attns.append(layer.self_attention(y, y, y, need_weights=True, average_attn_weights=False)[1])
        x = layer(x)
    return logits, attns


def hf_names(sd):
    out = hf_vit_names(sd, "vit.", DEPTH, D)
    out["classifier.weight"] = sd["heads.head.weight"].clone()
    out["classifier.bias"] = sd["heads.head.bias"].clone()
    return out


def main():
    gen = torch.Generator().manual_seed(34)
    tv = torchvision.models.VisionTransformer(image_size=S, patch_size=P, num_layers=DEPTH, num_heads=H,
                                              hidden_dim=D, mlp_dim=M, num_classes=K)
    randomize(tv, gen).eval()
    pixels = torch.randn(1, 3, S, S, generator=gen)
    sd = tv.state_dict()
    with torch.no_grad():
        logits, attns = vit_outputs(tv, pixels)
    os.makedirs(os.path.join(OUT, "vit"), exist_ok=True)
    torch.save(sd, os.path.join(OUT, "vit", "model.pth"))
    save("vit", "pixels", pixels)
    save("vit", "logits", logits)
    for i, a in enumerate(attns):
        save("vit", f"block{i}_attn", a)

    # A training checkpoint: the optimizer's state after one step, and the run's config.
    optimizer = torch.optim.Adam(tv.parameters(), lr=1e-3)
    tv.train()
    tv(pixels).sum().backward()
    optimizer.zero_grad()  # the step below moves nothing: the weights stay those of model.pth
    optimizer.step()
    tv.eval()
    os.makedirs(os.path.join(OUT, "checkpoint"), exist_ok=True)
    torch.save({"epoch": 3, "model": sd, "optimizer": optimizer.state_dict(),
                "config": {"image_size": S, "patch_size": P, "num_layers": DEPTH, "num_heads": H,
                           "hidden_dim": D, "mlp_dim": M, "num_classes": K}},
               os.path.join(OUT, "checkpoint", "checkpoint.pth"))

    # Hugging Face's names in a folder with config.json.
    for m in tv.modules():
        if isinstance(m, nn.LayerNorm):
            m.eps = 1e-12
    with torch.no_grad():
        hf_logits, hf_attns = vit_outputs(tv, pixels)
    os.makedirs(os.path.join(OUT, "hf_folder"), exist_ok=True)
    torch.save(hf_names(sd), os.path.join(OUT, "hf_folder", "pytorch_model.bin"))
    with open(os.path.join(OUT, "hf_folder", "config.json"), "w") as f:
        json.dump({"architectures": ["ViTForImageClassification"], "model_type": "vit", "hidden_size": D,
                   "num_hidden_layers": DEPTH, "num_attention_heads": H, "intermediate_size": M,
                   "image_size": S, "patch_size": P, "num_channels": 3, "layer_norm_eps": 1e-12,
                   "qkv_bias": True}, f, indent=2)
    save("hf_folder", "logits", hf_logits)
    for i, a in enumerate(hf_attns):
        save("hf_folder", f"block{i}_attn", a)

    # nn.TransformerEncoder: one attention layer at a time (run --block 1).
    layer = nn.TransformerEncoderLayer(d_model=D, nhead=H, dim_feedforward=M, batch_first=True)
    enc = randomize(nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False), gen).eval()
    x = torch.randn(2, 10, D, generator=gen)
    with torch.no_grad():
        out, weights = enc.layers[1].self_attn(x, x, x, need_weights=True, average_attn_weights=False)
    os.makedirs(os.path.join(OUT, "encoder"), exist_ok=True)
    torch.save(enc.state_dict(), os.path.join(OUT, "encoder", "enc.pt"))
    torch.save({"state_dict": enc.state_dict(), "hparams": {"d_model": D, "nhead": H}},
               os.path.join(OUT, "encoder", "enc_hparams.pt"))
    save("encoder", "x", x)
    save("encoder", "block1_out", out)
    save("encoder", "block1_attn", weights)


if __name__ == "__main__":
    main()
