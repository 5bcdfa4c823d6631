#!/usr/bin/env bash
# Every performance figure in one run: attnscope against PyTorch 1.13 eager on this machine,
# interleaved (attnscope, then PyTorch in eight set-ups, ROUNDS times; medians of the per-round
# medians), the ViT-B/16 forward, torchvision's vit_b_16 from its .pth (forward and load), memory,
# OpenBLAS's sgemm rate, opening a 1 GB file, the large-N case, and the GUI timings.
#
# usage: bench/run_all.sh [path/to/attnscope]     (ROUNDS=3 REPEAT=20 VIT_REPEAT=5 by default)
#
# OpenBLAS kernel: both attnscope and PyTorch use Debian's OpenBLAS 0.3.21 (DYNAMIC_ARCH). Its CPU
# detection does not know recent Xeons (e.g. family 6 model 207) and falls back to the generic
# "Prescott" kernels (about 5x slower sgemm). attnscope then restarts itself with the kernels
# OpenBLAS would pick on a CPU it knew (core/kernels/blas_kernels.cpp: SkylakeX with AVX-512, else Haswell).
# This script asks attnscope which kernels it runs on and sets OPENBLAS_CORETYPE to those for both
# sides, for these commands only; OPENBLAS_L2_SIZE is unset.
# OpenMP wait policy: each side runs as it is fastest. PyTorch runs with 1 and 2 threads, each with
# libgomp's default policy (threads spin a while before they sleep) and with OMP_WAIT_POLICY=passive
# (they sleep at once: at 2 threads its OpenMP threads then no longer spin on the cores OpenBLAS's
# own threads need); its best median counts. attnscope runs with the default policy, what a user
# gets (passive costs it 10-15 ms of wake-ups per ViT-B forward).
# Memory: `attnscope bench` keeps the memory a run frees for the next (mallopt); PyTorch runs each of
# those four ways twice, with glibc's default malloc and with the same settings (GLIBC_TUNABLES).
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
core_env=(env -u OPENBLAS_L2_SIZE -u OMP_WAIT_POLICY OPENBLAS_CORETYPE="$chosen")
passive_env=(env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE="$chosen" OMP_WAIT_POLICY=passive)
# glibc's malloc set as `attnscope bench` sets its own (app/cli_bench.cpp keep_freed_memory): large
# blocks from the heap, one arena, freed memory kept. By default glibc hands PyTorch's large
# temporaries back to the kernel and every run faults them in again; where a page fault is slow (on
# some VMs) that alone makes PyTorch's (1,1025) layer several times slower (README, Benchmark).
kept=GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.arena_max=1:glibc.malloc.trim_threshold=1073741824:glibc.malloc.top_pad=67108864
# PyTorch's eight set-ups (1 or 2 threads, default or passive wait policy, glibc's default malloc or
# memory kept), one run each, appended to $tmp/<set-up>_PREFIX:
#   torch_runs SCRIPT PREFIX REPEAT [ARGS...]   runs SCRIPT ARGS... THREADS REPEAT
torch_runs() {
  local script=$1 prefix=$2 rep=$3
  shift 3
  "${core_env[@]}" $py "$here/$script" "$@" 1 "$rep" >> "$tmp/t1_$prefix"
  "${passive_env[@]}" $py "$here/$script" "$@" 1 "$rep" >> "$tmp/t1p_$prefix"
  "${core_env[@]}" $py "$here/$script" "$@" 2 "$rep" >> "$tmp/t2_$prefix"
  "${passive_env[@]}" $py "$here/$script" "$@" 2 "$rep" >> "$tmp/t2p_$prefix"
  "${core_env[@]}" "$kept" $py "$here/$script" "$@" 1 "$rep" >> "$tmp/t1k_$prefix"
  "${passive_env[@]}" "$kept" $py "$here/$script" "$@" 1 "$rep" >> "$tmp/t1pk_$prefix"
  "${core_env[@]}" "$kept" $py "$here/$script" "$@" 2 "$rep" >> "$tmp/t2k_$prefix"
  "${passive_env[@]}" "$kept" $py "$here/$script" "$@" 2 "$rep" >> "$tmp/t2pk_$prefix"
}

