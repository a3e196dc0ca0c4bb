// The prefill product on Hopper's wgmma (sm_90a): y [R][n_out] f32 = x16 . dequant(W)^T, the
// contract of gemm_f16 (gemm_wgmma_launch.h). Layout math and primitives: gemm_wgmma.cuh; the weight
// formats are gemm_f16_blocks.cuh's (lathe_gf16_<fmt>: line, dequant, direct), so each weight is the
// same f16 value in both GEMMs. The launcher's fallback since the register-A kernel
// (gemm_wgmma_rs.cuh, 2-4x faster) came: used only where a format's rows are not 16-byte multiples.
//
// A block of 384 threads, three warpgroups, computes a BM x 128 tile of y (BM = 128 or 256 rows),
// walking k in chunks of 64 values through a ring of S stages (lathe_gwg_geometry):
//   warpgroup 0, the producer (setmaxnreg down to 88): cp.async of chunk j's x16 [BM][64] straight
//     into stage j % S (swizzled) and of its raw weight lines into raw slot j % R, D chunks ahead;
//     then it dequantizes chunk c from its raw slot into the stage's W [128][64] f16 tile (swizzled;
//     f16 weights are loaded as the tile itself), fences the async proxy and arrives on full[c % S]
//     (128 arrivals a phase).
//   warpgroups 1 and 2, the consumers (setmaxnreg up to 200): each owns BM / 2 rows x 128 outputs
//     (one or two m64n128 accumulators, 64 f32 registers each). Chunk c: wait full[c % S], issue 4 k16
//     slices of wgmma.mma_async (A = its rows of x, B = the W tile, both by descriptor), commit, wait
//     until at most this group is in flight, then release chunk c - 1 (empty[(c - 1) % S], one
//     arrival a consumer warp: 8 a phase).
// The producer waits empty[j % S] before loading chunk j (chunk j - S released). Phases: chunk j is
// fill j / S of its stage, so consumers wait full with parity (j / S) & 1 and the producer waits
// empty with parity ((j / S) & 1) ^ 1 (the phase before, which counts as complete for j < S).
// Rows >= R, outputs >= n_out and k past its end are zero-filled when loaded and never stored.

#define LATHE_GWG_THREADS 384
#define LATHE_GWG_BN 128
#ifndef LATHE_GWG_PRODUCER_REGS
#define LATHE_GWG_PRODUCER_REGS 88
#define LATHE_GWG_CONSUMER_REGS 200  // 88 * 128 + 200 * 256 = 62464 <= 65536; ptxas: no spills
#endif

template <class F, int BM>
struct LatheGwgConfig {
  static constexpr LatheGwgGeometry g = lathe_gwg_geometry(BM, LATHE_GWG_BN, F::lines, F::direct);
  static constexpr int S = g.stages, D = g.ahead, R = g.raw_slots > 0 ? g.raw_slots : 1;
  static constexpr int MI = BM / 128;  // m64 accumulators per consumer warpgroup
  static_assert(D >= 1 && S >= D + 2, "the stage ring needs a chunk of lookahead and S >= D + 2");
  static_assert(g.total <= 232448, "over the 227 KB of shared memory a block may have");
};

// Chunk j's x16 pieces (into its stage) and weight lines (into its raw slot, or the stage's W tile
// for f16 weights): cp.async by the 128 producer threads; the caller commits.
template <class F, int BM>
__device__ __forceinline__ void lathe_gwg_load(uint32_t sbase, const uint8_t* w, long long row_bytes, const __half* x,
                                               int n_rows, int k, int n_out, int m0, int n0, int j) {
  typedef LatheGwgConfig<F, BM> C;
  const int t = threadIdx.x, k0 = j * 64;
  const uint32_t xs = sbase + (j % C::S) * C::g.stage_bytes;
#pragma unroll 4
  for (int i = t; i < BM * 8; i += 128) {
    const int r = i >> 3, p = i & 7;
    const bool valid = m0 + r < n_rows && k0 + 8 * p < k;
    lathe_gwg_cp16(xs + lathe_gwg_swz(r, p), valid ? x + static_cast<long long>(m0 + r) * k + k0 + 8 * p : x, valid);
  }
  const uint32_t ws = F::direct ? xs + BM * 128 : sbase + C::g.raw_at + (j % C::R) * LATHE_GWG_BN * C::g.raw_stride;
  for (int i = t; i < LATHE_GWG_BN * F::lines; i += 128) {
    const int r = i / F::lines, l = i - r * F::lines;
    const uint8_t* src = w;
    const bool valid = n0 + r < n_out && F::line(w + static_cast<long long>(n0 + r) * row_bytes, k, j, l, src);
    lathe_gwg_cp16(ws + (F::direct ? lathe_gwg_swz(r, l) : r * C::g.raw_stride + l * 16), valid ? src : w, valid);
  }
}

