#!/usr/bin/env bash
# Issue #23 on the GPU machine: train an EAGLE-3 head for SmolLM2-135M-Instruct
# (scripts/train_eagle3_head.py, its continuations from the pack's sgl-generate, ten per
# training prompt over 3500 prompts, 315 s of training; H200: about 7.5 minutes in all), then
# sgl-bench offline at batch 1 on the GGUF, plain vs EAGLE3 chains (num_steps 3, 4 and 5; 5 also
# under the adaptive draft policy), over the head's held-out prompts (eval_prompts.jsonl: greedy,
# EOS ignored, 256 new tokens). Prints tok/s, the speed-up, the accept length measured beside
# the one the script simulated and whether the tokens equal plain decoding's. In $OUT (the device
# tool brings back 8 files of up to 16 MiB): summary.txt, logs.tar.gz (training and bench logs)
# and head/ (a trained head: its config, prompts, report and model.safetensors in 15 MB parts),
# which `keep` saves here for later runs without training.
#
#   scripts/gpu_eagle3_train.sh pack   (here)   the GGUF in two halves under .carry/eagle3a (with
#                                               the gguf wheel) and .carry/eagle3b: the device
#                                               tool carries 64 MiB a call; the GGUF is 98 MB;
#                                               and sgl-bench + sgl-generate from
#                                               scripts/gpu_check.sh pack's stage (10 MB) in
#                                               .carry/eagle3pack
#   scripts/gpu_eagle3_train.sh keep DIR (here) join a run's head/ (DIR: the call's files_at) into
#                                               .carry/eagle3head, which `stage` then copies too
#   scripts/gpu_eagle3_train.sh stage  (device) copy the carried .carry/eagle3* to /tmp/sgl_eagle3
#   scripts/gpu_eagle3_train.sh run    (device) join the GGUF, install gguf, train (or take the
#                                               staged head), bench
#
# Device calls, back to back (a machine stays warm 30 s between calls, /tmp with it):
#   run(command="scripts/gpu_eagle3_train.sh stage", carry=[".carry/eagle3a"])
#   run(command="scripts/gpu_eagle3_train.sh stage", carry=[".carry/eagle3b"])
#   run(command="scripts/gpu_eagle3_train.sh run", carry=[".carry/eagle3pack"])
# A kept head (28 MB) is one more staging call, carry=[".carry/eagle3head"], before `run` with
# SGL_EAGLE3_HEAD=/tmp/sgl_eagle3/head (bench it) or SGL_EAGLE3_INIT=/tmp/sgl_eagle3/head (train
# it on).
# Variables:
#   SGL_BENCH       the CUDA sgl-bench; default: unpacked from SGL_GPU_PACK
#                   (.carry/eagle3pack/gpu.txz; SGL_GPU_TARGETS="sgl-bench sgl-generate"
#                   scripts/gpu_check.sh pack is enough to make it)
#   SGL_GGUF        the GGUF, if it is on the machine already (skips joining the halves)
#   SGL_EAGLE3_HEAD bench this head instead of training one (a kept head: /tmp/sgl_eagle3/head)
#   SGL_EAGLE3_INIT train on from this head (a kept head: /tmp/sgl_eagle3/head) over new
#                   samples of the same prompts (--sample-seed SGL_EAGLE3_SAMPLE_SEED, default 1)
#   SGL_EAGLE3_TRAIN_ARGS  more flags for the training script (e.g. --train-seconds 240)
#   SGL_DEVICE      the bench's --device (default cuda; cpu checks this script here)
#   SGL_EAGLE3_MAX_RUNNING  the bench's --max-running-requests (default 1: batch 1)
#   SGL_EAGLE3_RUNS the runs, in order (default "plain eagle3_steps3 eagle3_steps4 eagle3_steps5
#                   eagle3_steps5_adaptive"; eagle3_stepsK[_adaptive] for any K; names may repeat)
set -euo pipefail
cd "$(dirname "$0")/.."
readonly gguf_name=SmolLM2-135M-Instruct.Q4_1.gguf
readonly gguf_sha256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
readonly stage_dir=/tmp/sgl_eagle3

