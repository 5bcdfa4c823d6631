#!/usr/bin/env bash
# Every figure of issue 8 (performance) in one run: attnscope against PyTorch 1.13 eager on this
# machine, interleaved (torch 1 thread, torch 2 threads, attnscope, ROUNDS times; medians of the
# per-round medians), the ViT-B/16 forward, memory, OpenBLAS's sgemm rate, opening a 1 GB file,
# the large-N case, and the GUI timings.
#
# usage: bench/run_all.sh [path/to/attnscope]     (ROUNDS=3 REPEAT=20 VIT_REPEAT=5 by default)
#
# OpenBLAS kernel: both attnscope and PyTorch use Debian's OpenBLAS 0.3.21 (DYNAMIC_ARCH). Its CPU
# detection does not know recent Xeons (e.g. family 6 model 207) and falls back to the generic
# "Prescott" kernels (about 5x slower sgemm). attnscope then restarts itself with the kernels
# OpenBLAS would pick on a CPU it knew (core/blas_kernels.cpp: SkylakeX with AVX-512, else Haswell).
# This script asks attnscope which kernels it runs on and sets OPENBLAS_CORETYPE to those for both
# sides, for these commands only; OPENBLAS_L2_SIZE is unset.
# OMP_WAIT_POLICY=passive for both sides too (attnscope and PyTorch both use libgomp): on a busy
# machine, threads that spin while waiting take the cores from the threads doing the work.
# Tests and CI keep the environment as it is.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exe="${1:-$here/../build/app/attnscope}"
rounds="${ROUNDS:-3}"
repeat="${REPEAT:-20}"
vit_repeat="${VIT_REPEAT:-5}"
py=/usr/bin/python3
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

detected=$(env -u OPENBLAS_L2_SIZE -u OPENBLAS_CORETYPE ATTNSCOPE_BLAS_CHOSEN=1 "$exe" bench --sgemm --repeat 1 | $py -c 'import json,sys; print(json.load(sys.stdin)["openblas_core"])')
chosen=$(env -u OPENBLAS_L2_SIZE -u OPENBLAS_CORETYPE "$exe" bench --sgemm --repeat 1 | $py -c 'import json,sys; print(json.load(sys.stdin)["openblas_core"])')
core_env=(env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE="$chosen" OMP_WAIT_POLICY=passive)

echo "== attnscope performance, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" \
     "(family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' '))," \
     "$(grep -qw avx512f /proc/cpuinfo && echo AVX-512 || echo no AVX-512), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "PyTorch $($py -c 'import torch; print(torch.__version__)') eager; OpenBLAS detects: $detected; attnscope chooses: $chosen; benchmarks run with: ${core_env[*]:1}"

sgemm=$("${core_env[@]}" "$exe" bench --sgemm)
echo "$sgemm" > "$tmp/sgemm.json"

# --- one attention layer, every step recorded ---------------------------------------------------
for cfg in "1 197 768 12" "8 197 768 12" "1 1025 1024 16"; do
  read -r B N C H <<<"$cfg"
  key="${B}_${N}_${C}_${H}"
  for ((r = 0; r < rounds; ++r)); do
    "${core_env[@]}" $py "$here/torch_attention.py" "$B" "$N" "$C" "$H" 1 "$repeat" >> "$tmp/t1_$key"
    "${core_env[@]}" "$exe" bench --batch "$B" --tokens "$N" --dim "$C" --heads "$H" --repeat "$repeat" --json >> "$tmp/ours_$key"
    "${core_env[@]}" $py "$here/torch_attention.py" "$B" "$N" "$C" "$H" 2 "$repeat" >> "$tmp/t2_$key"
  done
done

# --- ViT-B/16, 224x224, random weights ----------------------------------------------------------
for ((r = 0; r < rounds; ++r)); do
  "${core_env[@]}" $py "$here/torch_vit.py" 1 "$vit_repeat" >> "$tmp/vit_t1"
  "${core_env[@]}" "$exe" bench --vit-b --repeat "$vit_repeat" >> "$tmp/vit_ours"
  "${core_env[@]}" $py "$here/torch_vit.py" 2 "$vit_repeat" >> "$tmp/vit_t2"
done

# --- files: open a 1 GB safetensors and list its tensors ----------------------------------------
$py "$here/make_big_safetensors.py" "$tmp/big.safetensors" 1 > "$tmp/big.json"
"$exe" bench --open "$tmp/big.safetensors" --repeat 9 > "$tmp/open.json"

