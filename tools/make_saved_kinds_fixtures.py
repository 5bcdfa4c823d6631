#!/usr/bin/python3
"""Writes the kinds of file PyTorch users save besides a zip state dict, into tests/data/saved/.

Run with Debian's Python (python3-torch, python3-torchvision):
    /usr/bin/python3 tools/make_saved_kinds_fixtures.py

Every file is written by torch.save itself; every expected value is torch's own (torch.load of the
file, or the module's forward).
  legacy/      torch.save(..., _use_new_zipfile_serialization=False), the format before PyTorch 1.6:
               state_dict.pt (the reference article's MultiHeadAttention(16, 4)), protocol4.pt (the
               same with pickle_protocol=4), checkpoint.pt ({"model": state_dict, "epoch": 3,
               "config": {"num_heads": 4}}), vit.pth (the state dict of a torchvision VisionTransformer
               with 4 heads at D = 64, 2 blocks, MLP 64, every parameter drawn anew), views.pt (storages saved as views of one
               another, as PyTorch before 1.0 wrote them: the legacy writer's own pickle with view
               metadata in its persistent ids, read back by torch.load).
  whole/       torch.save(model), the module object: mha.pt (the article's MultiHeadAttention(16, 4),
               its class in __main__ as a tutorial script has it, with a non-persistent buffer),
               x.npy [2, 5, 16] and mha_out.npy (its forward); vit.pt (that torchvision ViT, whole);
               checkpoint.pt ({"model": the whole ViT, "epoch": 3}); pixels.npy [1, 3, 32, 32] and
               logits.npy (the ViT's forward).
  hostile/     whole modules carrying an attribute whose __reduce__ names subprocess.Popen,
               builtins.getattr, importlib.import_module or os.system.
  hooks/       forward hooks on nn.MultiheadAttention modules called with need_weights=True,
               average_attn_weights=False, each recording the module's output tuple, saved as
               {module name: (attn_output, attn_weights)}: vit_capture.pt (the torchvision ViT's two
               self_attention modules, weights [1, 4, 17, 17]); mean_capture.pt (the same with
               average_attn_weights=True: [1, 17, 17]).
  numpy/       a training checkpoint that keeps numpy values beside the torchvision ViT's state dict:
               {"model": state_dict, "epoch": np.int64(7), "best_acc": np.float64(0.875),
               "config": {"num_heads": np.int64(4)}, "class_weights": a float32 numpy array [5]}, as
               checkpoint.pt and in the legacy format as legacy.pt.
expected.npz holds, under "<file>/<name>", every tensor as torch.load gives it, in float32.
"""
import collections
import functools
import importlib
import io
import os
import pickle
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_convention_fixtures  # noqa: E402
from torch_fixtures import dotted_items, randomize, save_npy  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "saved")
S, P, D, H, DEPTH, M, K = 32, 8, 64, 4, 2, 64, 5

# The article's class as a tutorial's own script defines it: pickled as __main__.MultiHeadAttention.
MultiHeadAttention = make_convention_fixtures.MultiHeadAttention
MultiHeadAttention.__module__ = "__main__"

expected = {}


def path(*parts):
    os.makedirs(os.path.join(OUT, *parts[:-1]), exist_ok=True)
    return os.path.join(OUT, *parts)


def expect_loaded(*parts):
    """Every tensor of the file as torch.load returns it, under its dotted name."""
    name = "/".join(parts)
    for dotted, leaf in dotted_items(torch.load(path(*parts))):
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point():
            expected[name + "/" + dotted] = leaf.detach().float().numpy().copy()


def legacy_views(file):
    """Two tensors on views of one root storage, as PyTorch before 1.0 saved them: the legacy
    writer's layout (torch.serialization's magic number, version and sys_info, the object, the
    storage keys, each storage as an int64 count and its bytes) with view metadata
    (view_key, offset, numel) in the persistent ids. torch.load reads it back."""
    root = torch.arange(12, dtype=torch.float32) * 0.5 - 2.0
    views = {"a": ("v0", 2, 6, (2, 3), (3, 1), 0), "b": ("v1", 6, 6, (2, 2), (1, 3), 1)}

    class View:  # stands for a storage view in the pickle only
        def __init__(self, key, offset, numel):
            self.key, self.offset, self.numel = key, offset, numel

    class Writer(pickle.Pickler):
        def persistent_id(self, obj):
            if isinstance(obj, View):
                return ("storage", torch.FloatStorage, "root", "cpu", root.numel(), (obj.key, obj.offset, obj.numel))
            return None

    class Rebuilt:  # pickles as _rebuild_tensor_v2(view, offset, size, stride, False, OrderedDict())
        def __init__(self, view, offset, size, stride):
            self.args = (view, offset, size, stride, False, collections.OrderedDict())

        def __reduce__(self):
            return (torch._utils._rebuild_tensor_v2, self.args)

    obj = {n: Rebuilt(View(k, off, numel), o, size, stride) for n, (k, off, numel, size, stride, o) in views.items()}
    f = io.BytesIO()
    for header in (torch.serialization.MAGIC_NUMBER, torch.serialization.PROTOCOL_VERSION,
                   {"protocol_version": torch.serialization.PROTOCOL_VERSION, "little_endian": True,
                    "type_sizes": {"short": 2, "int": 4, "long": 4}}):
        pickle.dump(header, f, protocol=2)
    Writer(f, protocol=2).dump(obj)
    pickle.dump(["root"], f, protocol=2)
    f.write(root.numel().to_bytes(8, "little") + root.numpy().tobytes())
    with open(file, "wb") as out:
        out.write(f.getvalue())


