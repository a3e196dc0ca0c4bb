// GEMV for decode and small batches: y[r][o] = sum_i W[o][i] * x[r][i] for up to 8 rows r, the
// weights read in place in their block format (gemv_blocks.cuh), in three numerics contracts:
//   C = 0 (f32):    x in f32; each weight dequantized exactly in registers; f32 FMAs.
//   C = 1 (int8):   x as blocks of 32 int8 levels q1 with scale d1 (quantize_act.cuh); per piece of 8
//                   values two __dp4a of the weight levels with q1, then scale * d1 * sum.
//   C = 2 (int8x2): as int8 plus a second word q2 (scale d2) quantizing the first's residual: two more
//                   __dp4a per piece. Formats with an offset add offset * (sum of the 32 x values),
//                   or, where the offset changes every 16 values (Q2_K: offset_by_piece), offset times
//                   each piece's sum of x from its levels (__dp4a with ones).
// Float weight formats (f32, f16, bf16) use f32 products in every contract (int contracts: with x
// rebuilt from its levels, d1 * q1 + d2 * q2).
//
// Launch shape (gemv_launch.cpp picks it): blocks of 4 warps. Streaming mode (split == 0, dense
// products with more rows than the GPU holds warps): a grid that fits on the GPU at once, each warp
// taking rows gw, gw + n_warps, ... and loading its next chunk while computing the current one.
// Otherwise `split` (1, 2 or 4) warps per output row, a block covering 4 / split rows; grid
// (ceil(n_out * split / 4), 1, tasks). A row is cut into chunks of `chunk_units` format units; the
// warps of a row take chunks round-robin. A warp streams its
// chunk with 16-byte loads, all issued before any is used (up to 9 per lane: 4.6 KB in flight per
// warp), into its own shared-memory stage, then decodes it piece by piece, lane l taking pieces l,
// l + 32, ... so x is read in contiguous runs (x stays in L1: the weights bypass it). Partial sums
// meet through shared memory in a fixed order: results are deterministic.
// Measured on the H200 (tests/test_gemv_gpu.cpp, TimingPrintsBandwidth): Q8_0 at one row reaches only
// 26-37% of the 4,630 GB/s read limit; the lanes' piece loop (one LDS/LDG chain per piece, not
// unrolled) and a ~6-9 us fixed cost per launch dominate. See gemv_launch.h for the next steps.
//
// Experts: when `ids` is given, W is a stack [n_expert][n_out][k] (expert_bytes apart) and ids is
// [n_rows][top_k]. Without `combine`, task z = r * top_k + j computes y[z] = x[xr] . W_e^T with
// e = ids[z] and xr = x_per_slot ? z : r. With `combine`, task z = r computes
// y[r] = sum_j route_w[r][j] * (x[xr] . W_e^T) over the top_k slots j (route_w null: weight 1).

#define LATHE_GEMV_WARPS 4
#define LATHE_GEMV_LOADS 9
#define LATHE_GEMV_MAX_ROWS 8

struct lathe_gemv_x {
  const float* f;      // [rows][k] f32 (contract 0)
  const int8_t* q1;    // [rows][k] levels (contracts 1, 2)
  const int8_t* q2;    // [rows][k] residual levels (contract 2)
  const float4* ds;    // [rows][k / 32]: d1, d2, sum of the 32 dequantized values, 0
  int k;
};

__device__ __forceinline__ float lathe_gemv_byte_f(uint32_t word, int i) {
  return lathe_gemv_i2f(lathe_gemv_sbyte(word, i));
}

// The 8 x values at vi of row r as f32: the f32 input, or rebuilt from the quantized levels.
template <int C>
__device__ __forceinline__ void lathe_gemv_x8(const lathe_gemv_x& x, int r, int vi, float* xv) {
  if constexpr (C == 0) {
    const float4* p = reinterpret_cast<const float4*>(x.f + r * x.k + vi);
    const float4 a = __ldg(p), b = __ldg(p + 1);
    xv[0] = a.x; xv[1] = a.y; xv[2] = a.z; xv[3] = a.w; xv[4] = b.x; xv[5] = b.y; xv[6] = b.z; xv[7] = b.w;
  } else {
    const float4 ds = __ldg(x.ds + r * (x.k >> 5) + (vi >> 5));
    const int2 a = __ldg(reinterpret_cast<const int2*>(x.q1 + r * x.k + vi));
    int2 b = make_int2(0, 0);
    if (C == 2) b = __ldg(reinterpret_cast<const int2*>(x.q2 + r * x.k + vi));
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t wa = static_cast<uint32_t>(i < 4 ? a.x : a.y), wb = static_cast<uint32_t>(i < 4 ? b.x : b.y);
      xv[i] = ds.x * lathe_gemv_byte_f(wa, i & 3);
      if (C == 2) xv[i] = fmaf(ds.y, lathe_gemv_byte_f(wb, i & 3), xv[i]);
    }
  }
}

