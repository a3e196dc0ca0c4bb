// The int8 contracts' quantization without IEEE divisions (common.cuh's lathe_quantize_scale and
// lathe_quantize_levels) against the divisions it replaces (m / 127.0f, lathe_quantize_level's
// __fdiv_rn), on the device: every float in the scale's fast range, and levels over random blocks
// of many magnitudes, values placed within 2^-24..2^-8 of a half-integer step (the ties the fast
// path hands to the division), and the edges (zero, subnormal, huge, infinite and NaN values).
// Every kernel that quantizes an activation calls these, so equal here is bit-equal everywhere.
#include "kernels/library.h"
#include "runtime/cuda_driver.h"
#include "test_product_helpers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace lathe::kernels {
namespace {

using cuda::DeviceBuffer;

// common.cuh (the library's first file) and the test's kernels after it.
std::string source() {
  std::string s;
  for (const KernelFile& f : kernel_files())
    if (f.name == "common.cuh") s += std::string(f.text) + "\n";
  s += R"(
// Every float with biased exponent e0 + blockIdx.y and mantissa blockIdx.x * blockDim.x + threadIdx.x:
// bad[0] counts where lathe_quantize_scale differs from the division, bad[1..2] the first such bits.
extern "C" __global__ void quantize_scale_all(int e0, unsigned* bad) {
  const unsigned mant = blockIdx.x * blockDim.x + threadIdx.x;
  if (mant >= (1u << 23)) return;
  const float m = __uint_as_float(((unsigned)(e0 + (int)blockIdx.y) << 23) | mant);
  const float want = m / 127.0f, got = lathe_quantize_scale(m);
  if (__float_as_uint(want) != __float_as_uint(got) && !(want != want && got != got)) {
    if (atomicAdd(bad, 1u) == 0) {
      bad[1] = __float_as_uint(m);
      bad[2] = __float_as_uint(got);
    }
  }
}

// Block b of 32 values v[32 b ..]: both words of its int8x2 form by lathe_quantize_levels and by the
// division, one lane a value; bad[0] counts the values that differ (d1, d2 and the levels), bad[1]
// the fast path's fallbacks taken (warps that met a near tie), bad[2] the first bad value's index.
extern "C" __global__ void quantize_levels_check(const float* v, long long n_blocks, unsigned* bad) {
  const long long b = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
  if (b >= n_blocks) return;
  const int lane = threadIdx.x & 31;
  const float x = v[32 * b + lane];
  const float m1 = lathe_warp_max(fabsf(x));
  const float d1 = lathe_quantize_scale(m1), d1_ieee = m1 / 127.0f;
  int l1;
  float xs = x;
  lathe_quantize_levels<1>(&xs, d1, &l1);
  const int l1_ieee = lathe_quantize_level(x, d1_ieee);
  const float r = fmaf(-d1, (float)l1, x), r_ieee = fmaf(-d1_ieee, (float)l1_ieee, x);
  const float m2 = lathe_warp_max(fabsf(r)), m2_ieee = lathe_warp_max(fabsf(r_ieee));
  const float d2 = lathe_quantize_scale(m2), d2_ieee = m2_ieee / 127.0f;
  int l2;
  float rs = r;
  lathe_quantize_levels<1>(&rs, d2, &l2);
  const int l2_ieee = lathe_quantize_level(r_ieee, d2_ieee);
  const bool same = l1 == l1_ieee && l2 == l2_ieee && __float_as_uint(d1) == __float_as_uint(d1_ieee) &&
                    __float_as_uint(d2) == __float_as_uint(d2_ieee);
  if (!same && atomicAdd(bad, 1u) == 0) bad[2] = (unsigned)(32 * b + lane);
  // The near ties the fast path met (its own test, so the count says the adversarial values reach it).
  const float q = x * (1.0f / d1);
  if (fabsf(q) <= 128.0f && fabsf(fabsf(q - rintf(q)) - 0.5f) < 0x1p-12f) atomicAdd(bad + 1, 1u);
}

// lathe_quantize_block32_part (8 threads a block, 4 values each) against lathe_quantize_block32 (a
// warp a block, the one-lane form): the bytes and scales of n_blocks finite blocks, compared by the host.
extern "C" __global__ void quantize_parts(const float* v, long long n_blocks, signed char* q_part, float4* ds_part,
                                          signed char* q_lane, float4* ds_lane) {
  const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long b8 = t >> 3;
  if (b8 < n_blocks) {  // whole warps: n_blocks % 4 == 0
    const int part = 4 * (threadIdx.x & 7);
    const float4 f = *reinterpret_cast<const float4*>(v + 32 * b8 + part);
    lathe_quantize_block32_part(f, 1, q_part + 32 * b8 + part, q_part + 32 * n_blocks + 32 * b8 + part, ds_part + b8);
  }
  const long long b32 = t >> 5;
  if (b32 < n_blocks) {
    const long long i = 32 * b32 + (threadIdx.x & 31);
    lathe_quantize_block32(v[i], i, 1, q_lane, q_lane + 32 * n_blocks, ds_lane);
  }
}
)";
  return s;
}

