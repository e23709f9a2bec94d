#!/usr/bin/env bash
# Compiles the wgmma kernels of a configured CUDA build again with ptxas's report and fails on
# what would cost their speed silently: ptxas serializing the wgmmas (notes C7514 / C7515: code
# touching the accumulators inside the MMAs' flight) and spills in the persistent grouped kernel
# (its staging addresses spilled once: docs/perf-log/2026-12-01-padding-rows.md) and in the
# Hopper extend attention kernel. No GPU needed.
#   scripts/check_ptxas.sh [BUILD_DIR, default build/cuda]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/cuda}
status=0
for obj in src/kernels/CMakeFiles/sgl_kernels.dir/cuda/hopper_gemm.cu.o \
           src/kernels/CMakeFiles/sgl_kernels.dir/cuda/hopper_grouped_gemm.cu.o \
           src/attention/CMakeFiles/sgl_attention.dir/cuda/flash_extend_hopper.cu.o; do
  src=$(basename "$obj" .cu.o)
  # The object's own compile command, writing elsewhere, with ptxas's report (through ccache
  # where the build uses it: it keeps a compile's report with its object, so CI's unchanged
  # kernels are not compiled again).
  cmd=$(cd "$build" && ninja -t commands "$obj" | tail -n 1)
  out=$(mktemp)
  cmd=$(sed "s# -o [^ ]*\.cu\.o# -o $out.o#" <<<"$cmd")
  if ! (cd "$build" && eval "$cmd -Xptxas -v") >"$out" 2>&1; then
    echo "check_ptxas: $src.cu did not compile" >&2
    cat "$out" >&2
    status=1
  elif ! grep -q "stack frame" "$out"; then
    echo "check_ptxas: no ptxas report for $src.cu (nothing to check)" >&2
    status=1
  elif grep -qE "C751[45]" "$out"; then
    echo "check_ptxas: ptxas serialized the wgmmas in $src.cu:" >&2
    grep -E "C751[45]" "$out" | cut -c1-300 >&2
    status=1
  elif [ "$src" = hopper_grouped_gemm ] &&
       grep -A2 "Compiling entry.*hopper_grouped_kernel" "$out" |
         grep "stack frame" | grep -vq "^ *0 bytes stack frame, 0 bytes spill"; then
    echo "check_ptxas: the persistent grouped kernel spills:" >&2
    grep -A2 "Compiling entry.*hopper_grouped_kernel" "$out" | grep "stack frame" >&2
    status=1
  elif [ "$src" = flash_extend_hopper ] &&
       grep "stack frame" "$out" | grep -vq "^ *0 bytes stack frame, 0 bytes spill"; then
    echo "check_ptxas: the Hopper extend kernel spills:" >&2
    grep "stack frame" "$out" >&2
    status=1
  fi
  rm -f "$out" "$out.o"
done
[ "$status" = 0 ] && echo "check_ptxas: no serialized wgmmas, no spills in the grouped or extend kernels"
exit "$status"
