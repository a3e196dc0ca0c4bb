// The blocks as the decode row walk (gemv_decode.cuh) reads them from shared memory: one piece trait a
// format, and the shared-memory loads they use. A file of its own so the host can compile the traits
// (tests/test_block_traits.cpp defines LATHE_HOST_SHARED_LOADS and gives the loads in host form) and
// check every piece against dequantize_row, as it checks gemv_blocks.cuh's.

#ifndef LATHE_HOST_SHARED_LOADS
// Shared-memory loads at 32-bit shared addresses (__cvta_generic_to_shared): a piece's addresses are
// then plain integers a constant stride from the round before, formed once a chunk (generic pointers
// made the compiler rebuild the shared window's base for every piece). Volatile: they stay after the
// ring's waits.
__device__ __forceinline__ uint32_t lathe_lds32(unsigned a) {
  uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(a));
  return v;
}
__device__ __forceinline__ unsigned short lathe_lds16(unsigned a) {
  unsigned short v;
  asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(v) : "r"(a));
  return v;
}
__device__ __forceinline__ int4 lathe_lds128(unsigned a) {
  int4 v;
  asm volatile("ld.shared.v4.s32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a));
  return v;
}
__device__ __forceinline__ uint4 lathe_lds128u(unsigned a) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a));
  return v;
}
__device__ __forceinline__ float2 lathe_lds64f(unsigned a) {
  float2 v;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(a));
  return v;
}
__device__ __forceinline__ float4 lathe_lds128f(unsigned a) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(a));
  return v;
}
__device__ __forceinline__ unsigned lathe_smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
#endif  // LATHE_HOST_SHARED_LOADS

// 4 words at the 2-byte aligned shared address ua + m (ua 4-byte aligned): 5 aligned loads and
// funnel shifts (shift 0 or 16). A piece's ua moves by whole words from round to round while m is the
// lane's, so the word and shift below are formed once a chunk.
__device__ __forceinline__ void lathe_gemv1_words4(unsigned ua, unsigned m, uint32_t* q) {
  const unsigned w = ua + (m & ~3u);
  const unsigned sh = (m & 3u) * 8u;
  uint32_t v[5];
#pragma unroll
  for (int i = 0; i < 5; ++i) v[i] = lathe_lds32(w + 4 * i);
#pragma unroll
  for (int i = 0; i < 4; ++i) q[i] = __funnelshift_r(v[i], v[i + 1], sh);
}

// Piece traits: piece(ua, m, j, sw, q, sa, sb, offset) gives piece j of the unit at shared address
// u = ua + m (ua 4-byte aligned, m < 4) as
// 8 words of signed levels IN THE LANE'S x ORDER: words 0-3 are the piece's 16-value half sw, words
// 4-7 its half 1 - sw (a lane reads its x block's halves in that order to spread the banks; taking the
// weights in the same order, by address, replaces 8-16 selects on x a piece). Half 0 is scaled by sa,
// half 1 by sb, plus offset * (sum of the 32 x). A format with a min a half (two_offsets: Q2_K) gives
// two: piece(ua, m, j, sw, q, sa, sb, oa, ob), each half's offset times that half's x.
struct lathe_gemv1_q8_0 {  // d:f16, qs:int8[32]; a piece is a block
  static constexpr int unit_values = 32, unit_bytes = 34, pieces = 1, chunk_units = 64;
  static constexpr bool has_offset = false, two_scales = false, two_offsets = false;
  static constexpr bool evict_first = false;  // lathe_gemv1_q8_0_ef (below) streams evict-first
  static __device__ __forceinline__ void piece(unsigned ua, unsigned m, int, int sw, uint32_t* q, float& sa,
                                               float& sb, float& offset) {
    lathe_gemv1_words4(ua, m + 2 + 16 * sw, q);
    lathe_gemv1_words4(ua, m + 18 - 16 * sw, q + 4);
    sa = sb = __half2float(__ushort_as_half(lathe_lds16(ua + m)));
    offset = 0.0f;
  }
};

