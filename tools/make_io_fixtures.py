#!/usr/bin/python3
"""Writes the file-format fixtures of tests/test_io.cpp into tests/data/io/.

Run with Debian's Python (it has numpy and torch):  /usr/bin/python3 tools/make_io_fixtures.py

The .npy files are written by numpy itself and the safetensors file is written by hand from the
format (there is no safetensors package here), with bfloat16 values rounded by torch. For every
readable fixture, expected.json holds the shape and the float32 bit patterns that numpy/torch
compute for it (float16/bfloat16 -> float32 is exact; float64 -> float32 is numpy's astype), so
the C++ test compares against an outside truth, not against its own reader.
"""
import json
import os
import struct
import sys

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "io")


def bits_of(values):
    """float32 bit patterns (as ints) of values, in C order."""
    a = np.ascontiguousarray(np.asarray(values, dtype=np.float32))
    return [int(b) for b in a.reshape(-1).view(np.uint32)]


def expect(expected, name, float32_values):
    a = np.asarray(float32_values)
    assert a.dtype == np.float32, name
    expected[name] = {"shape": list(a.shape), "bits": bits_of(a)}


def half_patterns():
    # Zeros, the smallest and largest subnormals, the smallest normal, one, the largest finite,
    # infinities, quiet and signalling NaNs (with payloads), then a spread of random patterns.
    special = [0x0000, 0x8000, 0x0001, 0x8001, 0x0002, 0x0155, 0x03FF, 0x83FF, 0x0400, 0x8400,
               0x3C00, 0xBC00, 0x3555, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01,
               0x7D23, 0x3BFF, 0x3C01, 0x5640]
    rng = np.random.default_rng(7)
    spread = rng.integers(0, 0x10000, size=48 - len(special), dtype=np.uint32)
    # keep the random ones finite so that at least most comparisons are plain bit equality
    spread = [int(p) if (p & 0x7C00) != 0x7C00 else int(p) ^ 0x4000 for p in spread]
    return np.array(special + spread, dtype=np.uint16).view(np.float16).reshape(6, 8)


def tricky_doubles():
    # Values whose float32 rounding matters: ties (round half to even), subnormals, overflow.
    e = 2.0 ** -24
    return np.array([
        1.0 / 3.0, np.pi, -np.e, 0.1, 1.0 + e, 1.0 + 3 * e, -(1.0 + e), 1.0 + e + 2.0 ** -40,
        1e-40, -1e-45, 7e-46, 1e-50, 3.4028234663852886e38, 3.4028235677973366e38, 1e39, -1e300,
        float("inf"), float("-inf"), float("nan"), 0.0, -0.0, 123456789.123, 16777217.0, 2.5e-38,
    ], dtype=np.float64).reshape(2, 3, 4)


def save(name, array, **kwargs):
    np.save(os.path.join(OUT, name), array, **kwargs)


def write_version(name, array, version):
    with open(os.path.join(OUT, name), "wb") as f:
        np.lib.format.write_array(f, array, version=version)


def header_of(path):
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        return np.lib.format._read_array_header(f, version, max_header_size=10000)


