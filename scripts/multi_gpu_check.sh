#!/usr/bin/env bash
# Multi-GPU check (issue #25: tensor parallelism over NCCL on 2 to 8 GPUs), in two halves like
# scripts/gpu_check.sh, because the GPU machine lacks our Debian libraries:
#   scripts/multi_gpu_check.sh pack  (here)   scripts/gpu_check.sh pack: the CUDA preset built,
#                                             the cuda test binaries, sgl-bench / sgl-generate /
#                                             sgl-server, their non-system .so files, the test
#                                             data and configs/ into .carry/gpu.txz
#                                             (SGL_GPU_TARGETS limits the build, e.g. to
#                                             "nccl_communicator_cuda_test
#                                             tensor_parallel_cuda_test sgl-bench")
#   scripts/multi_gpu_check.sh run   (device) on however many GPUs the machine has:
#     1. the multi-GPU cuda tests: nccl_communicator_cuda_test (collectives at 1, 2, 4, 8
#        ranks), peer_all_reduce_cuda_test (the custom all-reduce at 2, 4, 8 ranks, bit-exact)
#        and tensor_parallel_cuda_test (golden models at tp 2 and 4 against tp 1, f32
#        and bf16; the engine at tp 2); a case needing more GPUs than exist skips, saying so;
#        SGL_MULTI_GPU_TP_FILTER, a --gtest_filter for tensor_parallel_cuda_test alone (e.g.
#        '*tp4*' on four GPUs when the tp 2 cases ran on two: 43 s instead of over 100);
#        SGL_MULTI_GPU_ALL_TESTS=1 runs every other packed cuda test too
#     2. the all-reduce latency of our NCCL communicator at 16 KB and 256 KB (sgl-bench
#        allreduce: eager calls, as nccl-tests times NCCL, and graph replays, as the decode
#        graphs pay), NCCL's and the custom all-reduce's, at 2, 4 and 8 GPUs
#     3. sgl-bench one-batch on configs/llama-3-70b.json (dummy bf16 weights) at --tp-size 4 and
#        8, batch 1 and 64, input 1024, with the custom all-reduce and again NCCL only
#        (SGL_MULTI_GPU_BENCH_ARGS overrides those flags; each run is cut at
#        SGL_MULTI_GPU_BENCH_TIMEOUT seconds, 300, and fails)
#     4. sgl-bench one-batch on the Qwen3-30B-A3B and Mixtral-8x7B shapes at --tp-size N
#        --ep-size N (whole experts per GPU; Qwen3 at --tp-size N alone too) for N = 2 and 4
#     5. serving across nodes: scripts/gpu_multi_node_check.sh (two sgl-server processes at
#        --nnodes 2 answer what one process answers)
#     6. serving the 70B shape at --tp-size 4 (scripts/gpu_serving_bench.sh: 1000 ShareGPT-like
#        requests at concurrency 256; needs 4 GPUs and the pack's sgl-server and tokenizer)
#   SGL_MULTI_GPU_STEPS picks the steps (default "1 2 3 4 5 6"): the whole run outlasts one
#   10-minute device call on 4 GPUs (tensor_parallel_cuda_test alone took over 100 s there), so a
#   session splits it over calls, e.g. "1 2", then "3", then "4 5", then "6".
#   On one GPU (a dry run) it runs what one GPU can (the one-rank tests, the one-rank
#   all-reduce, one-batch on the Llama-3-8B shape through --tp-size 1) and lists what it
#   skipped and why. JSON and logs land in $OUT; a summary table is printed last.
# Device calls: the pack's halves as scripts/gpu_check.sh's header says (its `stage`), then
# run(command="scripts/gpu_check.sh stage && scripts/multi_gpu_check.sh run",
#     carry=[".carry/gpu_part2"], kind=...).
#
# NVLink multicast stays off in every process (the machines' GPUs are shared, and a program that
# uses it can put them out of service): NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
# NVSHMEM_DISABLE_NVLS=1 are exported before anything runs, and nothing here calls
# cuMulticastCreate.
#
# libnccl.so.2 (218 MB) is not packed: the binaries find it beside them in gpu/lib if it is
# there, else in the machine's NCCL (PyTorch's nvidia-nccl wheel or a system copy).
set -euo pipefail
cd "$(dirname "$0")/.."
# NVLink multicast off, nccl_lib_dir.
# shellcheck source-path=SCRIPTDIR/.. source=scripts/gpu_env.sh
source scripts/gpu_env.sh

