// Argmax per row of x [rows, n] f32, written as int32; the first of equal maxima wins and NaN never
// wins over a number (the interpreter's rule). Values become 64-bit keys, the largest key winning:
//   high word: the float's bits made orderable as unsigned (NaN -> 0, below every number),
//   low word:  ~index (so of equal values the lower index is larger).
// Grid (n_chunks, rows): each block reduces a chunk of the row to one key in `partial`; the last block
// of a row to finish (counted in `counters`, rows ints, zero before the launch and left zero after:
// graph replays need no reset) reduces the chunks and writes out[row].

__device__ __forceinline__ unsigned long long argmax_key(float v, unsigned index) {
  unsigned u = __float_as_uint(v);
  unsigned ordered = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  if (v != v) ordered = 0u;
  return ((unsigned long long)ordered << 32) | (unsigned long long)(~index);
}

__device__ __forceinline__ unsigned long long argmax_block_max(unsigned long long key,
                                                               unsigned long long* scratch) {
  for (int o = 16; o > 0; o >>= 1) {
    const unsigned long long other = __shfl_xor_sync(0xffffffffu, key, o);
    key = other > key ? other : key;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) scratch[warp] = key;
  __syncthreads();
  key = lane < (int)(blockDim.x >> 5) ? scratch[lane] : 0ull;
  for (int o = 16; o > 0; o >>= 1) {
    const unsigned long long other = __shfl_xor_sync(0xffffffffu, key, o);
    key = other > key ? other : key;
  }
  return key;
}

extern "C" __global__ void lathe_argmax(const float* __restrict__ x, long long n, int chunk,
                                        unsigned long long* partial, unsigned* counters,
                                        int* __restrict__ out) { lathe_pdl_entry();
  __shared__ unsigned long long scratch[32];
  __shared__ bool last;
  const int row = blockIdx.y, n_chunks = gridDim.x;
  const float* xr = x + (long long)row * n;
  const long long begin = (long long)blockIdx.x * chunk;
  const long long end = min(begin + chunk, n);
  unsigned long long best = 0ull;
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const unsigned long long k = argmax_key(xr[i], (unsigned)i);
    best = k > best ? k : best;
  }
  best = argmax_block_max(best, scratch);
  if (n_chunks == 1) {
    if (threadIdx.x == 0) out[row] = (int)(~(unsigned)best);
    return;
  }
  if (threadIdx.x == 0) {
    partial[(long long)row * n_chunks + blockIdx.x] = best;
    __threadfence();  // the partial is visible before the count says so
    last = atomicAdd(counters + row, 1u) == (unsigned)n_chunks - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  best = 0ull;
  for (int c = threadIdx.x; c < n_chunks; c += blockDim.x) {
    const unsigned long long k = ((volatile unsigned long long*)partial)[(long long)row * n_chunks + c];
    best = k > best ? k : best;
  }
  best = argmax_block_max(best, scratch);
  if (threadIdx.x == 0) {
    out[row] = (int)(~(unsigned)best);
    counters[row] = 0u;
  }
}

// Decode steps chained on the device (runtime/gpu_engine.h, run_argmax_steps): after the step at
// position p its argmax `next` becomes the next step's token, its position p + 1, and ids[p % slots].
// One thread. The next step is the next replay of the step's graph, which starts after this one ends:
// rope and the attention read the position before their waits, and no kernel of a step writes its
// inputs.
extern "C" __global__ void lathe_step_advance(const int* __restrict__ next, int* __restrict__ tokens,
                                              int* __restrict__ positions, int* __restrict__ ids, int slots) {
  lathe_pdl_entry();
  const int t = next[0], p = positions[0];
  tokens[0] = t;
  positions[0] = p + 1;
  ids[p % slots] = t;
}
