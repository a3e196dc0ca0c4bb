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

}  // namespace
}  // namespace lathe::kernels