// Q8_0 streamed evict-first (above): the kernels named _q8_0_ef_.
struct lathe_gemv1_q8_0_ef : lathe_gemv1_q8_0 {
  static constexpr bool evict_first = true;
};

// Sub-block j's scale d * sc and offset -dmin * m (jj = j % 4, low = j < 4) from a Q4_K unit's first 16
// bytes hd (d, dmin, scales[12]), without branches or byte loads: j < 4: sc = s[jj] & 63,
// m = s[jj + 4] & 63; j >= 4: sc = (s[jj + 8] & 15) | (s[jj] >> 6) << 4, m = (s[jj + 8] >> 4) |
// (s[jj + 4] >> 6) << 4 (block_codecs.h's k4_scale_min). The row walk's and the tiles' (gemv_decode_tiles.cuh).
__device__ __forceinline__ void lathe_gemv1_q4_k_scale(uint4 hd, int jj, bool low, float& sa, float& offset) {
  const int bs = 8 * jj;
  const uint32_t s0 = (hd.y >> bs) & 0xFFu, s4 = (hd.z >> bs) & 0xFFu, s8 = (hd.w >> bs) & 0xFFu;
  const uint32_t sc = low ? s0 & 63u : (s8 & 15u) | ((s0 >> 6) << 4);
  const uint32_t mn = low ? s4 & 63u : (s8 >> 4) | ((s4 >> 6) << 4);
  const float d = __half2float(__ushort_as_half(static_cast<unsigned short>(hd.x & 0xFFFFu)));
  const float dmin = __half2float(__ushort_as_half(static_cast<unsigned short>(hd.x >> 16)));
  sa = __fmul_rn(d, static_cast<float>(sc));
  offset = -__fmul_rn(dmin, static_cast<float>(mn));
}

// Q4_K: piece j is sub-block j; its nibbles are the low (j even) or high halves of qs[32 (j / 2) ..].
// Units are 144 bytes from a 16-byte aligned base: 16-byte aligned.
struct lathe_gemv1_q4_k {
  static constexpr int unit_values = 256, unit_bytes = 144, pieces = 8, chunk_units = 16;
  static constexpr bool has_offset = true, two_scales = false, two_offsets = false;
  static constexpr bool evict_first = false;
  static __device__ __forceinline__ void piece(unsigned ua, unsigned m, int j, int sw, uint32_t* q, float& sa,
                                               float& sb, float& offset) {
    const unsigned u = ua + m;  // m == 0: units are 16-byte aligned
    const unsigned qs = u + 16 + 32 * (j >> 1);
    const uint4 a = lathe_lds128u(qs + 16 * sw), b = lathe_lds128u(qs + 16 - 16 * sw);
    const int shift = 4 * (j & 1);
    const uint32_t words[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) q[i] = (words[i] >> shift) & 0x0F0F0F0Fu;
    lathe_gemv1_q4_k_scale(lathe_lds128u(u), j & 3, j < 4, sa, offset);
    sb = sa;
  }
};

