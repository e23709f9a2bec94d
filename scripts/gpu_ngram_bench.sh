#!/usr/bin/env bash
# N-gram speculative decoding on a "rewrite this code" workload (issue #23: >= 1.5x plain decode
# at batch 1). Runs sgl-bench offline at batch 1 over PROMPTS (scripts/make_rewrite_prompts.py:
# 16 chat prompts, greedy, EOS kept): plain decoding, then NGRAM with each draft count of
# SGL_NGRAM_DRAFTS under the fixed policy, then the server's default (adaptive) at the largest.
# Greedy outputs are the same in every run, so tok/s compare directly. Logs and JSON in $OUT.
#
#   scripts/gpu_ngram_bench.sh SGL_BENCH MODEL PROMPTS
#   SGL_NGRAM_DRAFTS  --speculative-num-draft-tokens values (default "4 8")
#   SGL_DEVICE        the bench's --device (default cuda; cpu checks this script here)
set -euo pipefail
bench=${1:?usage: gpu_ngram_bench.sh SGL_BENCH MODEL PROMPTS}
model=${2:?usage: gpu_ngram_bench.sh SGL_BENCH MODEL PROMPTS}
prompts=${3:?usage: gpu_ngram_bench.sh SGL_BENCH MODEL PROMPTS}
out=${OUT:-/tmp}

# run NAME ARGS...: one sgl-bench offline run; prints its output tok/s and accept length.
plain_tps=
run() {
  local name=$1 tps accept
  shift
  "$bench" offline --model-path "$model" --device "${SGL_DEVICE:-cuda}" --prompt-file "$prompts" \
    --max-running-requests 1 --output-file "$out/ngram_$name.json" "$@" \
    >"$out/ngram_$name.log" 2>&1 || { echo "$name FAILED"; tail -n 20 "$out/ngram_$name.log"; exit 1; }
  tps=$(grep -o 'Output token throughput (tok/s): *[0-9.]*' "$out/ngram_$name.log" | grep -o '[0-9.]*$')
  accept=$(grep -o 'Accept length: *[0-9.]*' "$out/ngram_$name.log" | grep -o '[0-9.]*$' || echo 1.00)
  [ -n "$plain_tps" ] || plain_tps=$tps
  printf 'ngram %s: %s tok/s (%sx plain), accept length %s\n' "$name" "$tps" \
    "$(awk -v a="$tps" -v b="$plain_tps" 'BEGIN { printf "%.2f", a / b }')" "$accept"
}

run plain
drafts=0
for drafts in ${SGL_NGRAM_DRAFTS:-4 8}; do
  run "fixed_k${drafts}" --speculative-algorithm NGRAM --speculative-num-draft-tokens "$drafts" \
    --speculative-draft-policy fixed
done
run "adaptive_k${drafts}" --speculative-algorithm NGRAM --speculative-num-draft-tokens "$drafts"
