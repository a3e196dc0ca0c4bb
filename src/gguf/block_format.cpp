// The block format table, row sizes, the half-precision conversions, and the dispatch to the
// per-format codecs (dequantize*.cpp, quantize*.cpp).
//
// Layout strings: the block's fields in byte order, "name:type" or "name:type[count]", joined by
// ", ", with types f32, f16, bf16, int8, uint8, int16 (all little-endian). Their sizes add up to
// block_bytes (a test holds that). How the packed fields hold the values is written beside each
// dequantizer; the names are ggml's struct members (block_q4_K.d, .dmin, .scales, .qs, ...).
#include "gguf/block_format.h"

#include "base/error.h"
#include "gguf/block_codecs.h"

#include <array>
#include <bit>

namespace lathe {
namespace {

struct Entry {
  BlockFormat format;
  blocks::DequantizeFn dequantize;
  blocks::QuantizeFn quantize;  // null exactly when format.can_quantize is false
};

using namespace blocks;
using T = GgmlType;

// clang-format off
const std::array<Entry, 15> kFormats{{
    {{T::F32,  "f32",  1,   4,   false, true,  "v:f32"}, dequantize_f32, quantize_f32},
    {{T::F16,  "f16",  1,   2,   false, true,  "v:f16"}, dequantize_f16, quantize_f16},
    {{T::BF16, "bf16", 1,   2,   false, true,  "v:bf16"}, dequantize_bf16, quantize_bf16},
    {{T::Q4_0, "q4_0", 32,  18,  true,  true,  "d:f16, qs:uint8[16]"}, dequantize_q4_0, quantize_q4_0},
    {{T::Q4_1, "q4_1", 32,  20,  true,  true,  "d:f16, m:f16, qs:uint8[16]"}, dequantize_q4_1, quantize_q4_1},
    {{T::Q5_0, "q5_0", 32,  22,  true,  true,  "d:f16, qh:uint8[4], qs:uint8[16]"}, dequantize_q5_0, quantize_q5_0},
    {{T::Q5_1, "q5_1", 32,  24,  true,  true,  "d:f16, m:f16, qh:uint8[4], qs:uint8[16]"}, dequantize_q5_1, quantize_q5_1},
    {{T::Q8_0, "q8_0", 32,  34,  true,  true,  "d:f16, qs:int8[32]"}, dequantize_q8_0, quantize_q8_0},
    {{T::Q8_1, "q8_1", 32,  36,  true,  true,  "d:f16, s:f16, qs:int8[32]"}, dequantize_q8_1, quantize_q8_1},
    {{T::Q2_K, "q2_K", 256, 84,  true,  true,  "scales:uint8[16], qs:uint8[64], d:f16, dmin:f16"}, dequantize_q2_k, quantize_q2_k},
    {{T::Q3_K, "q3_K", 256, 110, true,  true,  "hmask:uint8[32], qs:uint8[64], scales:uint8[12], d:f16"}, dequantize_q3_k, quantize_q3_k},
    {{T::Q4_K, "q4_K", 256, 144, true,  true,  "d:f16, dmin:f16, scales:uint8[12], qs:uint8[128]"}, dequantize_q4_k, quantize_q4_k},
    {{T::Q5_K, "q5_K", 256, 176, true,  true,  "d:f16, dmin:f16, scales:uint8[12], qh:uint8[32], qs:uint8[128]"}, dequantize_q5_k, quantize_q5_k},
    {{T::Q6_K, "q6_K", 256, 210, true,  true,  "ql:uint8[128], qh:uint8[64], scales:int8[16], d:f16"}, dequantize_q6_k, quantize_q6_k},
    {{T::Q8_K, "q8_K", 256, 292, true,  true,  "d:f32, qs:int8[256], bsums:int16[16]"}, dequantize_q8_k, quantize_q8_k},
}};
// clang-format on

const Entry& entry(GgmlType type) {
  for (const Entry& e : kFormats)
    if (e.format.type == type) return e;
  // Every GgmlType has an entry; a number outside the enum was let through by a caller.
  internal_fail("no block format for ggml type {}", static_cast<uint32_t>(type));
}

// The number of blocks in n values, refusing what does not divide.
int64_t block_count(const BlockFormat& f, int64_t n) {
  if (n < 0 || n % f.block_size != 0)
    fail("a row of {} values cannot be stored as {}, whose blocks hold {} values", n, f.name, f.block_size);
  return n / f.block_size;
}

}  // namespace

const BlockFormat& block_format(GgmlType type) { return entry(type).format; }

int64_t row_bytes(GgmlType type, int64_t n) {
  const BlockFormat& f = block_format(type);
  return block_count(f, n) * f.block_bytes;
}

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  const Entry& e = entry(type);
  e.dequantize(static_cast<const uint8_t*>(src), dst, block_count(e.format, n));
}

void quantize_row(GgmlType type, const float* src, void* dst, int64_t n) {
  const Entry& e = entry(type);
  if (!e.format.can_quantize) fail("quantizing to {} is not supported", e.format.name);
  e.quantize(src, static_cast<uint8_t*>(dst), block_count(e.format, n));
}

// Half precision: 1 sign, 5 exponent (bias 15), 10 mantissa bits. Every half is a float exactly.
// NaN keeps its sign and the top of its payload; a signalling NaN stays as it is.
float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1F;
  const uint32_t mantissa = h & 0x3FF;
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000 | (mantissa << 13));
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;  // subnormal (or zero), exact
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

// Round to nearest, ties to even, as the F16C instructions and numpy do; past 65520 is infinity.
// A NaN becomes a quiet NaN of the same sign with the top 9 bits of its payload.
uint16_t f32_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7FFFFFFF;
  if (ax > 0x7F800000) return static_cast<uint16_t>(sign | 0x7E00 | ((ax >> 13) & 0x3FF));
  if (ax >= 0x47800000) return static_cast<uint16_t>(sign | 0x7C00);  // >= 65536, or infinity
  if (ax >= 0x38800000) {
    // Normal half: rebias the exponent (127 -> 15) and round the 13 dropped bits; a carry out of
    // the mantissa moves into the exponent, which is right (up to 0x7C00, infinity).
    const uint32_t rounded = ax + 0xFFF + ((ax >> 13) & 1);
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000) >> 13));
  }
  if (ax < 0x33000000) return sign;  // below 2^-25: rounds to zero (2^-25 itself ties to zero)
  // Subnormal half: the value in units of 2^-24, rounded to even. 14 <= shift <= 24.
  const uint32_t mantissa = (ax & 0x7FFFFF) | 0x800000;
  const int shift = 126 - static_cast<int>(ax >> 23);
  const uint32_t half = 1u << (shift - 1);
  const uint32_t rest = mantissa & ((1u << shift) - 1);
  uint32_t q = mantissa >> shift;
  if (rest > half || (rest == half && (q & 1))) ++q;
  return static_cast<uint16_t>(sign | q);
}

float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

// ggml's conversion: round to nearest even on the top 16 bits; NaN is made quiet (bit 6 set) with
// its sign and the top of its payload kept. Subnormals are kept, not flushed.
uint16_t f32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((x >> 16) | 64);
  return static_cast<uint16_t>((x + (0x7FFF + ((x >> 16) & 1))) >> 16);
}

}  // namespace lathe
