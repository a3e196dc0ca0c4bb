// Sampling from a decode step's head on the device, for sampled steps chained in one graph
// (runtime/gpu_engine.h, run_sampled_steps): the host sampler's filters over the m best keys that
// top_candidates.cuh wrote (best first), in its order and its f64 arithmetic (runtime/sampler.cpp,
// kept_from_head without a penalty, then the draw): top-p over the head at temperature 1, min-p, the
// softmax at the temperature, and the draw by a uniform u walking the kept tokens in token order. Then
// the step's token advances as lathe_step_advance's (argmax.cuh; its slot p % slots of ids and of the
// uniforms, p the step's position). One block: the exponentials in
// parallel, every sum in the host's order by thread 0, so the probabilities are the host's up to the
// last bit of exp (CUDA's and the C library's may differ there).
// params (f64): [0] top_p, [1] min_p, [2] temperature, [3 + p % slots] the uniform of the step at p.

#define SH_THREADS 256

extern "C" __global__ void __launch_bounds__(SH_THREADS)
lathe_sample_head_advance(const unsigned long long* __restrict__ keys, int m, const double* __restrict__ params,
                          int* __restrict__ tokens, int* __restrict__ positions, int* __restrict__ ids, int slots) {
  lathe_pdl_entry();
  __shared__ double z[LATHE_HEAD_MAX], q[LATHE_HEAD_MAX], by_token_p[LATHE_HEAD_MAX];
  __shared__ int tok[LATHE_HEAD_MAX], by_token[LATHE_HEAD_MAX];
  __shared__ int keep_s;
  __shared__ double sum_s;
  const int t = threadIdx.x;
  for (int i = t; i < m; i += blockDim.x) {
    z[i] = lathe_head_key_value(keys[i]);
    tok[i] = lathe_head_key_token(keys[i]);
  }
  if (t == 0) keep_s = m;
  __syncthreads();
  const int p = positions[0], slot = p % slots;
  const double top = z[0], top_p = params[0], min_p = params[1], temperature = params[2], u = params[3 + slot];
  if (top_p < 1.0) {  // the shortest prefix whose probabilities at temperature 1 reach top_p
    for (int i = t; i < m; i += blockDim.x) q[i] = exp(z[i] - top);
    __syncthreads();
    if (t == 0) {
      double sum = 0, cum = 0;
      for (int i = 0; i < m; ++i) sum += q[i];
      for (int i = 0; i < m; ++i)
        if ((cum += q[i] / sum) >= top_p) {
          keep_s = i + 1;
          break;
        }
    }
    __syncthreads();
  }
  int keep = keep_s;
  if (min_p > 0) {  // the prefix whose probabilities are at least min_p times the first's
    for (int i = t; i < keep; i += blockDim.x) q[i] = exp((z[i] - top) / 1.0);
    __syncthreads();
    if (t == 0) {
      double sum = 0;
      for (int i = 0; i < keep; ++i) sum += q[i];
      const double first = q[0] / sum;
      int k = 1;
      while (k < keep && q[k] / sum >= min_p * first) ++k;
      keep_s = k;
    }
    __syncthreads();
    keep = keep_s;
  }
  for (int i = t; i < keep; i += blockDim.x) q[i] = exp((z[i] - top) / temperature);
  __syncthreads();
  if (t == 0) {
    double sum = 0;
    for (int i = 0; i < keep; ++i) sum += q[i];
    sum_s = sum;
  }
  __syncthreads();
  // The kept tokens in token order (distinct tokens: each one's rank is its place).
  for (int i = t; i < keep; i += blockDim.x) {
    int rank = 0;
    for (int k = 0; k < keep; ++k) rank += tok[k] < tok[i];
    by_token[rank] = tok[i];
    by_token_p[rank] = q[i] / sum_s;
  }
  __syncthreads();
  if (t == 0) {
    double cum = 0;
    int last = by_token[0], pick = -1;
    for (int r = 0; r < keep && pick < 0; ++r) {
      if (by_token_p[r] == 0) continue;
      last = by_token[r];
      cum += by_token_p[r];
      if (u < cum) pick = last;
    }
    if (pick < 0) pick = last;  // rounding left u past the sum
    tokens[0] = pick;
    positions[0] = p + 1;
    ids[slot] = pick;
  }
}