echo "== attnscope performance, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" \
     "(family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' '))," \
     "$(grep -qw avx512f /proc/cpuinfo && echo AVX-512 || echo no AVX-512), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "PyTorch $($py -c 'import torch; print(torch.__version__)') eager; OpenBLAS detects: $detected; attnscope chooses: $chosen; benchmarks run with: ${core_env[*]:1} (PyTorch also with OMP_WAIT_POLICY=passive)"

# OpenBLAS's sgemm rate, measured here and again after the layers: the higher of the two counts
# (a neighbour's load during one measurement would otherwise flatter the layer's share of it).
"${core_env[@]}" "$exe" bench --sgemm >> "$tmp/sgemm.json"

# --- one attention layer, every step recorded ---------------------------------------------------
for cfg in "1 197 768 12" "8 197 768 12" "1 1025 1024 16"; do
  read -r B N C H <<<"$cfg"
  key="${B}_${N}_${C}_${H}"
  for ((r = 0; r < rounds; ++r)); do
    "${core_env[@]}" "$exe" bench --batch "$B" --tokens "$N" --dim "$C" --heads "$H" --repeat "$repeat" --json >> "$tmp/ours_$key"
    torch_runs torch_attention.py "$key" "$repeat" "$B" "$N" "$C" "$H"
  done
done

"${core_env[@]}" "$exe" bench --sgemm >> "$tmp/sgemm.json"

# --- ViT-B/16, 224x224, random weights ----------------------------------------------------------
for ((r = 0; r < rounds; ++r)); do
  "${core_env[@]}" "$exe" bench --vit-b --repeat "$vit_repeat" >> "$tmp/ours_vit"
  torch_runs torch_vit.py vit "$vit_repeat"
done

# --- a user's checkpoint: torchvision's vit_b_16 saved by torch.save (330 MB .pth), each side ------
# loading it (attnscope: list, convert, pack; torchvision: build the module, torch.load,
# load_state_dict) and its forward; attnscope also reads the file into new memory once.
$py "$here/torchvision_vit.py" --make "$tmp/vit_b_16.pth"
for ((r = 0; r < rounds; ++r)); do
  "${core_env[@]}" "$exe" bench --vit-model "$tmp/vit_b_16.pth" --repeat "$vit_repeat" >> "$tmp/ours_tvvit"
  torch_runs torchvision_vit.py tvvit "$vit_repeat" "$tmp/vit_b_16.pth"
done

# --- files: open a 1 GB safetensors and list its tensors ----------------------------------------
$py "$here/make_big_safetensors.py" "$tmp/big.safetensors" 1 > "$tmp/big.json"
"$exe" bench --open "$tmp/big.safetensors" --repeat 9 > "$tmp/open.json"

# --- large N through the flash path: wall time and peak RSS of one recorded run -------------------
/usr/bin/time -f '{"seconds": %e, "max_rss_kb": %M}' -o "$tmp/flash.json" \
  "${core_env[@]}" "$exe" trace --flash --batch 1 --tokens 4097 --dim 1024 --heads 16 > /dev/null

# --- the GUI (software GL: Mesa llvmpipe under Xvfb) --------------------------------------------
if command -v xvfb-run >/dev/null && "$exe" --help 2>/dev/null | grep -- --bench-gui >/dev/null; then  # not -q: attnscope would die of SIGPIPE
  xvfb-run -a -s "-screen 0 1600x1000x24" "${core_env[@]}" "$exe" --bench-gui --batch 1 --tokens 197 --dim 768 --heads 12 > "$tmp/gui.json" 2>/dev/null || true
  # the large-N flash path in the app: the Beyond panel's tile animation and the Attention map's tiles
  xvfb-run -a -s "-screen 0 1600x1000x24" "${core_env[@]}" "$exe" --bench-gui --flash --causal --batch 1 --tokens 4097 --dim 1024 --heads 16 > "$tmp/gui_flash.json" 2>/dev/null || true
fi

$py - "$tmp" "$rounds" "$repeat" "$vit_repeat" <<'PY'
import json, os, statistics, sys
tmp, rounds, repeat, vit_repeat = sys.argv[1], *map(int, sys.argv[2:5])
def runs(name):
    return [json.loads(l) for l in open(os.path.join(tmp, name)) if l.strip()]
