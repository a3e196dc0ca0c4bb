// The decode GEMV of Q2_K to Q6_K on tensor cores, 16 rows a tile: y[o] = W[o] . x for ONE row of x
// under the int8 contracts (C = 1 int8, C = 2 int8x2), the same products as gemv_decode.cuh's q4_K and
// q6_K (the same levels, scales and offsets, and a sub-block's f32 formula term for term), with a
// sub-block's integer sums made by mma.sync instead of __dp4a. Below for Q4_K; Q6_K's unit
// (lathe_gemv1t_q6_k_chunk) says how it differs.
//
// Why: the dp4a form multiplies one row a lane, so every 32 weights a lane reads (18 bytes of Q4_K)
// it also reads 80 bytes of x from shared memory, and a 32-value sub-block costs ~88 instructions
// (nvdisasm of lathe_gemv1_q4_k_int8x2, 2026-12-02: 16 IDP, 8 LDS, 16 for the nibbles, ~20 for the
// scales, the rest floats and addresses). Here a warp multiplies 16 rows by one unit of x (256
// values) at a time: the x fragments are read once for the 16 rows, and a sub-block's 16 x 2 integer
// sums are one mma (~210 instructions a 2,304-byte chunk against ~400; ~175 where the warp's part of
// x is formed once and the high nibbles need no masks, nvdisasm 2026-12-03).
//
// - Items are 16-row tiles (whole tiles: the launchers check), one block a tile at a time (tiles
//   b, b + gridDim.x, ..., or a block's own 32-row blocks in halves), a tile's units 16 at a time
//   (unit 16 j + w for warp w; a row's units a multiple of 16).
// - Each warp streams its own units through its own ring of LATHE_GEMV1T_Q4K_STAGES slots: a slot is one
//   unit of the tile's 16 rows (16 x 144 bytes), ONE TMA box of the matrix's 2D tensor map (box 144
//   bytes x 16 rows, rows row_bytes apart in global memory, 144 apart in the slot), completing on the
//   slot's barrier, and refilled by the warp once its lanes are done with it. So the warps stay
//   independent between tiles' ends, and a chunk is one request. (16 bulk copies of 144 bytes a chunk
//   streamed at ~43% of the read rate on 12288 x 4096, one copy of 2,304 bytes at ~65%, and a block's
//   ring of whole rows' 2,304-byte segments in 16 copies made every warp wait for the slowest: docs/
//   perf.md, 2026-12-02.) The boxes' rows are 144 apart in the slot, so the lanes' 8-byte reads of
//   a row pair meet 2-way bank conflicts (a TMA box has no padding); measured as they are.
// - mma.m16n8k32, A the u8 levels (16 rows x the 32 values of a sub-block), B the s8 x. B's eight
//   columns carry four sub-blocks' x at once: q1 of sub-block j in column 2 (j % 4), q2 in
//   2 (j % 4) + 1, zeros elsewhere. The four mma of sub-blocks 0-3 then leave sub-block t's (q1, q2)
//   sums of rows g and g + 8 in lane (g, t)'s accumulators (ca), and 4-7's in a second set (cb), so
//   every lane forms the f32 terms of two rows and two sub-blocks and none idles.
// - The 32 values of a sub-block are permuted alike in A and B: lane t's bytes 8t .. 8t + 7 are the
//   mma's k = 4t .. 4t + 3 and 16 + 4t .. 16 + 4t + 3, so a lane reads a row's 8 level bytes in one
//   8-byte load. An odd sub-block's levels are the high nibbles, taken in place: the raw bytes'
//   sums less the low nibbles' (lathe_gemv1t_pair_b), 16 times the levels', exactly (|sum| <=
//   32 * 240 * 128 < 2^23), undone by a shift.
// - A sub-block's term, t = ds.x * s1 (+ ds.y * s2) times d * sc, plus -dmin * m * ds.z, is
//   lathe_gemv1_piece_x's f32 arithmetic in its order, so each term is that kernel's bits; the terms
//   are added in another order (a lane's two rows over its units, then the four lanes of a row, then
//   the warps in order): deterministic, within a few ulps of the row's sum of magnitudes of it.
// Launch (gemv_launch.cpp's decode_tiles_group and its callers): grid (<= SM count), 512 threads, the
// format's dynamic shared memory (decode_tile_shared_bytes: the rings, then x as lathe_gemv1_stage_x
// lays it out; Q4_K's is the decode kernel's), and the matrices' tensor maps (decode_tile_map: box 144
// (Q4_K) or 240 (Q6_K) bytes x 16 rows, L2 promotion 128 bytes).

#define LATHE_GEMV1T_ROWS 16
#define LATHE_GEMV1T_SPAN 16  // a tile's units a round: one for each warp of the block
// Each format's unit bytes, box width (bytes of a box's row) and ring slots a warp (lathe_gemv1t_fmt_*
// below; decode_stream.h mirrors them).
#define LATHE_GEMV1T_Q4K_UNIT 144
#define LATHE_GEMV1T_Q4K_BOX 144
#define LATHE_GEMV1T_Q4K_STAGES 4  // 16 warps x 4 x 2,304 + 128 of alignment: within the decode rings (16 x 4 x 2,560)
#define LATHE_GEMV1T_Q5K_UNIT 176
#define LATHE_GEMV1T_Q5K_BOX 176
#define LATHE_GEMV1T_Q5K_STAGES 3  // 16 warps x 3 x 2,816 + 128 of alignment: within the decode rings (16 x 4 x 2,560)
#define LATHE_GEMV1T_Q2K_UNIT 84
#define LATHE_GEMV1T_Q2K_BOX 112  // the unit 0-12 bytes in (16-byte starts); rows 28 words apart: no bank conflicts
#define LATHE_GEMV1T_Q2K_STAGES 5  // 16 warps x 5 x 1,792 + 128 of alignment: within the decode rings (16 x 4 x 2,560)
#define LATHE_GEMV1T_Q3K_UNIT 110
#define LATHE_GEMV1T_Q3K_BOX 144  // the unit 0-14 bytes in (16-byte starts); rows 36 words apart: no bank conflicts
#define LATHE_GEMV1T_Q3K_STAGES 4  // 16 warps x 4 x 2,304 + 128 of alignment: within the decode rings (16 x 4 x 2,560)
#define LATHE_GEMV1T_Q6K_UNIT 210
#define LATHE_GEMV1T_Q6K_BOX 240  // the unit 0-14 bytes in (16-byte starts); rows 60 words apart: no bank conflicts
#define LATHE_GEMV1T_Q6K_STAGES 3  // 16 warps x 3 x 3,840 + 128: past the decode rings, so x moves after them
// Measuring knobs (wrong sums), to ask whether the units' shared-memory reads bound the walk:
// LATHE_GEMV1T_Q4K_FREE_READS=1 reads Q4_K's levels from addresses without bank conflicts (rows 32
// bytes apart, the pairs 8) instead of the box's rows; LATHE_GEMV1T_Q6K_EVEN_READS=1 reads
// every Q6_K unit as word-aligned (one load a word, no funnel shift) from the word below it.
#ifndef LATHE_GEMV1T_Q4K_FREE_READS
#define LATHE_GEMV1T_Q4K_FREE_READS 0
#endif
#ifndef LATHE_GEMV1T_Q6K_EVEN_READS
#define LATHE_GEMV1T_Q6K_EVEN_READS 0
#endif
// A warp's boxes asked for before the programmatic-launch wait (weights are constants): the row
// walk's count unless a measuring build says otherwise.
#ifndef LATHE_GEMV1T_BEFORE_WAIT
#define LATHE_GEMV1T_BEFORE_WAIT LATHE_GEMV1_BEFORE_WAIT
#endif
// A warp's part of x formed once where its units all read one unit of x (lathe_gemv1t_run); 0 (a
// measuring knob) forms it every unit.
#ifndef LATHE_GEMV1T_X_ONCE
#define LATHE_GEMV1T_X_ONCE 1
#endif
// Measuring knobs only (wrong sums): the walk without the units' arithmetic (SKIP_MATH), and without
// the tiles' ends either (SKIP_END: no barrier, nothing written), to time the ring's stream by itself.
#ifndef LATHE_GEMV1T_SKIP_MATH
#define LATHE_GEMV1T_SKIP_MATH 0
#endif
#ifndef LATHE_GEMV1T_SKIP_END
#define LATHE_GEMV1T_SKIP_END 0
#endif

