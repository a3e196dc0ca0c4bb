// The mixture router in one kernel (decode, 1..8 rows): logits = x . router^T, softmax over all
// experts, the top k by logit (falling order; equal logits: the lower index first, -0 equal to +0),
// their probabilities renormalized over the kept k when asked; optionally x's int8 form for the
// expert products (quantize_act.cuh's layout and arithmetic: bit-identical to the quantizer).
// Semantics as the interpreter's route_top_k (interp/cpu_ops_mixture.cpp) and route.cuh.
//
// Shape: ONE cluster of LATHE_MOE_ROUTE_CLUSTER blocks of 16 warps (compile-time cluster dims, so a
// plain launch of grid (CLUSTER, 1, 1) forms it). The router's rows are cut into (expert, part)
// units dealt to the cluster's warps; a warp's lanes take 8-value pieces of its unit (any gemv format,
// dequantized exactly by gemv_blocks.cuh, f32 FMAs on x staged in shared memory) and its per-row sums
// go into block 0's shared memory (distributed shared memory stores). After a cluster barrier block 0
// adds each expert's parts in part order (deterministic) and one warp a row picks the top k.
// Rule of distributed shared memory: a block's shared memory is written by its peers only after every
// block of the cluster has started (the first barrier's arrive at entry, its wait before the stores).
// With nx (the norm in its prologue) every block adds and norms the rows itself (below).
// Dynamic shared memory: rows * (k + n_expert * (parts + 1)) floats.

#define LATHE_MOE_ROUTE_CLUSTER 8
#define LATHE_MOE_ROUTE_WARPS 16
#define LATHE_MOE_MAX_ROWS 8
// flags (moe_launch.cpp's route flags): request the router's rows into L2 before the programmatic-
// launch wait; pick the top k with lathe_moe_top_k_warp (else common.cuh's lathe_route_top_k_warp).
// Neither changes a result: the products and the picks are the same either way.
#define LATHE_MOE_ROUTE_PREFETCH 1
#define LATHE_MOE_ROUTE_REGISTER_TOP_K 2
// A diagnostic (with REGISTER_TOP_K): each row's k-th and (k+1)-th logits and its largest are printed
// (device printf, "lathe-moe-gap k K next N max M"), to tell a near-tie in the router from a bug.
#define LATHE_MOE_ROUTE_REPORT_GAP 4
#ifndef LATHE_MOE_CLUSTER_SORTED_TOP_K
#define LATHE_MOE_CLUSTER_SORTED_TOP_K 0
#endif

// Stores v at the address `local` names in the shared memory of cluster block `rank`.
__device__ __forceinline__ void lathe_moe_store_remote(float* local, unsigned rank, float v) {
  lathe_cluster_st1(lathe_cluster_addr(static_cast<unsigned>(__cvta_generic_to_shared(local)), rank), v);
}

__device__ __forceinline__ unsigned lathe_moe_warp_max_u32(unsigned v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned r;
  asm volatile("redux.sync.max.u32 %0, %1, 0xffffffff;" : "=r"(r) : "r"(v));
  return r;
#else
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
#endif
}

// lathe_route_top_k_warp (common.cuh) with the same arithmetic, so the same ids and weights: a lane
// keeps its best remaining key (experts lane, lane + 32, ...; the chosen marked in a bit mask, so
// n_expert <= 1024) and a pick is two 32-bit warp maxima (the key's value half, then the index half
// among the lanes holding that value) instead of ten 64-bit shuffles and a pass over shared memory.
__device__ __forceinline__ void lathe_moe_top_k_warp(const float* sl, int n_expert, int k, int renormalize, int* ids,
                                                     float* weights, int report_gap) {
  const int lane = threadIdx.x & 31;
  float max, sum;
  lathe_route_softmax_warp(sl, n_expert, max, sum);
  unsigned taken = 0u;
  auto local_best = [&]() {
    unsigned long long best = 0ull;
    for (int i = 0, e = lane; e < n_expert; ++i, e += 32)
      if (!((taken >> i) & 1u)) {
        const unsigned long long key = lathe_route_key(sl[e], static_cast<unsigned>(e));
        best = key > best ? key : best;
      }
    return best;
  };
  unsigned long long mine = local_best();
  float kept = 0.0f, last = 0.0f;
  const int picks = k + (report_gap && k < n_expert ? 1 : 0);
  for (int i = 0; i < picks; ++i) {
    const unsigned mine_hi = static_cast<unsigned>(mine >> 32);
    const unsigned hi = lathe_moe_warp_max_u32(mine_hi);
    const unsigned lo = lathe_moe_warp_max_u32(mine_hi == hi ? static_cast<unsigned>(mine) : 0u);
    const int e = static_cast<int>(~lo);
    if (i == k) {  // the best expert left out: only looked at for the gap report
      if (lane == 0)
        printf("lathe-moe-gap k %.9g next %.9g max %.9g\n", last, sl[e], max);
      break;
    }
    last = sl[e];
    const float p = expf(sl[e] - max) / sum;
    kept += p;
    if (lane == 0) {
      ids[i] = e;
      weights[i] = p;
    }
    if ((e & 31) == lane) {
      taken |= 1u << (e >> 5);
      mine = local_best();
    }
  }
  __syncwarp();  // lane 0's weights are visible to the lanes that renormalize them
  if (renormalize)
    for (int i = lane; i < k; i += 32) weights[i] /= kept;
}

