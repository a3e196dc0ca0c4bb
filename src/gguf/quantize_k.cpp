// Quantization of the K formats (256 values a block) as ggml's quantize_row_*_ref does it, without
// an importance matrix: a scale search per sub-block (quantize_k_search.cpp), the sub-block scales
// quantized against the block's largest, then every value re-rounded against the scale it will be
// read with (the f16 block scale times the quantized sub-block scale). Field layouts are described
// beside the dequantizers in dequantize_k.cpp.
#include "gguf/block_codecs.h"

#include <algorithm>
#include <cmath>

namespace lathe::blocks {
namespace {

int clamp_int(int v, int lo, int hi) { return std::max(lo, std::min(hi, v)); }

// Levels of 2 bits, four to a byte: byte 32 h + l holds values 128 h + l + 32 k at bits 2k.
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < 256; j += 128)
    for (int l = 0; l < 32; ++l)
      qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                           (L[j + l + 96] << 6));
}

// Q4_K and Q5_K share everything but the level count and the search's range: nmax 15 or 31.
// Writes d, dmin and the 12 scale bytes at dst, and the final levels (0..nmax) into L.
void quantize_k4_scales(const float* x, int nmax, float rmin, int nstep, uint8_t* dst, uint8_t* L) {
  float mins[8], scales[8], weights[32];
  uint8_t Laux[32];
  float max_scale = 0, max_min = 0;  // the mins are subtracted, so scales are never negative
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = make_qkx2_quants(32, nmax, xs, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t* packed = dst + 4;
  for (int j = 0; j < 8; ++j) {
    // ggml stores nearest_int into a uint8_t before clamping: keep that truncation.
    const auto ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const auto lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      packed[j] = ls;
      packed[j + 4] = lm;
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      packed[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  store_f16(dst, max_scale / 63.f);
  store_f16(dst + 2, max_min / 63.f);
  const float d_block = load_f16(dst);
  const float dmin_block = load_f16(dst + 2);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    k4_scale_min(j, packed, &sc, &m);
    const float d = d_block * static_cast<float>(sc);
    if (d == 0.0f) continue;  // the search's levels stay
    const float dm = dmin_block * static_cast<float>(m);
    for (int i = 0; i < 32; ++i) L[32 * j + i] = static_cast<uint8_t>(clamp_int(nearest_int((x[32 * j + i] + dm) / d), 0, nmax));
  }
}

}  // namespace

void quantize_q2_k(const float* src, uint8_t* dst, int64_t n_blocks) {
  constexpr float kQ4Scale = 15.f;
  for (int64_t b = 0; b < n_blocks; ++b, src += 256, dst += 84) {
    uint8_t* scales_out = dst;
    uint8_t L[256], Laux[16];
    float weights[16], mins[16], scales[16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(src[16 * j + l]);
      scales[j] = make_qkx2_quants(16, 3, src + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0) {
      const float iscale = kQ4Scale / max_scale;
      for (int j = 0; j < 16; ++j) scales_out[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      store_f16(dst + 80, max_scale / kQ4Scale);
    } else {
      std::fill(scales_out, scales_out + 16, uint8_t{0});
      store_f16(dst + 80, 0.f);
    }
    if (max_min > 0) {
      const float iscale = kQ4Scale / max_min;
      for (int j = 0; j < 16; ++j) scales_out[j] |= static_cast<uint8_t>(nearest_int(iscale * mins[j]) << 4);
      store_f16(dst + 82, max_min / kQ4Scale);
    } else {
      store_f16(dst + 82, 0.f);
    }
    const float d_block = load_f16(dst + 80);
    const float dmin_block = load_f16(dst + 82);
    for (int j = 0; j < 16; ++j) {
      const float d = d_block * static_cast<float>(scales_out[j] & 0xF);
      if (d == 0.0f) continue;
      const float dm = dmin_block * static_cast<float>(scales_out[j] >> 4);
      for (int i = 0; i < 16; ++i) L[16 * j + i] = static_cast<uint8_t>(clamp_int(nearest_int((src[16 * j + i] + dm) / d), 0, 3));
    }
    pack_2bit(L, dst + 16);
  }
}

void quantize_q3_k(const float* src, uint8_t* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, src += 256, dst += 110) {
    uint8_t* hmask = dst;
    uint8_t* scales_out = dst + 96;
    int8_t L[256];
    float scales[16];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = make_q3_quants(16, 4, src + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    std::fill(scales_out, scales_out + 12, uint8_t{0});
    if (max_scale != 0.0f) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; ++j) {
        // ggml keeps nearest_int in an int8_t before clamping: keep that truncation.
        const int l = clamp_int(static_cast<int8_t>(nearest_int(iscale * scales[j])), -32, 31) + 32;
        if (j < 8)
          scales_out[j] = static_cast<uint8_t>(l & 0xF);
        else
          scales_out[j - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
        scales_out[j % 4 + 8] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
      }
      store_f16(dst + 108, 1 / iscale);
    } else {
      store_f16(dst + 108, 0.f);
    }
    const float d_block = load_f16(dst + 108);
    for (int j = 0; j < 16; ++j) {
      const int low = j < 8 ? (scales_out[j] & 0xF) : (scales_out[j - 8] >> 4);
      const int sc = (low | (((scales_out[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
      const float d = d_block * static_cast<float>(sc);
      if (d == 0.0f) continue;
      for (int i = 0; i < 16; ++i)
        L[16 * j + i] = static_cast<int8_t>(clamp_int(nearest_int(src[16 * j + i] / d), -4, 3) + 4);
    }
    // Levels 0..7: bit 2 goes to hmask (value v at bit v / 32 of hmask[v % 32]), the rest to qs.
    uint8_t levels[256];
    std::fill(hmask, hmask + 32, uint8_t{0});
    for (int v = 0; v < 256; ++v) {
      int l = L[v];
      if (l > 3) {
        hmask[v % 32] |= static_cast<uint8_t>(1 << (v / 32));
        l -= 4;
      }
      levels[v] = static_cast<uint8_t>(l);
    }
    pack_2bit(levels, dst + 32);
  }
}

void quantize_q4_k(const float* src, uint8_t* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, src += 256, dst += 144) {
    uint8_t L[256];
    quantize_k4_scales(src, 15, -1.f, 20, dst, L);
    uint8_t* qs = dst + 16;
    for (int j = 0; j < 256; j += 64, qs += 32)
      for (int l = 0; l < 32; ++l) qs[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
  }
}

void quantize_q5_k(const float* src, uint8_t* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, src += 256, dst += 176) {
    uint8_t L[256];
    quantize_k4_scales(src, 31, -0.5f, 15, dst, L);
    uint8_t* qh = dst + 16;
    uint8_t* qs = dst + 48;
    std::fill(qh, qh + 32, uint8_t{0});
    for (int s = 0; s < 8; s += 2, qs += 32) {
      for (int l = 0; l < 32; ++l) {
        int l1 = L[32 * s + l], l2 = L[32 * s + 32 + l];
        if (l1 > 15) {
          l1 -= 16;
          qh[l] |= static_cast<uint8_t>(1 << s);
        }
        if (l2 > 15) {
          l2 -= 16;
          qh[l] |= static_cast<uint8_t>(2 << s);
        }
        qs[l] = static_cast<uint8_t>(l1 | (l2 << 4));
      }
    }
  }
}

void quantize_q6_k(const float* src, uint8_t* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, src += 256, dst += 210) {
    int8_t L[256];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < 16; ++ib) {
      scales[ib] = make_qx_quants(16, 32, src + 16 * ib, L + 16 * ib);
      if (std::fabs(scales[ib]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }
    if (max_abs_scale < 1e-15f) {  // an all-zero block: every byte 0
      std::fill(dst, dst + 210, uint8_t{0});
      continue;
    }
    int8_t* scales_out = reinterpret_cast<int8_t*>(dst + 192);
    const float iscale = -128.f / max_scale;
    store_f16(dst + 208, 1 / iscale);
    for (int ib = 0; ib < 16; ++ib)
      scales_out[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
    const float d_block = load_f16(dst + 208);
    for (int j = 0; j < 16; ++j) {
      const float d = d_block * static_cast<float>(scales_out[j]);
      if (d == 0.0f) continue;
      for (int i = 0; i < 16; ++i)
        L[16 * j + i] = static_cast<int8_t>(clamp_int(nearest_int(src[16 * j + i] / d), -32, 31) + 32);
    }
    uint8_t* ql = dst;
    uint8_t* qh = dst + 128;
    for (int j = 0; j < 256; j += 128, ql += 64, qh += 32) {
      for (int l = 0; l < 32; ++l) {
        const int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
        ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
      }
    }
  }
}

// Q8_K: d = max / -127 as f32 (max the value of largest magnitude), q = min(127, nearest(x / d)),
// bsums the sums of each 16 q. An all-zero block is all zero bytes.
void quantize_q8_k(const float* src, uint8_t* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, src += 256, dst += 292) {
    float max = 0, amax = 0;
    for (int j = 0; j < 256; ++j) {
      if (std::fabs(src[j]) > amax) {
        amax = std::fabs(src[j]);
        max = src[j];
      }
    }
    std::fill(dst, dst + 292, uint8_t{0});
    if (amax == 0.0f) continue;
    const float iscale = -127.f / max;
    int8_t q[256];
    for (int j = 0; j < 256; ++j) q[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * src[j])));
    std::memcpy(dst + 4, q, 256);
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += q[16 * j + i];
      const auto bsum = static_cast<int16_t>(sum);
      std::memcpy(dst + 260 + 2 * j, &bsum, 2);
    }
    const float d = 1 / iscale;
    std::memcpy(dst, &d, 4);
  }
}

}  // namespace lathe::blocks
