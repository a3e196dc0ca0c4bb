// Two launch forms of the register-A wgmma product (gemm_wgmma_rs.cuh; sm_90a only), for a prefill
// chunk's products that read one x16. Contracts: gemm_wgmma_launch.h (gemm_wgmma_multi,
// gemm_wgmma_swiglu). Both run gemm_wgmma_rs.cuh's main loop unchanged (the same chunks, the same
// k16 slices in the same order into one f32 accumulator per output), so every output is bit-equal to
// gemm_wgmma on its matrix alone.
//
// multi: up to 3 matrices of one format and one k (q, k, v) in ONE grid: blockIdx.y walks the
//   concatenated 128-row output tiles, matrix m owning tiles [tile_end[m - 1], tile_end[m]) (a tile
//   never straddles two matrices; its rows past n_out[m] are TMA's zero fill, masked at the store).
//   Why: k and v (1024 outputs) alone make 8 tiles, 32 blocks at 512 rows for 132 SMs.
// swiglu: h = silu(x16 . G^T) * (x16 . U^T): a block takes 64 outputs n0 .. n0 + 63, warpgroup 0 the
//   gate rows (tile rows 0..63), warpgroup 1 the up rows (tile rows 64..127) of the same outputs, both
//   boxes loaded into one stage as the single kernel's 128 rows. After the main loop the stages are
//   free: each warpgroup leaves half of its accumulators in shared memory (the half the other one
//   finishes), so each thread forms h for BN / 4 of its slots from its own value and its twin's
//   (thread i of warpgroup 1 holds the up value of the very output thread i of warpgroup 0 holds).
//   No gate or up output is written; h is f32 and/or f16 (the down product's x16).
//   Measured: faster than gate + up + swiglu at 512 rows (q8_0 1.23x, q4_K 1.14x), but for q4_K
//   slower than multi(gate, up) + swiglu: its main loop loses ~25% to the single kernel's with the
//   64-row boxes (4 weight TMAs a stage); not understood yet (see gemm_wgmma_launch.h).
// SwiGLU is common.cuh's lathe_swiglu, the elementwise kernel's (elementwise.cuh, elem_binary_op 4).

// The outputs of a multi launch: matrix m's y, its n_out and the end of its tile range.
struct LatheGwrOuts {
  float *y0, *y1, *y2;
  int n0, n1, n2;
  int end0, end1;  // tiles [0, end0) matrix 0, [end0, end1) matrix 1, [end1, grid.y) matrix 2
};

template <class F, int BN>
__device__ __forceinline__ void lathe_gwr_multi_body(const LatheGwrMap* mx, const LatheGwrMap* a0,
                                                     const LatheGwrMap* a1, const LatheGwrMap* b0,
                                                     const LatheGwrMap* b1, const LatheGwrMap* c0,
                                                     const LatheGwrMap* c1, const LatheGwrOuts& o, int n_rows, int k) {
  uint32_t sbase;
  uint8_t* smem = lathe_gwr_smem(&sbase);
  const int ty = blockIdx.y;
  const int m = ty < o.end0 ? 0 : ty < o.end1 ? 1 : 2;
  const int tile0 = m == 0 ? 0 : m == 1 ? o.end0 : o.end1;
  const int m0 = blockIdx.x * BN, n0 = (ty - tile0) * 128;
  const int n_chunks = (k + 63) >> 6;
  const LatheGwrMaps mp{mx, m == 0 ? a0 : m == 1 ? b0 : c0, m == 0 ? a1 : m == 1 ? b1 : c1, nullptr, nullptr, m0, n0};
  lathe_gwr_prologue<F, BN>(sbase, mp, n_chunks);
  const int cw = threadIdx.x >> 7;
  float acc[BN / 2];
  lathe_gwr_mainloop<F, BN>(acc, smem, sbase, mp, n_chunks, cw);
  float* y = m == 0 ? o.y0 : m == 1 ? o.y1 : o.y2;
  const int n_out = m == 0 ? o.n0 : m == 1 ? o.n1 : o.n2;
  lathe_gwr_store<BN>(acc, y, n_rows, n_out, m0, n0 + 64 * cw);
}

