#!/usr/bin/env bash
# --enable-memory-saver on a GPU (device): sgl-server on the dummy Llama-3-8B shape, with and
# without --enable-weights-cpu-backup; for each, the GPU memory nvidia-smi reports in use before
# /release_memory_occupation, after it and after /resume_memory_occupation, the time each takes,
# and whether greedy ids after the resume equal those before (they must with the backup).
#   scripts/gpu_memory_saver.sh ROOT    (ROOT = where scripts/gpu_check.sh run unpacked)
# Prints one line per configuration; exits 1 when a step fails or the backup changed an output.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=$1
out=${OUT:-/tmp}/memory_saver
mkdir -p "$out"
export LD_LIBRARY_PATH="$root/gpu/lib:${LD_LIBRARY_PATH:-}"
source "$repo/scripts/sgl_server_lib.sh"

model=$(mktemp -d /tmp/sgl_memory_saver.XXXXXX)
cp "$root/configs/${SGL_MEMORY_SAVER_CONFIG:-llama-3-8b}.json" "$model/config.json"
for f in "$root"/testdata/tokenizers/llama3_1/*; do ln -s "$f" "$model/"; done
trap 'kill -KILL "${SGL_SERVER_PID:-}" 2>/dev/null || true; rm -rf "$model"' EXIT

used_mib() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -n 1; }
# post URL PATH [BODY]: the reply body; fails on an HTTP error. Prints the seconds taken to fd 3.
post() {
  python3 - "$1$2" "${3:-}" 3>&3 <<'PY'
import os, sys, time, urllib.request
url, body = sys.argv[1], sys.argv[2].encode()
t = time.monotonic()
req = urllib.request.Request(url, data=body, method="POST",
                             headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=300) as r:
    reply = r.read().decode()
os.write(3, b"%.2f" % (time.monotonic() - t))
print(reply)
PY
}
greedy_ids() {
  post "$1" /generate '{"input_ids": [1, 791, 6864, 315, 9822, 374], "sampling_params":
    {"max_new_tokens": 24, "temperature": 0, "ignore_eos": true}}' 3>/dev/null |
    json_field 'd["output_ids"]'
}

status=0
for backup in 1 0; do
  flags=(--load-format dummy --device cuda --enable-memory-saver --log-level info)
  [ "$backup" = 1 ] && flags+=(--enable-weights-cpu-backup)
  name="backup$backup"
  if ! SGL_SERVER_START_TIMEOUT=300 sgl_server_start "$root/gpu/sgl-server" "$model" \
      "$out/$name" "${flags[@]}"; then
    echo "memory-saver $name: FAIL (did not start)"; status=1; continue
  fi
  url=$SGL_SERVER_URL
  before=$(greedy_ids "$url")
  u0=$(used_mib)
  release_s=$(post "$url" /release_memory_occupation 3>&1 >"$out/$name.release.json") || status=1
  u1=$(used_mib)
  resume_s=$(post "$url" /resume_memory_occupation 3>&1 >"$out/$name.resume.json") || status=1
  u2=$(used_mib)
  after=$(greedy_ids "$url")
  same=$([ -n "$before" ] && [ "$before" = "$after" ] && echo same || echo different)
  if [ "$backup" = 1 ] && [ "$same" != same ]; then status=1; fi
  echo "memory-saver $name: GPU memory in use ${u0} MiB -> ${u1} MiB after the release" \
    "(${release_s} s) -> ${u2} MiB after the resume (${resume_s} s); greedy ids after the" \
    "resume: $same"
  cat "$out/$name.release.json"
  grep -E "memory: weights" "$out/$name.err" | head -n 1
  sgl_server_stop 60 || { echo "memory-saver $name: the server did not stop cleanly"; status=1; }
done
exit $status
