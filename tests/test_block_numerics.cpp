// Half-precision conversions (every f16 and bf16 value, ties, overflow, subnormals, NaN) and round
// trip error bounds of every quantizer over random rows of several sizes and magnitudes.
#include "gguf/block_format.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace lathe {
namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

bool f16_is_nan(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0; }

// The value of a half by its definition, in double.
double f16_value(uint16_t h) {
  const int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  const double mag = e == 0 ? std::ldexp(m, -24) : e == 31 ? INFINITY : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -mag : mag;
}

TEST(HalfConversion, EveryF16ValueConvertsExactlyAndBack) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (f16_is_nan(static_cast<uint16_t>(h))) {
      ASSERT_TRUE(std::isnan(f)) << h;
      ASSERT_EQ(bits(f) >> 31, h >> 15) << "NaN keeps its sign";
      ASSERT_TRUE(f16_is_nan(f32_to_f16(f))) << h;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), f16_value(static_cast<uint16_t>(h))) << h;
    ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << h;
    ASSERT_EQ(f32_to_f16(f), h) << h;
  }
}

// Between two neighbouring halves the midpoint goes to the even one, anything past it to the far one.
// Covers the subnormals and the step from subnormal to normal; every midpoint is a float exactly.
TEST(HalfConversion, F16RoundsToNearestEven) {
  for (uint16_t h = 0; h < 0x7BFF; ++h) {
    const float lo = f16_to_f32(h), hi = f16_to_f32(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((static_cast<double>(lo) + hi) / 2);
    ASSERT_EQ(static_cast<double>(mid), (static_cast<double>(lo) + hi) / 2);
    const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : h;
    ASSERT_EQ(f32_to_f16(mid), even) << h;
    ASSERT_EQ(f32_to_f16(std::nextafter(mid, 1e9f)), h + 1) << h;
    ASSERT_EQ(f32_to_f16(std::nextafter(mid, -1e9f)), h) << h;
    ASSERT_EQ(f32_to_f16(-mid), even | 0x8000) << h;
  }
}

TEST(HalfConversion, F16Edges) {
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65519.996f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);  // the tie with the next would-be value goes to infinity
  EXPECT_EQ(f32_to_f16(1e10f), 0x7C00);
  EXPECT_EQ(f32_to_f16(-1e10f), 0xFC00);
  EXPECT_EQ(f32_to_f16(INFINITY), 0x7C00);
  EXPECT_EQ(f32_to_f16(-INFINITY), 0xFC00);
  EXPECT_EQ(f32_to_f16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);  // the smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // half of it ties to zero
  EXPECT_EQ(f32_to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(f32_to_f16(3 * std::ldexp(1.0f, -25)), 0x0002);  // 1.5 units ties to 2
  EXPECT_EQ(f32_to_f16(-std::ldexp(1.0f, -26)), 0x8000);
  EXPECT_EQ(f32_to_f16(1e-45f), 0x0000);                 // f32 subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1023.0f, -24)), 0x03FF);  // the largest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(2047.0f, -25)), 0x0400);  // rounds up into the normals
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  for (uint32_t nan : {0x7FC00000u, 0x7F800001u, 0xFFC00000u, 0x7FBFFFFFu, 0xFF800001u}) {
    const uint16_t h = f32_to_f16(from_bits(nan));
    EXPECT_TRUE(f16_is_nan(h)) << std::hex << nan << " -> " << h;
    EXPECT_EQ(h >> 15, nan >> 31) << std::hex << nan;
  }
}

TEST(HalfConversion, EveryBf16ValueConvertsExactlyAndBack) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    ASSERT_EQ(bits(f), h << 16) << h;
    const bool nan = (h & 0x7F80) == 0x7F80 && (h & 0x7F) != 0;
    // ggml makes every NaN quiet: a signalling one gains bit 6, a quiet one is unchanged.
    ASSERT_EQ(f32_to_bf16(f), nan ? (h | 0x40) : h) << h;
  }
}

TEST(HalfConversion, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(from_bits(0x3F808000)), 0x3F80);  // tie, down to even
  EXPECT_EQ(f32_to_bf16(from_bits(0x3F818000)), 0x3F82);  // tie, up to even
  EXPECT_EQ(f32_to_bf16(from_bits(0x3F808001)), 0x3F81);
  EXPECT_EQ(f32_to_bf16(from_bits(0x3F807FFF)), 0x3F80);
  EXPECT_EQ(f32_to_bf16(from_bits(0x7F7F8000)), 0x7F80);  // the tie past the largest is infinity
  EXPECT_EQ(f32_to_bf16(from_bits(0x7F7F7FFF)), 0x7F7F);
  EXPECT_EQ(f32_to_bf16(from_bits(0x00008000)), 0x0000);  // subnormals are rounded, not flushed
  EXPECT_EQ(f32_to_bf16(from_bits(0x00018000)), 0x0002);
  EXPECT_EQ(f32_to_bf16(from_bits(0x80018001)), 0x8002);
  EXPECT_EQ(f32_to_bf16(INFINITY), 0x7F80);
  EXPECT_EQ(f32_to_bf16(-INFINITY), 0xFF80);
  EXPECT_EQ(f32_to_bf16(from_bits(0x7F800001)), 0x7FC0);  // NaN whose payload is below bf16's: still NaN
  EXPECT_EQ(f32_to_bf16(from_bits(0xFFC00000)), 0xFFC0);
}

