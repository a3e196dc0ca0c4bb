// The weight formats of the f16 tensor-core GEMM (gemm_f16.cuh) and its kernels.
//
// A format F says, for a 64-value chunk c of one weight row:
//   lines              how many 16-byte lines of the row the chunk needs (staged by cp.async);
//   line(row, k, c, l, src)  where line l starts (16-byte aligned) and whether it is to be read (a
//                      line wholly past what the chunk needs is zero-filled instead, so the last row
//                      never reads past the matrix's last 16-byte line);
//   dequant(raw, row_addr, k, c, h, v)  from the staged lines (raw; row_addr the row's global address,
//                      which fixes where each region sits inside its first line), 32 values of half h
//                      of the chunk as 16 words of packed f16: w = fl16(f32 value of dequantize_row).
//   direct             the lines ARE the f16 values (f16 weights): staged swizzled, never dequantized.
// Values are formed in f32 as dequantize_row does (d q; q4_K fma(d sc, q, -dmin m); q6_K (d sc) q),
// exact or within an f32 rounding, then rounded once to f16.

// f16: 128 bytes a chunk, 16-byte aligned (k % 8 == 0 and the matrix 16-byte aligned).
struct lathe_gf16_f16 {
  static constexpr int lines = 8;
  static constexpr bool direct = true;
  static __device__ __forceinline__ bool line(const uint8_t* row, int k, int c, int l, const uint8_t*& src) {
    src = row + 128 * c + 16 * l;
    return 64 * c + 8 * l < k;
  }
  static __device__ __forceinline__ void dequant(const uint8_t*, size_t, int, int, int, uint32_t*) {}
};

// q8_0: 34-byte blocks (d: f16, qs: int8[32]), chunk c = blocks 2c, 2c + 1 (68 bytes at an even
// offset: at most 6 lines). When k % 64 == 32 the last chunk has one block; its second half is zeros.
struct lathe_gf16_q8_0 {
  static constexpr int lines = 6;
  static constexpr bool direct = false;
  static __device__ __forceinline__ bool line(const uint8_t* row, int k, int c, int l, const uint8_t*& src) {
    const uint8_t* p = row + 68 * c;
    const int off = static_cast<int>(reinterpret_cast<size_t>(p) & 15);
    src = p - off + 16 * l;
    return 16 * l < off + 34 * min(2, (k >> 5) - 2 * c);
  }
  static __device__ __forceinline__ void dequant(const uint8_t* raw, size_t row_addr, int k, int c, int h,
                                                 uint32_t* v) {
    if (2 * c + h >= (k >> 5)) {
#pragma unroll
      for (int i = 0; i < 16; ++i) v[i] = 0u;
      return;
    }
    const uint8_t* b = raw + ((row_addr + 68 * c) & 15) + 34 * h;
    const float d = lathe_gf16_half_at(b);
    uint32_t q[8];
    lathe_gemm_words<8>(b + 2, q);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t u = q[i] ^ 0x80808080u;  // level + 128, 0..255
      v[2 * i] = lathe_gf16_pack(d * lathe_gf16_byte(u, 0, 128.0f), d * lathe_gf16_byte(u, 1, 128.0f));
      v[2 * i + 1] = lathe_gf16_pack(d * lathe_gf16_byte(u, 2, 128.0f), d * lathe_gf16_byte(u, 3, 128.0f));
    }
  }
};

// q4_K: 144-byte super-blocks (d, dmin: f16, scales: uint8[12], qs: uint8[128]), rows 16-byte aligned
// (144 = 9 * 16). Chunk c is quarter p = c % 4 of super-block c / 4: line 0 its header, lines 1-2
// qs[32p .. 32p + 31], whose low nibbles are sub-block 2p (half 0) and high nibbles 2p + 1 (half 1).
struct lathe_gf16_q4_k {
  static constexpr int lines = 3;
  static constexpr bool direct = false;
  static __device__ __forceinline__ bool line(const uint8_t* row, int, int c, int l, const uint8_t*& src) {
    const uint8_t* sb = row + 144 * (c >> 2);
    src = l == 0 ? sb : sb + 16 + 32 * (c & 3) + 16 * (l - 1);
    return true;
  }
  static __device__ __forceinline__ void dequant(const uint8_t* raw, size_t, int, int c, int h, uint32_t* v) {
    const int j = 2 * (c & 3) + h;  // sub-block
    const uint8_t* s = raw + 4;
    int sc, m;
    lathe_k4_scale_min(s, j, sc, m);
    const float ds = lathe_gf16_half_at(raw) * static_cast<float>(sc);
    const float mn = -(lathe_gf16_half_at(raw + 2) * static_cast<float>(m));
    const uint4 a = *reinterpret_cast<const uint4*>(raw + 16), b = *reinterpret_cast<const uint4*>(raw + 32);
    const uint32_t q[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t u = (q[i] >> (4 * h)) & 0x0F0F0F0Fu;
      v[2 * i] = lathe_gf16_pack(fmaf(ds, lathe_gf16_byte(u, 0, 0.0f), mn), fmaf(ds, lathe_gf16_byte(u, 1, 0.0f), mn));
      v[2 * i + 1] =
          lathe_gf16_pack(fmaf(ds, lathe_gf16_byte(u, 2, 0.0f), mn), fmaf(ds, lathe_gf16_byte(u, 3, 0.0f), mn));
    }
  }
};