// The test kernels, compiled once for the three tests.
const cuda::Module& test_module() {
  static const cuda::Module m = cuda::Module::compile(source(), "quantize_test.cu");
  return m;
}

TEST(QuantizeGpu, ScaleIsTheDivisionForEveryFloatOfItsFastRange) {
  LATHE_NEED_GPU();
  const cuda::Module& m = test_module();
  CUfunction f = m.function("quantize_scale_all");
  cuda::Stream s;
  DeviceBuffer bad(16);
  // Biased exponents 27 .. 227: [2^-100, 2^101) and one binade past each end of the fast range.
  bad.zero();
  test::settle(bad);
  int e0 = 27;
  CUdeviceptr bp = bad.ptr();
  cuda::launch(f, {(1u << 23) / 256, 201, 1}, {256, 1, 1}, 0, s.handle(), {&e0, &bp}, "checking the scale");
  s.synchronize();
  unsigned h[3];
  bad.download(h, sizeof(h));
  EXPECT_EQ(h[0], 0u) << "first: m bits " << std::hex << h[1] << ", got " << h[2];
  // The edges: zero, subnormals, the largest floats, infinity, NaN (the division's path).
  for (int e : {0, 1, 254, 255}) {
    bad.zero();
    test::settle(bad);
    cuda::launch(f, {(1u << 23) / 256, 1, 1}, {256, 1, 1}, 0, s.handle(), {&e, &bp}, "checking the scale's edges");
    s.synchronize();
    bad.download(h, sizeof(h));
    EXPECT_EQ(h[0], 0u) << "exponent " << e << ", first: m bits " << std::hex << h[1] << ", got " << h[2];
  }
}

// Random blocks: each a magnitude 2^e (e uniform in [-140, 120]) times normal values, with some of
// its values moved onto near ties of its own scale: v = (n + 1/2 + eps) d for the block's d.
std::vector<float> blocks_with_ties(long long n_blocks, std::mt19937& rng) {
  std::vector<float> v(static_cast<size_t>(32 * n_blocks));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-140, 120), level(-127, 126), lane(1, 31), kind(0, 9);
  std::uniform_real_distribution<double> offset(-24.0, -8.0);
  for (long long b = 0; b < n_blocks; ++b) {
    float* x = &v[static_cast<size_t>(32 * b)];
    const float scale = std::ldexp(1.0f, expo(rng));
    for (int i = 0; i < 32; ++i) x[i] = normal(rng) * scale;
    const int k = kind(rng);
    if (k == 0) {  // an edge block
      const float edges[] = {0.0f, -0.0f, std::numeric_limits<float>::denorm_min(), 1e-40f,
                             std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                             std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
      for (int i = 0; i < 32; ++i) x[i] = (i % 4 == 0) ? edges[(b + i) % 8] : x[i];
      if (b % 3 == 0)
        for (int i = 0; i < 32; ++i) x[i] = 0.0f;
    } else if (k <= 6) {  // near ties of the block's first-word scale: x[0] fixes the maximum
      float m = 0.0f;
      for (int i = 0; i < 32; ++i) m = std::max(m, std::fabs(x[i]));
      x[0] = m;  // the maximum, kept
      const float d = m / 127.0f;
      for (int j = 0; j < 8; ++j) {
        const double eps = (rng() & 1 ? 1.0 : -1.0) * std::pow(2.0, offset(rng));
        const float t = static_cast<float>((level(rng) + 0.5 + eps) * d);
        if (std::fabs(t) < m) x[lane(rng)] = t;
      }
    }
  }
  return v;
}