# --- large N through the flash path: wall time and peak RSS of one recorded run -------------------
/usr/bin/time -f '{"seconds": %e, "max_rss_kb": %M}' -o "$tmp/flash.json" \
  "${core_env[@]}" "$exe" trace --flash --batch 1 --tokens 4097 --dim 1024 --heads 16 > /dev/null

# --- the GUI (software GL: Mesa llvmpipe under Xvfb) --------------------------------------------
if command -v xvfb-run >/dev/null && "$exe" --help 2>/dev/null | grep -q -- --bench-gui; then
  xvfb-run -a -s "-screen 0 1600x1000x24" "${core_env[@]}" "$exe" --bench-gui --batch 1 --tokens 197 --dim 768 --heads 12 > "$tmp/gui.json" 2>/dev/null || true
fi

$py - "$tmp" "$rounds" "$repeat" "$vit_repeat" <<'PY'
import json, os, statistics, sys
tmp, rounds, repeat, vit_repeat = sys.argv[1], *map(int, sys.argv[2:5])
def runs(name):
    return [json.loads(l) for l in open(os.path.join(tmp, name)) if l.strip()]
def med(name, key="median_ms"):
    return statistics.median(r[key] for r in runs(name))
sg = json.load(open(os.path.join(tmp, "sgemm.json")))
threads = sg["blas_threads"]
rate2 = sg["square_1024"][f"{threads}_threads_gflops_per_s"]
print(f"\nOpenBLAS sgemm (GFLOP/s): 1024^3 1 thread {sg['square_1024']['1_threads_gflops_per_s']:.0f}, "
      f"{threads} threads {rate2:.0f}; 197x2304x768 1 thread {sg['qkv_197x2304x768']['1_threads_gflops_per_s']:.0f}, "
      f"{threads} threads {sg['qkv_197x2304x768'][f'{threads}_threads_gflops_per_s']:.0f}")
print(f"\nOne attention layer, every step recorded (median of {rounds} interleaved rounds x {repeat} runs)")
print("%-16s %10s %10s %10s %7s %9s %9s %8s" % ("B,N,C,h", "torch 1t", "torch 2t", "attnscope", "ratio",
                                               "GFLOP/s", "of sgemm", "memory"))
for key in ["1_197_768_12", "8_197_768_12", "1_1025_1024_16"]:
    t1, t2, ours = med("t1_" + key), med("t2_" + key), med("ours_" + key)
    o = runs("ours_" + key)[-1]
    gf = o["gflop"] / (ours * 1e-3)
    print("%-16s %7.2f ms %7.2f ms %7.2f ms %6.2fx %9.0f %8.0f%% %7.2fx" % (
        key.replace("_", ","), t1, t2, ours, ours / min(t1, t2), gf, 100 * gf / rate2, o["memory_ratio"]))
# The machine is shared: a neighbour's load adds time to either side at random. Per-round ratios
# show the spread; the fastest single runs show the cost when nothing else ran.
print("spread over the rounds, and the fastest single run of each side:")
for key in ["1_197_768_12", "8_197_768_12", "1_1025_1024_16"]:
    r1, r2, ro = runs("t1_" + key), runs("t2_" + key), runs("ours_" + key)
    per_round = [o["median_ms"] / min(a["median_ms"], b["median_ms"]) for a, b, o in zip(r1, r2, ro)]
    fast_t = min(r["min_ms"] for r in r1 + r2)
    fast_o = min(r["min_ms"] for r in ro)
    print("  %-15s per-round ratios %.2f-%.2f; fastest runs: attnscope %.2f ms, PyTorch %.2f ms = %.2fx" % (
        key.replace("_", ","), min(per_round), max(per_round), fast_o, fast_t, fast_o / fast_t))
print("where attnscope's time goes (median ms from one recorded step to the next: the op, its stats, the recording):")
gemm_steps = ["qkv", "scores", "context", "out"]
for key in ["1_197_768_12", "8_197_768_12", "1_1025_1024_16"]:
    steps = runs("ours_" + key)[-1].get("step_ms", {})
    if not steps:
        continue
    total = sum(steps.values())
    top = sorted(steps.items(), key=lambda kv: -kv[1])[:8]
    gemm = sum(steps.get(n, 0.0) for n in gemm_steps)
    print("  %-15s %s; the four sgemm steps (qkv, scores, context, out) %.0f%% of %.2f ms" % (
        key.replace("_", ","), ", ".join("%s %.2f" % kv for kv in top), 100 * gemm / total, total))
