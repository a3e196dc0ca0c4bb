// The mixture of experts for a prefill chunk, tokens grouped by expert (host side and contracts:
// moe_prefill_launch.h). After the router (matmul + route_top_k) has written ids [R][K]:
//   lathe_moe_group          one block: per expert the count of (row, slot) pairs that chose it,
//                            offsets, the grouped order (within an expert, rows ascending) and its
//                            inverse, and the tile table: one entry per BM grouped rows of one expert
//                            (experts no row chose have no entry, so their weights are never read).
//   lathe_moe_grouped_*      (moe_grouped_gemm.cuh) one block per (tile, n-tile): gate and up with
//                            SwiGLU in the epilogue, then down, on int8 tensor cores.
//   lathe_moe_combine        out[r] = sum over the row's slots j, in slot order, of w[r][j] * y[pos]:
//                            a fixed order, no atomics.
// Group layout (moe_group_bytes mirrors it; int32 unless said): offsets [E + 1], pair_of [P] (the pair
// r * K + j at grouped position p), pos_of [P] (its inverse), n_tiles [4], tiles int4 [max_tiles]
// {expert, first grouped position, rows, 0}, 16-byte aligned; P = R * K.

#define LATHE_MOE_GROUP_THREADS 1024

// Exclusive scan of v[0..n) in place by one warp (n <= 32 * 32); returns the total.
__device__ __forceinline__ int lathe_moe_warp_scan(int* v, int n) {
  const int lane = threadIdx.x & 31;
  const int per = (n + 31) >> 5, first = min(n, lane * per), last = min(n, first + per);
  int local = 0;
  for (int i = first; i < last; ++i) local += v[i];
  int incl = local;
  for (int o = 1; o < 32; o <<= 1) {
    const int up = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += up;
  }
  int run = incl - local;
  for (int i = first; i < last; ++i) {
    const int c = v[i];
    v[i] = run;
    run += c;
  }
  return __shfl_sync(0xffffffffu, incl, 31);
}

// ids [rows][top_k]: each in [0, n_expert), distinct within a row. n_expert <= 1024. Dynamic shared
// memory: 2 n_expert (words + 1) words (the launcher picks words). A pair's place in its expert is the count
// of earlier rows that chose the expert: rows are taken 32 * words at a time as one bit per (expert,
// row) set by atomicOr (order-free), then prefix popcounts per expert word.
extern "C" __global__ void __launch_bounds__(LATHE_MOE_GROUP_THREADS) lathe_moe_group(
    const int* __restrict__ ids, int rows, int top_k, int n_expert, int bm, int words, int* __restrict__ offsets,
    int* __restrict__ pair_of, int* __restrict__ pos_of, int* __restrict__ n_tiles, int4* __restrict__ tiles) {
  lathe_pdl_entry();
  __shared__ int count[1024], start[1025], tile_at[1025], base[1024];
  extern __shared__ unsigned lathe_moe_group_smem[];
  const int stride = words + 1;  // odd: a thread an expert walks its words without bank conflicts
  unsigned* bits = lathe_moe_group_smem;
  unsigned* pre = bits + n_expert * stride;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int pairs = rows * top_k;
  for (int e = t; e < n_expert; e += blockDim.x) count[e] = 0;
  __syncthreads();
  for (int i = t; i < pairs; i += blockDim.x) atomicAdd(&count[ids[i]], 1);  // integer counts: order-free
  __syncthreads();
  for (int e = t; e < n_expert; e += blockDim.x) {
    start[e] = count[e];
    tile_at[e] = (count[e] + bm - 1) / bm;
  }
  __syncthreads();
  if (warp == 0) {
    const int total = lathe_moe_warp_scan(start, n_expert);
    if (lane == 0) start[n_expert] = total;
  } else if (warp == 1) {
    const int total = lathe_moe_warp_scan(tile_at, n_expert);
    if (lane == 0) tile_at[n_expert] = total;
  }
  __syncthreads();
  for (int e = t; e <= n_expert; e += blockDim.x) offsets[e] = start[e];
  for (int e = t; e < n_expert; e += blockDim.x) base[e] = start[e];
  if (t == 0) n_tiles[0] = tile_at[n_expert];
  for (int e = t; e < n_expert; e += blockDim.x)
    for (int i = 0; i < tile_at[e + 1] - tile_at[e]; ++i)
      tiles[tile_at[e] + i] = make_int4(e, start[e] + i * bm, min(bm, count[e] - i * bm), 0);
  for (int r0 = 0; r0 < rows; r0 += 32 * words) {
    const int seg_rows = min(rows - r0, 32 * words), seg_words = (seg_rows + 31) >> 5;
    for (int i = t; i < n_expert * stride; i += blockDim.x) bits[i] = 0u;
    __syncthreads();
    for (int i = t; i < seg_rows * top_k; i += blockDim.x) {
      const int rl = i / top_k;
      atomicOr(&bits[ids[r0 * top_k + i] * stride + (rl >> 5)], 1u << (rl & 31));
    }
    __syncthreads();
    for (int e = t; e < n_expert; e += blockDim.x) {
      int run = base[e];
      for (int w = 0; w < seg_words; ++w) {
        pre[e * stride + w] = static_cast<unsigned>(run);
        run += __popc(bits[e * stride + w]);
      }
      base[e] = run;
    }
    __syncthreads();
    for (int i = t; i < seg_rows * top_k; i += blockDim.x) {
      const int rl = i / top_k, e = ids[r0 * top_k + i], w = rl >> 5;
      const int p = static_cast<int>(pre[e * stride + w]) + __popc(bits[e * stride + w] & ((1u << (rl & 31)) - 1u));
      pair_of[p] = r0 * top_k + i;
      pos_of[r0 * top_k + i] = p;
    }
    __syncthreads();
  }
}

