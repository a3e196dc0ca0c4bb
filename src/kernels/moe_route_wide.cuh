// The mixture router over many SMs (decode, 1..8 rows): moe_route.cuh's router, the same bytes out
// (logits, ids, weights, x's int8 form, the norm's sum), with its (expert, part) units dealt one a
// warp over ceil(units / LATHE_MOE_WIDE_WARPS) blocks instead of one cluster of 8 blocks.
// Why: in the decode step the router's rows are not in L2 (the layer's other ~60 MB streamed through
// it), and the cluster's 8 SMs read them from DRAM, 128 KB each for qwen3-30b-a3b's 1 MB: 11.4 us
// from the o product's end to gate/up's start (the H200, 2026-12-01). Here
// - each warp copies its unit's bytes into shared memory before the programmatic-launch wait (the
//   router is a constant), overlapping the kernel before;
// - every block forms x (the norm in its prologue, or a copy) and its warps' sums, in the cluster
//   kernel's order, into part sums in global memory;
// - the last block to finish (a count in global memory, which it sets back to zero) adds each
//   expert's parts in part order and picks the top k, as the cluster kernel's block 0 does.
// Dynamic shared memory: rows * k floats (x), LATHE_MOE_WIDE_WARPS * unit_stride bytes (the units),
// rows * n_expert floats (the last block's logits). Blocks of 32 * LATHE_MOE_WIDE_WARPS threads.

#define LATHE_MOE_WIDE_WARPS 4
// Whether each warp's unit is copied in before the programmatic-launch wait (1) or after it (0): a
// compile-time choice for measurements (LATHE_KERNEL_DEFINES).
#ifndef LATHE_MOE_WIDE_STAGE_EARLY
#define LATHE_MOE_WIDE_STAGE_EARLY 1
#endif
// The norm kernel's threads a block thread plays at most (norm_threads <= 4 * 32 * WARPS; the
// launcher checks it).
#define LATHE_MOE_WIDE_NORM_SETS 4

// Value j of set m of this thread: set m plays the norm kernel's warp (warp + m WARPS), whose lane
// takes values t, t + norm_threads, ... (t its thread); -1 where it has none.
__device__ __forceinline__ int lathe_moe_wide_index(int m, int j, int k, int norm_threads) {
  const int t = ((static_cast<int>(threadIdx.x) >> 5) + m * LATHE_MOE_WIDE_WARPS) * 32 + (threadIdx.x & 31);
  const int i = t + j * norm_threads;
  return t < norm_threads && i < k ? i : -1;
}

// lathe_moe_norm_row's bits (lathe_add_rms_norm's) by a block with fewer threads than the norm
// kernel's norm_threads: each thread plays the norm kernel's threads of lathe_moe_wide_index, each
// its 8 values and their sum of squares in that kernel's order; the warps' sums meet as
// lathe_block_sum adds them (warp j's in lane j, zeros past the last). The values stay in registers;
// wn holds their norm weights (loaded before the wait by lathe_moe_wide_load_norm_w).
__device__ __forceinline__ void lathe_moe_wide_norm_row(const float* x, const float* y,
                                                        const float (&wn)[LATHE_MOE_WIDE_NORM_SETS][8], int k,
                                                        int norm_threads, float eps, float* sr, float* sum_out,
                                                        float* scratch) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, vwarps = norm_threads >> 5;
  float v[LATHE_MOE_WIDE_NORM_SETS][8];
#pragma unroll
  for (int m = 0; m < LATHE_MOE_WIDE_NORM_SETS; ++m)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int i = lathe_moe_wide_index(m, j, k, norm_threads);
      v[m][j] = i >= 0 ? x[i] + y[i] : 0.0f;
    }
#pragma unroll
  for (int m = 0; m < LATHE_MOE_WIDE_NORM_SETS; ++m) {
    const int vw = warp + m * LATHE_MOE_WIDE_WARPS;
    if (vw < vwarps) {  // warp-uniform
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < 8; ++j)
        if (lathe_moe_wide_index(m, j, k, norm_threads) >= 0) sum += v[m][j] * v[m][j];
      sum = lathe_warp_sum(sum);
      if (lane == 0) scratch[vw] = sum;
    }
  }
  __syncthreads();
  const float inv = rsqrtf(lathe_warp_sum(lane < vwarps ? scratch[lane] : 0.0f) / float(k) + eps);
#pragma unroll
  for (int m = 0; m < LATHE_MOE_WIDE_NORM_SETS; ++m)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int i = lathe_moe_wide_index(m, j, k, norm_threads);
      if (i >= 0) {
        if (sum_out) sum_out[i] = v[m][j];
        sr[i] = v[m][j] * inv * wn[m][j];
      }
    }
}

