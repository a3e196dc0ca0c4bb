// The batched product for prefill chunks: y[r][o] = sum_i W[o][i] * x[r][i] for R rows (any R), f32
// activations, weights in any block format (gemv_blocks.cuh) dequantized exactly into shared memory,
// f32 FMAs (the f32 contract; tensor cores come later). x [R][k] and y [R][n_out] are f32, rows
// contiguous, x 16-byte aligned; k % 32 == 0 (256 for the K formats).
// Tiles of 64 rows x 64 outputs x 32 values; grid (ceil(n_out / 64), ceil(R / 64)), 256 threads, each
// owning a 4 x 4 block of outputs. Loading: thread t brings piece t % 4 (8 values) of tile row t / 4,
// both of W and of x.

#define LATHE_MATMUL_TILE 64
#define LATHE_MATMUL_PAD 68  // floats per shared row: keeps float4 alignment, spreads the banks

template <class F>
__device__ __forceinline__ void lathe_matmul_body(const uint8_t* w, long long row_bytes, const float* x, float* y,
                                                  int n_rows, int k, int n_out) {
  __shared__ __align__(16) float xs[32][LATHE_MATMUL_PAD];  // [value][row]
  __shared__ __align__(16) float ws[32][LATHE_MATMUL_PAD];  // [value][output]
  const int t = threadIdx.x;
  const int m0 = blockIdx.y * LATHE_MATMUL_TILE, n0 = blockIdx.x * LATHE_MATMUL_TILE;
  const int tm = 4 * (t >> 4), tn = 4 * (t & 15);
  const int lr = t >> 2, lp = t & 3;
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (int k0 = 0; k0 < k; k0 += 32) {
    const int v = k0 + 8 * lp;
    float wv[8], xv[8];
    if (n0 + lr < n_out) {
      const uint8_t* u = w + (n0 + lr) * row_bytes + static_cast<long long>(v / F::unit_values) * F::unit_bytes;
      lathe_gemv_dequant8<F>(u, (v % F::unit_values) / 8, wv);
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) wv[i] = 0.0f;
    }
    if (m0 + lr < n_rows) {
      const float4* p = reinterpret_cast<const float4*>(x + static_cast<long long>(m0 + lr) * k + v);
      const float4 a = __ldg(p), b = __ldg(p + 1);
      xv[0] = a.x; xv[1] = a.y; xv[2] = a.z; xv[3] = a.w; xv[4] = b.x; xv[5] = b.y; xv[6] = b.z; xv[7] = b.w;
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) xv[i] = 0.0f;
    }
    __syncthreads();  // the previous tile is consumed
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      ws[8 * lp + i][lr] = wv[i];
      xs[8 * lp + i][lr] = xv[i];
    }
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < 32; ++kk) {
      const float4 a = *reinterpret_cast<const float4*>(&xs[kk][tm]);
      const float4 b = *reinterpret_cast<const float4*>(&ws[kk][tn]);
      const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (m0 + tm + i < n_rows && n0 + tn + j < n_out)
        y[static_cast<long long>(m0 + tm + i) * n_out + n0 + tn + j] = acc[i][j];
}

#define LATHE_MATMUL_KERNEL(FMT)                                                                        \
  extern "C" __global__ void __launch_bounds__(256) lathe_matmul_##FMT(                                 \
      const uint8_t* w, long long row_bytes, const float* x, float* y, int n_rows, int k, int n_out) { lathe_pdl_entry();   \
    lathe_matmul_body<lathe_gemv_##FMT>(w, row_bytes, x, y, n_rows, k, n_out);                          \
  }

LATHE_MATMUL_KERNEL(q8_0)
LATHE_MATMUL_KERNEL(q4_0)
LATHE_MATMUL_KERNEL(q4_1)
LATHE_MATMUL_KERNEL(q5_0)
LATHE_MATMUL_KERNEL(q5_1)
LATHE_MATMUL_KERNEL(q2_k)
LATHE_MATMUL_KERNEL(q3_k)
LATHE_MATMUL_KERNEL(q4_k)
LATHE_MATMUL_KERNEL(q5_k)
LATHE_MATMUL_KERNEL(q6_k)
LATHE_MATMUL_KERNEL(f32)
LATHE_MATMUL_KERNEL(f16)
LATHE_MATMUL_KERNEL(bf16)