// A route flag the wide router honours (moe_route_wide.cuh), and a compile-time choice of the cluster
// kernel's (LATHE_MOE_CLUSTER_SORTED_TOP_K=1, LATHE_KERNEL_DEFINES): pick the top k with
// lathe_moe_top_k_sorted_warp where n_expert <= 32 LATHE_MOE_SORTED_KEYS and k <= 32 (prepared for a
// measurement; it does not change a result).
#define LATHE_MOE_ROUTE_SORTED_TOP_K 8
#define LATHE_MOE_SORTED_KEYS 8

// lathe_route_top_k_warp's ids and weights, the same bits, for n_expert <= 32 LATHE_MOE_SORTED_KEYS and
// k <= 32: each lane's keys (experts lane, lane + 32, ...) sorted once, falling, in registers; a pick
// is two 32-bit warp maxima over the lanes' first keys (the value half, then the index half among the
// lanes holding that value), and the lane holding it drops it. Then lane i works out pick i's
// probability, and their sum is taken in pick order, as that function adds them.
__device__ __forceinline__ void lathe_moe_top_k_sorted_warp(const float* sl, int n_expert, int k, int renormalize,
                                                            int* ids, float* weights) {
  const int lane = threadIdx.x & 31;
  float max, sum;
  lathe_route_softmax_warp(sl, n_expert, max, sum);
  unsigned long long key[LATHE_MOE_SORTED_KEYS];
#pragma unroll
  for (int i = 0; i < LATHE_MOE_SORTED_KEYS; ++i) {
    const int e = lane + 32 * i;
    key[i] = e < n_expert ? lathe_route_key(sl[e], static_cast<unsigned>(e)) : 0ull;
  }
#pragma unroll
  for (int i = 0; i < LATHE_MOE_SORTED_KEYS - 1; ++i)
#pragma unroll
    for (int j = 0; j < LATHE_MOE_SORTED_KEYS - 1 - i; ++j)
      if (key[j] < key[j + 1]) {
        const unsigned long long t = key[j];
        key[j] = key[j + 1];
        key[j + 1] = t;
      }
  int mine = 0;  // lane i: pick i's expert
  for (int i = 0; i < k; ++i) {
    const unsigned head_hi = static_cast<unsigned>(key[0] >> 32), head_lo = static_cast<unsigned>(key[0]);
    const unsigned hi = lathe_moe_warp_max_u32(head_hi);
    const unsigned lo = lathe_moe_warp_max_u32(head_hi == hi ? head_lo : 0u);
    if (lane == i) mine = static_cast<int>(~lo);
    if (head_hi == hi && head_lo == lo) {  // this lane's first key was the pick: drop it
#pragma unroll
      for (int j = 0; j < LATHE_MOE_SORTED_KEYS - 1; ++j) key[j] = key[j + 1];
      key[LATHE_MOE_SORTED_KEYS - 1] = 0ull;
    }
  }
  const float p = lane < k ? expf(sl[mine] - max) / sum : 0.0f;
  float kept = 0.0f;
  for (int i = 0; i < k; ++i) kept += __shfl_sync(0xffffffffu, p, i);
  if (lane < k) {
    ids[lane] = mine;
    weights[lane] = renormalize ? p / kept : p;
  }
}

