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

extern "C" __global__ void lathe_rope_norm(float* x, const int* __restrict__ positions, int heads, int d,
                                           int n_rot, const double* __restrict__ freq,
                                           double position_scale, int neox,
                                           const float* __restrict__ norm_weight, int norm, float eps) { lathe_pdl_entry();
  extern __shared__ float rope_shared[];
  const int half = n_rot / 2;
  float* cos_t = rope_shared;
  float* sin_t = rope_shared + half;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, n_warps = blockDim.x >> 5;
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

  for (int head = blockIdx.y * n_warps + warp; head < heads && head < (blockIdx.y + 1) * n_warps; head += n_warps) {
    float* xh = x + (row * heads + head) * (long long)d;
    float inv = 1.0f;
    if (norm) {
      float sum = 0.0f;
      for (int i = lane; i < d; i += 32) sum += xh[i] * xh[i];
      inv = rsqrtf(lathe_warp_sum(sum) / float(d) + eps);
    }
    for (int i = lane; i < d; i += 32) {
      float v = xh[i];
      if (norm) v = v * inv * (norm_weight ? norm_weight[i] : 1.0f);
      head_buf[i] = v;
    }
    __syncwarp();
    for (int j = lane; j < half; j += 32) {
      const int i0 = neox ? j : 2 * j, i1 = neox ? j + half : 2 * j + 1;
      const float a = head_buf[i0], b = head_buf[i1], c = cos_t[j], s = sin_t[j];
      xh[i0] = a * c - b * s;
      xh[i1] = a * s + b * c;
    }
    for (int i = n_rot + lane; i < d; i += 32) xh[i] = head_buf[i];
    __syncwarp();  // the buffer is reused by this warp's next head
  }
}
