#!/usr/bin/env bash
# Start-up benchmark on the GPU machine: how fast real checkpoints load.
#  1. transformers writes a random Llama-3-8B-shaped bf16 checkpoint (16 GB of safetensors
#     shards; scripts/transformers_8b_parity.py save) and the Llama-3.1 tokenizer beside it;
#     the files are read once so the page cache is warm; then sgl-server starts on it and the
#     time from exec to a healthy /health is measured, one request is answered, SIGTERM.
#  2. scripts/make_random_gguf.py writes a GGUF of the same shape (Q8_0: 8.5 GB; Q4_K_M:
#     4.9 GB), warmed the same way, and sgl-generate loads it and decodes from prompt ids (the
#     file has no tokenizer); its wall time and the loader's own line are reported.
# Both print the loader's "loaded N GB of weights in S s (R GB/s)" line.
#
# usage: scripts/gpu_load_bench.sh [ROOT]   (ROOT: an unpacked .carry/gpu.txz [/tmp/sgl_gpu])
# environment: OUT (logs) [/tmp/sgl_load_out]; SGL_LOAD_SKIP_GGUF=1 skips step 2;
#   SGL_LOAD_GGUF_TYPE: make_random_gguf.py's --type for step 2 (q8_0, q4_k_m, f16) [q8_0].
# Prints `RESULT:` lines; exit 1 when a step fails.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-/tmp/sgl_gpu}
out=${OUT:-/tmp/sgl_load_out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$root/gpu/lib:${LD_LIBRARY_PATH:-}"
# shellcheck source-path=SCRIPTDIR source=sgl_server_lib.sh
source "$repo/scripts/sgl_server_lib.sh"
seconds_since() { python3 -c "import sys; print('%.2f' % ($(date +%s.%N) - $1))"; }

ckpt=/tmp/llama8b_ckpt
if [ ! -f "$ckpt/config.json" ]; then
  rm -rf "$ckpt" && mkdir -p "$ckpt"
  t0=$(date +%s.%N)
  python3 "$repo/scripts/transformers_8b_parity.py" save "$ckpt" \
    --config "$root/configs/llama-3-8b.json" >"$out/save.log" 2>&1
  echo "transformers wrote $(du -sh "$ckpt" | cut -f1) in $(seconds_since "$t0") s"
fi
cp "$root"/testdata/tokenizers/llama3_1/* "$ckpt/"
cat "$ckpt"/*.safetensors >/dev/null  # warm page cache
t0=$(date +%s.%N)
SGL_SERVER_START_TIMEOUT=300 sgl_server_start "$root/gpu/sgl-server" "$ckpt" "$out/server" \
  --device cuda --log-level info
ready=$(seconds_since "$t0")
answer=$(curl -sf "$SGL_SERVER_URL/generate" -H 'Content-Type: application/json' \
  -d '{"text": "Hello", "sampling_params": {"max_new_tokens": 8, "temperature": 0}}' || echo FAIL)
sgl_server_stop 60 || true
grep -h "loaded .* GB of weights" "$out/server.err" "$out/server.out" || true
echo "RESULT: safetensors bf16 8B: sgl-server ready in $ready s; one request: ${answer:0:120}"
[ "$answer" != FAIL ]

if [ "${SGL_LOAD_SKIP_GGUF:-0}" != 1 ]; then
  type=${SGL_LOAD_GGUF_TYPE:-q8_0}
  gguf=/tmp/llama8b_$type.gguf
  [ -f "$gguf" ] || python3 "$repo/scripts/make_random_gguf.py" --config "$root/configs/llama-3-8b.json" \
    --type "$type" "$gguf"
  cat "$gguf" >/dev/null
  t0=$(date +%s.%N)
  "$root/gpu/sgl-generate" --device cuda --model-path "$gguf" --prompt-ids 128000,9906,11 \
    --max-new-tokens 8 --temperature 0 --ignore-eos --json --log-level info \
    >"$out/gguf.out" 2>"$out/gguf.err"
  wall=$(seconds_since "$t0")
  grep -h "loaded .* GB of weights" "$out/gguf.err" || true
  echo "RESULT: gguf $type 8B ($(du -h "$gguf" | cut -f1)): sgl-generate done in $wall s; $(cat "$out/gguf.out")"
fi
