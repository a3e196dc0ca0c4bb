#!/usr/bin/env bash
# The main job. Today: write a small synthetic Qwen3 checkpoint and describe it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x build/lathe ]; then cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j"$(nproc)"; fi
mkdir -p out
build/lathe synth --shape qwen3-tiny --type q8_0 -o out/qwen3-tiny-q8_0.gguf
build/lathe inspect out/qwen3-tiny-q8_0.gguf
