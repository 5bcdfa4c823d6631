#!/usr/bin/python3
"""Median milliseconds of PyTorch eager ViTAttention (the reference's class) on one config.

usage: /usr/bin/python3 bench/torch_attention.py B N C H THREADS REPEAT   -> prints one JSON line
"""
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 2)[0] + "/tools")
from make_golden import ViTAttention  # noqa: E402  the reference's class, one copy in the repo
from torch_timing import print_forward_times  # noqa: E402


def main():
    B, N, C, H, threads, repeat = map(int, sys.argv[1:7])
    torch.manual_seed(0)
    m = ViTAttention(C, num_heads=H).eval()
    print_forward_times(m, torch.randn(B, N, C), threads, warmup=3, repeat=repeat)


if __name__ == "__main__":
    main()