// q5_K: 176-byte super-blocks (d, dmin: f16, scales: uint8[12], qh: uint8[32], qs: uint8[128]), rows
// 16-byte aligned (176 = 11 * 16). Chunk c is quarter p = c % 4 of super-block c / 4, as q4_K's: line
// 0 the header, lines 1-2 qh (bit j of qh[l] the fifth bit of value l of sub-block j), lines 3-4
// qs[32p .. 32p + 31].
struct lathe_gf16_q5_k {
  static constexpr int lines = 5;
  static constexpr bool direct = false;
  static __device__ __forceinline__ bool line(const uint8_t* row, int, int c, int l, const uint8_t*& src) {
    const uint8_t* sb = row + 176 * (c >> 2);
    src = l < 3 ? sb + 16 * l : sb + 48 + 32 * (c & 3) + 16 * (l - 3);
    return true;
  }
  static __device__ __forceinline__ void dequant(const uint8_t* raw, size_t, int, int c, int h, uint32_t* v) {
    const int j = 2 * (c & 3) + h;  // sub-block
    int sc, m;
    lathe_k4_scale_min(raw + 4, j, sc, m);
    const float ds = lathe_gf16_half_at(raw) * static_cast<float>(sc);
    const float mn = -(lathe_gf16_half_at(raw + 2) * static_cast<float>(m));
    const uint4 a = *reinterpret_cast<const uint4*>(raw + 48), b = *reinterpret_cast<const uint4*>(raw + 64);
    const uint4 ha = *reinterpret_cast<const uint4*>(raw + 16), hb = *reinterpret_cast<const uint4*>(raw + 32);
    const uint32_t q[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    const uint32_t qh[8] = {ha.x, ha.y, ha.z, ha.w, hb.x, hb.y, hb.z, hb.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t u = ((q[i] >> (4 * h)) & 0x0F0F0F0Fu) | (((qh[i] >> j) & 0x01010101u) << 4);
      v[2 * i] = lathe_gf16_pack(fmaf(ds, lathe_gf16_byte(u, 0, 0.0f), mn), fmaf(ds, lathe_gf16_byte(u, 1, 0.0f), mn));
      v[2 * i + 1] =
          lathe_gf16_pack(fmaf(ds, lathe_gf16_byte(u, 2, 0.0f), mn), fmaf(ds, lathe_gf16_byte(u, 3, 0.0f), mn));
    }
  }
};

// q6_K: 210-byte super-blocks (ql: uint8[128], qh: uint8[64], scales: int8[16], d: f16) at even
// offsets. Chunk c is quarter p = 2H + e of super-block c / 4 (H: its 128-value half); half h of the
// chunk is ggml's group c' = 2e + h of that half: value l (0..31) has low nibble e of ql[64H + 32h + l],
// high bits 2c' of qh[32H + l], level (low | high << 4) - 32 and scale scales[4p + 2h + l / 16].
// Staged: lines 0-4 ql[64H ..] (64 bytes), 5-7 qh[32H ..] (32), 8-9 scales and d (bytes 192..209).
struct lathe_gf16_q6_k {
  static constexpr int lines = 10;
  static constexpr bool direct = false;
  static __device__ __forceinline__ void region(const uint8_t* sb, int H, int l, const uint8_t*& start, int& len,
                                                int& first) {
    if (l < 5) { start = sb + 64 * H; len = 64; first = 0; }
    else if (l < 8) { start = sb + 128 + 32 * H; len = 32; first = 5; }
    else { start = sb + 192; len = 18; first = 8; }
  }
  static __device__ __forceinline__ bool line(const uint8_t* row, int, int c, int l, const uint8_t*& src) {
    const uint8_t* start;
    int len, first;
    region(row + 210 * (c >> 2), (c >> 1) & 1, l, start, len, first);
    const int off = static_cast<int>(reinterpret_cast<size_t>(start) & 15);
    src = start - off + 16 * (l - first);
    return 16 * (l - first) < off + len;
  }
  static __device__ __forceinline__ void dequant(const uint8_t* raw, size_t row_addr, int, int c, int h, uint32_t* v) {
    const int p = c & 3, H = p >> 1, e = p & 1, cg = 2 * e + h;
    const size_t sb = row_addr + 210 * static_cast<size_t>(c >> 2);
    const uint8_t* ql = raw + ((sb + 64 * H) & 15) + 32 * h;
    const uint8_t* qh = raw + 80 + ((sb + 128 + 32 * H) & 15);
    const uint8_t* tail = raw + 128 + ((sb + 192) & 15);  // scales[16], d
    const float d = lathe_gf16_half_at(tail + 16);
    const float s0 = d * static_cast<float>(static_cast<int8_t>(tail[4 * p + 2 * h]));
    const float s1 = d * static_cast<float>(static_cast<int8_t>(tail[4 * p + 2 * h + 1]));
    uint32_t lo[8], hi[8];
    lathe_gemm_words<8>(ql, lo);
    lathe_gemm_words<8>(qh, hi);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t u = ((lo[i] >> (4 * e)) & 0x0F0F0F0Fu) | (((hi[i] >> (2 * cg)) & 0x03030303u) << 4);
      const float s = i < 4 ? s0 : s1;
      v[2 * i] = lathe_gf16_pack(s * lathe_gf16_byte(u, 0, 32.0f), s * lathe_gf16_byte(u, 1, 32.0f));
      v[2 * i + 1] = lathe_gf16_pack(s * lathe_gf16_byte(u, 2, 32.0f), s * lathe_gf16_byte(u, 3, 32.0f));
    }
  }
};

