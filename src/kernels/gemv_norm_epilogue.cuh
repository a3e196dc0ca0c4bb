// The sum and the RMS norm's weighting after a decode product, in its epilogue (fusion rule
// norm_epilogue): the decode GEMV of o (or down) whose rows are also the residual sum that the next
// merged products (gate/up, or the next layer's q/k/v) norm and read.
//
// The merged products read x = s / rms(s) * w with s = y + resid. The int8 contracts' levels of a
// 32-value block are its values over its largest one, so they do not depend on the factor 1 / rms(s):
// this launch quantizes h = s * w (quantize_act.cuh's layout: levels, d1, d2 and the block sum, all
// without the factor) and writes each block's share of the sum of squares of s; the reader adds the
// shares, takes inv = rsqrt(sum / n + eps) as add_rms_norm does and multiplies each row's sums by it
// (gemv_multi.cuh: the products are linear in x). So the reader copies x (~0.6 us) instead of adding,
// norming and quantizing the whole row in every block (~3.1 us, docs/perf.md).
//
// The rows are dealt by whole 32-row blocks (lathe_gemv1_row_walk's ByBlock form): block b owns rows
// 32 b .., 32 (b + gridDim.x) .., at most LATHE_NORM_EPI_ROWS of them. The warp that finishes row o
// keeps its value in shared memory; once the block's rows are done (finish), warp j < 4 forms s for
// the block's j-th 32-row block (the next residual, written) and quantizes h = s * w
// (lathe_quantize_block32: the quantizer's bytes for h) while warp j + 4 sums its squares, the four
// sums added in order into parts[blockIdx.x]. The product's own output y is not written.
// Results against the held-back form (the product, then the merged kernel with the norm in its
// prologue): s is the same bits (the same row sums, the same f32 add); x's levels and scales are the
// quantization of s * w instead of s * inv * w, and the squares are added in another order, so they
// differ only where that rounding moves a level (docs/numerics.md). Deterministic: every order of
// additions is fixed.
// Launch (norm_epilogue_launch.cpp): the decode kernel's (512 threads, its dynamic shared memory), one
// block per owned 32-row block group (at most the SM count).

#define LATHE_NORM_EPI_ROWS 128  // a block's rows at most: four 32-row blocks (the launcher keeps to it)

// What both forms of the epilogue write, and from what: the residual and the sum [n_out], the norm's
// weight, h's int8 form (q2 used when two_words) and the parts.
struct lathe_norm_epi_out {
  const float *resid, *norm_w;
  float* sum;
  int8_t *q1, *q2;
  float4* ds;
  int two_words;
  float* parts;
};

struct lathe_norm_epi : lathe_norm_epi_out {
  static constexpr bool kWarp = true;
  static constexpr bool kReleasesLate = false;
  int n_out;
  float* sv;   // [LATHE_NORM_EPI_ROWS]: the block's rows' values, slot i for row lathe_gemv1_block_row(i)
  float* sq;   // [LATHE_NORM_EPI_ROWS / 32]: each 32-row block's sum of squares
  float wv;    // the norm weight of this thread's slot (before_wait: a constant)
  float rv;    // its residual (after_wait: the kernels before may have written it)

  // Threads t and t + LATHE_NORM_EPI_ROWS both take slot t: the first quantize its row, the second
  // sum its square, at once (finish).
  __device__ __forceinline__ int slot() const { return threadIdx.x % LATHE_NORM_EPI_ROWS; }
  __device__ __forceinline__ bool has_slot() const {
    return static_cast<int>(threadIdx.x) < 2 * LATHE_NORM_EPI_ROWS && lathe_gemv1_block_row(slot()) < n_out;
  }
  __device__ __forceinline__ void before_wait(int, int, int) {
    wv = has_slot() ? norm_w[lathe_gemv1_block_row(slot())] : 0.0f;
  }
  __device__ __forceinline__ void after_wait() { rv = has_slot() ? resid[lathe_gemv1_block_row(slot())] : 0.0f; }
  // Row o = 32 (b + gridDim.x j) + i is slot 32 j + i. Only kept: the rows' work waits for finish().
  __device__ __forceinline__ void keep(int o, float v) { sv[32 * ((o >> 5) / static_cast<int>(gridDim.x)) + (o & 31)] = v; }
  __device__ __forceinline__ void row(int o, float v) {
    if ((threadIdx.x & 31) == 0) keep(o, v);
  }
  // Warps 0-3: warp j forms s for the block's j-th 32-row block (lane i its row i), writes it and
  // quantizes h = s * w (whole warps: a row block is in or out whole). Warps 4-7 at the same time: the
  // same s, squared and summed by warp, then the warps' sums in order into the block's part. No
  // barrier but the one that waits for every row and the second group's own.
  __device__ __forceinline__ void finish(uint8_t*) {
    __syncthreads();  // every row of the block is kept
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    constexpr int kBlocks = LATHE_NORM_EPI_ROWS / 32;
    if (warp >= 2 * kBlocks) return;
    const bool mine = has_slot();
    const float s = mine ? sv[slot()] + rv : 0.0f;  // resid + y, as the add (f32 addition commutes)
    if (warp < kBlocks) {
      if (mine) {
        const int o = lathe_gemv1_block_row(slot());
        sum[o] = s;
        lathe_quantize_block32(s * wv, o, two_words, q1, q2, ds);
      }
      return;
    }
    const float ss = lathe_warp_sum(s * s);
    if (lane == 0) sq[warp - kBlocks] = ss;
    asm volatile("bar.sync 1, %0;\n" ::"r"(32 * kBlocks) : "memory");  // the row walk's barriers are done
    if (threadIdx.x == 32 * kBlocks) {
      float total = 0.0f;
      for (int j = 0; j < kBlocks; ++j) total += sq[j];
      parts[blockIdx.x] = total;
    }
  }
};

