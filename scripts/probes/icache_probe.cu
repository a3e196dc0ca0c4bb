// A card probe (scripts/probes/build.sh builds it; docs/perf.md, thirtieth session): what running
// straight-line code for the first time costs on an SM. Each block (one an SM) times the same 16 KB
// of FFMAs twice in a row (pass 0 fetches the code, pass 1 finds it in the SM's caches), in states:
// the code just run on that SM, evicted from the SM by seven other copies but in L2, evicted from
// the SM and from L2 (a 256 MB read between), and with the SM's TPC partner streaming DRAM while it
// runs (blocks on even SMs stream, odd ones time the code), as a decode step's launches meet it.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe.h"

constexpr int kThreads = 256;
constexpr int kFfma = 1024;  // 16 bytes each: 16 KB of code a copy

// mode 0: every block times the code; mode 1: blocks on even SMs stream src, odd ones time the
// code once the streaming has begun. t[2 * block + pass]: ns (0 where the block did not time).
template <int V>
__global__ void __launch_bounds__(kThreads, 1) code_run(int mode, float* out, unsigned long long* t, const int4* src,
                                                         size_t per_block16, int4* sink) {
  extern __shared__ int4 fill_sm[];  // sized by the host so that one block fits an SM
  const unsigned s = smid();
  if (mode == 1 && (s & 1) == 0) {
    const int4* p = src + blockIdx.x * per_block16;
    int4 acc = make_int4(0, 0, 0, 0);
    for (size_t i = threadIdx.x; i + 7 * kThreads < per_block16; i += 8 * kThreads) {
      int4 v[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = __ldcs(p + i + j * kThreads);
#pragma unroll
      for (int j = 0; j < 8; ++j) acc.x ^= v[j].x ^ v[j].w;
    }
    if (acc.x == 0x12345678) sink[blockIdx.x] = acc;
    t[2 * blockIdx.x] = t[2 * blockIdx.x + 1] = 0;
    return;
  }
  if (mode == 1) {  // let the partners' streams begin
    const unsigned long long t0 = gtime();
    while (gtime() - t0 < 3000) {
    }
  }
  float a[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) a[j] = threadIdx.x * 1e-3f + j;
#pragma unroll 1
  for (int pass = 0; pass < 2; ++pass) {
    __syncthreads();
    const unsigned long long t0 = gtime();
#pragma unroll
    for (int i = 0; i < kFfma; ++i) a[i & 7] = fmaf(a[i & 7], 1.0001f + V * 1e-6f, (i + 1) * 1e-7f);
    __syncthreads();
    const unsigned long long t1 = gtime();
    if (threadIdx.x == 0) t[2 * blockIdx.x + pass] = t1 - t0;
  }
  float r = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) r += a[j];
  out[blockIdx.x * kThreads + threadIdx.x] = r;
}

__global__ void read_all(const int4* src, size_t n16, int4* sink) {
  int4 acc = make_int4(0, 0, 0, 0);
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += size_t(gridDim.x) * blockDim.x) {
    const int4 v = __ldcs(src + i);
    acc.x ^= v.x;
  }
  if (acc.x == 0x12345678) sink[0] = acc;
}

using Kernel = void (*)(int, float*, unsigned long long*, const int4*, size_t, int4*);
static const Kernel kCopies[8] = {code_run<0>, code_run<1>, code_run<2>, code_run<3>,
                                  code_run<4>, code_run<5>, code_run<6>, code_run<7>};

int main() {
  int n_sm = 0;
  CK(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, 0));
  const size_t smem = 160 * 1024, flush_bytes = size_t(256) << 20;
  for (Kernel k : kCopies) CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  float* out;
  unsigned long long* t;
  int4 *src, *sink;
  CK(cudaMalloc(&out, n_sm * kThreads * sizeof(float)));
  CK(cudaMalloc(&t, 2 * n_sm * sizeof(unsigned long long)));
  CK(cudaMalloc(&src, flush_bytes));
  CK(cudaMalloc(&sink, n_sm * sizeof(int4)));
  CK(cudaMemset(src, 1, flush_bytes));
  const size_t per_block16 = flush_bytes / 16 / n_sm;
  std::vector<unsigned long long> h(2 * n_sm);

  auto run = [&](int copy, int mode) -> int {
    kCopies[copy]<<<n_sm, kThreads, smem>>>(mode, out, t, src, per_block16, sink);
    CK(cudaGetLastError());
    return 0;
  };
  auto others = [&]() -> int {  // copies 1..7: copy 0 leaves the SMs' instruction caches
    for (int c = 1; c < 8; ++c)
      if (run(c, 0)) return 1;
    return 0;
  };
  auto flush = [&]() -> int {
    read_all<<<4 * n_sm, 512>>>(src, flush_bytes / 16, sink);
    CK(cudaGetLastError());
    return 0;
  };
  // median over the timing blocks of each pass; returns 1 on a CUDA error
  auto report = [&](const char* what) -> int {
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(h.data(), t, h.size() * sizeof(h[0]), cudaMemcpyDeviceToHost));
    std::vector<unsigned long long> p0, p1;
    for (int b = 0; b < n_sm; ++b)
      if (h[2 * b]) p0.push_back(h[2 * b]), p1.push_back(h[2 * b + 1]);
    std::sort(p0.begin(), p0.end());
    std::sort(p1.begin(), p1.end());
    printf("%-58s blocks %3zu  pass0 %6llu ns (max %6llu)  pass1 %6llu ns\n", what, p0.size(), p0[p0.size() / 2],
           p0.back(), p1[p1.size() / 2]);
    return 0;
  };
  printf("16 KB of FFMAs (%d a thread, %d threads, one block an SM), median over blocks:\n", kFfma, kThreads);
  if (run(0, 0) || report("first launch of the copy")) return 1;
  for (int rep = 0; rep < 2; ++rep) {
    if (run(0, 0) || report("again at once (SM warm)")) return 1;
    if (others() || run(0, 0) || report("after 7 other copies (SM cold, L2 warm)")) return 1;
    if (others() || flush() || run(0, 0) || report("after 7 copies and a 256 MB read (SM, L2 cold)")) return 1;
    if (others() || run(0, 1) || report("SM cold, L2 warm, TPC partner streaming")) return 1;
    if (others() || flush() || run(0, 1) || report("SM, L2 cold, TPC partner streaming")) return 1;
    if (run(0, 1) || report("SM warm, TPC partner streaming")) return 1;
  }
  return 0;
}