// A CUtensorMap as the kernel receives it (__grid_constant__: TMA reads it from parameter space);
// the launchers' decode_tile_map encodes it: the matrix as 2D bytes [n_out][row_bytes], box 144 x 16.
struct __align__(64) LatheTileMap {
  unsigned long long v[16];
};

#ifndef LATHE_HOST_TILE_UNITS  // (tests/test_block_traits.cpp gives these in host form)
__device__ __forceinline__ uint2 lathe_lds64u(unsigned a) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(a));
  return v;
}

// c += A B: A 16 x 32 u8 (a0: row g, k 4t..; a1: row g + 8; a2, a3: k 16 + 4t..), B 32 x 8 s8 (b0:
// k 4t.., column g; b1: k 16 + 4t..).
__device__ __forceinline__ void lathe_mma_u8s8(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                               uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// The same with A s8 (Q6_K's levels less 32).
__device__ __forceinline__ void lathe_mma_s8s8(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                               uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

#endif  // LATHE_HOST_TILE_UNITS

// A sub-block's f32 term from its integer sums (lathe_gemv1_piece_x's order: one-scale, offset form).
template <int C>
__device__ __forceinline__ float lathe_gemv1t_term(int s1, int s2, float4 ds, float sa, float offset) {
  float t = ds.x * lathe_gemv_i2f(s1);
  if constexpr (C == 2) t = fmaf(ds.y, lathe_gemv_i2f(s2), t);
  t *= sa;
  return fmaf(offset, ds.z, t);
}

// Q4_K's and Q5_K's terms of a unit at shared address s (rows BOX apart, each led by d, dmin and the
// scales): lane (g, t) holds sub-blocks t (ca) and t + 4 (cb) of rows g (c[0], c[1]) and g + 8 (c[2],
// c[3]), the sums shifted right by sh; x's (d1, d2, sum) of sub-blocks t and t + 4 in dsa, dsb.
template <int C, int BOX>
__device__ __forceinline__ void lathe_gemv1t_k_terms(unsigned s, const int (&ca)[4], const int (&cb)[4], int sh,
                                                     float4 dsa, float4 dsb, float& acc0, float& acc1) {
  const int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
  const uint4 h0 = lathe_lds128u(s + BOX * g), h1 = lathe_lds128u(s + BOX * (g + 8));
  float sa, off;
  lathe_gemv1_q4_k_scale(h0, t, true, sa, off);
  acc0 += lathe_gemv1t_term<C>(ca[0] >> sh, ca[1] >> sh, dsa, sa, off);
  lathe_gemv1_q4_k_scale(h0, t, false, sa, off);
  acc0 += lathe_gemv1t_term<C>(cb[0] >> sh, cb[1] >> sh, dsb, sa, off);
  lathe_gemv1_q4_k_scale(h1, t, true, sa, off);
  acc1 += lathe_gemv1t_term<C>(ca[2] >> sh, ca[3] >> sh, dsa, sa, off);
  lathe_gemv1_q4_k_scale(h1, t, false, sa, off);
  acc1 += lathe_gemv1t_term<C>(cb[2] >> sh, cb[3] >> sh, dsb, sa, off);
}

// A lane's part of x's unit for Q4_K and Q5_K (lathe_gemv1t_pair_b forms it, their chunks read it): the
// B words of the unit's four mma pairs and x's (d1, d2, sum) of sub-blocks t and t + 4.
struct lathe_gemv1t_pair_x {
  uint32_t lo[4][2], hi[4][2];  // pair p: B of its first mma and of its second
  float4 dsa, dsb;
};

// xa, xb: the lane's x words (sub-blocks j = g / 2 and j + 4, 8 bytes at 8t; zero where the lane's
// column carries nothing). Pair p (qs bytes 32 p ..: sub-block e = 2 p in the low nibbles, e + 1 in
// the high) is two mma into the same sums, its sub-blocks' x in disjoint columns (2 e % 8, + 1 and
// 2 (e + 1) % 8, + 1). Q5_K (NegOdd false): the even sub-block's levels times x_e, then the odd one's
// times x_(e + 1). Q4_K (NegOdd true): the low nibbles times x_e and times -x_(e + 1), then the raw
// bytes (lo + 16 hi) times x_(e + 1). So e's columns hold lo . x_e and e + 1's 16 hi . x_(e + 1), the
// integers the nibbles masked apart would give (so the same sums, to the bit), without the high
// nibbles' masks (x's levels are within +-127, so -x is an s8).
template <bool NegOdd>
__device__ __forceinline__ lathe_gemv1t_pair_x lathe_gemv1t_pair_b(uint2 xa, uint2 xb, float4 dsa, float4 dsb) {
  const int j = (threadIdx.x & 31) >> 3;  // g / 2
  lathe_gemv1t_pair_x r;
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const uint2 x = p < 2 ? xa : xb;
    const int e = 2 * (p & 1);
    const bool even = j == e, odd = j == e + 1;
    if constexpr (NegOdd) {
      r.lo[p][0] = even ? x.x : odd ? __vneg4(x.x) : 0u;
      r.lo[p][1] = even ? x.y : odd ? __vneg4(x.y) : 0u;
    } else {
      r.lo[p][0] = even ? x.x : 0u;
      r.lo[p][1] = even ? x.y : 0u;
    }
    r.hi[p][0] = odd ? x.x : 0u;
    r.hi[p][1] = odd ? x.y : 0u;
  }
  r.dsa = dsa;
  r.dsb = dsb;
  return r;
}

// The unit at shared address s (a tile's unit u, rows LATHE_GEMV1T_Q4K_BOX apart) times x's unit u
// (x, the lane's part of it): adds the lane's terms to acc0 (row g) and acc1 (row g + 8).
template <int C>
__device__ __forceinline__ void lathe_gemv1t_q4_k_chunk(unsigned s, const lathe_gemv1t_pair_x& x, float& acc0,
                                                        float& acc1) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  int ca[4] = {0, 0, 0, 0}, cb[4] = {0, 0, 0, 0};
  // row g's qs, bytes 8t.. of pair 0 (LATHE_GEMV1T_Q4K_FREE_READS: rows read 32 bytes apart, wrong)
  constexpr int rs = LATHE_GEMV1T_Q4K_FREE_READS ? 32 : LATHE_GEMV1T_Q4K_BOX;
  const unsigned ra = s + rs * g + 16 + 8 * t;
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const uint2 r0 = lathe_lds64u(ra + (LATHE_GEMV1T_Q4K_FREE_READS ? 8 : 32) * p),
                r1 = lathe_lds64u(ra + (LATHE_GEMV1T_Q4K_FREE_READS ? 8 : 32) * p + 8 * LATHE_GEMV1T_Q4K_BOX);
    int(&c)[4] = p < 2 ? ca : cb;
    lathe_mma_u8s8(c, r0.x & 0x0F0F0F0Fu, r1.x & 0x0F0F0F0Fu, r0.y & 0x0F0F0F0Fu, r1.y & 0x0F0F0F0Fu, x.lo[p][0],
                   x.lo[p][1]);
    lathe_mma_u8s8(c, r0.x, r1.x, r0.y, r1.y, x.hi[p][0], x.hi[p][1]);
  }
  // An odd sub-block's sums are 16 times its levels' (exactly: |sum| <= 32 * 240 * 128 < 2^23).
  lathe_gemv1t_k_terms<C, LATHE_GEMV1T_Q4K_BOX>(s, ca, cb, 4 * (t & 1), x.dsa, x.dsb, acc0, acc1);
}

