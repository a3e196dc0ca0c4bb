// RMS norms over the last dimension: h = x / sqrt(mean(x^2) + eps) * w, w optional (null: none).
// The mean square is an f32 sum (the interpreter's is f64; the difference is ~n * 2^-24 relative).
// Two shapes of launch over rows of n values:
//   lathe_rms_norm       one block per row (n large: a model's hidden size)
//   lathe_rms_norm_warp  one warp per row, blockDim.x / 32 rows per block (n small: a head's d,
//                        i.e. the per-head norm of [rows, heads, d] as rows * heads rows of d)
// lathe_add_rms_norm is the sum and the norm after it in one kernel: x += y (written back), h = norm(x) * w.
// x, y, h may not overlap (except that h == x is allowed where y is null: a norm in place).
// The quantized epilogue (fusion rule quantize_epilogue): where q1 is not null, h is also written in
// the int8 contracts' form (common.cuh lathe_quantize_block32; q2 with two_words), n % 32 == 0: each
// warp takes whole 32-value blocks of the row, so the values quantized are exactly the h written.

// The last pass of the block-per-row norms: h[i] = v(i), and its quantized form when asked for.
template <typename F>
__device__ __forceinline__ void lathe_norm_write(F v, float* hr, long long row, int n, int8_t* q1, int8_t* q2,
                                                 float4* ds, int two_words) {
  if (!q1) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) hr[i] = v(i);
    return;
  }
  const int lane = threadIdx.x & 31, n_warps = blockDim.x >> 5;
  for (int b = threadIdx.x >> 5; b < (n >> 5); b += n_warps) {
    const int i = b * 32 + lane;
    const float value = v(i);
    hr[i] = value;
    lathe_quantize_block32(value, row * n + i, two_words, q1, q2, ds);
  }
}

extern "C" __global__ void lathe_rms_norm(const float* x, const float* __restrict__ w,
                                          float* h, int n, float eps, int8_t* q1, int8_t* q2, float4* ds,
                                          int two_words) { lathe_pdl_entry();
  __shared__ float scratch[32];
  const long long row = blockIdx.x;
  const float* xr = x + row * n;
  float* hr = h + row * n;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) sum += xr[i] * xr[i];
  const float inv = rsqrtf(lathe_block_sum(sum, scratch) / float(n) + eps);
  lathe_norm_write([&](int i) { return xr[i] * inv * (w ? w[i] : 1.0f); }, hr, row, n, q1, q2, ds, two_words);
}

extern "C" __global__ void lathe_add_rms_norm(float* __restrict__ x, const float* __restrict__ y,
                                              const float* __restrict__ w, float* __restrict__ h,
                                              int n, float eps, int8_t* q1, int8_t* q2, float4* ds,
                                              int two_words) { lathe_pdl_entry();
  __shared__ float scratch[32];
  const long long row = blockIdx.x;
  float* xr = x + row * n;
  const float* yr = y + row * n;
  float* hr = h + row * n;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = xr[i] + yr[i];  // the sum rounded to f32 once, as the separate add would
    xr[i] = v;
    sum += v * v;
  }
  const float inv = rsqrtf(lathe_block_sum(sum, scratch) / float(n) + eps);
  // Without the epilogue each thread rereads only the values it wrote itself; with it, warps read
  // values other threads wrote, after the barrier inside lathe_block_sum.
  lathe_norm_write([&](int i) { return xr[i] * inv * (w ? w[i] : 1.0f); }, hr, row, n, q1, q2, ds, two_words);
}

extern "C" __global__ void lathe_rms_norm_warp(const float* x, const float* __restrict__ w,
                                               float* h, long long rows, int n, float eps, int8_t* q1,
                                               int8_t* q2, float4* ds, int two_words) { lathe_pdl_entry();
  const long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= rows) return;  // whole warps leave together
  const int lane = threadIdx.x & 31;
  const float* xr = x + row * n;
  float* hr = h + row * n;
  float sum = 0.0f;
  for (int i = lane; i < n; i += 32) sum += xr[i] * xr[i];
  const float inv = rsqrtf(lathe_warp_sum(sum) / float(n) + eps);
  for (int i = lane; i < n; i += 32) {  // with the epilogue (n % 32 == 0) each pass is one block
    const float value = xr[i] * inv * (w ? w[i] : 1.0f);
    hr[i] = value;
    if (q1) lathe_quantize_block32(value, row * n + i, two_words, q1, q2, ds);
  }
}
