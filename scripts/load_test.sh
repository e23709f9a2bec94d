#!/usr/bin/env bash
# Serving load test of the CPU server (issue #5): start sgl-server on stories260K with default
# flags, then
#   phase 1: N concurrent streaming requests at once (--max-concurrency N, request rate inf),
#   phase 2: Poisson arrivals at R req/s for D seconds,
# both with sgl-bench serving. Passes when no request fails, the server is idle afterwards with
# no KV slot held by a request and every slot free once the radix cache is flushed
# (/get_server_info), and the server exits 0 on SIGTERM. Builds nothing.
#
# usage: scripts/load_test.sh [--build-dir build/cpu] [--model DIR] [--requests 1024]
#          [--input-len 64] [--output-len 128] [--range-ratio 0.5] [--rate 16] [--duration 60]
#          [--out-dir DIR] [-- extra sgl-server flags]
# Lengths are sampled uniformly in [len * ratio, len] (sgl-bench's random dataset).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=build/cpu
model=$root/../shared/testdata/models/stories260K
requests=1024 input_len=64 output_len=128 range_ratio=0.5 rate=16 duration=60 out_dir=""
server_flags=()
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) build=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --input-len) input_len=$2; shift 2 ;;
    --output-len) output_len=$2; shift 2 ;;
    --range-ratio) range_ratio=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --out-dir) out_dir=$2; shift 2 ;;
    --) shift; server_flags=("$@"); break ;;
    *) sed -n '2,16p' "$0" >&2; exit 2 ;;
  esac
done
cd "$root"
server_bin=$build/src/app/sgl-server bench_bin=$build/src/app/sgl-bench
for bin in "$server_bin" "$bench_bin"; do
  [ -x "$bin" ] || { echo "missing $bin: build sgl-server and sgl-bench first" >&2; exit 2; }
done
[ -n "$out_dir" ] || out_dir=$(mktemp -d /tmp/sgl-load-test.XXXXXX)
mkdir -p "$out_dir"
# shellcheck source-path=SCRIPTDIR source=sgl_server_lib.sh
source scripts/sgl_server_lib.sh
trap 'kill -KILL "${SGL_SERVER_PID:-}" 2>/dev/null || true' EXIT

ticks=$(getconf CLK_TCK)
cpu_busy_ticks() {  # all CPUs, everything but idle and iowait
  awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat
}
process_ticks() {  # utime + stime (+ waited-for children) of PID
  awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat"
}

failures=0
check() {  # check CONDITION_TEXT STATUS
  if [ "$2" = 0 ]; then echo "  ok: $1"; else echo "  FAILED: $1"; failures=$((failures + 1)); fi
}

# phase NAME [sgl-bench flags...]: runs one phase, checks it, records the machine load.
phase() {
  local name=$1
  shift
  local busy0 srv0 own0 t0 rc=0
  busy0=$(cpu_busy_ticks) srv0=$(process_ticks "$SGL_SERVER_PID") own0=$(process_ticks $$)
  t0=$(date +%s%N)
  rm -f "$out_dir/$name.json"  # sgl-bench appends to its --output-file
  echo "== $name: sgl-bench serving $*"
  echo "   load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$bench_bin" serving --backend sglang-oai --base-url "$SGL_SERVER_URL" \
    --random-input-len "$input_len" --random-output-len "$output_len" \
    --random-range-ratio "$range_ratio" --request-timeout 600 \
    --output-file "$out_dir/$name.json" "$@" 2>"$out_dir/$name.log" | tee "$out_dir/$name.txt" ||
    rc=$?
  # CPU used by other processes during the phase: all busy time minus the server's and
  # sgl-bench's (a waited-for child of this shell).
  local other
  other=$(awk -v busy="$(($(cpu_busy_ticks) - busy0))" \
    -v ours="$(($(process_ticks "$SGL_SERVER_PID") - srv0 + $(process_ticks $$) - own0))" \
    -v ticks="$ticks" -v ns="$(($(date +%s%N) - t0))" \
    'BEGIN { v = (busy - ours) / ticks / (ns / 1e9); printf "%.2f", v < 0 ? 0 : v }')
  echo "   machine: $(nproc) cores; other processes used $other cores on average during the" \
    "phase; load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out_dir/$name.txt"
  check "$name: sgl-bench exit code 0 (no failed request)" "$rc"
  local failed completed
  failed=$(json_field 'd["failed"]' <"$out_dir/$name.json" 2>/dev/null || echo "?")
  completed=$(json_field 'd["completed"]' <"$out_dir/$name.json" 2>/dev/null || echo "?")
  check "$name: $completed completed, $failed failed" "$([ "$failed" = 0 ] && echo 0 || echo 1)"
  local state idle=0
  state=$(sgl_server_check_idle "$SGL_SERVER_URL" 30) || idle=$?
  check "$name: server idle, no KV slot held, all free after /flush_cache" "$idle"
  echo "   server state: $state"
  echo "$state" >"$out_dir/$name.server_state.json"
}

echo "sgl-server: $server_bin --model-path $model ${server_flags[*]}"
sgl_server_start "$server_bin" "$model" "$out_dir/server" "${server_flags[@]}"
echo "listening on $SGL_SERVER_URL; results in $out_dir"

phase phase1 --num-prompts "$requests" --max-concurrency "$requests" --request-rate inf --seed 1
if [ "$(json_field 'd["completed"]' <"$out_dir/phase1.json" 2>/dev/null)" != "$requests" ]; then
  check "phase1: all $requests requests completed" 1
fi
phase phase2 --request-rate "$rate" --duration "$duration" --seed 2

code=0
sgl_server_stop 60 || code=$?
check "sgl-server exited $code after SIGTERM" "$code"
trap - EXIT

echo
echo "== summary"
for name in phase1 phase2; do
  [ -f "$out_dir/$name.json" ] || continue
  json_field '"%s: %d completed, %d failed in %.1f s; %.1f req/s, %.0f output tok/s; TTFT median %.0f ms, p99 %.0f ms; ITL median %.1f ms, p99 %.1f ms; peak concurrency %d" % (
      "'"$name"'", d["completed"], d["failed"], d["duration"], d["request_throughput"],
      d["output_throughput"], d["median_ttft_ms"], d["p99_ttft_ms"], d["median_itl_ms"],
      d["p99_itl_ms"], d["max_concurrency_seen"])' <"$out_dir/$name.json"
done
if [ "$failures" = 0 ]; then
  echo "PASS (results in $out_dir)"
else
  echo "FAIL: $failures check(s) failed (results and server logs in $out_dir)"
  exit 1
fi
