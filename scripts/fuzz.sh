#!/usr/bin/env bash
# Builds the GGUF reader's libFuzzer target with clang and ASan/UBSan, then fuzzes it for SECONDS
# (default 60) from the malformed corpus and a good file. A crash fails the script.
# Usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLATHE_FUZZ=ON \
  -DLATHE_SANITIZE=ON -DLATHE_STAGES="base;gguf" -DLATHE_TEST_GLOB="none" -DLATHE_CLI=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_gguf_reader
corpus="build-fuzz/corpus"
mkdir -p "$corpus"
cp tests/data/gguf_bad/*.gguf tests/data/gguf/*.gguf "$corpus"/ 2>/dev/null || true
echo "fuzzing the GGUF reader for ${seconds}s"
build-fuzz/fuzz/fuzz_gguf_reader -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
  -print_final_stats=1 "$corpus" 2>&1 | tail -n 12
