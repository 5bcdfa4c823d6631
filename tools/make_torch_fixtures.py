#!/usr/bin/python3
"""Writes the torch.save fixtures of tests/test_torch_save.cpp into tests/data/torch/.

Run with Debian's Python (it has torch):  /usr/bin/python3 tools/make_torch_fixtures.py

Every readable file is written by torch.save itself (protocol 2, the default, and protocol 4).
expected.npz holds, for every tensor attnscope should list, its values as torch converts them to
float32 (tensor.float().numpy(): exact for float16/bfloat16), under the dotted name attnscope
should give it; expected.json lists the names, dtypes, shapes and the non-tensor values.

The hostile files are made the way an attacker would: real pickles whose __reduce__ names
os.system or builtins.eval, and archives with the layout of torch.save whose pickle was written
with Python's pickle module to lie about offsets, sizes and storage keys. None of them may run
anything or crash attnscope.
"""
import collections
import io
import json
import os
import pickle
import sys
import zipfile

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_convention_fixtures import MultiHeadAttention  # noqa: E402  the reference article's first class
from torch_fixtures import dotted_items  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "torch")
BAD = os.path.join(OUT, "bad")

os.makedirs(BAD, exist_ok=True)
torch.manual_seed(0)
expected_values = {}
expected_listing = {}


def expect(file, entries):
    """entries: {name: tensor, or the Python type name of a value that is not a tensor}, in file order."""
    listing = []
    for name, t in entries.items():
        if isinstance(t, str):
            listing.append({"name": name, "dtype": t, "shape": []})
            continue
        dtype = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
                 torch.int64: "I64", torch.bool: "BOOL"}[t.dtype]
        listing.append({"name": name, "dtype": dtype, "shape": list(t.shape)})
        if t.is_floating_point():
            expected_values[file + "/" + name] = t.detach().float().numpy().copy()  # not a view of a live tensor
    expected_listing[file] = listing


def path(name):
    return os.path.join(OUT, name)


# ---- readable files, written by torch.save ---------------------------------------------------
# A module's state_dict (an OrderedDict with _metadata), as the article's reference class has it.
mha = MultiHeadAttention(16, 4)
sd = mha.state_dict()
torch.save(sd, path("state_dict.pt"))
expect("state_dict.pt", dict(sd))

# The same state_dict with pickle protocol 4 (MEMOIZE, FRAME, SHORT_BINUNICODE opcodes).
torch.save(sd, path("protocol4.pt"), pickle_protocol=4)
expect("protocol4.pt", dict(sd))

# A whole training checkpoint: the model's state_dict, an epoch, AdamW's state after one step.
opt = torch.optim.AdamW(mha.parameters(), lr=1e-3)
mha.qkv_proj(torch.randn(2, 16)).sum().backward()
opt.step()
checkpoint = {"model": mha.state_dict(), "epoch": 3, "optimizer": opt.state_dict(), "note": "after one step"}
torch.save(checkpoint, path("checkpoint.pth"))
entries = {}


for name, leaf in dotted_items(checkpoint):
    entries[name] = leaf if isinstance(leaf, torch.Tensor) else \
        {bool: "bool", int: "int", float: "float", str: "str", type(None): "None"}[type(leaf)]
expect("checkpoint.pth", entries)

