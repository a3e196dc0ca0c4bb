#!/usr/bin/env bash
# Builds the card probes (scratch measurements of the H200 itself, not of Lathe: docs/perf.md, the
# twenty-seventh session) into DIR (default build-dev/probe), with nvcc for sm_90.
# Usage: scripts/probes/build.sh [DIR]; then run each binary alone on the device (device_run.sh k2).
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${1:-build-dev/probe}
mkdir -p "$D"
# pick_probe includes the library's router code (moe_route.cuh and what it builds on), whose typedefs
# (NVRTC has no <cstdint>) nvcc refuses
for f in common gemv_blocks moe_route; do grep -v '^typedef' src/kernels/$f.cuh; done > "$D/kernels_local.cuh"
for p in cluster_probe edge_probe pick_probe icache_probe wake_probe neighbour_probe ffn_probe stream_probe; do
  nvcc -O3 -arch=sm_90 -std=c++17 -I"$D" scripts/probes/$p.cu -o "$D/$p"
done
# stream_probe's forms measured in the forty-fifth session (docs/perf.md): the refill of an op's last slot
# after the warp's signal, and with it at most one fill a warp in flight
nvcc -O3 -arch=sm_90 -std=c++17 -DSIGNAL=1 -DDEFER_LAST_FILL=1 -diag-suppress 186 -I"$D" scripts/probes/stream_probe.cu -o "$D/stream_probe_defer"
nvcc -O3 -arch=sm_90 -std=c++17 -DSIGNAL=1 -DDEFER_LAST_FILL=1 -DPACE=1 -diag-suppress 186 -I"$D" scripts/probes/stream_probe.cu -o "$D/stream_probe_paced"
