// How long every block of a grid takes to stage one activation row from L2, the way each decode product
// stages its x right after its programmatic-launch wait (gemv_decode.cuh's lathe_gemv1_stage_x): all
// blocks reading the SAME region against each block its own. A measuring test (its name has Timing:
// the batch's test runs leave it out), for the hypothesis in docs/perf.md (ninth session) that x's
// 3-4.7 us in the step come from 132 SMs asking L2 for the same lines at once. A writer kernel (the
// product before) writes the regions, then the reader stages them: a graph of programmatic launches.
#include "runtime/cuda_driver.h"
#include "test_product_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace lathe::kernels {
namespace {

using cuda::DeviceBuffer;

const char* kSource = R"(
extern "C" __global__ void __launch_bounds__(512, 1) shared_reads_write(float4* x, long long n4) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
    float4 v;
    v.x = float(i);
    v.y = v.z = v.w = 1.0f;
    x[i] = v;
  }
}

// Block b copies n16 16-byte lines of region (shared ? 0 : b) into shared memory with cp.async, as
// a product's x; stamps[2 b] and [2 b + 1] are the globaltimer after the wait and after the copy has
// landed for the whole block.
extern "C" __global__ void __launch_bounds__(512, 1) shared_reads_read(const uint4* x, int n16, int shared,
                                                                       unsigned long long* stamps) {
  extern __shared__ uint4 sm[];
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
  unsigned long long t0, t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const uint4* src = x + (shared ? 0ll : (long long)blockIdx.x * n16);
  for (int i = threadIdx.x; i < n16; i += blockDim.x) {
    const unsigned d = (unsigned)__cvta_generic_to_shared(sm + i);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src + i) : "memory");
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  if (threadIdx.x == 0) {
    stamps[2 * blockIdx.x] = t0;
    stamps[2 * blockIdx.x + 1] = t1;
  }
}
// Until the first phase of the mbarrier at shared address bar has completed.
__device__ __forceinline__ void wait_phase0(unsigned bar) {
  unsigned done;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(bar) : "memory");
  } while (!done);
}

// x behind the weights: before its wait every warp of a block issues `fills` bulk copies of 2,176
// bytes (a decode product's ring) from weights + blockIdx.x * 16 * fills * 2176 (a fresh region each
// launch, or one region L2 already holds), only on blocks with (blockIdx.x & fill_mask) == 0; then
// after the wait x (16 KB of one region) comes in by cp.async (mode 0), by 16-byte loads (mode 1) or
// by one bulk copy (mode 2). stamps: 4 words a block: entry, wait, x landed, every fill landed.
extern "C" __global__ void __launch_bounds__(512, 1) shared_reads_behind(const uint4* x, int n16, const unsigned char* weights,
                                                                         int fills, int fill_mask, int mode,
                                                                         unsigned long long* stamps) {
  extern __shared__ uint4 sm[];
  __shared__ __align__(8) unsigned long long bars[17];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  unsigned long long te, t0, t1, t2;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(te));
  unsigned char* slots = reinterpret_cast<unsigned char*>(sm) + 32768;
  const unsigned bar = (unsigned)__cvta_generic_to_shared(&bars[warp]);
  const unsigned xbar = (unsigned)__cvta_generic_to_shared(&bars[16]);
  const bool filler = (blockIdx.x & fill_mask) == 0;
  if (lane == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
    if (warp == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(xbar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    if (filler && fills > 0) {
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(fills * 2176) : "memory");
      for (int f = 0; f < fills; ++f) {
        const unsigned char* g = weights + ((long long)blockIdx.x * 16 + warp) * fills * 2176 + f * 2176;
        const unsigned d = (unsigned)__cvta_generic_to_shared(slots + (warp * 3 + f) * 2560);
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 2176, [%2];"
                     ::"r"(d), "l"(g), "r"(bar) : "memory");
      }
    }
  }
  __syncthreads();
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  if (mode == 0) {
    for (int i = threadIdx.x; i < n16; i += blockDim.x) {
      const unsigned d = (unsigned)__cvta_generic_to_shared(sm + i);
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(x + i) : "memory");
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.wait_group 0;" ::: "memory");
  } else if (mode == 1) {
    for (int i = threadIdx.x; i < n16; i += blockDim.x) sm[i] = __ldcg(x + i);
  } else if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(xbar), "r"(n16 * 16) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"((unsigned)__cvta_generic_to_shared(sm)), "l"(x), "r"(n16 * 16), "r"(xbar) : "memory");
  }
  if (mode == 2) wait_phase0(xbar);
  __syncthreads();
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  if (filler && fills > 0) wait_phase0(bar);
  __syncthreads();
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t2));
  if (threadIdx.x == 0) {
    stamps[4 * blockIdx.x] = te;
    stamps[4 * blockIdx.x + 1] = t0;
    stamps[4 * blockIdx.x + 2] = t1;
    stamps[4 * blockIdx.x + 3] = t2;
  }
}
)";

