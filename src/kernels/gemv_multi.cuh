// Merged decode GEMVs: one launch for the products of a layer that read the same activation row
// (int8 / int8x2 contracts, quantize_act.cuh's layout), built on the decode kernel's pieces
// (gemv_decode.cuh: its format traits, chunk copies, cp.async ring and piece dot products).
//
// - Up to three matrices ("segments") of one k, each in format FA or FB (bit s of b_mask: segment s is
//   FB), each with its own n_out and output. Their rows form ONE work list of items (segment 0's rows,
//   then 1's, then 2's) dealt to groups of warps over every SM, so the narrow k / v products of
//   attention no longer leave most of the card idle behind the wide q.
// - swiglu != 0: two segments of one shape, gate (0) and up (1); item o is the pair of rows o, its
//   chunks gate's then up's, and its epilogue writes y0[o] = silu(gate_o . x) * (up_o . x) (the
//   f32 formula of elementwise.cuh's swiglu), so the two products and the SwiGLU are one kernel.
// - As in the decode kernel: blocks of 16 warps, one block an SM; a group of `group` warps owns an
//   item at a time (items g, g + n_groups, ...; lathe_gemvm_*_quantizing: the block's own 32-row
//   blocks, lathe_gemvm_deal), its warps taking the item's chunks round-robin;
//   the launcher keeps group <= every item's chunk count, so each warp of a group has >= 1 chunk.
//   Partial sums meet in shared memory in a fixed order: results are deterministic.
// - early != 0: the weights do not depend on the kernel before this one, so the first STAGES - 1
//   chunks of each warp are requested BEFORE the programmatic-launch wait (lathe_pdl_entry), and the
//   next early - 1 chunks asked of L2 (one bulk prefetch a lane); x after the wait. The first DRAM
//   round trips then overlap the predecessor (most of a small product's floor). early == 0 waits first, as every other kernel does (for measurements).
// Launch (gemv_multi_launch.cpp): grid (<= SM count, 1, 1), 512 threads, dynamic shared memory as
// the decode kernel: LATHE_GEMV1 stage bytes + k * (1 or 2) + k / 2.

template <class A, class B>
struct lathe_gemvm_same {
  static constexpr bool value = false;
};
template <class A>
struct lathe_gemvm_same<A, A> {
  static constexpr bool value = true;
};

template <class T>
__device__ __forceinline__ T lathe_gemvm_pick(int s, T a, T b, T c) {
  return s == 0 ? a : s == 1 ? b : c;
}

// Where chunk c of an item lies: segment, row of that segment, chunk of that row.
struct lathe_gemvm_at {
  int seg, row, c;
};

// The work list: segments' rows and formats, and how an item maps onto them.
template <class FA, class FB>
struct lathe_gemvm_list {
  static constexpr bool mixed = !lathe_gemvm_same<FA, FB>::value;
  int n0, n1, b_mask, swiglu, units_a, units_b, nc_a, nc_b;

  __device__ __forceinline__ bool is_b(int seg) const { return mixed && ((b_mask >> seg) & 1); }
  __device__ __forceinline__ int chunks_of_seg(int seg) const { return is_b(seg) ? nc_b : nc_a; }
  __device__ __forceinline__ int seg_of(int item) const { return item >= n0 + n1 ? 2 : item >= n0 ? 1 : 0; }
  __device__ __forceinline__ int chunks(int item) const {
    return swiglu ? chunks_of_seg(0) + chunks_of_seg(1) : chunks_of_seg(seg_of(item));
  }
  __device__ __forceinline__ lathe_gemvm_at locate(int item, int c) const {
    lathe_gemvm_at a;
    if (swiglu) {
      const int nc0 = chunks_of_seg(0);
      a.seg = c >= nc0 ? 1 : 0;
      a.row = item;
      a.c = a.seg ? c - nc0 : c;
    } else {
      a.seg = seg_of(item);
      a.row = item - (a.seg == 0 ? 0 : a.seg == 1 ? n0 : n0 + n1);
      a.c = c;
    }
    return a;
  }
};

