// The prefill product on int8 tensor cores, warp-specialized: the same contract and the same sums as
// gemm_int8.cuh (y [R][n_out] f32 = x^ . W^T, W read in place; host side gemm_launch.h), but the block's
// warps split into producers and consumers so the tensor cores no longer idle while a tile unpacks.
//
// A block of 384 threads computes a BM x BN tile of y, walking k in tiles of 256 values:
//   producers (warps 8..11): for k-tile kt + 1, cp.async the raw weight rows into raw slot
//     (kt + 1) & 1, wait until the consumers have freed stage (kt + 1) % S (mbarrier empty), cp.async
//     the activation levels and ds words into it; then, once tile kt's copies are in (their own
//     cp.async groups, then named barrier 1 among producers), unpack raw slot kt & 1 into stage kt % S
//     (gemm_blocks.cuh's unpackers) and arrive on full[kt % S]. Two raw slots, S unpacked stages.
//   consumers (warps 0..7, 2 along rows x 4 along outputs, each a (BM / 2) x (BN / 4) sub-tile): wait
//     on full[kt % S], run the k-tile's mma.sync m16n8k32 (q6_K: two m16n8k16) exactly as gemm_int8.cuh
//     does, per 32-value block from zero with the block's scales applied in f32 registers, then arrive
//     on empty[kt % S]. The order of every output's f32 terms is gemm_int8.cuh's, so both kernels give
//     bit-identical y.
// No __syncthreads after the barriers' initialization: producers and consumers meet only at mbarriers.
// Invariants: a stage is written only between its empty phase completing and the producers' arrival
// on its full barrier; a raw slot is rewritten only after every producer passed named barrier 1 at
// the top of the next iteration (all done unpacking from it).

template <class F, bool X2, int BM, int BN, int S>
__device__ __forceinline__ void lathe_gemm_ws_consume(const uint8_t* stage, float (&acc)[BM / 32][BN / 32][4],
                                                      int wm0, int wn0, int lane) {
  typedef LatheGemmWsLayout<F, X2, BM, BN, S> L;
  constexpr int MT = BM / 32, NT = BN / 32;
  const int g = lane >> 2;
  const uint8_t* xs1 = stage;
  const uint8_t* xs2 = stage + L::x_bytes;
  const float* sds = reinterpret_cast<const float*>(stage + L::ds_at);
  const uint8_t* levels = stage + L::levels_at;
  const float* scale = reinterpret_cast<const float*>(stage + L::scale_at);
  const float* minus = reinterpret_cast<const float*>(stage + L::minus_at);
  const int8_t* sub = reinterpret_cast<const int8_t*>(stage + L::sub_at);
#pragma unroll 2
  for (int kk = 0; kk < 8; ++kk)
    lathe_gemm_kstep<F, X2, MT, NT, BN>(acc, kk, levels, scale, minus, sub, xs1, xs2, wm0, wn0, lane,
                                        [&](int i, float4& dxa, float4& dxb) {
                                          const float* pa = sds + (kk * BM + wm0 + 16 * i + g) * L::dsw;
                                          dxa = lathe_gemm_ws_dx<L::dsw>(pa);
                                          dxb = lathe_gemm_ws_dx<L::dsw>(pa + 8 * L::dsw);
                                        });
}

template <class F, bool X2, int BM, int BN, int S>
__device__ __forceinline__ void lathe_gemm_ws_produce(uint8_t* smem, const uint8_t* w, long long row_bytes,
                                                      const int8_t* q1, const int8_t* q2, const float4* ds,
                                                      int n_rows, int k, int n_out, int m0, int n0, int pt) {
  typedef LatheGemmWsLayout<F, X2, BM, BN, S> L;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + L::bars_at);
  uint64_t* empty = full + S;
  uint8_t* raw = smem + L::raw_at;
  const int n_tiles = (k + 255) >> 8;
  lathe_gemm_ws_load_w<F, BN, L::w_stride>(raw, w, row_bytes, k, n_out, n0, 0, pt);
  lathe_gemm_commit();
  lathe_gemm_ws_load_x<L, X2, BM>(smem, q1, q2, ds, n_rows, k, m0, 0, pt);  // stage 0 starts free
  lathe_gemm_commit();
  for (int kt = 0; kt < n_tiles; ++kt) {
    lathe_gemm_ws_producers_sync();  // every producer is done unpacking tile kt - 1 from raw slot (kt + 1) & 1
    const int next = kt + 1;
    if (next < n_tiles) lathe_gemm_ws_load_w<F, BN, L::w_stride>(raw + (next & 1) * L::raw_bytes, w, row_bytes, k,
                                                                 n_out, n0, next, pt);
    lathe_gemm_commit();  // (empty groups keep the count of groups per iteration at two)
    if (next < n_tiles) {
      const int s = next % S;
      lathe_gemm_ws_bar_wait(empty + s, ((next / S) & 1) ^ 1);  // the consumers are done with tile next - S
      lathe_gemm_ws_load_x<L, X2, BM>(smem + s * L::stage_bytes, q1, q2, ds, n_rows, k, m0, next, pt);
    }
    lathe_gemm_commit();
    lathe_gemm_ws_wait_2();            // this thread's copies of tile kt are in
    lathe_gemm_ws_producers_sync();    // and every producer's
    uint8_t* stage = smem + (kt % S) * L::stage_bytes;
    const LatheGemmUnpacked u{stage + L::levels_at, reinterpret_cast<float*>(stage + L::scale_at),
                              reinterpret_cast<float*>(stage + L::minus_at),
                              reinterpret_cast<int8_t*>(stage + L::sub_at), BN};
    const uint8_t* slot = raw + (kt & 1) * L::raw_bytes;
    const int n_blocks = min(8, (k >> 5) - kt * 8);
#pragma unroll
    for (int i = 0; i < BN / 32; ++i) {
      const int unit = i * LATHE_GEMM_WS_PRODUCERS + pt, r = unit >> 2, part = unit & 3;  // a warp: 8 rows
      const long long base = static_cast<long long>(n0 + r) * row_bytes + static_cast<long long>(kt) * F::tile_bytes;
      F::unpack(slot + r * L::w_stride + static_cast<int>(base & 15), part, n_blocks, r, u);
    }
    lathe_gemm_ws_bar_arrive(full + kt % S);
  }
}

