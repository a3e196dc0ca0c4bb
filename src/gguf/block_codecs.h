// The per-format row codecs behind dequantize_row / quantize_row (block_format.cpp dispatches to
// them), and the small helpers they share. Internal to src/gguf: other stages use block_format.h.
//
// Every function takes whole blocks: n_blocks blocks of the format's block_bytes at `src`/`dst`.
// Blocks are read and written byte by byte (memcpy for the multi-byte fields), so no alignment is
// assumed; the byte order of every multi-byte field is little-endian, as GGUF stores it.
#pragma once

#include "gguf/block_format.h"

#include <bit>
#include <cstdint>
#include <cstring>

// Bytes must match ggml's on x86, where nothing is fused: a multiply-add contracted into one FMA
// rounds once instead of twice and, sooner or later, changes a byte. GCC does not contract under
// -std=c++20; clang does unless told, so tell it (every codec file includes this header).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace lathe::blocks {

static_assert(std::endian::native == std::endian::little, "block codecs assume a little-endian host");

using DequantizeFn = void (*)(const uint8_t* src, float* dst, int64_t n_blocks);
using QuantizeFn = void (*)(const float* src, uint8_t* dst, int64_t n_blocks);

inline float load_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

inline void store_f16(uint8_t* p, float f) {
  const uint16_t h = f32_to_f16(f);
  std::memcpy(p, &h, 2);
}

// ggml's nearest_int: round half to even by adding 1.5 * 2^23 and reading the mantissa. Exact for
// |fval| <= 4194303; outside that ggml's result is whatever the bits say, and so is ours, so that
// quantized bytes agree with ggml's on every input.
inline int nearest_int(float fval) {
  const float val = fval + 12582912.f;
  int32_t i;
  std::memcpy(&i, &val, 4);
  return (i & 0x007fffff) - 0x00400000;
}

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block, from its 12 packed bytes:
// bytes 0..3 hold scales 0..3 in their low 6 bits, bytes 4..7 mins 0..3; bytes 8..11 hold the low
// 4 bits of scales 4..7 (low nibble) and mins 4..7 (high nibble), whose top 2 bits sit in the top 2
// bits of bytes 0..3 (scales) and 4..7 (mins).
inline void k4_scale_min(int j, const uint8_t* scales, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// dequantize.cpp
void dequantize_f32(const uint8_t* src, float* dst, int64_t n_blocks);
void dequantize_f16(const uint8_t* src, float* dst, int64_t n_blocks);
void dequantize_bf16(const uint8_t* src, float* dst, int64_t n_blocks);
void dequantize_q4_0(const uint8_t* src, float* dst, int64_t n_blocks);
void dequantize_q4_1(const uint8_t* src, float* dst, int64_t n_blocks);
void dequantize_q5_0(const uint8_t* src, float* dst, int64_t n_blocks);
void dequantize_q5_1(const uint8_t* src, float* dst, int64_t n_blocks);
void dequantize_q8_0(const uint8_t* src, float* dst, int64_t n_blocks);
void dequantize_q8_1(const uint8_t* src, float* dst, int64_t n_blocks);
// dequantize_k.cpp
void dequantize_q2_k(const uint8_t* src, float* dst, int64_t n_blocks);
void dequantize_q3_k(const uint8_t* src, float* dst, int64_t n_blocks);
void dequantize_q4_k(const uint8_t* src, float* dst, int64_t n_blocks);
void dequantize_q5_k(const uint8_t* src, float* dst, int64_t n_blocks);
void dequantize_q6_k(const uint8_t* src, float* dst, int64_t n_blocks);
void dequantize_q8_k(const uint8_t* src, float* dst, int64_t n_blocks);

// quantize.cpp
void quantize_f32(const float* src, uint8_t* dst, int64_t n_blocks);
void quantize_f16(const float* src, uint8_t* dst, int64_t n_blocks);
void quantize_bf16(const float* src, uint8_t* dst, int64_t n_blocks);
void quantize_q4_0(const float* src, uint8_t* dst, int64_t n_blocks);
void quantize_q4_1(const float* src, uint8_t* dst, int64_t n_blocks);
void quantize_q5_0(const float* src, uint8_t* dst, int64_t n_blocks);
void quantize_q5_1(const float* src, uint8_t* dst, int64_t n_blocks);
void quantize_q8_0(const float* src, uint8_t* dst, int64_t n_blocks);
void quantize_q8_1(const float* src, uint8_t* dst, int64_t n_blocks);
// quantize_k_search.cpp: ggml's scale searches. L receives the chosen levels, offset to be
// non-negative (l + nmax for the signed searches); the result is the scale (0 for an all-zero group).
float make_qx_quants(int n, int nmax, const float* x, int8_t* L);
float make_q3_quants(int n, int nmax, const float* x, int8_t* L);
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                       uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad);
// quantize_k.cpp
void quantize_q2_k(const float* src, uint8_t* dst, int64_t n_blocks);
void quantize_q3_k(const float* src, uint8_t* dst, int64_t n_blocks);
void quantize_q4_k(const float* src, uint8_t* dst, int64_t n_blocks);
void quantize_q5_k(const float* src, uint8_t* dst, int64_t n_blocks);
void quantize_q6_k(const float* src, uint8_t* dst, int64_t n_blocks);
void quantize_q8_k(const float* src, uint8_t* dst, int64_t n_blocks);

}  // namespace lathe::blocks