// Which output rows a group of warps walks: its walk's items first, first + step, ... below count,
// item i standing for row(i).
// - Dealt over the grid (the default): items g0, g0 + n_groups, ... of all n items, row i.
// - By block (gate/up quantizing its output in its epilogue): block b owns the 32-row blocks b,
//   b + gridDim.x, ... (n % 32 == 0), which its groups walk: items j, j + groups_per_block, ... of
//   its own 32 * owned rows, item i the row 32 (b + gridDim.x (i / 32)) + i % 32. The launcher takes
//   it where no block gets more rows than dealt (qwen3-8b gate/up: 96 either way), and a group's
//   arithmetic an item is the same: y is the same bits in both.
// ByBlock is a compile-time form and a kernel of its own (lathe_gemvm_*_quantizing), so the dealt
// kernels' loops are the instructions they were before it. Measured on the H200 (docs/perf.md,
// 2026-12-01): the row formula at run time in every product's loop, and both forms in one kernel
// (q/k/v's norm prologue 3 -> 9 us), each made the step slower.
template <bool ByBlock>
struct lathe_gemvm_deal {
  int first, step, count;
  __device__ __forceinline__ int row(int i) const {
    if constexpr (ByBlock) return ((static_cast<int>(blockIdx.x) + static_cast<int>(gridDim.x) * (i >> 5)) << 5) + (i & 31);
    return i;
  }
  // The block's own 32-row blocks of n rows.
  __device__ __forceinline__ static int owned(int n) {
    const int nb = n >> 5;
    return static_cast<int>(blockIdx.x) < nb ? (nb - static_cast<int>(blockIdx.x) + gridDim.x - 1) / gridDim.x : 0;
  }
  // Dealt: items g0, g0 + n_groups, ... of n. By block: items j, j + groups_per_block, ... of the
  // block's own rows.
  __device__ __forceinline__ static lathe_gemvm_deal make(int g0, int n_groups, int j, int groups_per_block, int n) {
    if constexpr (ByBlock) return {j, groups_per_block, 32 * owned(n)};
    return {g0, n_groups, n};
  }
};

// The epilogue of a product dealt by block: once every group has written its rows of y (f32 [n]),
// the block's own 32-value blocks quantized into qout for contract C (quantize_act.cuh's layout for
// one row of n values, bit-identical to lathe_quantize_act), 8 threads a block
// (lathe_quantize_block32_part), so the next product copies its x instead of waiting for a quantizer
// launch. Lanes past the block's own blocks quantize zeros into a shared dummy (whole warps shuffle).
template <int C>
__device__ __forceinline__ void lathe_gemvm_quantize_owned(const float* y, int8_t* qout, int n) {
  __shared__ __align__(16) int8_t dummy_q[2][4];
  __shared__ float4 dummy_ds;
  __syncthreads();  // every group's rows of y are written: the block's stores are visible to it after
  const int owned = lathe_gemvm_deal<true>::owned(n), limit = (8 * owned + 31) & ~31;
  float4* ds = reinterpret_cast<float4*>(qout + static_cast<long long>(n) * (C == 2 ? 2 : 1));
  for (int t = threadIdx.x; t < limit; t += blockDim.x) {  // whole warps
    const int j = t >> 3, part = 4 * (t & 7);
    const bool mine = j < owned;
    const long long b = static_cast<long long>(blockIdx.x) + static_cast<long long>(gridDim.x) * j;
    const float4 v = mine ? *reinterpret_cast<const float4*>(y + 32 * b + part) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    lathe_quantize_block32_part(v, C == 2, mine ? qout + 32 * b + part : dummy_q[0],
                                mine ? qout + n + 32 * b + part : dummy_q[1], mine ? ds + b : &dummy_ds);
  }
}

// A lane's share of chunk c of a row (staged at s) times x.
template <class F, int C>
__device__ __forceinline__ float lathe_gemvm_chunk_dot(const uint8_t* s, int units, int c, const int4* sq1,
                                                       const int4* sq2, const float4* sds) {
  const int u0 = c * F::chunk_units, n_pieces = min(F::chunk_units, units - u0) * F::pieces;
  const int kq2 = static_cast<int>(reinterpret_cast<const uint8_t*>(sq2) - reinterpret_cast<const uint8_t*>(sq1));
  return lathe_gemv1_chunk_dot<F, C>(0.0f, lathe_smem_addr(s), n_pieces, u0 * F::pieces, lathe_smem_addr(sq1), kq2,
                                     lathe_smem_addr(sds));
}

// gate and up (one format F, rows rb bytes apart) with the SwiGLU, as paired products: item o is row o
// of gate (A) and of up (B). stage_x() stages x for every warp (after the programmatic-launch wait);
// Fills of the ring's first fills are asked for before the wait.
template <class F, int C, int Fills, class StageX, class Deal>
__device__ __forceinline__ void lathe_gemvm_swiglu_pairs(const uint8_t* wg, const uint8_t* wu, float* y, long long rb,
                                                         int k, int group, int sub, const Deal& D,
                                                         int early, uint8_t* stage, unsigned mbar, uint8_t* sx,
                                                         int x_level_bytes, float2 (*partial)[LATHE_GEMV1_WARPS],
                                                         const lathe_grid* grid, StageX& stage_x,
                                                         const float& xscale) {
  const int lane = threadIdx.x & 31;
  const int units = k / F::unit_values, n_halves = (units + lathe_gemv1_half<F>::units - 1) / lathe_gemv1_half<F>::units;
  auto rows = [&](int item, const uint8_t*& ga, const uint8_t*& gb) {
    const long long r = D.row(item);
    ga = wg + r * rb;
    gb = wu + r * rb;
  };
  lathe_gemv1_pair_ring<F, C, decltype(rows)> ring{rows, D.count, units, n_halves, group, sub, D.step, D.first,
                                                    lathe_smem_addr(stage), mbar, {}};
  lathe_ring_init(mbar);
  if (!early) lathe_step_wait(grid);
  ring.begin(Fills);
  if (early) {
    if (!LATHE_GEMV1_LATE && lane < early - 1) ring.prefetch(lane);
    lathe_step_wait(grid);
  }
  stage_x([&] {
    ring.rest(Fills);
    if (lane < LATHE_GEMV1_L2_AFTER_X) ring.prefetch(lane);
  });
  ring.run(lathe_smem_addr(sx), k, lathe_smem_addr(sx + x_level_bytes), partial,
           [&](int item, float g, float u) { y[D.row(item)] = lathe_swiglu(g * xscale, u * xscale); });
  lathe_ring_release(mbar);
}