// An expert's rank among n keys (lathe_route_key: distinct, so ranks are too): how many are above its
// own, counted four at a time. The block-wide top k's (below and moe_route_epilogue.cuh).
__device__ __forceinline__ int lathe_route_rank(const unsigned long long* keys, int n, unsigned long long key) {
  int r4[4] = {0, 0, 0, 0};  // four counts in flight
  int f = 0;
  for (; f + 4 <= n; f += 4)
#pragma unroll
    for (int j = 0; j < 4; ++j) r4[j] += keys[f + j] > key ? 1 : 0;
  for (; f < n; ++f) r4[0] += keys[f] > key ? 1 : 0;
  return r4[0] + r4[1] + r4[2] + r4[3];
}

// lathe_route_top_k_warp's choices and weights (the same bits) for `rows` rows by the whole block at
// once, in place of a warp a row picking one expert after another: the one-launch mixture's (moe_single_
// launch.cuh; in the router kernel's block 0 it measured no faster on the H200, 2026-12-01). Each
// expert's rank is the number of its row's keys above its own (keys are distinct: the index is in
// them), and the experts of rank < k write their slot. Each row's softmax max and sum by one
// warp in that function's order; the kept probabilities summed in pick order. sl: [rows][n_expert]
// logits; keys: rows * n_expert u64 of shared memory; ids, weights: [rows][k]. Every thread calls it.
__device__ __forceinline__ void lathe_moe_top_k_ranks(const float* sl, unsigned long long* keys, int rows, int n_expert,
                                                      int k, int renormalize, int* ids, float* weights) {
  __shared__ float max_sum[LATHE_MOE_MAX_ROWS][2];
  __shared__ float kept_of[LATHE_MOE_MAX_ROWS];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, n = rows * n_expert;
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    keys[i] = lathe_route_key(sl[i], static_cast<unsigned>(i % n_expert));
  if (warp < rows) {
    float max, sum;
    lathe_route_softmax_warp(sl + warp * n_expert, n_expert, max, sum);
    if (lane == 0) {
      max_sum[warp][0] = max;
      max_sum[warp][1] = sum;
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const int r = i / n_expert, e = i - r * n_expert;
    const int rank = lathe_route_rank(keys + r * n_expert, n_expert, keys[i]);
    if (rank < k) {
      ids[r * k + rank] = e;
      weights[r * k + rank] = expf(sl[i] - max_sum[r][0]) / max_sum[r][1];
    }
  }
  __syncthreads();
  if (renormalize) {
    if (static_cast<int>(threadIdx.x) < rows) {
      float kept = 0.0f;
      for (int i = 0; i < k; ++i) kept += weights[threadIdx.x * k + i];
      kept_of[threadIdx.x] = kept;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < rows * k; i += blockDim.x) weights[i] /= kept_of[i / k];
  }
}

// One row of the router's norm prologue (fusion rule norm_prologue): s = x + y into sr, then
// sr = s / rms(s) * w, with lathe_add_rms_norm's arithmetic to the bit: its first norm_threads threads
// (the launch's block size there) sum the squares in its order, the other threads add zeros; sum (when
// not null) gets s. w: this thread's 8 norm weights (values threadIdx.x + j blockDim.x). Every load
// goes first (<= 8 a thread: norm_threads >= k / 8): in a loop with the stores to sr between them, the
// compiler may not move a load above a store (the pointers may alias), and the loads went one round
// trip at a time (the H200, 2026-12-01: the router with its prologue 8 us slower than without, 5.7
// after). Every thread of the block calls it.
__device__ __forceinline__ void lathe_moe_norm_row(const float* x, const float* y, const float (&w)[8], int k,
                                                   int norm_threads, float eps, float* sr, float* sum_out,
                                                   float* scratch) {
  float v8[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int i = threadIdx.x + j * norm_threads;
    v8[j] = static_cast<int>(threadIdx.x) < norm_threads && i < k ? x[i] + y[i] : 0.0f;
  }
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int i = threadIdx.x + j * norm_threads;
    if (static_cast<int>(threadIdx.x) < norm_threads && i < k) {
      sr[i] = v8[j];
      sum += v8[j] * v8[j];
    }
  }
  const float inv = rsqrtf(lathe_block_sum(sum, scratch) / float(k) + eps);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    if (i < k) {
      if (sum_out) sum_out[i] = sr[i];
      sr[i] = sr[i] * inv * w[j];
    }
  }
}