// A region of a super-block staged as its 16-byte lines: `first` the first of its lines in the stage,
// the region `len` bytes from `start` (any even address); line l of the stage is the region's line
// l - first, read where it holds a byte of the region.
__device__ __forceinline__ bool lathe_gf16_region_line(const uint8_t* start, int len, int first, int l,
                                                      const uint8_t*& src) {
  const int off = static_cast<int>(reinterpret_cast<size_t>(start) & 15);
  src = start - off + 16 * (l - first);
  return 16 * (l - first) < off + len;
}

// q2_K: 84-byte super-blocks (scales: uint8[16], qs: uint8[64], d, dmin: f16) at even offsets. Chunk c
// is quarter p = 2H + e of super-block c / 4; half h of the chunk is group j = 2e + h of half H: value
// l (0..31) is bits 2j of qs[32H + l], sub-block 8H + 2j + l / 16 (low nibble of its scale byte the
// scale, high the min). Staged: lines 0-1 the scales, 2-4 qs[32H ..] (32 bytes), 5-6 d and dmin.
struct lathe_gf16_q2_k {
  static constexpr int lines = 7;
  static constexpr bool direct = false;
  static __device__ __forceinline__ bool line(const uint8_t* row, int, int c, int l, const uint8_t*& src) {
    const uint8_t* sb = row + 84 * (c >> 2);
    if (l < 2) return lathe_gf16_region_line(sb, 16, 0, l, src);
    if (l < 5) return lathe_gf16_region_line(sb + 16 + 32 * ((c >> 1) & 1), 32, 2, l, src);
    return lathe_gf16_region_line(sb + 80, 4, 5, l, src);
  }
  static __device__ __forceinline__ void dequant(const uint8_t* raw, size_t row_addr, int, int c, int h, uint32_t* v) {
    const int p = c & 3, H = p >> 1, j = 2 * (p & 1) + h;
    const size_t sb = row_addr + 84 * static_cast<size_t>(c >> 2);
    const uint8_t* scales = raw + (sb & 15);
    const uint8_t* qs = raw + 32 + ((sb + 16 + 32 * H) & 15);
    const uint8_t* dm = raw + 80 + ((sb + 80) & 15);
    const float d = lathe_gf16_half_at(dm), dmin = lathe_gf16_half_at(dm + 2);
    const int sc0 = scales[8 * H + 2 * j], sc1 = scales[8 * H + 2 * j + 1];
    const float ds0 = d * static_cast<float>(sc0 & 0xF), mn0 = -(dmin * static_cast<float>(sc0 >> 4));
    const float ds1 = d * static_cast<float>(sc1 & 0xF), mn1 = -(dmin * static_cast<float>(sc1 >> 4));
    uint32_t q[8];
    lathe_gemm_words<8>(qs, q);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t u = (q[i] >> (2 * j)) & 0x03030303u;
      const float ds = i < 4 ? ds0 : ds1, mn = i < 4 ? mn0 : mn1;
      v[2 * i] = lathe_gf16_pack(fmaf(ds, lathe_gf16_byte(u, 0, 0.0f), mn), fmaf(ds, lathe_gf16_byte(u, 1, 0.0f), mn));
      v[2 * i + 1] =
          lathe_gf16_pack(fmaf(ds, lathe_gf16_byte(u, 2, 0.0f), mn), fmaf(ds, lathe_gf16_byte(u, 3, 0.0f), mn));
    }
  }
};

