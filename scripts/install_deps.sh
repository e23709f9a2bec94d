#!/usr/bin/env bash
# Installs everything sgl.cpp needs to build and test on Debian 12 (run as root).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkg-config git clang-format curl ccache \
  clang libclang-rt-14-dev libomp-dev llvm \
  libspdlog-dev libfmt-dev nlohmann-json3-dev libopenblas-openmp-dev libpcre2-dev libutf8proc-dev \
  zlib1g-dev libyaml-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev libboost-dev \
  python3 python3-pip chromium fonts-dejavu-core >/dev/null
# chromium (and a font for its screenshots): tests/server/test_browser_cors.py.
pip_install() {
  python3 -m pip install -q --disable-pip-version-check "$@" 2>/dev/null ||
    python3 -m pip install -q --disable-pip-version-check --break-system-packages "$@"
}
pip_install numpy tokenizers openai anthropic ollama pytest requests jsonschema
# SGLang's benchmark client (tests/server/test_sglang_bench.py, which pins the same release): the
# wheel without its runtime's dependencies (torch, CUDA kernels), then what the client imports,
# transformers at the release sglang pins. --no-compile: the wheel holds 220 MB of runtime
# sources the client never imports, not worth byte-compiling.
pip_install --no-compile --no-deps sglang==0.5.23
pip_install --no-compile aiohttp msgspec orjson tqdm transformers==5.19.0 datasets pillow pybase64 \
  psutil pyzmq
echo "dependencies installed"
