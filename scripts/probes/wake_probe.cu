// A card probe (scripts/probes/build.sh builds it; docs/perf.md, thirtieth session): whether a block
// that sat in griddepcontrol.wait runs slower once it returns. Kernel A (64 blocks, one an SM)
// releases its dependents at once and spins for D us; kernel B (132 blocks, one an SM, launched
// programmatically after A) stamps when it is ready to wait and when its wait returns, then times
// the same work twice: 256 FFMAs a thread and a chain of 32 8-lane shuffles (warm code: both ran
// once before the wait). B's blocks on the SMs A leaves free wait ~D us; the others arrive as A's
// blocks exit. Printed by how long a block waited: its work's time after the wait, and again right
// after; and the release (A's last block's end -> B's first wait return) by how many bytes B's
// blocks asked DRAM for before it.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe.h"

constexpr int kThreads = 512;

__global__ void __launch_bounds__(kThreads, 1) hold(unsigned long long spin_ns, unsigned long long* ends) {
  extern __shared__ int4 fill_a[];
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const unsigned long long t0 = gtime();
  while (gtime() - t0 < spin_ns) {
  }
  __syncthreads();
  if (threadIdx.x == 0) ends[blockIdx.x] = gtime();
}

// The timed work: 256 FFMAs, then 32 shuffles (probe.h).
__device__ __forceinline__ float work(float a, float b) { return ffma_then_shuffles<8, 32>(a, b); }

// rec[8 * block + ...]: ready to wait, wait return, after work 1, after work 2
// Before its wait a block asks DRAM for n_pre 16-byte loads a thread (its own part of src), used after.
__global__ void __launch_bounds__(kThreads, 1) waiter(unsigned long long* rec, float* out, const int4* src, int n_pre) {
  extern __shared__ int4 fill_b[];
  float a = threadIdx.x * 1e-3f, b = 1e-7f;
  a = work(a, b);  // the code warm before the wait
  __syncthreads();
  const unsigned long long entry = gtime();  // ready to wait
  int4 v[8];
  const int4* p = src + (size_t(blockIdx.x) * 8) * kThreads + threadIdx.x;
#pragma unroll
  for (int j = 0; j < 8; ++j) v[j] = j < n_pre ? __ldcs(p + j * kThreads) : make_int4(0, 0, 0, 0);
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const unsigned long long t1 = gtime();
#pragma unroll
  for (int j = 0; j < 8; ++j) b += float(v[j].x & 1) * 1e-9f;
  a = work(a, b);
  __syncthreads();
  const unsigned long long t2 = gtime();
  a = work(a, b);
  __syncthreads();
  const unsigned long long t3 = gtime();
  if (threadIdx.x == 0) {
    unsigned long long* r = rec + 8 * blockIdx.x;
    r[0] = entry, r[1] = t1, r[2] = t2, r[3] = t3;
  }
  out[blockIdx.x * kThreads + threadIdx.x] = a;
}

int main() {
  int n_sm = 0;
  CK(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, 0));
  const int smem = 160 * 1024, a_blocks = 64;
  CK(cudaFuncSetAttribute(hold, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(waiter, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  unsigned long long *ends, *rec;
  float* out;
  int4* src;
  const size_t src_bytes = size_t(1) << 30, per_round16 = size_t(8) * kThreads * 132;
  CK(cudaMalloc(&src, src_bytes));
  CK(cudaMemset(src, 1, src_bytes));
  CK(cudaMalloc(&ends, a_blocks * sizeof(unsigned long long)));
  CK(cudaMalloc(&rec, 8 * n_sm * sizeof(unsigned long long)));
  CK(cudaMalloc(&out, n_sm * kThreads * sizeof(float)));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  std::vector<unsigned long long> he(a_blocks), hr(8 * n_sm);
  printf("B's blocks by how long they waited (us): median over blocks and 20 rounds\n");
  printf("%8s %6s %-14s %7s %9s %9s %9s\n", "A spins", "KB pre", "waited", "blocks", "work 1", "work 2", "release");
  for (int n_pre : {0, 2, 4, 8})
  for (unsigned long long spin : {0ull, 5000ull, 20000ull}) {
    // buckets by wait: <0.5, 0.5-2, 2-5, >5 us
    std::vector<std::vector<double>> w1(4), w2(4), rel;
    rel.resize(1);
    for (int round = 0; round < 21; ++round) {
      hold<<<a_blocks, kThreads, smem, s>>>(spin, ends);
      cudaLaunchAttribute at;
      const cudaLaunchConfig_t cfg = launch_config(n_sm, kThreads, smem, s, true, at);
      const int4* part = src + (size_t(round) * per_round16) % (src_bytes / 16 - per_round16);  // cold lines
      CK(cudaLaunchKernelEx(&cfg, waiter, rec, out, part, n_pre));
      CK(cudaStreamSynchronize(s));
      if (round == 0) continue;  // warm-up
      CK(cudaMemcpy(he.data(), ends, he.size() * 8, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(hr.data(), rec, hr.size() * 8, cudaMemcpyDeviceToHost));
      const unsigned long long last_end = *std::max_element(he.begin(), he.end());
      unsigned long long first_ret = ~0ull;
      for (int b = 0; b < n_sm; ++b) {
        const unsigned long long* r = &hr[8 * b];
        first_ret = std::min(first_ret, r[1]);
        const double waited = (r[1] - r[0]) / 1000.0;
        const int k = waited < 0.5 ? 0 : waited < 2 ? 1 : waited < 5 ? 2 : 3;
        w1[k].push_back((r[2] - r[1]) / 1000.0);
        w2[k].push_back((r[3] - r[2]) / 1000.0);
      }
      rel[0].push_back((double(first_ret) - double(last_end)) / 1000.0);
    }
    auto med = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.empty() ? -1.0 : v[v.size() / 2];
    };
    const char* names[] = {"< 0.5", "0.5 - 2", "2 - 5", "> 5"};
    for (int k = 0; k < 4; ++k)
      if (!w1[k].empty())
        printf("%8.1f %6d %-14s %7zu %9.3f %9.3f %9.3f\n", spin / 1000.0, n_pre * 8, names[k], w1[k].size() / 20,
               med(w1[k]), med(w2[k]), med(rel[0]));
  }
  return 0;
}