template <class F, int BM>
__device__ __forceinline__ void lathe_gwg_producer(uint8_t* smem, uint32_t sbase, const uint8_t* w, long long row_bytes,
                                                   const __half* x, int n_rows, int k, int n_out, int m0, int n0,
                                                   int n_chunks) {
  typedef LatheGwgConfig<F, BM> C;
  const uint32_t full = sbase + C::g.bar_at, empty = full + 8 * C::S;
  const int t = threadIdx.x;
#pragma unroll
  for (int j = 0; j < C::D; ++j) {
    if (j < n_chunks) lathe_gwg_load<F, BM>(sbase, w, row_bytes, x, n_rows, k, n_out, m0, n0, j);
    lathe_gwg_commit();
  }
  for (int c = 0; c < n_chunks; ++c) {
    const int j = c + C::D;
    if (j < n_chunks) {
      lathe_gwg_bar_wait(empty + 8 * (j % C::S), ((j / C::S) & 1) ^ 1);  // chunk j - S released
      lathe_gwg_load<F, BM>(sbase, w, row_bytes, x, n_rows, k, n_out, m0, n0, j);
    }
    lathe_gwg_commit();  // an empty group past the end keeps the count of groups uniform
    lathe_gwg_cp_wait<C::D>();  // this thread's pieces of chunk c have landed
    if (!F::direct) {
      lathe_gwg_producer_sync();  // ... and every producer thread's: the raw lines of chunk c are in
      const uint8_t* raw = smem + C::g.raw_at + (c % C::R) * LATHE_GWG_BN * C::g.raw_stride;
      uint8_t* deq = smem + (c % C::S) * C::g.stage_bytes + BM * 128;
      for (int u = t; u < LATHE_GWG_BN * 2; u += 128) {
        const int r = u >> 1, h = u & 1;
        const size_t row_addr = reinterpret_cast<size_t>(w) + static_cast<size_t>(n0 + r) * row_bytes;
        uint32_t v[16];
        F::dequant(raw + r * C::g.raw_stride, row_addr, k, c, h, v);
#pragma unroll
        for (int i = 0; i < 4; ++i)
          *reinterpret_cast<uint4*>(deq + lathe_gwg_swz(r, 4 * h + i)) =
              make_uint4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
      }
    }
    lathe_gwg_fence_async();  // this thread's stores and landed cp.async, visible to wgmma
    lathe_gwg_bar_arrive(full + 8 * (c % C::S));
  }
}

