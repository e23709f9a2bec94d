#!/usr/bin/env bash
# Encode MB/s of our tokenizers vs HF tokenizers (single thread) on the same ~1 MiB text.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build --preset cpu --target tokenizer_bench >/dev/null
build/cpu/bench/tokenizer_bench --benchmark_counters_tabular=true
python3 scripts/bench_tokenizer_hf.py "$(cd .. && pwd)/shared/testdata"
