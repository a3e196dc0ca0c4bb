#!/usr/bin/env bash
# The main job: generate text from the small default model that ships with Lathe (on the GPU when
# there is one the lane can use, else on the CPU through the reference interpreter).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x build/lathe ]; then cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j"$(nproc)"; fi
build/lathe run -p "${1:-In the beginning God created}" -n "${2:-64}"
