#!/usr/bin/env bash
# The main job: build the CPU configuration and generate a continuation with the test model.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset cpu >/dev/null
cmake --build --preset cpu --target sgl-generate
build/cpu/src/app/sgl-generate --model-path ../shared/testdata/models/stories260K \
  --prompt "Once upon a time" --max-new-tokens 48 --temperature 0