// Q5_K (Q4_K's head, qh[32] at 16, qs[128] at 48): a sub-block's levels are Q4_K's nibbles with a fifth
// bit from qh, so the raw bytes do not serve the odd sub-block (Q4_K's trick): pair p is two mma into
// the same sums, the even sub-block's 5-bit levels times x_e in e's columns, the odd one's times
// x_(e + 1) in its own (lathe_gemv1t_pair_b<false>). The lane's 8 qh bytes (values 8t.. of every
// sub-block) are read once a unit; sums are the levels' (no shift).
template <int C>
__device__ __forceinline__ void lathe_gemv1t_q5_k_chunk(unsigned s, const lathe_gemv1t_pair_x& x, float& acc0,
                                                        float& acc1) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  int ca[4] = {0, 0, 0, 0}, cb[4] = {0, 0, 0, 0};
  constexpr int B = LATHE_GEMV1T_Q5K_BOX;
  const unsigned rg = s + B * g + 8 * t;  // row g's bytes 8t.. of a 32-byte region
  const uint2 h0 = lathe_lds64u(rg + 16), h1 = lathe_lds64u(rg + 16 + 8 * B);  // qh, rows g and g + 8
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const uint2 r0 = lathe_lds64u(rg + 48 + 32 * p), r1 = lathe_lds64u(rg + 48 + 32 * p + 8 * B);
    int(&c)[4] = p < 2 ? ca : cb;
    const int be = 2 * p, bo = 2 * p + 1;  // the qh bits of the pair's sub-blocks
    lathe_mma_u8s8(c, (r0.x & 0x0F0F0F0Fu) | (((h0.x >> be) & 0x01010101u) << 4),
                   (r1.x & 0x0F0F0F0Fu) | (((h1.x >> be) & 0x01010101u) << 4),
                   (r0.y & 0x0F0F0F0Fu) | (((h0.y >> be) & 0x01010101u) << 4),
                   (r1.y & 0x0F0F0F0Fu) | (((h1.y >> be) & 0x01010101u) << 4), x.lo[p][0], x.lo[p][1]);
    lathe_mma_u8s8(c, ((r0.x >> 4) & 0x0F0F0F0Fu) | (((h0.x >> bo) & 0x01010101u) << 4),
                   ((r1.x >> 4) & 0x0F0F0F0Fu) | (((h1.x >> bo) & 0x01010101u) << 4),
                   ((r0.y >> 4) & 0x0F0F0F0Fu) | (((h0.y >> bo) & 0x01010101u) << 4),
                   ((r1.y >> 4) & 0x0F0F0F0Fu) | (((h1.y >> bo) & 0x01010101u) << 4), x.hi[p][0], x.hi[p][1]);
  }
  lathe_gemv1t_k_terms<C, B>(s, ca, cb, 0, x.dsa, x.dsb, acc0, acc1);
}

// Q6_K's unit at shared address s (rows LATHE_GEMV1T_Q6K_BOX apart: ql[128] at 0, qh[64] at 128,
// scales[16] at 192, d at 208; s 2 bytes past a word where Odd: a box starts on 16 bytes, unit c
// 2 c % 16 bytes into it) times x's unit: adds the lane's terms to acc0 (row g) and acc1 (row
// g + 8). Piece j = 4 h + kk is values 32 j .. 32 j + 31 (gemv_decode.cuh's lathe_gemv1_q6_k), its
// levels less 32 s8 (the row walk's words), k in value order: a 16-value half of a piece has a scale
// of its own, and the mma's k < 16 and k >= 16 are the halves. B's eight columns carry two pieces'
// x, each as q1 half 0, q1 half 1, q2 half 0, q2 half 1 (zero outside the half): column 4 p + 2 q +
// half for piece kk + 4 p of set kk (the mma of pieces kk and kk + 4 add into c[kk]). xw[kk]: the
// lane's B word (x of piece kk + 4 (g / 4), word q = (g / 2) % 2 of half g % 2, bytes 4t..), zero
// where the lane's column carries nothing; dsv[kk]: x's d1 (t even) or d2 (t odd) of piece kk + 4 (t / 2).
// Lane (g, t) then holds both halves' sums of piece kk + 4 (t / 2), x word t % 2, rows g and g + 8:
// its term is lathe_gemv1_piece_x's half-sum formula for that word (the two words' terms are added
// in the lanes' order, not fused as there: within an ulp of a term).
template <bool Odd>
__device__ __forceinline__ uint32_t lathe_gemv1t_word(unsigned a) {
  if constexpr (!Odd) return lathe_lds32(a);
  return __funnelshift_r(lathe_lds32(a - 2), lathe_lds32(a + 2), 16);
}

// The s8 units' common steps (Q6_K's and Q3_K's: a piece's two 16-value halves each with its own
// scale). lathe_gemv1t_s8_mma: the four mma of the unit's half h (pieces 4 h + kk into c[kk]), A the
// levels level(r, half, kk) gives (row g, g + 8; values 16 half + 4t ..; s8 words), B the lane's x word
// where its column carries piece kk + 4 (g / 4) of this half (b1 for half-1 columns, odd g).
template <class Level>
__device__ __forceinline__ void lathe_gemv1t_s8_mma(int (&c)[4][4], int h, const uint32_t (&xw)[4], Level&& level) {
  const int g = (threadIdx.x & 31) >> 2;
  const bool b_high = g & 1;     // the lane's column is a half 1 column: its word is b1
  const int b_piece = g >> 2;    // ... of piece kk + 4 b_piece
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    uint32_t a[2][2];  // [row][half]
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int half = 0; half < 2; ++half) a[r][half] = level(r, half, kk);
    const uint32_t b = b_piece == h ? xw[kk] : 0u;
    lathe_mma_s8s8(c[kk], a[0][0], a[1][0], a[0][1], a[1][1], b_high ? 0u : b, b_high ? b : 0u);
  }
}

// lathe_gemv1t_s8_terms: the lane's terms from those sums, scales(kk, sa0, sb0, sa1, sb1) giving the
// halves' scales of its piece kk + 4 (t / 2) in rows g and g + 8.
template <class Scales>
__device__ __forceinline__ void lathe_gemv1t_s8_terms(const int (&c)[4][4], const float (&dsv)[4], Scales&& scales,
                                                      float& acc0, float& acc1) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    float sa0, sb0, sa1, sb1;
    scales(kk, sa0, sb0, sa1, sb1);
    acc0 += dsv[kk] * fmaf(sa0, lathe_gemv_i2f(c[kk][0]), sb0 * lathe_gemv_i2f(c[kk][1]));
    acc1 += dsv[kk] * fmaf(sa1, lathe_gemv_i2f(c[kk][2]), sb1 * lathe_gemv_i2f(c[kk][3]));
  }
}

