#!/usr/bin/env bash
# The server's end-to-end suites on a GPU, behind two engine replicas sharing it (issue #24):
#   scripts/gpu_server_suites.sh ROOT    (device; ROOT = where scripts/gpu_check.sh run unpacked)
# runs each suite of tests/server/dp2_suites.txt with sgl-server --device cuda --dtype float32
# --dp-size 2, then those of SGL_GPU_SOLO_SUITES (default test_lora) behind one replica (float32: the suites compare with the CPU's goldens) and a quarter of the GPU's
# memory a server. A budget is that share of the total less what is in use, other servers'
# included (SGLang's rule), and a suite starts several at once: a tenth left the later ones no
# KV cache on an 80 GB H100. Python packages the machine lacks (pytest,
# requests, openai, anthropic, jsonschema) are installed from ROOT/wheels, which
# `SGL_GPU_SERVER_SUITES=1 scripts/gpu_check.sh pack` fills. Logs in $OUT/server_suites.log; the
# last line is RESULT: passed/failed suites. SGL_GPU_DP2_SUITES="a b" (empty: none) replaces the
# dp2 list, for a short call.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$1
log="${OUT:-/tmp}/server_suites.log"
: >"$log"
packages=(pytest requests openai anthropic jsonschema)
if ! python3 -c "import $(IFS=,; echo "${packages[*]}")" 2>/dev/null; then
  # (An image that marks its Python externally managed, PEP 668, refuses the first form.)
  python3 -m pip install -q --no-index --find-links "$root/wheels" "${packages[@]}" >>"$log" 2>&1 ||
    python3 -m pip install -q --no-index --find-links "$root/wheels" --break-system-packages \
      "${packages[@]}" >>"$log" 2>&1 ||
    { echo "RESULT: could not install ${packages[*]} from $root/wheels"; exit 1; }
fi
export SGL_SERVER_BIN="$root/gpu/sgl-server" PYTHONDONTWRITEBYTECODE=1 \
  SGL_TEST_SERVER_ARGS="--device cuda --dtype float32 --mem-fraction-static 0.25"
passed=0 failed=()
# Runs tests/server/SUITE.py (DP: the replicas behind its servers), logs it and counts it.
run_suite() {
  local suite=$1 dp=$2 rc
  SGL_TEST_DP_SIZE=$dp timeout -k 10 300 python3 -m pytest -q -rs -p no:cacheprovider \
    "tests/server/$suite.py" >"/tmp/$suite.log" 2>&1
  rc=$?
  { echo "=== $suite (dp $dp) rc $rc"; cat "/tmp/$suite.log"; } >>"$log"
  echo "$suite (dp $dp): $(tail -n 1 "/tmp/$suite.log")"
  if [ $rc = 0 ]; then passed=$((passed + 1)); else failed+=("$suite"); fi
}
for suite in ${SGL_GPU_DP2_SUITES-$(cat tests/server/dp2_suites.txt)}; do run_suite "$suite" 2; done
# Suites whose assertions count one replica's cache, on one replica: LoRA (the CUDA update
# against the merged weights, adapters of different batches).
for suite in ${SGL_GPU_SOLO_SUITES:-test_lora}; do run_suite "$suite" 1; done
echo "RESULT: $passed suites passed${failed[*]:+, failed: ${failed[*]}}"
[ ${#failed[@]} = 0 ]
