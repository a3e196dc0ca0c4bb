// RMS norms over the last dimension: h = x / sqrt(mean(x^2) + eps) * w, w optional (null: none).
// The mean square is an f32 sum (the interpreter's is f64; the difference is ~n * 2^-24 relative).
// Two shapes of launch over rows of n values:
//   lathe_rms_norm       one block per row (n large: a model's hidden size)
//   lathe_rms_norm_warp  one warp per row, blockDim.x / 32 rows per block (n small: a head's d,
//                        i.e. the per-head norm of [rows, heads, d] as rows * heads rows of d)
// lathe_add_rms_norm is the sum and the norm after it in one kernel: x += y (written back), h = norm(x) * w.
// x, y, h may not overlap (except that h == x is allowed where y is null: a norm in place).

extern "C" __global__ void lathe_rms_norm(const float* x, const float* __restrict__ w,
                                          float* h, int n, float eps) { lathe_pdl_entry();
  __shared__ float scratch[32];
  const long long row = blockIdx.x;
  const float* xr = x + row * n;
  float* hr = h + row * n;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) sum += xr[i] * xr[i];
  const float inv = rsqrtf(lathe_block_sum(sum, scratch) / float(n) + eps);
  for (int i = threadIdx.x; i < n; i += blockDim.x) hr[i] = xr[i] * inv * (w ? w[i] : 1.0f);
}

extern "C" __global__ void lathe_add_rms_norm(float* __restrict__ x, const float* __restrict__ y,
                                              const float* __restrict__ w, float* __restrict__ h,
                                              int n, float eps) { lathe_pdl_entry();
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
  // Each thread rereads only the values it wrote itself: no barrier needed for x.
  for (int i = threadIdx.x; i < n; i += blockDim.x) hr[i] = xr[i] * inv * (w ? w[i] : 1.0f);
}

extern "C" __global__ void lathe_rms_norm_warp(const float* x, const float* __restrict__ w,
                                               float* h, long long rows, int n, float eps) { lathe_pdl_entry();
  const long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= rows) return;  // whole warps leave together
  const int lane = threadIdx.x & 31;
  const float* xr = x + row * n;
  float* hr = h + row * n;
  float sum = 0.0f;
  for (int i = lane; i < n; i += 32) sum += xr[i] * xr[i];
  const float inv = rsqrtf(lathe_warp_sum(sum) / float(n) + eps);
  for (int i = lane; i < n; i += 32) hr[i] = xr[i] * inv * (w ? w[i] : 1.0f);
}
