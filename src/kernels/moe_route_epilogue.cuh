// The mixture's router in the epilogue of the product before it (fusion rule router_epilogue): the
// decode GEMV of the attention's output projection o (gemv_decode.cuh's row walk, unchanged) whose
// finished rows are also the residual sum, the norm's sum of squares and the router's logits.
//
// The router reads x = s / rms(s) * w with s = y + resid, so its logit for expert e is
//   logit_e = inv_rms(s) * sum_i cols[i][e] * s_i,   cols[i][e] = router[e][i] * w_i
// (cols: a constant the plan forms at load, router_columns in route_epilogue_launch.h). The warp that
// finishes row i of the product keeps its value in shared memory (nothing waited for in the loop);
// once the block's rows are done it forms s_i = y_i + resid_i for each (the next residual, written),
// their squares' block sum, and its share of each logit, sum_i cols[i][e] s_i over its rows (Q threads
// an expert, each adding every Q-th row in order, then the Q in order), written as its part:
// parts[block][0 .. n_expert), the squares at [n_expert]. The last block out (a count it sets back to
// zero) copies every part, s and w into shared memory, adds the parts in block order (by thirds, then
// the three), takes inv_rms = rsqrt(sum / n + eps) as add_rms_norm does, and then, as the router kernel
// (moe_route.cuh): the logits, the top k (lathe_route_top_k_warp's bits, by ranks) and, by the other
// warps at once, x's int8 form (8 threads a block, the quantizer's bytes). The gate/up kernel after it
// waits for the whole launch. Each thread's columns are loaded into registers before the wait, and its
// row's residual right after it, so none of the block's end waits on a load but the count.
// Results against the held-back form (the o product, then the router kernel with the norm in its
// prologue): s is the same bits where that product also takes one row an item (the same sums, the same
// add; its paired products split a small product's rows another way); the sum of squares and each logit are the same
// terms added in another order (f32: a few ulps of the sum of magnitudes, docs/numerics.md), so x's int8
// form and the picks match it except where that rounding moves a level or breaks a near-tie.
// Deterministic: every order of additions is fixed.
// Dynamic shared memory: the decode GEMV's (the ring's and x's); the tail reuses the ring's
// (the parts, s, w, the totals and the top k's keys: route_epilogue_launch.cpp's tail_bytes checks).

#define LATHE_ROUTE_EPI_ROWS 128  // a block's rows (route_epilogue_launch.cpp keeps to it)
#define LATHE_ROUTE_EPI_TERMS 8   // a thread's rows of the logits' terms (also kept to)
// When the next launch (the mixture's gate/up) may start: 2 (the default), once the last block knows it
// is last (the other blocks release as they leave), so gate/up's blocks arrive during the tail, not
// during the product; 0, as every other kernel, once the wait returns; 1, once every block has left.
// gate/up's own wait returns only after this launch has ended and its writes are visible, whenever it
// was released, so the three give the same bits. qwen3-30b-a3b Q8_0 tg128 on the H200: 2 is ~1.2%
// faster than 0 and 1 ~2.5% slower (docs/perf.md, thirty-third session; device_run.sh pd2, pd3).
#ifndef LATHE_ROUTE_RELEASE
#define LATHE_ROUTE_RELEASE 2
#endif

struct lathe_route_epi {
  static constexpr bool kWarp = true;
  static constexpr bool kReleasesLate = LATHE_ROUTE_RELEASE != 0;
  const float *resid, *cols, *norm_w;
  float* sum;
  float eps;
  int n_out, n_expert, top_k, renormalize;
  int* ids;
  float *weights, *logits;
  int8_t *q1, *q2;
  float4* ds;
  int two_words;
  float* parts;
  unsigned* count;
  int n_groups, gpb;
  float* sv;  // [LATHE_ROUTE_EPI_ROWS]: the block's rows' values, slot (o / n_groups) gpb + o % n_groups - first
  float cw[LATHE_ROUTE_EPI_TERMS];  // this thread's columns (before_wait)
  float rv;                         // the residual of slot threadIdx.x's row (after_wait)

  // The block's row o (o % n_groups in this block's groups) is slot (o / n_groups) * gpb + group - first.
  __device__ __forceinline__ int row_of(int slot) const {
    return blockIdx.x * gpb + slot % gpb + (slot / gpb) * n_groups;
  }

