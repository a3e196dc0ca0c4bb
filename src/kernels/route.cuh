// The mixture router's choice per row of logits [rows, n_expert] f32: softmax over all experts, the
// top k by logit (in falling order; equal logits go to the lower index), their probabilities
// renormalized over the kept k when `renormalize`. Writes ids [rows, k] int32 and weights [rows, k]
// f32, ordered as the interpreter's route_top_k. Logits must not be NaN (the interpreter refuses them).
// One warp per row, blockDim.x / 32 rows per block; dynamic shared memory (blockDim.x / 32) * n_expert
// floats (the row's logits, a chosen one overwritten by NaN, which ranks below every number).

extern "C" __global__ void lathe_route_top_k(const float* __restrict__ logits, int rows, int n_expert,
                                             int k, int renormalize, int* __restrict__ ids,
                                             float* __restrict__ weights) { lathe_pdl_entry();
  extern __shared__ float route_shared[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int row = blockIdx.x * (blockDim.x >> 5) + warp;
  if (row >= rows) return;  // whole warps leave together
  float* sl = route_shared + warp * n_expert;
  const float* lr = logits + (long long)row * n_expert;
  for (int e = lane; e < n_expert; e += 32) sl[e] = lr[e];
  __syncwarp();
  lathe_route_top_k_warp(sl, n_expert, k, renormalize, ids + (long long)row * k, weights + (long long)row * k);
}