template <int C, bool Odd>
__device__ __forceinline__ void lathe_gemv1t_q6_k_chunk(unsigned s, const uint32_t (&xw)[4], const float (&dsv)[4],
                                                        float& acc0, float& acc1) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  int c[4][4];
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) c[kk][0] = c[kk][1] = c[kk][2] = c[kk][3] = 0;
  const unsigned r0 = s + LATHE_GEMV1T_Q6K_BOX * g + 4 * t, r1 = r0 + 8 * LATHE_GEMV1T_Q6K_BOX;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    uint32_t ql[2][2][2], qh[2][2];  // [row g, g + 8][ql block m][half], [row][half]
#pragma unroll
    for (int half = 0; half < 2; ++half) {
#pragma unroll
      for (int m = 0; m < 2; ++m) {
        ql[0][m][half] = lathe_gemv1t_word<Odd>(r0 + 64 * h + 32 * m + 16 * half);
        ql[1][m][half] = lathe_gemv1t_word<Odd>(r1 + 64 * h + 32 * m + 16 * half);
      }
      qh[0][half] = lathe_gemv1t_word<Odd>(r0 + 128 + 32 * h + 16 * half);
      qh[1][half] = lathe_gemv1t_word<Odd>(r1 + 128 + 32 * h + 16 * half);
    }
    lathe_gemv1t_s8_mma(c, h, xw, [&](int r, int half, int kk) {
      return static_cast<uint32_t>(lathe_gemv_bias(
          ((ql[r][kk & 1][half] >> (4 * (kk >> 1))) & 0x0F0F0F0Fu) | (((qh[r][half] >> (2 * kk)) & 0x03030303u) << 4),
          32));
    });
  }
  if (C == 1 && (t & 1)) return;  // int8: no q2 words
  // Row r's scales of the lane's pieces (h = t / 2: bytes 8 h .. 8 h + 7, piece kk's at 2 kk, 2 kk + 1) and d.
  const unsigned sr0 = s + LATHE_GEMV1T_Q6K_BOX * g + 192 + 8 * (t >> 1), sr1 = sr0 + 8 * LATHE_GEMV1T_Q6K_BOX;
  const uint2 sc0 = make_uint2(lathe_gemv1t_word<Odd>(sr0), lathe_gemv1t_word<Odd>(sr0 + 4));
  const uint2 sc1 = make_uint2(lathe_gemv1t_word<Odd>(sr1), lathe_gemv1t_word<Odd>(sr1 + 4));
  const float d0 = __half2float(__ushort_as_half(lathe_lds16(s + LATHE_GEMV1T_Q6K_BOX * g + 208)));
  const float d1 = __half2float(__ushort_as_half(lathe_lds16(s + LATHE_GEMV1T_Q6K_BOX * (g + 8) + 208)));
  lathe_gemv1t_s8_terms(c, dsv, [&](int kk, float& sa0, float& sb0, float& sa1, float& sb1) {
    const uint32_t w0 = kk < 2 ? sc0.x : sc0.y, w1 = kk < 2 ? sc1.x : sc1.y;
    const int sh = 16 * (kk & 1);
    sa0 = __fmul_rn(d0, static_cast<float>(static_cast<int8_t>((w0 >> sh) & 0xFFu)));
    sb0 = __fmul_rn(d0, static_cast<float>(static_cast<int8_t>((w0 >> (sh + 8)) & 0xFFu)));
    sa1 = __fmul_rn(d1, static_cast<float>(static_cast<int8_t>((w1 >> sh) & 0xFFu)));
    sb1 = __fmul_rn(d1, static_cast<float>(static_cast<int8_t>((w1 >> (sh + 8)) & 0xFFu)));
  }, acc0, acc1);
}

// The tile walk's formats: a unit's bytes, a box's width (a slot is 16 rows of it), the ring's slots a
// warp, where x starts in the dynamic shared memory (after the rings), and the lane's x reads:
//   lane_x x_lane<C>(sx_a, sds_a, k)   the lane-fixed addresses (x's levels, x's ds)
//   xfrag x_of<C>(lx, u)               the lane's part of x's unit u (its B words and scales)
//   chunk<C>(s, o, x, acc0, acc1)      the unit o bytes into slot s times that part (rows g, g + 8)
// A box starts on a 16-byte column of the matrix (TMA's rule for the innermost coordinate): unit c's
// box begins at byte (unit c) rounded down to 16, the unit o = (unit c) % 16 bytes into each row.
struct lathe_gemv1t_fmt_q4_k {
  static constexpr int unit = LATHE_GEMV1T_Q4K_UNIT, box = LATHE_GEMV1T_Q4K_BOX, stages = LATHE_GEMV1T_Q4K_STAGES;
  static constexpr int slot = LATHE_GEMV1T_ROWS * box;  // 2,304: one box, 128-byte aligned
  static constexpr int x_offset = LATHE_GEMV1_WARPS * LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT;  // the row walk's
  struct lane_x {
    unsigned xb, ds;
    bool on;
  };
  // The lane's B words: x of sub-block g / 2 (q1 for even g, q2 for odd; none for odd g under int8)
  // at bytes 8t.., and its (d1, d2, sum) of sub-blocks t and t + 4, unit 0 (a unit is 256 values on).
  template <int C>
  static __device__ __forceinline__ lane_x x_lane(unsigned sx_a, unsigned sds_a, int k) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    return {sx_a + ((g & 1) ? k : 0) + 32 * (g >> 1) + 8 * t, sds_a + 16 * t, C == 2 || (g & 1) == 0};
  }
  using xfrag = lathe_gemv1t_pair_x;
  // The lane's part of x's unit u, NegOdd as lathe_gemv1t_pair_b's (Q4_K's and Q5_K's x_of).
  template <bool NegOdd>
  static __device__ __forceinline__ xfrag pair_x_of(const lane_x& lx, unsigned u) {
    uint2 xa = make_uint2(0u, 0u), xb = make_uint2(0u, 0u);
    if (lx.on) {
      xa = lathe_lds64u(lx.xb + 256 * u);
      xb = lathe_lds64u(lx.xb + 256 * u + 128);
    }
    return lathe_gemv1t_pair_b<NegOdd>(xa, xb, lathe_lds128f(lx.ds + 128 * u), lathe_lds128f(lx.ds + 128 * u + 64));
  }
  template <int C>
  static __device__ __forceinline__ xfrag x_of(const lane_x& lx, unsigned u) {
    return pair_x_of<true>(lx, u);
  }
  template <int C>
  static __device__ __forceinline__ void chunk(unsigned s, unsigned, const xfrag& x, float& acc0, float& acc1) {
    lathe_gemv1t_q4_k_chunk<C>(s, x, acc0, acc1);
  }
};

// Q5_K: Q4_K's x and lanes (its rings within the row walk's, so x stays where the row walk stages it).
struct lathe_gemv1t_fmt_q5_k {
  static constexpr int unit = LATHE_GEMV1T_Q5K_UNIT, box = LATHE_GEMV1T_Q5K_BOX, stages = LATHE_GEMV1T_Q5K_STAGES;
  static constexpr int slot = LATHE_GEMV1T_ROWS * box;  // 2,816: one box, 128-byte aligned
  static constexpr int x_offset = LATHE_GEMV1_WARPS * LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT;  // the row walk's
  using lane_x = lathe_gemv1t_fmt_q4_k::lane_x;
  template <int C>
  static __device__ __forceinline__ lane_x x_lane(unsigned sx_a, unsigned sds_a, int k) {
    return lathe_gemv1t_fmt_q4_k::x_lane<C>(sx_a, sds_a, k);
  }
  using xfrag = lathe_gemv1t_pair_x;
  template <int C>
  static __device__ __forceinline__ xfrag x_of(const lane_x& lx, unsigned u) {
    return lathe_gemv1t_fmt_q4_k::pair_x_of<false>(lx, u);
  }
  template <int C>
  static __device__ __forceinline__ void chunk(unsigned s, unsigned, const xfrag& x, float& acc0, float& acc1) {
    lathe_gemv1t_q5_k_chunk<C>(s, x, acc0, acc1);
  }
};

