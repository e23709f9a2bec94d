#!/usr/bin/env bash
# Serving benchmark on the GPU machine: sgl-server on a Llama-3-8B-shaped model (or another
# config) with dummy (random) weights and a real tokenizer (Llama-3.1's by default), then
# `sgl-bench serving` with ShareGPT-like requests (sharegpt-synthetic: log-normal input/output
# lengths, median 160 / 120 tokens) at a fixed concurrency, as SGLang's bench_serving reports it
# (throughput, TTFT, TPOT, ITL).
#
# usage: scripts/gpu_serving_bench.sh [ROOT]
#   ROOT: an unpacked .carry/gpu.txz (scripts/gpu_check.sh pack) [/tmp/sgl_gpu]; when it has no
#   gpu/sgl-server yet, .carry/gpu.txz is unpacked there first.
# environment:
#   SGL_SERVING_DEVICE       cuda | cpu  [cuda]; cpu is the check of this script on a machine
#                            without a GPU: a 2-layer, hidden-64 config with the same vocabulary,
#                            40 prompts, concurrency 8, a small KV pool
#   SGL_SERVING_CONFIG       config.json  [ROOT/configs/llama-3-8b.json; cpu: derived from it]
#   SGL_SERVING_TOKENIZER    directory with tokenizer.json(.gz) + tokenizer_config.json
#                            [ROOT/testdata/tokenizers/llama3_1]
#   SGL_SERVING_NUM_PROMPTS  [1000; cpu 40]   SGL_SERVING_CONCURRENCY  [256; cpu 8]
#   SGL_SERVING_START_TIMEOUT  seconds to wait for /health  [300]
#   SGL_SERVING_SERVER_ARGS, SGL_SERVING_BENCH_ARGS  extra flags, appended (later flags win)
#   OUT                      results: serving.json (sgl-bench's JSON line), serving.txt (its
#                            table), serving.log (its stderr and CPU time), metrics.txt (the
#                            server's /metrics), server.out / server.err,
#                            server_state.json  [/tmp/sgl_serving_out]
# Prints the result block last, then one `RESULT:` line. Exit 0 when every request completed,
# the server was idle with no KV slot leaked afterwards and it exited 0 on SIGTERM; else 1.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-/tmp/sgl_gpu}
device=${SGL_SERVING_DEVICE:-cuda}
out=${OUT:-/tmp/sgl_serving_out}
mkdir -p "$out"

if [ ! -x "$root/gpu/sgl-server" ]; then
  if [ -f "$repo/.carry/gpu.txz" ]; then
    echo "unpacking $repo/.carry/gpu.txz into $root"
    rm -rf "$root" && mkdir -p "$root" && tar xzf "$repo/.carry/gpu.txz" -C "$root"
  fi
  [ -x "$root/gpu/sgl-server" ] ||
    { echo "no $root/gpu/sgl-server: run scripts/gpu_check.sh pack (it packs sgl-server)" >&2; exit 1; }
fi
export LD_LIBRARY_PATH="$root/gpu/lib:${LD_LIBRARY_PATH:-}"

tokenizer=${SGL_SERVING_TOKENIZER:-$root/testdata/tokenizers/llama3_1}
config=${SGL_SERVING_CONFIG:-$root/configs/llama-3-8b.json}
case $device in
  cuda)
    num_prompts=${SGL_SERVING_NUM_PROMPTS:-1000} concurrency=${SGL_SERVING_CONCURRENCY:-256}
    # --mem-fraction-static stays at its default (0.88); CUDA graphs are on by default.
    device_flags=(--device cuda --cuda-graph-max-bs 256) ;;
  cpu)
    num_prompts=${SGL_SERVING_NUM_PROMPTS:-40} concurrency=${SGL_SERVING_CONCURRENCY:-8}
    # 2 layers x 2 KV heads x 16 x (K + V) x f32 = 512 B per slot: 128 MiB.
    device_flags=(--device cpu --max-total-tokens 262144) ;;
  *) echo "SGL_SERVING_DEVICE must be cuda or cpu, got '$device'" >&2; exit 2 ;;
esac
[ -f "$config" ] || { echo "no config $config" >&2; exit 1; }
if [ ! -f "$tokenizer/tokenizer.json" ] && [ ! -f "$tokenizer/tokenizer.json.gz" ]; then
  echo "no tokenizer.json(.gz) in $tokenizer (scripts/gpu_check.sh pack copies llama3_1)" >&2
  exit 1
fi

# The model directory: config.json + the tokenizer's files; --load-format dummy needs no weights.
model=$(mktemp -d /tmp/sgl_serving_model.XXXXXX)
if [ "$device" = cpu ] && [ -z "${SGL_SERVING_CONFIG:-}" ]; then
  python3 - "$config" "$model/config.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
         num_key_value_heads=2)
json.dump(c, open(sys.argv[2], "w"), indent=1)
EOF
else
  cp "$config" "$model/config.json"
fi
for f in "$tokenizer"/tokenizer.json "$tokenizer"/tokenizer.json.gz \
         "$tokenizer"/tokenizer_config.json "$tokenizer"/generation_config.json; do
  if [ -f "$f" ]; then ln -s "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")" "$model/"; fi
done
# Requests must fit the context: the prompt's words are about one token each, plus BOS.
context=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["max_position_embeddings"])' \
  "$model/config.json")

