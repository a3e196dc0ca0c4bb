// The prefill product on int8 tensor cores: y [R][n_out] f32 = x^ . W^T, W read in place in its GGUF
// block format (q8_0, q4_K, q6_K), x^ the quantize_activations output (quantize_act.cuh) under the
// int8 or int8x2 contract. Host side and contract: gemm_launch.h.
//
// A block of 256 threads computes a BM x BN tile of y (BM rows of x, BN outputs), walking k in tiles
// of 256 values (one K-format super-block, eight q8_0 blocks):
//   1. cp.async brings, per stage, the raw weight bytes of the tile (each row's span of 16-byte lines,
//      starting at the line holding its first byte), the activation levels (q1, and q2 for int8x2;
//      [BM][256] swizzled) and the block scales ds ([BM][8] float4). Two stages: tile t + 1 loads
//      while tile t is unpacked and multiplied.
//   2. The block unpacks the weight tile into int8 levels and per-block float scales
//      (gemm_blocks.cuh).
//   3. Eight warps (2 along rows x 4 along outputs) each own a (BM / 2) x (BN / 4) sub-tile. Per
//      32-value block: ldmatrix fragments, mma m16n8k32 (q6_K: two m16n8k16, one per 16-value
//      sub-block, combined with its integer scales) from zero, so the int32 sums are one block's and
//      exact; then in registers acc += w_scale * (d1 S1 [+ d2 S2]) [- w_min * block sum of x^].
// Rows >= R and outputs >= n_out are zero-filled when loaded and never stored; q8_0's last tile may
// hold fewer than 8 blocks (k % 256 != 0).

#define LATHE_GEMM_THREADS 256
#define LATHE_GEMM_STAGES 2

template <class F, bool X2, int BM, int BN>
struct LatheGemmLayout {
  static constexpr int w_stride = (F::lines | 1) * 16;  // an odd count of lines: 8 rows, 8 bank groups
  static constexpr int w_bytes = BN * w_stride;
  static constexpr int x_bytes = BM * 256;
  static constexpr int ds_bytes = BM * 128;  // [8][BM] float4: a warp's rows are neighbours
  static constexpr int stage_bytes = w_bytes + x_bytes * (X2 ? 2 : 1) + ds_bytes;
  static constexpr int levels_at = LATHE_GEMM_STAGES * stage_bytes;
  static constexpr int scale_at = levels_at + BN * 256;
  static constexpr int minus_at = scale_at + BN * 32;
  static constexpr int sub_at = minus_at + BN * 32;
  static constexpr int total = sub_at + BN * 16;  // gemm_launch.cpp's gemm_shared_bytes mirrors this
};

template <class F, bool X2, int BM, int BN>
__device__ __forceinline__ void lathe_gemm_load(uint8_t* stage, const uint8_t* w, long long row_bytes,
                                                const int8_t* q1, const int8_t* q2, const float4* ds, int n_rows,
                                                int k, int n_out, int m0, int n0, int kt) {
  typedef LatheGemmLayout<F, X2, BM, BN> L;
  const int t = threadIdx.x;
  const int n_blocks = min(8, (k >> 5) - kt * 8);
  const int need = F::tile_bytes == 272 ? 34 * n_blocks : F::tile_bytes;  // bytes of this tile in a row
  for (int i = t; i < BN * F::lines; i += LATHE_GEMM_THREADS) {
    const int r = i / F::lines, l = i - r * F::lines;
    const long long base = static_cast<long long>(n0 + r) * row_bytes + static_cast<long long>(kt) * F::tile_bytes;
    const bool valid = n0 + r < n_out && l * 16 < static_cast<int>(base & 15) + need;
    lathe_gemm_cp16(stage + r * L::w_stride + l * 16, valid ? w + (base & ~15ll) + l * 16 : w, valid);
  }
  const int k0 = kt * 256;
  for (int i = t; i < BM * 16; i += LATHE_GEMM_THREADS) {
    const int r = i >> 4, c = i & 15;
    const bool valid = m0 + r < n_rows && k0 + 16 * c < k;
    const long long at = static_cast<long long>(m0 + r) * k + k0 + 16 * c;
    lathe_gemm_cp16(stage + L::w_bytes + lathe_gemm_swz(r, c), valid ? q1 + at : q1, valid);
    if (X2) lathe_gemm_cp16(stage + L::w_bytes + L::x_bytes + lathe_gemm_swz(r, c), valid ? q2 + at : q2, valid);
  }
  uint8_t* sds = stage + L::w_bytes + L::x_bytes * (X2 ? 2 : 1);
  for (int i = t; i < BM * 8; i += LATHE_GEMM_THREADS) {
    const int r = i >> 3, b = i & 7;
    const bool valid = m0 + r < n_rows && b < n_blocks;
    const float4* src = ds + static_cast<long long>(m0 + r) * (k >> 5) + kt * 8 + b;
    lathe_gemm_cp16(sds + (b * BM + r) * 16, valid ? src : ds, valid);
  }
}