// out [rows][n_out] f32: out[r][o] = sum_j w[r][j] * y[pos_of[r * K + j]][o], j = 0..K-1 in order
// (w == 0: weights of 1). One block a row.
extern "C" __global__ void __launch_bounds__(256) lathe_moe_combine(const float* __restrict__ y,
                                                                    const int* __restrict__ pos_of,
                                                                    const float* __restrict__ w, int top_k,
                                                                    int n_out, float* __restrict__ out) {
  lathe_pdl_entry();
  const int r = blockIdx.x;
  for (int o = threadIdx.x; o < n_out; o += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < top_k; ++j) {
      const float wj = w ? w[r * top_k + j] : 1.0f;
      acc = fmaf(wj, y[static_cast<long long>(pos_of[r * top_k + j]) * n_out + o], acc);
    }
    out[static_cast<long long>(r) * n_out + o] = acc;
  }
}

// The router's logits for a chunk, f32 router [n_expert][k] and x [rows][k] (16-byte aligned, k % 4
// == 0): logits [rows][n_expert], f32 products summed in k order in f32. Block: 32 rows x 32 experts,
// 256 threads; thread t: rows t / 16 and t / 16 + 16, experts t % 16 and t % 16 + 16. k in chunks
// of 32 staged in shared memory (rows padded to 33 floats), the next chunk's float4 loaded into
// registers while this one is multiplied.
extern "C" __global__ void __launch_bounds__(256) lathe_moe_router_f32(const float* __restrict__ w,
                                                                       const float* __restrict__ x, int rows, int k,
                                                                       int n_expert, float* __restrict__ logits) {
  lathe_pdl_entry();
  __shared__ float xs[32][33], ws[32][33];
  const int t = threadIdx.x, r = t >> 4, e = t & 15;
  const int r0 = blockIdx.y * 32, e0 = blockIdx.x * 32;
  const int lr = t >> 3, lc = (t & 7) * 4;  // this thread's float4 of a 32 x 32 chunk
  const bool x_ok = r0 + lr < rows, w_ok = e0 + lr < n_expert;
  const float4* xp = reinterpret_cast<const float4*>(x + static_cast<long long>(x_ok ? r0 + lr : 0) * k + lc);
  const float4* wp = reinterpret_cast<const float4*>(w + static_cast<long long>(w_ok ? e0 + lr : 0) * k + lc);
  const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  float4 xn = x_ok && lc < k ? xp[0] : zero, wn = w_ok && lc < k ? wp[0] : zero;
  float a[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
  for (int k0 = 0; k0 < k; k0 += 32) {
    xs[lr][lc] = xn.x; xs[lr][lc + 1] = xn.y; xs[lr][lc + 2] = xn.z; xs[lr][lc + 3] = xn.w;
    ws[lr][lc] = wn.x; ws[lr][lc + 1] = wn.y; ws[lr][lc + 2] = wn.z; ws[lr][lc + 3] = wn.w;
    __syncthreads();
    const int kn = k0 + 32 + lc;
    xn = x_ok && kn < k ? xp[(k0 + 32) >> 2] : zero;
    wn = w_ok && kn < k ? wp[(k0 + 32) >> 2] : zero;
#pragma unroll
    for (int c = 0; c < 32; ++c) {
      const float x0 = xs[r][c], x1 = xs[r + 16][c], w0 = ws[e][c], w1 = ws[e + 16][c];
      a[0][0] = fmaf(x0, w0, a[0][0]);
      a[0][1] = fmaf(x0, w1, a[0][1]);
      a[1][0] = fmaf(x1, w0, a[1][0]);
      a[1][1] = fmaf(x1, w1, a[1][1]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int rr = r0 + r + 16 * i, ee = e0 + e + 16 * j;
      if (rr < rows && ee < n_expert) logits[static_cast<long long>(rr) * n_expert + ee] = a[i][j];
    }
}