  // Thread t's share of the logits' terms: expert t % n_expert, the block's slots t / n_expert, + Q, ...
  // (Q = the threads an expert), at most LATHE_ROUTE_EPI_TERMS of them (the launcher keeps to it).
  __device__ __forceinline__ int q_threads() const { return max(1, static_cast<int>(blockDim.x) / n_expert); }

  // The columns this thread multiplies, into registers: a constant, so before the wait (they land
  // while the product streams).
  __device__ __forceinline__ void before_wait(int, int groups, int) {
    n_groups = groups;
    gpb = groups / gridDim.x;
    const int q = threadIdx.x / n_expert, e = threadIdx.x % n_expert, nq = q_threads();
#pragma unroll
    for (int j = 0; j < LATHE_ROUTE_EPI_TERMS; ++j) {
      const int o = row_of(q + j * nq);
      cw[j] = q < nq && o < n_out ? cols[static_cast<long long>(o) * n_expert + e] : 0.0f;
    }
  }

  // The residual of slot threadIdx.x's row, asked for once the kernel before is done.
  __device__ __forceinline__ void after_wait() {
    const int o = row_of(threadIdx.x);
    rv = static_cast<int>(threadIdx.x) < LATHE_ROUTE_EPI_ROWS && o < n_out ? resid[o] : 0.0f;
  }

  // Only kept: the rows' work waits for finish(), so the product's loop does not stall on it.
  __device__ __forceinline__ void row(int o, float v) {
    if ((threadIdx.x & 31) == 0) sv[(o / n_groups) * gpb + o % n_groups - blockIdx.x * gpb] = v;
  }

