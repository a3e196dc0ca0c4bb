// The mixture's grouped products on int8 tensor cores (moe_prefill.cuh builds the tile table they
// read; contracts: moe_prefill_launch.h). Block (x, y) takes tile x of the table ({expert, first
// grouped position p0, rows n}; blocks past the table's count leave at once: the grid is sized for
// the worst case because the count is only known on the device) and outputs [y BN, y BN + BN) of
// NMAT stacked matrices [n_expert][n_out][k] of one GGUF format:
//   gate_up (NMAT 2): h[p0 + i][o] = silu(gate_e[o] . x^_src) * (up_e[o] . x^_src), src the row of
//                     pair pair_of[p0 + i] (= r * top_k + j, so row r): x^ is read in place, gathered.
//   down (NMAT 1):    y[p0 + i][o] = down_e[o] . h^[p0 + i] (h^ already in grouped order).
// The k-loop is gemm_int8.cuh's (S cp.async stages of raw weight lines, activation levels and block
// scales: S = 2 overlaps the next tile's loads with this one's work inside a block; S = 1 leaves
// that to a second block on the SM (half the shared memory, <= 128 registers); the block unpacks each matrix's tile with gemm_blocks.cuh's unpackers; 8 warps, 2 along
// rows x 4 along outputs, run lathe_gemm_kstep per 32-value block), so every output's terms and their
// order are those of gemm_quantized: the int32 sums of a block are exact, scaled in f32.

#define LATHE_MOE_GEMM_THREADS 256

template <class F, bool X2, int BM, int BN, int NMAT, int S>
struct LatheMoeGemmLayout {
  static constexpr int w_stride = (F::lines | 1) * 16;
  static constexpr int w_bytes = NMAT * BN * w_stride;
  static constexpr int x_bytes = BM * 256;
  static constexpr int ds_bytes = BM * 128;
  static constexpr int stage_bytes = w_bytes + x_bytes * (X2 ? 2 : 1) + ds_bytes;
  static constexpr int unpacked_bytes = BN * 256 + BN * 32 * 2 + BN * 16;  // one matrix
  static constexpr int unpacked_at = S * stage_bytes;
  static constexpr int src_at = unpacked_at + NMAT * unpacked_bytes;
  static constexpr int total = src_at + BM * 4;  // moe_prefill_launch.cpp mirrors this
};

template <class F, bool X2, int BM, int BN, int NMAT, int S>
__device__ __forceinline__ void lathe_moe_gemm_load(uint8_t* stage, const uint8_t* w0, const uint8_t* w1,
                                                    long long row_bytes, long long wbase, const int8_t* q1,
                                                    const int8_t* q2, const float4* ds, const int* src, int n_rows,
                                                    int k, int n_out, int n0, int kt) {
  typedef LatheMoeGemmLayout<F, X2, BM, BN, NMAT, S> L;
  const int t = threadIdx.x;
  const int n_blocks = min(8, (k >> 5) - kt * 8);
  const int need = F::tile_bytes == 272 ? 34 * n_blocks : F::tile_bytes;
  for (int i = t; i < NMAT * BN * F::lines; i += LATHE_MOE_GEMM_THREADS) {
    const int m = i / (BN * F::lines), rest = i - m * (BN * F::lines);
    const int r = rest / F::lines, l = rest - r * F::lines;
    const uint8_t* w = m == 0 ? w0 : w1;
    const long long base = wbase + static_cast<long long>(n0 + r) * row_bytes + static_cast<long long>(kt) * F::tile_bytes;
    const bool valid = n0 + r < n_out && l * 16 < static_cast<int>(base & 15) + need;
    lathe_gemm_cp16(stage + (m * BN + r) * L::w_stride + l * 16, valid ? w + (base & ~15ll) + l * 16 : w, valid);
  }
  const int k0 = kt * 256;
  for (int i = t; i < BM * 16; i += LATHE_MOE_GEMM_THREADS) {
    const int r = i >> 4, c = i & 15;
    const bool valid = r < n_rows && k0 + 16 * c < k;
    const long long at = static_cast<long long>(src[r]) * k + k0 + 16 * c;
    lathe_gemm_cp16(stage + L::w_bytes + lathe_gemm_swz(r, c), valid ? q1 + at : q1, valid);
    if (X2) lathe_gemm_cp16(stage + L::w_bytes + L::x_bytes + lathe_gemm_swz(r, c), valid ? q2 + at : q2, valid);
  }
  uint8_t* sds = stage + L::w_bytes + L::x_bytes * (X2 ? 2 : 1);
  for (int i = t; i < BM * 8; i += LATHE_MOE_GEMM_THREADS) {
    const int r = i >> 3, b = i & 7;
    const bool valid = r < n_rows && b < n_blocks;
    const float4* p = ds + static_cast<long long>(src[r]) * (k >> 5) + kt * 8 + b;
    lathe_gemm_cp16(sds + (b * BM + r) * 16, valid ? p : ds, valid);
  }
}

