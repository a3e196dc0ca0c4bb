// The decode GEMV of Q4_K on tensor cores, 16 rows a tile: y[o] = W[o] . x for ONE row of x under the
// int8 contracts (C = 1 int8, C = 2 int8x2), the same products as gemv_decode.cuh's q4_K (the same
// levels, scales and offsets, and a sub-block's f32 formula term for term), with a sub-block's
// integer sums made by mma.sync instead of __dp4a.
//
// Why: the dp4a form multiplies one row a lane, so every 32 weights a lane reads (18 bytes of Q4_K)
// it also reads 80 bytes of x from shared memory, and a 32-value sub-block costs ~88 instructions
// (nvdisasm of lathe_gemv1_q4_k_int8x2, 2026-12-02: 16 IDP, 8 LDS, 16 for the nibbles, ~20 for the
// scales, the rest floats and addresses). Here a warp multiplies 16 rows by one unit of x (256
// values) at a time: the x fragments are read once for the 16 rows, and a sub-block's 16 x 2 integer
// sums are one mma (~210 instructions a 2,304-byte chunk against ~400).
//
// - Items are 16-row tiles (whole tiles: the launchers check), one block a tile at a time (tiles
//   b, b + gridDim.x, ..., or a block's own 32-row blocks in halves), a tile's units 16 at a time
//   (unit 16 j + w for warp w; a row's units a multiple of 16).
// - Each warp streams its own units through its own ring of LATHE_GEMV1T_STAGES slots: a slot is one
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
//   8-byte load. An odd sub-block's levels are the high nibbles, taken in place (masked 0xF0): its
//   sums are 16 times the levels', exactly (|sum| <= 32 * 240 * 128 < 2^23), undone by a shift.
// - A sub-block's term, t = ds.x * s1 (+ ds.y * s2) times d * sc, plus -dmin * m * ds.z, is
//   lathe_gemv1_piece_x's f32 arithmetic in its order, so each term is that kernel's bits; the terms
//   are added in another order (a lane's two rows over its units, then the four lanes of a row, then
//   the warps in order): deterministic, within a few ulps of the row's sum of magnitudes of it.
// Launch (gemv_launch.cpp's decode_tiles_group and its callers): grid (<= SM count), 512 threads, the
// decode kernel's dynamic shared memory (the rings' area, then x as lathe_gemv1_stage_x lays it out),
// and the matrices' tensor maps (decode_tile_map: box 144 bytes x 16 rows, L2 promotion 128 bytes).

#define LATHE_GEMV1T_ROWS 16
#define LATHE_GEMV1T_UNIT 144  // a Q4_K unit's bytes
#define LATHE_GEMV1T_SPAN 16   // a tile's units a round: one for each warp of the block
#define LATHE_GEMV1T_SLOT (LATHE_GEMV1T_ROWS * LATHE_GEMV1T_UNIT)  // 2,304: one box, 128-byte aligned
#define LATHE_GEMV1T_STAGES 4  // 16 warps x 4 x 2,304 + 128 of alignment: within the decode rings (16 x 4 x 2,560)
// A warp's boxes asked for before the programmatic-launch wait (weights are constants): the row
// walk's count unless a measuring build says otherwise.
#ifndef LATHE_GEMV1T_BEFORE_WAIT
#define LATHE_GEMV1T_BEFORE_WAIT LATHE_GEMV1_BEFORE_WAIT
#endif

// A CUtensorMap as the kernel receives it (__grid_constant__: TMA reads it from parameter space);
// the launchers' decode_tile_map encodes it: the matrix as 2D bytes [n_out][row_bytes], box 144 x 16.
struct __align__(64) LatheTileMap {
  unsigned long long v[16];
};

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

// A sub-block's f32 term from its integer sums (lathe_gemv1_piece_x's order: one-scale, offset form).
template <int C>
__device__ __forceinline__ float lathe_gemv1t_term(int s1, int s2, float4 ds, float sa, float offset) {
  float t = ds.x * lathe_gemv_i2f(s1);
  if constexpr (C == 2) t = fmaf(ds.y, lathe_gemv_i2f(s2), t);
  t *= sa;
  return fmaf(offset, ds.z, t);
}