// The norm's weights of the values this thread forms (lathe_moe_wide_index), 1.0 where there is no
// norm or no value: a constant, so loaded before the wait.
__device__ __forceinline__ void lathe_moe_wide_load_norm_w(float (&wn)[LATHE_MOE_WIDE_NORM_SETS][8], const float* nw,
                                                           int k, int norm_threads) {
#pragma unroll
  for (int m = 0; m < LATHE_MOE_WIDE_NORM_SETS; ++m)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int i = lathe_moe_wide_index(m, j, k, norm_threads);
      wn[m][j] = nw && i >= 0 ? nw[i] : 1.0f;
    }
}

template <class F>
__device__ __forceinline__ void lathe_moe_route_wide_body(const uint8_t* w, long long row_bytes, const float* x,
                                                          int rows, int k, int n_expert, int parts, int top_k,
                                                          int renormalize, int* ids, float* weights, float* logits,
                                                          int8_t* q1, int8_t* q2, float4* ds, int two_words, int flags,
                                                          const float* nx, const float* ny, const float* nw, float eps,
                                                          float* nsum, int norm_threads, float* part_sums,
                                                          unsigned* count, int unit_stride, unsigned long long* trace) {
  // trace (a measurement, usually null): thread 0 stamps the globaltimer at trace[i * grid + block]:
  // 0 entry, 1 waited, 2 x formed, 3 x quantized and the unit landed (warp 0), 4 its sums written,
  // 5 counted out, 6 the top k picked (the last block; 0 in the others).
  auto stamp = [&](int i) {
    if (trace && threadIdx.x == 0) trace[i * gridDim.x + blockIdx.x] = lathe_globaltimer();
  };
  stamp(0);
  LATHE_BLOCK_STAMPS(stamps);  // (LATHE_STAMPS) as the cluster kernel's
  extern __shared__ float4 lathe_moe_wide_smem[];
  __shared__ float norm_scratch[32];
  __shared__ int last_block;
  float* sx = reinterpret_cast<float*>(lathe_moe_wide_smem);  // [rows][k]
  uint8_t* units_s = reinterpret_cast<uint8_t*>(sx + rows * k);
  float* sl = reinterpret_cast<float*>(units_s + LATHE_MOE_WIDE_WARPS * unit_stride);  // [rows][n_expert]
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int u = blockIdx.x * LATHE_MOE_WIDE_WARPS + warp, n_warps = gridDim.x * LATHE_MOE_WIDE_WARPS;
  const int pieces_row = k >> 3, per_part = (pieces_row + parts - 1) / parts;
  const bool has_unit = u < n_expert * parts;
  const int e = u % n_expert, p = u / n_expert;
  const int first = p * per_part, end = has_unit ? min(pieces_row, first + per_part) : first;
  // The unit's bytes [b0, b1) of row e, copied as 16-byte lines from the one holding b0 (so the
  // staged bytes keep their global address's alignment): a constant, before the wait.
  long long b0, b1;
  lathe_moe_unit_bytes<F>(first, end, b0, b1);
  const uint8_t* g = w + e * row_bytes + b0;
  const uint8_t* g16 = reinterpret_cast<const uint8_t*>(reinterpret_cast<uint64_t>(g) & ~15ull);
  const int head = static_cast<int>(g - g16);
  uint8_t* su = units_s + warp * unit_stride;
  auto stage_unit = [&]() {
    if (first < end) {
      const int n16 = static_cast<int>((head + (b1 - b0) + 15) >> 4);
      for (int i = lane; i < n16; i += 32) lathe_gemv1_cp16(su + 16 * i, g16 + 16 * i);
    }
    lathe_gemv1_commit();
  };
  if (LATHE_MOE_WIDE_STAGE_EARLY) stage_unit();
  float norm_w[LATHE_MOE_WIDE_NORM_SETS][8];
  lathe_moe_wide_load_norm_w(norm_w, nx ? nw : nullptr, k, norm_threads);
  lathe_pdl_entry();
  stamp(1);
  LATHE_STAMP_AT(stamps, 1);
  if (!LATHE_MOE_WIDE_STAGE_EARLY) stage_unit();

  if (nx) {  // the norm in the prologue (fusion rule norm_prologue); block 0 writes the sum
    for (int r = 0; r < rows; ++r) {
      const long long o = static_cast<long long>(r) * k;
      lathe_moe_wide_norm_row(nx + o, ny + o, norm_w, k, norm_threads, eps, sx + o,
                              blockIdx.x == 0 ? nsum + o : nullptr, norm_scratch);
      __syncthreads();  // norm_scratch is reused by the next row
    }
  } else {
    for (int i = threadIdx.x; i < (rows * k) >> 2; i += blockDim.x)
      reinterpret_cast<float4*>(sx)[i] = reinterpret_cast<const float4*>(x)[i];
    __syncthreads();
  }

  stamp(2);
  LATHE_STAMP_AT(stamps, 2);
  // x's int8 form: 32-value blocks dealt over every warp of the grid.
  if (q1) lathe_moe_quantize_x(sx, rows, k, u, n_warps, two_words, q1, q2, ds);

  lathe_gemv1_wait<0>();
  __syncwarp();  // every lane's lines of the unit have landed
  stamp(3);
  if (has_unit) {
    // The cluster kernel's sums, on the staged bytes (su + head stands for global address g); an empty
    // part writes its zero, as there.
    lathe_moe_unit_sums<F>(su + head - b0, first, end, sx, rows, k, [&](int r, float v) {
      if (lane == 0) part_sums[(r * parts + p) * n_expert + e] = v;
    });
  }

  stamp(4);
  LATHE_STAMP_AT(stamps, 3);
  // The last block out adds the parts: the fence publishes this block's sums before its count.
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    last_block = atomicAdd(count, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  stamp(5);
  if (!last_block) {
    if (trace && threadIdx.x == 0) trace[6 * gridDim.x + blockIdx.x] = 0;
    LATHE_STAMP_END(stamps, w, n_expert, k);
    return;
  }
  __threadfence();
  for (int i = threadIdx.x; i < rows * n_expert; i += blockDim.x) {
    const int r = i / n_expert, ee = i - r * n_expert;
    float s = 0.0f;
    for (int pp = 0; pp < parts; ++pp) s += __ldcg(part_sums + (r * parts + pp) * n_expert + ee);
    sl[i] = s;
    if (logits) logits[i] = s;
  }
  if (threadIdx.x == 0) *count = 0u;  // every block has counted: the next launch starts from zero
  __syncthreads();
  const bool sorted = (flags & LATHE_MOE_ROUTE_SORTED_TOP_K) && n_expert <= 32 * LATHE_MOE_SORTED_KEYS && top_k <= 32;
  for (int r = warp; r < rows; r += LATHE_MOE_WIDE_WARPS) {
    if (sorted)
      lathe_moe_top_k_sorted_warp(sl + r * n_expert, n_expert, top_k, renormalize, ids + r * top_k, weights + r * top_k);
    else if (flags & LATHE_MOE_ROUTE_REGISTER_TOP_K)
      lathe_moe_top_k_warp(sl + r * n_expert, n_expert, top_k, renormalize, ids + r * top_k, weights + r * top_k,
                           flags & LATHE_MOE_ROUTE_REPORT_GAP);
    else
      lathe_route_top_k_warp(sl + r * n_expert, n_expert, top_k, renormalize, ids + r * top_k, weights + r * top_k);
  }
  stamp(6);
  LATHE_STAMP_END(stamps, w, n_expert, k);
}

#define LATHE_MOE_ROUTE_WIDE_KERNEL(FMT)                                                                            \
  extern "C" __global__ void __launch_bounds__(32 * LATHE_MOE_WIDE_WARPS) lathe_moe_route_wide_##FMT(               \
      const uint8_t* w, long long row_bytes, const float* x, int rows, int k, int n_expert, int parts, int top_k,  \
      int renormalize, int* ids, float* weights, float* logits, int8_t* q1, int8_t* q2, float4* ds, int two_words, \
      int flags, const float* nx, const float* ny, const float* nw, float eps, float* nsum, int norm_threads,      \
      float* part_sums, unsigned* count, int unit_stride, unsigned long long* trace) {                              \
    lathe_moe_route_wide_body<lathe_gemv_##FMT>(w, row_bytes, x, rows, k, n_expert, parts, top_k, renormalize,     \
                                                ids, weights, logits, q1, q2, ds, two_words, flags, nx, ny, nw, eps, \
                                                nsum, norm_threads, part_sums, count, unit_stride, trace);          \
  }

LATHE_MOE_ROUTE_WIDE_KERNEL(f32)
LATHE_MOE_ROUTE_WIDE_KERNEL(f16)
LATHE_MOE_ROUTE_WIDE_KERNEL(bf16)
LATHE_MOE_ROUTE_WIDE_KERNEL(q8_0)
LATHE_MOE_ROUTE_WIDE_KERNEL(q4_0)
LATHE_MOE_ROUTE_WIDE_KERNEL(q4_1)
LATHE_MOE_ROUTE_WIDE_KERNEL(q5_0)
LATHE_MOE_ROUTE_WIDE_KERNEL(q5_1)
LATHE_MOE_ROUTE_WIDE_KERNEL(q2_k)
LATHE_MOE_ROUTE_WIDE_KERNEL(q3_k)
LATHE_MOE_ROUTE_WIDE_KERNEL(q4_k)
LATHE_MOE_ROUTE_WIDE_KERNEL(q5_k)
LATHE_MOE_ROUTE_WIDE_KERNEL(q6_k)
