// Rotary position embedding in place on x [rows, heads, d], one position per row, optionally after a
// per-head RMS norm (QK norm and rope in one kernel). Pair j < n_rot / 2 turns by
//   theta = (position * position_scale) * freq[j]
// where freq is a host-made table of n_rot / 2 doubles (base^(-2j/n_rot), llama3 or linear scaling and
// frequency factors already applied). Pairs are (2j, 2j + 1) in normal order and (j, j + n_rot / 2) in
// neox order; dims n_rot.. pass through (normed when norming). n_rot == 0: the norm alone.
// Angles and their sines and cosines are f64, as the interpreter's, then rounded to f32: positions of
// 10^5 and more keep their accuracy. The rotation itself is f32.
//
// Launch: grid (rows, ceil(heads / warps)), one warp a head (a decode row's heads spread over several
// blocks, each making the row's sines and cosines); dynamic shared memory
//   (n_rot / 2) * 2 floats (the row's cosines and sines) + (blockDim.x / 32) * d floats (a head per warp).

// The rotation of a head whose normed values are in buf (d floats of this warp's shared memory):
// into xh, and into `cache` as f16 when given (lathe_rope_head's second half).
__device__ __forceinline__ void lathe_rope_rotate(float* xh, int d, int half, int n_rot, int neox, const float* cos_t,
                                                  const float* sin_t, const float* buf, __half* cache) {
  const int lane = threadIdx.x & 31;
  for (int j = lane; j < half; j += 32) {
    const int i0 = neox ? j : 2 * j, i1 = neox ? j + half : 2 * j + 1;
    const float a = buf[i0], b = buf[i1], c = cos_t[j], s = sin_t[j];
    const float r0 = a * c - b * s, r1 = a * s + b * c;
    xh[i0] = r0;
    xh[i1] = r1;
    if (cache) {
      cache[i0] = __float2half_rn(r0);
      cache[i1] = __float2half_rn(r1);
    }
  }
  for (int i = n_rot + lane; i < d; i += 32) {
    xh[i] = buf[i];
    if (cache) cache[i] = __float2half_rn(buf[i]);
  }
  __syncwarp();  // the buffer is reused by this warp's next head
}

// One head of d values at xh, by one warp: RMS-normed (norm != 0; weight w or 1) and rotated in place
// with the row's cosines and sines; when `cache` is given, the result also goes there as f16
// (rounded to nearest even, as cache_append). buf: d floats of this warp's shared memory.
__device__ __forceinline__ void lathe_rope_head(float* xh, int d, int half, int n_rot, int neox, const float* cos_t,
                                                const float* sin_t, float* buf, const float* __restrict__ w,
                                                int norm, float eps, __half* cache) {
  const int lane = threadIdx.x & 31;
  float inv = 1.0f;
  if (norm) {
    float sum = 0.0f;
    for (int i = lane; i < d; i += 32) sum += xh[i] * xh[i];
    inv = rsqrtf(lathe_warp_sum(sum) / float(d) + eps);
  }
  for (int i = lane; i < d; i += 32) {
    float v = xh[i];
    if (norm) v = v * inv * (w ? w[i] : 1.0f);
    buf[i] = v;
  }
  __syncwarp();
  lathe_rope_rotate(xh, d, half, n_rot, neox, cos_t, sin_t, buf, cache);
}

// lathe_rope_head for a head of D values already in registers: lane i holds dims i + 32 j in x[j], and
// the norm's weights at the same dims in w[j] (1 where the norm has none), so neither the head nor
// the weights make a round trip on the way to the norm. The same arithmetic in the same order: the
// same bits as lathe_rope_head on the same values.
template <int D>
__device__ __forceinline__ void lathe_rope_head_held(const float (&x)[D / 32], const float (&w)[D / 32], float* xh,
                                                     int half, int n_rot, int neox, const float* cos_t,
                                                     const float* sin_t, float* buf, int norm, float eps,
                                                     __half* cache) {
  const int lane = threadIdx.x & 31;
  float inv = 1.0f;
  if (norm) {
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < D / 32; ++j) sum += x[j] * x[j];
    inv = rsqrtf(lathe_warp_sum(sum) / float(D) + eps);
  }
#pragma unroll
  for (int j = 0; j < D / 32; ++j) buf[lane + 32 * j] = norm ? x[j] * inv * w[j] : x[j];
  __syncwarp();
  lathe_rope_rotate(xh, D, half, n_rot, neox, cos_t, sin_t, buf, cache);
}

extern "C" __global__ void lathe_rope_norm(float* x, const int* __restrict__ positions, int heads, int d,
                                           int n_rot, const double* __restrict__ freq,
                                           double position_scale, int neox,
                                           const float* __restrict__ norm_weight, int norm, float eps) { lathe_pdl_entry();
  extern __shared__ float rope_shared[];
  const int half = n_rot / 2;
  float* cos_t = rope_shared;
  float* sin_t = rope_shared + half;
  const int warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
  float* head_buf = rope_shared + 2 * half + warp * d;
  const long long row = blockIdx.x;

  const double position = double(positions[row]) * position_scale;
  for (int j = threadIdx.x; j < half; j += blockDim.x) {
    double s, c;
    sincos(position * freq[j], &s, &c);
    cos_t[j] = float(c);
    sin_t[j] = float(s);
  }
  __syncthreads();

  for (int head = blockIdx.y * n_warps + warp; head < heads && head < (blockIdx.y + 1) * n_warps; head += n_warps)
    lathe_rope_head(x + (row * heads + head) * (long long)d, d, half, n_rot, neox, cos_t, sin_t, head_buf,
                    norm_weight, norm, eps, nullptr);
}