pack() {
  local gguf
  gguf=$(bash scripts/fetch_default_model.sh | tail -n 1)
  rm -rf .carry/eagle3a .carry/eagle3b && mkdir -p .carry/eagle3a .carry/eagle3b
  split -b 50M -d "$gguf" ".carry/eagle3a/$gguf_name.part"
  mv ".carry/eagle3a/$gguf_name.part01" .carry/eagle3b/
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d .carry/eagle3a gguf
  # The two binaries the run needs, from scripts/gpu_check.sh pack's stage.
  local stage=build/gpu_stage
  if [ ! -x "$stage/gpu/sgl-bench" ] || [ ! -x "$stage/gpu/sgl-generate" ]; then
    echo "gpu_eagle3_train: run scripts/gpu_check.sh pack first"
    exit 1
  fi
  rm -rf .carry/eagle3pack && mkdir -p .carry/eagle3pack
  tar cf - -C "$stage" gpu/sgl-bench gpu/sgl-generate gpu/lib configs |
    xz -T0 -6 >.carry/eagle3pack/gpu.txz
  du -sh .carry/eagle3a .carry/eagle3b .carry/eagle3pack
}

# A run's head/ as the device tool brought it back (DIR/head) joined into .carry/eagle3head.
keep() {
  local from=${1:?usage: gpu_eagle3_train.sh keep DIR}/head
  rm -rf .carry/eagle3head && mkdir -p .carry/eagle3head
  cp "$from"/config.json "$from"/eval_prompts.jsonl "$from"/train_report.json .carry/eagle3head/
  cat "$from"/model.safetensors.part* >.carry/eagle3head/model.safetensors
  du -sh .carry/eagle3head
}

stage() {
  # shellcheck source-path=SCRIPTDIR/.. source=scripts/gpu_env.sh
  source scripts/gpu_env.sh
  mkdir -p "$stage_dir"
  copy_carried "$stage_dir" .carry/eagle3a .carry/eagle3b
  copy_carried "$stage_dir/head" .carry/eagle3head
  ls -la "$stage_dir"
}