def med(name, key="median_ms"):
    return statistics.median(r[key] for r in runs(name))
sgs = runs("sgemm.json")
threads = sgs[0]["blas_threads"]
sg = max(sgs, key=lambda j: j["square_1024"][f"{threads}_threads_gflops_per_s"])
rate2 = sg["square_1024"][f"{threads}_threads_gflops_per_s"]
print(f"\nOpenBLAS sgemm (GFLOP/s, the faster of {len(sgs)} measurements): 1024^3 1 thread {sg['square_1024']['1_threads_gflops_per_s']:.0f}, "
      f"{threads} threads {rate2:.0f}; 197x2304x768 1 thread {sg['qkv_197x2304x768']['1_threads_gflops_per_s']:.0f}, "
      f"{threads} threads {sg['qkv_197x2304x768'][f'{threads}_threads_gflops_per_s']:.0f}")
SHOWN = ["t1", "t1p", "t2", "t2p"]  # PyTorch: 1 or 2 threads, default or passive wait policy
KEPT = [s + "k" for s in SHOWN]     # the same with glibc's malloc keeping freed memory, as attnscope bench
SETUPS = SHOWN + KEPT
LABELS = {"t1": "1t", "t1p": "1t passive", "t2": "2t", "t2p": "2t passive"}
LABELS.update({s + "k": LABELS[s] + " kept" for s in SHOWN})
def torch_best(prefix):
    """PyTorch's best set-up for PREFIX: (its median of the rounds' medians, its label)."""
    return min((med(s + "_" + prefix), LABELS[s]) for s in SETUPS)
def per_round(prefix):
    """attnscope's median over PyTorch's best median in each round."""
    rounds_ = zip(runs("ours_" + prefix), *(runs(s + "_" + prefix) for s in SETUPS))
    return [o["median_ms"] / min(t["median_ms"] for t in ts) for o, *ts in rounds_]
def fastest(prefix):
    return min(r["min_ms"] for r in runs("ours_" + prefix)), min(r["min_ms"] for s in SETUPS for r in runs(s + "_" + prefix))
print(f"\nOne attention layer, every step recorded (median of {rounds} interleaved rounds x {repeat} runs)")
print("%-16s %s %26s %10s %7s %9s %9s %8s" % ("B,N,C,h", " ".join("%12s" % ("torch " + LABELS[s]) for s in SHOWN),
                                               "torch best kept (set-up)", "attnscope", "ratio", "GFLOP/s", "of sgemm",
                                               "memory"))
for key in ["1_197_768_12", "8_197_768_12", "1_1025_1024_16"]:
    best, _ = torch_best(key)
    ours = med("ours_" + key)
    o = runs("ours_" + key)[-1]
    gf = o["gflop"] / (ours * 1e-3)
    kept_ms, kept_label = min((med(s + "_" + key), LABELS[s]) for s in KEPT)
    print("%-16s %s %9.2f ms (%13s) %7.2f ms %6.2fx %9.0f %8.0f%% %7.2fx" % (
        key.replace("_", ","), " ".join("%9.2f ms" % med(s + "_" + key) for s in SHOWN), kept_ms, kept_label, ours,
        ours / best, gf, 100 * gf / rate2, o["memory_ratio"]))
# The machine is shared: a neighbour's load adds time to either side at random. Per-round ratios
# show the spread; the fastest single runs show the cost when nothing else ran.
print("spread over the rounds, and the fastest single run of each side:")
for key in ["1_197_768_12", "8_197_768_12", "1_1025_1024_16"]:
    pr = per_round(key)
    fast_o, fast_t = fastest(key)
    print("  %-15s per-round ratios %.2f-%.2f; fastest runs: attnscope %.2f ms, PyTorch %.2f ms = %.2fx" % (
        key.replace("_", ","), min(pr), max(pr), fast_o, fast_t, fast_o / fast_t))