# sgl_server_lib.sh uses curl; where there is none, the subset it uses (curl -sf [-X METHOD]
# URL) through Python.
if ! command -v curl >/dev/null 2>&1; then
  curl() {
    python3 - "$@" <<'EOF'
import sys, urllib.request
method, url, args = "GET", None, sys.argv[1:]
while args:
    a = args.pop(0)
    if a == "-X":
        method = args.pop(0)
    elif not a.startswith("-"):
        url = a
try:
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=30) as r:
        sys.stdout.buffer.write(r.read())
except Exception:
    sys.exit(22)
EOF
  }
fi
# shellcheck source-path=SCRIPTDIR source=sgl_server_lib.sh
source "$repo/scripts/sgl_server_lib.sh"
trap 'kill -KILL "${SGL_SERVER_PID:-}" 2>/dev/null || true; rm -rf "$model"' EXIT

if [ "$device" = cuda ]; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || true
fi
# shellcheck disable=SC2206  # word splitting of the extra flags is intended
served_name="$(basename "$config" .json)-dummy"  # e.g. llama-3-8b-dummy
server_flags=(--load-format dummy "${device_flags[@]}" --max-running-requests 256
  --served-model-name "$served_name" --log-level info ${SGL_SERVING_SERVER_ARGS:-})
echo "sgl-server --model-path $model ${server_flags[*]}"
t0=$(date +%s.%N)
SGL_SERVER_START_TIMEOUT=${SGL_SERVING_START_TIMEOUT:-300} \
  sgl_server_start "$root/gpu/sgl-server" "$model" "$out/server" "${server_flags[@]}"
startup=$(python3 -c "import sys; print('%.1f' % ($(date +%s.%N) - $t0))")
echo "listening on $SGL_SERVER_URL after ${startup} s; results in $out"

rm -f "$out/serving.json"  # sgl-bench appends to its --output-file
# shellcheck disable=SC2206
bench_flags=(--backend sglang --base-url "$SGL_SERVER_URL" --dataset-name sharegpt-synthetic
  --sharegpt-context-len $((context - 64)) --num-prompts "$num_prompts"
  --max-concurrency "$concurrency" --request-rate inf --seed 1 --request-timeout 600
  --output-file "$out/serving.json" ${SGL_SERVING_BENCH_ARGS:-})
echo "sgl-bench serving ${bench_flags[*]}"
bench_rc=0
# The client's own CPU time (user + system) goes to serving.log: a busy client delays the
# chunks it reads, and that delay is part of every latency it reports.
TIMEFORMAT='sgl-bench: %R s wall, %U s user, %S s system'
{ time "$root/gpu/sgl-bench" serving "${bench_flags[@]}" >"$out/serving.txt" 2>"$out/serving.log"; } \
  2>>"$out/serving.log" || bench_rc=$?
# The server's own view of the same latencies (measured where its HTTP side takes each token).
curl -sf "$SGL_SERVER_URL/metrics" >"$out/metrics.txt" || true

idle_rc=0
sgl_server_check_idle "$SGL_SERVER_URL" 60 >"$out/server_state.json" || idle_rc=$?
stop_rc=0
sgl_server_stop 60 || stop_rc=$?
trap 'rm -rf "$model"' EXIT

echo "==== server log (KV pool, CUDA graphs, errors)"
grep -iE 'KV pool|graph|error|warn' "$out/server.err" | head -n 20 || true
json_field '"engine: %d decode steps, %.0f us engine CPU time per decode step, cache hit rate %.3f, %d retracted" % (
    d["decode_steps"], d["decode_step_cpu_us"], d["cache_hit_rate"], d["num_retracted_total"])' \
  <"$out/server_state.json" 2>/dev/null || true
echo "==== sgl-bench serving: sgl-server --device $device, $(basename "$config") shape, dummy" \
  "weights, tokenizer $(basename "$tokenizer"); $num_prompts sharegpt-synthetic prompts, concurrency" \
  "$concurrency; server ready in ${startup} s"
tail -n 5 "$out/serving.log"
cat "$out/serving.txt"
completed=$(json_field 'd["completed"]' <"$out/serving.json" 2>/dev/null || echo 0)
fails=()
[ "$bench_rc" = 0 ] || fails+=("sgl-bench exited $bench_rc")
[ "$completed" = "$num_prompts" ] || fails+=("$completed of $num_prompts completed")
[ "$idle_rc" = 0 ] || fails+=("server not idle afterwards: $(cat "$out/server_state.json")")
[ "$stop_rc" = 0 ] || fails+=("sgl-server exited $stop_rc after SIGTERM")
summary=$(json_field '"%d/%d completed in %.1f s; %.0f output tok/s, %.0f total tok/s; TTFT median %.0f ms p99 %.0f ms; ITL median %.1f ms p99 %.1f ms max %.0f ms" % (
    d["completed"], d["completed"] + d["failed"], d["duration"], d["output_throughput"],
    d["total_throughput"], d["median_ttft_ms"], d["p99_ttft_ms"], d["median_itl_ms"],
    d["p99_itl_ms"], d.get("max_itl_ms", float("nan")))' <"$out/serving.json" 2>/dev/null || echo "no result")
if [ ${#fails[@]} = 0 ]; then
  echo "RESULT: PASS $summary"
else
  echo "sgl-server stderr (tail):" && tail -n 20 "$out/server.err"
  echo "RESULT: FAIL ($(IFS=';'; echo "${fails[*]}")) $summary"
  exit 1
fi
