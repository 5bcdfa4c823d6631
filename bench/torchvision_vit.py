#!/usr/bin/python3
"""torchvision's own ViT-B/16 (vit_b_16, nn.MultiheadAttention's fused fast path in eval) on one 224x224
image: the time to load its torch.save file and the median forward, the yardstick for
`attnscope bench --vit-model` on the same file.

usage: /usr/bin/python3 bench/torchvision_vit.py --make FILE.pth     writes vit_b_16's state_dict (random weights)
       /usr/bin/python3 bench/torchvision_vit.py FILE.pth THREADS REPEAT   -> one JSON line
"""
import json
import statistics
import sys
import time

import torch
import torchvision

if sys.argv[1] == "--make":
    torch.manual_seed(0)
    torch.save(torchvision.models.vit_b_16().state_dict(), sys.argv[2])
    sys.exit(0)

path, threads, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
start = time.perf_counter()
model = torchvision.models.vit_b_16()
model.load_state_dict(torch.load(path))
load_ms = (time.perf_counter() - start) * 1e3  # includes building the module (its own initialisation)
model.eval()
x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(0))
ms = []
with torch.inference_mode():
    for i in range(repeat + 2):
        start = time.perf_counter()
        model(x)
        if i >= 2:  # two warm-up runs
            ms.append((time.perf_counter() - start) * 1e3)
print(json.dumps({"median_ms": statistics.median(ms), "min_ms": min(ms), "load_ms": load_ms, "threads": threads}))
