#!/usr/bin/env bash
# The test command of the README: set up (once), build, run every CPU test, then the fuzzers for a
# bounded time. GPU tests skip themselves where there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/CMakeCache.txt ]; then scripts/setup.sh --no-build; fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
(cd build && ctest --output-on-failure -j"$(nproc)" -LE gpu)
scripts/fuzz.sh 60