// Adds piece p of unit u (values vi .. vi+7 of the row) times x to acc[r] for r < n_rows.
template <class F, int C>
__device__ __forceinline__ void lathe_gemv_piece_dot(const uint8_t* u, int p, int vi, const lathe_gemv_x& x,
                                                     int n_rows, float* acc) {
  if constexpr (F::is_float || C == 0) {
    float w[8];
    lathe_gemv_dequant8<F>(u, p, w);
#pragma unroll
    for (int r = 0; r < LATHE_GEMV_MAX_ROWS; ++r) {
      if (r < n_rows) {
        float xv[8];
        lathe_gemv_x8<C>(x, r, vi, xv);
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[r] = fmaf(w[i], xv[i], acc[r]);
      }
    }
  } else {
    int q0, q1;
    float scale, offset;
    F::piece(u, p, q0, q1, scale, offset);
#pragma unroll
    for (int r = 0; r < LATHE_GEMV_MAX_ROWS; ++r) {
      if (r < n_rows) {
        const float4 ds = __ldg(x.ds + r * (x.k >> 5) + (vi >> 5));
        const int2 a = __ldg(reinterpret_cast<const int2*>(x.q1 + r * x.k + vi));
        const int2 b = C == 2 ? __ldg(reinterpret_cast<const int2*>(x.q2 + r * x.k + vi)) : make_int2(0, 0);
        float t = ds.x * lathe_gemv_i2f(__dp4a(q1, a.y, __dp4a(q0, a.x, 0)));
        if constexpr (C == 2) t = fmaf(ds.y, lathe_gemv_i2f(__dp4a(q1, b.y, __dp4a(q0, b.x, 0))), t);
        acc[r] = fmaf(scale, t, acc[r]);
        if constexpr (F::has_offset) {
          if constexpr (F::offset_by_piece) {
            // (Q2_K: a min a 16-value sub-block) offset times this piece's 8 values of x, from x's levels
            float xs = ds.x * lathe_gemv_i2f(__dp4a(0x01010101, a.y, __dp4a(0x01010101, a.x, 0)));
            if constexpr (C == 2) xs = fmaf(ds.y, lathe_gemv_i2f(__dp4a(0x01010101, b.y, __dp4a(0x01010101, b.x, 0))), xs);
            acc[r] = fmaf(offset, xs, acc[r]);
          } else if ((p & 3) == 0) {
            acc[r] = fmaf(offset, ds.z, acc[r]);  // once per 32 values: the sum of x's 32 values
          }
        }
      }
    }
  }
}

// The 16-byte lines holding units [u0, u0 + nu) of the row at wrow: `head` bytes into the first of
// `n16` lines (n16 <= 32 * LATHE_GEMV_LOADS: the launcher sizes chunks so). Lane l loads lines
// l, l + 32, ... into v, all issued before any is used.
template <class F>
__device__ __forceinline__ void lathe_gemv_issue(const uint8_t* wrow, int u0, int nu, uint4* v, int& head, int& n16) {
  const int lane = threadIdx.x & 31;
  const uint8_t* a = wrow + static_cast<long long>(u0) * F::unit_bytes;
  const uint8_t* a0 = reinterpret_cast<const uint8_t*>(reinterpret_cast<uint64_t>(a) & ~15ull);
  head = static_cast<int>(a - a0);
  n16 = (head + nu * F::unit_bytes + 15) >> 4;
#pragma unroll
  for (int i = 0; i < LATHE_GEMV_LOADS; ++i)
    if (lane + 32 * i < n16) v[i] = lathe_gemv_ld_stream(a0 + 16 * (lane + 32 * i));
}

__device__ __forceinline__ void lathe_gemv_stage(const uint4* v, int n16, uint4* stage) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int i = 0; i < LATHE_GEMV_LOADS; ++i)
    if (lane + 32 * i < n16) stage[lane + 32 * i] = v[i];
  __syncwarp();
}