// The unit at shared address s (a tile's unit u, rows LATHE_GEMV1T_UNIT apart) times x's unit u:
// adds the lane's terms to acc0 (row g) and acc1 (row g + 8). xa, xb: the lane's B words (x of
// sub-blocks g / 2 and g / 2 + 4, 8 bytes at 8t; zero where the lane's column carries nothing);
// dsa, dsb: x's (d1, d2, sum) of sub-blocks t and t + 4.
template <int C>
__device__ __forceinline__ void lathe_gemv1t_q4_k_chunk(unsigned s, uint2 xa, uint2 xb, float4 dsa, float4 dsb,
                                                        float& acc0, float& acc1) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  // B of sub-block j: the lane's words where its column (g) is j's (2 (j % 4) or 2 (j % 4) + 1).
  uint32_t b[8][2];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t on = (g >> 1) == j ? 0xFFFFFFFFu : 0u;
    b[j][0] = xa.x & on;
    b[j][1] = xa.y & on;
    b[j + 4][0] = xb.x & on;
    b[j + 4][1] = xb.y & on;
  }
  int ca[4] = {0, 0, 0, 0}, cb[4] = {0, 0, 0, 0};
  const unsigned ra = s + LATHE_GEMV1T_UNIT * g + 16 + 8 * t;  // row g's qs, bytes 8t.. of pair 0
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const uint2 r0 = lathe_lds64u(ra + 32 * p), r1 = lathe_lds64u(ra + 32 * p + 8 * LATHE_GEMV1T_UNIT);
    int(&c)[4] = p < 2 ? ca : cb;
    lathe_mma_u8s8(c, r0.x & 0x0F0F0F0Fu, r1.x & 0x0F0F0F0Fu, r0.y & 0x0F0F0F0Fu, r1.y & 0x0F0F0F0Fu, b[2 * p][0],
                   b[2 * p][1]);
    lathe_mma_u8s8(c, r0.x & 0xF0F0F0F0u, r1.x & 0xF0F0F0F0u, r0.y & 0xF0F0F0F0u, r1.y & 0xF0F0F0F0u,
                   b[2 * p + 1][0], b[2 * p + 1][1]);
  }
  // Lane (g, t): sub-blocks t (ca) and t + 4 (cb) of rows g (c[0], c[1]) and g + 8 (c[2], c[3]);
  // an odd sub-block's sums are 16 times its levels'.
  const int sh = 4 * (t & 1);
  const uint4 h0 = lathe_lds128u(s + LATHE_GEMV1T_UNIT * g);
  const uint4 h1 = lathe_lds128u(s + LATHE_GEMV1T_UNIT * (g + 8));
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