// Q3_K (hmask[32] at 0, qs[64] at 32, scales[12] at 96, d at 108; gemv_blocks.cuh's lathe_gemv_q3_k):
// piece j = 4 h + kk covers values 128 h + 32 kk + l, l < 32: the low two bits at bits 2 kk of
// qs[32 h + l], 4 more where bit 4 h + kk of hmask[l] is set, less 4; its halves have the 6-bit scales
// s = 8 h + 2 kk and s + 1, less 32 (low four bits in scales[s % 8], nibble s / 8; high two at bits
// 2 (s / 4) of scales[8 + s % 4]). Units are 110 bytes: 2-byte aligned, read as Q6_K's by words.
struct lathe_gemv1_q3_k {
  static constexpr int unit_values = 256, unit_bytes = 110, pieces = 8, chunk_units = 16;
  static constexpr bool has_offset = false, two_scales = true, two_offsets = false;
  static constexpr bool evict_first = false;
  static __device__ __forceinline__ void piece(unsigned ua, unsigned m, int j, int sw, uint32_t* q, float& sa,
                                               float& sb, float& offset) {
    const int h = j >> 2, kk = j & 3;
    const unsigned pl = m + 32 + 32 * h, u = ua + m;
    uint32_t lo[8], hi[8];
    lathe_gemv1_words4(ua, pl + 16 * sw, lo);
    lathe_gemv1_words4(ua, pl + 16 - 16 * sw, lo + 4);
    lathe_gemv1_words4(ua, m + 16 * sw, hi);
    lathe_gemv1_words4(ua, m + 16 - 16 * sw, hi + 4);
    const int lo_shift = 2 * kk, hi_shift = 4 * h + kk;
#pragma unroll
    for (int i = 0; i < 8; ++i)  // the level less 4: q where hmask's bit is set, q | 0xFC (q - 4) where clear
      q[i] = ((lo[i] >> lo_shift) & 0x03030303u) | (((~hi[i] >> hi_shift) & 0x01010101u) * 0xFCu);
    const float d = __half2float(__ushort_as_half(lathe_lds16(u + 108)));
    const unsigned low = lathe_lds16(u + 96 + 2 * kk), high = lathe_lds16(u + 104 + 2 * (kk & 1));
    const unsigned nib = 4 * h, hs = 2 * (2 * h + (kk >> 1));
    const int s0 = static_cast<int>(((low >> nib) & 15u) | (((high >> hs) & 3u) << 4));
    const int s1 = static_cast<int>(((low >> (8 + nib)) & 15u) | (((high >> (8 + hs)) & 3u) << 4));
    sa = __fmul_rn(d, static_cast<float>(s0 - 32));
    sb = __fmul_rn(d, static_cast<float>(s1 - 32));
    offset = 0.0f;
  }
};

// Q5_K: Q4_K's 16-byte head (d, dmin, scales[12]) and sub-block j's low four bits as Q4_K's, then
// qh[32] at 16 (bit j of qh[l]: value l's fifth bit) and qs[128] at 48. Units are 176 bytes from a
// 16-byte aligned base: 16-byte aligned.
struct lathe_gemv1_q5_k {
  static constexpr int unit_values = 256, unit_bytes = 176, pieces = 8, chunk_units = 8;
  static constexpr bool has_offset = true, two_scales = false, two_offsets = false;
  static constexpr bool evict_first = false;
  static __device__ __forceinline__ void piece(unsigned ua, unsigned m, int j, int sw, uint32_t* q, float& sa,
                                               float& sb, float& offset) {
    const unsigned u = ua + m;  // m == 0: units are 16-byte aligned
    const unsigned qs = u + 48 + 32 * (j >> 1);
    const uint4 a = lathe_lds128u(qs + 16 * sw), b = lathe_lds128u(qs + 16 - 16 * sw);
    const uint4 ha = lathe_lds128u(u + 16 + 16 * sw), hb = lathe_lds128u(u + 32 - 16 * sw);
    const int shift = 4 * (j & 1);
    const uint32_t words[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    const uint32_t high[8] = {ha.x, ha.y, ha.z, ha.w, hb.x, hb.y, hb.z, hb.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) q[i] = ((words[i] >> shift) & 0x0F0F0F0Fu) | (((high[i] >> j) & 0x01010101u) << 4);
    lathe_gemv1_q4_k_scale(lathe_lds128u(u), j & 3, j < 4, sa, offset);
    sb = sa;
  }
};

// Q2_K (scales[16] at 0, qs[64] at 16, d at 80, dmin at 82; gemv_blocks.cuh's lathe_gemv_q2_k): piece
// j = 4 h + kk covers values 128 h + 32 kk + l, l < 32, its levels bits 2 kk of qs[32 h + l] (0-3);
// its halves have their own scale bytes 8 h + 2 kk and + 1, d times the low nibble, less dmin times the
// high nibble for every value: a min a half (two_offsets). Units are 84 bytes from a 16-byte aligned
// base, rows a whole number of words: every unit word-aligned (m == 0).
struct lathe_gemv1_q2_k {
  static constexpr int unit_values = 256, unit_bytes = 84, pieces = 8, chunk_units = 16;
  static constexpr bool has_offset = false, two_scales = true, two_offsets = true;
  static constexpr bool evict_first = false;
  static __device__ __forceinline__ void piece(unsigned ua, unsigned m, int j, int sw, uint32_t* q, float& sa,
                                               float& sb, float& oa, float& ob) {
    const int h = j >> 2, kk = j & 3;
    const unsigned u = ua + m, ql = u + 16 + 32 * h;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      q[i] = (lathe_lds32(ql + 16 * sw + 4 * i) >> (2 * kk)) & 0x03030303u;
      q[4 + i] = (lathe_lds32(ql + 16 - 16 * sw + 4 * i) >> (2 * kk)) & 0x03030303u;
    }
    const float d = __half2float(__ushort_as_half(lathe_lds16(u + 80)));
    const float dmin = __half2float(__ushort_as_half(lathe_lds16(u + 82)));
    const unsigned scw = lathe_lds16(u + 8 * h + 2 * kk);  // half 0's byte, then half 1's
    sa = __fmul_rn(d, static_cast<float>(scw & 15u));
    sb = __fmul_rn(d, static_cast<float>((scw >> 8) & 15u));
    oa = -__fmul_rn(dmin, static_cast<float>((scw >> 4) & 15u));
    ob = -__fmul_rn(dmin, static_cast<float>(scw >> 12));
  }
};

