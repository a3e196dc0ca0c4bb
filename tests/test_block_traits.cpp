// The device's block decoders (src/kernels/gemv_blocks.cuh: one trait a format, which every product,
// gather and batched product reads through) compiled for the host and checked against the CPU's
// dequantize_row, bit for bit, for every piece of every block: quantized random rows of each format
// and blocks of random bytes (their f16 fields kept finite). No GPU needed: the traits are plain
// arithmetic on bytes; CUDA's headers give the host the f16 types, and the few device helpers they
// call from common.cuh are given here in host form (the f16 loads, the K formats' 6-bit scales).
#include "gguf/block_codecs.h"
#include "gguf/block_format.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

// What gemv_blocks.cuh takes from common.cuh and the device's intrinsics, for the host. The products
// and sums are single IEEE roundings on the host as on the device (no fused multiply-add here:
// -ffp-contract is off for C++ on x86-64 unless asked).
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __int_as_float(int i) { return std::bit_cast<float>(i); }
inline float __uint_as_float(unsigned i) { return std::bit_cast<float>(i); }
inline float lathe_f16(const uint8_t* p) { return lathe::blocks::load_f16(p); }
inline void lathe_k4_scale_min(const uint8_t* s, int j, int& sc, int& m) {
  uint8_t a, b;
  lathe::blocks::k4_scale_min(j, s, &a, &b);
  sc = a;
  m = b;
}

#include "kernels/gemv_blocks.cuh"  // (tests/CMakeLists.txt: -Wno-unknown-pragmas -fno-strict-aliasing)

namespace lathe {
namespace {

using Decode8 = void (*)(const uint8_t* unit, int piece, float* w);

struct Trait {
  GgmlType type;
  Decode8 decode;
  int unit_values, unit_bytes;
};

template <class F>
Trait trait_of(GgmlType t) {
  return {t, &lathe_gemv_dequant8<F>, F::unit_values, F::unit_bytes};
}

const Trait kTraits[] = {
    trait_of<lathe_gemv_q8_0>(GgmlType::Q8_0), trait_of<lathe_gemv_q4_0>(GgmlType::Q4_0),
    trait_of<lathe_gemv_q4_1>(GgmlType::Q4_1), trait_of<lathe_gemv_q5_0>(GgmlType::Q5_0),
    trait_of<lathe_gemv_q5_1>(GgmlType::Q5_1), trait_of<lathe_gemv_q2_k>(GgmlType::Q2_K),
    trait_of<lathe_gemv_q3_k>(GgmlType::Q3_K), trait_of<lathe_gemv_q4_k>(GgmlType::Q4_K),
    trait_of<lathe_gemv_q5_k>(GgmlType::Q5_K), trait_of<lathe_gemv_q6_k>(GgmlType::Q6_K),
    trait_of<lathe_gemv_f32>(GgmlType::F32),   trait_of<lathe_gemv_f16>(GgmlType::F16),
    trait_of<lathe_gemv_bf16>(GgmlType::BF16),
};

// Where a block keeps its f16 scale fields (bytes), for random blocks: kept finite so that the two
// sides' NaNs (whose sign an x - y and an x + (-y) may give differently) do not enter.
std::vector<int> f16_fields(GgmlType t) {
  switch (t) {
    case GgmlType::Q8_0: case GgmlType::Q4_0: case GgmlType::Q5_0: return {0};
    case GgmlType::Q4_1: case GgmlType::Q5_1: return {0, 2};
    case GgmlType::Q2_K: return {80, 82};
    case GgmlType::Q3_K: return {108};
    case GgmlType::Q4_K: case GgmlType::Q5_K: return {0, 2};
    case GgmlType::Q6_K: return {208};
    default: return {};
  }
}

// Every piece of every unit of `row` (n values of type t) through the trait, against dequantize_row.
void expect_pieces_match(const Trait& tr, const std::vector<uint8_t>& row, int64_t n, const char* what) {
  std::vector<float> want(static_cast<size_t>(n));
  dequantize_row(tr.type, row.data(), want.data(), n);
  const int pieces = tr.unit_values / 8;
  for (int64_t u = 0; u < n / tr.unit_values; ++u)
    for (int p = 0; p < pieces; ++p) {
      float got[8];
      tr.decode(row.data() + u * tr.unit_bytes, p, got);
      for (int i = 0; i < 8; ++i) {
        const float w = want[static_cast<size_t>(u * tr.unit_values + 8 * p + i)];
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(w))
            << ggml_type_name(tr.type) << " " << what << ": unit " << u << " piece " << p << " value " << i << ": "
            << got[i] << " against " << w;
      }
    }
}

TEST(BlockTraits, EveryFormatsPiecesAreDequantizeRowsBits) {
  std::mt19937 rng(2026);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255);
  const int64_t n = 4096;
  for (const Trait& tr : kTraits) {
    const BlockFormat& f = block_format(tr.type);
    const int64_t block = f.block_size;
    EXPECT_EQ(tr.unit_values % block, 0) << ggml_type_name(tr.type);
    EXPECT_EQ(static_cast<int64_t>(tr.unit_bytes), row_bytes(tr.type, tr.unit_values)) << ggml_type_name(tr.type);
    for (int rep = 0; rep < 4; ++rep) {
      std::vector<float> values(static_cast<size_t>(n));
      for (float& v : values) v = normal(rng) * (rep == 3 ? 1e-3f : 1.0f);
      std::vector<uint8_t> row(static_cast<size_t>(row_bytes(tr.type, n)));
      quantize_row(tr.type, values.data(), row.data(), n);
      expect_pieces_match(tr, row, n, "quantized");
      if (tr.type == GgmlType::F32 || tr.type == GgmlType::F16 || tr.type == GgmlType::BF16) continue;
      for (uint8_t& b : row) b = static_cast<uint8_t>(byte(rng));
      for (int64_t u = 0; u < n / block; ++u)
        for (int at : f16_fields(tr.type)) blocks::store_f16(row.data() + u * f.block_bytes + at, normal(rng));
      expect_pieces_match(tr, row, n, "random bytes");
    }
  }
}

}  // namespace
}  // namespace lathe