TEST(SharedReadsGpu, TimingOneRegionAgainstOneABlock) {
  LATHE_NEED_GPU();
  const cuda::Module m = cuda::Module::compile(kSource, "shared_reads.cu");
  CUfunction write = m.function("shared_reads_write"), read = m.function("shared_reads_read");
  const int blocks = cuda::Context::get().info().sm_count;
  constexpr int kLaunches = 16;
  cuda::Stream s;
  std::printf("  staging x from L2 after a dependent launch, %d blocks (one an SM): us, median block / "
              "first wait to last landing\n", blocks);
  for (int bytes : {4096, 10240, 16384, 30720}) {
    const int n16 = bytes / 16;
    // 100 KB of shared memory a block: one block an SM, as the products.
    const unsigned shared_mem = std::max(bytes, 100 * 1024);
    DeviceBuffer x(static_cast<size_t>(bytes) * blocks), stamps(static_cast<size_t>(kLaunches) * blocks * 16);
    for (int shared : {1, 0}) {
      long long n4 = static_cast<long long>(bytes) * blocks / 16;
      CUdeviceptr xp = x.ptr();
      int n = n16, sh = shared;
      cuda::CapturedGraph g;
      g.begin(s);
      for (int l = 0; l < kLaunches; ++l) {
        CUdeviceptr st = stamps.ptr() + static_cast<CUdeviceptr>(l) * blocks * 16;
        cuda::launch(write, {static_cast<unsigned>(blocks), 1, 1}, {512, 1, 1}, 0, s.handle(), {&xp, &n4},
                     "writing the regions");
        cuda::launch(read, {static_cast<unsigned>(blocks), 1, 1}, {512, 1, 1}, shared_mem, s.handle(),
                     {&xp, &n, &sh, &st}, "staging a region");
      }
      g.end(s);
      g.replay(s);
      g.replay(s);
      s.synchronize();
      std::vector<unsigned long long> t(static_cast<size_t>(kLaunches) * blocks * 2);
      stamps.download(t.data(), t.size() * 8);
      std::vector<double> med, span;
      for (int l = 1; l < kLaunches; ++l) {  // launch 0 follows the previous replay's tail
        std::vector<double> d;
        unsigned long long first = ~0ull, last = 0;
        for (int b = 0; b < blocks; ++b) {
          const unsigned long long t0 = t[(static_cast<size_t>(l) * blocks + b) * 2], t1 = t[(static_cast<size_t>(l) * blocks + b) * 2 + 1];
          d.push_back(static_cast<double>(t1 - t0) / 1e3);
          first = std::min(first, t0);
          last = std::max(last, t1);
        }
        std::sort(d.begin(), d.end());
        med.push_back(d[d.size() / 2]);
        span.push_back(static_cast<double>(last - first) / 1e3);
      }
      std::sort(med.begin(), med.end());
      std::sort(span.begin(), span.end());
      std::printf("  %6d bytes, %-14s %6.2f / %6.2f\n", bytes, shared ? "one region" : "one a block",
                  med[med.size() / 2], span[span.size() / 2]);
      EXPECT_GT(med[med.size() / 2], 0.0);
    }
  }
}