// W . x (x's int8 form, one row) with the sum and the norm's weighting in the epilogue. Arguments as
// lathe_gemv1_* (no y), then the epilogue's: the residual and the sum [n_out] f32, the norm's weight,
// h's int8 form (q2 used when two_words) and the blocks' parts [gridDim.x].
template <class F, int C>
__device__ __forceinline__ void lathe_gemv1_norm_body(const uint8_t* w, long long row_bytes, const int8_t* xq, int k,
                                                      int n_out, int group, int early, const float* resid, float* sum,
                                                      const float* norm_w, int8_t* q1, int8_t* q2, float4* ds,
                                                      int two_words, float* parts) {
  __shared__ float rows_kept[LATHE_NORM_EPI_ROWS], squares[LATHE_NORM_EPI_ROWS / 32];
  lathe_norm_epi epi{{resid, norm_w, sum, q1, q2, ds, two_words, parts}, n_out, rows_kept, squares, 0.0f, 0.0f};
  lathe_gemv1_row_walk<F, C, true>(w, row_bytes, xq, epi, k, n_out, group, early, nullptr, nullptr);
}

#define LATHE_GEMV1_NORM_KERNEL(FMT, C, CNAME)                                                                   \
  extern "C" __global__ void __launch_bounds__(32 * LATHE_GEMV1_WARPS, 1) lathe_gemv1_norm_##FMT##_##CNAME(       \
      const uint8_t* w, long long row_bytes, const int8_t* xq, int k, int n_out, int group, int early,            \
      const float* resid, float* sum, const float* norm_w, int8_t* q1, int8_t* q2, float4* ds, int two_words,     \
      float* parts) {                                                                                            \
    lathe_gemv1_norm_body<lathe_gemv1_##FMT, C>(w, row_bytes, xq, k, n_out, group, early, resid, sum, norm_w, q1, \
                                                q2, ds, two_words, parts);                                        \
  }

LATHE_GEMV1_NORM_KERNEL(q8_0, 1, int8)
LATHE_GEMV1_NORM_KERNEL(q8_0, 2, int8x2)
LATHE_GEMV1_NORM_KERNEL(q8_0_ef, 1, int8)
LATHE_GEMV1_NORM_KERNEL(q8_0_ef, 2, int8x2)
LATHE_GEMV1_NORM_KERNEL(q4_k, 1, int8)
LATHE_GEMV1_NORM_KERNEL(q4_k, 2, int8x2)
LATHE_GEMV1_NORM_KERNEL(q5_k, 1, int8)
LATHE_GEMV1_NORM_KERNEL(q5_k, 2, int8x2)
LATHE_GEMV1_NORM_KERNEL(q2_k, 1, int8)
LATHE_GEMV1_NORM_KERNEL(q2_k, 2, int8x2)
LATHE_GEMV1_NORM_KERNEL(q3_k, 1, int8)
LATHE_GEMV1_NORM_KERNEL(q3_k, 2, int8x2)
LATHE_GEMV1_NORM_KERNEL(q6_k, 1, int8)
LATHE_GEMV1_NORM_KERNEL(q6_k, 2, int8x2)

