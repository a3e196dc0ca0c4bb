#!/usr/bin/env bash
# Builds the standalone program `lathe emit` writes for the default model (no prompt baked in: it
# takes --prompt-tokens), for scripts/device_run.sh emit; or, given SHAPE TYPE LAYERS, for the
# synthetic checkpoint `lathe synth --shape SHAPE --type TYPE --layers LAYERS` writes (the same bytes
# on any machine), as build-dev/carry/emitted-SHAPE-TYPE-LAYERS (scripts/device_run.sh g2).
# Usage: scripts/build_emitted.sh [LATHE [SHAPE TYPE LAYERS]]; EMIT_ARGS="--merge-from 128" passes options
# to lathe emit and names the program emitted-SHAPE-TYPE-LAYERS-mf128 (its options, squeezed).
set -euo pipefail
cd "$(dirname "$0")/.."
lathe="${1:-build-dev/lathe}"
mkdir -p build-dev/carry
if [ $# -ge 4 ]; then
  suffix=$(echo "${EMIT_ARGS:-}" | sed 's/--merge-from /mf/g; s/[^a-z0-9]//g')
  name="$2-$3-$4${suffix:+-$suffix}"
  "$lathe" synth --shape "$2" --type "$3" --layers "$4" -o "build-dev/synth-$name.gguf" >/dev/null
  # shellcheck disable=SC2086  # EMIT_ARGS: words
  "$lathe" emit "build-dev/synth-$name.gguf" -o "build-dev/emitted-$name.cu" -n 24 ${EMIT_ARGS:-}
  nvcc -O2 -std=c++17 -arch=sm_90 -diag-suppress 1556 "build-dev/emitted-$name.cu" -o "build-dev/carry/emitted-$name" -lcuda
  rm -f "build-dev/synth-$name.gguf"
  echo "built build-dev/carry/emitted-$name"
  exit 0
fi
"$lathe" emit models/default/lathe-kjv-qwen3.gguf -o build-dev/emitted.cu -n 24
nvcc -O2 -std=c++17 -arch=sm_90 build-dev/emitted.cu -o build-dev/carry/emitted -lcuda
echo "built build-dev/carry/emitted"
