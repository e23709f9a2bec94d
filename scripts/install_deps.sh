#!/usr/bin/env bash
# Installs everything sgl.cpp needs to build and test on Debian 12 (run as root).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkg-config git clang-format curl ccache \
  clang libclang-rt-14-dev libomp-dev llvm \
  libspdlog-dev libfmt-dev nlohmann-json3-dev libopenblas-openmp-dev libpcre2-dev libutf8proc-dev \
  zlib1g-dev libyaml-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev libboost-dev python3 python3-pip >/dev/null
python3 -m pip install -q --disable-pip-version-check numpy tokenizers openai anthropic pytest \
  requests 2>/dev/null ||
  python3 -m pip install -q --disable-pip-version-check --break-system-packages numpy tokenizers \
    openai anthropic pytest requests
echo "dependencies installed"