// The merged products on Q4_K's tiles (gemv_decode_tiles.cuh's lathe_gemv1t_run; the lathe_gemvm_t_*
// kernels), where every segment is Q4_K in whole tiles: items are tiles, segment 0's, then 1's, then
// 2's; with the SwiGLU, tile i is rows 16 i .. of gate and of up, its units gate's then up's (two sums
// a row). ByBlock (the quantizing form, SwiGLU only): a block's own 32-row blocks in halves. Rows are
// written as the row walk writes them (times xscale).
template <bool ByBlock>
struct lathe_gemvm_tiles {
  static constexpr bool two_parts = true;
  const LatheTileMap *m0, *m1, *m2;
  float *y0, *y1, *y2;
  int t0, t1, t2, n0, swiglu, n_units;
  const float& xscale;
  __device__ __forceinline__ int seg(int item) const { return item >= t0 + t1 ? 2 : item >= t0 ? 1 : 0; }
  // The tile's first row within its segment.
  __device__ __forceinline__ int row0(int item) const {
    if (ByBlock) return lathe_gemv1_block_row(LATHE_GEMV1T_ROWS * item);
    if (swiglu) return LATHE_GEMV1T_ROWS * item;
    const int s = seg(item);
    return LATHE_GEMV1T_ROWS * (item - (s == 0 ? 0 : s == 1 ? t0 : t0 + t1));
  }
  __device__ __forceinline__ int first(int g0, int j) const { return ByBlock ? j : g0; }
  __device__ __forceinline__ int step(int n_groups, int groups_per_block) const {
    return ByBlock ? groups_per_block : n_groups;
  }
  __device__ __forceinline__ bool has(int item) const {
    if (ByBlock) return row0(item) < n0;
    return item < (swiglu ? t0 : t0 + t1 + t2);
  }
  __device__ __forceinline__ int chunks(int) const { return swiglu ? 2 * n_units : n_units; }
  __device__ __forceinline__ int part(int c) const { return swiglu && c >= n_units; }
  __device__ __forceinline__ const LatheTileMap* box(int item, int c, int& col, int& row) const {
    const int p = part(c);
    col = c - p * n_units;
    row = row0(item);
    return lathe_gemvm_pick(swiglu ? p : seg(item), m0, m1, m2);
  }
  __device__ __forceinline__ void done(int item, int r, float v0, float v1) const {
    if (swiglu) y0[row0(item) + r] = lathe_swiglu(v0 * xscale, v1 * xscale);
    else lathe_gemvm_pick(seg(item), y0, y1, y2)[row0(item) + r] = v0 * xscale;
  }
  __device__ __forceinline__ void before_wait() const {}
  __device__ __forceinline__ void after_wait() const {}
  __device__ __forceinline__ void finish(uint8_t*) const {}
};

// Fills: the ring's first fills asked for before the programmatic-launch wait (gemv_decode.cuh), the
// kernel's own count: LATHE_GEMV1_BEFORE_WAIT, or LATHE_GEMVM_EARLY_BEFORE_WAIT in the _early kernels.
// (A count chosen at run time from nx, a branch between two unrolled runs, cost the norming products:
// docs/perf.md, l4.)
template <class FA, class FB, int C, bool ByBlock = false, bool Tiles = false, int Fills = LATHE_GEMV1_BEFORE_WAIT,
          bool XFixed = false>
