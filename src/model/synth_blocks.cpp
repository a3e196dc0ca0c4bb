#include "model/synth_blocks.h"

#include "gguf/block_format.h"

#include <cstring>

namespace lathe {
namespace {

void put_f16(uint8_t* p, float v) {
  const uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

void random_bytes(SynthRng& rng, uint8_t* dst, int64_t n) {
  for (int64_t k = 0; k < n; k += 8) {
    const uint64_t r = rng.next();
    std::memcpy(dst + k, &r, static_cast<size_t>(n - k < 8 ? n - k : 8));
  }
}

// A block's scale as a fraction of the largest (0.5 to 1), as a quantizer's d follows its block's
// largest value. One d for every block would make the f16 roundings of the dequantized weights (the
// f16 GEMMs', as cuBLAS's in llama.cpp) the same for every equal level and scale, so a product's
// rounding errors add up with x's mean instead of as a random walk: qwen3-8b q3_k_m's prefill moved
// by 1.1e-2 of its logits at two prompt rows so (docs/perf.md, forty-first session), ~1e-3 with d spread.
double block_spread(SynthRng& rng) { return 0.5 + 0.5 * rng.uniform(); }

// Q8_0: d f16, qs int8[32]; value = d * q.
void q8_0(SynthRng& rng, double bound, uint8_t* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, dst += 34) {
    put_f16(dst, static_cast<float>(bound / 127.0 * block_spread(rng)));
    random_bytes(rng, dst + 2, 32);
    for (int k = 2; k < 34; ++k)
      if (dst[k] == 0x80) dst[k] = 0x81;  // keep q in [-127, 127] as ggml's quantizer does
  }
}

// Q4_0: d f16, qs[16] nibbles; value = d * (q - 8).
void q4_0(SynthRng& rng, double bound, uint8_t* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, dst += 18) {
    put_f16(dst, static_cast<float>(bound / 8.0 * block_spread(rng)));
    random_bytes(rng, dst + 2, 16);
  }
}

// Q2_K: scales[16] (low nibble the sub-block's scale, high nibble its min), qs[64] 2-bit, d, dmin f16;
// value = d * sc * q - dmin * m. With m = sc and dmin = 1.5 d, value = d sc (q - 1.5).
void q2_k(SynthRng& rng, double bound, uint8_t* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, dst += 84) {
    for (int s = 0; s < 16; ++s) {
      const uint8_t sc = static_cast<uint8_t>(4 + rng.next() % 12);  // 4..15
      dst[s] = static_cast<uint8_t>(sc | (sc << 4));
    }
    random_bytes(rng, dst + 16, 64);
    const float d = static_cast<float>(bound / (15.0 * 1.5) * block_spread(rng));
    put_f16(dst + 80, d);
    put_f16(dst + 82, 1.5f * d);
  }
}

// Q3_K: hmask[32], qs[64] 2-bit, 12 bytes of 6-bit scales stored plus 32, d f16; value = d * scale *
// q with q in -4..3. Scales 8..31 (stored 40..63).
void q3_k(SynthRng& rng, double bound, uint8_t* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, dst += 110) {
    random_bytes(rng, dst, 96);
    uint8_t* scales = dst + 96;
    std::memset(scales, 0, 12);
    for (int s = 0; s < 16; ++s) {
      const int stored = 40 + static_cast<int>(rng.next() % 24);
      scales[s < 8 ? s : s - 8] |= static_cast<uint8_t>((stored & 0xF) << (s < 8 ? 0 : 4));
      scales[8 + s % 4] |= static_cast<uint8_t>((stored >> 4) << (2 * (s / 4)));
    }
    put_f16(dst + 108, static_cast<float>(bound / (31.0 * 4.0) * block_spread(rng)));
  }
}

// Q4_K's and Q5_K's 12 bytes of 6-bit scales and mins, each sub-block's min equal to its scale
// (16..63), as block_codecs.h's k4_scale_min reads them.
void k4_scales(SynthRng& rng, uint8_t* scales) {
  uint8_t sc[8];
  for (uint8_t& s : sc) s = static_cast<uint8_t>(16 + rng.next() % 48);
  for (int j = 0; j < 4; ++j) {
    scales[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    scales[j + 4] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((sc[j + 4] & 0xF) << 4));
  }
}

// Q4_K and Q5_K: d, dmin f16; 12 bytes of 6-bit scales and mins; then the levels (Q4_K: qs[128]
// nibbles; Q5_K: qh[32], their fifth bits, and qs[128]). value = d * sc_j * q - dmin * m_j; with
// m_j = sc_j and dmin = h d (h = 7.5 for 4-bit levels, 15.5 for 5-bit), value = d sc_j (q - h).
void k_with_mins(SynthRng& rng, double bound, uint8_t* dst, int64_t n_blocks, int block_bytes, double h) {
  for (int64_t b = 0; b < n_blocks; ++b, dst += block_bytes) {
    const float d = static_cast<float>(bound / (63.0 * h) * block_spread(rng));
    put_f16(dst, d);
    put_f16(dst + 2, static_cast<float>(h) * d);
    k4_scales(rng, dst + 4);
    random_bytes(rng, dst + 16, block_bytes - 16);
  }
}

// Q6_K: ql[128], qh[64], scales int8[16], d f16; value = d * scale * (q - 32), q 6-bit.
void q6_k(SynthRng& rng, double bound, uint8_t* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, dst += 210) {
    random_bytes(rng, dst, 192);
    for (int k = 0; k < 16; ++k) dst[192 + k] = static_cast<uint8_t>(32 + rng.next() % 96);  // 32..127
    put_f16(dst + 208, static_cast<float>(bound / (127.0 * 32.0) * block_spread(rng)));
  }
}

}  // namespace

bool write_random_blocks(GgmlType type, SynthRng& rng, double bound, uint8_t* dst, int64_t n) {
  switch (type) {
    case GgmlType::Q8_0: q8_0(rng, bound, dst, n / 32); return true;
    case GgmlType::Q4_0: q4_0(rng, bound, dst, n / 32); return true;
    case GgmlType::Q2_K: q2_k(rng, bound, dst, n / 256); return true;
    case GgmlType::Q3_K: q3_k(rng, bound, dst, n / 256); return true;
    case GgmlType::Q4_K: k_with_mins(rng, bound, dst, n / 256, 144, 7.5); return true;
    case GgmlType::Q5_K: k_with_mins(rng, bound, dst, n / 256, 176, 15.5); return true;
    case GgmlType::Q6_K: q6_k(rng, bound, dst, n / 256); return true;
    case GgmlType::F16:
    case GgmlType::BF16: {
      for (int64_t k = 0; k < n; ++k) {
        const float v = static_cast<float>((2.0 * rng.uniform() - 1.0) * bound);
        const uint16_t h = type == GgmlType::F16 ? f32_to_f16(v) : f32_to_bf16(v);
        std::memcpy(dst + 2 * k, &h, 2);
      }
      return true;
    }
    case GgmlType::F32: {
      for (int64_t k = 0; k < n; ++k) {
        const float v = static_cast<float>((2.0 * rng.uniform() - 1.0) * bound);
        std::memcpy(dst + 4 * k, &v, 4);
      }
      return true;
    }
    default:
      return false;
  }
}

}  // namespace lathe
