"""What the fixture scripts share: drawing every parameter anew, saving a tensor as the
little-endian float32 .npy the tests read, and the dotted names attnscope gives a saved object."""
import os

import numpy as np
import torch


def randomize(module, gen):
    """Every parameter drawn anew (torchvision zero-initialises its head, which would hide a wrong
    head): LayerNorm scales near 1, the rest N(0, 0.3^2)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("weight") and p.dim() == 1:  # LayerNorm scales near 1
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=gen))
    return module


def save_npy(folder, name, t):
    """t as folder/name.npy, <f4, C order."""
    os.makedirs(folder, exist_ok=True)
    np.save(os.path.join(folder, name + ".npy"), np.ascontiguousarray(t.detach().numpy().astype("<f4")))


def hf_vit_names(sd, prefix, depth, dim):
    """A torchvision VisionTransformer's state dict under Hugging Face ViTModel's names after
    `prefix` ("vit." in ViTForImageClassification): in_proj's three row blocks become query, key
    and value. The classifier is left to the caller."""
    out = {prefix + "embeddings.cls_token": sd["class_token"],
           prefix + "embeddings.position_embeddings": sd["encoder.pos_embedding"],
           prefix + "embeddings.patch_embeddings.projection.weight": sd["conv_proj.weight"],
           prefix + "embeddings.patch_embeddings.projection.bias": sd["conv_proj.bias"]}
    for i in range(depth):
        tvp, hfp = f"encoder.layers.encoder_layer_{i}.", f"{prefix}encoder.layer.{i}."
        w, b = sd[tvp + "self_attention.in_proj_weight"], sd[tvp + "self_attention.in_proj_bias"]
        for j, part in enumerate(["query", "key", "value"]):
            out[hfp + f"attention.attention.{part}.weight"] = w[j * dim:(j + 1) * dim]
            out[hfp + f"attention.attention.{part}.bias"] = b[j * dim:(j + 1) * dim]
        pairs = {"layernorm_before": "ln_1", "attention.output.dense": "self_attention.out_proj",
                 "layernorm_after": "ln_2", "intermediate.dense": "mlp.0", "output.dense": "mlp.3"}
        for hf_name, tv_name in pairs.items():
            for kind in ("weight", "bias"):
                out[hfp + f"{hf_name}.{kind}"] = sd[tvp + f"{tv_name}.{kind}"]
    out[prefix + "layernorm.weight"] = sd["encoder.ln.weight"]
    out[prefix + "layernorm.bias"] = sd["encoder.ln.bias"]
    return {k: v.clone() for k, v in out.items()}


def dotted_items(obj, prefix=""):
    """(name, leaf) for every tensor and non-container value of a saved object, under the dotted
    names attnscope lists: dict keys and list/tuple indices joined by '.', a module (saved whole)
    by its state_dict's names."""
    if isinstance(obj, torch.nn.Module):
        obj = obj.state_dict()
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from dotted_items(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from dotted_items(v, f"{prefix}.{i}" if prefix else str(i))
    else:
        yield prefix, obj
