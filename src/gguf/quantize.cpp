// Quantization of the float formats and the 32-value formats, as ggml's quantize_row_*_ref does it:
// same float operations in the same order, so that the bytes agree exactly (test_block_formats
// compares with gguf.quants and ggml itself). The K formats are in quantize_k.cpp.
//
// Float-to-integer conversions go through truncate_like_x86: ggml writes (int8_t)(x * id + 8.5f)
// and (int8_t)roundf(x * id), whose result in C is undefined when the value is not finite or does
// not fit, which happens (a block of f32 subnormals makes id infinite). On x86, where checkpoints
// are made, such a conversion gives INT_MIN, whose low byte is 0, and gguf.quants agrees; we give
// that result on purpose instead of leaving it to the compiler.
#include "gguf/block_codecs.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

namespace lathe::blocks {
namespace {

int truncate_like_x86(float f) {
  if (!(f >= -2147483648.0f && f < 2147483648.0f)) return INT32_MIN;
  return static_cast<int>(f);
}

// The value of largest magnitude in a block (the first one on ties), sign kept.
float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void min_max(const float* x, int n, float* min, float* max) {
  *min = 3.402823466e+38f;
  *max = -3.402823466e+38f;
  for (int j = 0; j < n; ++j) {
    if (x[j] < *min) *min = x[j];
    if (x[j] > *max) *max = x[j];
  }
}

float abs_max(const float* x, int n) {
  float amax = 0.0f;
  for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
  return amax;
}

// Packs the low 4 bits of 32 values as qs[j] = q[j] | q[j + 16] << 4, and returns their fifth bits
// as the Q5 formats store them (bit j = fifth bit of value j).
uint32_t pack_nibbles(const int* q, uint8_t* qs) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4));
    qh |= static_cast<uint32_t>((q[j] & 0x10) >> 4) << j;
    qh |= static_cast<uint32_t>((q[j + 16] & 0x10) >> 4) << (j + 16);
  }
  return qh;
}

// Symmetric 4- and 5-bit blocks: d = max / -(2^(bits-1)) so that the largest magnitude maps to
// q = 0; q = min(qmax, trunc(x / d + 2^(bits-1) + 0.5)).
void quantize_symmetric(const float* x, int half, int qmax, float* d_out, int* q) {
  const float max = signed_absmax(x, 32);
  const float d = max / static_cast<float>(-half);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const float offset = static_cast<float>(half) + 0.5f;
  for (int j = 0; j < 32; ++j) q[j] = std::min(qmax, static_cast<int>(static_cast<int8_t>(truncate_like_x86(x[j] * id + offset))));
  *d_out = d;
}

// Asymmetric 4- and 5-bit blocks: d = (max - min) / qmax, m = min; q = min(qmax, trunc((x - min) / d
// + 0.5)).
void quantize_affine(const float* x, int qmax, float* d_out, float* m_out, int* q) {
  float min, max;
  min_max(x, 32, &min, &max);
  const float d = (max - min) / static_cast<float>(qmax);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < 32; ++j) q[j] = std::min(qmax, static_cast<int>(static_cast<int8_t>(truncate_like_x86((x[j] - min) * id + 0.5f))));
  *d_out = d;
  *m_out = min;
}

}  // namespace

void quantize_f32(const float* src, uint8_t* dst, int64_t n_blocks) {
  std::memcpy(dst, src, static_cast<size_t>(n_blocks) * 4);
}

void quantize_f16(const float* src, uint8_t* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) store_f16(dst + 2 * i, src[i]);
}

void quantize_bf16(const float* src, uint8_t* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const uint16_t h = f32_to_bf16(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

void quantize_q4_0(const float* src, uint8_t* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += 32, dst += 18) {
    float d;
    int q[32];
    quantize_symmetric(src, 8, 15, &d, q);
    store_f16(dst, d);
    pack_nibbles(q, dst + 2);
  }
}

void quantize_q4_1(const float* src, uint8_t* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += 32, dst += 20) {
    float d, m;
    int q[32];
    quantize_affine(src, 15, &d, &m, q);
    store_f16(dst, d);
    store_f16(dst + 2, m);
    pack_nibbles(q, dst + 4);
  }
}

void quantize_q5_0(const float* src, uint8_t* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += 32, dst += 22) {
    float d;
    int q[32];
    quantize_symmetric(src, 16, 31, &d, q);
    store_f16(dst, d);
    const uint32_t qh = pack_nibbles(q, dst + 6);
    std::memcpy(dst + 2, &qh, 4);
  }
}

void quantize_q5_1(const float* src, uint8_t* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += 32, dst += 24) {
    float d, m;
    int q[32];
    quantize_affine(src, 31, &d, &m, q);
    store_f16(dst, d);
    store_f16(dst + 2, m);
    const uint32_t qh = pack_nibbles(q, dst + 8);
    std::memcpy(dst + 4, &qh, 4);
  }
}

// Q8_0: d = amax / 127, q = roundf(x / d) (half away from zero, as C's roundf).
void quantize_q8_0(const float* src, uint8_t* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += 32, dst += 34) {
    const float d = abs_max(src, 32) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_f16(dst, d);
    for (int j = 0; j < 32; ++j) dst[2 + j] = static_cast<uint8_t>(truncate_like_x86(std::round(src[j] * id)));
  }
}

// Q8_1: Q8_0's values, plus s = f16(sum(q) * d).
void quantize_q8_1(const float* src, uint8_t* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += 32, dst += 36) {
    const float d = abs_max(src, 32) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_f16(dst, d);
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      const auto q = static_cast<int8_t>(truncate_like_x86(std::round(src[j] * id)));
      dst[4 + j] = static_cast<uint8_t>(q);
      sum += q;
    }
    store_f16(dst + 2, static_cast<float>(sum) * d);
  }
}

}  // namespace lathe::blocks
