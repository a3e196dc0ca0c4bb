// Dequantization of the K formats (256 values a block), bit-exact with ggml's dequantize_row_*:
// the sub-block factor is formed first (d * scale, dmin * min) and then applied, as ggml does.
#include "gguf/block_codecs.h"

namespace lathe::blocks {

// Q2_K, 84 bytes: scales:uint8[16], qs:uint8[64], d:f16, dmin:f16. Sixteen sub-blocks of 16; the
// low nibble of scales[s] scales sub-block s, its high nibble is its min. Value v of half h
// (v = 128 h + 32 j + l, l < 32) is bits 2j..2j+1 of qs[32 h + l], sub-block 8 h + 2 j + l / 16;
// x = d * sc * q - dmin * m.
void dequantize_q2_k(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += 84, dst += 256) {
    const uint8_t* scales = src;
    const uint8_t* qs = src + 16;
    const float d = load_f16(src + 80);
    const float dmin = load_f16(src + 82);
    for (int v = 0; v < 256; ++v) {
      const int h = v / 128, j = (v % 128) / 32, l = v % 32;
      const uint8_t sc = scales[8 * h + 2 * j + l / 16];
      const float dl = d * static_cast<float>(sc & 0xF);
      const float ml = dmin * static_cast<float>(sc >> 4);
      const int q = (qs[32 * h + l] >> (2 * j)) & 3;
      dst[v] = dl * static_cast<float>(q) - ml;
    }
  }
}

// Q3_K, 110 bytes: hmask:uint8[32], qs:uint8[64], scales:uint8[12], d:f16. Sixteen sub-blocks of 16
// with 6-bit scales stored minus 32: the low 4 bits of scale s are the low nibble of scales[s]
// (s < 8) or the high nibble of scales[s - 8]; its top 2 bits are bits 2 (s / 4) of
// scales[8 + s % 4]. Value v = 128 h + 32 j + l has its low 2 bits at bits 2j of qs[32 h + l]; bit
// 4 h + j of hmask[l] set means q as is, clear means q - 4; x = d * (scale - 32) * q.
void dequantize_q3_k(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += 110, dst += 256) {
    const uint8_t* hmask = src;
    const uint8_t* qs = src + 32;
    const uint8_t* scales = src + 96;
    const float d = load_f16(src + 108);
    int8_t sc[16];
    for (int s = 0; s < 16; ++s) {
      const int low = s < 8 ? (scales[s] & 0xF) : (scales[s - 8] >> 4);
      const int high = (scales[8 + s % 4] >> (2 * (s / 4))) & 3;
      sc[s] = static_cast<int8_t>((low | (high << 4)) - 32);
    }
    for (int v = 0; v < 256; ++v) {
      const int h = v / 128, j = (v % 128) / 32, l = v % 32;
      const float dl = d * static_cast<float>(sc[8 * h + 2 * j + l / 16]);
      const int low = (qs[32 * h + l] >> (2 * j)) & 3;
      const int q = low - ((hmask[l] >> (4 * h + j)) & 1 ? 0 : 4);
      dst[v] = dl * static_cast<float>(q);
    }
  }
}

// Q4_K, 144 bytes: d:f16, dmin:f16, scales:uint8[12], qs:uint8[128]. Eight sub-blocks of 32 with
// 6-bit scales and mins (k4_scale_min). Value v = 64 p + 32 half + l is the low (half 0) or high
// (half 1) nibble of qs[32 p + l], sub-block 2 p + half; x = d * sc * q - dmin * m.
void dequantize_q4_k(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += 144, dst += 256) {
    const float d = load_f16(src);
    const float dmin = load_f16(src + 2);
    const uint8_t* scales = src + 4;
    const uint8_t* qs = src + 16;
    for (int s = 0; s < 8; ++s) {
      uint8_t sc, m;
      k4_scale_min(s, scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = dmin * static_cast<float>(m);
      const uint8_t* q = qs + 32 * (s / 2);
      const int shift = 4 * (s % 2);
      for (int l = 0; l < 32; ++l) dst[32 * s + l] = d1 * static_cast<float>((q[l] >> shift) & 0xF) - m1;
    }
  }
}

// Q5_K, 176 bytes: d:f16, dmin:f16, scales:uint8[12], qh:uint8[32], qs:uint8[128]. As Q4_K with a
// fifth bit: bit s of qh[l] is the high bit of value l of sub-block s.
void dequantize_q5_k(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += 176, dst += 256) {
    const float d = load_f16(src);
    const float dmin = load_f16(src + 2);
    const uint8_t* scales = src + 4;
    const uint8_t* qh = src + 16;
    const uint8_t* qs = src + 48;
    for (int s = 0; s < 8; ++s) {
      uint8_t sc, m;
      k4_scale_min(s, scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = dmin * static_cast<float>(m);
      const uint8_t* q = qs + 32 * (s / 2);
      const int shift = 4 * (s % 2);
      for (int l = 0; l < 32; ++l) {
        const int value = ((q[l] >> shift) & 0xF) + (((qh[l] >> s) & 1) ? 16 : 0);
        dst[32 * s + l] = d1 * static_cast<float>(value) - m1;
      }
    }
  }
}

// Q6_K, 210 bytes: ql:uint8[128], qh:uint8[64], scales:int8[16], d:f16. Sixteen sub-blocks of 16.
// Value v = 128 h + 32 k + l (k < 4, l < 32): its low 4 bits are the low (k < 2) or high (k >= 2)
// nibble of ql[64 h + 32 (k % 2) + l], its high 2 bits are bits 2k of qh[32 h + l]; sub-block
// 8 h + 2 k + l / 16; x = d * scale * (q - 32).
void dequantize_q6_k(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += 210, dst += 256) {
    const uint8_t* ql = src;
    const uint8_t* qh = src + 128;
    const int8_t* scales = reinterpret_cast<const int8_t*>(src + 192);
    const float d = load_f16(src + 208);
    for (int v = 0; v < 256; ++v) {
      const int h = v / 128, k = (v % 128) / 32, l = v % 32;
      const int low = (ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0xF;
      const int high = (qh[32 * h + l] >> (2 * k)) & 3;
      const int q = (low | (high << 4)) - 32;
      dst[v] = d * static_cast<float>(scales[8 * h + 2 * k + l / 16]) * static_cast<float>(q);
    }
  }
}

// Q8_K, 292 bytes: d:f32, qs:int8[256], bsums:int16[16] (sums of 16 values, for dot products);
// x = d * q.
void dequantize_q8_k(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += 292, dst += 256) {
    float d;
    std::memcpy(&d, src, 4);
    for (int j = 0; j < 256; ++j) dst[j] = d * static_cast<float>(static_cast<int8_t>(src[4 + j]));
  }
}

}  // namespace lathe::blocks
