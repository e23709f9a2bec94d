#!/usr/bin/env bash
# The main job: build the CPU configuration, start sgl-server on the test model, send one
# completion request, print the answer, stop the server (SIGTERM: it drains and exits 0).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset cpu >/dev/null
cmake --build --preset cpu --target sgl-server

logs=$(mktemp -d)
build/cpu/src/app/sgl-server --model-path ../shared/testdata/models/stories260K \
  --served-model-name stories260K --port "${SGL_PORT:-0}" >"$logs/stdout" 2>"$logs/stderr" &
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

request='{"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 48, "temperature": 0}'
echo "POST $url/v1/completions $request"
curl -sS "$url/v1/completions" -H 'Content-Type: application/json' -d "$request"
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
