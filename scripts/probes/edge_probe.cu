// A card probe (scripts/probes/build.sh builds it; docs/perf.md, twenty-seventh session): a launch edge
// in a CUDA graph of one-block-an-SM kernels, each streaming S bytes: (0) programmatic launch,
// griddepcontrol.wait then launch_dependents (the lane's form); (1) the same launch, but each block
// waits for the blocks of the kernel before by polling their flags (a word a block, st.release after
// its writes; the consumer ld.acquire's them all), no griddepcontrol.wait; (3) one counter a kernel;
// (2) plain launches.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe.h"

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__global__ void __launch_bounds__(512, 1) link(int mode, const int4* __restrict__ src, size_t per_block16, int4* sink,
                                               const unsigned* prev_flags, unsigned* my_flags, int n_prev) {
  extern __shared__ int4 sm[];
  if (mode == 0) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  } else if (mode == 3) {
    // one counter a kernel: every block adds 1 at its end; wait until the kernel before's reaches
    // (runs + 1) * n_prev, runs counted in this kernel's own word [1 + blockIdx.x]
    __shared__ unsigned want3;
    if (threadIdx.x == 0) want3 = (my_flags[1 + blockIdx.x] + 1) * n_prev;
    __syncthreads();
    if (threadIdx.x == 0 && prev_flags) {
      const unsigned w = want3;
      while ((int)(ld_acquire(prev_flags) - w) < 0) {
      }
    }
    __syncthreads();
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  } else if (mode == 1) {
    __shared__ unsigned want;
    if (threadIdx.x == 0) want = my_flags[blockIdx.x] + 1;  // this block's runs so far, + this one
    __syncthreads();
    if (threadIdx.x < 32 && prev_flags) {
      const unsigned w = want;
      for (;;) {
        bool ok = true;
        for (int b = threadIdx.x; b < n_prev; b += 32) ok &= (int)(ld_acquire(prev_flags + b) - w) >= 0;
        if (__all_sync(0xffffffff, ok)) break;
      }
    }
    __syncthreads();
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  }
  int4 acc = make_int4(0, 0, 0, 0);
  const int4* p = src + blockIdx.x * per_block16;
  for (size_t i = threadIdx.x; i < per_block16; i += 4 * blockDim.x) {
    int4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      v[u] = (i + u * blockDim.x < per_block16) ? __ldcs(p + i + u * blockDim.x) : make_int4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      acc.x ^= v[u].x;
      acc.y += v[u].y;
    }
  }
  if (acc.x == 0x7fffffff) sink[blockIdx.x * 512 + threadIdx.x] = acc;
  if (mode == 1) {
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      st_release(my_flags + blockIdx.x, my_flags[blockIdx.x] + 1);
    }
  } else if (mode == 3) {
    __syncthreads();
    if (threadIdx.x == 0) {
      my_flags[1 + blockIdx.x] += 1;
      __threadfence();
      atomicAdd(my_flags, 1u);
    }
  }
}

int main() {
  int dev_sms;
  cudaDeviceGetAttribute(&dev_sms, cudaDevAttrMultiProcessorCount, 0);
  const int blocks = dev_sms, smem = 120 * 1024, n_kernels = 64;
  CK(cudaFuncSetAttribute(link, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  size_t total = 8ull << 30;
  int4* src;
  CK(cudaMalloc(&src, total));
  CK(cudaMemset(src, 1, total));
  int4* sink;
  CK(cudaMalloc(&sink, blocks * 512 * 16));
  unsigned* flags;
  CK(cudaMalloc(&flags, (n_kernels + 1) * 512 * 4));
  cudaStream_t s;
  cudaStreamCreate(&s);
  const char* names[] = {"programmatic wait", "flags polled", "plain launches", "one counter"};
  printf("%d kernels a graph, %d blocks of 512 threads, one an SM; us a kernel (median of 20 replays)\n", n_kernels,
         blocks);
  for (double mb : {0.0, 4.0, 17.8, 53.5}) {
    size_t per_block16 = (size_t)(mb * 1e6 / blocks / 16);
    for (int mode : {0, 1, 3, 2}) {
      cudaGraph_t g;
      cudaGraphExec_t ge;
      CK(cudaMemset(flags, 0, (n_kernels + 1) * 512 * 4));
      CK(cudaDeviceSynchronize());
      CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
      for (int k = 0; k < n_kernels; ++k) {
        cudaLaunchAttribute a;
        const cudaLaunchConfig_t cfg = launch_config(blocks, 512, smem, s, mode != 2 && k != 0, a);
        // each kernel reads its own part of the 8 GB so nothing is an L2 hit
        const int4* base = src + ((size_t)k * per_block16 * blocks) % (total / 16 - per_block16 * blocks + 1);
        CK(cudaLaunchKernelEx(&cfg, link, mode, base, per_block16, sink,
                              k == 0 ? (const unsigned*)nullptr : flags + (k - 1) * 512, flags + k * 512, blocks));
      }
      CK(cudaStreamEndCapture(s, &g));
      CK(cudaGraphInstantiate(&ge, g, 0));
      std::vector<float> t;
      cudaEvent_t e0, e1;
      cudaEventCreate(&e0);
      cudaEventCreate(&e1);
      for (int r = 0; r < 23; ++r) {
        cudaEventRecord(e0, s);
        CK(cudaGraphLaunch(ge, s));
        cudaEventRecord(e1, s);
        CK(cudaStreamSynchronize(s));
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (r >= 3) t.push_back(ms * 1000.0f / n_kernels);
      }
      std::sort(t.begin(), t.end());
      printf("  %6.1f MB a kernel  %-18s %7.2f us  (%.0f GB/s)\n", mb, names[mode], t[t.size() / 2],
             mb * 1e3 / t[t.size() / 2]);
      cudaGraphExecDestroy(ge);
      cudaGraphDestroy(g);
    }
  }
  return 0;
}
