// A row's m best logits, for sampling on the host without copying the row back (runtime/sampler.h's
// head path; kernels/top_candidates_launch.h says what it computes). The order is the sampler's:
// larger value first, of equal values the lower index first; -0 counts as +0 and NaN below every
// number. Values become 64-bit keys (common.cuh's lathe_head_key), the larger key first:
//   high word: the float's bits made orderable as unsigned (NaN -> 0; -0 as +0),
//   low word:  ~index (of equal values the lower index is larger).
// Keys are distinct (indices are), so "the m largest keys" is one set with one order.
//
// Grid (n_chunks), TOPC_THREADS threads. Each block takes a chunk of TOPC_CHUNK values into shared
// memory, finds its min(m, chunk) largest keys by radix select (eight 8-bit digits from the top,
// counting only the keys that match the digits chosen so far) and writes them to partial[block][m]
// (the rest of its m slots key 0, below every real key). The last block to finish (counted in
// *counter, zero before the launch and left zero after) selects the m largest of the partials the same
// way, reading them from memory, sorts them in shared memory (bitonic) and writes them best first
// to keys_out; it also writes x[also[j]] to also_out[j] for the n_also tokens the host asks for (a
// repetition penalty's tokens, whose logits it changes), then seq to *done (unless done is null), so a
// reader can tell this launch's head from an earlier one's.

#define TOPC_THREADS 512
#define TOPC_CHUNK 4096

// The m-th largest of `count` distinct keys get(i) (m <= count), by every thread of the block; hist
// 256 counts and sh 2 words of shared memory.
template <class Get>
__device__ unsigned long long topc_select(Get get, int count, int m, unsigned* hist, unsigned long long* sh) {
  unsigned long long prefix = 0ull, mask = 0ull;
  int need = m;  // how many keys matching the prefix are still to be taken
  for (int shift = 56; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x) hist[i] = 0u;
    __syncthreads();
    for (int i = threadIdx.x; i < count; i += blockDim.x) {
      const unsigned long long k = get(i);
      if ((k & mask) == prefix) atomicAdd(hist + ((k >> shift) & 255u), 1u);
    }
    __syncthreads();
    if (threadIdx.x < 32) {
      // Lane l holds digits 255 - 8l down to 248 - 8l; the digit where the count from the top reaches need.
      const int lane = threadIdx.x;
      unsigned c[8], s = 0u;
      for (int j = 0; j < 8; ++j) s += c[j] = hist[255 - 8 * lane - j];
      unsigned incl = s;
      for (int o = 1; o < 32; o <<= 1) {
        const unsigned t = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += t;
      }
      const unsigned excl = incl - s;
      const unsigned reached = __ballot_sync(0xffffffffu, incl >= (unsigned)need);
      if (lane == __ffs(reached) - 1) {
        unsigned above = excl;
        int j = 0;
        while (above + c[j] < (unsigned)need) above += c[j++];
        sh[0] = (unsigned long long)(255 - 8 * lane - j);
        sh[1] = (unsigned long long)(need - (int)above);
      }
    }
    __syncthreads();
    prefix |= sh[0] << shift;
    mask |= 255ull << shift;
    need = (int)sh[1];
    __syncthreads();  // sh read by every thread before the next digit writes it
  }
  return prefix;
}

extern "C" __global__ void __launch_bounds__(TOPC_THREADS)
    lathe_top_candidates(const float* __restrict__ x, int n, int m, unsigned long long* partial, unsigned* counter,
                         unsigned long long* keys_out, const int* also, int n_also, float* also_out,
                         unsigned* done, unsigned seq) {
  lathe_pdl_entry();
  __shared__ unsigned long long keys[TOPC_CHUNK];
  __shared__ unsigned hist[256];
  __shared__ unsigned long long sh[2];
  __shared__ unsigned taken;
  __shared__ bool last;
  const int begin = blockIdx.x * TOPC_CHUNK, count = min(TOPC_CHUNK, n - begin);
  for (int i = threadIdx.x; i < count; i += blockDim.x) keys[i] = lathe_head_key(x[begin + i], (unsigned)(begin + i));
  if (threadIdx.x == 0) taken = 0u;
  __syncthreads();
  const int mc = min(m, count);
  const unsigned long long t = topc_select([&](int i) { return keys[i]; }, count, mc, hist, sh);
  unsigned long long* mine = partial + (long long)blockIdx.x * m;
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    if (keys[i] >= t) mine[atomicAdd(&taken, 1u)] = keys[i];
  for (int i = mc + threadIdx.x; i < m; i += blockDim.x) mine[i] = 0ull;
  __threadfence();  // the partial is visible before the count says so
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(counter, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  const volatile unsigned long long* all = partial;
  const int total = gridDim.x * m;
  const unsigned long long u = topc_select([&](int i) { return all[i]; }, total, m, hist, sh);
  // The m keys >= u into shared memory, the rest of a power of two 0, sorted largest first.
  int p = 1;
  while (p < m) p <<= 1;
  if (threadIdx.x == 0) taken = 0u;
  __syncthreads();
  for (int i = threadIdx.x; i < total; i += blockDim.x) {
    const unsigned long long k = all[i];
    if (k >= u && k != 0ull) keys[atomicAdd(&taken, 1u)] = k;
  }
  __syncthreads();
  for (int i = (int)taken + threadIdx.x; i < p; i += blockDim.x) keys[i] = 0ull;
  __syncthreads();
  for (int size = 2; size <= p; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int i = threadIdx.x; i < p; i += blockDim.x) {
        const int j = i ^ stride;
        if (j > i) {
          const bool descending = (i & size) == 0;
          const unsigned long long a = keys[i], b = keys[j];
          if (descending ? a < b : a > b) {
            keys[i] = b;
            keys[j] = a;
          }
        }
      }
      __syncthreads();
    }
  for (int i = threadIdx.x; i < m; i += blockDim.x) keys_out[i] = keys[i];
  for (int j = threadIdx.x; j < n_also; j += blockDim.x) also_out[j] = x[also[j]];
  __syncthreads();
  if (threadIdx.x == 0) {
    *counter = 0u;
    if (done) {
      __threadfence_system();  // the head is visible (page-locked host memory too) before the tag says so
      *(volatile unsigned*)done = seq;
    }
  }
}
