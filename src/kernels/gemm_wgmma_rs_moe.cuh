// The mixture's grouped prefill products on Hopper wgmma with the WEIGHTS in registers (sm_90a only;
// named gemm_wgmma_* so library.cpp puts it in the sm_90a module, after gemm_wgmma_rs.cuh whose
// formats, fragments and wgmma wrappers it reuses). Host side and contract: moe_wgmma_launch.h.
//
// Block (x, y): tile x of the grouping's table ({expert e, first sorted position p0, rows n <= BN};
// blocks past the table's count leave at once: the grid is the worst case's) times output tile y.
// B = BN rows p0 .. p0 + BN of an expert-sorted f16 activation matrix (x16 gathered by
// lathe_moe_gather_f16, or h16), loaded by TMA (128-byte swizzle; rows past the matrix zero-filled,
// rows of the next expert computed and dropped at the store). A = 128 weight rows: two 64-row halves,
// each a TMA box of the stacked weights [E n_out][row bytes] seen as one 2D byte matrix:
//   gate_up: half 0 = gate rows e n_ff + n0 .. + 64, half 1 = up rows e n_ff + n0 .. + 64, n0 = 64 y;
//            warpgroup 0 multiplies gate, warpgroup 1 up; the epilogue hands up's accumulators to
//            warpgroup 0 through shared memory (same thread layout), which writes
//            h16[p0 + i][n0 + f] = f16(silu(g) * u) (f32 math, moe_grouped_gemm.cuh's formula).
//   down:    halves = down rows e n_out + n0 .. + 128, n0 = 128 y; y[p0 + i][n0 + f] f32.
// Output rows f >= n_out of a half (the next expert's rows or TMA's zeros) are never stored.
// The k-loop is gemm_wgmma_rs.cuh's: thread 0 issues the TMA loads S - 1 chunks ahead through full /
// empty mbarriers, each consumer thread dequantizes its two weight rows of each 64-value chunk into
// wgmma's A registers (lathe_gwr_frags: gemm_f16's f16 value of every weight) while the previous
// chunk's wgmma m64nBNk16 run; k16 slices in increasing order into one f32 accumulator per output.
#pragma once

#ifndef __CUDACC__
#include <cstdint>
#define LATHE_GWM_HD constexpr inline
namespace lathe::kernels {
#else
#define LATHE_GWM_HD __host__ __device__ constexpr __forceinline__
#endif

// Stage ring (lathe_gwr_ring): a stage is x [BN][64] f16 (swizzled, 1024-aligned) then the weight
// boxes (128 rows each: two 64-row TMA boxes a box kind, lathe_gwr_boxes' widths), rounded up to 1024
// bytes; as many stages (<= 8) as fit half an SM's shared memory at BN = 64 (two blocks an SM), all of
// it at BN = 128. w_at = BN 128 is lathe_gwr_geometry's (lathe_gwr_frags reads it from there).
LATHE_GWM_HD LatheGwrGeometry lathe_gwm_geometry(int bn, int w_row_bytes) {
  return lathe_gwr_ring(bn, w_row_bytes, bn == 64 ? 115712 : 232448);
}

#ifndef __CUDACC__
}  // namespace lathe::kernels
#else