// The same epilogue with the rows dealt one by one (the row walk's dealt form, every block streaming),
// for widths whose 32-row blocks are too few for the SMs (qwen3-0.6b's 1,024 rows: 32 blocks of 132);
// taken only with LATHE_NORM_EPILOGUE=dealt (qwen3-0.6b measured 4% slower with it: docs/perf.md).
// The warp that finishes row o writes s = y + resid to sum[o], then counts it in its 32-row block's
// count (count[o / 32], zero before the launch); the warp whose count is the block's 32nd reads the
// block's 32 values of s back (L2), quantizes h = s * w (lane i row i) and writes the block's sum of
// squares to parts[o / 32] (n_out / 32 parts, lane order: deterministic), and leaves the count zero
// for the next launch. So s is the plain product's row sums plus resid, the same bits as the held-back
// form where that product walks rows one by one; the parts are another grouping of the squares.
struct lathe_norm_epi_dealt : lathe_norm_epi_out {
  static constexpr bool kWarp = true;
  static constexpr bool kReleasesLate = false;
  unsigned* count;
  __device__ __forceinline__ void before_wait(int, int, int) const {}
  __device__ __forceinline__ void after_wait() const {}
  __device__ __forceinline__ void row(int o, float v) const {
    const int lane = threadIdx.x & 31;
    unsigned seen = 0;
    if (lane == 0) {
      sum[o] = v + resid[o];
      __threadfence();  // s before its count
      seen = atomicAdd(count + (o >> 5), 1u);
    }
    if (__shfl_sync(0xffffffffu, seen, 0) != 31) return;
    __threadfence();  // every other row's s, counted, before their reads
    const int r = (o & ~31) + lane;
    const float s = __ldcg(sum + r);
    lathe_quantize_block32(s * norm_w[r], r, two_words, q1, q2, ds);
    const float ss = lathe_warp_sum(s * s);
    if (lane == 0) {
      parts[o >> 5] = ss;
      count[o >> 5] = 0;  // all 32 rows counted: no other warp touches it in this launch
    }
  }
  __device__ __forceinline__ void finish(uint8_t*) const {}
};

template <class F, int C>
__device__ __forceinline__ void lathe_gemv1_normd_body(const uint8_t* w, long long row_bytes, const int8_t* xq, int k,
                                                       int n_out, int group, int early, const float* resid,
                                                       float* sum, const float* norm_w, int8_t* q1, int8_t* q2,
                                                       float4* ds, int two_words, float* parts, unsigned* count,
                                                       const float* xf) {
  lathe_norm_epi_dealt epi{{resid, norm_w, sum, q1, q2, ds, two_words, parts}, count};
  lathe_gemv1_row_walk<F, C>(w, row_bytes, xq, epi, k, n_out, group, early, xf, nullptr);
}

// Kernels lathe_gemv1_normd_<format>_<contract>: lathe_gemv1_norm_*'s parameters, the counts, and xf:
// where not 0, x's f32 row, quantized by every block as the plain decode kernel's quantizing row.
#define LATHE_GEMV1_NORMD_KERNEL(FMT, C, CNAME)                                                                   \
  extern "C" __global__ void __launch_bounds__(32 * LATHE_GEMV1_WARPS, 1) lathe_gemv1_normd_##FMT##_##CNAME(      \
      const uint8_t* w, long long row_bytes, const int8_t* xq, int k, int n_out, int group, int early,            \
      const float* resid, float* sum, const float* norm_w, int8_t* q1, int8_t* q2, float4* ds, int two_words,    \
      float* parts, unsigned* count, const float* xf) {                                                         \
    lathe_gemv1_normd_body<lathe_gemv1_##FMT, C>(w, row_bytes, xq, k, n_out, group, early, resid, sum, norm_w, q1, \
                                                 q2, ds, two_words, parts, count, xf);                           \
  }

LATHE_GEMV1_NORMD_KERNEL(q8_0, 1, int8)
LATHE_GEMV1_NORMD_KERNEL(q8_0, 2, int8x2)
LATHE_GEMV1_NORMD_KERNEL(q8_0_ef, 1, int8)
LATHE_GEMV1_NORMD_KERNEL(q8_0_ef, 2, int8x2)
LATHE_GEMV1_NORMD_KERNEL(q4_k, 1, int8)
LATHE_GEMV1_NORMD_KERNEL(q4_k, 2, int8x2)
LATHE_GEMV1_NORMD_KERNEL(q5_k, 1, int8)
LATHE_GEMV1_NORMD_KERNEL(q5_k, 2, int8x2)
LATHE_GEMV1_NORMD_KERNEL(q2_k, 1, int8)
LATHE_GEMV1_NORMD_KERNEL(q2_k, 2, int8x2)
LATHE_GEMV1_NORMD_KERNEL(q3_k, 1, int8)
LATHE_GEMV1_NORMD_KERNEL(q3_k, 2, int8x2)
LATHE_GEMV1_NORMD_KERNEL(q6_k, 1, int8)
LATHE_GEMV1_NORMD_KERNEL(q6_k, 2, int8x2)