struct lathe_gemv1t_fmt_q6_k {
  static constexpr int unit = LATHE_GEMV1T_Q6K_UNIT, box = LATHE_GEMV1T_Q6K_BOX, stages = LATHE_GEMV1T_Q6K_STAGES;
  static constexpr int slot = LATHE_GEMV1T_ROWS * box;  // 3,840: one box, 128-byte aligned
  static constexpr int x_offset = 128 + LATHE_GEMV1_WARPS * stages * slot;  // 184,448
  struct lane_x {
    unsigned xw, ds;
    bool on;
  };
  // B: x word (g / 2) % 2 of piece 4 (g / 4) (+ kk), half g % 2, bytes 4t..; ds: d1 or d2 (t % 2) of
  // piece 4 (t / 2) (+ kk).
  template <int C>
  static __device__ __forceinline__ lane_x x_lane(unsigned sx_a, unsigned sds_a, int k) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int q = (g >> 1) & 1;
    return {sx_a + (q ? k : 0) + 128 * (g >> 2) + 16 * (g & 1) + 4 * t, sds_a + 64 * (t >> 1) + 4 * (t & 1),
            C == 2 || q == 0};
  }
  struct xfrag {
    uint32_t xw[4];
    float dsv[4];
  };
  template <int C>
  static __device__ __forceinline__ xfrag x_of(const lane_x& lx, unsigned u) {
    xfrag x;
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      x.xw[kk] = lx.on ? lathe_lds32(lx.xw + 256 * u + 32 * kk) : 0u;
      x.dsv[kk] = __uint_as_float(lathe_lds32(lx.ds + 128 * u + 16 * kk));
    }
    return x;
  }
  template <int C>
  static __device__ __forceinline__ void chunk(unsigned s, unsigned o, const xfrag& x, float& acc0, float& acc1) {
    if ((o & 2u) && !LATHE_GEMV1T_Q6K_EVEN_READS)  // the warp's units are all 2 bytes past a word (unit 16 j + w: o = 2 w % 16)
      lathe_gemv1t_q6_k_chunk<C, true>(s + o, x.xw, x.dsv, acc0, acc1);
    else
      lathe_gemv1t_q6_k_chunk<C, false>(s + (LATHE_GEMV1T_Q6K_EVEN_READS ? o & ~3u : o), x.xw, x.dsv, acc0, acc1);
  }
};

// Q3_K's unit at shared address s (rows LATHE_GEMV1T_Q3K_BOX apart: hmask[32] at 0, qs[64] at 32,
// scales[12] at 96, d at 108; s 2 bytes past a word where Odd: unit c lies 110 c % 16 bytes into its
// box) times x's unit, as Q6_K's (above): piece j = 4 h + kk is values 32 j .. 32 j + 31, value l of
// it the low 2 bits at bits 2 kk of qs[32 h + l] and the bit 4 h + kk of hmask[l] (gemv_decode.cuh's
// lathe_gemv1_q3_k), its levels less 4 s8 in value order, so the mma's halves are the piece's two
// 16-value sub-blocks, each with its 6-bit scale less 32 (scales 8 h + 2 kk and + 1: their low
// nibbles from byte 2 kk's and 2 kk + 1's nibble h, their high bits from bytes 8 + 2 (kk % 2) and + 1,
// bits 2 (2 h + kk / 2)). x's words and scales are Q6_K's (the same pieces); the terms its formula.
template <int C, bool Odd>
__device__ __forceinline__ void lathe_gemv1t_q3_k_chunk(unsigned s, const uint32_t (&xw)[4], const float (&dsv)[4],
                                                        float& acc0, float& acc1) {
  constexpr int B = LATHE_GEMV1T_Q3K_BOX;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  int c[4][4];
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) c[kk][0] = c[kk][1] = c[kk][2] = c[kk][3] = 0;
  const unsigned r0 = s + B * g + 4 * t, r1 = r0 + 8 * B;
  uint32_t hm_clear[2][2];  // [row g, g + 8][half]: hmask bytes 16 half + 4t .., inverted
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    hm_clear[0][half] = ~lathe_gemv1t_word<Odd>(r0 + 16 * half);
    hm_clear[1][half] = ~lathe_gemv1t_word<Odd>(r1 + 16 * half);
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    uint32_t qs[2][2];  // [row][half]: qs bytes 32 h + 16 half + 4t ..
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      qs[0][half] = lathe_gemv1t_word<Odd>(r0 + 32 + 32 * h + 16 * half);
      qs[1][half] = lathe_gemv1t_word<Odd>(r1 + 32 + 32 * h + 16 * half);
    }
    // The level less 4 as s8 with no bias add: where hmask's bit is set it is q (0..3), where clear q - 4,
    // which is q | 0xFC in two's complement; so each byte is q | 0xFC times its bit of ~hmask: the same
    // bytes as the bias add, one instruction a word fewer (the int8x2 loop 1,952 -> 1,840, nvdisasm).
    lathe_gemv1t_s8_mma(c, h, xw, [&](int r, int half, int kk) {
      const uint32_t q = (qs[r][half] >> (2 * kk)) & 0x03030303u;
      const uint32_t clear = (hm_clear[r][half] >> (4 * h + kk)) & 0x01010101u;
      return q | (clear * 0xFCu);
    });
  }
  if (C == 1 && (t & 1)) return;  // int8: no q2 words
  // Row r's scale bytes (low nibbles 96 .. 103, high bits 104 .. 107) and d, for the lane's pieces
  // (h = t / 2).
  const int h = t >> 1;
  const unsigned sr0 = s + B * g + 96, sr1 = sr0 + 8 * B;
  const uint32_t lo0[2] = {lathe_gemv1t_word<Odd>(sr0), lathe_gemv1t_word<Odd>(sr0 + 4)};
  const uint32_t lo1[2] = {lathe_gemv1t_word<Odd>(sr1), lathe_gemv1t_word<Odd>(sr1 + 4)};
  const uint32_t hi0 = lathe_gemv1t_word<Odd>(sr0 + 8), hi1 = lathe_gemv1t_word<Odd>(sr1 + 8);
  const float d0 = __half2float(__ushort_as_half(lathe_lds16(sr0 + 12)));
  const float d1 = __half2float(__ushort_as_half(lathe_lds16(sr1 + 12)));
  // Sub-block 8 h + 2 kk (+ 1)'s 6 bits: the low nibble h of byte 2 kk (+ 1), the high bits 2 (2 h + kk / 2)
  // of byte 8 + 2 (kk % 2) (+ 1).
  auto scale = [&](uint32_t lo, uint32_t hi, int kk, int second, float d) {
    const int sh = 16 * (kk & 1) + 8 * second;
    const int q = static_cast<int>(((lo >> (sh + 4 * h)) & 15u) | (((hi >> (sh + 2 * (2 * h + (kk >> 1)))) & 3u) << 4));
    return __fmul_rn(d, static_cast<float>(q - 32));
  };
  if constexpr (C == 1) {
    lathe_gemv1t_s8_terms(c, dsv, [&](int kk, float& sa0, float& sb0, float& sa1, float& sb1) {
      sa0 = scale(lo0[kk >> 1], hi0, kk, 0, d0);
      sb0 = scale(lo0[kk >> 1], hi0, kk, 1, d0);
      sa1 = scale(lo1[kk >> 1], hi1, kk, 0, d1);
      sb1 = scale(lo1[kk >> 1], hi1, kk, 1, d1);
    }, acc0, acc1);
  } else {
    // Lanes t and t ^ 1 (x's q1 and q2 words) need the same 16 scales: each decodes one sub-block of
    // every piece (its own: the second where t is odd) and takes the other's from its neighbour, the
    // same values (8 decodes and 8 shuffles a lane where 16 decodes were).
    const int own_second = t & 1;
    float own[4][2], other[4][2];  // [kk][row g, g + 8]
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      own[kk][0] = scale(lo0[kk >> 1], hi0, kk, own_second, d0);
      own[kk][1] = scale(lo1[kk >> 1], hi1, kk, own_second, d1);
    }
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
#pragma unroll
      for (int r = 0; r < 2; ++r) other[kk][r] = __shfl_xor_sync(0xFFFFFFFFu, own[kk][r], 1);
    lathe_gemv1t_s8_terms(c, dsv, [&](int kk, float& sa0, float& sb0, float& sa1, float& sb1) {
      sa0 = own_second ? other[kk][0] : own[kk][0];
      sb0 = own_second ? own[kk][0] : other[kk][0];
      sa1 = own_second ? other[kk][1] : own[kk][1];
      sb1 = own_second ? own[kk][1] : other[kk][1];
    }, acc0, acc1);
  }
}

