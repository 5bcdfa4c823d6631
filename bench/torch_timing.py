"""Times a PyTorch module's forward the way every bench/torch_*.py reports it: warm-up calls, then
`repeat` timed calls under no_grad on `threads` threads, printed as one JSON line."""
import json
import statistics
import time

import torch


def print_forward_times(m, x, threads, warmup, repeat):
    torch.set_num_threads(threads)
    times = []
    with torch.no_grad():
        for _ in range(warmup):
            m(x)
        for _ in range(repeat):
            start = time.perf_counter()
            m(x)
            times.append((time.perf_counter() - start) * 1e3)
    print(json.dumps({"median_ms": statistics.median(times), "min_ms": min(times), "threads": threads,
                      "repeat": repeat, "torch": torch.__version__}))