__device__ __forceinline__ void lathe_gemvm_body(const uint8_t* w0, const uint8_t* w1, const uint8_t* w2, float* y0,
                                                 float* y1, float* y2, long long rb0, long long rb1, long long rb2,
                                                 int n0, int n1, int n2, int b_mask, int swiglu, const int8_t* xq,
                                                 int k, int group, int early, const float* nx, const float* ny,
                                                 const float* nw, float eps, float* nsum, int8_t* qout,
                                                 const float* xparts = nullptr, int n_parts = 0,
                                                 const lathe_grid* grid = nullptr,
                                                 const LatheTileMap* const* maps = nullptr) {
  extern __shared__ uint4 lathe_gemvm_smem[];
  __shared__ float2 partial[2][LATHE_GEMV1_WARPS];
  __shared__ __align__(8) unsigned long long ring_bars[LATHE_GEMV1_WARPS][LATHE_GEMV1_STAGES];
  LATHE_BLOCK_STAMPS(stamps);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const unsigned mbar = static_cast<unsigned>(__cvta_generic_to_shared(ring_bars[warp]));
  lathe_gemvm_list<FA, FB> L;
  L.n0 = n0;
  L.n1 = n1;
  L.b_mask = b_mask;
  L.swiglu = swiglu;
  L.units_a = k / FA::unit_values;
  L.units_b = k / FB::unit_values;
  L.nc_a = (L.units_a + FA::chunk_units - 1) / FA::chunk_units;
  L.nc_b = (L.units_b + FB::chunk_units - 1) / FB::chunk_units;
  const int n_items = swiglu ? n0 : n0 + n1 + n2;

  uint8_t* stage = reinterpret_cast<uint8_t*>(lathe_gemvm_smem) + warp * (LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT);
  uint8_t* sx = reinterpret_cast<uint8_t*>(lathe_gemvm_smem) + LATHE_GEMV1_WARPS * LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT;
  const int x_level_bytes = k * (C == 2 ? 2 : 1);
  const int4* sq1 = reinterpret_cast<const int4*>(sx);
  const int4* sq2 = reinterpret_cast<const int4*>(sx + k);
  const float4* sds = reinterpret_cast<const float4*>(sx + x_level_bytes);

  const int groups_per_block = LATHE_GEMV1_WARPS / group, sub = warp % group;
  const int n_groups = gridDim.x * groups_per_block;
  const int g0 = blockIdx.x * groups_per_block + warp / group;
  // ByBlock (lathe_gemvm_*_quantizing: gate/up's output quantized into qout in the epilogue; the
  // launcher takes it only with swiglu, n0 % 32 == 0 and every block owning rows): dealt by block.
  const auto D = lathe_gemvm_deal<ByBlock>::make(g0, n_groups, warp / group, groups_per_block, n_items);

  // Fills ring slot s with (or, issue == false, only locates) chunk c of item; returns the staged
  // chunk's head (gemv_decode.cuh's bulk ring).
  auto chunk = [&](int item, int c, int s, bool issue) -> int {
    const lathe_gemvm_at a = L.locate(D.row(item), c);
    const uint8_t* w = lathe_gemvm_pick(a.seg, w0, w1, w2);
    const long long rb = lathe_gemvm_pick(a.seg, rb0, rb1, rb2);
    uint8_t* slot = stage + s * LATHE_GEMV1_SLOT;
    if (L.is_b(a.seg)) return lathe_ring_fill<FB>(w, rb, L.units_b, a.row, a.c, slot, mbar, s, issue);
    return lathe_ring_fill<FA>(w, rb, L.units_a, a.row, a.c, slot, mbar, s, issue);
  };

  // The norm's weights (a constant) before any wait: after it they would be one more round trip on
  // the path (they are read after the block's sum of squares, behind its barriers).
  float4 norm_w[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    norm_w[j] = nx && nw && i < (k >> 2) ? reinterpret_cast<const float4*>(nw)[i] : make_float4(1.0f, 1.0f, 1.0f, 1.0f);
  }

  __shared__ float norm_inv;  // xparts: the norm's factor, formed by warp 0 as x is staged
  __shared__ float norm_scratch[LATHE_GEMV1_WARPS];  // nx: the warps' sums of squares
  float xscale = 1.0f;        // ... which every row's sums are multiplied by (1: x is h itself)
  auto stage_x = [&](auto&& late) {  // late(): LATHE_GEMV1_LATE's fills, once x's reads are asked for
    LATHE_STAMP_AT(stamps, 1);  // the wait has returned (the caller's next statement after it)
    if (nx) {
      // The norm in the prologue: s = x + y, h = s / rms(s) * w (add_rms_norm's formula; its sum of
      // squares in another order), as s * w quantized into shared memory, 8 threads a 32-value block,
      // and the factor 1 / rms(s) on the rows' sums (xscale). Block 0 writes s (the next residual:
      // its own buffer, as the other blocks still read x). k % 128 == 0, k <= 4 * 4 * blockDim.x (the
      // launcher checks).
      // XFixed (the _fixed kernels): x is the sum itself in fixed point (int64 in units of 2^-32, the
      // feed-forward launch's sum: ffn_split.cuh), converted by lathe_fix_to_float; y unused.
      [[maybe_unused]] const float4* x4 = reinterpret_cast<const float4*>(nx);
      [[maybe_unused]] const float4* y4 = reinterpret_cast<const float4*>(ny);
      [[maybe_unused]] const longlong2* f2 = reinterpret_cast<const longlong2*>(nx);
      const int n4 = k >> 2;
      float4 sv[4];
      float ss = 0.0f;
      [[maybe_unused]] auto fixed4 = [](longlong2 lo, longlong2 hi) {
        return make_float4(lathe_fix_to_float(lo.x), lathe_fix_to_float(lo.y), lathe_fix_to_float(hi.x),
                           lathe_fix_to_float(hi.y));
      };
#if LATHE_GEMV1_LATE
      [[maybe_unused]] float4 xv[4], yv[4];
      [[maybe_unused]] longlong2 fv[4][2];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int i = threadIdx.x + j * blockDim.x;
        if (i < n4) {
          if constexpr (XFixed) {
            fv[j][0] = f2[2 * i];
            fv[j][1] = f2[2 * i + 1];
          } else {
            xv[j] = x4[i];
            yv[j] = y4[i];
          }
        }
      }
      late();
#endif
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int i = threadIdx.x + j * blockDim.x;
        if (i < n4) {
#if LATHE_GEMV1_LATE
          if constexpr (XFixed) {
            sv[j] = fixed4(fv[j][0], fv[j][1]);
          } else {
            const float4 a = xv[j], b = yv[j];
            sv[j] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
          }
#else
          if constexpr (XFixed) {
            sv[j] = fixed4(f2[2 * i], f2[2 * i + 1]);
          } else {
            const float4 a = x4[i], b = y4[i];
            sv[j] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
          }
#endif
          ss += sv[j].x * sv[j].x + sv[j].y * sv[j].y + sv[j].z * sv[j].z + sv[j].w * sv[j].w;
          if (blockIdx.x == 0) reinterpret_cast<float4*>(nsum)[i] = sv[j];
        }
      }
      LATHE_STAMP_X(0);  // this thread's loads landed (its sum of squares)
      // The factor 1 / rms(s) is left to the rows' sums (xscale, as after a norm epilogue: the
      // products are linear in x, and a block's int8 levels do not depend on it), so h = s * w is
      // quantized at once, beside the warps' sums of squares, which meet after the barrier below: the
      // block sum's two barriers are off x's path.
      ss = lathe_warp_sum(ss);
      if (lane == 0) norm_scratch[warp] = ss;
      LATHE_STAMP_X(1);  // the warp's sum
      int8_t* q1 = reinterpret_cast<int8_t*>(sx);
      float4* ds = reinterpret_cast<float4*>(sx + x_level_bytes);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int i = threadIdx.x + j * blockDim.x;  // whole warps: n4 % 32 == 0
        if (i < n4) {
          const float4 wv = norm_w[j];
          const float4 h = make_float4(sv[j].x * wv.x, sv[j].y * wv.y, sv[j].z * wv.z, sv[j].w * wv.w);
          lathe_quantize_block32_part(h, C == 2, q1 + 4 * i, q1 + k + 4 * i, ds + (i >> 3));
        }
      }
      LATHE_STAMP_X(2);  // this thread's quantization written
    } else {
      const int n16 = (x_level_bytes + k / 2) >> 4;
      for (int i = threadIdx.x; i < n16; i += blockDim.x) lathe_gemv1_cp16(sx + 16 * i, xq + 16 * i);
      lathe_gemv1_commit();
      // xparts (norm_epilogue): x is s * w's int8 form, made by the product before, whose blocks left
      // their shares of s's sum of squares; warp 0 adds them (lane-strided, then the warp's tree: a
      // fixed order) while x's lines land, and every row's sum is scaled by the norm's factor as it is
      // written (xscale: linear in x, so the same as scaling x's scales, in one multiplication a row).
      float ps = 0.0f;
      if (xparts && warp == 0)
        for (int i = lane; i < n_parts; i += 32) ps += xparts[i];
#if LATHE_GEMV1_LATE
      late();
#endif
      lathe_gemv1_wait<0>();
      LATHE_STAMP_X(0);  // this thread's lines landed
      if (xparts && warp == 0) {
        ps = lathe_warp_sum(ps);
        if (lane == 0) norm_inv = rsqrtf(ps / float(k) + eps);
      }
    }
    __syncthreads();  // x is in place for every warp (and the norm's factor, with xparts)
    if (xparts) xscale = norm_inv;
    if (nx) {  // the block sum's last step (lathe_block_sum's order), in every warp
      const float t = lathe_warp_sum(lane < static_cast<int>(blockDim.x >> 5) ? norm_scratch[lane] : 0.0f);
      xscale = rsqrtf(t / float(k) + eps);
    }
    LATHE_STAMP_AT(stamps, 2);
    LATHE_STAMP_FIRST(stamps, D.first < D.count, lathe_ring_wait(mbar, 0, 0));
  };

  // Q2_K's to Q5_K's tiles (the lathe_gemvm_t_* kernels: every segment FA, swiglu < 2; the launcher checks).
  if constexpr (Tiles) {
    lathe_gemvm_tiles<ByBlock> T{maps[0], maps[1], maps[2], y0, y1, y2, n0 / LATHE_GEMV1T_ROWS, n1 / LATHE_GEMV1T_ROWS,
                                 n2 / LATHE_GEMV1T_ROWS, n0, swiglu, k / 256, xscale};
    using TF = typename lathe_gemv1t_fmt_of<FA>::type;
    lathe_gemv1t_run<TF, C>(T, stage_x, k, early, grid);  // x where the row walk has it
    if constexpr (ByBlock) lathe_gemvm_quantize_owned<C>(y0, qout, n0);
    LATHE_STAMP_END(stamps, w0, n_items, k);
    return;
  }

  // swiglu == 2, gate and up of one format: paired products (gemv_decode.cuh's lathe_gemv1_pair_ring),
  // item o the rows o of gate (A) and up (B), cut into half chunks, each x block a lane reads serving
  // both (gemv_multi_launch.cpp picks them where a row's chunks would leave slots part empty).
  if (swiglu == 2) {  // the launcher asks for pairs only where gate and up share a format
    if constexpr (lathe_gemvm_list<FA, FB>::mixed) {
      if (L.is_b(0)) {
        lathe_gemvm_swiglu_pairs<FB, C, Fills>(w0, w1, y0, rb0, k, group, sub, D, early, stage, mbar, sx,
                                               x_level_bytes, partial, grid, stage_x, xscale);
        if constexpr (ByBlock) lathe_gemvm_quantize_owned<C>(y0, qout, n0);
        LATHE_STAMP_END(stamps, w0, n_items, k);
        return;
      }
    }
    lathe_gemvm_swiglu_pairs<FA, C, Fills>(w0, w1, y0, rb0, k, group, sub, D, early, stage, mbar, sx, x_level_bytes,
                                           partial, grid, stage_x, xscale);
    if constexpr (ByBlock) lathe_gemvm_quantize_owned<C>(y0, qout, n0);
    LATHE_STAMP_END(stamps, w0, n_items, k);
    return;
  }

  // The loader runs STAGES - 1 chunks ahead along this warp's sequence: items g0, g0 + n_groups, ...,
  // chunks sub, sub + group, ... of each (nothing is filled past the end).
  lathe_ring_init(mbar);
  if (!early) lathe_step_wait(grid);
  int ld_item = D.first, ld_c = sub;
  auto fill = [&](int s) {
    if (ld_item < D.count) chunk(ld_item, ld_c, s, true);
    ld_c += group;
    if (ld_item < D.count && ld_c >= L.chunks(D.row(ld_item))) {
      ld_c = sub;
      ld_item += D.step;
    }
  };
  for (int s = 0; s < Fills; ++s) fill(s);
  // The ring's first Fills fills requested (gemv_decode.cuh); with all of them,
  // lane i < early - 1 asks L2 for the warp's chunk i past the ring. Then wait for the kernel that
  // wrote x, stage x and, once its reads are asked for, the ring's other fills.
  // Lane i < n asks L2 for the warp's chunk i past the ring (the loader's walk i steps on).
  auto prefetch_past_ring = [&](int n) {
    int pf_item = ld_item, pf_c = ld_c;
    for (int i = 0; i < lane && pf_item < D.count; ++i) {
      pf_c += group;
      if (pf_c >= L.chunks(D.row(pf_item))) {
        pf_c = sub;
        pf_item += D.step;
      }
    }
    if (lane < n && pf_item < D.count) {
      const lathe_gemvm_at a = L.locate(D.row(pf_item), pf_c);
      const uint8_t* w = lathe_gemvm_pick(a.seg, w0, w1, w2);
      const long long rb = lathe_gemvm_pick(a.seg, rb0, rb1, rb2);
      if (L.is_b(a.seg))
        lathe_gemv1_prefetch_chunk<FB>(w, rb, L.units_b, a.row, a.c);
      else
        lathe_gemv1_prefetch_chunk<FA>(w, rb, L.units_a, a.row, a.c);
    }
  };
  if (early) {
    if (!LATHE_GEMV1_LATE) prefetch_past_ring(early - 1);
    lathe_step_wait(grid);
  }
  stage_x([&] {
    for (int s = Fills; s < LATHE_GEMV1_STAGES - 1; ++s) fill(s);
    prefetch_past_ring(LATHE_GEMV1_L2_AFTER_X);
  });

  int item = D.first, c = sub, parity = 0;
  unsigned taken = 0;  // chunks consumed: chunk `taken` is fill taken / STAGES of slot taken % STAGES
  float acc0 = 0.0f, acc1 = 0.0f;
  while (item < D.count) {
    const int slot = static_cast<int>(taken % LATHE_GEMV1_STAGES);
    lathe_ring_wait(mbar, slot, (taken / LATHE_GEMV1_STAGES) & 1);
    __syncwarp();  // every lane is past the previous chunk: its slot, refilled below, is free
    const int refill = static_cast<int>((taken + LATHE_GEMV1_STAGES - 1) % LATHE_GEMV1_STAGES);
    if (ld_item < D.count) chunk(ld_item, ld_c, refill, true);
    ld_c += group;
    if (ld_item < D.count && ld_c >= L.chunks(D.row(ld_item))) {
      ld_c = sub;
      ld_item += D.step;
    }

    const int row = D.row(item);
    const lathe_gemvm_at a = L.locate(row, c);
    const uint8_t* s = stage + slot * LATHE_GEMV1_SLOT + chunk(item, c, slot, false);
    const float t = L.is_b(a.seg) ? lathe_gemvm_chunk_dot<FB, C>(s, L.units_b, a.c, sq1, sq2, sds)
                                  : lathe_gemvm_chunk_dot<FA, C>(s, L.units_a, a.c, sq1, sq2, sds);
    if (swiglu && a.seg == 1) acc1 += t;
    else acc0 += t;
    ++taken;

    c += group;
    if (c >= L.chunks(row)) {  // the group's item is done
      float v0 = lathe_warp_sum(acc0), v1 = swiglu ? lathe_warp_sum(acc1) : 0.0f;
      acc0 = acc1 = 0.0f;
      const bool writer = lathe_gemv_group_sum2(partial, parity, warp, group, sub, lane, v0, v1);
      if (writer) {
        if (swiglu) {
          y0[row] = lathe_swiglu(v0 * xscale, v1 * xscale);
        } else {
          const lathe_gemvm_at e = L.locate(row, 0);
          lathe_gemvm_pick(e.seg, y0, y1, y2)[e.row] = v0 * xscale;
        }
      }
      c = sub;
      item += D.step;
    }
  }
  lathe_ring_release(mbar);
  if constexpr (ByBlock) lathe_gemvm_quantize_owned<C>(y0, qout, n0);
  LATHE_STAMP_END(stamps, w0, n_items, k);
}