template <class F, int BN>
__device__ __forceinline__ void lathe_gwr_swiglu_body(const LatheGwrMap* mx, const LatheGwrMap* g0,
                                                      const LatheGwrMap* g1, const LatheGwrMap* u0,
                                                      const LatheGwrMap* u1, float* h, __half* h16, int n_rows, int k,
                                                      int n_ff) {
  uint32_t sbase;
  uint8_t* smem = lathe_gwr_smem(&sbase);
  const int m0 = blockIdx.x * BN, n0 = blockIdx.y * 64;
  const int n_chunks = (k + 63) >> 6;
  const LatheGwrMaps mp{mx, g0, g1, u0, u1, m0, n0};
  lathe_gwr_prologue<F, BN>(sbase, mp, n_chunks);
  const int cw = threadIdx.x >> 7;  // 0: gate, 1: up
  float acc[BN / 2];
  lathe_gwr_mainloop<F, BN>(acc, smem, sbase, mp, n_chunks, cw);
  // Every wgmma of both warpgroups is complete and every loaded stage consumed: the ring is free.
  __syncthreads();
  // Slots [0, BN / 4) (x rows 0 .. BN / 2 - 1 of the tile) are finished by warpgroup 0, the rest by
  // warpgroup 1; each leaves the other's half at ex[region cw][slot][thread] (conflict-free).
  constexpr int Q = BN / 4;
  static_assert(LatheGwrConfig<F, BN>::g.bar_at >= 2 * Q * 128 * 4, "the exchange fits the stage ring");
  float* ex = reinterpret_cast<float*>(smem);
  const int tid = threadIdx.x & 127;
#pragma unroll
  for (int i = 0; i < Q; ++i) ex[(cw * Q + i) * 128 + tid] = cw == 0 ? acc[Q + i] : acc[i];
  __syncthreads();
  const int lane = threadIdx.x & 31, wi = (threadIdx.x >> 5) & 3, g = lane >> 2, t = lane & 3;
  const int f = n0 + 16 * wi + g;
#pragma unroll
  for (int i = 0; i < Q; ++i) {
    const float own = cw == 0 ? acc[i] : acc[Q + i], other = ex[((1 - cw) * Q + i) * 128 + tid];
    const float gv = cw == 0 ? own : other, uv = cw == 0 ? other : own;
    const int slot = cw * Q + i, jn = slot >> 2, hh = (slot >> 1) & 1, e = slot & 1;  // acc[4 jn + 2 hh + e]
    const int r = m0 + 8 * jn + 2 * t + e, fo = f + 8 * hh;
    if (r >= n_rows || fo >= n_ff) continue;
    const float v = lathe_swiglu(gv, uv);
    const long long at = static_cast<long long>(r) * n_ff + fo;
    if (h != nullptr) h[at] = v;
    if (h16 != nullptr) h16[at] = __float2half_rn(v);
  }
}

#define LATHE_GWM_KERNELS(FMT, BN)                                                                               \
  extern "C" __global__ void __launch_bounds__(LATHE_GWR_THREADS, 1) lathe_gemm_wgmma_rs_multi_##FMT##_##BN(    \
      const __grid_constant__ LatheGwrMap mx, const __grid_constant__ LatheGwrMap a0,                            \
      const __grid_constant__ LatheGwrMap a1, const __grid_constant__ LatheGwrMap b0,                            \
      const __grid_constant__ LatheGwrMap b1, const __grid_constant__ LatheGwrMap c0,                            \
      const __grid_constant__ LatheGwrMap c1, const LatheGwrOuts outs, int n_rows, int k) {                      \
    lathe_pdl_entry();                                                                                           \
    lathe_gwr_multi_body<lathe_gwr_##FMT, BN>(&mx, &a0, &a1, &b0, &b1, &c0, &c1, outs, n_rows, k);               \
  }                                                                                                              \
  extern "C" __global__ void __launch_bounds__(LATHE_GWR_THREADS, 256 / BN) lathe_gemm_wgmma_rs_swiglu_##FMT##_##BN(   \
      const __grid_constant__ LatheGwrMap mx, const __grid_constant__ LatheGwrMap g0,                            \
      const __grid_constant__ LatheGwrMap g1, const __grid_constant__ LatheGwrMap u0,                            \
      const __grid_constant__ LatheGwrMap u1, float* h, __half* h16, int n_rows, int k, int n_ff) {              \
    lathe_pdl_entry();                                                                                           \
    lathe_gwr_swiglu_body<lathe_gwr_##FMT, BN>(&mx, &g0, &g1, &u0, &u1, h, h16, n_rows, k, n_ff);                \
  }

// The SwiGLU kernels of 128-row tiles are held to 128 registers (256 / BN blocks an SM): their stage
// ring takes half the shared memory for two blocks a multiprocessor (q6_K's epilogue took 134).
LATHE_GWM_KERNELS(f16, 128)
LATHE_GWM_KERNELS(f16, 256)
LATHE_GWM_KERNELS(q8_0, 128)
LATHE_GWM_KERNELS(q8_0, 256)
LATHE_GWM_KERNELS(q4_k, 128)
LATHE_GWM_KERNELS(q4_k, 256)
LATHE_GWM_KERNELS(q6_k, 128)
LATHE_GWM_KERNELS(q6_k, 256)