// The router's unit u = (expert u % n_expert, part u / n_expert) asks L2 for its row's lines (128-byte
// lines from lane's on): the router is a constant, so this goes before the programmatic-launch wait.
// pieces_row and per_part as the router's loop cuts the rows.
// The bytes [b0, b1) of a router row that hold its pieces first .. end - 1 (8 values each): whole
// units of the format. The cluster kernel's L2 requests and the wide router's copies take these.
template <class F>
__device__ __forceinline__ void lathe_moe_unit_bytes(int first, int end, long long& b0, long long& b1) {
  b0 = static_cast<long long>((first << 3) / F::unit_values) * F::unit_bytes;
  b1 = static_cast<long long>(((end << 3) + F::unit_values - 1) / F::unit_values) * F::unit_bytes;
}

// x's int8 form (quantize_act.cuh's layout) from x staged at sx ([rows][k], rows contiguous), its 32-value
// blocks dealt over warps w, w + n_warps, ... (w: this warp's index among them).
__device__ __forceinline__ void lathe_moe_quantize_x(const float* sx, int rows, int k, int w, int n_warps,
                                                     int two_words, int8_t* q1, int8_t* q2, float4* ds) {
  const int lane = threadIdx.x & 31, n_blocks = rows * (k >> 5);
  for (int b = w; b < n_blocks; b += n_warps) {
    const long long i = static_cast<long long>(b) * 32 + lane;
    lathe_quantize_block32(sx[i], i, two_words, q1, q2, ds);
  }
}

template <class F>
__device__ __forceinline__ void lathe_moe_prefetch_unit(const uint8_t* w, long long row_bytes, int u, int n_expert,
                                                        int pieces_row, int per_part, int lane) {
  const int e = u % n_expert, p = u / n_expert;
  const int first = p * per_part, end = min(pieces_row, first + per_part);
  if (first >= end) return;
  long long b0, b1;
  lathe_moe_unit_bytes<F>(first, end, b0, b1);
  const uint8_t* row = w + e * row_bytes;
  for (long long off = (b0 & ~127ll) + 128 * lane; off < b1; off += 32 * 128)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(row + off));
}

// The norm's weights (a constant) into registers before the wait: up to 8 a thread, 1.0 where there
// is no norm (nx or nw null) or past k. The launchers keep k <= 8 blockDim.x.
__device__ __forceinline__ void lathe_moe_load_norm_w(float (&w)[8], const float* nx, const float* nw, int k) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    w[j] = nx && nw && i < k ? nw[i] : 1.0f;
  }
}

// A router unit's sums, one a row: the pieces first .. end - 1 (8 values each) of the row at `row` (its
// global address, or a copy keeping that address's alignment), lane's pieces first + lane, + 32, ...,
// against x staged at sx ([rows][k] f32), in this order, then the warp's sum; done(r, sum) for each row
// r < rows, by every lane. The cluster and the wide router both sum with it: their logits are one
// arithmetic.
template <class F, class Done>
__device__ __forceinline__ void lathe_moe_unit_sums(const uint8_t* row, int first, int end, const float* sx, int rows,
                                                    int k, Done done) {
  const int lane = threadIdx.x & 31;
  float acc[LATHE_MOE_MAX_ROWS];
#pragma unroll
  for (int r = 0; r < LATHE_MOE_MAX_ROWS; ++r) acc[r] = 0.0f;
#pragma unroll 4
  for (int q = first + lane; q < end; q += 32) {
    const int vi = q << 3;
    float wv[8];
    lathe_gemv_dequant8<F>(row + static_cast<long long>(vi / F::unit_values) * F::unit_bytes,
                           (vi % F::unit_values) >> 3, wv);
#pragma unroll
    for (int r = 0; r < LATHE_MOE_MAX_ROWS; ++r) {
      if (r < rows) {
        const float4 a = reinterpret_cast<const float4*>(sx + r * k + vi)[0];
        const float4 b = reinterpret_cast<const float4*>(sx + r * k + vi)[1];
        float t = acc[r];
        t = fmaf(wv[0], a.x, t); t = fmaf(wv[1], a.y, t); t = fmaf(wv[2], a.z, t); t = fmaf(wv[3], a.w, t);
        t = fmaf(wv[4], b.x, t); t = fmaf(wv[5], b.y, t); t = fmaf(wv[6], b.z, t); t = fmaf(wv[7], b.w, t);
        acc[r] = t;
      }
    }
  }
#pragma unroll
  for (int r = 0; r < LATHE_MOE_MAX_ROWS; ++r)
    if (r < rows) done(r, lathe_warp_sum(acc[r]));
}