// Kernels lathe_gemvm_<FA>[_<FB>]_<contract>[_quantizing][_early]: one format for every segment, or Q4_K
// with Q6_K segments (Q4_K_M checkpoints mix them). Segments past the count have n = 0. Each in four
// forms of one parameter list: dealt (qout unused) or _quantizing (by block, gate/up's output quantized
// into qout in its epilogue), each also as _early, which asks for LATHE_GEMVM_EARLY_BEFORE_WAIT of the
// ring's first fills before the wait instead of LATHE_GEMV1_BEFORE_WAIT (the same sums: the launcher
// takes it where x is a copy, and where the plan asks for it, gemv_multi_launch.h).
#define LATHE_GEMVM_FORM(NAME, FA, FB, C, CNAME, SUFFIX, BY_BLOCK, FILLS, XFIXED)                                 \
  extern "C" __global__ void __launch_bounds__(32 * LATHE_GEMV1_WARPS, 1) lathe_gemvm_##NAME##_##CNAME##SUFFIX( \
      const uint8_t* w0, const uint8_t* w1, const uint8_t* w2, float* y0, float* y1, float* y2, long long rb0,  \
      long long rb1, long long rb2, int n0, int n1, int n2, int b_mask, int swiglu, const int8_t* xq, int k,     \
      int group, int early, const float* nx, const float* ny, const float* nw, float eps, float* nsum,           \
      int8_t* qout, const float* xparts, int n_parts) {                                                          \
    lathe_gemvm_body<lathe_gemv1_##FA, lathe_gemv1_##FB, C, BY_BLOCK, false, FILLS, XFIXED>(                     \
        w0, w1, w2, y0, y1, y2, rb0, rb1, rb2, n0, n1, n2, b_mask, swiglu, xq, k, group, early, nx, ny, nw, eps, \
        nsum, BY_BLOCK ? qout : nullptr, xparts, n_parts);                                                       \
  }
