#!/usr/bin/env bash
# EAGLE speculative decoding on a dummy Llama-3-8B (device side; scripts/gpu_check.sh runs it with
# SGL_GPU_EAGLE=1). ROOT is gpu_check's unpacked folder (ROOT/gpu/sgl-bench, ROOT/configs).
# The head is scripts/make_eagle_heads.py's repeat head in the 8B's shape (a real EAGLE head's
# cost: fc 8192 -> 4096, one decoder layer, the target's LM head): it drafts the token it reads
# again, which stands only where the dummy target's greedy output repeats a token. So the
# accept length is whatever the dummy model's output gives; the step costs are real.
# Prints, per batch size, output tok/s and the accept length, plain then EAGLE; JSON in $OUT.
set -euo pipefail
root=${1:?usage: gpu_eagle_bench.sh ROOT}
out=${OUT:-/tmp}
head_dir=/tmp/sgl_eagle_heads
python3 "$(dirname "$0")/make_eagle_heads.py" --repeat-head-for "$root/configs/llama-3-8b.json" \
  "$head_dir"
head="$head_dir/llama-3-8b-eagle-repeat"
for bs in ${SGL_EAGLE_BATCH_SIZES:-1 8}; do
  common=(offline --config "$root/configs/llama-3-8b.json" --device cuda --num-prompts "$bs"
          --random-input-len 256 --random-output-len "${SGL_EAGLE_OUTPUT_LEN:-256}"
          --max-running-requests "$bs")
  for steps in 0 ${SGL_EAGLE_STEPS:-1 3 5}; do
    spec=()
    if [ "$steps" -gt 0 ]; then
      spec=(--speculative-algorithm EAGLE --speculative-draft-model-path "$head"
            --speculative-num-steps "$steps" --speculative-eagle-topk 1)
    fi
    name="eagle_bs${bs}_steps${steps}"
    "$root/gpu/sgl-bench" "${common[@]}" "${spec[@]}" --output-file "$out/$name.json" \
      >"$out/$name.log" 2>&1 || { echo "$name FAILED"; tail -n 20 "$out/$name.log"; exit 1; }
    printf '%s: %s tok/s, accept length %s, %s decode steps\n' "$name" \
      "$(grep -o 'Output token throughput (tok/s): *[0-9.]*' "$out/$name.log" | grep -o '[0-9.]*$')" \
      "$(grep -o 'Accept length: *[0-9.]*' "$out/$name.log" | grep -o '[0-9.]*$' || echo 1.00)" \
      "$(grep -o 'Decode steps: *[0-9]*' "$out/$name.log" | grep -o '[0-9]*$')"
  done
done