// acc[r] += the staged units [u0, u0 + nu) of a row times x[r] (lane l: pieces l, l + 32, ...).
template <class F, int C>
__device__ __forceinline__ void lathe_gemv_staged_dot(const uint4* stage, int head, int u0, int nu, const lathe_gemv_x& x,
                                                      int n_rows, float* acc) {
  const int lane = threadIdx.x & 31;
  const uint8_t* s = reinterpret_cast<const uint8_t*>(stage) + head;
  const int n_pieces = nu * F::pieces;
  for (int p = lane; p < n_pieces; p += 32) {
    const int u = p / F::pieces, pu = p % F::pieces;
    lathe_gemv_piece_dot<F, C>(s + u * F::unit_bytes, pu, (u0 + u) * F::unit_values + 8 * pu, x, n_rows, acc);
  }
  __syncwarp();  // the stage is free again
}

// This warp's share (chunks sw, sw + split, ...) of the row at `wrow` against n_rows rows of x.
template <class F, int C>
__device__ __forceinline__ void lathe_gemv_row(const uint8_t* wrow, const lathe_gemv_x& x, int n_rows,
                                               int chunk_units, int sw, int split, uint4* stage, float* acc) {
  const int units = x.k / F::unit_values;
  for (int u0 = sw * chunk_units; u0 < units; u0 += split * chunk_units) {
    const int nu = min(chunk_units, units - u0);
    uint4 v[LATHE_GEMV_LOADS];
    int head, n16;
    lathe_gemv_issue<F>(wrow, u0, nu, v, head, n16);
    lathe_gemv_stage(v, n16, stage);
    lathe_gemv_staged_dot<F, C>(stage, head, u0, nu, x, n_rows, acc);
  }
}

// Streaming mode (split == 0): each warp owns rows gw, gw + n_warps, ... whole, and the loads of its
// next chunk (of this row or the next) are in flight while it computes the current one, so an SM
// always has weights on the way. Results go straight to y: no block-wide step.
template <class F, int C>
__device__ __forceinline__ void lathe_gemv_stream_rows(const uint8_t* w, long long row_bytes, const lathe_gemv_x& x,
                                                       float* y, int n_out, int n_rows, int chunk_units, uint4* stage) {
  const int lane = threadIdx.x & 31;
  const int n_warps = gridDim.x * LATHE_GEMV_WARPS;
  int row = blockIdx.x * LATHE_GEMV_WARPS + (threadIdx.x >> 5);
  if (row >= n_out) return;
  const int units = x.k / F::unit_values;
  uint4 v[LATHE_GEMV_LOADS];
  int head, n16, u0 = 0;
  lathe_gemv_issue<F>(w + row * row_bytes, 0, min(chunk_units, units), v, head, n16);
  float acc[LATHE_GEMV_MAX_ROWS];
#pragma unroll
  for (int r = 0; r < LATHE_GEMV_MAX_ROWS; ++r) acc[r] = 0.0f;
  while (true) {
    const int nu = min(chunk_units, units - u0), cur_head = head;
    lathe_gemv_stage(v, n16, stage);
    int next_row = row, next_u0 = u0 + chunk_units;
    if (next_u0 >= units) {
      next_row = row + n_warps;
      next_u0 = 0;
    }
    if (next_row < n_out)
      lathe_gemv_issue<F>(w + next_row * row_bytes, next_u0, min(chunk_units, units - next_u0), v, head, n16);
    lathe_gemv_staged_dot<F, C>(stage, cur_head, u0, nu, x, n_rows, acc);
    if (next_row != row) {
#pragma unroll
      for (int r = 0; r < LATHE_GEMV_MAX_ROWS; ++r) {
        const float s = lathe_warp_sum(acc[r]);
        if (lane == r && r < n_rows) y[static_cast<long long>(r) * n_out + row] = s;
        acc[r] = 0.0f;
      }
      if (next_row >= n_out) return;
    }
    row = next_row;
    u0 = next_u0;
  }
}

