#!/usr/bin/python3
"""Write PyTorch autograd fixtures for attnscope's whole-ViT backward pass into tests/data/vit_grad/.

Run with Debian's python3-torch and python3-torchvision (not the python3 first on PATH):
    /usr/bin/python3 tools/make_vit_grad_golden.py [tests/data/vit_grad]

Every case runs a checkpoint that other fixture scripts wrote (so the weights are those attnscope's
forward tests already check) on its pixels, in float64 on the stored float32 values, step by step:
one torch tensor per step attnscope records, retain_grad on each, then

    loss = sum over images b of logits[b, class_b]      class_b: the image's prediction, or meta's class

and .backward(). Per case folder: grads.npz holds dloss/d<step> (float32) under attnscope's step
names: pixels, stem<i>.conv/.bn/.relu, patches, patch_embed, tokens, embed, block<i>.<step> for the
block's steps, block<i>.attention.<step> for its attention's 17 (input: norm1's tensor), norm, cls_out, logits. probs is not
on the path to the logit (its .grad stays None). meta.json names the checkpoint and pixels (relative
to tests/data), --heads, the class asked for (null: the prediction), the classes used, DropPath's
rate, training and seed, and the worst |step-by-step logits - the library model's logits|.

The models, by family:
  timm          tools/make_vit_golden.py's timm-compatible VisionTransformer (timm is not in Debian),
                loaded from tests/data/vit/meta_i32_p8_d64_h4_l2; its attention is the reference's
                ViTAttention, whose lines steps_of() runs.
  torchvision   torchvision.models.VisionTransformer itself, loaded from vit_families/torchvision.
  hf            transformers is not in Debian: torchvision's module with every LayerNorm's eps set to
                1e-12, as tools/make_vit_family_fixtures.py builds the hf_classifier case, whose
                pytorch_model.bin attnscope reads; its attention divides by sqrt(head_dim) as
                transformers' ViTSelfAttention does.
  deit          timm DeiT distilled as tools/make_vit_family_fixtures.py builds it: torchvision
                EncoderBlocks (eps 1e-6), the conv patch embedding, class and distillation tokens, the
                mean of head and head_dist.
  hybrid        tools/make_hybrid_fixtures.py's HybridEmbed (Conv2d, BatchNorm2d in eval, ReLU per
                stage, a 1x1 proj) before the timm-compatible blocks.
  layer_scale   tools/make_drop_path_golden.py's model (LayerScale ls1, ls2 in every block) with a
                drop-path rate: in eval (DropPath the identity) and in training with attnscope's
                masks from that case's folder (as that script does).
nn.MultiheadAttention runs fused, so no tensor inside it can retain a gradient: in torchvision, hf
and deit each block's attention is written out from its in_proj_weight and out_proj (the same
computation; the script checks its output against self_attention's and the logits against the
module's). The patches step is x.unfold(...) and patch_embed a linear over it, checked against the
library's conv.
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.models.vision_transformer import EncoderBlock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import steps_of  # noqa: E402
from make_hybrid_fixtures import HybridEmbed  # noqa: E402
from make_drop_path_golden import add_layer_scale  # noqa: E402
from make_drop_path_golden import forward as drop_path_forward  # noqa: E402
from make_vit_golden import VisionTransformer  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")


def read_safetensors(path):
    """name -> tensor of a .safetensors file (F16, F32 and I64, as these fixtures hold)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        dtype = {"F16": "<f2", "F32": "<f4", "I64": "<i8"}[e["dtype"]]
        a, b = e["data_offsets"]
        values = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=dtype).reshape(e["shape"])
        out[name] = torch.from_numpy(values.astype("<i8" if dtype == "<i8" else "<f4"))
    return out


def load_npy(rel):
    return torch.from_numpy(np.load(os.path.join(DATA, rel)).astype("<f4"))


