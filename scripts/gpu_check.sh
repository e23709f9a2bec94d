#!/usr/bin/env bash
# GPU check in two halves, because the GPU machine lacks our Debian libraries:
#   scripts/gpu_check.sh pack   (here)   build the CUDA preset; pack the cuda test binaries,
#                                        sgl-generate, sgl-bench, sgl-server, their non-system
#                                        .so files and the test data (with the Llama-3.1
#                                        tokenizer) into .carry/gpu.txz (binaries carry a static
#                                        OpenBLAS, hence the compression)
#   scripts/gpu_check.sh run    (device) unpack, run every cuda test, the GPU smoke checks and
#                                        the benchmarks (sgl-bench one-batch on a dummy
#                                        Llama-3-8B, SGL_BENCH_ARGS overrides its cases; bf16
#                                        against FP8 KV at 1 and 64 x 4096; on
#                                        dummy Qwen3-30B-A3B and Mixtral-8x7B; a batch of 64
#                                        with and without a JSON schema), print a
#                                        short table last; JSON and logs land in $OUT;
#                                        SGL_GPU_TESTS=0 skips the tests, SGL_GPU_BENCH=0 the
#                                        benchmarks (for a second call over the staged pack),
#                                        SGL_GPU_SKIP="a_test b_test" those test binaries;
#                                        SGL_GPU_SERVING=1 adds scripts/gpu_serving_bench.sh
#                                        (sgl-server + sgl-bench serving, dummy Llama-3-8B),
#                                        SGL_GPU_SERVING_MOE=1 the same on dummy Qwen3-30B-A3B
#                                        with the Qwen3 tokenizer;
#                                        SGL_GPU_PARITY_8B=1 adds the transformers parity of a
#                                        random Llama-3-8B (SGL_PARITY_8B_FLAGS: more engine flags
#                                        for sgl-generate, e.g. "--linear-backend hopper
#                                        --chunked-prefill-size 64");
#                                        SGL_GPU_EAGLE=1 adds scripts/gpu_eagle_bench.sh (EAGLE
#                                        on the dummy 8B with a repeat head, plain vs drafts);
#                                        SGL_GPU_MEMORY_SAVER=1 adds scripts/gpu_memory_saver.sh
#                                        (release / resume on the dummy 8B);
#                                        SGL_GPU_LOAD=1 adds scripts/gpu_load_bench.sh (start-up
#                                        from a real bf16 8B checkpoint and a Q8_0 GGUF);
#                                        SGL_GPU_SERVER_SUITES=1 (at pack and run) adds
#                                        scripts/gpu_server_suites.sh (the server's suites behind
#                                        --dp-size 2 on the GPU; pack downloads the wheels of the
#                                        clients they use, for SGL_GPU_PYTHON, default 3.12)
# Device calls, back to back (a machine stays warm 30 s between calls, /tmp with it): the pack
# and the working tree pass the device tool's 64 MiB a call, so its halves travel apart:
#   run(command="scripts/gpu_check.sh stage", carry=[".carry/gpu_part1"])
#   run(command="scripts/gpu_check.sh stage && scripts/gpu_check.sh run", carry=[".carry/gpu_part2"])
# (stage copies the carried halves to /tmp/sgl_gpu_parts; run joins them when .carry/gpu.txz is
# not carried.)
# SGL_GPU_TARGETS="a b" limits the build to those targets. SGL_GPU_PACK_ONLY="sgl-server
# cuda_kernels_test ..." packs those binaries alone into .carry/gpu_one/gpu.txz, which travels
# with the tree in one call:
#   run(command="SGL_GPU_PACK=.carry/gpu_one/gpu.txz scripts/gpu_check.sh run",
#       carry=[".carry/gpu_one"])
# Every binary links libnccl.so.2 (the NCCL communicator); it is not packed (218 MB): run finds
# the machine's (PyTorch's nvidia-nccl wheel, or a system copy) unless one is in gpu/lib.
set -euo pipefail
cd "$(dirname "$0")/.."
stage=build/gpu_stage
# NVLink multicast off, nccl_lib_dir.
# shellcheck source-path=SCRIPTDIR/.. source=scripts/gpu_env.sh
source scripts/gpu_env.sh