template <class F, bool X2, int BM, int BN, int S>
__device__ __forceinline__ void lathe_gemm_ws_body(const uint8_t* w, long long row_bytes, const int8_t* q1,
                                                   const int8_t* q2, const float4* ds, float* y, int n_rows, int k,
                                                   int n_out) {
  typedef LatheGemmWsLayout<F, X2, BM, BN, S> L;
  constexpr int MT = BM / 32, NT = BN / 32;
  extern __shared__ __align__(16) uint8_t lathe_gemm_ws_smem[];
  uint8_t* smem = lathe_gemm_ws_smem;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + L::bars_at);
  uint64_t* empty = full + S;
  const int t = threadIdx.x;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
  if (t == 0) {
    for (int s = 0; s < S; ++s) {
      lathe_gemm_ws_bar_init(full + s, LATHE_GEMM_WS_PRODUCERS);
      lathe_gemm_ws_bar_init(empty + s, LATHE_GEMM_WS_CONSUMERS);
    }
  }
  __syncthreads();  // the barriers are initialized before anyone arrives or waits
  if (t >= LATHE_GEMM_WS_CONSUMERS) {
    lathe_gemm_ws_produce<F, X2, BM, BN, S>(smem, w, row_bytes, q1, q2, ds, n_rows, k, n_out, m0, n0,
                                            t - LATHE_GEMM_WS_CONSUMERS);
    return;
  }
  const int lane = t & 31, warp = t >> 5;
  const int wm0 = (warp >> 2) * (BM / 2), wn0 = (warp & 3) * (BN / 4);
  const int n_tiles = (k + 255) >> 8;
  float acc[MT][NT][4];
  lathe_gemm_zero(acc);
  for (int kt = 0; kt < n_tiles; ++kt) {
    const int s = kt % S;
    lathe_gemm_ws_bar_wait(full + s, (kt / S) & 1);
    // q8_0's last tile may end before 8 blocks: the blocks past k are zero-filled levels, zero ds and
    // zero scale, so they add nothing, as in gemm_int8.cuh.
    lathe_gemm_ws_consume<F, X2, BM, BN, S>(smem + s * L::stage_bytes, acc, wm0, wn0, lane);
    lathe_gemm_ws_bar_arrive(empty + s);
  }
  lathe_gemm_store<MT, NT>(acc, y, m0, n0, wm0, wn0, lane, n_rows, n_out);
}

// Tiles and stages: what fits in 227 KB (LatheGemmWsLayout's static_assert): BN 128 takes 2 unpacked
// stages, BN 64 takes 3 (either way two raw slots besides).
#define LATHE_GEMM_WS_KERNEL(FMT, CONTRACT, X2, BM, BN, S)                                                      \
  extern "C" __global__ void __launch_bounds__(LATHE_GEMM_WS_THREADS, 1)                                        \
      lathe_gemm_ws_##FMT##_##CONTRACT##_##BM##x##BN(const uint8_t* w, long long row_bytes, const int8_t* q1,   \
                                                      const int8_t* q2, const float4* ds, float* y, int n_rows, \
                                                      int k, int n_out) {                                       \
    lathe_pdl_entry();                                                                                          \
    lathe_gemm_ws_body<lathe_gemm_##FMT, X2, BM, BN, S>(w, row_bytes, q1, q2, ds, y, n_rows, k, n_out);         \
  }

#define LATHE_GEMM_WS_FORMAT(FMT)                    \
  LATHE_GEMM_WS_KERNEL(FMT, int8, false, 128, 128, 2) \
  LATHE_GEMM_WS_KERNEL(FMT, int8, false, 128, 64, 3)  \
  LATHE_GEMM_WS_KERNEL(FMT, int8x2, true, 64, 128, 2) \
  LATHE_GEMM_WS_KERNEL(FMT, int8x2, true, 64, 64, 3)

LATHE_GEMM_WS_FORMAT(q8_0)
LATHE_GEMM_WS_FORMAT(q4_k)
LATHE_GEMM_WS_FORMAT(q6_k)
