#!/usr/bin/env bash
# core/kernels/vmath_avx512.cpp is the one file compiled for AVX-512. An inline function it emits (a weak
# symbol) that other files also use would exist twice, and the linker keeps one copy for the whole
# program: if it kept this file's, a CPU without AVX-512 would run AVX-512 instructions. So every
# weak function this object defines must name one of xsimd's AVX types, which no other file
# instantiates (the rest of the program uses xsimd's SSE2 baseline).
#   usage: avx512_isolation.sh OBJECT...   (the core library's objects; this picks vmath_avx512's)
set -euo pipefail
obj=""
for arg in "$@"; do
  IFS=';' read -r -a objects <<<"$arg"  # ctest passes CMake's list as one argument
  for o in "${objects[@]}"; do
    case "$o" in *vmath_avx512.cpp.o) obj=$o ;; esac
  done
done
if [ -z "$obj" ]; then
  echo "avx512_isolation: no vmath_avx512.cpp.o among the objects given" >&2
  exit 1
fi
weak=$(nm -C --defined-only "$obj" | awk '$2 == "W" { $1 = ""; $2 = ""; sub(/^  /, ""); print }')
bad=$(printf '%s\n' "$weak" | grep -v -E 'xsimd::(avx512f|avx512cd|avx512dq|avx512bw|avx2|avx|fma3<[^>]*>)[,>]' | grep -v '^$' || true)
echo "$(printf '%s\n' "$weak" | grep -c . || true) weak functions in $(basename "$obj"), all tied to xsimd's AVX types unless listed:"
if [ -n "$bad" ]; then
  printf '%s\n' "$bad"
  exit 1
fi
