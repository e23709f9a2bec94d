#!/usr/bin/env bash
# The test command: format check, CPU build + tests, ASan/UBSan build + tests, CUDA compile.
# Usage: scripts/test.sh [--quick]   (--quick: CPU build + tests only)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=${1:-}

if [ "$quick" != "--quick" ]; then
  echo "== clang-format check"
  git ls-files 'src/*.h' 'src/*.cpp' 'src/*.cu' 'src/*.cuh' 'tests/*.h' 'tests/*.cpp' 'bench/*.cpp' |
    xargs clang-format --dry-run --Werror
fi

echo "== CPU build and tests"
cmake --preset cpu >/dev/null
cmake --build --preset cpu
ctest --preset cpu

if [ "$quick" != "--quick" ]; then
  echo "== ASan + UBSan build and tests"
  cmake --preset asan >/dev/null
  cmake --build --preset asan
  ASAN_OPTIONS=detect_leaks=1 ctest --preset asan

  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    echo "== CUDA build (compile only; no GPU here)"
    cmake --preset cuda >/dev/null
    cmake --build --preset cuda
  else
    echo "== CUDA build skipped: no nvcc" >&2
    exit 1
  fi
fi
echo "== all checks passed"
