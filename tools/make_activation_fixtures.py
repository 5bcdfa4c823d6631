#!/usr/bin/python3
"""Write the fixtures of `attnscope inspect` and `attnscope check` into OUT_DIR (tests/data/activations).

Run with Debian's python3-torch:  /usr/bin/python3 tools/make_activation_fixtures.py tests/data/activations

- timm_model.safetensors, hf_model.safetensors: the state_dicts of two small ViTs written here
  with timm's and Hugging Face's module names (timm and transformers are not Debian packages).
- timm_export.safetensors, hf_export.safetensors: tools/export_attention.py on those models (the
  timm one takes the fused path, which never calls attn_drop: its maps are recomputed).
- attn_maps.npz: attention maps only, one of them softmaxed over the wrong axis.
- bug_*: what a user's hooks save from four buggy attention implementations (one or more per
  diagnosis family), under step names and aliases; expected.json names each one's first divergence.
- bad/: malformed files (truncated, wrong magic, lying headers, zip bombs, dtypes, shapes, NaN).
Every model shares B=2, N=5, C=24, h=4 (c=6): N, h, c and 3 all differ, so no two axis orders
can be confused.
"""
import json
import os
import struct
import sys
import zipfile
import zlib

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_attention import export_attention  # noqa: E402
from make_golden import write_safetensors  # noqa: E402

B, N, C, H = 2, 5, 24, 4
c = C // H


# ---- a timm-named ViT ------------------------------------------------------------------------
def explicit_sdpa(q, k, v, scale):
    """Stands in for F.scaled_dot_product_attention (torch 1.13 lacks it): calls no attn_drop."""
    return (q @ k.transpose(-2, -1) * scale).softmax(dim=-1) @ v