// Q3_K: Q6_K's lanes and x words, its rings within the row walk's (so x stays where the row walk
// stages it, and the merged products take its tiles too).
struct lathe_gemv1t_fmt_q3_k {
  static constexpr int unit = LATHE_GEMV1T_Q3K_UNIT, box = LATHE_GEMV1T_Q3K_BOX, stages = LATHE_GEMV1T_Q3K_STAGES;
  static constexpr int slot = LATHE_GEMV1T_ROWS * box;  // 2,304: one box, 128-byte aligned
  static constexpr int x_offset = LATHE_GEMV1_WARPS * LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT;  // the row walk's
  using lane_x = lathe_gemv1t_fmt_q6_k::lane_x;
  using xfrag = lathe_gemv1t_fmt_q6_k::xfrag;
  template <int C>
  static __device__ __forceinline__ lane_x x_lane(unsigned sx_a, unsigned sds_a, int k) {
    return lathe_gemv1t_fmt_q6_k::x_lane<C>(sx_a, sds_a, k);
  }
  template <int C>
  static __device__ __forceinline__ xfrag x_of(const lane_x& lx, unsigned u) {
    return lathe_gemv1t_fmt_q6_k::x_of<C>(lx, u);
  }
  template <int C>
  static __device__ __forceinline__ void chunk(unsigned s, unsigned o, const xfrag& x, float& acc0, float& acc1) {
    if (o & 2u)  // the warp's units are all 2 bytes past a word or none (unit 16 j + w: o = 14 w % 16)
      lathe_gemv1t_q3_k_chunk<C, true>(s + o, x.xw, x.dsv, acc0, acc1);
    else
      lathe_gemv1t_q3_k_chunk<C, false>(s + o, x.xw, x.dsv, acc0, acc1);
  }
};

// Q2_K's unit at shared address s (rows LATHE_GEMV1T_Q2K_BOX apart: scales[16] at 0, qs[64] at 16, d at
// 80, dmin at 82; unit c 4 c % 16 bytes into its box: word-aligned) times x's unit, as Q3_K's: piece
// j = 4 h + kk is values 32 j .. 32 j + 31, value l of it bits 2 kk of qs[32 h + l] (levels 0-3, s8
// in value order), its halves sub-blocks 2 j and 2 j + 1, each with scale byte 8 h + 2 kk (+ 1): d times
// its low nibble, less dmin times its high nibble times the half's x (gemv_blocks.cuh's
// lathe_gemv_q2_k). So a lane's term also needs the sums of its own x levels over its piece's two
// halves (q1's or q2's by t % 2): lathe_gemv1t_q2_k_x carries them, formed with x's words.
struct lathe_gemv1t_q2_k_x {
  uint32_t xw[4];  // Q6_K's B words
  float dsv[4];    // ... and x's d1 or d2
  int xs[4][2];    // the lane's x levels summed over half 0 and half 1 of piece kk + 4 (t / 2)
};

template <int C>
__device__ __forceinline__ void lathe_gemv1t_q2_k_chunk(unsigned s, const lathe_gemv1t_q2_k_x& x, float& acc0,
                                                        float& acc1) {
  constexpr int B = LATHE_GEMV1T_Q2K_BOX;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  int c[4][4];
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) c[kk][0] = c[kk][1] = c[kk][2] = c[kk][3] = 0;
  const unsigned r0 = s + B * g + 4 * t, r1 = r0 + 8 * B;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    uint32_t qs[2][2];  // [row][half]: qs bytes 32 h + 16 half + 4t ..
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      qs[0][half] = lathe_lds32(r0 + 16 + 32 * h + 16 * half);
      qs[1][half] = lathe_lds32(r1 + 16 + 32 * h + 16 * half);
    }
    lathe_gemv1t_s8_mma(c, h, x.xw, [&](int r, int half, int kk) { return (qs[r][half] >> (2 * kk)) & 0x03030303u; });
  }
  if (C == 1 && (t & 1)) return;  // int8: no q2 words
  // Row r's scale bytes of the lane's pieces (h = t / 2: bytes 8 h .. 8 h + 7, piece kk's at 2 kk, 2 kk + 1),
  // d and dmin.
  const unsigned sr0 = s + B * g, sr1 = sr0 + 8 * B, h8 = 8 * (t >> 1);
  const uint32_t sc0[2] = {lathe_lds32(sr0 + h8), lathe_lds32(sr0 + h8 + 4)};
  const uint32_t sc1[2] = {lathe_lds32(sr1 + h8), lathe_lds32(sr1 + h8 + 4)};
  const float d0 = __half2float(__ushort_as_half(lathe_lds16(sr0 + 80)));
  const float m0 = __half2float(__ushort_as_half(lathe_lds16(sr0 + 82)));
  const float d1 = __half2float(__ushort_as_half(lathe_lds16(sr1 + 80)));
  const float m1 = __half2float(__ushort_as_half(lathe_lds16(sr1 + 82)));
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    const int sh = 16 * (kk & 1);
    const uint32_t a0 = (sc0[kk >> 1] >> sh) & 0xFFFFu, a1 = (sc1[kk >> 1] >> sh) & 0xFFFFu;
    // row r's half-0 and half-1 bytes: low nibble the scale, high the min
    const float sa0 = __fmul_rn(d0, static_cast<float>(a0 & 15u)), sb0 = __fmul_rn(d0, static_cast<float>((a0 >> 8) & 15u));
    const float ma0 = __fmul_rn(m0, static_cast<float>((a0 >> 4) & 15u)), mb0 = __fmul_rn(m0, static_cast<float>(a0 >> 12));
    const float sa1 = __fmul_rn(d1, static_cast<float>(a1 & 15u)), sb1 = __fmul_rn(d1, static_cast<float>((a1 >> 8) & 15u));
    const float ma1 = __fmul_rn(m1, static_cast<float>((a1 >> 4) & 15u)), mb1 = __fmul_rn(m1, static_cast<float>(a1 >> 12));
    const float xa = lathe_gemv_i2f(x.xs[kk][0]), xb = lathe_gemv_i2f(x.xs[kk][1]);
    acc0 += x.dsv[kk] * (fmaf(sa0, lathe_gemv_i2f(c[kk][0]), sb0 * lathe_gemv_i2f(c[kk][1])) - fmaf(ma0, xa, mb0 * xb));
    acc1 += x.dsv[kk] * (fmaf(sa1, lathe_gemv_i2f(c[kk][2]), sb1 * lathe_gemv_i2f(c[kk][3])) - fmaf(ma1, xa, mb1 * xb));
  }
}