// Round trips. Per block of block_size values, max |x - x'| <= (rel * R + units * 2^-25) * 1.02 where
// R is the block's max |x| (its max - min for q4_1/q5_1, plus the f16 rounding of m). For the
// 32-value formats rel is derived: rounding costs half a step (a whole one for q4_0/q5_0, whose value
// opposite the largest clamps to 7 or 15 steps), and the f16 rounding of d (2^-11 relative, or 2^-25
// absolute among the subnormals) is multiplied by up to `units` levels. The K formats' searches
// minimize a weighted error, not the max, so their rel is measured on this data with about 25% to
// spare; their units are the largest sub-block scale times level. The RMS error over the row is
// bounded too (measured, with about 25% to spare).
struct Bound {
  GgmlType type;
  double rel;
  double units;
  double rms_rel;
};

double block_bound(const Bound& b, const float* x, int64_t n) {
  float amax = 0, mn = x[0], mx = x[0];
  for (int64_t i = 0; i < n; ++i) {
    amax = std::max(amax, std::fabs(x[i]));
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
  double limit = b.rel * amax + b.units * 0x1p-25;
  if (b.type == GgmlType::Q4_1 || b.type == GgmlType::Q5_1)
    limit = b.rel * (mx - mn) + b.units * 0x1p-25 + std::max(std::fabs(mn) * 0x1p-11, 0x1p-25);
  return limit * 1.02;
}

TEST(RoundTrip, ErrorWithinFormatBounds) {
  const Bound bounds[] = {
      {GgmlType::Q8_0, 0.5 / 127 + 0x1p-11, 127, 0.0075},  {GgmlType::Q8_1, 0.5 / 127 + 0x1p-11, 127, 0.0075},
      {GgmlType::Q8_K, 0.5 / 127, 0, 0.0095},              {GgmlType::Q4_0, 1.0 / 8 + 0x1p-11, 8, 0.12},
      {GgmlType::Q5_0, 1.0 / 16 + 0x1p-11, 16, 0.06},      {GgmlType::Q4_1, 0.5 / 15 + 0x1p-11, 15, 0.105},
      {GgmlType::Q5_1, 0.5 / 31 + 0x1p-11, 31, 0.055},     {GgmlType::Q2_K, 0.46, 60, 0.38},
      {GgmlType::Q3_K, 0.26, 128, 0.195},                  {GgmlType::Q4_K, 0.11, 1008, 0.092},
      {GgmlType::Q5_K, 0.065, 2016, 0.047},                {GgmlType::Q6_K, 0.021, 4096, 0.027},
  };
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const Bound& b : bounds) {
    const BlockFormat& f = block_format(b.type);
    for (int64_t n_blocks : {1, 2, 3, 7, 16}) {
      for (float magnitude : {1e-3f, 1.0f, 300.0f}) {
        const int64_t n = n_blocks * f.block_size;
        std::vector<float> x(n), y(n);
        for (float& v : x) v = normal(rng) * magnitude;
        std::vector<uint8_t> q(row_bytes(b.type, n));
        quantize_row(b.type, x.data(), q.data(), n);
        dequantize_row(b.type, q.data(), y.data(), n);
        double err2 = 0, x2 = 0;
        for (int64_t blk = 0; blk < n_blocks; ++blk) {
          const float* xb = x.data() + blk * f.block_size;
          const float* yb = y.data() + blk * f.block_size;
          const double limit = block_bound(b, xb, f.block_size);
          double worst = 0;
          for (int64_t i = 0; i < f.block_size; ++i) {
            worst = std::max(worst, static_cast<double>(std::fabs(xb[i] - yb[i])));
            err2 += static_cast<double>(xb[i] - yb[i]) * (xb[i] - yb[i]);
            x2 += static_cast<double>(xb[i]) * xb[i];
          }
          EXPECT_LE(worst, limit) << f.name << " block " << blk << " of " << n_blocks << ", magnitude " << magnitude;
        }
        EXPECT_LE(std::sqrt(err2 / x2), b.rms_rel) << f.name << " n=" << n << " magnitude " << magnitude;
      }
    }
  }
}

TEST(RoundTrip, FloatFormats) {
  std::mt19937 rng(99);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t n : {1, 5, 64, 1000}) {
    std::vector<float> x(n), y(n);
    for (float& v : x) v = normal(rng) * 100.0f;
    std::vector<uint8_t> q(row_bytes(GgmlType::F32, n));
    quantize_row(GgmlType::F32, x.data(), q.data(), n);
    dequantize_row(GgmlType::F32, q.data(), y.data(), n);
    EXPECT_EQ(x, y);
    for (auto [type, rel] : {std::pair{GgmlType::F16, 0x1p-11}, std::pair{GgmlType::BF16, 0x1p-8}}) {
      quantize_row(type, x.data(), q.data(), n);
      dequantize_row(type, q.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i) EXPECT_LE(std::fabs(x[i] - y[i]), rel * std::fabs(x[i])) << i;
    }
  }
}

// Blocks of zeros and of one constant come back exactly (every format has an exact zero, and the
// affine ones an exact min).
TEST(RoundTrip, ZeroBlocksStayZero) {
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                        GgmlType::Q8_1, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                        GgmlType::Q6_K, GgmlType::Q8_K}) {
    std::vector<float> x(512, 0.0f), y(512, 1.0f);
    std::vector<uint8_t> q(row_bytes(type, 512), 0xAB);
    quantize_row(type, x.data(), q.data(), 512);
    dequantize_row(type, q.data(), y.data(), 512);
    for (float v : y) ASSERT_EQ(v, 0.0f) << ggml_type_name(type);
  }
}

}  // namespace
}  // namespace lathe