template <class F, bool X2, int BM, int BN, int NMAT, int S>
__device__ __forceinline__ void lathe_moe_gemm_body(const uint8_t* w0, const uint8_t* w1, long long row_bytes,
                                                    long long expert_bytes, const int8_t* q1, const int8_t* q2,
                                                    const float4* ds, const int* pair_of, int top_k,
                                                    const int4* tiles, const int* n_tiles, float* y, int k,
                                                    int n_out) {
  typedef LatheMoeGemmLayout<F, X2, BM, BN, NMAT, S> L;
  constexpr int MT = BM / 32, NT = BN / 32;
  if (static_cast<int>(blockIdx.x) >= n_tiles[0]) return;  // surplus block of the worst-case grid
  const int4 tile = tiles[blockIdx.x];
  const int expert = tile.x, p0 = tile.y, n_rows = tile.z;
  extern __shared__ __align__(16) uint8_t lathe_moe_gemm_smem[];
  uint8_t* smem = lathe_moe_gemm_smem;
  int* src = reinterpret_cast<int*>(smem + L::src_at);
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5, g = lane >> 2;
  for (int r = t; r < BM; r += LATHE_MOE_GEMM_THREADS)
    src[r] = r < n_rows ? (pair_of ? pair_of[p0 + r] / top_k : p0 + r) : 0;
  __syncthreads();
  LatheGemmUnpacked u[NMAT];
#pragma unroll
  for (int m = 0; m < NMAT; ++m) {
    uint8_t* at = smem + L::unpacked_at + m * L::unpacked_bytes;
    u[m] = LatheGemmUnpacked{at, reinterpret_cast<float*>(at + BN * 256), reinterpret_cast<float*>(at + BN * 288),
                             reinterpret_cast<int8_t*>(at + BN * 320), BN};
  }
  const int wm0 = (warp >> 2) * (BM / 2), wn0 = (warp & 3) * (BN / 4);
  const int n0 = blockIdx.y * BN, n_tiles_k = (k + 255) >> 8;
  const long long wbase = static_cast<long long>(expert) * expert_bytes;

  float acc[NMAT][MT][NT][4];
#pragma unroll
  for (int m = 0; m < NMAT; ++m) lathe_gemm_zero(acc[m]);

  lathe_moe_gemm_load<F, X2, BM, BN, NMAT, S>(smem, w0, w1, row_bytes, wbase, q1, q2, ds, src, n_rows, k, n_out, n0, 0);
  lathe_gemm_commit();
  for (int kt = 0; kt < n_tiles_k; ++kt) {
    uint8_t* stage = smem + (S == 2 ? (kt & 1) * L::stage_bytes : 0);
    if (S == 1 && kt > 0) {  // the barrier ending tile kt - 1 freed the one stage
      lathe_moe_gemm_load<F, X2, BM, BN, NMAT, S>(smem, w0, w1, row_bytes, wbase, q1, q2, ds, src, n_rows, k, n_out,
                                                  n0, kt);
      lathe_gemm_commit();
    }
    lathe_gemm_wait_all();
    __syncthreads();  // tile kt is in; every warp is done with tile kt - 1
    if (S == 2) {
      if (kt + 1 < n_tiles_k)
        lathe_moe_gemm_load<F, X2, BM, BN, NMAT, S>(smem + ((kt + 1) & 1) * L::stage_bytes, w0, w1, row_bytes, wbase,
                                                    q1, q2, ds, src, n_rows, k, n_out, n0, kt + 1);
      lathe_gemm_commit();
    }
    {
      const int n_blocks = min(8, (k >> 5) - kt * 8);
#pragma unroll
      for (int m = 0; m < NMAT; ++m)
#pragma unroll
        for (int i = 0; i < BN / 64; ++i) {
          const int unit = i * LATHE_MOE_GEMM_THREADS + t, r = unit >> 2, part = unit & 3;  // a warp: 8 rows
          const long long base =
              wbase + static_cast<long long>(n0 + r) * row_bytes + static_cast<long long>(kt) * F::tile_bytes;
          F::unpack(stage + (m * BN + r) * L::w_stride + static_cast<int>(base & 15), part, n_blocks, r, u[m]);
        }
    }
    __syncthreads();
    const uint8_t* xs1 = stage + L::w_bytes;
    const uint8_t* xs2 = xs1 + L::x_bytes;
    const float4* sds = reinterpret_cast<const float4*>(stage + L::w_bytes + L::x_bytes * (X2 ? 2 : 1));
#pragma unroll 2
    for (int kk = 0; kk < 8; ++kk) {
      auto dx_of = [&](int i, float4& dxa, float4& dxb) { lathe_gemm_dx<F, X2>(sds, kk, BM, wm0, i, g, dxa, dxb); };
#pragma unroll
      for (int m = 0; m < NMAT; ++m)
        lathe_gemm_kstep<F, X2, MT, NT, BN>(acc[m], kk, u[m].levels, u[m].scale, u[m].minus, u[m].sub, xs1, xs2, wm0,
                                            wn0, lane, dx_of);
    }
    if (S == 1) __syncthreads();  // every warp is done with the stage and the unpacked tile
  }
  const int tq = lane & 3;
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int r = wm0 + 16 * i + g + 8 * (c >> 1), o = n0 + wn0 + 8 * j + 2 * tq + (c & 1);
        if (r >= n_rows || o >= n_out) continue;
        float v = acc[0][i][j][c];
        if (NMAT == 2) v = lathe_swiglu(v, acc[NMAT - 1][i][j][c]);  // silu(gate) * up
        y[static_cast<long long>(p0 + r) * n_out + o] = v;
      }
}

