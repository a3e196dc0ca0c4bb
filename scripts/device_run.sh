#!/usr/bin/env bash
# One batch on the GPU machine: the GPU tests, `lathe check` of every architecture against the
# interpreter, and `lathe bench` of the speed targets on synthetic checkpoints of real shapes.
# Expects the Release build carried in build-dev/carry (lathe and the *_gpu test binaries) and
# build-dev/devlibs (scripts/device_libs.sh). Usage: scripts/device_run.sh [quick|full]
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/build-dev/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export LATHE_CACHE_DIR=/tmp/lathe-cache
C=build-dev/carry
L=$C/lathe
M=/tmp/models
mkdir -p $M
mode="${1:-quick}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
for t in $C/test_*_gpu; do
  echo "== $(basename $t)"; $t --gtest_filter='-*Timing*:*Speed*' 2>&1 | grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" 
done
for shape in qwen3-tiny qwen3moe-tiny qwen2-tiny llama-tiny; do
  $L synth --shape $shape --type q8_0 -o $M/$shape.gguf >/dev/null
  for act in f32 int8x2; do
    echo "== check $shape q8_0 $act"; $L check $M/$shape.gguf --activations $act --steps 8 2>&1 | tail -2 | head -1
  done
done
$L synth --shape qwen3-tiny --type q4_k_m -o $M/q4k.gguf >/dev/null
echo "== check qwen3-tiny q4_k_m int8x2"; $L check $M/q4k.gguf --steps 8 2>&1 | tail -2 | head -1
$L synth --shape llama-tiny --type f16 -o $M/f16.gguf >/dev/null
echo "== check llama-tiny f16 int8x2"; $L check $M/f16.gguf --steps 8 2>&1 | tail -2 | head -1
echo "== check default model (32 steps)"; $L check models/default/lathe-kjv-qwen3.gguf --steps 32 2>&1 | tail -2
echo "== check default model, fusion held"; $L check models/default/lathe-kjv-qwen3.gguf --steps 8 --hold add_norm --hold qk_norm_rope --hold kv_append 2>&1 | tail -2
echo "== run default model on the GPU"; $L run -p "In the beginning God created" -n 24 --temp 0 2>&1 | tail -3
# lathe logits on the GPU against the CPU (the transformers fixtures have 16-wide heads, which the
# attention kernel does not take; the tiny shapes have 64).
for m in $M/qwen3-tiny.gguf $M/qwen3moe-tiny.gguf $M/qwen2-tiny.gguf $M/llama-tiny.gguf models/default/lathe-kjv-qwen3.gguf; do
  $L logits $m --tokens 5,17,300,42,7,99,1000,3,8,15,16,23 --device gpu -o /tmp/g.npy >/dev/null
  $L logits $m --tokens 5,17,300,42,7,99,1000,3,8,15,16,23 --device cpu -o /tmp/c.npy >/dev/null
  echo "== logits gpu vs cpu $(basename $m): $(python3 -c "import numpy as n; g=n.load('/tmp/g.npy'); c=n.load('/tmp/c.npy'); print(g.shape, 'normalized error', float((abs(g-c).max(1)/abs(c).max(1)).max()))")"
done
echo "== perplexity default model on Genesis 1-3, cpu then gpu"
$L perplexity models/default/lathe-kjv-qwen3.gguf -f tests/data/inspect/genesis_1_3.txt --ctx 128 --device cpu 2>/dev/null
$L perplexity models/default/lathe-kjv-qwen3.gguf -f tests/data/inspect/genesis_1_3.txt --ctx 128 --device gpu 2>/dev/null
$L synth --shape qwen3-0.6b --type q8_0 -o $M/q06.gguf >/dev/null
echo "== bench qwen3-0.6b q8_0"; $L bench $M/q06.gguf -p 512 -n 128 -r 3 2>&1 | tail -2
echo "== check qwen3-0.6b q8_0"; $L check $M/q06.gguf --steps 32 2>&1 | tail -2
if [ "$mode" = full ]; then
  for spec in "qwen3-8b q8_0" "qwen3-8b q4_k_m" "llama3-8b q8_0"; do
    set -- $spec
    $L synth --shape $1 --type $2 -o $M/big.gguf >/dev/null
    echo "== bench $1 $2"; $L bench $M/big.gguf -p 512 -n 128 -r 3 --profile 2>&1 | tail -14
    echo "== check $1 $2"; $L check $M/big.gguf --prompt-tokens 8 --steps 2 2>&1 | tail -2
    rm -f $M/big.gguf
  done
fi
