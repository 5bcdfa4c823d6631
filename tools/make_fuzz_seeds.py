#!/usr/bin/python3
"""Writes the seed corpus of tests/fuzz (small valid and nearly valid inputs per fuzz target).

Usage: /usr/bin/python3 tools/make_fuzz_seeds.py tests/fuzz/corpus
Inputs found by fuzzing are added next to these seeds by hand (crash-<what>), never regenerated.
"""
import io
import json
import os
import shutil
import struct
import sys
import zipfile

import numpy as np

out = sys.argv[1]
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def put(target, name, data):
    os.makedirs(os.path.join(out, target), exist_ok=True)
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(data)


def npy(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def npz(compressed, **arrays):
    b = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(b, **arrays)
    return b.getvalue()


def safetensors(tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, a) in tensors.items():
        raw = a.tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


rng = np.random.default_rng(0)
a = rng.standard_normal((2, 3, 4)).astype(np.float32)

# .npy: dtypes, orders, versions.
put("npy", "f4_2x3x4.npy", npy(a))
put("npy", "f2.npy", npy(a.astype(np.float16)))
put("npy", "f8_fortran.npy", npy(np.asfortranarray(a[0].astype(np.float64))))
put("npy", "scalar.npy", npy(np.float32(1.5)))
put("npy", "empty.npy", npy(np.zeros((0, 3), np.float32)))
put("npy", "int64.npy", npy(np.arange(4)))
for f in ["v2_f4.npy", "v3_f4.npy", "big_endian_f4.npy", "structured.npy", "object.npy"]:
    shutil.copy(os.path.join(root, "tests/data/io", f), os.path.join(out, "npy", f))

# .npz: stored and deflated, step names.
put("npz", "stored.npz", npz(False, attn=a, x=a[0]))
put("npz", "deflated.npz", npz(True, attn=a, qkv=a.astype(np.float16)))
put("npz", "int.npz", npz(False, i=np.arange(3)))
for f in ["truncated.npz", "lying_header.npz", "bomb_declared.npz"]:
    shutil.copy(os.path.join(root, "tests/data/activations/bad", f), os.path.join(out, "npz", f))

# .safetensors: dtypes, metadata, a ViT-like checkpoint naming.
put("safetensors", "f32.safetensors", safetensors({"attn": ("F32", a)}))
put("safetensors", "mixed.safetensors", safetensors({
    "blocks.0.attn.qkv.weight": ("F16", rng.standard_normal((6, 2)).astype(np.float16)),
    "blocks.0.attn.proj.bias": ("F64", np.zeros(2)),
    "x": ("BF16", np.zeros((1, 2, 2), np.uint16)),
    "n": ("I64", np.arange(2))}, {"num_heads": "2", "labels": "[\"a\", \"b\"]"}))
put("safetensors", "empty.safetensors", safetensors({}))

# Names: rank byte, axis bytes, name (see fuzz_roles.cpp).
for i, (shape, name) in enumerate([
        ([2, 8, 16, 16], "blocks.3.attn.attn_weights"), ([2, 16, 64], "hidden_states"),
        ([2, 8, 16, 8], "context_layer"), ([192, 64], "blocks.11.attn.qkv.weight"),
        ([64, 64], "vit.encoder.layer.0.attention.attention.query.weight"),
        ([64], "vit.encoder.layer.0.attention.output.dense.bias"), ([1, 2, 4, 4], "model/layers.2/attention_probs"),
        ([3], "x")]):
    put("roles", "name%d" % i, bytes([len(shape)] + [s % 256 for s in shape]) + name.encode())

# Images: PNG (RGB, grey), BMP, and a not-an-image.
os.makedirs(os.path.join(out, "image"), exist_ok=True)
for f in ["resize/same.png", "resize/gray.png", "resize/not_an_image.png"]:
    shutil.copy(os.path.join(root, "tests/data/vit", f), os.path.join(out, "image", os.path.basename(f)))

row = bytes([0, 0, 255, 0, 255, 0]) + b"\0\0"
pixels = row * 2
bmp = b"BM" + struct.pack("<IHHI", 54 + len(pixels), 0, 0, 54) + struct.pack(
    "<IiiHHIIiiII", 40, 2, 2, 1, 24, 0, len(pixels), 2835, 2835, 0, 0) + pixels
put("image", "rgb_2x2.bmp", bmp)
put("image", "grey_3x2.pgm", b"P5\n3 2\n255\n" + bytes([0, 64, 128, 192, 255, 10]))

# Settings: what the app writes, an older/partial file, junk.
settings = {"version": 1, "config": {"batch": 2, "tokens": 16, "dim": 768, "heads": 8, "qkv_bias": False, "seed": 0,
            "training": False, "attn_drop": 0.0, "proj_drop": 0.0}, "step": "attn", "ui_scale": 1.0,
            "panels": {"pipeline": True, "shape": True, "inspector": True, "heads": True, "row_sums": True,
                       "config": True}, "range_mode": 0, "scale_mode": 0, "colormap": 0, "heads_shared_scale": True,
            "play_interval": 1.2, "recent_files": ["/tmp/a.npz"], "browser_folder": "/tmp"}
put("settings", "full.json", json.dumps(settings, indent=2).encode())
put("settings", "partial.json", b'{"version": 1, "ui_scale": 9, "config": {"dim": 100, "heads": 8}}')
put("settings", "junk.json", b'{"version": 1, "recent_files": [1, 2], "panels": 3')

# torch.save: files torch.save wrote (state dict, protocol 4, views, a checkpoint), hostile ones,
# and the bare pickles inside them for the pickle machine alone.
for f in ["state_dict.pt", "protocol4.pt", "acts.pt", "list.pt", "bad/crafted_ok.pt", "bad/system.pt",
          "bad/past_storage.pt", "bad/scripted.pt"]:
    data = open(os.path.join(root, "tests/data/torch", f), "rb").read()
    put("torch", os.path.basename(f), data)
    if data[:2] == b"PK":
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for member in z.namelist():
                if member.endswith("/data.pkl"):
                    put("pickle", os.path.basename(f) + ".pkl", z.read(member))
# Legacy files (pickles one after another, then the storages) and modules pickled whole, from
# tests/data/saved (tools/make_saved_kinds_fixtures.py); the hostile one calls builtins.getattr.
for f in ["legacy/state_dict.pt", "legacy/protocol4.pt", "legacy/views.pt", "whole/mha.pt", "hostile/getattr.pt"]:
    data = open(os.path.join(root, "tests/data/saved", f), "rb").read()
    put("torch", f.replace("/", "_"), data)
    if data[:2] == b"PK":
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for member in z.namelist():
                if member.endswith("/data.pkl"):
                    put("pickle", f.replace("/", "_") + ".pkl", z.read(member))
# numpy scalars, dtypes and an array in a checkpoint's pickle (its tensors' storages left out).
with zipfile.ZipFile(os.path.join(root, "tests/data/saved/numpy/checkpoint.pt")) as z:
    put("pickle", "numpy_checkpoint.pt.pkl", next(z.read(m) for m in z.namelist() if m.endswith("/data.pkl")))
