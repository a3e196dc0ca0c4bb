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
// == 0): logits [rows][n_expert], f32 products summed in f32. Block: 16 rows x 16 experts, 256
// threads in 8 k-groups of 32 (so 2 blocks an SM at 512 rows x 128 experts, to hide L2 latency); k
// in steps of 256 staged k-major in shared memory (group g takes the 32 values 32 g .. of each
// step), thread (g, l): rows 2 (l / 4) + 0..1, experts 4 (l % 4) + 0..3, one float2 and one float4
// shared load per 8 FMAs. A logit is the k-groups' sums added in group order, each summed in
// increasing k: a fixed order, so results are deterministic and equal routers give equal logits; vs
// the interpreter's k-order sum the difference is f32 rounding (~1e-6 of max|logit|). The next step's
// float4s are loaded into registers while this one is multiplied.
#define LATHE_MOE_ROUTER_ROWS 16
#define LATHE_MOE_ROUTER_EXPERTS 16
#define LATHE_MOE_ROUTER_GROUPS 8
extern "C" __global__ void __launch_bounds__(256) lathe_moe_router_f32(const float* __restrict__ w,
                                                                       const float* __restrict__ x, int rows, int k,
                                                                       int n_expert, float* __restrict__ logits) {
  lathe_pdl_entry();
  constexpr int R = LATHE_MOE_ROUTER_ROWS, EX = LATHE_MOE_ROUTER_EXPERTS, G = LATHE_MOE_ROUTER_GROUPS, STEP = 32 * G;
  __shared__ __align__(16) float xs[G][32][R];
  __shared__ __align__(16) float ws[G][32][EX];
  const int t = threadIdx.x, grp = t >> 5, l = t & 31, rr = 2 * (l >> 2), ee = 4 * (l & 3);
  const int r0 = blockIdx.y * R, e0 = blockIdx.x * EX;
  // Loads of a step: x R rows x STEP / 4 float4, w EX experts x STEP / 4 (4 a thread each); a warp's
  // lanes take different rows (experts), so the transposed shared stores spread over the banks.
  float4 xn[4], wn[4];
  const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  auto load = [&](int k0) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int u = t + 256 * i, r = u & 15, c = 4 * (u >> 4);
      xn[i] = r0 + r < rows && k0 + c < k ? *reinterpret_cast<const float4*>(x + static_cast<long long>(r0 + r) * k + k0 + c)
                                           : zero;
      wn[i] = e0 + r < n_expert && k0 + c < k
                  ? *reinterpret_cast<const float4*>(w + static_cast<long long>(e0 + r) * k + k0 + c)
                  : zero;
    }
  };
  float acc[2][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  load(0);
  for (int k0 = 0; k0 < k; k0 += STEP) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {  // value c of the step: group c / 32, index c % 32
      const int u = t + 256 * i, r = u & 15, c = 4 * (u >> 4), gq = c >> 5, kk = c & 31;
      xs[gq][kk][r] = xn[i].x; xs[gq][kk + 1][r] = xn[i].y; xs[gq][kk + 2][r] = xn[i].z; xs[gq][kk + 3][r] = xn[i].w;
      ws[gq][kk][r] = wn[i].x; ws[gq][kk + 1][r] = wn[i].y; ws[gq][kk + 2][r] = wn[i].z; ws[gq][kk + 3][r] = wn[i].w;
    }
    __syncthreads();
    if (k0 + STEP < k) load(k0 + STEP);
#pragma unroll 8
    for (int kk = 0; kk < 32; ++kk) {
      const float2 xv = *reinterpret_cast<const float2*>(&xs[grp][kk][rr]);
      const float4 wv = *reinterpret_cast<const float4*>(&ws[grp][kk][ee]);
      const float xr[2] = {xv.x, xv.y}, wr[4] = {wv.x, wv.y, wv.z, wv.w};
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(xr[i], wr[j], acc[i][j]);
    }
    __syncthreads();
  }
  // The groups' sums, added in group order: red[g][row][expert] reuses ws (G R EX <= G 32 EX).
  float* red = &ws[0][0][0];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) red[(grp * R + rr + i) * EX + ee + j] = acc[i][j];
  __syncthreads();
  for (int o = t; o < R * EX; o += 256) {
    const int r = o / EX, e = o % EX;
    float v = red[o];
#pragma unroll
    for (int gq = 1; gq < G; ++gq) v += red[gq * R * EX + o];
    if (r0 + r < rows && e0 + e < n_expert) logits[static_cast<long long>(r0 + r) * n_expert + e0 + e] = v;
  }
}

// The wgmma path's activations in grouped order (gemm_wgmma_rs_moe.cuh reads an expert's rows as one
// TMA box): out [P][k] f16, out[p] = f16(x[pair_of[p] / top_k]) round to nearest even (convert_to_f16's
// value). k % 4 == 0, x and out 16- and 8-byte aligned. One block a grouped position.
extern "C" __global__ void __launch_bounds__(256) lathe_moe_gather_f16(const float* __restrict__ x,
                                                                       const int* __restrict__ pair_of, int top_k,
                                                                       int k, __half2* __restrict__ out) {
  lathe_pdl_entry();
  const int p = blockIdx.x, src = pair_of[p] / top_k;
  const float4* xr = reinterpret_cast<const float4*>(x + static_cast<long long>(src) * k);
  uint2* o = reinterpret_cast<uint2*>(out + static_cast<long long>(p) * (k >> 1));
  for (int c = threadIdx.x; c < (k >> 2); c += 256) {
    const float4 v = xr[c];
    const __half2 a = __floats2half2_rn(v.x, v.y), b = __floats2half2_rn(v.z, v.w);
    o[c] = make_uint2(*reinterpret_cast<const uint32_t*>(&a), *reinterpret_cast<const uint32_t*>(&b));
  }
}