print("where attnscope's time goes (median ms from one recorded step to the next: the op, its stats, the recording):")
gemm_steps = ["qkv", "scores", "context", "out"]
for key in ["1_197_768_12", "8_197_768_12", "1_1025_1024_16"]:
    steps = runs("ours_" + key)[-1].get("step_ms", {})
    if not steps:
        continue
    total = sum(steps.values())
    top = sorted(steps.items(), key=lambda kv: -kv[1])[:8]
    gemm = sum(steps.get(n, 0.0) for n in gemm_steps)
    print("  %-15s %s; the four matrix-product steps (qkv, scores, context, out) %.0f%% of %.2f ms" % (
        key.replace("_", ","), ", ".join("%s %.2f" % kv for kv in top), 100 * gemm / total, total))
print("ratio = attnscope / PyTorch's best median of the eight set-ups; target <= 0.8. 'of sgemm' = layer GFLOP/s over\n"
      f"the {threads}-thread 1024^3 sgemm rate; target > 60%. memory = peak RSS growth of one recorded run over the\n"
      "bytes of every tensor the user can look at; target <= 1.1.")
best, label = torch_best("vit")
ours = med("ours_vit")
v = runs("ours_vit")[-1]
print(f"\nViT-B/16 forward, one 224x224 image, every step recorded (median of {rounds} rounds x {vit_repeat} runs)")
print("torch " + ", ".join(f"{LABELS[s]} {med(s + '_vit'):.1f} ms" for s in SETUPS) +
      f"; attnscope {ours:.1f} ms: ratio {ours / best:.2f}x to PyTorch's best ({label}) (target <= 0.8); "
      f"{v['gflop'] / (ours * 1e-3):.0f} GFLOP/s")
vr = per_round("vit")
vfast_o, vfast_t = fastest("vit")
print(f"per-round ratios {min(vr):.2f}-{max(vr):.2f}; fastest runs: attnscope {vfast_o:.1f} ms, PyTorch {vfast_t:.1f} ms "
      f"= {vfast_o / vfast_t:.2f}x")
print(f"memory: peak RSS {v['peak_rss_bytes'] / 2**20:.0f} MiB (model alone {v['rss_with_model_bytes'] / 2**20:.0f} MiB); "
      f"one recorded forward grows RSS by {v['rss_growth_bytes'] / 2**20:.0f} MiB for {v['visible_bytes'] / 2**20:.0f} MiB "
      f"of recorded tensors = {v['memory_ratio']:.2f}x (target <= 1.1)")
best, label = torch_best("tvvit")
ours = med("ours_tvvit")
tr = per_round("tvvit")
print(f"\ntorchvision's vit_b_16 from its torch.save file (330 MB .pth), one 224x224 image (median of {rounds} rounds x "
      f"{vit_repeat} runs): torchvision eager " + ", ".join(f"{LABELS[s]} {med(s + '_tvvit'):.1f} ms" for s in SETUPS) +
      f"; attnscope {ours:.1f} ms: ratio {ours / best:.2f}x to torchvision's best ({label}) (target <= 0.8); "
      f"per-round ratios {min(tr):.2f}-{max(tr):.2f}")
print(f"loading it: attnscope {med('ours_tvvit', 'load_ms'):.0f} ms against {med('ours_tvvit', 'read_once_ms'):.0f} ms to read "
      f"the file into new memory once (target: no more); torchvision (build the module, torch.load, load_state_dict) "
      f"{min(med(s + '_tvvit', 'load_ms') for s in SETUPS):.0f} ms")
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
    if "idle_frame_backgrounds_by_clear" in g:
        print(f"  the clear painted {g['idle_frame_backgrounds_by_clear']} panel backgrounds; idle workers: "
              f"OMP_WAIT_POLICY={g['omp_wait_policy']}, OPENBLAS_THREAD_TIMEOUT={g['openblas_thread_timeout']}")
    flash = os.path.join(tmp, "gui_flash.json")
    if os.path.exists(flash) and os.path.getsize(flash):
        f = json.load(open(flash))
        print(f"GUI on the flash path at (1,4097,1024,16), causal: a drawn frame (tile animation) {f['idle_frame_ms']:.1f} ms, "
              f"step/head switch {f['switch_ms']:.1f} ms, Attention map pan {f['map_pan_frame_ms']:.1f} ms, "
              f"map head switch {f['map_head_switch_frame_ms']:.1f} ms")
else:
    print("\nGUI: not measured (this attnscope has no --bench-gui, or xvfb-run is missing)")
PY
