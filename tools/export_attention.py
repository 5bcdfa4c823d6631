#!/usr/bin/python3
"""Save the attention intermediates of a PyTorch model for `attnscope check` and `attnscope inspect`.

    import sys; sys.path.insert(0, "path/to/attnscope/tools")
    from export_attention import export_attention

    model.eval()
    export_attention(model, x, "activations.safetensors")   # x: what model(x) takes
    # then, in a shell:  attnscope check activations.safetensors --block 0

Forward hooks on every attention module record, under "<module name>.<step>":
  input [B, N, C] (the module's input), qkv [B, N, 3C] (timm only), q, k, v [B, h, N, c],
  attn [B, h, N, N], merged [B, N, C] (the input of the output projection), out [B, N, C],
plus the module's own weights under their state_dict names, so the file alone is enough for
`attnscope check`. The block number comes from the module name (blocks.<i>. or layer.<i>.).

Attention modules are found by duck typing:
- timm's Attention: attributes qkv (nn.Linear), num_heads, scale and proj. timm's fused path calls
  F.scaled_dot_product_attention and never self.attn_drop, so hooks there see nothing: the maps
  are recomputed from the hooked qkv output, softmax(q_norm(q) @ k_norm(k)^T * scale). When
  attn_drop does run (the non-fused path), the map it receives is saved instead.
- Hugging Face's ViTSelfAttention: attributes query, key, value (nn.Linear) and
  num_attention_heads. Its output projection is the sibling `output.dense` of the parent
  ViTAttention. The maps are recomputed from the hooked query and key projections.

Writes F32 safetensors with make_golden.write_safetensors (no safetensors package needed).
"""
import math
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import write_safetensors  # noqa: E402


def is_timm_attention(m):
    return isinstance(getattr(m, "qkv", None), nn.Linear) and isinstance(getattr(m, "proj", None), nn.Linear) \
        and hasattr(m, "num_heads") and hasattr(m, "scale")


def is_hf_self_attention(m):
    return all(isinstance(getattr(m, name, None), nn.Linear) for name in ("query", "key", "value")) \
        and hasattr(m, "num_attention_heads")


def joined(prefix, key):
    """"blocks.0.attn" + "q" -> "blocks.0.attn.q"; a bare module (prefix "") -> "q"."""
    return f"{prefix}.{key}" if prefix else key


def split_heads(t, num_heads):
    """[B, N, C] -> [B, h, N, c], like transpose_for_scores."""
    B, N, C = t.shape
    return t.reshape(B, N, num_heads, C // num_heads).permute(0, 2, 1, 3)


def attention_map(q, k, scale):
    """softmax(q @ k^T * scale) over the keys: [B, h, N, N]."""
    return (q @ k.transpose(-2, -1) * scale).softmax(dim=-1)


def hook_timm(name, m, saved):
    """Hooks on a timm-like Attention; returns the handles."""
    def on_input(module, args):
        saved[joined(name, "input")] = args[0]

    def on_qkv(module, args, qkv):
        B, N, _ = qkv.shape
        saved[joined(name, "qkv")] = qkv
        q, k, v = qkv.reshape(B, N, 3, m.num_heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        saved[joined(name, "q")], saved[joined(name, "k")], saved[joined(name, "v")] = q, k, v
        q_norm, k_norm = getattr(m, "q_norm", nn.Identity()), getattr(m, "k_norm", nn.Identity())
        saved[joined(name, "attn")] = attention_map(q_norm(q), k_norm(k), m.scale)  # replaced if attn_drop runs

    def on_attn_drop(module, args):
        saved[joined(name, "attn")] = args[0]

    def on_proj(module, args, out):
        saved[joined(name, "merged")], saved[joined(name, "out")] = args[0], out

    handles = [m.register_forward_pre_hook(on_input), m.qkv.register_forward_hook(on_qkv),
               m.proj.register_forward_hook(on_proj)]
    if isinstance(getattr(m, "attn_drop", None), nn.Module):
        handles.append(m.attn_drop.register_forward_pre_hook(on_attn_drop))
    return handles


def hook_hf(name, m, dense, saved):
    """Hooks on a Hugging Face ViTSelfAttention-like module (and its output dense, if known)."""
    def on_input(module, args):
        saved[joined(name, "input")] = args[0]

    def on_projection(step):
        def hook(module, args, out):
            saved[joined(name, step)] = split_heads(out, m.num_attention_heads)
            if step == "k":
                scale = 1.0 / math.sqrt(out.shape[-1] // m.num_attention_heads)
                saved[joined(name, "attn")] = attention_map(saved[joined(name, "q")], saved[joined(name, "k")], scale)
        return hook

    def on_output(module, args, outputs):
        saved[joined(name, "merged")] = outputs[0]

    def on_dense(module, args, out):
        saved[joined(name, "out")] = out

    handles = [m.register_forward_pre_hook(on_input), m.register_forward_hook(on_output)]
    handles += [getattr(m, proj).register_forward_hook(on_projection(step))
                for proj, step in (("query", "q"), ("key", "k"), ("value", "v"))]
    if dense is not None:
        handles.append(dense.register_forward_hook(on_dense))
    return handles


def attention_modules(model):
    """(name, module, weights owner name, weights owner, output dense or None) for every attention module."""
    found = []
    for name, m in model.named_modules():
        if is_timm_attention(m):
            found.append((name, m, name, m, None))
        elif is_hf_self_attention(getattr(m, "attention", None)) and isinstance(
                getattr(getattr(m, "output", None), "dense", None), nn.Linear):
            found.append((joined(name, "attention"), m.attention, name, m, m.output.dense))  # ViTAttention
    owned = {id(entry[1]) for entry in found}
    for name, m in model.named_modules():  # a ViTSelfAttention without the usual parent
        if is_hf_self_attention(m) and id(m) not in owned:
            found.append((name, m, name, m, None))
    return found


@torch.no_grad()
def export_attention(model, inputs, path, blocks=None):
    """Runs model(inputs) once with hooks on every attention module and writes what they saw.

    blocks: indices (in model order) of the attention modules to keep; None keeps all.
    Returns the dict of saved tensors (name -> tensor)."""
    saved, handles = {}, []
    modules = attention_modules(model)
    if not modules:
        raise ValueError("no attention module found: expected timm's Attention (qkv, proj, num_heads, scale) "
                         "or Hugging Face's ViTSelfAttention (query, key, value, num_attention_heads)")
    chosen = [entry for i, entry in enumerate(modules) if blocks is None or i in blocks]
    try:
        for name, m, _, _, dense in chosen:
            handles += hook_timm(name, m, saved) if is_timm_attention(m) else hook_hf(name, m, dense, saved)
        model(inputs)
    finally:
        for h in handles:
            h.remove()
    for _, _, owner_name, owner, _ in chosen:
        for key, value in owner.state_dict().items():
            saved[joined(owner_name, key)] = value
    tensors = {key: t.detach().float().cpu().contiguous() for key, t in saved.items()}
    write_safetensors(path, tensors)
    return tensors