print("ratio = attnscope / PyTorch's best (1 or 2 threads); target <= 0.8. 'of sgemm' = layer GFLOP/s over the\n"
      f"{threads}-thread 1024^3 sgemm rate; target > 60%. memory = peak RSS growth of one recorded run over the\n"
      "bytes of every tensor the user can look at; target <= 1.1.")
t1, t2, ours = med("vit_t1"), med("vit_t2"), med("vit_ours")
v = runs("vit_ours")[-1]
print(f"\nViT-B/16 forward, one 224x224 image, every step recorded (median of {rounds} rounds x {vit_repeat} runs)")
print(f"torch 1t {t1:.1f} ms, torch 2t {t2:.1f} ms, attnscope {ours:.1f} ms: ratio {ours / min(t1, t2):.2f}x "
      f"(target <= 0.8); {v['gflop'] / (ours * 1e-3):.0f} GFLOP/s")
vr = [o["median_ms"] / min(a["median_ms"], b["median_ms"]) for a, b, o in zip(runs("vit_t1"), runs("vit_t2"), runs("vit_ours"))]
vfast_t = min(r["min_ms"] for r in runs("vit_t1") + runs("vit_t2"))
vfast_o = min(r["min_ms"] for r in runs("vit_ours"))
print(f"per-round ratios {min(vr):.2f}-{max(vr):.2f}; fastest runs: attnscope {vfast_o:.1f} ms, PyTorch {vfast_t:.1f} ms "
      f"= {vfast_o / vfast_t:.2f}x")
print(f"memory: peak RSS {v['peak_rss_bytes'] / 2**20:.0f} MiB (model alone {v['rss_with_model_bytes'] / 2**20:.0f} MiB); "
      f"one recorded forward grows RSS by {v['rss_growth_bytes'] / 2**20:.0f} MiB for {v['visible_bytes'] / 2**20:.0f} MiB "
      f"of recorded tensors = {v['memory_ratio']:.2f}x (target <= 1.1)")
big, op = json.load(open(os.path.join(tmp, "big.json"))), json.load(open(os.path.join(tmp, "open.json")))
print(f"\nFiles: opening a {big['bytes'] / 2**30:.2f} GiB safetensors and listing its {op['tensors']} tensors: "
      f"median {op['median_ms']:.1f} ms, max {op['max_ms']:.1f} ms (target <= 300 ms)")
B, N, C, h = 1, 4097, 1024, 16
floats = 19 * B * N * C + 4 * B * h * N * N + 2 * B * h * N
fl = json.load(open(os.path.join(tmp, "flash.json")))
print(f"\nLarge N (1,4097,1024,16): the standard path would record four [B, h, N, N] steps: "
      f"{4 * floats / 2**30:.1f} GiB; the flash path (16x16 tiles) ran in {fl['seconds']:.1f} s "
      f"with a peak RSS of {fl['max_rss_kb'] / 2**20:.2f} GiB")
gui = os.path.join(tmp, "gui.json")
if os.path.exists(gui) and os.path.getsize(gui):
    g = json.load(open(gui))
    print("\nGUI at ViT-B layer size (1,197,768,12), 1600x1000, Mesa llvmpipe (software GL: the CPU rasterizes) under Xvfb:")
    print(f"  step/head switch incl. texture upload: frame median {g['switch_ms']:.1f} ms (max {g['switch_max_ms']:.1f}), "
          f"{g['switch_ms'] - g['idle_frame_ms']:.1f} ms more than an idle frame ({g['idle_frame_ms']:.1f} ms) (target <= 16)")
    if "switch_cpu_ms" in g:
        print(f"    of which the app thread's CPU (ImGui, uploads, GL calls) {g['switch_cpu_ms']:.2f} ms; then waiting for "
              f"llvmpipe in glFinish {g['switch_finish_ms']:.1f} ms; whole process CPU {g['switch_process_cpu_ms']:.1f} ms")
    print(f"  idle frame CPU ({g.get('idle_frame', 'drawn')}): app thread {g['idle_frame_cpu_ms']:.2f} ms, whole process incl. llvmpipe "
          f"{g['idle_frame_process_cpu_ms']:.1f} ms (target <= 2)"
          + (f"; {g['idle_frame_vertices']} vertices" if "idle_frame_vertices" in g else ""))
    print(f"  start to first frame: {g['first_frame_ms']:.0f} ms (target <= 500)")
    print("  (the live app draws no frame while nothing changes: 0 ms of CPU when idle)")
else:
    print("\nGUI: not measured (this attnscope has no --bench-gui, or xvfb-run is missing)")
PY
