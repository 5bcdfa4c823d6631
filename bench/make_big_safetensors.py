#!/usr/bin/python3
"""Writes a ~1 GB float32 safetensors file quickly: a real header (ViT-L/16-like timm names, shapes
that add up to the size) followed by a sparse hole of zeros, so the disk is barely touched.

usage: /usr/bin/python3 bench/make_big_safetensors.py OUT.safetensors [GIB]
"""
import json
import struct
import sys


def main():
    out = sys.argv[1]
    target = int(float(sys.argv[2]) * (1 << 30)) if len(sys.argv) > 2 else 1 << 30
    dim, hidden = 1024, 4096
    shapes = {"patch_embed.proj.weight": [dim, 3, 16, 16], "patch_embed.proj.bias": [dim],
              "cls_token": [1, 1, dim], "pos_embed": [1, 197, dim]}
    per_block = {"norm1.weight": [dim], "norm1.bias": [dim], "attn.qkv.weight": [3 * dim, dim],
                 "attn.qkv.bias": [3 * dim], "attn.proj.weight": [dim, dim], "attn.proj.bias": [dim],
                 "norm2.weight": [dim], "norm2.bias": [dim], "mlp.fc1.weight": [hidden, dim],
                 "mlp.fc1.bias": [hidden], "mlp.fc2.weight": [dim, hidden], "mlp.fc2.bias": [dim]}
    block_bytes = 4 * sum(eval("*".join(map(str, s))) for s in per_block.values())
    blocks = max(1, round(target / block_bytes))
    for i in range(blocks):
        for name, shape in per_block.items():
            shapes[f"blocks.{i}.{name}"] = shape
    shapes.update({"norm.weight": [dim], "norm.bias": [dim], "head.weight": [1000, dim], "head.bias": [1000]})
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in shapes.items():
        size = 4
        for d in shape:
            size *= d
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.truncate(8 + len(text) + offset)  # the tensors: a hole of zeros
    print(json.dumps({"path": out, "bytes": 8 + len(text) + offset, "tensors": len(shapes)}))


if __name__ == "__main__":
    main()