// Q2_K's to Q6_K's products on tensor cores (gemv_decode_tiles.cuh) with the same epilogue: the tiles are halves
// of the block's own 32-row blocks, item i rows lathe_gemv1_block_row(16 i) ... (group: unused, the
// tile walk's blocks take a tile whole).
struct lathe_gemv1t_norm_tiles {
  static constexpr bool two_parts = false;
  lathe_norm_epi& epi;
  const LatheTileMap* map;
  int n_out, n_units;
  __device__ __forceinline__ int row0(int item) const { return lathe_gemv1_block_row(LATHE_GEMV1T_ROWS * item); }
  __device__ __forceinline__ int first(int, int j) const { return j; }
  __device__ __forceinline__ int step(int, int groups_per_block) const { return groups_per_block; }
  __device__ __forceinline__ bool has(int item) const { return row0(item) < n_out; }
  __device__ __forceinline__ int chunks(int) const { return n_units; }
  __device__ __forceinline__ int part(int) const { return 0; }
  __device__ __forceinline__ const LatheTileMap* box(int item, int c, int& col, int& row) const {
    col = c;
    row = row0(item);
    return map;
  }
  __device__ __forceinline__ void done(int item, int r, float v, float) { epi.keep(row0(item) + r, v); }
  __device__ __forceinline__ void before_wait() { epi.before_wait(0, 0, 0); }
  __device__ __forceinline__ void after_wait() { epi.after_wait(); }
  __device__ __forceinline__ void finish(uint8_t* smem) { epi.finish(smem); }
};

template <class F, int C>
__device__ __forceinline__ void lathe_gemv1t_norm_body(const LatheTileMap* wm, const int8_t* xq, int k,
                                                       int n_out, int group, int early, const float* resid, float* sum,
                                                       const float* norm_w, int8_t* q1, int8_t* q2, float4* ds,
                                                       int two_words, float* parts) {
  extern __shared__ uint4 lathe_gemv1_smem[];
  __shared__ float rows_kept[LATHE_NORM_EPI_ROWS], squares[LATHE_NORM_EPI_ROWS / 32];
  lathe_norm_epi epi{{resid, norm_w, sum, q1, q2, ds, two_words, parts}, n_out, rows_kept, squares, 0.0f, 0.0f};
  lathe_gemv1t_norm_tiles tiles{epi, wm, n_out, k / 256};
  uint8_t* sx = lathe_gemv1t_x<F>(lathe_gemv1_smem);
  lathe_gemv1t_run<F, C>(tiles, [&](auto&& late) { lathe_gemv1_stage_x<C>(sx, xq, nullptr, k, late); }, k, early);
}

#define LATHE_GEMV1T_NORM_KERNEL(FMT, C, CNAME)                                                             \
  extern "C" __global__ void __launch_bounds__(32 * LATHE_GEMV1_WARPS, 1) lathe_gemv1t_norm_##FMT##_##CNAME( \
      const uint8_t* w, long long row_bytes, const int8_t* xq, int k, int n_out, int group, int early,        \
      const float* resid, float* sum, const float* norm_w, int8_t* q1, int8_t* q2, float4* ds, int two_words, \
      float* parts, const __grid_constant__ LatheTileMap wm) {                                               \
    (void)w, (void)row_bytes;                                                                                \
    lathe_gemv1t_norm_body<lathe_gemv1t_fmt_##FMT, C>(&wm, xq, k, n_out, group, early, resid, sum, norm_w, q1, q2, ds, two_words,     \
                              parts);                                                                        \
  }

LATHE_GEMV1T_NORM_KERNEL(q4_k, 1, int8)
LATHE_GEMV1T_NORM_KERNEL(q4_k, 2, int8x2)
LATHE_GEMV1T_NORM_KERNEL(q2_k, 1, int8)
LATHE_GEMV1T_NORM_KERNEL(q2_k, 2, int8x2)
LATHE_GEMV1T_NORM_KERNEL(q3_k, 1, int8)
LATHE_GEMV1T_NORM_KERNEL(q3_k, 2, int8x2)
LATHE_GEMV1T_NORM_KERNEL(q5_k, 1, int8)
LATHE_GEMV1T_NORM_KERNEL(q5_k, 2, int8x2)
LATHE_GEMV1T_NORM_KERNEL(q6_k, 1, int8)
LATHE_GEMV1T_NORM_KERNEL(q6_k, 2, int8x2)
