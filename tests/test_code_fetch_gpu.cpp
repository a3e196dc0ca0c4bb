// How long straight-line code that a launch runs once takes when its instructions are not in any cache
// the SM reaches quickly: a measuring test (its name has Timing: the batch's test runs leave it out)
// for the fifteenth session's question (docs/perf.md): the decode step streams 4-8 GB of weights a
// token through the 60 MB L2, so between two launches of one kernel (a layer apart) its code may be
// evicted, and the prologues that run once a launch (the norm and its quantization, the attention's
// finishing loop) would then wait on instruction fetches from DRAM.
//
// A kernel of one warp an SM runs N independent FMAs in straight-line code (8 accumulators, so a warm
// run is bound by issue, ~1 cycle an instruction), stamping %clock64 and %globaltimer around it. Cases,
// each the median over 7 repetitions of the median SM:
// - warm: the kernel launched right after itself (its code in L2 and likely in the SMs' caches);
// - L2 flushed: a 512 MB read between the two launches (as the weights' stream does);
// - evict-first flush: the same read with an L2 evict-first policy (what LATHE_WEIGHTS_EVICT_FIRST
//   gives the weights), to see whether the code then survives in L2.
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

// n_fma FMAs written out one by one (no loop for the compiler to keep), 8 a statement.
std::string source(int n_fma) {
  std::string body;
  for (int i = 0; i < n_fma / 8; ++i) {
    body += "  asm volatile(\"";
    for (int j = 0; j < 8; ++j) body += "fma.rn.f32 %" + std::to_string(j) + ", %" + std::to_string(j) + ", %8, %9;\\n";
    body += "\" : \"+f\"(v[0]), \"+f\"(v[1]), \"+f\"(v[2]), \"+f\"(v[3]), \"+f\"(v[4]), \"+f\"(v[5]), "
            "\"+f\"(v[6]), \"+f\"(v[7]) : \"f\"(a), \"f\"(b));\n";
  }
  std::string s = R"(
extern "C" __global__ void code_fetch_run(float* out, unsigned long long* stamps, float a, float b) {
  float v[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = float(threadIdx.x + i);
  unsigned long long c0, c1, t0, t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c0) :: "memory");
)" + body + R"(
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c1) :: "memory");
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  float r = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) r += v[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = r;
  if (threadIdx.x == 0) {
    stamps[4 * blockIdx.x] = c1 - c0;
    stamps[4 * blockIdx.x + 1] = t1 - t0;
  }
}

// Reads n4 16-byte lines (grid-stride), with an evict-first L2 policy when evict_first.
extern "C" __global__ void code_fetch_flush(const uint4* p, long long n4, int evict_first, unsigned* sink) {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  unsigned acc = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
    uint4 v;
    if (evict_first)
      asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                   : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p + i), "l"(policy));
    else
      asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p + i));
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) sink[0] = acc;
}
)";
  return s;
}

TEST(CodeFetchGpu, TimingColdStraightLineCode) {
  LATHE_NEED_GPU();
  const int sms = cuda::Context::get().info().sm_count;
  cuda::Stream s;
  const size_t flush_bytes = size_t{512} << 20;
  DeviceBuffer flush(flush_bytes), sink(16), out(static_cast<size_t>(sms) * 32 * 4), stamps(static_cast<size_t>(sms) * 32);
  flush.zero();
  std::printf("  straight-line code run once a launch, one warp an SM: median SM, median of 7 (cycles, us, cycles an "
              "instruction)\n");
  for (int n_fma : {512, 2048, 8192}) {
    const cuda::Module m = cuda::Module::compile(source(n_fma), "code_fetch.cu");
    CUfunction run = m.function("code_fetch_run"), flush_fn = m.function("code_fetch_flush");
    CUdeviceptr op = out.ptr(), sp = stamps.ptr(), fp = flush.ptr(), kp = sink.ptr();
    float a = 1.0000001f, b = 1e-7f;
    long long n4 = static_cast<long long>(flush_bytes / 16);
    auto launch_run = [&] {
      cuda::launch(run, {static_cast<unsigned>(sms), 1, 1}, {32, 1, 1}, 0, s.handle(), {&op, &sp, &a, &b}, "code_fetch_run");
    };
    auto launch_flush = [&](int evict_first) {
      cuda::launch(flush_fn, {static_cast<unsigned>(4 * sms), 1, 1}, {512, 1, 1}, 0, s.handle(), {&fp, &n4, &evict_first, &kp},
                   "code_fetch_flush");
    };
    launch_run();  // the module's lazy load
    s.synchronize();
    for (int mode = 0; mode < 3; ++mode) {
      std::vector<double> cyc, us;
      for (int rep = 0; rep < 7; ++rep) {
        launch_run();
        if (mode > 0) launch_flush(mode == 2);
        launch_run();
        s.synchronize();
        std::vector<unsigned long long> t(static_cast<size_t>(sms) * 4);
        stamps.download(t.data(), t.size() * 8);
        std::vector<double> c, g;
        for (int i = 0; i < sms; ++i) {
          c.push_back(static_cast<double>(t[4 * i]));
          g.push_back(static_cast<double>(t[4 * i + 1]) / 1e3);
        }
        std::sort(c.begin(), c.end());
        std::sort(g.begin(), g.end());
        cyc.push_back(c[c.size() / 2]);
        us.push_back(g[g.size() / 2]);
      }
      std::sort(cyc.begin(), cyc.end());
      std::sort(us.begin(), us.end());
      const char* name = mode == 0 ? "warm" : mode == 1 ? "L2 flushed" : "evict-first flush";
      std::printf("  %5d FMAs %-18s %9.0f cycles %7.2f us %6.2f\n", n_fma, name, cyc[3], us[3], cyc[3] / n_fma);
      EXPECT_GT(cyc[3], 0.0);
    }
  }
}

}  // namespace
}  // namespace lathe::kernels