  __device__ __forceinline__ void finish(uint8_t* smem) {
    __shared__ unsigned last;
    __shared__ float scratch[32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, stride = n_expert + 1;
    const int n_warps = blockDim.x >> 5;
    __syncthreads();  // every row is kept; every warp is past the ring, whose slots are now free
    // s = y + resid for each row (the next residual), and the squares' block sum.
    float sq = 0.0f;
    if (static_cast<int>(threadIdx.x) < LATHE_ROUTE_EPI_ROWS) {
      const int o = row_of(threadIdx.x);
      if (o < n_out) {
        const float s = sv[threadIdx.x] + rv;
        sum[o] = s;
        sv[threadIdx.x] = s;
        sq = s * s;
      }
    }
    sq = lathe_block_sum(sq, scratch);  // (synchronizes: sv holds s)
    // This block's share of each logit: Q threads an expert, thread q adding the slots q, q + Q, ... in
    // order (their columns in registers), then the Q sums in order.
    float* red = reinterpret_cast<float*>(smem);  // [Q][n_expert]
    const int nq = q_threads();
    if (static_cast<int>(threadIdx.x) < nq * n_expert) {
      const int e = threadIdx.x % n_expert, q = threadIdx.x / n_expert;
      float acc = 0.0f;
#pragma unroll
      for (int j = 0; j < LATHE_ROUTE_EPI_TERMS; ++j)
        if (q + j * nq < LATHE_ROUTE_EPI_ROWS && row_of(q + j * nq) < n_out) acc = fmaf(cw[j], sv[q + j * nq], acc);
      red[q * n_expert + e] = acc;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < n_expert; e += blockDim.x) {
      float p = 0.0f;
      for (int q = 0; q < nq; ++q) p += red[q * n_expert + e];
      parts[static_cast<long long>(blockIdx.x) * stride + e] = p;
    }
    if (threadIdx.x == 0) parts[static_cast<long long>(blockIdx.x) * stride + n_expert] = sq;
    __threadfence();  // the parts and this block's rows of s before the count
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(count, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    if (LATHE_ROUTE_RELEASE == 2) lathe_pdl_release();
    LATHE_STAMP_SLOT(5);  // (the last block knows it is last)

    // The last block: every part, s and w into shared memory (one commit group, all in flight).
    const int n_parts = gridDim.x * stride, n_parts16 = (n_parts + 3) >> 2;
    float* sp = reinterpret_cast<float*>(smem);  // [gridDim.x][n_expert + 1], then s, then w
    float* sx = sp + 4 * n_parts16;
    float* sw = sx + n_out;
    float* total = sw + n_out;  // [n_expert + 1], then 3 partial sums of each
    for (int i = threadIdx.x; i < n_parts16; i += blockDim.x) lathe_gemv1_cp16(sp + 4 * i, parts + 4 * i);
    for (int i = threadIdx.x; i < (n_out >> 2); i += blockDim.x) {
      lathe_gemv1_cp16(sx + 4 * i, sum + 4 * i);
      lathe_gemv1_cp16(sw + 4 * i, norm_w + 4 * i);
    }
    lathe_gemv1_commit();
    lathe_gemv1_wait<0>();
    __syncthreads();
    LATHE_STAMP_SLOT(6);  // (every part, s and w in shared memory)
    // Each expert's logit sum and the squares: the blocks b = j mod 3 by thread (j, i) in block order,
    // then the three in order.
    float* third = total + ((stride + 1) & ~1);  // [3][n_expert + 1]
    for (int t = threadIdx.x; t < 3 * stride; t += blockDim.x) {
      const int i = t % stride, j = t / stride;
      float a = 0.0f;
#pragma unroll 4
      for (int b = j; b < static_cast<int>(gridDim.x); b += 3) a += sp[b * stride + i];
      third[j * stride + i] = a;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < stride; i += blockDim.x) total[i] = third[i] + third[stride + i] + third[2 * stride + i];
    __syncthreads();
    LATHE_STAMP_SLOT(2);  // (its product's x slot, free now: the parts added)
    const float inv = rsqrtf(total[n_expert] / float(n_out) + eps);
    for (int i = threadIdx.x; i < n_out; i += blockDim.x) sx[i] = sx[i] * inv * sw[i];
    float* sl = sp;  // the logits, over the parts (added above)
    unsigned long long* keys = reinterpret_cast<unsigned long long*>(third + ((3 * stride + 1) & ~1));
    int* pick_id = reinterpret_cast<int*>(keys + n_expert);  // [32]
    float* pick_p = reinterpret_cast<float*>(pick_id + 32);  // [32]
    float* max_sum = pick_p + 32;                            // [2]
    for (int e = threadIdx.x; e < n_expert; e += blockDim.x) {
      const float l = total[e] * inv;
      sl[e] = l;
      keys[e] = lathe_route_key(l, static_cast<unsigned>(e));
      if (logits) logits[e] = l;
    }
    __syncthreads();
    LATHE_STAMP_SLOT(3);  // (slot 3: s normed, the logits and their keys in shared memory)
    // The top k by the first warps (an expert a thread: its rank is the number of keys above its own,
    // keys being distinct), lathe_route_top_k_warp's bits: its softmax max and sum in its order, each
    // pick's probability expf(l - max) / sum, their sum in pick order. The softmax is warp top_warps'
    // while the ranks are counted (a pick's probability is the first thing that needs it), where the
    // block has that warp and one more; the other warps form x's int8 form.
    const int top_warps = (n_expert + 31) >> 5;
    const bool beside = top_warps + 2 <= n_warps;  // the softmax's own warp, and a warp left to quantize
    const int soft_warp = beside ? top_warps : 0, pickers = 32 * (top_warps + (beside ? 1 : 0));
    if (warp == soft_warp) {
      float max, total_e;
      lathe_route_softmax_warp(sl, n_expert, max, total_e);
      if (lane == 0) {
        max_sum[0] = max;
        max_sum[1] = total_e;
      }
    }
    if (warp < top_warps) {
      const int e = threadIdx.x;
      const int rank = e < n_expert ? lathe_route_rank(keys, n_expert, keys[e]) : top_k;
      asm volatile("bar.sync 1, %0;\n" ::"r"(pickers) : "memory");  // max and sum in place
      if (rank < top_k) {
        pick_id[rank] = e;
        pick_p[rank] = expf(sl[e] - max_sum[0]) / max_sum[1];
      }
      asm volatile("bar.sync 2, %0;\n" ::"r"(32 * top_warps) : "memory");
      if (e < top_k) {
        float kept = 0.0f;
        for (int i = 0; i < top_k; ++i) kept += pick_p[i];
        ids[e] = pick_id[e];
        weights[e] = renormalize ? pick_p[e] / kept : pick_p[e];
      }
      if (e == 0) LATHE_STAMP_SLOT(4);  // (slot 4: thread 0's pick written)
      if (e == 0) *count = 0;  // every block has counted: the next launch starts from zero
    } else {
      if (beside && warp == soft_warp) asm volatile("bar.sync 1, %0;\n" ::"r"(pickers) : "memory");
      // 8 threads a 32-value block (lathe_quantize_block32_part: the quantizer's bytes); n_out % 128 == 0,
      // so each pass takes a warp's four blocks whole (its shuffles see every lane).
      const int first = 32 * (top_warps + (beside ? 1 : 0));
      const int t = threadIdx.x - first, n_t = 32 * n_warps - first, part = 4 * (t & 7);
      if (q1 && t >= 0)
        for (int b = t >> 3; b < (n_out >> 5); b += n_t >> 3)
          lathe_quantize_block32_part(*reinterpret_cast<const float4*>(sx + 32 * b + part), two_words,
                                      q1 + 32 * b + part, q2 + 32 * b + part, ds + b);
    }
  }
};

// y = W . x (x's int8 form, one row) with the router in the epilogue. Arguments as lathe_gemv1_* (no y:
// the product's own output is not written, only s), then the epilogue's (above).
template <class F, int C>
__device__ __forceinline__ void lathe_gemv1_route_body(const uint8_t* w, long long row_bytes, const int8_t* xq, int k,
                                                       int n_out, int group, int early, const float* resid, float* sum,
                                                       const float* cols, const float* norm_w, float eps, int n_expert,
                                                       int top_k, int renormalize, int* ids, float* weights,
                                                       float* logits, int8_t* q1, int8_t* q2, float4* ds,
                                                       int two_words, float* parts, unsigned* count) {
  __shared__ float rows_kept[LATHE_ROUTE_EPI_ROWS];
  lathe_route_epi epi{resid,  cols, norm_w, sum, eps,       n_out, n_expert, top_k, renormalize, ids, weights,
                      logits, q1,   q2,     ds,  two_words, parts, count,    0,     0,           rows_kept, {},
                      0.0f};
  lathe_gemv1_row_walk<F, C>(w, row_bytes, xq, epi, k, n_out, group, early, nullptr, nullptr);
}

#define LATHE_GEMV1_ROUTE_KERNEL(FMT, C, CNAME)                                                                  \
  extern "C" __global__ void __launch_bounds__(32 * LATHE_GEMV1_WARPS, 1) lathe_gemv1_route_##FMT##_##CNAME(      \
      const uint8_t* w, long long row_bytes, const int8_t* xq, int k, int n_out, int group, int early,            \
      const float* resid, float* sum, const float* cols, const float* norm_w, float eps, int n_expert, int top_k, \
      int renormalize, int* ids, float* weights, float* logits, int8_t* q1, int8_t* q2, float4* ds,             \
      int two_words, float* parts, unsigned* count) {                                                            \
    lathe_gemv1_route_body<lathe_gemv1_##FMT, C>(w, row_bytes, xq, k, n_out, group, early, resid, sum, cols,     \
                                                 norm_w, eps, n_expert, top_k, renormalize, ids, weights, logits, \
                                                 q1, q2, ds, two_words, parts, count);                            \
  }

LATHE_GEMV1_ROUTE_KERNEL(q8_0, 1, int8)
LATHE_GEMV1_ROUTE_KERNEL(q8_0, 2, int8x2)
LATHE_GEMV1_ROUTE_KERNEL(q4_k, 1, int8)
LATHE_GEMV1_ROUTE_KERNEL(q4_k, 2, int8x2)
LATHE_GEMV1_ROUTE_KERNEL(q5_k, 1, int8)
LATHE_GEMV1_ROUTE_KERNEL(q5_k, 2, int8x2)
LATHE_GEMV1_ROUTE_KERNEL(q2_k, 1, int8)
LATHE_GEMV1_ROUTE_KERNEL(q2_k, 2, int8x2)
LATHE_GEMV1_ROUTE_KERNEL(q3_k, 1, int8)
LATHE_GEMV1_ROUTE_KERNEL(q3_k, 2, int8x2)
LATHE_GEMV1_ROUTE_KERNEL(q6_k, 1, int8)
LATHE_GEMV1_ROUTE_KERNEL(q6_k, 2, int8x2)
