#!/usr/bin/env bash
# End to end: sgl-bench serving against sgl-server on stories260K. Every backend shape
# (completions, /generate, chat; streaming and not), a --duration Poisson run, and failures
# that must be reported as failures; then the server must be idle with no leaked KV slots and
# exit 0 on SIGTERM.
# usage: serving_e2e_test.sh SGL_SERVER SGL_BENCH MODEL_DIR
set -euo pipefail
server_bin=$1 bench_bin=$2 model=$3
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../../scripts/sgl_server_lib.sh
source "$here/../../scripts/sgl_server_lib.sh"

work=$(mktemp -d)
trap 'kill -KILL "${SGL_SERVER_PID:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# A plain "User: ... Assistant:" template: stories260K has none, the chat backend needs one.
printf '%s' "{{ bos_token }}{% for m in messages %}User: {{ m['content'] }}
{% endfor %}Assistant:" >"$work/template.jinja"
sgl_server_start "$server_bin" "$model" "$work/server" --served-model-name stories \
  --chat-template "$work/template.jinja"

# bench NAME [flags...]: runs sgl-bench serving; its JSON line goes to $work/NAME.json and its
# exit code to $bench_rc.
bench() {
  local name=$1
  shift
  bench_rc=0
  "$bench_bin" serving --base-url "$SGL_SERVER_URL" --output-file "$work/$name.json" "$@" \
    >"$work/$name.log" 2>&1 || bench_rc=$?
  cat "$work/$name.log"
}
field() { json_field "$2" <"$work/$1.json"; }
expect() {  # expect NAME EXPR VALUE
  local got
  got=$(field "$1" "$2")
  [ "$got" = "$3" ] || fail "$1: $2 is $got, expected $3"
}

# 50 streamed completions of exactly 32 prompt words and 16 tokens: every word of the prompt
# list is one stories260K token, plus the BOS the server adds.
bench main --backend sglang-oai --num-prompts 50 --random-input-len 32 --random-output-len 16 \
  --random-range-ratio 1 --max-concurrency 20
[ "$bench_rc" = 0 ] || fail "main: exit code $bench_rc"
expect main 'd["completed"]' 50
expect main 'd["failed"]' 0
expect main 'd["total_output_tokens"]' 800
expect main 'd["total_input_tokens"]' 1650
expect main 'd["model"]' stories
expect main 'd["max_concurrency_seen"] <= 20' True
expect main 'd["mean_ttft_ms"] > 0 and d["mean_itl_ms"] > 0 and d["p99_e2e_latency_ms"] > 0' True

for shape in "generate --backend sglang" "generate_whole --backend sglang --disable-stream" \
  "chat --backend openai-chat" "completions_whole --backend vllm --disable-stream"; do
  read -r name flags <<<"$shape"
  # shellcheck disable=SC2086
  bench "$name" $flags --num-prompts 10 --random-input-len 24 --random-output-len 8 \
    --random-range-ratio 1 --output-details
  [ "$bench_rc" = 0 ] || fail "$name: exit code $bench_rc"
  expect "$name" 'd["completed"]' 10
  expect "$name" 'd["failed"]' 0
  expect "$name" 'd["total_output_tokens"]' 80
  expect "$name" 'all(len(t) > 0 for t in d["generated_texts"])' True
done

# Poisson arrivals for 2 s at 20 req/s: about 40 requests, all completed.
bench poisson --backend sglang-oai --request-rate 20 --duration 2 --random-input-len 16 \
  --random-output-len 8 --seed 3
[ "$bench_rc" = 0 ] || fail "poisson: exit code $bench_rc"
expect poisson 'd["failed"]' 0
expect poisson '15 <= d["completed"] <= 80' True
expect poisson 'd["total_output_tokens"] <= 8 * d["completed"]' True

# Failures are counted and reported, not hidden: a route the server does not have is answered
# 404 (any model name is served, as SGLang does).
bench wrong_route --backend sglang-oai --base-url "$SGL_SERVER_URL/nope" --model m \
  --warmup-requests 0 --num-prompts 5 --random-input-len 8 --random-output-len 4
[ "$bench_rc" = 3 ] || fail "wrong_route: exit code $bench_rc, expected 3"
expect wrong_route 'd["completed"]' 0
expect wrong_route 'd["failed"]' 5
expect wrong_route '"HTTP 404" in d["first_errors"][0]' True
bench wrong_route_warmup --backend sglang-oai --base-url "$SGL_SERVER_URL/nope" --model m \
  --num-prompts 5
[ "$bench_rc" = 1 ] || fail "a failed warmup must stop the benchmark (exit $bench_rc)"
# Prompts past the context length (512) are refused with 400.
bench too_long --backend sglang-oai --warmup-requests 0 --num-prompts 3 \
  --random-input-len 600 --random-output-len 4 --random-range-ratio 1
[ "$bench_rc" = 3 ] || fail "too_long: exit code $bench_rc, expected 3"
expect too_long 'd["failed"]' 3

sgl_server_check_idle "$SGL_SERVER_URL" 30 || fail "the server is not idle or leaks KV slots"
code=0
sgl_server_stop 60 || code=$?
[ "$code" = 0 ] || fail "sgl-server exited $code after SIGTERM: $(tail -5 "$work/server.err")"
echo "PASS"
