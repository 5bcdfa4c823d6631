#!/usr/bin/python3
"""Median milliseconds of PyTorch eager ViTAttention (the reference's class) on one config.

usage: /usr/bin/python3 bench/torch_attention.py B N C H THREADS REPEAT   -> prints one JSON line
"""
import json
import statistics
import sys
import time

import torch

sys.path.insert(0, __file__.rsplit("/", 2)[0] + "/tools")
from make_golden import ViTAttention  # noqa: E402  the reference's class, one copy in the repo


def main():
    B, N, C, H, threads, repeat = map(int, sys.argv[1:7])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    m = ViTAttention(C, num_heads=H).eval()
    x = torch.randn(B, N, C)
    times = []
    with torch.no_grad():
        for _ in range(3):
            m(x)
        for _ in range(repeat):
            start = time.perf_counter()
            m(x)
            times.append((time.perf_counter() - start) * 1e3)
    print(json.dumps({"median_ms": statistics.median(times), "min_ms": min(times), "threads": threads,
                      "repeat": repeat, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
