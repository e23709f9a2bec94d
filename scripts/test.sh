#!/usr/bin/env bash
# The test command: format check, CPU build, ASan/UBSan build, every test once (most under ASan),
# TSan build + the threaded layers' tests, fuzz targets over their corpora, CUDA compile.
# Usage: scripts/test.sh [--quick]   (--quick: CPU build + every test on it only)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=${1:-}
# Each stage's start with the minutes spent so far, so a slow CI run shows where its time went.
stage() { echo "== $* [$((SECONDS / 60)) min]"; }

# ccache when installed (scripts/install_deps.sh installs it; CI machines may keep its cache).
# CMake reads these when it first configures a build folder. Paths below the checkout are hashed
# relative to it and the working directory not at all, so a clone in another folder (CI's) hits
# what an earlier build of the same sources cached.
if command -v ccache >/dev/null 2>&1; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache \
    CMAKE_CUDA_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-20G}"
fi

if [ "$quick" != "--quick" ]; then
  stage "clang-format check"
  git ls-files 'src/*.h' 'src/*.cpp' 'src/*.cu' 'src/*.cuh' 'tests/*.h' 'tests/*.cpp' 'bench/*.cpp' |
    xargs clang-format --dry-run --Werror
fi

# Every test runs once in the full run: under ASan + UBSan (the same -O2 code as the release
# build, plus the memory checks; line tables only, -g1: the reports' stack traces at under half
# the object size of -g, which every CI run links), except these, which run in the CPU stage:
# suites whose C++ path another suite under ASan already takes, and whose time goes to Python or
# to starting clients: the JSON Schema suites through the server and through jsonschema (the
# grammar_schema_suite gtests walk the same schemas in C++), the tokenizer comparison against
# Hugging Face (the fuzz stage drives the tokenizer), the real-client and launch-flag suites,
# the default-model suite (the stories260K suites run the same server code), and the suites'
# second run behind two replicas (test_data_parallel takes the replicas' code under ASan); and
# the allocation-failure test, which caps the address space ASan needs terabytes of.
# `--quick` runs them all in the CPU stage.
release_only="^(server_test_(schema_suite|sglang_bench|browser_cors|launch_flags|default_model)|server_dp2_.*|grammar_test_schema_suite_jsonschema|tokenizer_fuzz_vs_hf|ModelLoadSafetyTest.AllocationFailureIsAnErrorNotAnAbort)$"

stage "CPU build and tests"
cmake --preset cpu >/dev/null
cmake --build --preset cpu
if [ "$quick" = "--quick" ]; then
  ctest --preset cpu
else
  ctest --preset cpu -R "$release_only"
fi

if [ "$quick" != "--quick" ]; then
  stage "ASan + UBSan build and tests"
  cmake --preset asan >/dev/null
  cmake --build --preset asan
  ASAN_OPTIONS=detect_leaks=1 ctest --preset asan -E "$release_only"

  # The layers with threads of their own (engine loop, overlap worker, HTTP server), and the
  # sgl-server binary the server e2e suites start, under ThreadSanitizer; any report fails.
  # NOTE: OMP_NUM_THREADS=1 because GCC's OpenMP runtime (libgomp, and OpenBLAS's OpenMP flavour
  # over it) is not built with TSan: the barriers that order a parallel region's shared data are
  # invisible to it, so every parallel region is reported (engine_test: 53 reports, all in
  # OpenMP-outlined loops). The threads this step checks are ours, not OpenMP's.
  # The default-model suite is left out: it runs the same server code as the stories260K suites,
  # and a 135M model's math under TSan takes 7-8 minutes here; so is the launch-flags suite
  # (command-line parsing at start, no threads of interest), and so are the real-client suites
  # (SGLang's bench client, headless Chromium): they send the server the requests the e2e
  # suites already send it here (concurrent streams on each route, CORS preflights), and their
  # time goes to starting the clients. The server suites run two at a time, but for those with
  # deadlines of about a second (HTTP read timeouts, the watchdog), which run alone
  # (tests/server/CMakeLists.txt: RUN_SERIAL under TSan). The JSON Schema suite (320
  # schemas, grammar correctness) is left out too: its requests take the structured-output
  # suite's path, and under TSan it outlasts its 10-minute limit on CI's two cores. The NGRAM
  # suite too: the engine's NGRAM tests below take its paths. So is the suites' second run
  # behind two replicas: test_data_parallel runs the replicas' threads here. So are the suites
  # whose requests differ from the e2e suites' in what is parsed, rendered or written, not in
  # which threads touch them (tool calls, reasoning under a grammar, template limits, the field
  # table, request fields, Ollama's and Anthropic's tool routes): about four of CI's minutes
  # (they run under ASan and the engine's grammar and reasoning tests run here).
  stage "TSan build and the engine, scheduler and server tests"
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan --target tests/engine/all tests/scheduler/all tests/server/all \
    tests/distributed/all sgl-server
  tsan_ctest() {
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" OMP_NUM_THREADS=1 \
      ctest --test-dir "build/tsan/tests/$1" -L cpu --output-on-failure --timeout 900 "${@:2}"
  }
  # Of the NGRAM configurations the overlapped one (drains before drafting steps; the others run
  # the non-overlap loop every other engine test covers); of the structured-output
  # configurations one overlapped run (masks filled while the batch runs).
  tsan_ctest engine -j2 -E \
    "Speculative.*/(default|chunk16|no_mixed_draft2|tight_kv)$|StructuredOutput.*/(stories_no_overlap|stories_mixed|qwen3)"
  tsan_ctest distributed -j2
  tsan_ctest scheduler -j2
  tsan_ctest server -j2 -E \
    "server_test_(default_model|launch_flags|sglang_bench|browser_cors|schema_suite|speculative|tool_calls|reasoning_grammar|chat_template_limits|field_table|request_fields|ollama_api|anthropic_tools)$|server_dp2_"

  # Each fuzz target for a few seconds over a scratch copy of its seed corpus (docs/fuzzing.md).
  stage "Fuzz targets (clang, libFuzzer + ASan + UBSan)"
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz --target tests/fuzz/all
  ctest --preset fuzz

  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    # The library, the binaries and the benchmarks: what nvcc and the CUDA-only host code
    # compile to. The *_cuda_test executables are left to scripts/gpu_check.sh, which builds
    # them before every GPU run: most of their sources are the CPU tests compiled again (a
    # fifth of this stage's time), and here they could only be compiled, never run.
    stage "CUDA build (compile only; no GPU here)"
    cmake --preset cuda >/dev/null
    cmake --build --preset cuda --target src/all bench/all
    # The wgmma kernels as ptxas compiles them: no serialized wgmmas, no spills where none are.
    scripts/check_ptxas.sh build/cuda
  else
    echo "== CUDA build skipped: no nvcc" >&2
    exit 1
  fi
fi
stage "all checks passed"