class Attention(nn.Module):
    """timm.models.vision_transformer.Attention: the same attribute and parameter names."""

    def __init__(self, dim, num_heads, qkv_bias=True, fused_attn=True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.fused_attn = fused_attn
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.q_norm = nn.Identity()
        self.k_norm = nn.Identity()
        self.attn_drop = nn.Dropout(0.0)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(0.0)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q, k = self.q_norm(q), self.k_norm(k)
        if self.fused_attn:
            x = explicit_sdpa(q, k, v, self.scale)
        else:
            q = q * self.scale
            attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
            x = self.attn_drop(attn) @ v
        x = x.transpose(1, 2).reshape(B, N, C)
        return self.proj_drop(self.proj(x))


class Mlp(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, num_heads, fused_attn):
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(dim), Attention(dim, num_heads, fused_attn=fused_attn)
        self.norm2, self.mlp = nn.LayerNorm(dim), Mlp(dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TimmViT(nn.Module):
    """Tokens in, tokens out: pos_embed, blocks.<i>.{norm1,attn,norm2,mlp}, norm (timm's names)."""

    def __init__(self, depth=2, fused_attn=True):
        super().__init__()
        self.pos_embed = nn.Parameter(torch.randn(1, N, C) * 0.02)
        self.blocks = nn.ModuleList([Block(C, H, fused_attn) for _ in range(depth)])
        self.norm = nn.LayerNorm(C)

    def forward(self, x):
        x = x + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.norm(x)


# ---- a Hugging Face-named ViT ----------------------------------------------------------------
class ViTSelfAttention(nn.Module):
    """transformers' ViTSelfAttention: query, key, value Linear layers, transpose_for_scores."""

    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_attention_heads = num_heads
        self.attention_head_size = dim // num_heads
        self.all_head_size = dim
        self.query, self.key, self.value = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.dropout = nn.Dropout(0.0)

    def transpose_for_scores(self, x):
        return x.view(x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)).permute(0, 2, 1, 3)

    def forward(self, hidden_states, head_mask=None, output_attentions=False):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attention_scores = query_layer @ key_layer.transpose(-1, -2) / (self.attention_head_size ** 0.5)
        attention_probs = self.dropout(attention_scores.softmax(dim=-1))
        context_layer = (attention_probs @ value_layer).permute(0, 2, 1, 3).contiguous()
        context_layer = context_layer.view(context_layer.size()[:-2] + (self.all_head_size,))
        return (context_layer, attention_probs) if output_attentions else (context_layer,)


class ViTSelfOutput(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dense, self.dropout = nn.Linear(dim, dim), nn.Dropout(0.0)

    def forward(self, hidden_states, input_tensor):
        return self.dropout(self.dense(hidden_states))


class ViTAttention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.attention, self.output = ViTSelfAttention(dim, num_heads), ViTSelfOutput(dim)

    def forward(self, hidden_states):
        self_outputs = self.attention(hidden_states)
        return (self.output(self_outputs[0], hidden_states),) + self_outputs[1:]


class ViTLayer(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.layernorm_before, self.attention = nn.LayerNorm(dim), ViTAttention(dim, num_heads)
        self.layernorm_after = nn.LayerNorm(dim)
        self.intermediate, self.output = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU()), nn.Linear(2 * dim, dim)

    def forward(self, x):
        x = x + self.attention(self.layernorm_before(x))[0]
        return x + self.output(self.intermediate(self.layernorm_after(x)))


class ViTEncoder(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.layer = nn.ModuleList([ViTLayer(C, H) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layer:
            x = layer(x)
        return x


class ViTModel(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.encoder = ViTEncoder(depth)

    def forward(self, x):
        return self.encoder(x)


class HFViT(nn.Module):
    """Parameter names as in ViTForImageClassification: vit.encoder.layer.<i>.attention.…"""

    def __init__(self, depth=2):
        super().__init__()
        self.vit = ViTModel(depth)

    def forward(self, x):
        return self.vit(x)


# ---- buggy attention implementations, as users write them ------------------------------------
# Each takes the timm Attention m whose weights it uses and x, and returns what the user's hooks
# save: {name in the dump: tensor}. Every one is the reference but for the bug it is named after.
def merge(ctx):
    return ctx.transpose(1, 2).reshape(B, N, C)


def bug_split_h_c_three(m, x):
    """einops-style 'b n (h c three)': another split of 3C."""
    qkv = m.qkv(x)
    q, k, v = qkv.reshape(B, N, H, c, 3).permute(4, 0, 2, 1, 3).unbind(0)
    attn = (q @ k.transpose(-2, -1) * m.scale).softmax(dim=-1)
    return {"x": x, "qkv": qkv, "query": q, "key": k, "value": v, "attn_weights": attn,
            "attn_output": m.proj(merge(attn @ v))}


def bug_heads_reshape(m, x):
    """q.reshape(B, h, N, c) on [B, N, h, c]: the heads without the permute (another axis order)."""
    q, k, v = m.qkv(x).reshape(B, N, 3, H, c).unbind(2)
    q, k, v = (t.reshape(B, H, N, c) for t in (q, k, v))
    attn = (q @ k.transpose(-2, -1) * m.scale).softmax(dim=-1)
    return {"input": x, "q": q, "k": k, "v": v, "attn": attn, "out": m.proj(merge(attn @ v))}


def reference_qkv(m, x):
    return m.qkv(x).reshape(B, N, 3, H, c).permute(2, 0, 3, 1, 4).unbind(0)


def bug_softmax_columns(m, x):
    """softmax(dim=-2): the columns sum to 1."""
    q, k, v = reference_qkv(m, x)
    scores = q @ k.transpose(-2, -1)
    attn = (scores * m.scale).softmax(dim=-2)
    context = attn @ v
    return {"hidden_states": x, "query_layer": q, "key_layer": k, "value_layer": v, "scores": scores,
            "attention_probs": attn, "context_layer": context, "attn_output": m.proj(merge(context))}


def bug_no_scale(m, x):
    q, k, v = reference_qkv(m, x)
    scores = q @ k.transpose(-2, -1)
    scaled = scores  # forgot * self.scale
    attn = scaled.softmax(dim=-1)
    return {"x": x, "scores": scores, "scaled": scaled, "attn": attn, "out": m.proj(merge(attn @ v))}


def bug_double_scale(m, x):
    """timm's q = q * scale, then (q @ k^T) * scale again."""
    q, k, v = reference_qkv(m, x)
    attn = ((q * m.scale) @ k.transpose(-2, -1) * m.scale).softmax(dim=-1)
    return {"x": x, "attn": attn, "out": m.proj(merge(attn @ v))}


def bug_scale_after_softmax(m, x):
    q, k, v = reference_qkv(m, x)
    scores = q @ k.transpose(-2, -1)
    attn = scores.softmax(dim=-1) * m.scale
    return {"x": x, "scores": scores, "attn": attn, "context": attn @ v}


def bug_merge_no_transpose(m, x):
    q, k, v = reference_qkv(m, x)
    attn = (q @ k.transpose(-2, -1) * m.scale).softmax(dim=-1)
    context = attn @ v
    merged = context.reshape(B, N, C)  # forgot .transpose(1, 2)
    return {"x": x, "attn": attn, "context": context, "context_layer": merged, "attn_output": m.proj(merged)}


def numpy_of(tensors):
    return {name: np.ascontiguousarray(t.detach().numpy().astype("<f4")) for name, t in tensors.items()}


def timm_weights(m, prefix=""):
    return {prefix + key: value for key, value in m.state_dict().items() if key.startswith(("qkv", "proj"))}


# ---- malformed files -------------------------------------------------------------------------
def npy_bytes(array):
    path = "/tmp/attnscope_fixture.npy"
    np.save(path, array)
    with open(path, "rb") as f:
        data = f.read()
    os.remove(path)
    return data


def npy_header_only(shape_text, descr="<f4"):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_text)
    header += " " * (-(10 + len(header) + 1) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode()


def zip64_bomb(name, declared):
    """One deflated member whose zip64 sizes declare `declared` bytes uncompressed."""
    data = zlib.compressobj(9, zlib.DEFLATED, -15)
    payload = data.compress(npy_header_only("(4,)") + b"\0" * 16) + data.flush()
    fname = name.encode()
    extra_local = struct.pack("<HHQQ", 1, 16, declared, len(payload))
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 8, 0, 0, 0, 0xFFFFFFFF, 0xFFFFFFFF, len(fname),
                        len(extra_local)) + fname + extra_local + payload
    extra_central = struct.pack("<HHQQ", 1, 16, declared, len(payload))
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 8, 0, 0, 0, 0xFFFFFFFF, 0xFFFFFFFF,
                          len(fname), len(extra_central), 0, 0, 0, 0, 0) + fname + extra_central
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central), len(local), 0)
    return local + central + end


def inflating_bomb(name):
    """A member declaring a 4-float .npy whose deflated data inflates to 4 MB."""
    small = npy_header_only("(4,)") + b"\0" * 16
    path = "/tmp/attnscope_fixture.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(name, small[:-16] + b"\0" * (4 << 20))
    with open(path, "rb") as f:
        data = bytearray(f.read())
    os.remove(path)
    for signature, size_at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.find(signature)
        data[at + size_at:at + size_at + 4] = struct.pack("<I", len(small))
    return bytes(data)


def write_bad_files(out):
    bad = os.path.join(out, "bad")
    os.makedirs(bad, exist_ok=True)
    good = numpy_of({"attn": torch.rand(B, H, N, N).softmax(dim=-1)})

    def write(name, data):
        with open(os.path.join(bad, name), "wb") as f:
            f.write(data)

    np.savez(os.path.join(bad, "good.npz"), **good)
    with open(os.path.join(bad, "good.npz"), "rb") as f:
        whole = f.read()
    os.remove(os.path.join(bad, "good.npz"))
    write("truncated.npz", whole[:len(whole) // 2])
    write("wrong_magic.npz", b"GIF89a" + whole[6:])
    write("wrong_magic.safetensors", b"\xff" * 64)
    # a member whose .npy header claims more data than the member holds
    lying = npy_header_only("(2, 4, 5, 5)") + good["attn"].tobytes()[:100]
    with zipfile.ZipFile(os.path.join(bad, "lying_header.npz"), "w", zipfile.ZIP_STORED) as z:
        z.writestr("attn.npy", lying)
    write("bomb_declared.npz", zip64_bomb("attn.npy", 1 << 40))
    write("bomb_inflates.npz", inflating_bomb("attn.npy"))
    np.savez(os.path.join(bad, "int64.npz"), labels=np.arange(6, dtype=np.int64), attn=good["attn"])
    np.save(os.path.join(bad, "scalar.npy"), np.float32(1.5))
    write("axes33.npy", npy_header_only("(" + "1, " * 33 + ")") + b"\0" * 4)
    nan = np.full((B, H, N, N), np.nan, dtype="<f4")
    np.savez(os.path.join(bad, "nan_attn.npz"), attn=nan)
    np.save(os.path.join(bad, "nan_input.npy"), np.full((B, N, C), np.nan, dtype="<f4"))
    np.savez(os.path.join(bad, "scalar_attn.npz"), attn=np.float32(0.5), x=np.zeros((B, N, C), "<f4"))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/activations"
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    torch.manual_seed(4)
    timm_model, hf_model = TimmViT(fused_attn=True).eval(), HFViT().eval()
    tokens = torch.randn(B, N, C)
    write_safetensors(os.path.join(out, "timm_model.safetensors"), timm_model.state_dict())
    write_safetensors(os.path.join(out, "hf_model.safetensors"), hf_model.state_dict())

    # Hook exports; the timm model takes the fused path, so no attn_drop hook fires.
    timm_saved = export_attention(timm_model, tokens, os.path.join(out, "timm_export.safetensors"))
    unfused = TimmViT(fused_attn=False).eval()
    unfused.load_state_dict(timm_model.state_dict())
    direct = export_attention(unfused, tokens, "/tmp/attnscope_unfused.safetensors")
    os.remove("/tmp/attnscope_unfused.safetensors")
    assert torch.allclose(timm_saved["blocks.1.attn.attn"], direct["blocks.1.attn.attn"], atol=1e-6), \
        "maps recomputed from the fused path differ from attn_drop's input"
    export_attention(hf_model, tokens, os.path.join(out, "hf_export.safetensors"))

    # Attention maps only: hooks on attn_drop, one map softmaxed over the wrong axis.
    maps = {"blocks.0.attn.attn": timm_saved["blocks.0.attn.attn"],
            "blocks.1.attn.attn": timm_saved["blocks.1.attn.attn"],
            "columns_softmax": torch.randn(B, H, N, N).softmax(dim=-2)}
    np.savez(os.path.join(out, "attn_maps.npz"), **numpy_of(maps))

    # Buggy implementations, all on block 0's attention weights and input.
    m = timm_model.blocks[0].attn
    x = torch.randn(B, N, C)
    expected = {}
    with torch.no_grad():
        dump = numpy_of({**bug_split_h_c_three(m, x), **timm_weights(m)})
        np.savez(os.path.join(out, "bug_split.npz"), **dump)
        expected["bug_split.npz"] = ["q", "split of 3C", "(h c three) instead of (three h c)", []]

        folder = os.path.join(out, "bug_heads_reshape")
        os.makedirs(folder, exist_ok=True)
        for name, array in numpy_of(bug_heads_reshape(m, x)).items():
            np.save(os.path.join(folder, name + ".npy"), array)
        expected["bug_heads_reshape"] = ["q", "axis order", "without the permute",
                                         ["--weights", "timm_model.safetensors", "--block", "0"]]

        hf_names = {}
        for part, rows in (("query", slice(0, C)), ("key", slice(C, 2 * C)), ("value", slice(2 * C, 3 * C))):
            hf_names[f"encoder.layer.0.attention.attention.{part}.weight"] = m.qkv.weight[rows]
            hf_names[f"encoder.layer.0.attention.attention.{part}.bias"] = m.qkv.bias[rows]
        hf_names["encoder.layer.0.attention.output.dense.weight"] = m.proj.weight
        hf_names["encoder.layer.0.attention.output.dense.bias"] = m.proj.bias
        write_safetensors(os.path.join(out, "bug_softmax.safetensors"), {**bug_softmax_columns(m, x), **hf_names})
        expected["bug_softmax.safetensors"] = ["attn", "softmax axis", "columns sum to 1 instead of rows", []]

        np.savez_compressed(os.path.join(out, "bug_no_scale.npz"), **numpy_of({**bug_no_scale(m, x), **timm_weights(m)}))
        expected["bug_no_scale.npz"] = ["scaled", "scale", "scale missing", []]
        np.savez_compressed(os.path.join(out, "bug_double_scale.npz"),
                            **numpy_of({**bug_double_scale(m, x), **timm_weights(m)}))
        expected["bug_double_scale.npz"] = ["attn", "scale", "scale applied twice", []]
        write_safetensors(os.path.join(out, "bug_scale_after_softmax.safetensors"),
                          {**bug_scale_after_softmax(m, x), **timm_weights(m, "blocks.0.attn.")})
        expected["bug_scale_after_softmax.safetensors"] = ["attn", "scale after softmax", "after softmax", []]
        write_safetensors(os.path.join(out, "bug_merge.safetensors"), {**bug_merge_no_transpose(m, x), **timm_weights(m)})
        expected["bug_merge.safetensors"] = ["merged", "merge transpose", "merge without the transpose", []]

    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({name: {"first_divergence": e[0], "finding": e[1], "phrase": e[2], "options": e[3]}
                   for name, e in expected.items()}, f, indent=2)
    write_bad_files(out)
    print("wrote activation fixtures to", out)


if __name__ == "__main__":
    main()
