#!/usr/bin/env bash
# Builds the standalone program `lathe emit` writes for the default model (no prompt baked in: it
# takes --prompt-tokens), for scripts/device_run.sh emit; or, given SHAPE TYPE LAYERS, for the
# synthetic checkpoint `lathe synth --shape SHAPE --type TYPE --layers LAYERS` writes (the same bytes
# on any machine), as build-dev/carry/emitted-SHAPE-TYPE-LAYERS (scripts/device_run.sh g2).
# Usage: scripts/build_emitted.sh [LATHE [SHAPE TYPE LAYERS]]
set -euo pipefail
cd "$(dirname "$0")/.."
lathe="${1:-build-dev/lathe}"
mkdir -p build-dev/carry
if [ $# -ge 4 ]; then
  name="$2-$3-$4"
  "$lathe" synth --shape "$2" --type "$3" --layers "$4" -o "build-dev/synth-$name.gguf" >/dev/null
  "$lathe" emit "build-dev/synth-$name.gguf" -o "build-dev/emitted-$name.cu" -n 24
  nvcc -O2 -std=c++17 -arch=sm_90 -diag-suppress 1556 "build-dev/emitted-$name.cu" -o "build-dev/carry/emitted-$name" -lcuda
  rm -f "build-dev/synth-$name.gguf"
  echo "built build-dev/carry/emitted-$name"
  exit 0
fi
"$lathe" emit models/default/lathe-kjv-qwen3.gguf -o build-dev/emitted.cu -n 24
nvcc -O2 -std=c++17 -arch=sm_90 build-dev/emitted.cu -o build-dev/carry/emitted -lcuda
echo "built build-dev/carry/emitted"