# ---- the recorded steps ------------------------------------------------------------------------
def mha_steps(mha, x, hf):
    """nn.MultiheadAttention's computation on x (query = key = value), one tensor per step attnscope
    records, in the reference's lines (steps_of) with in_proj as qkv and out_proj as proj; Hugging
    Face's lines divide the scores by sqrt(head_dim)."""
    B, N, C = x.shape
    h = mha.num_heads
    s = {"input": x}
    s["qkv"] = F.linear(x, mha.in_proj_weight, mha.in_proj_bias)
    s["qkv_split"] = s["qkv"].reshape(B, N, 3, h, C // h)
    s["qkv_heads"] = s["qkv_split"].permute(2, 0, 3, 1, 4)
    s["q"], s["k"], s["v"] = s["qkv_heads"].unbind(0)
    s["k_t"] = s["k"].transpose(-2, -1)
    s["scores"] = s["q"] @ s["k_t"]
    s["scaled"] = s["scores"] / math.sqrt(C // h) if hf else s["scores"] * (C // h) ** -0.5
    s["attn"] = s["scaled"].softmax(dim=-1)
    s["attn_drop"] = s["attn"]  # dropout 0, eval
    s["context"] = s["attn_drop"] @ s["v"]
    s["context_t"] = s["context"].transpose(1, 2)
    s["merged"] = s["context_t"].reshape(B, N, C)
    s["out"] = mha.out_proj(s["merged"])
    s["out_drop"] = s["out"]
    expected, _ = mha(x, x, x, need_weights=False)
    assert torch.allclose(s["out_drop"], expected, rtol=1e-9, atol=1e-9), "written-out attention differs from the module"
    return s


def drop_path(x, rate, mask):
    """timm's drop_path: the identity in eval (mask None), else x.div(keep_prob) * random_tensor."""
    return x if mask is None else x.div(1 - rate) * mask


def record_block(s, i, x, norm1, attention, norm2, fc1, act, fc2, ls=None, dp=None):
    """One pre-norm block, every step under attnscope's name. ls: (ls1, ls2) modules; dp: (rate,
    mask1, mask2) with masks None in eval."""
    p = f"block{i}."
    s[p + "norm1"] = norm1(x)
    a = attention(s[p + "norm1"])
    for name, t in a.items():  # its input is norm1 itself, recorded under both names as attnscope does
        s[p + "attention." + name] = t
    end = s[p + "attn_out"] = a["out_drop"]
    if ls:
        end = s[p + "ls1"] = ls[0](end)
    if dp:
        end = s[p + "drop_path1"] = drop_path(end, dp[0], dp[1])
    s[p + "residual1"] = x + end
    s[p + "norm2"] = norm2(s[p + "residual1"])
    s[p + "fc1"] = fc1(s[p + "norm2"])
    s[p + "gelu"] = act(s[p + "fc1"])
    end = s[p + "fc2"] = fc2(s[p + "gelu"])
    if ls:
        end = s[p + "ls2"] = ls[1](end)
    if dp:
        end = s[p + "drop_path2"] = drop_path(end, dp[0], dp[2])
    s[p + "residual2"] = s[p + "residual1"] + end
    return s[p + "residual2"]


def record_patches(s, pixels, conv):
    """patches = the windows a stride-p conv reads, patch_embed = a linear over them (the conv's
    numbers: checked against conv itself)."""
    B = pixels.shape[0]
    p = conv.kernel_size[0]
    s["pixels"] = pixels
    s["patches"] = pixels.unfold(2, p, p).unfold(3, p, p).permute(0, 2, 3, 1, 4, 5).reshape(B, -1, 3 * p * p)
    s["patch_embed"] = F.linear(s["patches"], conv.weight.reshape(conv.out_channels, -1), conv.bias)
    assert torch.allclose(s["patch_embed"], conv(pixels).flatten(2).transpose(1, 2), rtol=1e-9, atol=1e-9)
    return s["patch_embed"]


def record_head(s, x, prefix_tokens, pos_embed, blocks, norm, head, head_dist=None):
    s["tokens"] = torch.cat(prefix_tokens + [x], dim=1)
    x = s["embed"] = s["tokens"] + pos_embed
    for i, run_block in enumerate(blocks):
        x = run_block(s, i, x)
    s["norm"] = norm(x)
    s["cls_out"] = s["norm"][:, 0]
    s["logits"] = head(s["cls_out"]) if head_dist is None else (head(s["cls_out"]) + head_dist(s["norm"][:, 1])) / 2
    return s["logits"]


# ---- the families ------------------------------------------------------------------------------
def timm_case():
    sd = read_safetensors(os.path.join(DATA, "vit/meta_i32_p8_d64_h4_l2/model.safetensors"))
    model = VisionTransformer(32, 8, 10, 64, 2, 4, 4.0)
    model.load_state_dict(sd)
    model = model.double().eval()
    pixels = load_npy("vit/meta_i32_p8_d64_h4_l2/pixels.npy").double()

    def forward(s, x):
        B = x.shape[0]
        t = record_patches(s, x, model.patch_embed.proj)
        blocks = [lambda s, i, x, b=b: record_block(s, i, x, b.norm1, lambda y, b=b: steps_of(b.attn, y), b.norm2,
                                                    b.mlp.fc1, b.mlp.act, b.mlp.fc2) for b in model.blocks]
        return record_head(s, t, [model.cls_token.expand(B, -1, -1)], model.pos_embed, blocks, model.norm, model.head)

    return dict(model="vit/meta_i32_p8_d64_h4_l2/model.safetensors", pixels="vit/meta_i32_p8_d64_h4_l2/pixels.npy",
                heads=4), pixels, forward, model


def torchvision_model(eps):
    model = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                                 hidden_dim=48, mlp_dim=96, num_classes=5)
    model.load_state_dict(torch.load(os.path.join(DATA, "vit_families/torchvision/model.pth")))
    for m in model.modules():
        if isinstance(m, nn.LayerNorm):
            m.eps = eps
    return model.double().eval()


def torchvision_forward(model, hf):
    def forward(s, x):
        B = x.shape[0]
        t = record_patches(s, x, model.conv_proj)
        assert torch.allclose(t, model._process_input(x), rtol=1e-9, atol=1e-9)
        blocks = [lambda s, i, x, b=b: record_block(s, i, x, b.ln_1, lambda y, b=b: mha_steps(b.self_attention, y, hf),
                                                    b.ln_2, b.mlp[0], b.mlp[1], b.mlp[3]) for b in model.encoder.layers]
        return record_head(s, t, [model.class_token.expand(B, -1, -1)], model.encoder.pos_embedding, blocks,
                           model.encoder.ln, model.heads.head)
    return forward


def torchvision_case(target=None):
    model = torchvision_model(1e-6)
    pixels = load_npy("vit_families/pixels.npy").double()
    return dict(model="vit_families/torchvision/model.pth", pixels="vit_families/pixels.npy", heads=4,
                target=target), pixels, torchvision_forward(model, False), model


def hf_case():
    model = torchvision_model(1e-12)
    pixels = load_npy("vit_families/pixels.npy").double()
    expected = load_npy("vit_families/hf_classifier/logits.npy").double()
    with torch.no_grad():
        assert torch.allclose(model(pixels), expected, rtol=1e-5, atol=1e-5), "not the hf_classifier fixture's model"
    return dict(model="vit_families/hf_classifier/pytorch_model.bin", pixels="vit_families/pixels.npy",
                heads=4), pixels, torchvision_forward(model, True), model


class Deit(nn.Module):
    """tools/make_vit_family_fixtures.py's DeiT distilled, as one module (its forward is the script's)."""

    def __init__(self, sd):
        super().__init__()
        S, P, D, H, DEPTH, M, K = 32, 8, 48, 4, 2, 96, 5
        self.blocks = nn.ModuleList([EncoderBlock(H, D, M, 0.0, 0.0, nn.LayerNorm) for _ in range(DEPTH)])
        for blk in self.blocks:
            blk.ln_1.eps = blk.ln_2.eps = 1e-6
        self.patch = nn.Conv2d(3, D, P, P)
        self.cls_token, self.dist_token = nn.Parameter(sd["cls_token"]), nn.Parameter(sd["dist_token"])
        self.pos_embed = nn.Parameter(sd["pos_embed"])
        self.norm = nn.LayerNorm(D, eps=1e-6)
        self.head, self.head_dist = nn.Linear(D, K), nn.Linear(D, K)
        with torch.no_grad():
            self.patch.weight.copy_(sd["patch_embed.proj.weight"])
            self.patch.bias.copy_(sd["patch_embed.proj.bias"])
            for i, blk in enumerate(self.blocks):
                pairs = {"norm1": blk.ln_1, "attn.proj": blk.self_attention.out_proj, "norm2": blk.ln_2,
                         "mlp.fc1": blk.mlp[0], "mlp.fc2": blk.mlp[3]}
                for name, mod in pairs.items():
                    mod.weight.copy_(sd[f"blocks.{i}.{name}.weight"])
                    mod.bias.copy_(sd[f"blocks.{i}.{name}.bias"])
                blk.self_attention.in_proj_weight.copy_(sd[f"blocks.{i}.attn.qkv.weight"])
                blk.self_attention.in_proj_bias.copy_(sd[f"blocks.{i}.attn.qkv.bias"])
            for name, mod in {"norm": self.norm, "head": self.head, "head_dist": self.head_dist}.items():
                mod.weight.copy_(sd[name + ".weight"])
                mod.bias.copy_(sd[name + ".bias"])

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), self.dist_token.expand(x.shape[0], -1, -1), x),
                      dim=1) + self.pos_embed
        for blk in self.blocks:
            x = blk(x)
        x = self.norm(x)
        return (self.head(x[:, 0]) + self.head_dist(x[:, 1])) / 2


