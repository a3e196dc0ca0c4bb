#!/usr/bin/env bash
# Builds the standalone program `lathe emit` writes for the default model (no prompt baked in: it
# takes --prompt-tokens), for scripts/device_run.sh emit. Usage: scripts/build_emitted.sh [LATHE]
set -euo pipefail
cd "$(dirname "$0")/.."
lathe="${1:-build-dev/lathe}"
mkdir -p build-dev/carry
"$lathe" emit models/default/lathe-kjv-qwen3.gguf -o build-dev/emitted.cu -n 24
nvcc -O2 -std=c++17 -arch=sm_90 build-dev/emitted.cu -o build-dev/carry/emitted -lcuda
echo "built build-dev/carry/emitted"