template <class F, bool X2, int BM, int BN>
__device__ __forceinline__ void lathe_gemm_body(const uint8_t* w, long long row_bytes, const int8_t* q1,
                                                const int8_t* q2, const float4* ds, float* y, int n_rows, int k,
                                                int n_out) {
  typedef LatheGemmLayout<F, X2, BM, BN> L;
  constexpr int MT = BM / 32, NT = BN / 32;  // 16-row and 8-output mma tiles per warp
  extern __shared__ __align__(16) uint8_t lathe_gemm_smem[];
  uint8_t* smem = lathe_gemm_smem;
  const LatheGemmUnpacked u{smem + L::levels_at, reinterpret_cast<float*>(smem + L::scale_at),
                            reinterpret_cast<float*>(smem + L::minus_at), reinterpret_cast<int8_t*>(smem + L::sub_at),
                            BN};
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int g = lane >> 2;
  const int wm0 = (warp >> 2) * (BM / 2), wn0 = (warp & 3) * (BN / 4);
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
  const int n_tiles = (k + 255) >> 8;

  float acc[MT][NT][4];
  lathe_gemm_zero(acc);

  lathe_gemm_load<F, X2, BM, BN>(smem, w, row_bytes, q1, q2, ds, n_rows, k, n_out, m0, n0, 0);
  lathe_gemm_commit();
  for (int kt = 0; kt < n_tiles; ++kt) {
    uint8_t* stage = smem + (kt & 1) * L::stage_bytes;
    lathe_gemm_wait_all();
    __syncthreads();  // tile kt is in; every warp is done with tile kt - 1 (its stage and the unpacked tile)
    if (kt + 1 < n_tiles)
      lathe_gemm_load<F, X2, BM, BN>(smem + ((kt + 1) & 1) * L::stage_bytes, w, row_bytes, q1, q2, ds, n_rows, k,
                                     n_out, m0, n0, kt + 1);
    lathe_gemm_commit();
    {
      const int n_blocks = min(8, (k >> 5) - kt * 8);
#pragma unroll
      for (int i = 0; i < BN / 64; ++i) {
        const int unit = i * LATHE_GEMM_THREADS + t, r = unit >> 2, part = unit & 3;  // a warp: 8 rows
        const long long base = static_cast<long long>(n0 + r) * row_bytes + static_cast<long long>(kt) * F::tile_bytes;
        F::unpack(stage + r * L::w_stride + static_cast<int>(base & 15), part, n_blocks, r, u);
      }
    }
    __syncthreads();
    const uint8_t* xs1 = stage + L::w_bytes;
    const uint8_t* xs2 = xs1 + L::x_bytes;
    const float4* sds = reinterpret_cast<const float4*>(stage + L::w_bytes + L::x_bytes * (X2 ? 2 : 1));
#pragma unroll 2
    for (int kk = 0; kk < 8; ++kk)
      lathe_gemm_kstep<F, X2, MT, NT, BN>(acc, kk, u.levels, u.scale, u.minus, u.sub, xs1, xs2, wm0, wn0, lane,
                                          [&](int i, float4& dxa, float4& dxb) {
                                            lathe_gemm_dx<F, X2>(sds, kk, BM, wm0, i, g, dxa, dxb);
                                          });
  }
  lathe_gemm_store<MT, NT>(acc, y, m0, n0, wm0, wn0, lane, n_rows, n_out);
}

#define LATHE_GEMM_KERNEL(FMT, CONTRACT, X2, BM, BN)                                                            \
  extern "C" __global__ void __launch_bounds__(LATHE_GEMM_THREADS, 1) lathe_gemm_##FMT##_##CONTRACT##_##BM##x##BN( \
      const uint8_t* w, long long row_bytes, const int8_t* q1, const int8_t* q2, const float4* ds, float* y,    \
      int n_rows, int k, int n_out) {                                                                           \
    lathe_pdl_entry();                                                                                          \
    lathe_gemm_body<lathe_gemm_##FMT, X2, BM, BN>(w, row_bytes, q1, q2, ds, y, n_rows, k, n_out);               \
  }

#define LATHE_GEMM_FORMAT(FMT)                 \
  LATHE_GEMM_KERNEL(FMT, int8, false, 128, 128) \
  LATHE_GEMM_KERNEL(FMT, int8, false, 128, 64)  \
  LATHE_GEMM_KERNEL(FMT, int8, false, 64, 128)  \
  LATHE_GEMM_KERNEL(FMT, int8, false, 64, 64)   \
  LATHE_GEMM_KERNEL(FMT, int8x2, true, 64, 128) \
  LATHE_GEMM_KERNEL(FMT, int8x2, true, 64, 64)

LATHE_GEMM_FORMAT(q8_0)
LATHE_GEMM_FORMAT(q4_k)
LATHE_GEMM_FORMAT(q6_k)