// The ninth session's stamps put x's landing in the step at 2-3 us after the wait, against 0.5 us
// here alone: is it queued behind the ring's fills, asked for before the wait? Medians over blocks
// and launches (us): wait -> x landed, wait -> every fill landed, and entry -> wait, for x of 16 KB.
TEST(SharedReadsGpu, TimingXBehindTheWeights) {
  LATHE_NEED_GPU();
  const cuda::Module m = cuda::Module::compile(kSource, "shared_reads.cu");
  CUfunction write = m.function("shared_reads_write"), read = m.function("shared_reads_behind");
  const int blocks = cuda::Context::get().info().sm_count;
  constexpr int kLaunches = 16, kBytes = 16384;
  const size_t fill_region = static_cast<size_t>(blocks) * 16 * 3 * 2176;  // 13.8 MB on 132 SMs
  cuda::Stream s;
  DeviceBuffer x(static_cast<size_t>(kBytes) * blocks), stamps(static_cast<size_t>(kLaunches) * blocks * 32);
  DeviceBuffer weights(fill_region * kLaunches);
  struct Case {
    const char* name;
    int fills, mask, mode;
    bool fresh;  // a fresh weights region each launch (DRAM), or one region (L2 after the first)
  };
  const Case cases[] = {
      {"no fills, cp.async", 0, 0, 0, true},          {"1 fill a warp (DRAM)", 1, 0, 0, true},
      {"2 fills a warp (DRAM)", 2, 0, 0, true},       {"3 fills a warp (DRAM)", 3, 0, 0, true},
      {"3 fills, x by loads", 3, 0, 1, true},         {"3 fills, x by a bulk copy", 3, 0, 2, true},
      {"3 fills (L2-resident)", 3, 0, 0, false},      {"3 fills, even blocks only", 3, 1, 0, true},
  };
  std::printf("  x (16 KB, one region) after a dependent launch, %d blocks: us, medians "
              "(wait -> x landed / wait -> fills landed / entry -> wait; x on blocks without fills)\n", blocks);
  for (const Case& c : cases) {
    long long n4 = static_cast<long long>(kBytes) * blocks / 16;
    CUdeviceptr xp = x.ptr();
    int n16 = kBytes / 16, fills = c.fills, mask = c.mask, mode = c.mode;
    cuda::CapturedGraph g;
    g.begin(s);
    for (int l = 0; l < kLaunches; ++l) {
      CUdeviceptr st = stamps.ptr() + static_cast<CUdeviceptr>(l) * blocks * 32;
      CUdeviceptr wp = weights.ptr() + (c.fresh ? static_cast<CUdeviceptr>(l) * fill_region : 0);
      cuda::launch(write, {static_cast<unsigned>(blocks), 1, 1}, {512, 1, 1}, 0, s.handle(), {&xp, &n4},
                   "writing the regions");
      cuda::launch(read, {static_cast<unsigned>(blocks), 1, 1}, {512, 1, 1}, 32768 + 16 * 3 * 2560, s.handle(),
                   {&xp, &n16, &wp, &fills, &mask, &mode, &st}, "staging x behind the weights");
    }
    g.end(s);
    g.replay(s);
    g.replay(s);
    s.synchronize();
    std::vector<unsigned long long> t(static_cast<size_t>(kLaunches) * blocks * 4);
    stamps.download(t.data(), t.size() * 8);
    std::vector<double> dx, dx_other, df, dw;
    for (int l = 1; l < kLaunches; ++l)
      for (int b = 0; b < blocks; ++b) {
        const unsigned long long* r = &t[(static_cast<size_t>(l) * blocks + b) * 4];
        const bool filler = (b & c.mask) == 0;
        (filler ? dx : dx_other).push_back(static_cast<double>(r[2] - r[1]) / 1e3);
        if (filler) df.push_back(static_cast<double>(r[3] - r[1]) / 1e3);
        dw.push_back(static_cast<double>(r[1] - r[0]) / 1e3);
      }
    auto med = [](std::vector<double> v) {
      if (v.empty()) return 0.0;
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::printf("  %-28s %6.2f / %6.2f / %6.2f", c.name, med(dx), med(df), med(dw));
    if (!dx_other.empty()) std::printf("   (x on the others %6.2f)", med(dx_other));
    std::printf("\n");
    EXPECT_GT(med(dx), 0.0);
  }
}

}  // namespace
}  // namespace lathe::kernels