run() {
  local out=${OUT:-/tmp/sgl_eagle3_out} py=python3
  local logs=$stage_dir/logs
  mkdir -p "$out" "$stage_dir" && rm -rf "$out/summary.txt" "$logs" && mkdir -p "$logs"
  [ -x /opt/torch/.venv/bin/python3 ] && py=/opt/torch/.venv/bin/python3
  # NVLink multicast off; the pack's libraries (unpack_gpu_pack).
  # shellcheck source-path=SCRIPTDIR/.. source=scripts/gpu_env.sh
  source scripts/gpu_env.sh
  local bench=${SGL_BENCH:-}
  if [ -z "$bench" ]; then
    unpack_gpu_pack /tmp/sgl_gpu "${SGL_GPU_PACK:-.carry/eagle3pack/gpu.txz}"
    bench=/tmp/sgl_gpu/gpu/sgl-bench
  fi
  local gguf=${SGL_GGUF:-$stage_dir/$gguf_name}
  if [ ! -f "$gguf" ]; then
    cat "$stage_dir/$gguf_name".part* >"$gguf"
  fi
  [ "$(sha256sum "$gguf" | cut -d' ' -f1)" = "$gguf_sha256" ] ||
    { echo "gpu_eagle3_train: $gguf is not the pinned SmolLM2 GGUF (stage first?)"; exit 1; }
  if ! "$py" -c 'import gguf' 2>/dev/null; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$stage_dir"/gguf-*.whl
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  fi
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true

  local head=${SGL_EAGLE3_HEAD:-$stage_dir/head}
  if [ -n "${SGL_EAGLE3_HEAD:-}" ] && [ -n "${SGL_EAGLE3_INIT:-}" ]; then
    echo "gpu_eagle3_train: SGL_EAGLE3_HEAD benches a head, SGL_EAGLE3_INIT trains one: not both"
    exit 2
  fi
  if [ -z "${SGL_EAGLE3_HEAD:-}" ]; then
    # Continuations from our engine (the pack's sgl-generate), ten for each of 3500 training
    # prompts (35k, about 5 passes over them), and 315 s of training at 32 sequences a step:
    # accept length 3.17 with four drafts, against 3.04-3.05 from six for each of 2560 prompts
    # and 340 s (about 12 passes), and 2.94 from 400 s at 16 a step over four per prompt
    # (docs/perf-log/2026-12-02-eagle3-data.md). That head trained on over ten new samples of
    # each prompt (SGL_EAGLE3_INIT, SGL_EAGLE3_TRAIN_ARGS="--train-seconds 370 --lr 1e-3"): 3.36
    # (2026-12-02-eagle3-more-data.md).
    local gen=(--num-prompts 3500 --train-seconds 315 --train-steps 40000 --batch-size 32
               --lr 1.5e-3)
    [ -x "$(dirname "$bench")/sgl-generate" ] &&
      gen+=(--generator "$(dirname "$bench")/sgl-generate" --samples-per-prompt 10)
    if [ -n "${SGL_EAGLE3_INIT:-}" ]; then
      # A copy: the new head is written where the kept one may be staged.
      rm -rf "$stage_dir/init_head" && cp -r "$SGL_EAGLE3_INIT" "$stage_dir/init_head"
      gen+=(--init-head "$stage_dir/init_head" --sample-seed "${SGL_EAGLE3_SAMPLE_SEED:-1}")
    fi
    # shellcheck disable=SC2086  # word-split the extra flags
    PYTHONUNBUFFERED=1 "$py" scripts/train_eagle3_head.py --target "$gguf" --out "$head" \
      --device cuda "${gen[@]}" ${SGL_EAGLE3_TRAIN_ARGS:-} 2>&1 | grep -v 'it/s\]' |
      tee "$logs/train.log"
    # The head back to the build machine (`keep`), in parts under the device tool's file size.
    mkdir -p "$out/head"
    cp "$head"/config.json "$head"/eval_prompts.jsonl "$head"/train_report.json "$out/head/"
    split -b 15M -d "$head/model.safetensors" "$out/head/model.safetensors.part"
  fi

  local common=(offline --model-path "$gguf" --device "${SGL_DEVICE:-cuda}" --prompt-file "$head/eval_prompts.jsonl"
                --max-running-requests "${SGL_EAGLE3_MAX_RUNNING:-1}")
  # Plain, chains of 3 and 5 drafts every step (--speculative-draft-policy fixed: the accept
  # length the script simulated), and 5 under the server's default policy (adaptive).
  local name spec steps policy plain_tps='' plain_digest=''
  for name in ${SGL_EAGLE3_RUNS:-plain eagle3_steps3 eagle3_steps4 eagle3_steps5 eagle3_steps5_adaptive}; do
    spec=()
    steps=0
    if [ "$name" != plain ]; then
      steps=${name#eagle3_steps}
      steps=${steps%_adaptive}
      policy=fixed
      [ "$name" = "${name%_adaptive}" ] || policy=adaptive
      spec=(--speculative-algorithm EAGLE3 --speculative-draft-model-path "$head"
            --speculative-num-steps "$steps" --speculative-eagle-topk 1
            --speculative-draft-policy "$policy")
    fi
    local log=$logs/$name.log
    "$bench" "${common[@]}" "${spec[@]}" --output-file "$stage_dir/$name.json" >"$log" 2>&1 ||
      { echo "$name FAILED"; tail -n 20 "$log"; tar czf "$out/logs.tar.gz" -C "$stage_dir" logs; exit 1; }
    local tps accept digest same='' predicted=''
    tps=$(grep -o 'Output token throughput (tok/s): *[0-9.]*' "$log" | grep -o '[0-9.]*$')
    accept=$(grep -o 'Accept length: *[0-9.]*' "$log" | grep -o '[0-9.]*$' || echo 1.00)
    digest=$(sed -n 's/^Output digest: *//p' "$log")
    if [ "$steps" -eq 0 ]; then
      plain_tps=$tps
      plain_digest=$digest
    elif [ "$policy" = fixed ]; then
      predicted=$("$py" -c "import json,sys; r=json.load(open(sys.argv[1]));
print('%.2f' % r['simulated_accept_length']['num_steps_$steps']['accept_length'])" \
        "$head/train_report.json" 2>/dev/null || echo '?')
    fi
    # Greedy drafts leave the output plain decoding's (the digest of every request's tokens).
    # Only at batch 1: plain bf16 decoding's own tokens differed between runs of larger batches
    # (2026-12-02-eagle3-more-data.md).
    if [ "$steps" -ne 0 ] && [ -n "$plain_digest" ] && [ "${SGL_EAGLE3_MAX_RUNNING:-1}" = 1 ]; then
      same=", tokens equal plain's: no"
      [ "$digest" = "$plain_digest" ] && same=", tokens equal plain's: yes"
    fi
    printf '%-15s %8s tok/s  x%s  accept length %s%s%s\n' "$name" "$tps" \
      "$("$py" -c "print('%.2f' % ($tps / $plain_tps))")" "$accept" \
      "${predicted:+ (simulated $predicted)}" "$same" | tee -a "$out/summary.txt"
  done
  tar czf "$out/logs.tar.gz" -C "$stage_dir" logs
}

case "${1:-}" in
  pack) pack ;;
  keep) keep "${2:-}" ;;
  stage) stage ;;
  run) run ;;
  *) echo "usage: $0 pack|keep DIR|stage|run" >&2; exit 2 ;;
esac