// Q2_K: Q6_K's lanes and x words, and the lane's x level sums; its rings within the row walk's (so x
// stays where the row walk stages it and the merged and norm-epilogue products take its tiles too).
struct lathe_gemv1t_fmt_q2_k {
  static constexpr int unit = LATHE_GEMV1T_Q2K_UNIT, box = LATHE_GEMV1T_Q2K_BOX, stages = LATHE_GEMV1T_Q2K_STAGES;
  static constexpr int slot = LATHE_GEMV1T_ROWS * box;  // 1,792: one box, 128-byte aligned
  static constexpr int x_offset = LATHE_GEMV1_WARPS * LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT;  // the row walk's
  struct lane_x {
    lathe_gemv1t_fmt_q6_k::lane_x w;
    unsigned xs;  // the lane's x levels (q1 or q2 by t % 2) of piece 4 (t / 2)
  };
  template <int C>
  static __device__ __forceinline__ lane_x x_lane(unsigned sx_a, unsigned sds_a, int k) {
    const int t = threadIdx.x & 3;  // (int8 has no q2: its odd lanes sum q1, unused, never past x's k bytes)
    return {lathe_gemv1t_fmt_q6_k::x_lane<C>(sx_a, sds_a, k), sx_a + ((C == 2 && (t & 1)) ? k : 0) + 128 * (t >> 1)};
  }
  using xfrag = lathe_gemv1t_q2_k_x;
  template <int C>
  static __device__ __forceinline__ xfrag x_of(const lane_x& lx, unsigned u) {
    const lathe_gemv1t_fmt_q6_k::xfrag w = lathe_gemv1t_fmt_q6_k::x_of<C>(lx.w, u);
    xfrag x;
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      x.xw[kk] = w.xw[kk];
      x.dsv[kk] = w.dsv[kk];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int4 v = lathe_lds128(lx.xs + 256 * u + 32 * kk + 16 * half);
        x.xs[kk][half] =
            __dp4a(v.w, 0x01010101, __dp4a(v.z, 0x01010101, __dp4a(v.y, 0x01010101, __dp4a(v.x, 0x01010101, 0))));
      }
    }
    return x;
  }
  template <int C>
  static __device__ __forceinline__ void chunk(unsigned s, unsigned o, const xfrag& x, float& acc0, float& acc1) {
    lathe_gemv1t_q2_k_chunk<C>(s + o, x, acc0, acc1);
  }
};

// The tile format of a row walk's piece trait, for the merged products' tile form (gemv_multi.cuh).
template <class F>
struct lathe_gemv1t_fmt_of;
template <>
struct lathe_gemv1t_fmt_of<lathe_gemv1_q4_k> {
  using type = lathe_gemv1t_fmt_q4_k;
};
template <>
struct lathe_gemv1t_fmt_of<lathe_gemv1_q5_k> {
  using type = lathe_gemv1t_fmt_q5_k;
};
template <>
struct lathe_gemv1t_fmt_of<lathe_gemv1_q3_k> {
  using type = lathe_gemv1t_fmt_q3_k;
};
template <>
struct lathe_gemv1t_fmt_of<lathe_gemv1_q2_k> {
  using type = lathe_gemv1t_fmt_q2_k;
};

#ifndef LATHE_HOST_TILE_UNITS  // the walk and its kernels: the device's alone
// Where the tile walk of format F stages x in the dynamic shared memory.
template <class F>
__device__ __forceinline__ uint8_t* lathe_gemv1t_x(uint4* smem) {
  return reinterpret_cast<uint8_t*>(smem) + F::x_offset;
}

