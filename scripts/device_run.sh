#!/usr/bin/env bash
# One batch on the GPU machine: synthetic checkpoints, `lathe check` of each against the interpreter,
# `lathe bench` of the speed targets, the GPU tests. Expects the Release build carried in
# build-dev/ (lathe, tests, devlibs). Usage: scripts/device_run.sh [quick|full]
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/build-dev/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export LATHE_CACHE_DIR=/tmp/lathe-cache
L=build-dev/carry/lathe
M=/tmp/models
mkdir -p $M
mode="${1:-quick}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
for shape in qwen3-tiny qwen3moe-tiny qwen2-tiny llama-tiny; do
  $L synth --shape $shape --type q8_0 -o $M/$shape.gguf >/dev/null
  for act in f32 int8x2 int8; do
    echo "== check $shape q8_0 $act"; $L check $M/$shape.gguf --activations $act --steps 8 2>&1 | tail -2
  done
done
echo "== check default model int8x2"; $L check models/default/lathe-kjv-qwen3.gguf --steps 16 2>&1 | tail -3
echo "== check default model, fusion held"; $L check models/default/lathe-kjv-qwen3.gguf --steps 4 --hold add_norm --hold qk_norm_rope 2>&1 | tail -1
echo "== run default model on the GPU"; $L run -p "In the beginning God created" -n 32 --temp 0 2>&1 | tail -4
$L synth --shape qwen3-0.6b --type q8_0 -o $M/q06.gguf >/dev/null
echo "== bench qwen3-0.6b q8_0"; $L bench $M/q06.gguf -p 512 -n 128 -r 3 2>&1 | tail -3
echo "== check qwen3-0.6b q8_0"; $L check $M/q06.gguf --steps 4 2>&1 | tail -2
if [ "$mode" = full ]; then
  $L synth --shape qwen3-8b --type q8_0 -o $M/q8b.gguf >/dev/null
  echo "== bench qwen3-8b q8_0"; $L bench $M/q8b.gguf -p 512 -n 128 -r 3 2>&1 | tail -3
fi