#define LATHE_GEMVM_KERNEL(NAME, FA, FB, C, CNAME)                                            \
  LATHE_GEMVM_FORM(NAME, FA, FB, C, CNAME, , false, LATHE_GEMV1_BEFORE_WAIT, false)             \
  LATHE_GEMVM_FORM(NAME, FA, FB, C, CNAME, _quantizing, true, LATHE_GEMV1_BEFORE_WAIT, false)   \
  LATHE_GEMVM_FORM(NAME, FA, FB, C, CNAME, _early, false, LATHE_GEMVM_EARLY_BEFORE_WAIT, false) \
  LATHE_GEMVM_FORM(NAME, FA, FB, C, CNAME, _quantizing_early, true, LATHE_GEMVM_EARLY_BEFORE_WAIT, false)

#define LATHE_GEMVM_CONTRACTS(NAME, FA, FB)    \
  LATHE_GEMVM_KERNEL(NAME, FA, FB, 1, int8)    \
  LATHE_GEMVM_KERNEL(NAME, FA, FB, 2, int8x2)

LATHE_GEMVM_CONTRACTS(q8_0, q8_0, q8_0)
LATHE_GEMVM_CONTRACTS(q8_0_ef, q8_0_ef, q8_0_ef)
LATHE_GEMVM_CONTRACTS(q4_k, q4_k, q4_k)
LATHE_GEMVM_CONTRACTS(q6_k, q6_k, q6_k)
LATHE_GEMVM_CONTRACTS(q4_k_q6_k, q4_k, q6_k)
LATHE_GEMVM_CONTRACTS(q5_k, q5_k, q5_k)
LATHE_GEMVM_CONTRACTS(q5_k_q6_k, q5_k, q6_k)
LATHE_GEMVM_CONTRACTS(q2_k, q2_k, q2_k)
LATHE_GEMVM_CONTRACTS(q3_k, q3_k, q3_k)

