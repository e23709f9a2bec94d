#!/usr/bin/env bash
# EAGLE speculative decoding on a dummy Llama-3-8B (device side; scripts/gpu_check.sh runs it with
# SGL_GPU_EAGLE=1). ROOT is gpu_check's unpacked folder (ROOT/gpu/sgl-bench, ROOT/configs).
# The head is scripts/make_eagle_heads.py's repeat head in the 8B's shape (a real EAGLE head's
# cost: fc 8192 -> 4096, one decoder layer, the target's LM head). The dummy target's drafts
# rarely stand, so each EAGLE run is also made with sgl-bench's --speculative-bench-accept-length
# L for each L in SGL_EAGLE_ACCEPT: every verify step then yields L tokens, and the run measures
# the engine's real cost at that accept length.
# Prints, per batch size, output tok/s, the accept length and the time per decode step: plain,
# then EAGLE with K draft steps every step (--speculative-draft-policy fixed; natural and forced
# accept lengths), then the server's default (adaptive) at the largest K, natural and at the
# largest forced accept length; JSON in $OUT.
#   SGL_EAGLE_BATCH_SIZES  (default "1 8")   SGL_EAGLE_STEPS   K values (default "1 3 5")
#   SGL_EAGLE_ACCEPT       forced accept lengths, each <= K + 1 (default: none, natural only)
#   SGL_EAGLE_OUTPUT_LEN   (default 256)
#   SGL_EAGLE_CONFIG       the target's shape (default llama-3-8b; configs/NAME.json)
#   SGL_EAGLE_ALGORITHM    EAGLE (default: the repeat head) or EAGLE3 (an EAGLE-3 head of zeros
#                          in the target's shape, SGL_EAGLE3_DRAFT_VOCAB ids, default 16384 as
#                          the trained SmolLM2 head's; its drafts never stand: give
#                          SGL_EAGLE_ACCEPT for its costs at accept lengths)
set -euo pipefail
root=${1:?usage: gpu_eagle_bench.sh ROOT}
out=${OUT:-/tmp}
head_dir=/tmp/sgl_eagle_heads
config=${SGL_EAGLE_CONFIG:-llama-3-8b}
algorithm=${SGL_EAGLE_ALGORITHM:-EAGLE}
case $algorithm in
  EAGLE)
    python3 "$(dirname "$0")/make_eagle_heads.py" --repeat-head-for "$root/configs/$config.json" \
      "$head_dir"
    head="$head_dir/$config-eagle-repeat" ;;
  EAGLE3)
    python3 "$(dirname "$0")/make_eagle_heads.py" --eagle3-head-for "$root/configs/$config.json" \
      --draft-vocab "${SGL_EAGLE3_DRAFT_VOCAB:-16384}" "$head_dir"
    head="$head_dir/$config-eagle3-zero" ;;
  *) echo "gpu_eagle_bench: SGL_EAGLE_ALGORITHM is EAGLE or EAGLE3, not $algorithm" >&2; exit 2 ;;
esac

# run NAME ARGS...: one sgl-bench offline run, summarised on one line.
run() {
  local name=$1
  shift
  "$root/gpu/sgl-bench" "$@" --output-file "$out/$name.json" >"$out/$name.log" 2>&1 ||
    { echo "$name FAILED"; tail -n 20 "$out/$name.log"; exit 1; }
  printf '%s: %s tok/s, accept length %s, %s decode steps, %s ms/step\n' "$name" \
    "$(grep -o 'Output token throughput (tok/s): *[0-9.]*' "$out/$name.log" | grep -o '[0-9.]*$')" \
    "$(grep -o 'Accept length: *[0-9.]*' "$out/$name.log" | grep -o '[0-9.]*$' || echo 1.00)" \
    "$(grep -o 'Decode steps: *[0-9]*' "$out/$name.log" | grep -o '[0-9]*$')" \
    "$(grep -o 'Time per decode step (ms): *[0-9.]*' "$out/$name.log" | grep -o '[0-9.]*$')"
}

for bs in ${SGL_EAGLE_BATCH_SIZES:-1 8}; do
  common=(offline --config "$root/configs/$config.json" --device cuda --num-prompts "$bs"
          --random-input-len 256 --random-output-len "${SGL_EAGLE_OUTPUT_LEN:-256}"
          --max-running-requests "$bs")
  run "eagle_bs${bs}_plain" "${common[@]}"
  steps=0
  for steps in ${SGL_EAGLE_STEPS:-1 3 5}; do
    spec=(--speculative-algorithm "$algorithm" --speculative-draft-model-path "$head"
          --speculative-num-steps "$steps" --speculative-eagle-topk 1)
    run "eagle_bs${bs}_steps${steps}" "${common[@]}" "${spec[@]}" --speculative-draft-policy fixed
    for accept in ${SGL_EAGLE_ACCEPT:-}; do
      [ "$accept" -le $((steps + 1)) ] || continue
      run "eagle_bs${bs}_steps${steps}_accept${accept}" "${common[@]}" "${spec[@]}" \
        --speculative-draft-policy fixed --speculative-bench-accept-length "$accept"
    done
  done
  # The default policy (adaptive) at the last K: natural accept length, then the largest forced.
  run "eagle_bs${bs}_steps${steps}_adaptive" "${common[@]}" "${spec[@]}"
  top=0
  for accept in ${SGL_EAGLE_ACCEPT:-}; do
    [ "$accept" -le $((steps + 1)) ] && [ "$accept" -gt "$top" ] && top=$accept
  done
  if [ "$top" -gt 0 ]; then
    run "eagle_bs${bs}_steps${steps}_adaptive_accept${top}" "${common[@]}" "${spec[@]}" \
      --speculative-bench-accept-length "$top"
  fi
done