// ---- device part (sm_90a) ----
__device__ __forceinline__ void lathe_gwm_mma_n64(float* d, const uint32_t* a, uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

template <int BN>
__device__ __forceinline__ void lathe_gwm_mma(float* acc, const uint32_t* a, uint64_t b) {
  if constexpr (BN == 128) lathe_gwr_mma_n128(acc, a, b);
  else lathe_gwm_mma_n64(acc, a, b);
}

template <class F, int BN>
struct LatheGwmConfig {
  static constexpr LatheGwrGeometry g = lathe_gwm_geometry(BN, lathe_gwr_boxes(F::fmt).row_bytes);
  static constexpr int S = g.stages;
  static_assert(S >= 3, "the ring needs 3 stages");
  static_assert(g.w_at == lathe_gwr_geometry(BN, F::fmt).w_at, "lathe_gwr_frags' stage layout");
};

// The tile's coordinates: x rows from p0; weight half h's rows from wrow[h] (maps: half 0 ma0 / ma1,
// half 1 mb0 / mb1, by the format's box map).
struct LatheGwmTile {
  const LatheGwrMap *x, *a0, *a1, *b0, *b1;
  int p0, wrow0, wrow1;
};

// Chunk j's TMA loads into stage j % S (thread 0 only): arms full[j % S] with the stage's bytes.
template <class F, int BN>
__device__ __forceinline__ void lathe_gwm_load(uint32_t sbase, const LatheGwmTile& tl, int j) {
  typedef LatheGwmConfig<F, BN> C;
  const int s = j % C::S;
  const uint32_t full = sbase + C::g.bar_at + 8 * s, st = sbase + s * C::g.stage_bytes;
  lathe_gwr_expect(full, C::g.tx_bytes);
  lathe_gwr_tma(st, tl.x, 64 * j, tl.p0, full);
#pragma unroll
  for (int i = 0; i < F::boxes; ++i) {
    const uint32_t at = st + C::g.w_at + lathe_gwr_box_at<F>(i);
    const int bx = F::box_x(i, j) - lathe_gwr_box_off<F>(i, j);
    const bool m0 = F::box_map(i) == 0;
    lathe_gwr_tma(at, m0 ? tl.a0 : tl.a1, bx, tl.wrow0, full);
    lathe_gwr_tma(at + 64 * F::box_width(i), m0 ? tl.b0 : tl.b1, bx, tl.wrow1, full);
  }
}

// One chunk (lathe_gwr_step's protocol): multiply chunk c (fragments `cur`), release chunk c - 1,
// thread 0 refills its stage with chunk c - 1 + S, then chunk c + 1's fragments into `nxt`.
template <class F, int BN>
__device__ __forceinline__ void lathe_gwm_step(float* acc, const uint32_t* cur, uint32_t* nxt, uint8_t* smem,
                                               uint32_t sbase, const LatheGwmTile& tl, int fr, int g, int t,
                                               int lane, int c, int n_chunks) {
  typedef LatheGwmConfig<F, BN> C;
  const uint32_t full = sbase + C::g.bar_at, empty = full + 8 * C::S;
  const uint32_t xs = sbase + (c % C::S) * C::g.stage_bytes;
  lathe_gwg_wgmma_fence();
#pragma unroll
  for (int s = 0; s < 4; ++s) lathe_gwm_mma<BN>(acc, cur + 4 * s, lathe_gwg_slice_desc(xs, 0, s));
  lathe_gwg_wgmma_commit();
  lathe_gwg_wgmma_wait<1>();
  if (c > 0 && lane == 0) lathe_gwg_bar_arrive(empty + 8 * ((c - 1) % C::S));
  if (threadIdx.x == 0 && c >= 1 && c - 1 + C::S < n_chunks) {
    lathe_gwg_bar_wait(empty + 8 * ((c - 1) % C::S), ((c - 1) / C::S) & 1);
    lathe_gwm_load<F, BN>(sbase, tl, c - 1 + C::S);
  }
  __syncwarp();
  if (c + 1 < n_chunks) {
    const int s1 = (c + 1) % C::S;
    lathe_gwg_bar_wait(full + 8 * s1, ((c + 1) / C::S) & 1);
    lathe_gwr_frags<F, BN>(nxt, smem + s1 * C::g.stage_bytes, fr, g, t, c + 1);
  }
}

#define LATHE_GWM_THREADS 256

// GATE_UP: h16 [P][n_out] f16 of silu(gate) * up; else y [P][n_out] f32 of down.
template <class F, int BN, bool GATE_UP>
__device__ __forceinline__ void lathe_gwm_body(const LatheGwrMap* mx, const LatheGwrMap* ma0, const LatheGwrMap* ma1,
                                               const LatheGwrMap* mb0, const LatheGwrMap* mb1, const int4* tiles,
                                               const int* n_tiles, void* out, int k, int n_out) {
  typedef LatheGwmConfig<F, BN> C;
  if (static_cast<int>(blockIdx.x) >= n_tiles[0]) return;  // surplus block of the worst-case grid
  const int4 tile = tiles[blockIdx.x];
  const int expert = tile.x, p0 = tile.y, n_rows = tile.z;
  const int n0 = blockIdx.y * (GATE_UP ? 64 : 128);
  extern __shared__ __align__(1024) uint8_t lathe_gwm_smem_raw[];
  const uint32_t raw_base = lathe_gwg_smem(lathe_gwm_smem_raw);
  const uint32_t pad = ((raw_base + 1023u) & ~1023u) - raw_base;
  uint8_t* smem = lathe_gwm_smem_raw + pad;
  const uint32_t sbase = raw_base + pad;
  const int n_chunks = (k + 63) >> 6;
  const int wbase = expert * n_out + n0;
  const LatheGwmTile tl{mx, ma0, ma1, mb0, mb1, p0, wbase, GATE_UP ? wbase : wbase + 64};
  if (threadIdx.x == 0) {
    const uint32_t full = sbase + C::g.bar_at, empty = full + 8 * C::S;
    for (int s = 0; s < C::S; ++s) {
      lathe_gwg_bar_init(full + 8 * s, 1);
      lathe_gwg_bar_init(empty + 8 * s, 8);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    for (int j = 0; j < C::S && j < n_chunks; ++j) lathe_gwm_load<F, BN>(sbase, tl, j);
  }
  __syncthreads();

  const int cw = threadIdx.x >> 7, lane = threadIdx.x & 31, wi = (threadIdx.x >> 5) & 3, g = lane >> 2, t = lane & 3;
  const int fr = 64 * cw + 16 * wi + g;
  float acc[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
  uint32_t fa[16], fb[16];
  lathe_gwg_bar_wait(sbase + C::g.bar_at, 0);
  lathe_gwr_frags<F, BN>(fa, smem, fr, g, t, 0);
  for (int c = 0; c < n_chunks; c += 2) {
    lathe_gwm_step<F, BN>(acc, fa, fb, smem, sbase, tl, fr, g, t, lane, c, n_chunks);
    if (c + 1 < n_chunks) lathe_gwm_step<F, BN>(acc, fb, fa, smem, sbase, tl, fr, g, t, lane, c + 1, n_chunks);
  }
  lathe_gwg_wgmma_wait<0>();

  // Accumulators (m64nBN): lane (g, t) of warp wi: weight rows 16 wi + g + 8 hh, x rows 8 jn + 2 t + e
  // in acc[4 jn + 2 hh + e].
  if constexpr (GATE_UP) {
    float* xch = reinterpret_cast<float*>(smem);  // every stage is consumed: the ring is free
    __syncthreads();
    const int tw = threadIdx.x & 127;
    if (cw == 1) {
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) xch[i * 128 + tw] = acc[i];
    }
    __syncthreads();
    if (cw == 1) return;
    __half* h = static_cast<__half*>(out);
#pragma unroll
    for (int jn = 0; jn < BN / 8; ++jn)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int r = 8 * jn + 2 * t + e;
        if (r >= n_rows) continue;
        __half* hr = h + static_cast<long long>(p0 + r) * n_out;
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int f = n0 + 16 * wi + g + 8 * hh, i = 4 * jn + 2 * hh + e;
          if (f >= n_out) continue;
          const float gv = acc[i], uv = xch[i * 128 + tw];
          hr[f] = __float2half_rn(lathe_swiglu(gv, uv));
        }
      }
  } else {
    float* y = static_cast<float*>(out);
#pragma unroll
    for (int jn = 0; jn < BN / 8; ++jn)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int r = 8 * jn + 2 * t + e;
        if (r >= n_rows) continue;
        float* yr = y + static_cast<long long>(p0 + r) * n_out;
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int f = n0 + fr + 8 * hh;  // fr = 64 cw + 16 wi + g
          if (f < n_out) yr[f] = acc[4 * jn + 2 * hh + e];
        }
      }
  }
}