def deit_case():
    model = Deit(read_safetensors(os.path.join(DATA, "vit_families/deit_distilled/model.safetensors"))).double().eval()
    pixels = load_npy("vit_families/pixels.npy").double()
    with torch.no_grad():
        assert torch.allclose(model(pixels), load_npy("vit_families/deit_distilled/logits.npy").double(), rtol=1e-5,
                              atol=1e-5), "not the deit_distilled fixture's model"

    def forward(s, x):
        B = x.shape[0]
        t = record_patches(s, x, model.patch)
        blocks = [lambda s, i, x, b=b: record_block(s, i, x, b.ln_1, lambda y, b=b: mha_steps(b.self_attention, y, False),
                                                    b.ln_2, b.mlp[0], b.mlp[1], b.mlp[3]) for b in model.blocks]
        return record_head(s, t, [model.cls_token.expand(B, -1, -1), model.dist_token.expand(B, -1, -1)],
                           model.pos_embed, blocks, model.norm, model.head, model.head_dist)

    return dict(model="vit_families/deit_distilled/model.safetensors", pixels="vit_families/pixels.npy",
                heads=4), pixels, forward, model


def hybrid_case():
    case = "hybrid/i32_s4_8_8_k5_bias_d16_h2_l1"
    meta = json.load(open(os.path.join(DATA, case, "meta.json")))
    model = VisionTransformer(meta["image_size"], meta["patch_size"], meta["classes"], meta["dim"], meta["depth"],
                              meta["heads"], mlp_ratio=2.0)
    model.patch_embed = HybridEmbed(meta["stem_channels"], meta["dim"], meta["stem_kernel"], meta["conv_bias"])
    model.load_state_dict(read_safetensors(os.path.join(DATA, case, "model.safetensors")))
    model = model.double().eval()
    pixels = load_npy(case + "/pixels.npy").double()

    def forward(s, x):
        B = x.shape[0]
        s["pixels"] = x
        for j, layer in enumerate(model.patch_embed.backbone):  # conv, bn, relu per stage
            x = s[f"stem{j // 3}.{('conv', 'bn', 'relu')[j % 3]}"] = layer(x)
        s["patches"] = x.flatten(2).transpose(1, 2)
        proj = model.patch_embed.proj
        s["patch_embed"] = F.linear(s["patches"], proj.weight.reshape(proj.out_channels, -1), proj.bias)
        assert torch.allclose(s["patch_embed"], model.patch_embed(s["pixels"]), rtol=1e-9, atol=1e-9)
        blocks = [lambda s, i, x, b=b: record_block(s, i, x, b.norm1, lambda y, b=b: steps_of(b.attn, y), b.norm2,
                                                    b.mlp.fc1, b.mlp.act, b.mlp.fc2) for b in model.blocks]
        return record_head(s, s["patch_embed"], [model.cls_token.expand(B, -1, -1)], model.pos_embed, blocks,
                           model.norm, model.head)

    return dict(model=case + "/model.safetensors", pixels=case + "/pixels.npy", heads=meta["heads"]), pixels, forward, model