// WARPS: the cluster's blocks' warps (LATHE_MOE_ROUTE_WARPS; 8 for the lathe_moe_route8_ kernels, whose
// blocks fit beside a decode product's on one SM, so their rows' L2 requests, route flag 1, overlap it).
// The units' sums and their order do not depend on it.
template <class F, int WARPS>
__device__ __forceinline__ void lathe_moe_route_body(const uint8_t* w, long long row_bytes, const float* x, int rows,
                                                     int k, int n_expert, int parts, int top_k, int renormalize,
                                                     int* ids, float* weights, float* logits, int8_t* q1, int8_t* q2,
                                                     float4* ds, int two_words, int flags, const float* nx,
                                                     const float* ny, const float* nw, float eps, float* nsum,
                                                     int norm_threads) {
  extern __shared__ float4 lathe_moe_route_smem[];
  float* sx = reinterpret_cast<float*>(lathe_moe_route_smem);  // [rows][k]
  float* part = sx + rows * k;                                  // [rows][parts][n_expert] (block 0's)
  float* sl = part + rows * parts * n_expert;                   // [rows][n_expert] (block 0's)
  const unsigned rank = lathe_cluster_rank();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  lathe_cluster_arrive();  // this block has started
  LATHE_BLOCK_STAMPS(stamps);  // (LATHE_STAMPS) x in place, the sums written, the block's end
  const int gw = static_cast<int>(rank) * WARPS + warp;
  constexpr int n_warps = LATHE_MOE_ROUTE_CLUSTER * WARPS;
  const int pieces_row = k >> 3, per_part = (pieces_row + parts - 1) / parts;
  // The router is a constant: its rows are requested into L2 before waiting for the kernel that
  // writes x, so the products below read L2, not DRAM, and the requests overlap that kernel's tail.
  for (int u = gw; (flags & LATHE_MOE_ROUTE_PREFETCH) && u < n_expert * parts; u += n_warps)
    lathe_moe_prefetch_unit<F>(w, row_bytes, u, n_expert, pieces_row, per_part, lane);
  // The norm's weights before the wait (the launcher keeps k <= 4,096 here: block_threads(k) <= the
  // block).
  float norm_w[8];
  lathe_moe_load_norm_w(norm_w, nx, nw, k);
  lathe_pdl_entry();
  LATHE_STAMP_AT(stamps, 1);

  if (nx) {
    // The norm in the prologue (fusion rule norm_prologue): s = nx + ny, x = s / rms(s) * nw, with
    // lathe_add_rms_norm's arithmetic to the bit: its first norm_threads threads (the launch's block
    // size there) sum the squares in its order, the other threads add zeros. Block 0 writes s (the
    // next residual; its own buffer, as the other blocks still read nx).
    __shared__ float norm_scratch[32];
    for (int r = 0; r < rows; ++r) {
      const float* xr = nx + static_cast<long long>(r) * k;
      const float* yr = ny + static_cast<long long>(r) * k;
      lathe_moe_norm_row(xr, yr, norm_w, k, norm_threads, eps, sx + r * k,
                         rank == 0 ? nsum + static_cast<long long>(r) * k : nullptr, norm_scratch);
    }
  } else {
    for (int i = threadIdx.x; i < (rows * k) >> 2; i += blockDim.x)
      reinterpret_cast<float4*>(sx)[i] = reinterpret_cast<const float4*>(x)[i];
  }
  __syncthreads();
  LATHE_STAMP_AT(stamps, 2);

  // x's int8 form: 32-value blocks dealt over the cluster's warps.
  if (q1) lathe_moe_quantize_x(sx, rows, k, gw, n_warps, two_words, q1, q2, ds);

  lathe_cluster_wait();  // every block of the cluster has started: block 0's shared memory is live
  for (int u = gw; u < n_expert * parts; u += n_warps) {
    const int e = u % n_expert, p = u / n_expert;
    const int first = p * per_part, end = min(pieces_row, first + per_part);
    lathe_moe_unit_sums<F>(w + e * row_bytes, first, end, sx, rows, k, [&](int r, float v) {
      if (lane == 0) lathe_moe_store_remote(part + (r * parts + p) * n_expert + e, 0u, v);
    });
  }
  LATHE_STAMP_AT(stamps, 3);
  lathe_cluster_arrive();  // release: the stores above are visible to block 0 after its wait
  lathe_cluster_wait();
  if (rank != 0) {
    LATHE_STAMP_END(stamps, w, n_expert, k);
    return;
  }

  for (int i = threadIdx.x; i < rows * n_expert; i += blockDim.x) {
    const int r = i / n_expert, e = i - r * n_expert;
    float s = 0.0f;
    for (int p = 0; p < parts; ++p) s += part[(r * parts + p) * n_expert + e];
    sl[i] = s;
    if (logits) logits[i] = s;
  }
  __syncthreads();
  if (warp < rows) {
#if LATHE_MOE_CLUSTER_SORTED_TOP_K
    if (n_expert <= 32 * LATHE_MOE_SORTED_KEYS && top_k <= 32 && !(flags & LATHE_MOE_ROUTE_REPORT_GAP))
      lathe_moe_top_k_sorted_warp(sl + warp * n_expert, n_expert, top_k, renormalize, ids + warp * top_k,
                                  weights + warp * top_k);
    else
#endif
    if (flags & LATHE_MOE_ROUTE_REGISTER_TOP_K)
      lathe_moe_top_k_warp(sl + warp * n_expert, n_expert, top_k, renormalize, ids + warp * top_k, weights + warp * top_k,
                           flags & LATHE_MOE_ROUTE_REPORT_GAP);
    else
      lathe_route_top_k_warp(sl + warp * n_expert, n_expert, top_k, renormalize, ids + warp * top_k, weights + warp * top_k);
  }
  LATHE_STAMP_END(stamps, w, n_expert, k);
}

