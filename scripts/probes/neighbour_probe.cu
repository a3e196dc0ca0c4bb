// A card probe (scripts/probes/build.sh builds it; docs/perf.md, thirty-third session): whether one
// block's work runs slower while the next kernel's blocks, launched programmatically, sit in
// griddepcontrol.wait beside it. The stamps (device_run.sh pd1) put the 30B router's pick phase at
// 2.56 us with programmatic launch and 1.50 with it off. Kernel A: block 0 times REPS rounds of
// work (a rank count over 128 keys in shared memory, then FFMAs and a shuffle chain) by clock64, the
// other blocks leave at once; every block releases its dependents first (or none does); where asked,
// each round also follows chains of loads through L2. Kernel B:
// N blocks of 512 threads that wait, then leave. Printed: block 0's cycles a round, median over the
// rounds after B's blocks are resident (B stamps when it is ready), by case.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe.h"

constexpr int kThreads = 512, kReps = 400;

// chase: when not null, each of the first 128 threads also follows 16 dependent loads through L2 (a
// random cycle over 4 MB, __ldcg: the L1 passed by), as a tail's first reads and cold code go to L2.
__device__ __forceinline__ float work(float a, float b, const unsigned long long* keys, const unsigned* chase) {
  if (chase && threadIdx.x < 128) {
    unsigned i = threadIdx.x * 4099u;
#pragma unroll 1
    for (int j = 0; j < 16; ++j) i = __ldcg(chase + (i & ((1u << 20) - 1)));
    a += float(i & 1) * 1e-9f;
  }
  // the pick's ranks: each of the first 128 threads counts the keys above its own
  if (threadIdx.x < 128) {
    const unsigned long long k = keys[threadIdx.x];
    int r = 0;
#pragma unroll 8
    for (int i = 0; i < 128; ++i) r += keys[i] > k ? 1 : 0;
    a += float(r) * 1e-3f;
  }
  return ffma_then_shuffles<4, 16>(a, b);
}

// cyc[rep]: block 0's cycles for round rep; at[rep]: the globaltimer at its end
__global__ void __launch_bounds__(kThreads, 1)
    worker(int release, unsigned long long hold_ns, const unsigned* chase, long long* cyc, unsigned long long* at,
           unsigned* sm0, float* out) {
  extern __shared__ int4 fill_a[];
  __shared__ unsigned long long keys[128];
  if (release) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (blockIdx.x != 0) {  // the others hold their SMs for hold_ns, then leave
    const unsigned long long t0 = gtime();
    while (gtime() - t0 < hold_ns) {
    }
    return;
  }
  if (threadIdx.x == 0) *sm0 = smid();
  if (threadIdx.x < 128) keys[threadIdx.x] = (threadIdx.x * 2654435761ull) & 0xffffffull;
  __syncthreads();
  float a = threadIdx.x * 1e-3f;
  a = work(a, 1e-7f, keys, chase);  // warm code
  __syncthreads();
  for (int rep = 0; rep < kReps; ++rep) {
    const long long t0 = clock64();
    a = work(a, 1e-7f, keys, chase);
    __syncthreads();
    if (threadIdx.x == 0) {
      cyc[rep] = clock64() - t0;
      at[rep] = gtime();
    }
  }
  out[threadIdx.x] = a;
}