// The Q8_0 row kernels' _fixed_early form (fusion rule ffn_split: the launch after the feed-forward
// launch, which made the sum in fixed point): the norm in the prologue reads x as int64 in units of
// 2^-32 (y unused), the early form's fills; kernels of their own, so the others' code is what it was.
LATHE_GEMVM_FORM(q8_0, q8_0, q8_0, 1, int8, _fixed_early, false, LATHE_GEMVM_EARLY_BEFORE_WAIT, true)
LATHE_GEMVM_FORM(q8_0, q8_0, q8_0, 2, int8x2, _fixed_early, false, LATHE_GEMVM_EARLY_BEFORE_WAIT, true)
LATHE_GEMVM_FORM(q8_0_ef, q8_0_ef, q8_0_ef, 1, int8, _fixed_early, false, LATHE_GEMVM_EARLY_BEFORE_WAIT, true)
LATHE_GEMVM_FORM(q8_0_ef, q8_0_ef, q8_0_ef, 2, int8x2, _fixed_early, false, LATHE_GEMVM_EARLY_BEFORE_WAIT, true)

// Q2_K's to Q5_K's tiles: lathe_gemvm_t_<fmt>_<contract>[_quantizing], the same parameters (group unused: a
// block takes a tile whole) and m0..m2, the segments' tensor maps (gemv_decode_tiles.cuh; a segment past the
// count: any map, unread). Kernels of their own, so the row kernels' code is what it was without them.
#define LATHE_GEMVM_TILE_FORM(FMT, C, CNAME, SUFFIX, BY_BLOCK)                                                   \
  extern "C" __global__ void __launch_bounds__(32 * LATHE_GEMV1_WARPS, 1) lathe_gemvm_t_##FMT##_##CNAME##SUFFIX( \
      const uint8_t* w0, const uint8_t* w1, const uint8_t* w2, float* y0, float* y1, float* y2, long long rb0,  \
      long long rb1, long long rb2, int n0, int n1, int n2, int b_mask, int swiglu, const int8_t* xq, int k,     \
      int group, int early, const float* nx, const float* ny, const float* nw, float eps, float* nsum,           \
      int8_t* qout, const float* xparts, int n_parts, const __grid_constant__ LatheTileMap m0,                  \
      const __grid_constant__ LatheTileMap m1, const __grid_constant__ LatheTileMap m2) {                       \
    const LatheTileMap* maps[3] = {&m0, &m1, &m2};                                                             \
    lathe_gemvm_body<lathe_gemv1_##FMT, lathe_gemv1_##FMT, C, BY_BLOCK, true>(                                 \
        w0, w1, w2, y0, y1, y2, rb0, rb1, rb2, n0, n1, n2, b_mask, swiglu, xq, k, group, early, nx, ny, nw, eps, \
        nsum, BY_BLOCK ? qout : nullptr, xparts, n_parts, nullptr, maps);                                        \
  }