// The tile walk of format F (lathe_gemv1t_fmt_*): one block a tile at a time, a tile's units 16 at a time (warp w the unit 16 j + w of
// round j). What the tiles are and where their rows go is the policy T's (the plain product below,
// gemv_norm_epilogue.cuh's, gemv_multi.cuh's):
//   two_parts  the item's units feed two sums a row (gate's and up's: part(c) says which)
//   has(item)  whether the block's item exists (items are first, first + step, ... while it does)
//   first(b, 0), step(gridDim.x, 1): the block's first item and its step (dealt: b and gridDim.x; a
//              block's own tiles: 0 and 1)
//   chunks(item)  a tile's units (a multiple of 16); box(item, c, col, row): the tensor map holding
//              unit c of the tile and the box's origin in it (col: a unit of the row, row: the
//              tile's first row); part(c): which sum unit c feeds
//   done(item, r, v0, v1): row r of the tile finished, called by lane r < 16 of warp 0 (v1: the
//              second sum, two_parts)
//   before_wait(), after_wait(), finish(smem) as gemv_decode.cuh's epilogues
// stage_x(late) stages x (lathe_gemv1_stage_x's layout) for every warp, calling late() once x's reads
// are asked for, and returns after a barrier of the block. grid: the persistent step's (null: a kernel).
template <class F, int C, class T, class StageX>
__device__ __forceinline__ void lathe_gemv1t_run(T& tiles, StageX&& stage_x, int k, int early,
                                                 const lathe_grid* grid = nullptr) {
  extern __shared__ uint4 lathe_gemv1_smem[];
  __shared__ float partial[2][T::two_parts ? 2 : 1][LATHE_GEMV1_WARPS][LATHE_GEMV1T_ROWS];
  __shared__ __align__(8) unsigned long long full[LATHE_GEMV1_WARPS][F::stages];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  // The warp's ring; TMA writes a box at a 128-byte aligned address.
  const unsigned ring = ((lathe_smem_addr(lathe_gemv1_smem) + 127u) & ~127u) +
                        static_cast<unsigned>(warp * F::stages * F::slot),
                 full_a = lathe_smem_addr(full[warp]);
  uint8_t* sx = lathe_gemv1t_x<F>(lathe_gemv1_smem);
  const int x_level_bytes = k * (C == 2 ? 2 : 1), n_units = k / 256;
  const int item0 = tiles.first(blockIdx.x, 0), step = tiles.step(gridDim.x, 1);
  if (lane == 0) {
    for (int s = 0; s < F::stages; ++s)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(full_a + 8 * s) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // visible to the async proxy
  }
  __syncwarp();

  // Fill f: the warp's f-th unit (its items' units 16 j + warp in turn) into slot f % stages, one box.
  int ld_item = item0, ld_j = 0, filled = 0;
  auto fill = [&] {
    if (tiles.has(ld_item)) {
      int col, row;
      const LatheTileMap* map = tiles.box(ld_item, LATHE_GEMV1T_SPAN * ld_j + warp, col, row);
      const int s = filled % F::stages;
      const unsigned bar = full_a + 8 * s;
      if (lane == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(F::slot)
                     : "memory");
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
                ring + s * F::slot),
            "l"(reinterpret_cast<uint64_t>(map)), "r"((F::unit * col) & ~15), "r"(row), "r"(bar)
            : "memory");
      }
      if (LATHE_GEMV1T_SPAN * ++ld_j >= tiles.chunks(ld_item)) {
        ld_j = 0;
        ld_item += step;
      }
    }
    ++filled;
  };
  tiles.before_wait();
  if (early == 0) lathe_step_wait(grid);
  while (filled < LATHE_GEMV1T_BEFORE_WAIT && filled < F::stages) fill();
  if (early > 0) lathe_step_wait(grid);
  tiles.after_wait();
  stage_x([&] {
    while (filled < F::stages - 1) fill();
  });
  while (filled < F::stages) fill();

  const typename F::lane_x lx =
      F::template x_lane<C>(lathe_smem_addr(sx), lathe_smem_addr(sx + x_level_bytes), k);

  // A row of 16 units (k = 4,096): a warp's units are all unit `warp` of their rows (gate's and up's
  // too), so its part of x is formed once, not every unit (LATHE_GEMV1T_X_ONCE=0, a measuring knob:
  // every unit).
  const bool x_fixed = LATHE_GEMV1T_X_ONCE && n_units == LATHE_GEMV1T_SPAN;
  typename F::xfrag x_once{};
  if (x_fixed) x_once = F::template x_of<C>(lx, static_cast<unsigned>(warp));
  int item = item0, j = 0, parity = 0;
  unsigned taken = 0;  // units consumed: number `taken` is fill taken / stages of its slot
  float acc[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};  // [part][row g, row g + 8]
  while (tiles.has(item)) {
    const int s = static_cast<int>(taken % F::stages);
    lathe_ring_wait(full_a, s, (taken / F::stages) & 1);
    const int c = LATHE_GEMV1T_SPAN * j + warp;  // this warp's unit of the item
    const int part = tiles.part(c);
    // x's unit: c % n_units, as c < 2 n_units (a tile's units are n_units, gate's then up's 2 n_units):
    // no division a unit (c % n_units took ~20 of the x-each route's ~340 instructions a unit; nvdisasm,
    // forty-fourth session)
    const unsigned u = static_cast<unsigned>(c >= n_units ? c - n_units : c);
    const unsigned sa = ring + s * F::slot, o = static_cast<unsigned>(F::unit * c) & 15u;
    auto unit = [&](const typename F::xfrag& xf) {
      if (LATHE_GEMV1T_SKIP_MATH) {
      } else if (T::two_parts && part)
        F::template chunk<C>(sa, o, xf, acc[T::two_parts ? 1 : 0][0], acc[T::two_parts ? 1 : 0][1]);
      else
        F::template chunk<C>(sa, o, xf, acc[0][0], acc[0][1]);
    };
    if (x_fixed)
      unit(x_once);
    else
      unit(F::template x_of<C>(lx, u));
    __syncwarp();  // every lane has read the slot: refill it
    fill();
    ++taken;
    if (LATHE_GEMV1T_SKIP_END && LATHE_GEMV1T_SPAN * (j + 1) >= tiles.chunks(item)) {
      j = 0;
      item += step;
    } else if (LATHE_GEMV1T_SPAN * ++j >= tiles.chunks(item)) {  // the tile is done: a row's four lanes, then the warps
      constexpr int P = T::two_parts ? 2 : 1;
#pragma unroll
      for (int p = 0; p < P; ++p)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          acc[p][h] += __shfl_xor_sync(0xFFFFFFFFu, acc[p][h], 1);
          acc[p][h] += __shfl_xor_sync(0xFFFFFFFFu, acc[p][h], 2);
        }
      // Double-buffered partials: a warp writes buffer `parity` again only after the next barrier,
      // which warp 0 reaches only after reading it. (The tile ended by its last warp to arrive, a
      // counter instead of the barrier, measured slower: docs/perf.md, 2026-12-03.)
      if (t == 0)
#pragma unroll
        for (int p = 0; p < P; ++p) {
          partial[parity][p][warp][g] = acc[p][0];
          partial[parity][p][warp][g + 8] = acc[p][1];
        }
      asm volatile("bar.sync 1, %0;\n" ::"r"(32 * LATHE_GEMV1_WARPS) : "memory");
      if (warp == 0) {
        float v[2] = {0.0f, 0.0f};  // lane r < 16: row r's totals, the warps in order
#pragma unroll
        for (int p = 0; p < P; ++p)
          for (int i = 0; i < LATHE_GEMV1_WARPS; ++i) v[p] += partial[parity][p][i][lane & 15];
        if (lane < LATHE_GEMV1T_ROWS) tiles.done(item, lane, v[0], v[1]);
      }
      parity ^= 1;
      acc[0][0] = acc[0][1] = acc[1][0] = acc[1][1] = 0.0f;
      j = 0;
      item += step;
    }
  }
  __syncthreads();  // every fill consumed and every warp past its last wait
  if (lane == 0)
    for (int s = 0; s < F::stages; ++s)
      asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(full_a + 8 * s) : "memory");
  tiles.finish(reinterpret_cast<uint8_t*>(lathe_gemv1_smem));
}

// The plain product's tiles: dealt over the grid (block b: tiles b, b + gridDim.x, ...), tile i rows
// 16 i .., its rows stored to y.
struct lathe_gemv1t_plain {
  static constexpr bool two_parts = false;
  const LatheTileMap* map;
  float* y;
  int n_tiles, n_units;
  __device__ __forceinline__ int first(int g0, int) const { return g0; }
  __device__ __forceinline__ int step(int n_groups, int) const { return n_groups; }
  __device__ __forceinline__ bool has(int item) const { return item < n_tiles; }
  __device__ __forceinline__ int chunks(int) const { return n_units; }
  __device__ __forceinline__ int part(int) const { return 0; }
  __device__ __forceinline__ const LatheTileMap* box(int item, int c, int& col, int& row) const {
    col = c;
    row = LATHE_GEMV1T_ROWS * item;
    return map;
  }
  __device__ __forceinline__ void done(int item, int r, float v, float) const { y[LATHE_GEMV1T_ROWS * item + r] = v; }
  __device__ __forceinline__ void before_wait() const {}
  __device__ __forceinline__ void after_wait() const {}
  __device__ __forceinline__ void finish(uint8_t*) const {}
};

template <class F, int C>
__device__ __forceinline__ void lathe_gemv1t_body(const LatheTileMap* wm, const int8_t* xq, float* y, int k, int n_out,
                                                  const float* xf, int early) {
  extern __shared__ uint4 lathe_gemv1_smem[];
  lathe_gemv1t_plain tiles{wm, y, n_out / LATHE_GEMV1T_ROWS, k / 256};
  uint8_t* sx = lathe_gemv1t_x<F>(lathe_gemv1_smem);
  lathe_gemv1t_run<F, C>(tiles, [&](auto&& late) { lathe_gemv1_stage_x<C>(sx, xq, xf, k, late); }, k, early);
}

// The row kernel's parameters, and wm, w's tensor map (which holds w and row_bytes: unused here).
#define LATHE_GEMV1T_KERNEL(FMT, C, CNAME)                                                                     \
  extern "C" __global__ void __launch_bounds__(32 * LATHE_GEMV1_WARPS, 1) lathe_gemv1t_##FMT##_##CNAME(        \
      const uint8_t* w, long long row_bytes, const int8_t* xq, float* y, int k, int n_out, int group, int early, \
      const float* xf, const __grid_constant__ LatheTileMap wm) {                                              \
    (void)w, (void)row_bytes, (void)group;                                                                     \
    lathe_gemv1t_body<lathe_gemv1t_fmt_##FMT, C>(&wm, xq, y, k, n_out, xf, early);                             \
  }

LATHE_GEMV1T_KERNEL(q2_k, 1, int8)
LATHE_GEMV1T_KERNEL(q2_k, 2, int8x2)
LATHE_GEMV1T_KERNEL(q3_k, 1, int8)
LATHE_GEMV1T_KERNEL(q3_k, 2, int8x2)
LATHE_GEMV1T_KERNEL(q4_k, 1, int8)
LATHE_GEMV1T_KERNEL(q4_k, 2, int8x2)
LATHE_GEMV1T_KERNEL(q5_k, 1, int8)
LATHE_GEMV1T_KERNEL(q5_k, 2, int8x2)
LATHE_GEMV1T_KERNEL(q6_k, 1, int8)
LATHE_GEMV1T_KERNEL(q6_k, 2, int8x2)
#endif  // LATHE_HOST_TILE_UNITS