def layer_scale_case(training):
    case = "drop_path/b4_i32_p8_d32_h2_l3_dp0.6"
    meta = json.load(open(os.path.join(DATA, case, "meta.json")))
    model = VisionTransformer(meta["image_size"], meta["patch_size"], meta["classes"], meta["dim"], meta["depth"],
                              meta["heads"], meta["mlp_hidden"] / meta["dim"])
    add_layer_scale(model, torch.Generator().manual_seed(0))  # the modules; the gammas come from the file
    model.load_state_dict(read_safetensors(os.path.join(DATA, case, "model.safetensors")))
    model = model.double().eval()
    pixels = load_npy(case + "/pixels.npy").double()
    dpr = meta["dpr"]
    masks = [[(load_npy(f"{case}/block{i}_drop_path{k}_mask.npy").double() != 0).double() if training else None
              for k in (1, 2)] for i in range(meta["depth"])]

    def forward(s, x):
        B = x.shape[0]
        t = record_patches(s, x, model.patch_embed.proj)
        blocks = [lambda s, i, x, b=b: record_block(s, i, x, b.norm1, lambda y, b=b: steps_of(b.attn, y), b.norm2,
                                                    b.mlp.fc1, b.mlp.act, b.mlp.fc2, (b.ls1, b.ls2),
                                                    (dpr[i], masks[i][0], masks[i][1])) for b in model.blocks]
        return record_head(s, t, [model.cls_token.expand(B, -1, -1)], model.pos_embed, blocks, model.norm, model.head)

    # make_drop_path_golden.py's forward, the one its fixtures come from (its masks are 0/1, ours too)
    library = lambda x: drop_path_forward(model, x, dpr, masks if training else [[None, None]] * len(dpr), training)[0]
    return dict(model=case + "/model.safetensors", pixels=case + "/pixels.npy", heads=meta["heads"],
                drop_path_rate=meta["drop_path_rate"], training=training, seed=meta["seed"]), pixels, forward, library