LATHE_GEMVM_TILE_FORM(q4_k, 1, int8, , false)
LATHE_GEMVM_TILE_FORM(q4_k, 1, int8, _quantizing, true)
LATHE_GEMVM_TILE_FORM(q4_k, 2, int8x2, , false)
LATHE_GEMVM_TILE_FORM(q4_k, 2, int8x2, _quantizing, true)
LATHE_GEMVM_TILE_FORM(q2_k, 1, int8, , false)
LATHE_GEMVM_TILE_FORM(q2_k, 1, int8, _quantizing, true)
LATHE_GEMVM_TILE_FORM(q2_k, 2, int8x2, , false)
LATHE_GEMVM_TILE_FORM(q2_k, 2, int8x2, _quantizing, true)
LATHE_GEMVM_TILE_FORM(q3_k, 1, int8, , false)
LATHE_GEMVM_TILE_FORM(q3_k, 1, int8, _quantizing, true)
LATHE_GEMVM_TILE_FORM(q3_k, 2, int8x2, , false)
LATHE_GEMVM_TILE_FORM(q3_k, 2, int8x2, _quantizing, true)
LATHE_GEMVM_TILE_FORM(q5_k, 1, int8, , false)
LATHE_GEMVM_TILE_FORM(q5_k, 1, int8, _quantizing, true)
LATHE_GEMVM_TILE_FORM(q5_k, 2, int8x2, , false)
LATHE_GEMVM_TILE_FORM(q5_k, 2, int8x2, _quantizing, true)