pack() {
  cmake --preset cuda >/dev/null
  cmake --build --preset cuda ${SGL_GPU_TARGETS:+--target $SGL_GPU_TARGETS}
  rm -rf "$stage" && mkdir -p "$stage/gpu/lib" "$stage/testdata"
  for t in $(ctest --test-dir build/cuda -L cuda -N -V 2>/dev/null |
             sed -n 's/.*Test command: \([^ ]*\).*/\1/p' | sort -u); do
    if [ -x "$t" ]; then cp "$t" "$stage/gpu/"; fi
  done
  cp build/cuda/src/app/sgl-generate build/cuda/src/app/sgl-bench build/cuda/src/app/sgl-server \
     "$stage/gpu/"
  if [ -n "${SGL_GPU_PACK_ONLY:-}" ]; then  # the named binaries alone
    for bin in "$stage"/gpu/*; do
      [ -f "$bin" ] || continue
      [[ " $SGL_GPU_PACK_ONLY " == *" $(basename "$bin") "* ]] || rm -f "$bin"
    done
  fi
  cp -r configs "$stage/"
  cp bench/structured_output_schema.json "$stage/configs/"
  strip "$stage"/gpu/* 2>/dev/null || true
  # Shared libraries that are neither CUDA's, glibc's nor the C++ runtime's travel along.
  for bin in "$stage"/gpu/*; do
    [ -f "$bin" ] || continue
    ldd "$bin" | awk '/=> \//{print $3}' |
      { grep -vE 'cuda|libc\.so|libm\.so|ld-linux|libpthread|libdl|librt|libstdc\+\+|libgcc_s' || true; } |
      xargs -r -I{} cp -L {} "$stage/gpu/lib/"
  done
  cp -r ../shared/testdata/models ../shared/testdata/golden "$stage/testdata/"
  # The tiny embedding models the build wrote (tests/engine: embedding tests).
  cp -r build/cuda/tests/engine/embedding_models "$stage/testdata/"
  # The tiny classification and reward models (tests/engine: classifier tests).
  cp -r build/cuda/tests/engine/classifier_models "$stage/testdata/"
  # The random EAGLE heads and their references (tests/speculative: EAGLE draft tests).
  cp -r build/cuda/tests/speculative/eagle_heads "$stage/testdata/"
  # The Llama-3.1 and Qwen3 tokenizers for the serving benchmarks (scripts/gpu_serving_bench.sh).
  mkdir -p "$stage/testdata/tokenizers"
  cp -r ../shared/testdata/tokenizers/llama3_1 ../shared/testdata/tokenizers/qwen3 \
    "$stage/testdata/tokenizers/"
  # The suites' Python clients, which the GPU machine may lack and cannot download.
  local wheels=()
  if [ "${SGL_GPU_SERVER_SUITES:-0}" = 1 ]; then
    pip download -q --only-binary=:all: --python-version "${SGL_GPU_PYTHON:-3.12}" \
      --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d "$stage/wheels" \
      pytest requests openai anthropic jsonschema
    wheels=(wheels)
  fi
  # xz: about half gzip's size (the device tool carries 64 MiB with the working tree).
  mkdir -p .carry && rm -f .carry/gpu.tgz &&
    tar cf - -C "$stage" gpu testdata configs "${wheels[@]}" | xz -T0 -6 >.carry/gpu.txz
  ls -la "$stage/gpu" && du -sh .carry/gpu.txz
  if [ -n "${SGL_GPU_PACK_ONLY:-}" ]; then  # small enough for one call
    rm -rf .carry/gpu_one && mkdir -p .carry/gpu_one && mv .carry/gpu.txz .carry/gpu_one/
    du -sh .carry/gpu_one
    return
  fi
  rm -rf .carry/gpu_part1 .carry/gpu_part2 && mkdir -p .carry/gpu_part1 .carry/gpu_part2
  # Two halves, each carried in a call of its own (stage).
  split -n 2 -d .carry/gpu.txz .carry/gpu_part1/gpu.txz.part
  mv .carry/gpu_part1/gpu.txz.part01 .carry/gpu_part2/
  du -sh .carry/gpu_part1 .carry/gpu_part2
}

# The carried halves (.carry/gpu_part1 or .carry/gpu_part2) gathered in /tmp/sgl_gpu_parts.
stage() {
  mkdir -p "$gpu_pack_parts"
  copy_carried "$gpu_pack_parts" .carry/gpu_part1 .carry/gpu_part2
  ls -la "$gpu_pack_parts"
}

run() {
  local root=/tmp/sgl_gpu
  unpack_gpu_pack "$root" "${SGL_GPU_PACK:-.carry/gpu.txz}"
  local log="${OUT:-/tmp}"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  declare -a rows=()
  local status=0
  run_tests() {
    for t in "$root"/gpu/*_test; do
      [ -x "$t" ] || continue
      local name
      name=$(basename "$t")
      if [[ " ${SGL_GPU_SKIP:-} " == *" $name "* ]]; then continue; fi
      local started=$SECONDS passed
      if "$t" >"$log/$name.log" 2>&1; then
        passed=$(grep -o 'PASSED  \] [0-9]* test' "$log/$name.log" | grep -o '[0-9]*')
        rows+=("$name PASS $passed ($((SECONDS - started)) s)")
      else
        status=1
        rows+=("$name FAIL ($((SECONDS - started)) s)")
        grep -E "Failure|FAILED|error" -A4 "$log/$name.log" | head -60 || true
      fi
    done
    # The golden continuation through sgl-generate on the GPU.
    local expected=", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it,"
    local got
    got=$("$root/gpu/sgl-generate" --device cuda --model-path "$SGL_TESTDATA_DIR/models/stories260K" \
          --prompt "Once upon a time" --max-new-tokens 48 --temperature 0 --ignore-eos 2>&1) || true
    if [ "$got" = "$expected" ]; then
      rows+=("sgl-generate-cuda PASS golden")
    else
      status=1
      rows+=("sgl-generate-cuda FAIL")
      echo "sgl-generate --device cuda printed: $got"
    fi
    # Without --device (auto, SGLang's default) the GPU is taken, and said so.
    got=$("$root/gpu/sgl-generate" --model-path "$SGL_TESTDATA_DIR/models/stories260K" \
          --log-level info --prompt "Once upon a time" --max-new-tokens 48 --temperature 0 \
          --ignore-eos 2>"$log/device_auto.err") || true
    if [ "$got" = "$expected" ] && grep -q "running on cuda" "$log/device_auto.err"; then
      rows+=("sgl-generate-device-auto PASS golden, on cuda")
    else
      status=1
      rows+=("sgl-generate-device-auto FAIL")
      echo "sgl-generate without --device printed: $got"
      head -20 "$log/device_auto.err"
    fi
  }
  # SGL_GPU_TESTS=0 skips the cuda tests and the golden checks (a later call of the same pack).
  if [ "${SGL_GPU_TESTS:-1}" = 1 ]; then
    run_tests
  fi
  run_benchmarks() {
    # The decode GEMMs alone (cuBLASLt vs. our small-batch kernel) against the copy floor.
    # shellcheck disable=SC2086  # the *_ARGS variables are word lists
    bench_step gemm gemm 0 "Llama-3-8B decode GEMMs, random bf16 weights" ${SGL_GEMM_ARGS:-}
    # One static batch on a dummy Llama-3-8B against the measured floors.
    # shellcheck disable=SC2086
    bench_step one-batch one_batch 20 "Llama-3-8B shape, dummy bf16 weights" \
      ${SGL_BENCH_ARGS:---batch-size 1,64,256 --input-len 128,1024 --output-len 64}
    # The FP8 KV cache against the bf16 one at long contexts (docs/performance.md's FP8 table).
    for kv in auto fp8_e4m3; do
      bench_step one-batch "one_batch_kv_$kv" 3 "Llama-3-8B shape, --kv-cache-dtype $kv" \
        --kv-cache-dtype "$kv" --batch-size 1,64 --input-len 4096 --output-len 16
    done
    # Mixture-of-Experts decode and prefill against the floors (SGL_MOE_BENCH_ARGS overrides the
    # Qwen3-30B-A3B cases). An H200's memory: Mixtral-8x7B at batch 1, Qwen3-30B-A3B at 256 x
    # 1024 (an H100's KV pool, beside 61 GB of weights, holds 64).
    local mib moe_batches=1,8,64
    mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -n 1 || echo 0)
    if [ "${mib:-0}" -ge 100000 ]; then moe_batches=1,8,64,256; fi
    # shellcheck disable=SC2086
    CONFIG=qwen3-30b-a3b bench_step one-batch one_batch_qwen3_moe 10 "Qwen3-30B-A3B shape, dummy bf16" \
      ${SGL_MOE_BENCH_ARGS:---batch-size $moe_batches --input-len 1024 --output-len 32}
    if [ "${mib:-0}" -ge 100000 ]; then
      CONFIG=mixtral-8x7b bench_step one-batch one_batch_mixtral 3 "Mixtral-8x7B shape, dummy bf16" \
        --batch-size 1 --input-len 1024 --output-len 32
    fi
    # The engine without HTTP: throughput and its CPU time per decode step at batch 64.
    # shellcheck disable=SC2086
    bench_step offline offline 11 "Llama-3-8B shape, dummy bf16 weights" --device cuda \
      ${SGL_OFFLINE_ARGS:---num-prompts 256 --random-input-len 1024 --random-output-len 256 --max-running-requests 64}
    # Structured output: a batch of 64 unconstrained, then the same batch under a JSON schema that
    # cannot end before the output length (issue #22: >= 95% of the unconstrained tokens/s).
    local so_args=(--device cuda --num-prompts 64 --random-input-len 32 --random-output-len 512
                   --max-running-requests 64)
    bench_step offline structured_plain 4 "batch 64, unconstrained" "${so_args[@]}"
    bench_step offline structured_schema 5 "batch 64, JSON schema" "${so_args[@]}" \
      --json-schema "$root/configs/structured_output_schema.json" \
      --tokenizer-path "$root/testdata/tokenizers/llama3_1"
    rows+=("structured-output-throughput $(python3 -c '
import json, sys
plain, schema = (json.load(open(f))["output_throughput"] for f in sys.argv[1:])
print(f"{100 * schema / plain:.1f}% of unconstrained")' "$log/structured_plain.json" \
      "$log/structured_schema.json" 2>/dev/null || echo "n/a")")
  }
  # Runs `sgl-bench SUB --config <CONFIG, default the 8B> ARGS... --output-file
  # $log/NAME.json`, adds its row and prints the last TAIL lines of its log (0: all) under TITLE.
  bench_step() {
    local sub=$1 name=$2 tail_lines=$3 title=$4
    shift 4
    if "$root/gpu/sgl-bench" "$sub" --config "$root/configs/${CONFIG:-llama-3-8b}.json" "$@" \
         --output-file "$log/$name.json" >"$log/$name.log" 2>&1; then
      rows+=("sgl-bench-$sub-$name PASS")
    else
      status=1
      rows+=("sgl-bench-$sub-$name FAIL")
    fi
    echo "==== sgl-bench $sub ($title)"
    if [ "$tail_lines" = 0 ]; then cat "$log/$name.log"; else tail -n "$tail_lines" "$log/$name.log"; fi
  }
  # SGL_GPU_BENCH=0 skips the standard benchmarks (correctness runs only).
  if [ "${SGL_GPU_BENCH:-1}" = 1 ]; then
    run_benchmarks
  fi
  # EAGLE on the dummy 8B (SGL_GPU_EAGLE=1; about a minute): plain vs 1 / 3 / 5 draft steps.
  if [ "${SGL_GPU_EAGLE:-0}" = 1 ]; then
    echo "==== EAGLE, dummy Llama-3-8B, the repeat head (scripts/gpu_eagle_bench.sh)"
    if OUT="$log" scripts/gpu_eagle_bench.sh "$root" | tee "$log/eagle_bench.txt"; then
      rows+=("eagle-bench PASS")
    else
      status=1
      rows+=("eagle-bench FAIL")
    fi
  fi
  # Full-scale parity with transformers (SGL_GPU_PARITY_8B=1; several minutes): a random
  # Llama-3-8B-shaped checkpoint made and decoded by transformers, then by sgl-generate.
  # shellcheck disable=SC2086  # SGL_PARITY_8B_FLAGS is a word list
  if [ "${SGL_GPU_PARITY_8B:-0}" = 1 ]; then
    local dir=/tmp/llama8b_random
    rm -rf "$dir" && mkdir -p "$dir"
    if python3 scripts/transformers_8b_parity.py make "$dir" --config "$root/configs/llama-3-8b.json" \
         >"$log/parity_8b.log" 2>&1 &&
       "$root/gpu/sgl-generate" --device cuda --model-path "$dir" --batch-file "$dir/batch.jsonl" \
         ${SGL_PARITY_8B_FLAGS:-} \
         >"$log/parity_8b_ours.jsonl" 2>>"$log/parity_8b.log" &&
       python3 scripts/transformers_8b_parity.py compare "$dir" "$log/parity_8b_ours.jsonl" \
         >>"$log/parity_8b.log" 2>&1; then
      rows+=("transformers-8b-parity PASS")
    else
      status=1
      rows+=("transformers-8b-parity FAIL")
    fi
    tail -n 12 "$log/parity_8b.log"
    cp "$dir/reference.json" "$log/parity_8b_reference.json" 2>/dev/null || true
  fi
  # Serving benchmarks (about 2 minutes each): sgl-server with dummy weights, sgl-bench serving
  # with 1000 ShareGPT-like requests at concurrency 256; the result block is printed here, JSON
  # and logs in $OUT/NAME. SGL_GPU_SERVING=1: Llama-3-8B with the Llama-3.1 tokenizer;
  # SGL_GPU_SERVING_MOE=1: Qwen3-30B-A3B with the Qwen3 tokenizer.
  serving_step() {
    local name=$1
    shift
    if env "$@" OUT="$log/$name" scripts/gpu_serving_bench.sh "$root" >"$log/$name.log" 2>&1; then
      rows+=("sgl-bench-$name $(tail -n 1 "$log/$name.log" | sed 's/^RESULT: //')")
    else
      status=1
      rows+=("sgl-bench-$name $({ grep '^RESULT: ' "$log/$name.log" || echo FAIL; } |
        sed 's/^RESULT: //')")
    fi
    if grep -q '^==== server log' "$log/$name.log"; then
      sed -n '/^==== server log/,$p' "$log/$name.log"
    else
      tail -n 30 "$log/$name.log"
    fi
  }
  if [ "${SGL_GPU_SERVING:-0}" = 1 ]; then serving_step serving SGL_GPU_SERVING=1; fi
  if [ "${SGL_GPU_SERVING_MOE:-0}" = 1 ]; then
    serving_step serving_qwen3_moe SGL_SERVING_CONFIG="$root/configs/qwen3-30b-a3b.json" \
      SGL_SERVING_TOKENIZER="$root/testdata/tokenizers/qwen3"
  fi
  # --enable-memory-saver on the dummy 8B (SGL_GPU_MEMORY_SAVER=1; about a minute): the GPU
  # memory a release gives back and a resume takes, and the outputs across them.
  if [ "${SGL_GPU_MEMORY_SAVER:-0}" = 1 ]; then
    if OUT="$log" scripts/gpu_memory_saver.sh "$root" >"$log/memory_saver.log" 2>&1; then
      rows+=("memory-saver PASS")
    else
      status=1
      rows+=("memory-saver FAIL")
    fi
    cat "$log/memory_saver.log"
  fi
  # Start-up from real files (SGL_GPU_LOAD=1; about 2 minutes): a transformers-written bf16 8B
  # checkpoint to a healthy sgl-server, and a Q8_0 GGUF of the same shape through sgl-generate.
  if [ "${SGL_GPU_LOAD:-0}" = 1 ]; then
    if OUT="$log" scripts/gpu_load_bench.sh "$root" >"$log/load_bench.log" 2>&1; then
      rows+=("load-bench PASS")
    else
      status=1
      rows+=("load-bench FAIL")
    fi
    grep -E "RESULT|loaded|wrote|ready|error" "$log/load_bench.log" || tail -n 30 "$log/load_bench.log"
  fi
  # The server's suites behind --dp-size 2 on this GPU (SGL_GPU_SERVER_SUITES=1; about 2
  # minutes).
  if [ "${SGL_GPU_SERVER_SUITES:-0}" = 1 ]; then
    if OUT="$log" scripts/gpu_server_suites.sh "$root" >"$log/server_suites.txt" 2>&1; then
      rows+=("server-suites-dp2 $(tail -n 1 "$log/server_suites.txt" | sed 's/^RESULT: //')")
    else
      status=1
      rows+=("server-suites-dp2 FAIL: $(tail -n 1 "$log/server_suites.txt" | sed 's/^RESULT: //')")
    fi
    cat "$log/server_suites.txt"
  fi
  echo "==== gpu_check summary"
  printf '%s\n' "${rows[@]}"
  return $status
}

case "${1:-}" in
  pack) pack ;;
  stage) stage ;;
  run) run ;;
  *) echo "usage: scripts/gpu_check.sh pack|stage|run" >&2; exit 2 ;;
esac