class Payload:
    """An attribute whose unpickling would call `call(*args)`."""

    def __init__(self, call, args):
        self.call, self.args = call, args

    def __reduce__(self):
        return (self.call, self.args)


def vit(gen):
    tv = torchvision.models.VisionTransformer(image_size=S, patch_size=P, num_layers=DEPTH, num_heads=H,
                                              hidden_dim=D, mlp_dim=M, num_classes=K)
    return randomize(tv, gen).eval()


def asking_weights(forward, average, *args, **kwargs):
    """nn.MultiheadAttention's forward with the per-head (or averaged) weights asked for, whatever
    the caller passed: the usual patch to capture them."""
    return forward(*args, **dict(kwargs, need_weights=True, average_attn_weights=average))


def hook_capture(tv, pixels, average):
    """{module name: (attn_output, attn_weights)} from forward hooks on every nn.MultiheadAttention,
    each called with need_weights=True (torchvision's blocks ask for none)."""
    captured, handles = {}, []
    for name, module in tv.named_modules():
        if isinstance(module, nn.MultiheadAttention):
            module.forward = functools.partial(asking_weights, module.forward, average)
            handles.append(module.register_forward_hook(
                lambda m, inputs, output, name=name: captured.__setitem__(name, tuple(t.detach() for t in output))))
    with torch.no_grad():
        tv(pixels)
    for h in handles:
        h.remove()
    for module in tv.modules():
        if isinstance(module, nn.MultiheadAttention):
            del module.forward
    return captured


def main():
    torch.manual_seed(35)
    gen = torch.Generator().manual_seed(35)

    # ---- legacy -------------------------------------------------------------------------------
    mha = randomize(MultiHeadAttention(16, 4), gen).eval()
    sd = mha.state_dict()
    torch.save(sd, path("legacy", "state_dict.pt"), _use_new_zipfile_serialization=False)
    torch.save(sd, path("legacy", "protocol4.pt"), _use_new_zipfile_serialization=False, pickle_protocol=4)
    torch.save({"model": sd, "epoch": 3, "config": {"num_heads": 4}}, path("legacy", "checkpoint.pt"),
               _use_new_zipfile_serialization=False)
    tv = vit(gen)
    torch.save(tv.state_dict(), path("legacy", "vit.pth"), _use_new_zipfile_serialization=False)
    legacy_views(path("legacy", "views.pt"))
    for f in ["state_dict.pt", "protocol4.pt", "checkpoint.pt", "vit.pth", "views.pt"]:
        expect_loaded("legacy", f)

    # ---- whole modules ------------------------------------------------------------------------
    mha.register_buffer("causal", torch.ones(5, 5), persistent=False)  # not in the state dict
    torch.save(mha, path("whole", "mha.pt"))
    x = torch.randn(2, 5, 16, generator=gen)
    with torch.no_grad():
        save_npy(os.path.join(OUT, "whole"), "x", x)
        save_npy(os.path.join(OUT, "whole"), "mha_out", mha(x))
    torch.save(tv, path("whole", "vit.pt"))
    torch.save({"model": tv, "epoch": 3}, path("whole", "checkpoint.pt"))
    pixels = torch.randn(1, 3, S, S, generator=gen)
    with torch.no_grad():
        save_npy(os.path.join(OUT, "whole"), "pixels", pixels)
        save_npy(os.path.join(OUT, "whole"), "logits", tv(pixels))
    for f in ["mha.pt", "vit.pt", "checkpoint.pt"]:
        expect_loaded("whole", f)

    # ---- hostile whole modules ----------------------------------------------------------------
    for name, call, args in [("popen.pt", subprocess.Popen, (["touch", "/tmp/attnscope_pwned"],)),
                             ("getattr.pt", getattr, ("attnscope", "upper")),
                             ("import_module.pt", importlib.import_module, ("os",)),
                             ("system.pt", os.system, ("touch /tmp/attnscope_pwned",))]:
        bad = MultiHeadAttention(16, 4)
        bad.payload = Payload(call, args)
        torch.save(bad, path("hostile", name))

    # ---- forward-hook captures ----------------------------------------------------------------
    torch.save(hook_capture(tv, pixels, False), path("hooks", "vit_capture.pt"))
    torch.save(hook_capture(tv, pixels, True), path("hooks", "mean_capture.pt"))
    for f in ["vit_capture.pt", "mean_capture.pt"]:
        expect_loaded("hooks", f)

    # ---- numpy values in a checkpoint ---------------------------------------------------------
    numpy_checkpoint = {"model": tv.state_dict(), "epoch": np.int64(7), "best_acc": np.float64(0.875),
                        "config": {"num_heads": np.int64(4)},
                        "class_weights": np.linspace(0.5, 1.5, K, dtype=np.float32)}
    torch.save(numpy_checkpoint, path("numpy", "checkpoint.pt"))
    torch.save(numpy_checkpoint, path("numpy", "legacy.pt"), _use_new_zipfile_serialization=False)
    for f in ["checkpoint.pt", "legacy.pt"]:
        expect_loaded("numpy", f)

    np.savez(os.path.join(OUT, "expected.npz"), **expected)


if __name__ == "__main__":
    main()