// q3_K: 110-byte super-blocks (hmask: uint8[32], qs: uint8[64], scales: uint8[12], d: f16) at even
// offsets. Chunk and group as q2_K's: value l of group j of half H has its low 2 bits at bits 2j of
// qs[32H + l], bit 4H + j of hmask[l] (clear: 4 less), scale (6 bits, less 32) of sub-block
// 8H + 2j + l / 16. Staged: lines 0-2 hmask, 3-5 qs[32H ..], 6-7 the scales and d.
struct lathe_gf16_q3_k {
  static constexpr int lines = 8;
  static constexpr bool direct = false;
  static __device__ __forceinline__ bool line(const uint8_t* row, int, int c, int l, const uint8_t*& src) {
    const uint8_t* sb = row + 110 * (c >> 2);
    if (l < 3) return lathe_gf16_region_line(sb, 32, 0, l, src);
    if (l < 6) return lathe_gf16_region_line(sb + 32 + 32 * ((c >> 1) & 1), 32, 3, l, src);
    return lathe_gf16_region_line(sb + 96, 14, 6, l, src);
  }
  static __device__ __forceinline__ float scale(const uint8_t* scales, int s, float d) {
    const int low = s < 8 ? (scales[s] & 0xF) : (scales[s - 8] >> 4);
    const int high = (scales[8 + (s & 3)] >> (2 * (s >> 2))) & 3;
    return d * static_cast<float>((low | (high << 4)) - 32);
  }
  static __device__ __forceinline__ void dequant(const uint8_t* raw, size_t row_addr, int, int c, int h, uint32_t* v) {
    const int p = c & 3, H = p >> 1, j = 2 * (p & 1) + h;
    const size_t sb = row_addr + 110 * static_cast<size_t>(c >> 2);
    const uint8_t* hmask = raw + (sb & 15);
    const uint8_t* qs = raw + 48 + ((sb + 32 + 32 * H) & 15);
    const uint8_t* tail = raw + 96 + ((sb + 96) & 15);  // scales[12], d
    const float d = lathe_gf16_half_at(tail + 12);
    const float s0 = scale(tail, 8 * H + 2 * j, d), s1 = scale(tail, 8 * H + 2 * j + 1, d);
    uint32_t q[8], m[8];
    lathe_gemm_words<8>(qs, q);
    lathe_gemm_words<8>(hmask, m);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t u = ((q[i] >> (2 * j)) & 0x03030303u) | (((m[i] >> (4 * H + j)) & 0x01010101u) << 2);
      const float s = i < 4 ? s0 : s1;
      v[2 * i] = lathe_gf16_pack(s * lathe_gf16_byte(u, 0, 4.0f), s * lathe_gf16_byte(u, 1, 4.0f));
      v[2 * i + 1] = lathe_gf16_pack(s * lathe_gf16_byte(u, 2, 4.0f), s * lathe_gf16_byte(u, 3, 4.0f));
    }
  }
};

#ifndef LATHE_GF16_FORMATS_ONLY  // (tests/test_block_traits.cpp reads the formats on the host)
#define LATHE_GF16_KERNEL(FMT, BM, BN)                                                                   \
  extern "C" __global__ void __launch_bounds__(LATHE_GF16_THREADS, 1) lathe_gemm_f16_##FMT##_##BM##x##BN( \
      const uint8_t* w, long long row_bytes, const __half* x, float* y, int n_rows, int k, int n_out) {  \
    lathe_pdl_entry();                                                                                   \
    lathe_gf16_body<lathe_gf16_##FMT, BM, BN>(w, row_bytes, x, y, n_rows, k, n_out);                     \
  }

#define LATHE_GF16_FORMAT(FMT)    \
  LATHE_GF16_KERNEL(FMT, 128, 128) \
  LATHE_GF16_KERNEL(FMT, 64, 128)  \
  LATHE_GF16_KERNEL(FMT, 64, 64)

LATHE_GF16_FORMAT(f16)
LATHE_GF16_FORMAT(q8_0)
LATHE_GF16_FORMAT(q2_k)
LATHE_GF16_FORMAT(q3_k)
LATHE_GF16_FORMAT(q4_k)
LATHE_GF16_FORMAT(q5_k)
LATHE_GF16_FORMAT(q6_k)
#endif