TEST(QuantizeGpu, LevelsAreTheDivisionsOnRandomBlocksTiesAndEdges) {
  LATHE_NEED_GPU();
  const cuda::Module& m = test_module();
  CUfunction f = m.function("quantize_levels_check");
  cuda::Stream s;
  std::mt19937 rng(20261201);
  const long long n_blocks = 1 << 20;
  unsigned total_bad = 0, total_ties = 0;
  for (int round = 0; round < 4; ++round) {
    const std::vector<float> v = blocks_with_ties(n_blocks, rng);
    DeviceBuffer vd = test::upload(v), bad(16);
    bad.zero();
    test::settle(bad);
    CUdeviceptr vp = vd.ptr(), bp = bad.ptr();
    long long nb = n_blocks;
    cuda::launch(f, {static_cast<unsigned>(n_blocks * 32 / 256), 1, 1}, {256, 1, 1}, 0, s.handle(), {&vp, &nb, &bp},
                 "checking the levels");
    s.synchronize();
    unsigned h[3];
    bad.download(h, sizeof(h));
    if (h[0] && !total_bad) ADD_FAILURE() << "first differing value: " << v[h[2]] << " (index " << h[2] << ")";
    total_bad += h[0];
    total_ties += h[1];
  }
  std::printf("  %lld values, %u near ties met by the fast path, %u differing\n", 4 * 32 * n_blocks, total_ties,
              total_bad);
  EXPECT_EQ(total_bad, 0u);
  EXPECT_GT(total_ties, 10000u);  // the ties reach the fallback
}

TEST(QuantizeGpu, BlockPartsAndLanesWriteTheSameBytes) {
  LATHE_NEED_GPU();
  const cuda::Module& m = test_module();
  CUfunction f = m.function("quantize_parts");
  cuda::Stream s;
  std::mt19937 rng(7);
  const long long n_blocks = 1 << 16;
  std::vector<float> v = blocks_with_ties(n_blocks, rng);
  // Finite values only: with an infinity in a block every residual is a NaN, which the one-lane form's
  // maximum keeps (its second scale a NaN) and the 8-thread form's, starting from 0, drops (0).
  for (float& x : v)
    if (!std::isfinite(x)) x = 0.0f;
  DeviceBuffer vd = test::upload(v), qp(64 * n_blocks), dp(16 * n_blocks), ql(64 * n_blocks), dl(16 * n_blocks);
  CUdeviceptr vp = vd.ptr(), a = qp.ptr(), b = dp.ptr(), c = ql.ptr(), d = dl.ptr();
  long long nb = n_blocks;
  cuda::launch(f, {static_cast<unsigned>(n_blocks * 32 / 256), 1, 1}, {256, 1, 1}, 0, s.handle(),
               {&vp, &nb, &a, &b, &c, &d}, "quantizing both ways");
  s.synchronize();
  std::vector<uint8_t> hp(64 * n_blocks), hl(64 * n_blocks), hdp(16 * n_blocks), hdl(16 * n_blocks);
  qp.download(hp.data(), hp.size());
  ql.download(hl.data(), hl.size());
  dp.download(hdp.data(), hdp.size());
  dl.download(hdl.data(), hdl.size());
  auto differing = [](const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
    size_t n = 0;
    for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
    return n;
  };
  EXPECT_EQ(differing(hp, hl), 0u) << "level bytes";
  EXPECT_EQ(differing(hdp, hdl), 0u) << "scale bytes";
}

}  // namespace
}  // namespace lathe::kernels