// rope_append: a layer's q and k (each optionally head-normed, with its own weight) rotated in place
// at the row's position, as lathe_rope_norm, and the rotated k and the v rows written into the f16
// caches [sequences, n_ctx, hk, d] at slot (sequences[r], positions[r]), as lathe_cache_append: one
// launch for what took three. Units of a row: hq q heads, hk k heads, hk v heads; one warp a unit;
// grid (rows, ceil((hq + 2 hk) / warps)); shared memory as lathe_rope_norm.
// A block (row, by) in two parts, on the block's first n_threads threads (the kernel: all of them; a
// phase of the persistent step: its first warps). The first needs nothing of the kernel before:
// positions and sequences are the step's inputs, written before the step began, and freq and the
// norm weights are constants; so it runs before the wait for the q/k/v product (off the critical
// path): the row's angles into shared memory, and the norm weights' lines of this warp's units asked
// of L1. The second, after the wait and a barrier of the n_threads, rotates and appends.
__device__ __forceinline__ void lathe_rope_append_angles(const int* __restrict__ positions, int hq, int hk, int d,
                                                         int n_rot, const double* __restrict__ freq,
                                                         double position_scale, const float* __restrict__ q_weight,
                                                         const float* __restrict__ k_weight, int norm, long long row,
                                                         int by, int n_threads) {
  extern __shared__ float rope_shared[];
  const int half = n_rot / 2;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, n_warps = n_threads >> 5;
  const double position = double(positions[row]) * position_scale;
  for (int j = threadIdx.x; j < half; j += n_threads) {
    double sn, cs;
    sincos(position * freq[j], &sn, &cs);
    rope_shared[j] = float(cs);
    rope_shared[half + j] = float(sn);
  }
  const int u = by * n_warps + warp;
  const float* w = u < hq ? q_weight : u < hq + hk ? k_weight : nullptr;
  if (norm && w && lane * 32 < d) asm volatile("prefetch.global.L1 [%0];\n" ::"l"(w + lane * 32));
}

__device__ __forceinline__ void lathe_rope_append_heads(float* q, float* k, const float* __restrict__ v,
                                                        const int* __restrict__ positions,
                                                        const int* __restrict__ sequences, int hq, int hk, int d,
                                                        int n_rot, int neox, const float* __restrict__ q_weight,
                                                        const float* __restrict__ k_weight, int norm, float eps,
                                                        __half* k_cache, __half* v_cache, int n_ctx, long long row,
                                                        int by, int n_threads) {
  extern __shared__ float rope_shared[];
  const int half = n_rot / 2;
  const float* cos_t = rope_shared;
  const float* sin_t = rope_shared + half;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, n_warps = n_threads >> 5;
  float* head_buf = rope_shared + 2 * half + warp * d;
  const long long slot = ((long long)sequences[row] * n_ctx + positions[row]) * hk * d;
  const int units = hq + 2 * hk;
  for (int u = by * n_warps + warp; u < units && u < (by + 1) * n_warps; u += n_warps) {
    if (u < hq) {
      lathe_rope_head(q + (row * hq + u) * (long long)d, d, half, n_rot, neox, cos_t, sin_t, head_buf, q_weight, norm,
                      eps, nullptr);
    } else if (u < hq + hk) {
      const int h = u - hq;
      lathe_rope_head(k + (row * hk + h) * (long long)d, d, half, n_rot, neox, cos_t, sin_t, head_buf, k_weight, norm,
                      eps, k_cache + slot + (long long)h * d);
    } else {
      const int h = u - hq - hk;
      const float* src = v + (row * hk + h) * (long long)d;
      __half* dst = v_cache + slot + (long long)h * d;
      for (int i = lane; i < d; i += 32) dst[i] = __float2half_rn(src[i]);
    }
  }
}

extern "C" __global__ void lathe_rope_append(float* q, float* k, const float* __restrict__ v,
                                             const int* __restrict__ positions, const int* __restrict__ sequences,
                                             int hq, int hk, int d, int n_rot,
                                             const double* __restrict__ freq, double position_scale, int neox,
                                             const float* __restrict__ q_weight, const float* __restrict__ k_weight,
                                             int norm, float eps, __half* k_cache, __half* v_cache, int n_ctx) {
  lathe_rope_append_angles(positions, hq, hk, d, n_rot, freq, position_scale, q_weight, k_weight, norm, blockIdx.x,
                           blockIdx.y, blockDim.x);
  lathe_pdl_entry();
  __syncthreads();
  lathe_rope_append_heads(q, k, v, positions, sequences, hq, hk, d, n_rot, neox, q_weight, k_weight, norm, eps, k_cache,
                          v_cache, n_ctx, blockIdx.x, blockIdx.y, blockDim.x);
}