template <class F, int C>
__device__ __forceinline__ void lathe_gemv_body(const uint8_t* w, long long row_bytes, long long expert_bytes,
                                                lathe_gemv_x x, float* y, int n_out, int n_rows,
                                                int chunk_units, int split, const int* ids,
                                                const float* route_w, int top_k, int combine, int x_per_slot) {
  __shared__ uint4 stage_all[LATHE_GEMV_WARPS][32 * LATHE_GEMV_LOADS];
  __shared__ float partial[LATHE_GEMV_WARPS][LATHE_GEMV_MAX_ROWS];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int row = split ? blockIdx.x * (LATHE_GEMV_WARPS / split) + warp / split : 0, sw = split ? warp % split : 0;
  const int task = blockIdx.z;
  float acc[LATHE_GEMV_MAX_ROWS];
#pragma unroll
  for (int r = 0; r < LATHE_GEMV_MAX_ROWS; ++r) acc[r] = 0.0f;
  if (split == 0) {  // the whole block takes this branch: no block-wide step follows
    lathe_gemv_stream_rows<F, C>(w, row_bytes, x, y, n_out, n_rows, chunk_units, stage_all[warp]);
    return;
  }
  int n_out_rows = n_rows;
  if (ids == nullptr) {
    if (row < n_out)
      lathe_gemv_row<F, C>(w + row * row_bytes, x, n_rows, chunk_units, sw, split, stage_all[warp], acc);
  } else {
    n_out_rows = 1;
    const int r = combine ? task : task / top_k;
    const int j_begin = combine ? 0 : task % top_k, j_end = combine ? top_k : j_begin + 1;
    for (int j = j_begin; j < j_end && row < n_out; ++j) {
      const int slot = r * top_k + j;
      const long long xr = x_per_slot ? slot : r;
      lathe_gemv_x xs = x;
      if (xs.f) xs.f += xr * x.k;
      if (xs.q1) xs.q1 += xr * x.k;
      if (xs.q2) xs.q2 += xr * x.k;
      if (xs.ds) xs.ds += xr * (x.k >> 5);
      float one[LATHE_GEMV_MAX_ROWS] = {0.0f};
      const uint8_t* we = w + ids[slot] * expert_bytes + row * row_bytes;
      lathe_gemv_row<F, C>(we, xs, 1, chunk_units, sw, split, stage_all[warp], one);
      acc[0] = fmaf(route_w ? route_w[slot] : 1.0f, one[0], acc[0]);
    }
  }
#pragma unroll
  for (int r = 0; r < LATHE_GEMV_MAX_ROWS; ++r) {
    const float v = lathe_warp_sum(acc[r]);
    if (lane == 0) partial[warp][r] = v;
  }
  __syncthreads();
  if (row < n_out && sw == 0 && lane < n_out_rows) {
    float v = 0.0f;
    for (int s = 0; s < split; ++s) v += partial[warp + s][lane];
    const long long out_row = ids == nullptr ? lane : task;
    y[out_row * n_out + row] = v;
  }
}

#define LATHE_GEMV_KERNEL(NAME, F, C)                                                                  \
  extern "C" __global__ void __launch_bounds__(32 * LATHE_GEMV_WARPS) NAME(                             \
      const uint8_t* w, long long row_bytes, long long expert_bytes, const float* xf, const int8_t* xq1, \
      const int8_t* xq2, const float4* xds, float* y, int k, int n_out, int n_rows, int chunk_units,      \
      int split, const int* ids, const float* route_w, int top_k, int combine, int x_per_slot) { lathe_pdl_entry();          \
    lathe_gemv_body<F, C>(w, row_bytes, expert_bytes, lathe_gemv_x{xf, xq1, xq2, xds, k}, y, n_out, n_rows, \
                          chunk_units, split, ids, route_w, top_k, combine, x_per_slot);                  \
  }

#define LATHE_GEMV_CONTRACTS(FMT)                                 \
  LATHE_GEMV_KERNEL(lathe_gemv_##FMT##_f32, lathe_gemv_##FMT, 0)  \
  LATHE_GEMV_KERNEL(lathe_gemv_##FMT##_int8, lathe_gemv_##FMT, 1) \
  LATHE_GEMV_KERNEL(lathe_gemv_##FMT##_int8x2, lathe_gemv_##FMT, 2)

LATHE_GEMV_CONTRACTS(q8_0)
LATHE_GEMV_CONTRACTS(q4_0)
LATHE_GEMV_CONTRACTS(q4_1)
LATHE_GEMV_CONTRACTS(q5_0)
LATHE_GEMV_CONTRACTS(q5_1)
LATHE_GEMV_CONTRACTS(q2_k)
LATHE_GEMV_CONTRACTS(q3_k)
LATHE_GEMV_CONTRACTS(q4_k)
LATHE_GEMV_CONTRACTS(q5_k)
LATHE_GEMV_CONTRACTS(q6_k)
LATHE_GEMV_CONTRACTS(f32)
LATHE_GEMV_CONTRACTS(f16)
LATHE_GEMV_CONTRACTS(bf16)