#define LATHE_MOE_GEMM_KERNEL(WHAT, NMAT, BN, FMT, CONTRACT, X2, BM, S, BLOCKS, SUFFIX)                          \
  extern "C" __global__ void __launch_bounds__(LATHE_MOE_GEMM_THREADS, BLOCKS)                                     \
      lathe_moe_grouped_##WHAT##_##FMT##_##CONTRACT##_##BM##SUFFIX(                                                \
          const uint8_t* w0, const uint8_t* w1, long long row_bytes, long long expert_bytes, const int8_t* q1,      \
          const int8_t* q2, const float4* ds, const int* pair_of, int top_k, const int4* tiles, const int* n_tiles, \
          float* y, int k, int n_out) {                                                                            \
    lathe_pdl_entry();                                                                                             \
    lathe_moe_gemm_body<lathe_gemm_##FMT, X2, BM, BN, NMAT, S>(w0, w1, row_bytes, expert_bytes, q1, q2, ds,         \
                                                               pair_of, top_k, tiles, n_tiles, y, k, n_out);       \
  }

// Two-stage kernels at 32 and 64 rows; single-stage ones (two blocks an SM) at 32 rows.
#define LATHE_MOE_GEMM_FORMAT(FMT)                                    \
  LATHE_MOE_GEMM_KERNEL(gate_up, 2, 64, FMT, int8, false, 32, 2, 1, )   \
  LATHE_MOE_GEMM_KERNEL(gate_up, 2, 64, FMT, int8, false, 64, 2, 1, )   \
  LATHE_MOE_GEMM_KERNEL(gate_up, 2, 64, FMT, int8x2, true, 32, 2, 1, )  \
  LATHE_MOE_GEMM_KERNEL(gate_up, 2, 64, FMT, int8x2, true, 64, 2, 1, )  \
  LATHE_MOE_GEMM_KERNEL(down, 1, 128, FMT, int8, false, 32, 2, 1, )     \
  LATHE_MOE_GEMM_KERNEL(down, 1, 128, FMT, int8, false, 64, 2, 1, )     \
  LATHE_MOE_GEMM_KERNEL(down, 1, 128, FMT, int8x2, true, 32, 2, 1, )    \
  LATHE_MOE_GEMM_KERNEL(down, 1, 128, FMT, int8x2, true, 64, 2, 1, )    \
  LATHE_MOE_GEMM_KERNEL(gate_up, 2, 64, FMT, int8, false, 32, 1, 2, _1s) \
  LATHE_MOE_GEMM_KERNEL(gate_up, 2, 64, FMT, int8x2, true, 32, 1, 2, _1s) \
  LATHE_MOE_GEMM_KERNEL(down, 1, 128, FMT, int8, false, 32, 1, 2, _1s)  \
  LATHE_MOE_GEMM_KERNEL(down, 1, 128, FMT, int8x2, true, 32, 1, 2, _1s)

LATHE_MOE_GEMM_FORMAT(q8_0)
LATHE_MOE_GEMM_FORMAT(q4_k)
LATHE_MOE_GEMM_FORMAT(q6_k)
