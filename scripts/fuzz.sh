#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and ASan/UBSan, then fuzzes each for SECONDS (default 60):
#   fuzz_gguf_reader  from the malformed GGUF corpus and a good file
#   fuzz_program      from the built-in programs and the language tests' programs, with the
#                     language's words as a dictionary
#   fuzz_tokenizer    from the tokenizer fixtures' texts (each byte-level tokenizer must give any
#                     bytes back)
# A crash, a sanitizer report or an uncaught non-user error fails the script.
# Usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLATHE_FUZZ=ON \
  -DLATHE_SANITIZE=ON -DLATHE_STAGES="base;gguf;model;lang;interp;graph;fuse" -DLATHE_TEST_GLOB="none" \
  -DLATHE_CLI=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_gguf_reader fuzz_program fuzz_tokenizer

corpus="build-fuzz/corpus"
mkdir -p "$corpus"
cp tests/data/gguf_bad/*.gguf tests/data/gguf/*.gguf "$corpus"/ 2>/dev/null || true
echo "fuzzing the GGUF reader for ${seconds}s"
build-fuzz/fuzz/fuzz_gguf_reader -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
  -print_final_stats=1 "$corpus" 2>&1 | tail -n 12

programs="build-fuzz/corpus_programs"
mkdir -p "$programs"
cp models/*.lathe tests/data/lang/*.lathe tests/data/programs/*.lathe "$programs"/
echo "fuzzing the language's front door (parse, check, lift, fuse, interpret) for ${seconds}s"
build-fuzz/fuzz/fuzz_program -max_total_time="$seconds" -max_len=16384 -rss_limit_mb=2048 -timeout=20 \
  -dict=fuzz/program.dict -print_final_stats=1 "$programs" 2>&1 | tail -n 12

texts="build-fuzz/corpus_texts"
mkdir -p "$texts"
python3 - "$texts" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
for i, name in enumerate(["qwen2", "llama3", "gpt2", "spm"]):
    cases = json.loads(pathlib.Path(f"tests/data/tokenizer/{name}.json").read_text())["cases"]
    for j, c in enumerate(cases):
        (out / f"{name}_{j}").write_bytes(bytes([i]) + c["text"].encode())
PY
echo "fuzzing the tokenizers (any bytes there and back) for ${seconds}s"
build-fuzz/fuzz/fuzz_tokenizer -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=2048 -timeout=20 \
  -print_final_stats=1 "$texts" 2>&1 | tail -n 12
