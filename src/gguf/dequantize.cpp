// Dequantization of the float formats and the 32-value formats, bit-exact with ggml's
// dequantize_row_* (same products in the same order: value = d * q, or d * q + m). The K formats
// are in dequantize_k.cpp.
#include "gguf/block_codecs.h"

namespace lathe::blocks {

void dequantize_f32(const uint8_t* src, float* dst, int64_t n_blocks) {
  std::memcpy(dst, src, static_cast<size_t>(n_blocks) * 4);
}

void dequantize_f16(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) dst[i] = load_f16(src + 2 * i);
}

void dequantize_bf16(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = bf16_to_f32(h);
  }
}

// Q4_0, 18 bytes: d:f16, qs:uint8[16]. Value j (0..15) is the low nibble of qs[j], value j + 16 its
// high nibble; x = d * (q - 8).
void dequantize_q4_0(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += 18, dst += 32) {
    const float d = load_f16(src);
    const uint8_t* qs = src + 2;
    for (int j = 0; j < 16; ++j) {
      const int x0 = (qs[j] & 0x0F) - 8;
      const int x1 = (qs[j] >> 4) - 8;
      dst[j] = static_cast<float>(x0) * d;
      dst[j + 16] = static_cast<float>(x1) * d;
    }
  }
}

// Q4_1, 20 bytes: d:f16, m:f16, qs:uint8[16]; nibbles as Q4_0; x = d * q + m.
void dequantize_q4_1(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += 20, dst += 32) {
    const float d = load_f16(src);
    const float m = load_f16(src + 2);
    const uint8_t* qs = src + 4;
    for (int j = 0; j < 16; ++j) {
      const float x0 = static_cast<float>(qs[j] & 0x0F);
      const float x1 = static_cast<float>(qs[j] >> 4);
      dst[j] = x0 * d + m;
      dst[j + 16] = x1 * d + m;
    }
  }
}

// The fifth bits of a Q5 block: bit j of the little-endian uint32 qh is the high bit of value j.
static uint32_t load_qh(const uint8_t* p) {
  uint32_t qh;
  std::memcpy(&qh, p, 4);
  return qh;
}

// Q5_0, 22 bytes: d:f16, qh:uint8[4], qs:uint8[16]; x = d * (q - 16), q = nibble | qh bit << 4.
void dequantize_q5_0(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += 22, dst += 32) {
    const float d = load_f16(src);
    const uint32_t qh = load_qh(src + 2);
    const uint8_t* qs = src + 6;
    for (int j = 0; j < 16; ++j) {
      const int h0 = static_cast<int>((qh >> j) & 1) << 4;
      const int h1 = static_cast<int>((qh >> (j + 16)) & 1) << 4;
      const int x0 = ((qs[j] & 0x0F) | h0) - 16;
      const int x1 = ((qs[j] >> 4) | h1) - 16;
      dst[j] = static_cast<float>(x0) * d;
      dst[j + 16] = static_cast<float>(x1) * d;
    }
  }
}

// Q5_1, 24 bytes: d:f16, m:f16, qh:uint8[4], qs:uint8[16]; x = d * q + m.
void dequantize_q5_1(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += 24, dst += 32) {
    const float d = load_f16(src);
    const float m = load_f16(src + 2);
    const uint32_t qh = load_qh(src + 4);
    const uint8_t* qs = src + 8;
    for (int j = 0; j < 16; ++j) {
      const int h0 = static_cast<int>((qh >> j) & 1) << 4;
      const int h1 = static_cast<int>((qh >> (j + 16)) & 1) << 4;
      const float x0 = static_cast<float>((qs[j] & 0x0F) | h0);
      const float x1 = static_cast<float>((qs[j] >> 4) | h1);
      dst[j] = x0 * d + m;
      dst[j + 16] = x1 * d + m;
    }
  }
}

// Q8_0, 34 bytes: d:f16, qs:int8[32]; x = q * d.
void dequantize_q8_0(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += 34, dst += 32) {
    const float d = load_f16(src);
    for (int j = 0; j < 32; ++j) dst[j] = static_cast<float>(static_cast<int8_t>(src[2 + j])) * d;
  }
}

// Q8_1, 36 bytes: d:f16, s:f16, qs:int8[32]; s = d * sum(q) is for dot products and plays no
// part in the values: x = q * d. (ggml has no dequantize_row_q8_1; this is the format's meaning.)
void dequantize_q8_1(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += 36, dst += 32) {
    const float d = load_f16(src);
    for (int j = 0; j < 32; ++j) dst[j] = static_cast<float>(static_cast<int8_t>(src[4 + j])) * d;
  }
}

}  // namespace lathe::blocks