#define LATHE_MOE_ROUTE_KERNEL_WARPS(NAME, FMT, WARPS)                                                           \
  extern "C" __global__ void __cluster_dims__(LATHE_MOE_ROUTE_CLUSTER, 1, 1)                                     \
      __launch_bounds__(32 * WARPS, 1) NAME##FMT(                                                                \
          const uint8_t* w, long long row_bytes, const float* x, int rows, int k, int n_expert, int parts,       \
          int top_k, int renormalize, int* ids, float* weights, float* logits, int8_t* q1, int8_t* q2,          \
          float4* ds, int two_words, int flags, const float* nx, const float* ny, const float* nw, float eps,    \
          float* nsum, int norm_threads) {                                                                       \
    lathe_moe_route_body<lathe_gemv_##FMT, WARPS>(w, row_bytes, x, rows, k, n_expert, parts, top_k, renormalize, \
                                                  ids, weights, logits, q1, q2, ds, two_words, flags, nx, ny, nw, \
                                                  eps, nsum, norm_threads);                                      \
  }
#define LATHE_MOE_ROUTE_KERNEL(FMT)                                           \
  LATHE_MOE_ROUTE_KERNEL_WARPS(lathe_moe_route_, FMT, LATHE_MOE_ROUTE_WARPS) \
  LATHE_MOE_ROUTE_KERNEL_WARPS(lathe_moe_route8_, FMT, 8)

LATHE_MOE_ROUTE_KERNEL(f32)
LATHE_MOE_ROUTE_KERNEL(f16)
LATHE_MOE_ROUTE_KERNEL(bf16)
LATHE_MOE_ROUTE_KERNEL(q8_0)
LATHE_MOE_ROUTE_KERNEL(q4_0)
LATHE_MOE_ROUTE_KERNEL(q4_1)
LATHE_MOE_ROUTE_KERNEL(q5_0)
LATHE_MOE_ROUTE_KERNEL(q5_1)
LATHE_MOE_ROUTE_KERNEL(q2_k)
LATHE_MOE_ROUTE_KERNEL(q3_k)
LATHE_MOE_ROUTE_KERNEL(q4_k)
LATHE_MOE_ROUTE_KERNEL(q5_k)
LATHE_MOE_ROUTE_KERNEL(q6_k)