pack() {
  scripts/gpu_check.sh pack
}

run() {
  local root=/tmp/sgl_multi_gpu
  unpack_gpu_pack "$root" "${SGL_GPU_PACK:-.carry/gpu.txz}"
  local log="${OUT:-/tmp}"
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader || true
  local gpus
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  echo "GPUs: $gpus; NCCL from ${nccl_dir:-nowhere found}; NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"
  nvidia-smi topo -m 2>/dev/null | head -n $((gpus + 2)) || true
  declare -a rows=() skipped=()
  local status=0
  step() { case " ${SGL_MULTI_GPU_STEPS:-1 2 3 4 5 6} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

  # 1. The multi-GPU tests (they skip cases that need more GPUs, saying so).
  local tests=()
  if step 1; then tests=(nccl_communicator_cuda_test peer_all_reduce_cuda_test tensor_parallel_cuda_test); fi
  if step 1 && [ "${SGL_MULTI_GPU_ALL_TESTS:-0}" = 1 ]; then
    for t in "$root"/gpu/*_test; do
      case " ${tests[*]} " in *" $(basename "$t") "*) ;; *) tests+=("$(basename "$t")") ;; esac
    done
  fi
  for name in "${tests[@]}"; do
    local t="$root/gpu/$name"
    if [ ! -x "$t" ]; then
      status=1
      rows+=("$name MISSING (not packed)")
      continue
    fi
    local filter=()
    if [ "$name" = tensor_parallel_cuda_test ] && [ -n "${SGL_MULTI_GPU_TP_FILTER:-}" ]; then
      filter=("--gtest_filter=$SGL_MULTI_GPU_TP_FILTER")
    fi
    if "$t" "${filter[@]}" >"$log/$name.log" 2>&1; then
      local passed skips
      passed=$(grep -o 'PASSED  \] [0-9]* test' "$log/$name.log" | grep -o '[0-9]*' || echo 0)
      skips=$(grep -o 'SKIPPED \] [0-9]* test' "$log/$name.log" | grep -o '[0-9]*' || echo 0)
      rows+=("$name PASS $passed, skipped $skips")
      if [ "$skips" != 0 ]; then
        skipped+=("$name: $skips cases ($(grep -m1 -o 'needs [0-9]* GPUs, found [0-9]*' \
          "$log/$name.log" || echo 'see its log'), ...)")
      fi
    else
      status=1
      rows+=("$name FAIL")
      grep -E "Failure|FAILED|error" -A4 "$log/$name.log" | head -60 || true
    fi
    grep -E "logprobs within" "$log/$name.log" || true
  done

  # 2. The all-reduce latency (our communicator = NCCL; eager = nccl-tests' way).
  local n
  for n in 1 2 4 8; do
    step 2 || continue
    if [ "$n" -gt "$gpus" ]; then
      skipped+=("sgl-bench allreduce --tp-size $n: needs $n GPUs, found $gpus")
      continue
    fi
    [ "$n" = 1 ] && [ "$gpus" -gt 1 ] && continue  # one rank only as the dry run
    if "$root/gpu/sgl-bench" allreduce --tp-size "$n" --sizes 16K,256K --iters 2000 \
         --output-file "$log/allreduce_tp$n.json" >"$log/allreduce_tp$n.log" 2>&1; then
      rows+=("sgl-bench-allreduce-tp$n PASS $(awk '$1 ~ /^(16|256)$/ {printf "%s KB NCCL eager %s graph %s, custom eager %s graph %s us; ", $1, $3, $4, $6, $7}' "$log/allreduce_tp$n.log")")
    else
      status=1
      rows+=("sgl-bench-allreduce-tp$n FAIL")
    fi
    echo "==== sgl-bench allreduce --tp-size $n"
    cat "$log/allreduce_tp$n.log"
  done

  # 3. One static batch on the Llama-3-70B shape at tp 4 and 8 (one GPU: the 8B shape at tp 1).
  # shellcheck disable=SC2206  # a word list
  local bench_args=(${SGL_MULTI_GPU_BENCH_ARGS:---batch-size 1,64 --input-len 1024 --output-len 64})
  # one_batch CONFIG TP NAME [EP [FLAGS...]]
  one_batch() {
    local config=$1 tp=$2 name=$3 ep=${4:-1}
    shift $(($# < 4 ? $# : 4))
    # A time limit: a run that hangs (one did at exit, 2026-11-30) must not take the call.
    if timeout -k 30 "${SGL_MULTI_GPU_BENCH_TIMEOUT:-300}" "$root/gpu/sgl-bench" one-batch \
         --config "$root/configs/$config.json" --tp-size "$tp" --ep-size "$ep" "${bench_args[@]}" \
         "$@" --output-file "$log/$name.json" >"$log/$name.log" 2>&1; then
      rows+=("sgl-bench-one-batch-$name PASS")
    else
      status=1
      rows+=("sgl-bench-one-batch-$name FAIL")
    fi
    echo "==== sgl-bench one-batch ($config, --tp-size $tp --ep-size $ep $*, dummy bf16)"
    tail -n 8 "$log/$name.log"
  }
  for n in 4 8; do
    step 3 || continue
    if [ "$n" -gt "$gpus" ]; then
      skipped+=("sgl-bench one-batch llama-3-70b --tp-size $n: needs $n GPUs, found $gpus")
    else
      one_batch llama-3-70b "$n" "llama70b_tp$n"
      # The same with every all-reduce through NCCL: what the custom all-reduce gains.
      one_batch llama-3-70b "$n" "llama70b_tp${n}_nccl" 1 --disable-custom-all-reduce
    fi
  done
  if step 3 && [ "$gpus" -lt 4 ]; then one_batch llama-3-8b 1 llama8b_tp1_dry_run; fi

  # 4. MoE shapes with whole experts per GPU (--ep-size = --tp-size).
  for n in 2 4; do
    step 4 || continue
    if [ "$n" -gt "$gpus" ]; then
      skipped+=("sgl-bench one-batch qwen3-30b-a3b / mixtral-8x7b --tp-size $n --ep-size $n: needs $n GPUs, found $gpus")
      continue
    fi
    one_batch qwen3-30b-a3b "$n" "qwen3_30b_a3b_tp$n"  # every expert's rows split, to compare
    one_batch qwen3-30b-a3b "$n" "qwen3_30b_a3b_ep$n" "$n"
    one_batch mixtral-8x7b "$n" "mixtral_8x7b_ep$n" "$n"
  done

  # 5. Serving across nodes: two sgl-server processes, one GPU each.
  if step 5 && [ "$gpus" -ge 2 ]; then
    echo "==== serving across nodes (--nnodes 2, two processes)"
    if OUT="$log" scripts/gpu_multi_node_check.sh "$root"; then
      rows+=("sgl-server-nnodes2 PASS")
    else
      status=1
      rows+=("sgl-server-nnodes2 FAIL")
    fi
  elif step 5; then
    skipped+=("sgl-server --nnodes 2: needs 2 GPUs, found $gpus")
  fi

  # 6. Serving the 70B shape at --tp-size 4: 1000 ShareGPT-like requests at concurrency 256
  # (scripts/gpu_serving_bench.sh; the Llama-3.1 tokenizer).
  if step 6 && [ "$gpus" -ge 4 ]; then
    echo "==== serving, Llama-3-70B shape, --tp-size 4"
    if OUT="$log/serving_70b_tp4" SGL_SERVING_CONFIG="$root/configs/llama-3-70b.json" \
         SGL_SERVING_SERVER_ARGS="--tp-size 4" scripts/gpu_serving_bench.sh "$root" \
         >"$log/serving_70b_tp4.log" 2>&1; then
      rows+=("sgl-bench-serving-70b-tp4 $(tail -n 1 "$log/serving_70b_tp4.log" | sed 's/^RESULT: //')")
    else
      status=1
      rows+=("sgl-bench-serving-70b-tp4 FAIL")
    fi
    tail -n 32 "$log/serving_70b_tp4.log"
  elif step 6; then
    skipped+=("serving the 70B shape at --tp-size 4: needs 4 GPUs, found $gpus")
  fi

  echo "==== multi_gpu_check summary ($gpus GPU(s))"
  printf '%s\n' "${rows[@]}"
  if [ "${#skipped[@]}" -gt 0 ]; then
    echo "==== skipped"
    printf '%s\n' "${skipped[@]}"
  fi
  return $status
}

case "${1:-}" in
  pack) pack ;;
  run) run ;;
  *) echo "usage: scripts/multi_gpu_check.sh pack|run" >&2; exit 2 ;;
esac
