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

// ids [rows][top_k]: each in [0, n_expert), distinct within a row. n_expert <= 1024.
extern "C" __global__ void __launch_bounds__(LATHE_MOE_GROUP_THREADS) lathe_moe_group(
    const int* __restrict__ ids, int rows, int top_k, int n_expert, int bm, int* __restrict__ offsets,
    int* __restrict__ pair_of, int* __restrict__ pos_of, int* __restrict__ n_tiles, int4* __restrict__ tiles) {
  lathe_pdl_entry();
  __shared__ int count[1024], start[1025], tile_at[1025];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5, n_warps = blockDim.x >> 5;
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
  if (t == 0) n_tiles[0] = tile_at[n_expert];
  // One warp an expert: rows in ascending order, 32 at a time; a ballot gives each its place.
  for (int e = warp; e < n_expert; e += n_warps) {
    if (count[e] == 0) continue;
    int base = start[e];
    for (int r0 = 0; r0 < rows; r0 += 32) {
      const int r = r0 + lane;
      int slot = -1;
      if (r < rows)
        for (int j = 0; j < top_k; ++j)
          if (ids[r * top_k + j] == e) slot = j;
      const unsigned chose = __ballot_sync(0xffffffffu, slot >= 0);
      if (slot >= 0) {
        const int p = base + __popc(chose & ((1u << lane) - 1u));
        pair_of[p] = r * top_k + slot;
        pos_of[r * top_k + slot] = p;
      }
      base += __popc(chose);
    }
    for (int i = lane; i < tile_at[e + 1] - tile_at[e]; i += 32)
      tiles[tile_at[e] + i] = make_int4(e, start[e] + i * bm, min(bm, count[e] - i * bm), 0);
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