// The tile walk: one block a tile at a time, a tile's units 16 at a time (warp w the unit 16 j + w of
// round j). What the tiles are and where their rows go is the policy T's (the plain product below,
// gemv_norm_epilogue.cuh's, gemv_multi.cuh's):
//   two_parts  the item's units feed two sums a row (gate's and up's: part(c) says which)
//   has(item)  whether the block's item exists (items are first, first + step, ... while it does)
//   first(b, 0), step(gridDim.x, 1): the block's first item and its step (dealt: b and gridDim.x; a
//              block's own tiles: 0 and 1)
//   chunks(item)  a tile's units (a multiple of 16); box(item, c, col, row): the tensor map holding
//              unit c of the tile and the box's origin in it (col: a byte of the row, row: the
//              tile's first row); part(c): which sum unit c feeds
//   done(item, r, v0, v1): row r of the tile finished, called by lane r < 16 of warp 0 (v1: the
//              second sum, two_parts)
//   before_wait(), after_wait(), finish(smem) as gemv_decode.cuh's epilogues
// stage_x(late) stages x (lathe_gemv1_stage_x's layout) for every warp, calling late() once x's reads
// are asked for, and returns after a barrier of the block. grid: the persistent step's (null: a kernel).
template <int C, class T, class StageX>
__device__ __forceinline__ void lathe_gemv1t_run(T& tiles, StageX&& stage_x, int k, int early,
                                                 const lathe_grid* grid = nullptr) {
  extern __shared__ uint4 lathe_gemv1_smem[];
  __shared__ float partial[2][T::two_parts ? 2 : 1][LATHE_GEMV1_WARPS][LATHE_GEMV1T_ROWS];
  __shared__ __align__(8) unsigned long long full[LATHE_GEMV1_WARPS][LATHE_GEMV1T_STAGES];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  // The warp's ring; TMA writes a box at a 128-byte aligned address.
  const unsigned ring = ((lathe_smem_addr(lathe_gemv1_smem) + 127u) & ~127u) +
                        static_cast<unsigned>(warp * LATHE_GEMV1T_STAGES * LATHE_GEMV1T_SLOT),
                 full_a = lathe_smem_addr(full[warp]);
  uint8_t* sx = reinterpret_cast<uint8_t*>(lathe_gemv1_smem) + LATHE_GEMV1_WARPS * LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT;
  const int x_level_bytes = k * (C == 2 ? 2 : 1), n_units = k / 256;
  const int item0 = tiles.first(blockIdx.x, 0), step = tiles.step(gridDim.x, 1);
  if (lane == 0) {
    for (int s = 0; s < LATHE_GEMV1T_STAGES; ++s)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(full_a + 8 * s) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // visible to the async proxy
  }
  __syncwarp();

  // Fill f: the warp's f-th unit (its items' units 16 j + warp in turn) into slot f % STAGES, one box.
  int ld_item = item0, ld_j = 0, filled = 0;
  auto fill = [&] {
    if (tiles.has(ld_item)) {
      int col, row;
      const LatheTileMap* map = tiles.box(ld_item, LATHE_GEMV1T_SPAN * ld_j + warp, col, row);
      const int s = filled % LATHE_GEMV1T_STAGES;
      const unsigned bar = full_a + 8 * s;
      if (lane == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(LATHE_GEMV1T_SLOT)
                     : "memory");
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
                ring + s * LATHE_GEMV1T_SLOT),
            "l"(reinterpret_cast<uint64_t>(map)), "r"(col), "r"(row), "r"(bar)
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
  while (filled < LATHE_GEMV1T_BEFORE_WAIT && filled < LATHE_GEMV1T_STAGES) fill();
  if (early > 0) lathe_step_wait(grid);
  tiles.after_wait();
  stage_x([&] {
    while (filled < LATHE_GEMV1T_STAGES - 1) fill();
  });
  while (filled < LATHE_GEMV1T_STAGES) fill();

  // The lane's B words: x of sub-block g / 2 (q1 for even g, q2 for odd; none for odd g under int8)
  // at bytes 8t.., and its (d1, d2, sum) of sub-blocks t and t + 4, unit 0 (a unit is 256 values on).
  const unsigned sx_a = lathe_smem_addr(sx), sds_a = lathe_smem_addr(sx + x_level_bytes);
  const bool has_b = C == 2 || (g & 1) == 0;
  const unsigned xb_a = sx_a + ((g & 1) ? k : 0) + 32 * (g >> 1) + 8 * t;
  const unsigned ds_a = sds_a + 16 * t;

  int item = item0, j = 0, parity = 0;
  unsigned taken = 0;  // units consumed: number `taken` is fill taken / STAGES of its slot
  float acc[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};  // [part][row g, row g + 8]
  while (tiles.has(item)) {
    const int s = static_cast<int>(taken % LATHE_GEMV1T_STAGES);
    lathe_ring_wait(full_a, s, (taken / LATHE_GEMV1T_STAGES) & 1);
    const int c = LATHE_GEMV1T_SPAN * j + warp;  // this warp's unit of the item
    const int part = tiles.part(c);
    const unsigned u = static_cast<unsigned>(c % n_units);  // x's unit (up's units follow gate's)
    uint2 xa = make_uint2(0u, 0u), xb = make_uint2(0u, 0u);
    if (has_b) {
      xa = lathe_lds64u(xb_a + 256 * u);
      xb = lathe_lds64u(xb_a + 256 * u + 128);
    }
    const float4 dsa = lathe_lds128f(ds_a + 128 * u), dsb = lathe_lds128f(ds_a + 128 * u + 64);
    const unsigned sa = ring + s * LATHE_GEMV1T_SLOT;
    if (T::two_parts && part)
      lathe_gemv1t_q4_k_chunk<C>(sa, xa, xb, dsa, dsb, acc[T::two_parts ? 1 : 0][0], acc[T::two_parts ? 1 : 0][1]);
    else
      lathe_gemv1t_q4_k_chunk<C>(sa, xa, xb, dsa, dsb, acc[0][0], acc[0][1]);
    __syncwarp();  // every lane has read the slot: refill it
    fill();
    ++taken;
    if (LATHE_GEMV1T_SPAN * ++j >= tiles.chunks(item)) {  // the tile is done: a row's four lanes, then the warps
      constexpr int P = T::two_parts ? 2 : 1;
#pragma unroll
      for (int p = 0; p < P; ++p)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          acc[p][h] += __shfl_xor_sync(0xFFFFFFFFu, acc[p][h], 1);
          acc[p][h] += __shfl_xor_sync(0xFFFFFFFFu, acc[p][h], 2);
        }
      // Double-buffered partials: a warp writes buffer `parity` again only after the next barrier,
      // which warp 0 reaches only after reading it.
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
    for (int s = 0; s < LATHE_GEMV1T_STAGES; ++s)
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
    col = c * LATHE_GEMV1T_UNIT;
    row = LATHE_GEMV1T_ROWS * item;
    return map;
  }
  __device__ __forceinline__ void done(int item, int r, float v, float) const { y[LATHE_GEMV1T_ROWS * item + r] = v; }
  __device__ __forceinline__ void before_wait() const {}
  __device__ __forceinline__ void after_wait() const {}
  __device__ __forceinline__ void finish(uint8_t*) const {}
};

template <int C>
__device__ __forceinline__ void lathe_gemv1t_q4_k_body(const LatheTileMap* wm, const int8_t* xq, float* y, int k,
                                                       int n_out, const float* xf, int early) {
  extern __shared__ uint4 lathe_gemv1_smem[];
  uint8_t* sx = reinterpret_cast<uint8_t*>(lathe_gemv1_smem) + LATHE_GEMV1_WARPS * LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT;
  lathe_gemv1t_plain tiles{wm, y, n_out / LATHE_GEMV1T_ROWS, k / 256};
  lathe_gemv1t_run<C>(tiles, [&](auto&& late) { lathe_gemv1_stage_x<C>(sx, xq, xf, k, late); }, k, early);
}

// The row kernel's parameters, and wm, w's tensor map (which holds w and row_bytes: unused here).
#define LATHE_GEMV1T_KERNEL(C, CNAME)                                                                          \
  extern "C" __global__ void __launch_bounds__(32 * LATHE_GEMV1_WARPS, 1) lathe_gemv1t_q4_k_##CNAME(           \
      const uint8_t* w, long long row_bytes, const int8_t* xq, float* y, int k, int n_out, int group, int early, \
      const float* xf, const __grid_constant__ LatheTileMap wm) {                                              \
    (void)w, (void)row_bytes, (void)group;                                                                     \
    lathe_gemv1t_q4_k_body<C>(&wm, xq, y, k, n_out, xf, early);                                                \
  }

LATHE_GEMV1T_KERNEL(1, int8)
LATHE_GEMV1T_KERNEL(2, int8x2)
