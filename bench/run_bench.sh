#!/usr/bin/env bash
# attnscope bench against PyTorch 1.13 eager ViTAttention, same machine, same run.
# usage: bench/run_bench.sh [path/to/attnscope] [repeat]
#
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset for these commands only (they slow both
# attnscope's OpenBLAS and PyTorch); tests and CI keep them.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exe="${1:-$here/../build/app/attnscope}"
repeat="${2:-30}"
clean_env=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE)

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)'), medians of $repeat runs, every attnscope step recorded"
printf '%-20s %12s %12s %12s %14s %8s\n' "B,N,C,h" "torch 1 thr" "torch 2 thr" "attnscope" "GFLOP/s (ours)" "ratio"
for cfg in "2 16 768 8" "1 197 768 12" "8 197 768 12" "1 1025 1024 16"; do
  read -r B N C H <<<"$cfg"
  t1=$("${clean_env[@]}" /usr/bin/python3 "$here/torch_attention.py" "$B" "$N" "$C" "$H" 1 "$repeat")
  t2=$("${clean_env[@]}" /usr/bin/python3 "$here/torch_attention.py" "$B" "$N" "$C" "$H" 2 "$repeat")
  ours=$("${clean_env[@]}" "$exe" bench --batch "$B" --tokens "$N" --dim "$C" --heads "$H" --repeat "$repeat" --json)
  /usr/bin/python3 - "$cfg" "$t1" "$t2" "$ours" <<'PY'
import json, sys
cfg, t1, t2, ours = sys.argv[1], *map(json.loads, sys.argv[2:5])
best = min(t1["median_ms"], t2["median_ms"])
print("%-20s %9.3f ms %9.3f ms %9.3f ms %14.1f %7.2fx" % (
    cfg.replace(" ", ","), t1["median_ms"], t2["median_ms"], ours["median_ms"], ours["gflops_per_s"],
    ours["median_ms"] / best))
PY
done
echo "ratio = attnscope median / PyTorch's best median (lower is better; < 1 means attnscope is faster)"
