#!/usr/bin/env bash
# Installs everything Lathe needs on a fresh Debian 12 machine (root or sudo), then builds it.
# Usage: scripts/setup.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# Debian packages: compiler and build, test and fuzz tools, the libraries Lathe links.
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake pkg-config clang libclang-rt-14-dev \
  libgtest-dev libgmock-dev \
  libcli11-dev libfmt-dev nlohmann-json3-dev libpcre2-dev libssl-dev \
  python3 python3-pip \
  bible-kjv-text bible-kjv

# The CUDA toolkit (nvcc, cuda.h, nvrtc.h) is not in Debian's main archive; the build machines have
# it in /usr/local/cuda. Lathe needs its headers to build and NVRTC at run time for the GPU lane.
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: the CUDA toolkit is missing (no nvcc on PATH or in /usr/local/cuda);" >&2
  echo "setup: install it from NVIDIA (12.x or 13.x) or Debian's non-free nvidia-cuda-toolkit" >&2
  exit 1
fi

# PyPI: the peers the tests compare against (fixture scripts), never needed at run time.
python3 -m pip install -q -r scripts/requirements.txt

if [ "${1:-}" != "--no-build" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
  cmake --build build -j"$(nproc)"
fi