// Q6_K: piece j = 4 h + kk covers values 128 h + 32 kk .. + 31 (see gemv_blocks.cuh); its first and
// second 16 values have scales 8 h + 2 kk and + 1.
struct lathe_gemv1_q6_k {
  static constexpr int unit_values = 256, unit_bytes = 210, pieces = 8, chunk_units = 12;
  static constexpr bool has_offset = false, two_scales = true, two_offsets = false;
  static constexpr bool evict_first = false;
  static __device__ __forceinline__ void piece(unsigned ua, unsigned m, int j, int sw, uint32_t* q, float& sa,
                                               float& sb, float& offset) {
    const int h = j >> 2, kk = j & 3;
    const unsigned pl = m + 64 * h + 32 * (kk & 1), ph = m + 128 + 32 * h, u = ua + m;
    uint32_t lo[8], hi[8];
    lathe_gemv1_words4(ua, pl + 16 * sw, lo);
    lathe_gemv1_words4(ua, pl + 16 - 16 * sw, lo + 4);
    lathe_gemv1_words4(ua, ph + 16 * sw, hi);
    lathe_gemv1_words4(ua, ph + 16 - 16 * sw, hi + 4);
    const int lo_shift = 4 * (kk >> 1), hi_shift = 2 * kk;
#pragma unroll
    for (int i = 0; i < 8; ++i)
      q[i] = static_cast<uint32_t>(
          lathe_gemv_bias(((lo[i] >> lo_shift) & 0x0F0F0F0Fu) | (((hi[i] >> hi_shift) & 0x03030303u) << 4), 32));
    const float d = __half2float(__ushort_as_half(lathe_lds16(u + 208)));
    const unsigned short scw = lathe_lds16(u + 192 + 8 * h + 2 * kk);  // the two int8 scales
    sa = __fmul_rn(d, static_cast<float>(static_cast<int8_t>(scw & 0xFF)));
    sb = __fmul_rn(d, static_cast<float>(static_cast<int8_t>(scw >> 8)));
    offset = 0.0f;
  }
};