// ready[block]: the globaltimer when the block is ready to wait; sm[block]: its SM
__global__ void __launch_bounds__(kThreads, 1) waiter(unsigned long long* ready, unsigned* sm) {
  extern __shared__ int4 fill_b[];
  if (threadIdx.x == 0) {
    ready[blockIdx.x] = gtime();
    sm[blockIdx.x] = smid();
  }
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

int main() {
  long long* cyc;
  unsigned long long *at, *ready;
  unsigned *sm, *sm0;
  float* out;
  CK(cudaMalloc(&cyc, kReps * 8));
  CK(cudaMalloc(&at, kReps * 8));
  CK(cudaMalloc(&ready, 1024 * 8));
  CK(cudaMalloc(&sm, 1024 * 4));
  CK(cudaMalloc(&sm0, 4));
  CK(cudaMalloc(&out, kThreads * 4));
  // a random cycle over 2^20 words (4 MB: in L2)
  unsigned* chase;
  {
    std::vector<unsigned> order(1u << 20), next(1u << 20);
    for (unsigned i = 0; i < order.size(); ++i) order[i] = i;
    unsigned long long r = 88172645463325252ull;
    for (unsigned i = order.size() - 1; i > 0; --i) {
      r ^= r << 13, r ^= r >> 7, r ^= r << 17;
      std::swap(order[i], order[r % (i + 1)]);
    }
    for (unsigned i = 0; i < order.size(); ++i) next[order[i]] = order[(i + 1) % order.size()];
    CK(cudaMalloc(&chase, next.size() * 4));
    CK(cudaMemcpy(chase, next.data(), next.size() * 4, cudaMemcpyHostToDevice));
  }
  CK(cudaFuncSetAttribute(worker, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  CK(cudaFuncSetAttribute(waiter, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  struct Case {
    const char* name;
    int release, b_blocks;
    size_t a_smem, b_smem;
    unsigned long long hold_ns;
    bool chase;
  };
  // 120 KB of A's leaves no room for a 120- or 100-KB block of B's beside it (228 KB an SM)
  const Case cases[] = {
      {"alone (no B)", 1, 0, 100 << 10, 0, 0, false},
      {"B 132 blocks, 64 KB: resident at once", 1, 132, 100 << 10, 64 << 10, 0, false},
      {"B 264 blocks, 16 KB: resident at once", 1, 264, 100 << 10, 16 << 10, 0, false},
      {"B 132 blocks, 64 KB, A releases none", 0, 132, 100 << 10, 64 << 10, 0, false},
      {"B 132 x 120 KB arriving at 100 us", 1, 132, 120 << 10, 120 << 10, 100000, false},
      {"B 264 x 100 KB arriving at 100 us", 1, 264, 120 << 10, 100 << 10, 100000, false},
      {"L2 chase: alone", 1, 0, 100 << 10, 0, 0, true},
      {"L2 chase: B 132 resident", 1, 132, 100 << 10, 64 << 10, 0, true},
      {"L2 chase: B 264 resident", 1, 264, 100 << 10, 16 << 10, 0, true},
      {"L2 chase: B 132, A releases none", 0, 132, 100 << 10, 64 << 10, 0, true},
      {"L2 chase: alone again", 1, 0, 100 << 10, 0, 0, true},
  };
  printf("block 0's rounds (a rank count over 128 keys, 128 FFMAs, 16 shuffles; %d threads), cycles a round\n",
         kThreads);
  printf("%-40s %8s %8s %8s %10s %12s %10s\n", "case", "first 20", "median", "after B", "B resident", "B on its SM",
         "B arriving");
  for (const Case& c : cases) {
    for (int trial = 0; trial < 3; ++trial) {
      CK(cudaMemset(ready, 0, 1024 * 8));
      cudaLaunchAttribute attr_a, attr_b;
      cudaLaunchConfig_t ca = launch_config(132, kThreads, c.a_smem, s, false, attr_a);
      CK(cudaLaunchKernelEx(&ca, worker, c.release, c.hold_ns, c.chase ? chase : nullptr, cyc, at, sm0, out));
      if (c.b_blocks) {
        cudaLaunchConfig_t cb = launch_config(c.b_blocks, kThreads, c.b_smem, s, true, attr_b);
        CK(cudaLaunchKernelEx(&cb, waiter, ready, sm));
      }
      CK(cudaStreamSynchronize(s));
      std::vector<long long> cy(kReps);
      std::vector<unsigned long long> t(kReps), rd(1024, 0);
      std::vector<unsigned> sms(1024, 0);
      CK(cudaMemcpy(cy.data(), cyc, kReps * 8, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(t.data(), at, kReps * 8, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(rd.data(), ready, 1024 * 8, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(sms.data(), sm, 1024 * 4, cudaMemcpyDeviceToHost));
      // B resident: its last block's ready stamp; rounds that end after it
      unsigned long long last_ready = 0;
      for (int b = 0; b < c.b_blocks; ++b) last_ready = std::max(last_ready, rd[b]);
      std::vector<long long> after, first(cy.begin(), cy.begin() + 20), all(cy);
      for (int r = 0; r < kReps; ++r)
        if (c.b_blocks && rd[0] && t[r] > last_ready + 2000) after.push_back(cy[r]);
      auto med = [](std::vector<long long> v) {
        if (v.empty()) return -1ll;
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
      };
      // how many of B's blocks ran on block 0's SM
      unsigned h = 0;
      CK(cudaMemcpy(&h, sm0, 4, cudaMemcpyDeviceToHost));
      int beside = c.b_blocks ? 0 : -1;
      for (int b = 0; b < c.b_blocks; ++b) beside += sms[b] == h;
      const long long span_us = c.b_blocks && last_ready ? (long long)(last_ready - t[0]) / 1000 : -1;
      // the rounds that end within 10 us of B's first block ready: the slowest of them
      unsigned long long first_ready = ~0ull;
      for (int b = 0; b < c.b_blocks; ++b)
        if (rd[b]) first_ready = std::min(first_ready, rd[b]);
      long long at_arrival = -1;
      for (int r = 0; r < kReps; ++r)
        if (c.b_blocks && t[r] + 2000 > first_ready && t[r] < first_ready + 10000) at_arrival = std::max(at_arrival, cy[r]);
      printf("%-40s %8lld %8lld %8lld %8lld us %12d %10lld\n", trial ? "" : c.name, med(first), med(all), med(after),
             span_us, beside, at_arrival);
    }
  }
  return 0;
}