CASES = {
    "timm": timm_case,
    "torchvision": torchvision_case,
    "torchvision_class3": lambda: torchvision_case(target=3),
    "hf": hf_case,
    "deit_distilled": deit_case,
    "hybrid": hybrid_case,
    "layer_scale_drop_path_eval": lambda: layer_scale_case(False),
    "layer_scale_drop_path_training": lambda: layer_scale_case(True),
}


def make_case(out_dir, name, build):
    meta, pixels, forward, library = build()
    pixels = pixels.clone().requires_grad_(True)
    s = {}
    logits = forward(s, pixels)
    worst = 0.0
    if library is not None:
        with torch.no_grad():
            worst = float((logits - library(pixels)).abs().max())
        assert worst < 1e-9, f"{name}: the step-by-step forward differs from the model's own by {worst}"
    target = meta.pop("target", None)
    classes = [target] * logits.shape[0] if target is not None else logits.argmax(dim=1).tolist()
    if target is not None:
        assert all(c != p for c, p in zip(classes, logits.argmax(dim=1).tolist())), "the asked class is the prediction"
    for t in s.values():
        if t.requires_grad:
            t.retain_grad()
    logits[torch.arange(logits.shape[0]), torch.tensor(classes)].sum().backward()
    grads = {}
    for step, t in s.items():
        g = t.grad if t.grad is not None else torch.zeros_like(t)  # no path to the logit: 0 (none here)
        assert t.grad is not None, f"{name}: {step} got no gradient"
        grads[step] = np.ascontiguousarray(g.detach().numpy().astype("<f4"))
    case_dir = os.path.join(out_dir, name)
    os.makedirs(case_dir, exist_ok=True)
    np.savez(os.path.join(case_dir, "grads.npz"), **grads)
    meta.update({"class": target, "classes": classes, "logits_vs_library": worst, "torch": torch.__version__,
                 "torchvision": torchvision.__version__})
    meta.setdefault("drop_path_rate", 0.0)
    meta.setdefault("training", False)
    meta.setdefault("seed", 0)
    with open(os.path.join(case_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
    print(name, len(grads), "steps, classes", classes, "||grad_pixels|| %.4g" % float(s["pixels"].grad.norm()))


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(DATA, "vit_grad")
    torch.set_num_threads(1)
    for name, build in CASES.items():
        make_case(out_dir, name, build)


if __name__ == "__main__":
    main()