# Activations the way most people save them: views of one storage (unbind, a transpose), a
# Parameter, float16 and bfloat16 copies, an integer and a bool tensor, a 0-d and an empty one.
B, N, C, h = 2, 5, 8, 2
x = torch.randn(B, N, C)
qkv = torch.randn(B, N, 3, h, C // h).permute(2, 0, 3, 1, 4)  # [3, B, h, N, c], not contiguous
q, k, v = qkv.unbind(0)
attn = (q @ k.transpose(-2, -1) * (C // h) ** -0.5).softmax(dim=-1)
acts = {
    "x": x, "q": q, "k": k, "v": v, "k_t": k.transpose(-2, -1), "attn": attn,
    "attn_half": attn.half(), "attn_bf16": attn.bfloat16(), "x_double": x.double(),
    "scale": nn.Parameter(torch.tensor(0.5)), "row": x[1, 2], "empty": torch.zeros(0, 3),
    "ids": torch.arange(6).reshape(2, 3), "mask": torch.ones(2, 2, dtype=torch.bool),
}
torch.save(acts, path("acts.pt"))
expect("acts.pt", acts)
assert acts["q"].storage_offset() > 0 or acts["k"].storage_offset() > 0

# One tensor alone, and a list of tensors.
one = torch.randn(3, 4)
torch.save(one, path("one.pt"))
expect("one.pt", {"one": one})
pair = [torch.randn(2), torch.randn(2, 2).t()]
torch.save(pair, path("list.pt"))
expect("list.pt", {"0": pair[0], "1": pair[1]})

# ---- files attnscope explains but does not read (legacy files and whole modules, which it reads,
# are tools/make_saved_kinds_fixtures.py's) -----------------------------------------------
os.makedirs(BAD, exist_ok=True)
torch.jit.save(torch.jit.script(nn.Linear(4, 4)), os.path.join(BAD, "scripted.pt"))
with open(os.path.join(BAD, "plain.pkl"), "wb") as f:
    pickle.dump({"a": [1, 2, 3]}, f, protocol=2)


# ---- hostile files ------------------------------------------------------------------------------
class CallsSystem:
    def __reduce__(self):
        return (os.system, ("touch /tmp/attnscope_pwned",))


class CallsEval:
    def __reduce__(self):
        return (eval, ("__import__('os').system('touch /tmp/attnscope_pwned')",))


torch.save({"w": torch.zeros(2), "payload": CallsSystem()}, os.path.join(BAD, "system.pt"))
torch.save({"payload": CallsEval()}, os.path.join(BAD, "eval.pt"))

good = open(path("state_dict.pt"), "rb").read()
open(os.path.join(BAD, "truncated.pt"), "wb").write(good[: len(good) // 2])


class Storage:
    """Stands for a storage in a hand-made pickle: its persistent id is what torch.save writes."""

    def __init__(self, key, numel, type_name="FloatStorage"):
        self.key, self.numel, self.type_name = key, numel, type_name


class Tensor:
    """Pickles as torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, {})."""

    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, tuple(size), tuple(stride), False, collections.OrderedDict())

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2, self.args)


class Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            return ("storage", getattr(torch, obj.type_name), obj.key, "cpu", obj.numel)
        return None


def crafted(name, obj, records):
    """A zip with torch.save's layout: <stem>/data.pkl from obj, <stem>/data/<key> from records."""
    buf = io.BytesIO()
    Pickler(buf, protocol=2).dump(obj)
    stem = os.path.splitext(name)[0]
    with zipfile.ZipFile(os.path.join(BAD, name), "w", zipfile.ZIP_STORED) as z:
        z.writestr(stem + "/data.pkl", buf.getvalue())
        for key, data in records.items():
            z.writestr(stem + "/data/" + key, data)
        z.writestr(stem + "/version", "3\n")


floats = np.arange(6, dtype=np.float32).tobytes()
s0 = Storage("0", 6)
crafted("crafted_ok.pt", {"a": Tensor(s0, 1, [2, 2], [2, 1])}, {"0": floats})  # the control: readable
crafted("missing_storage.pt", {"a": Tensor(Storage("7", 6), 0, [6], [1])}, {"0": floats})
crafted("past_storage.pt", {"a": Tensor(s0, 4, [2, 2], [2, 1])}, {"0": floats})
crafted("huge_shape.pt", {"a": Tensor(s0, 0, [2 ** 30, 2 ** 30], [0, 0])}, {"0": floats})
crafted("overflow_shape.pt", {"a": Tensor(s0, 0, [2 ** 62, 8], [1, 1])}, {"0": floats})
crafted("short_record.pt", {"a": Tensor(s0, 0, [6], [1])}, {"0": floats[:20]})
crafted("wrong_rank.pt", {"a": Tensor(s0, 0, [2, 3], [1])}, {"0": floats})

expected_values["crafted_ok.pt/a"] = np.array([[1, 2], [3, 4]], dtype=np.float32)
expected_listing["crafted_ok.pt"] = [{"name": "a", "dtype": "F32", "shape": [2, 2]}]

np.savez(path("expected.npz"), **expected_values)
with open(path("expected.json"), "w") as f:
    json.dump(expected_listing, f, indent=1)
print("wrote", OUT, file=sys.stderr)
