// What the card probes share (scripts/probes/build.sh): a CUDA call checked, the globaltimer, the
// SM's id, and a launch's configuration with or without a programmatic dependency on the one before.
#pragma once
#include <cstdio>

#define CK(x)                                        \
  do {                                               \
    cudaError_t e = (x);                             \
    if (e != cudaSuccess) {                          \
      printf("%s: %s\n", #x, cudaGetErrorString(e)); \
      return 1;                                      \
    }                                                \
  } while (0)

__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned smid() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

// grid x block threads with smem bytes on stream; programmatic: may start before the kernel before it
// ends (its griddepcontrol.wait waits for it). attr: storage that outlives the launch call.
inline cudaLaunchConfig_t launch_config(int grid, int block, size_t smem, cudaStream_t stream, bool programmatic,
                                        cudaLaunchAttribute& attr) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(block);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = programmatic ? 1 : 0;
  return cfg;
}

// Timed work: ROUNDS x 32 FFMAs (issue-bound), then a chain of SHUFFLES 8-lane shuffles (latency-bound),
// as a norm's quantization mixes them.
template <int ROUNDS, int SHUFFLES>
__device__ __forceinline__ float ffma_then_shuffles(float a, float b) {
#pragma unroll 1
  for (int i = 0; i < ROUNDS; ++i) {
#pragma unroll
    for (int j = 0; j < 32; ++j) a = fmaf(a, 1.0001f, b);
  }
#pragma unroll 1
  for (int i = 0; i < SHUFFLES; ++i) a = a * 0.999f + __shfl_xor_sync(0xffffffffu, a, 1 + (i & 3), 8);
  return a;
}
