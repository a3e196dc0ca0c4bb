// The mixture router's choice per row of logits [rows, n_expert] f32: softmax over all experts, the
// top k by logit (in falling order; equal logits go to the lower index), their probabilities
// renormalized over the kept k when `renormalize`. Writes ids [rows, k] int32 and weights [rows, k]
// f32, ordered as the interpreter's route_top_k. Logits must not be NaN (the interpreter refuses them).
// One warp per row, blockDim.x / 32 rows per block; dynamic shared memory (blockDim.x / 32) * n_expert
// floats (the row's logits, a chosen one overwritten by NaN, which ranks below every number).

__device__ __forceinline__ unsigned long long route_key(float v, unsigned index) {
  const unsigned u = __float_as_uint(v);
  unsigned ordered = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  if (v != v) ordered = 0u;
  return ((unsigned long long)ordered << 32) | (unsigned long long)(~index);
}

extern "C" __global__ void lathe_route_top_k(const float* __restrict__ logits, int rows, int n_expert,
                                             int k, int renormalize, int* __restrict__ ids,
                                             float* __restrict__ weights) { lathe_pdl_entry();
  extern __shared__ float route_shared[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int row = blockIdx.x * (blockDim.x >> 5) + warp;
  if (row >= rows) return;  // whole warps leave together
  float* sl = route_shared + warp * n_expert;
  const float* lr = logits + (long long)row * n_expert;

  float max = __int_as_float(0xff800000);
  for (int e = lane; e < n_expert; e += 32) {
    sl[e] = lr[e];
    max = fmaxf(max, sl[e]);
  }
  max = lathe_warp_max(max);
  float sum = 0.0f;
  for (int e = lane; e < n_expert; e += 32) sum += expf(sl[e] - max);
  sum = lathe_warp_sum(sum);
  __syncwarp();

  float kept = 0.0f;
  for (int i = 0; i < k; ++i) {
    unsigned long long best = 0ull;
    for (int e = lane; e < n_expert; e += 32) {
      const unsigned long long key = route_key(sl[e], (unsigned)e);
      best = key > best ? key : best;
    }
    for (int o = 16; o > 0; o >>= 1) {
      const unsigned long long other = __shfl_xor_sync(0xffffffffu, best, o);
      best = other > best ? other : best;
    }
    const int e = (int)(~(unsigned)best);
    const float p = expf(sl[e] - max) / sum;  // every lane reads it before lane 0 marks it
    kept += p;
    __syncwarp();
    if (lane == 0) {
      ids[(long long)row * k + i] = e;
      weights[(long long)row * k + i] = p;
      sl[e] = __int_as_float(0x7fc00000);  // NaN: never chosen again
    }
    __syncwarp();
  }
  if (renormalize)
    for (int i = lane; i < k; i += 32) weights[(long long)row * k + i] /= kept;
}