template <class F, int BM>
__device__ __forceinline__ void lathe_gwg_consumer(uint32_t sbase, float* y, int n_rows, int n_out, int m0, int n0,
                                                   int n_chunks, int cw) {
  typedef LatheGwgConfig<F, BM> C;
  constexpr int MI = C::MI;
  const uint32_t full = sbase + C::g.bar_at, empty = full + 8 * C::S;
  const int lane = threadIdx.x & 31, wi = (threadIdx.x >> 5) & 3;
  const int row0 = cw * (BM / 2);  // this warpgroup's first row in the tile
  float acc[MI][64];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int e = 0; e < 64; ++e) acc[i][e] = 0.0f;

  for (int c = 0; c < n_chunks; ++c) {
    const int s = c % C::S;
    lathe_gwg_bar_wait(full + 8 * s, (c / C::S) & 1);
    const uint32_t xs = sbase + s * C::g.stage_bytes, ws = xs + BM * 128;
    lathe_gwg_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const uint64_t b = lathe_gwg_slice_desc(ws, 0, kk);
#pragma unroll
      for (int i = 0; i < MI; ++i) lathe_gwg_mma_n128(acc[i], lathe_gwg_slice_desc(xs, row0 + 64 * i, kk), b, 1);
    }
    lathe_gwg_wgmma_commit();
    lathe_gwg_wgmma_wait<1>();  // chunk c - 1's group is done: its stage may be refilled
    if (c > 0 && lane == 0) lathe_gwg_bar_arrive(empty + 8 * ((c - 1) % C::S));
  }
  lathe_gwg_wgmma_wait<0>();

  // wgmma's accumulator layout: warp wi holds rows 16 wi .. 16 wi + 15 of each m64 tile; lane (g, tq)
  // holds rows g, g + 8 and outputs 8 jn + 2 tq, + 1 in acc[4 jn .. 4 jn + 3].
  const int g = lane >> 2, tq = lane & 3;
  const bool pairs = (n_out & 1) == 0;  // then every (even output, next) pair is 8-byte aligned
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int jn = 0; jn < 16; ++jn)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int r = m0 + row0 + 64 * i + 16 * wi + g + 8 * hh, o = n0 + 8 * jn + 2 * tq;
        if (r >= n_rows || o >= n_out) continue;
        float* p = y + static_cast<long long>(r) * n_out + o;
        const float v0 = acc[i][4 * jn + 2 * hh], v1 = acc[i][4 * jn + 2 * hh + 1];
        if (pairs) {
          *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
        } else {
          p[0] = v0;
          if (o + 1 < n_out) p[1] = v1;
        }
      }
}

template <class F, int BM>
__device__ __forceinline__ void lathe_gwg_body(const uint8_t* w, long long row_bytes, const __half* x, float* y,
                                               int n_rows, int k, int n_out) {
  typedef LatheGwgConfig<F, BM> C;
  extern __shared__ __align__(1024) uint8_t lathe_gwg_smem_raw[];
  // The dynamic window's start is only 16-byte aligned for sure: swizzled tiles need 1024.
  const uint32_t raw_base = lathe_gwg_smem(lathe_gwg_smem_raw);
  const uint32_t pad = ((raw_base + 1023u) & ~1023u) - raw_base;
  uint8_t* smem = lathe_gwg_smem_raw + pad;
  const uint32_t sbase = raw_base + pad;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * LATHE_GWG_BN;
  const int n_chunks = (k + 63) >> 6;
  if (threadIdx.x == 0) {
    const uint32_t full = sbase + C::g.bar_at, empty = full + 8 * C::S;
    for (int s = 0; s < C::S; ++s) {
      lathe_gwg_bar_init(full + 8 * s, 128);  // every producer thread
      lathe_gwg_bar_init(empty + 8 * s, 8);   // every consumer warp
    }
  }
  __syncthreads();
  if (threadIdx.x < 128) {
    lathe_gwg_setmaxnreg_dec<LATHE_GWG_PRODUCER_REGS>();
    lathe_gwg_producer<F, BM>(smem, sbase, w, row_bytes, x, n_rows, k, n_out, m0, n0, n_chunks);
  } else {
    lathe_gwg_setmaxnreg_inc<LATHE_GWG_CONSUMER_REGS>();
    lathe_gwg_consumer<F, BM>(sbase, y, n_rows, n_out, m0, n0, n_chunks, (threadIdx.x >> 7) - 1);
  }
}

#define LATHE_GWG_KERNEL(FMT, BM)                                                                        \
  extern "C" __global__ void __launch_bounds__(LATHE_GWG_THREADS, 1) lathe_gemm_wgmma_##FMT##_##BM##x128( \
      const uint8_t* w, long long row_bytes, const __half* x, float* y, int n_rows, int k, int n_out) {   \
    lathe_pdl_entry();                                                                                    \
    lathe_gwg_body<lathe_gf16_##FMT, BM>(w, row_bytes, x, y, n_rows, k, n_out);                           \
  }

#define LATHE_GWG_FORMAT(FMT) \
  LATHE_GWG_KERNEL(FMT, 128)  \
  LATHE_GWG_KERNEL(FMT, 256)

LATHE_GWG_FORMAT(f16)
LATHE_GWG_FORMAT(q8_0)
LATHE_GWG_FORMAT(q2_k)
LATHE_GWG_FORMAT(q3_k)
LATHE_GWG_FORMAT(q4_k)
LATHE_GWG_FORMAT(q5_k)
LATHE_GWG_FORMAT(q6_k)