#define LATHE_GWM_KERNEL(WHAT, GATE_UP, FMT, BN)                                                               \
  extern "C" __global__ void __launch_bounds__(LATHE_GWM_THREADS, BN == 64 ? 2 : 1) lathe_moe_wgmma_##WHAT##_##FMT##_##BN(    \
      const __grid_constant__ LatheGwrMap mx, const __grid_constant__ LatheGwrMap ma0,                          \
      const __grid_constant__ LatheGwrMap ma1, const __grid_constant__ LatheGwrMap mb0,                         \
      const __grid_constant__ LatheGwrMap mb1, const int4* tiles, const int* n_tiles, void* out, int k,         \
      int n_out) {                                                                                              \
    lathe_pdl_entry();                                                                                          \
    lathe_gwm_body<lathe_gwr_##FMT, BN, GATE_UP>(&mx, &ma0, &ma1, &mb0, &mb1, tiles, n_tiles, out, k, n_out);   \
  }

#define LATHE_GWM_FORMAT(FMT)                \
  LATHE_GWM_KERNEL(gate_up, true, FMT, 64)   \
  LATHE_GWM_KERNEL(gate_up, true, FMT, 128)  \
  LATHE_GWM_KERNEL(down, false, FMT, 64)     \
  LATHE_GWM_KERNEL(down, false, FMT, 128)

LATHE_GWM_FORMAT(q8_0)
LATHE_GWM_FORMAT(q4_k)
LATHE_GWM_FORMAT(q6_k)

#endif  // __CUDACC__
