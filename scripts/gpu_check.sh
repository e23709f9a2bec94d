#!/usr/bin/env bash
# GPU check in two halves, because the GPU machine lacks our Debian libraries:
#   scripts/gpu_check.sh pack   (here)   build the CUDA preset, copy the cuda test binaries, the
#                                        benchmarks and the .so files they need into .carry/gpu
#   scripts/gpu_check.sh run    (device) run every cuda test and benchmark from .carry/gpu and
#                                        print a short table last
# Device call: run(command="scripts/gpu_check.sh run", carry=[".carry"]).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.carry/gpu

pack() {
  cmake --preset cuda >/dev/null
  cmake --build --preset cuda
  rm -rf "$dest" && mkdir -p "$dest/lib"
  # Every test binary with the cuda label.
  for t in $(ctest --test-dir build/cuda -L cuda -N -V 2>/dev/null |
             sed -n 's/.*Test command: \([^ ]*\).*/\1/p' | sort -u); do
    cp "$t" "$dest/"
  done
  # Shared libraries that are neither CUDA's nor glibc's travel along.
  for bin in "$dest"/*; do
    [ -f "$bin" ] || continue
    ldd "$bin" | awk '/=> \//{print $3}' | grep -vE 'cuda|libc\.so|libm\.so|ld-linux|libpthread|libdl|librt' |
      xargs -r -I{} cp -L {} "$dest/lib/"
  done
  ls -la "$dest" "$dest/lib"
  du -sh "$dest"
}

run() {
  export LD_LIBRARY_PATH="$PWD/$dest/lib:${LD_LIBRARY_PATH:-}"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  declare -a rows=()
  status=0
  for t in "$dest"/*_test; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    if "$t" >"${OUT:-/tmp}/$name.log" 2>&1; then
      rows+=("$name PASS $(grep -o 'PASSED  \] [0-9]* test' "${OUT:-/tmp}/$name.log" | grep -o '[0-9]*')")
    else
      status=1
      rows+=("$name FAIL")
      tail -40 "${OUT:-/tmp}/$name.log"
    fi
  done
  echo "==== gpu_check summary"
  printf '%s\n' "${rows[@]}"
  return $status
}

case "${1:-}" in
  pack) pack ;;
  run) run ;;
  *) echo "usage: scripts/gpu_check.sh pack|run" >&2; exit 2 ;;
esac