def write_safetensors(path, tensors, metadata, header_order, misalign_to):
    """tensors: list of (name, dtype string, shape, raw bytes) in data order."""
    header, data, offset = {}, b"", 0
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        data += raw
        offset += len(raw)
    ordered = {"__metadata__": metadata}
    for name in header_order:
        ordered[name] = header[name]
    text = json.dumps(ordered).encode("utf-8")
    # Pad with spaces (allowed by the format) so that the data section starts at an address
    # that is misaligned for every element size: the reader must not type-pun into the map.
    while (8 + len(text)) % 8 != misalign_to:
        text += b" "
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def main():
    os.makedirs(OUT, exist_ok=True)
    expected = {}

    # ---- readable .npy files, written by numpy ----------------------------------------------
    f2 = half_patterns()
    save("f2.npy", f2)
    expect(expected, "f2.npy", f2.astype(np.float32))

    rng = np.random.default_rng(11)
    f4 = rng.standard_normal((3, 4)).astype(np.float32)
    f4[0, 0], f4[0, 1], f4[0, 2] = np.float32(1e-42), np.float32("inf"), np.float32("-0.0")
    save("f4.npy", f4)
    expect(expected, "f4.npy", f4)

    f8 = tricky_doubles()
    save("f8.npy", f8)
    with np.errstate(over="ignore"):
        expect(expected, "f8.npy", f8.astype(np.float32))

    fortran_f4 = np.asfortranarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 0.5 - 3)
    save("fortran_f4.npy", fortran_f4)
    expect(expected, "fortran_f4.npy", np.ascontiguousarray(fortran_f4))

    fortran_f2 = np.asfortranarray(rng.standard_normal((3, 5)).astype(np.float16))
    save("fortran_f2.npy", fortran_f2)
    expect(expected, "fortran_f2.npy", np.ascontiguousarray(fortran_f2.astype(np.float32)))

    scalar = np.array(3.25, dtype=np.float32)
    save("scalar_f4.npy", scalar)
    expect(expected, "scalar_f4.npy", scalar)

    scalar_f8 = np.array(0.1, dtype=np.float64)
    save("scalar_f8.npy", scalar_f8)
    expect(expected, "scalar_f8.npy", scalar_f8.astype(np.float32))

    vector = np.array([1.5, -2.0, 0.0, 1e-3, 7.0], dtype=np.float32)
    save("vector_f4.npy", vector)
    expect(expected, "vector_f4.npy", vector)

    empty = np.zeros((0, 3), dtype=np.float32)
    save("empty_f4.npy", empty)
    expect(expected, "empty_f4.npy", empty)

    empty_middle = np.zeros((2, 0, 3), dtype=np.float64)
    save("empty_f8.npy", empty_middle)
    expect(expected, "empty_f8.npy", empty_middle.astype(np.float32))

    v2 = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    write_version("v2_f4.npy", v2, (2, 0))
    expect(expected, "v2_f4.npy", v2)
    write_version("v3_f4.npy", v2, (3, 0))
    expect(expected, "v3_f4.npy", v2)

    # ---- .npy files attnscope refuses ---------------------------------------------------------
    save("int64.npy", np.arange(4, dtype="<i8"))
    save("complex64.npy", np.array([1 + 2j, 3 - 1j], dtype="<c8"))
    save("object.npy", np.array([1, "a", None], dtype=object), allow_pickle=True)
    save("big_endian_f4.npy", np.arange(3, dtype=">f4"))
    save("bool.npy", np.array([True, False]))
    save("unicode.npy", np.array(["ab", "c"]))
    save("structured.npy", np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))

    # Check that numpy wrote what the C++ test expects to find in the headers.
    assert header_of(os.path.join(OUT, "fortran_f4.npy"))[1] is True
    assert header_of(os.path.join(OUT, "big_endian_f4.npy"))[2] == np.dtype(">f4")
    for name in ["f2.npy", "f4.npy", "f8.npy"]:
        with open(os.path.join(OUT, name), "rb") as f:
            assert f.read(8) == b"\x93NUMPY\x01\x00", name

    # ---- safetensors, written by hand -----------------------------------------------------------
    half = np.array([1.0, -0.000061035156, 65504.0], dtype=np.float16)  # 6 bytes: misaligns the rest
    bf_source = torch.tensor([[1.0, -2.5, 3.14159265], [1e-20, 3.0e38, -0.33333334]], dtype=torch.float32)
    bf = bf_source.to(torch.bfloat16)
    bf_bytes = bf.view(torch.int16).numpy().astype("<i2").tobytes()
    w32 = np.array([[0.5, -1.25], [1e-40, 6.0]], dtype="<f4")
    w64 = np.array([1.0 / 3.0, -1e-39, 2.0 ** 100], dtype="<f8")
    ids = np.array([7, -1], dtype="<i8")
    scalar_st = np.array(42.0, dtype="<f4")
    empty_st = np.zeros((0,), dtype="<f4")
    tensors = [
        ("half", "F16", half.shape, half.astype("<f2").tobytes()),
        ("blocks.0.bf16", "BF16", tuple(bf.shape), bf_bytes),
        ("w32", "F32", w32.shape, w32.tobytes()),
        ("w64", "F64", w64.shape, w64.tobytes()),
        ("ids", "I64", ids.shape, ids.tobytes()),
        ("scalar", "F32", scalar_st.shape, scalar_st.tobytes()),
        ("empty", "F32", empty_st.shape, empty_st.tobytes()),
    ]
    header_order = ["w64", "half", "blocks.0.bf16", "empty", "w32", "ids", "scalar"]
    metadata = {"format": "pt", "note": "written by tools/make_io_fixtures.py"}
    write_safetensors(os.path.join(OUT, "mixed.safetensors"), tensors, metadata, header_order, 3)
    st = {"order": header_order, "metadata": metadata, "tensors": {}}
    for name, values in [("half", half.astype(np.float32)), ("blocks.0.bf16", bf.to(torch.float32).numpy()),
                         ("w32", w32), ("w64", w64.astype(np.float32)), ("scalar", scalar_st),
                         ("empty", empty_st)]:
        expect(st["tensors"], name, values)
    expected["mixed.safetensors"] = st

    with open(os.path.join(OUT, "expected.json"), "w") as f:
        # one fixture a line: small, and diffs stay readable
        lines = [f" {json.dumps(k)}: {json.dumps(expected[k], sort_keys=True)}" for k in sorted(expected)]
        f.write("{\n" + ",\n".join(lines) + "\n}\n")
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT))
    print(f"wrote {len(os.listdir(OUT))} files, {total} bytes, to {os.path.normpath(OUT)}")


if __name__ == "__main__":
    if not sys.executable.startswith("/usr/bin/"):
        print("note: run with /usr/bin/python3 (Debian's, with numpy and torch)", file=sys.stderr)
    main()
