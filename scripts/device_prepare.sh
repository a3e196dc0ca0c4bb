#!/usr/bin/env bash
# Prepares what scripts/device_run.sh carries to the GPU machine: a Release build of lathe and the GPU
# tests (build-dev), the binaries in build-dev/carry, their shared libraries in build-dev/devlibs, and
# the standalone program `lathe emit` writes for the default model (build-dev/carry/emitted).
# All of it is packed, stripped and xz-compressed, into build-dev/pack.tar.xz (the device tool carries
# at most 64 MiB with the working tree). Then call the device tool's run with carry
# ["build-dev/pack.tar.xz"] and
#   scripts/device_run.sh tests checks bench ...
# DEV_BUILD=build takes the binaries from scripts/test.sh's Release build (every test built there, the
# GPU ones too) instead of building build-dev's: one build instead of two on a fresh checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${DEV_BUILD:-build-dev}
[ "$B" = build-dev ] && cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DLATHE_TEST_GLOB="test_*_gpu" >/dev/null
cmake --build $B -j"$(nproc)"
rm -rf build-dev/carry && mkdir -p build-dev/carry
cp $B/lathe build-dev/carry/
for t in $B/tests/test_*_gpu; do [ -x "$t" ] && cp "$t" build-dev/carry/; done
scripts/device_libs.sh build-dev/devlibs $B/lathe build-dev/carry/test_*_gpu >/dev/null
# The kernel library, compiled into a cache kept between runs (build-dev/kcache-all: a library whose
# sources and defines did not change is a hit, seconds instead of minutes on 2 cores); the cubins
# this run names are copied to build-dev/kcache, which is what is carried.
rm -rf build-dev/kcache && mkdir -p build-dev/kcache build-dev/kcache-all
# (tee -a: where stderr is a file, a plain tee would open it again from its start, overwriting the log.)
kernels() {  # VAR=VALUE... for the compile
  env "$@" LATHE_CACHE_DIR=build-dev/kcache-all $B/lathe kernels --arch sm_90 2>&1 | tee -a /dev/stderr |
    sed -n 's/.*: \(build-dev\/kcache-all\/[0-9a-f]*\.cubin\).*/\1/p' | xargs -r cp -t build-dev/kcache/
}
kernels
# and the library with the products' edge stamps (LATHE_STAMPS: runtime/product_stamps.h), unless
# SKIP_STAMPS=1
[ "${SKIP_STAMPS:-0}" = 1 ] || kernels LATHE_STAMPS=on
# and compile-time variants a batch measures (LATHE_KERNEL_DEFINES, kernels/library.h): PREP_DEFINES
# holds them separated by ';', e.g. "-DLATHE_GEMV1_BEFORE_WAIT=1;-DLATHE_GEMV1_BEFORE_WAIT=2"
IFS=';' read -ra variants <<< "${PREP_DEFINES:-}"
for v in "${variants[@]}"; do
  kernels LATHE_KERNEL_DEFINES="$v" &
done
wait
# and variants with the stamps: STAMP_DEFINES, separated by ';' as PREP_DEFINES
IFS=';' read -ra stamp_variants <<< "${STAMP_DEFINES:-}"
for v in "${stamp_variants[@]}"; do
  kernels LATHE_STAMPS=on LATHE_KERNEL_DEFINES="$v" &
done
wait
[ "${SKIP_EMITTED:-0}" = 1 ] || scripts/build_emitted.sh $B/lathe
# and, EMITTED_SYNTH="SHAPE TYPE LAYERS", the program for that synthetic checkpoint (device_run.sh g2)
[ -z "${EMITTED_SYNTH:-}" ] || scripts/build_emitted.sh $B/lathe $EMITTED_SYNTH
strip build-dev/carry/*
tar -cJf build-dev/pack.tar.xz -C build-dev carry kcache devlibs $([ -d build-dev/old ] && echo old)
# SLIM=1: also build-dev/pack-slim.tar.xz, only what lathe bench needs (lathe, its kernel library,
# devlibs: ~5.5 MB), for batches that carry something large beside it (device_run.sh i2, i3: llama-bench)
[ "${SLIM:-0}" = 1 ] && tar -cJf build-dev/pack-slim.tar.xz -C build-dev carry/lathe kcache devlibs
du -sh build-dev/carry build-dev/devlibs build-dev/kcache build-dev/pack.tar.xz
