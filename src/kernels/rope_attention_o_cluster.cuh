// o_split's cluster form (attention_o_split_launch.h, LATHE_O_SPLIT=cluster; docs/perf.md, thirty-sixth
// session): the attention of a kv head split along the span over a cluster of R = 8 blocks, their
// partials merged through the cluster's shared memory, each block then adding its rows of o at that
// head's columns into the residual's fixed-point sum. Where rope_attention_o_split.cuh has each of a
// kv head's R blocks compute the whole attention (16 blocks appending the same slot and reading the
// same lines: ~2.8 us of its launch on the 0.6B, os5), here each slot is read once and appended once.
//
// Grid (8, n_head_kv), clusters (8, 1, 1), 32 W threads. Block (r, g):
//   asks for its o slice (rows [r E / 8, (r + 1) E / 8) at g's G D columns: cp.async) before its wait;
//   runs split r of 8 of g's attention (attention.cuh's attd_decode with the rope prologue: the split
//     that holds pos appends the row's slot), its partial (unnormalized outputs, (m, l) a head) left
//     in its shared memory; a split with nothing to see writes an empty one (m = -inf, l = 0) and still
//     waits for the launch before (its adds follow the q/k/v launch's read of the sum);
//   cluster barrier; merges the 8 partials of g's G D values from the cluster's shared memory (the
//     sink's logit too, as attd_merge_dims: out = sum_s e_s o_s / (sum_s e_s l_s + [2^(sk - m)]),
//     e_s = 2^(m_s - m), summed in split order), then arrives on a second barrier (the partials read);
//   quantizes the G D values (lathe_quantize_block32_part: the attention's quantize epilogue's levels),
//     multiplies its rows (a thread a row) and adds each into s_io (red.add, fix(p));
//   waits on the second barrier before it ends (no block leaves while another reads its memory).

#define LATHE_ATTN_O_CLUSTER 8

// A block's o slice by cp.async (shared address ss; rows of `share` bytes at row_bytes apart from src):
// 16-byte requests where a row's share is whole 16-byte lines, else 8 or 4, committed as one group.
__device__ __forceinline__ void lathe_o_slice_cp_async(unsigned ss, const uint8_t* src, int rows, int share,
                                                       long long row_bytes, int threads) {
  const int unit = share % 16 == 0 ? 16 : share % 8 == 0 ? 8 : 4, per_row = share / unit;
  for (int i = threadIdx.x; i < rows * per_row; i += threads) {
    const unsigned dst = ss + static_cast<unsigned>(unit * i);
    const uint8_t* from = src + (i / per_row) * row_bytes + unit * (i % per_row);
    if (unit == 16)
      lathe_ffns_copy16(dst, from);
    else if (unit == 8)
      asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(dst), "l"(from) : "memory");
    else
      asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(from) : "memory");
  }
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// The cluster form's shared memory past the ring (one chunk a warp) and the rope's floats: the o slice
// [rows][nb][34], the partial (outputs [G D], then (m, l) [G] as float2), the merged outputs [G D],
// their levels (two words), their scales [nb] float4; `end` is past them (16-byte aligned).
template <int D, int W>
struct lathe_o_cluster_layout {
  float* rope_sm;
  uint8_t* slice;
  float* part;
  float* xo;
  int8_t* xq1;
  int8_t* xq2;
  float4* xd;
  unsigned char* end;
  __device__ __forceinline__ lathe_o_cluster_layout(unsigned char* base, int group, int rows) {
    typedef AttdShape<D, W, 1> S;
    const int gd = group * D, nb = gd / 32;
    rope_sm = reinterpret_cast<float*>(base + S::warps * S::warp_bytes);
    slice = reinterpret_cast<uint8_t*>(rope_sm + (10 + W) * D);
    part = reinterpret_cast<float*>(slice + ((34 * rows * nb + 15) & ~15));
    xo = part + gd + 2 * group + (2 * group) % 4;  // 16-byte aligned
    xq1 = reinterpret_cast<int8_t*>(xo + gd);
    xq2 = xq1 + gd;
    xd = reinterpret_cast<float4*>(xq2 + gd);
    end = reinterpret_cast<unsigned char*>(xd + nb);
  }
};

// From each block's partial in place in its shared memory (the block synced after writing it) to the
// end: the cluster barrier, the merge of kv head kvh's 8 partials, their levels, and the block's `rows`
// rows of o from r0 (its slice, asked for with cp.async: waited for here) added into s_io; the block
// waits on the second barrier before it returns (no block leaves while another reads its memory).
// stamp: 0, or the block's stamps (rope_attention_qkv_o.cuh's 8 to 11), written by thread 0.
template <int D, int W, int C>
__device__ __forceinline__ void lathe_o_cluster_finish(const lathe_o_cluster_layout<D, W>& L, int group, int kvh,
                                                       const float* sinks, int rows, int r0, long long* s_io,
                                                       unsigned long long* stamp = nullptr) {
  constexpr int R = LATHE_ATTN_O_CLUSTER;
  const int gd = group * D, nb = gd / 32;
  float* part = L.part;
  float* xo = L.xo;
  int8_t* xq1 = L.xq1;
  int8_t* xq2 = L.xq2;
  float4* xd = L.xd;
  const unsigned ss = static_cast<unsigned>(__cvta_generic_to_shared(L.slice));
  __syncthreads();
  lathe_cluster_arrive();  // the partial in place
  lathe_cluster_wait();
  if (stamp) stamp[8] = lathe_globaltimer();

  // The merge: 4 dims of one head a thread over whole warps, the 8 partials' loads in flight at once.
  const unsigned part_at = static_cast<unsigned>(__cvta_generic_to_shared(part));
  const int n4 = gd / 4, n4_warps = (n4 + 31) & ~31;
  for (int i4 = threadIdx.x; i4 < n4_warps; i4 += 32 * W) {
    const bool mine = i4 < n4;
    const int idx = mine ? 4 * i4 : 0, hi = idx / D;
    float2 ml[R];
    float4 po[R];
#pragma unroll
    for (int s = 0; s < R; ++s) {
      ml[s] = lathe_cluster_ld2(lathe_cluster_addr(part_at + static_cast<unsigned>(4 * gd + 8 * hi), s));
      po[s] = lathe_cluster_ld4(lathe_cluster_addr(part_at + static_cast<unsigned>(4 * idx), s));
    }
    const float sk = sinks ? sinks[kvh * group + hi] * ATTD_LOG2E : ATTD_NEG_INF;
    float m = sk;
#pragma unroll
    for (int s = 0; s < R; ++s) m = fmaxf(m, ml[s].x);
    float l = sinks ? exp2f(sk - m) : 0.0f;
    float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int s = 0; s < R; ++s) {
      const float e = ml[s].x == ATTD_NEG_INF ? 0.0f : exp2f(ml[s].x - m);
      l = fmaf(e, ml[s].y, l);
      o.x = fmaf(e, po[s].x, o.x);
      o.y = fmaf(e, po[s].y, o.y);
      o.z = fmaf(e, po[s].z, o.z);
      o.w = fmaf(e, po[s].w, o.w);
    }
    if (mine) *reinterpret_cast<float4*>(xo + idx) = make_float4(o.x / l, o.y / l, o.z / l, o.w / l);
  }
  lathe_cluster_arrive();  // every partial read: the blocks may leave after the wait below
  if (stamp) stamp[9] = lathe_globaltimer();
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  __syncthreads();  // the merged outputs and the slice

  // x's levels, as the attention's quantize epilogue forms them for o.
  __shared__ __align__(16) int8_t dummy_q[8];
  __shared__ float4 dummy_d;
  for (int i4 = threadIdx.x; i4 < n4_warps; i4 += 32 * W) {
    const bool mine = i4 < n4;
    const int i = mine ? 4 * i4 : 0;
    lathe_quantize_block32_part(*reinterpret_cast<const float4*>(xo + i), C == 2, mine ? xq1 + i : dummy_q,
                                mine ? xq2 + i : dummy_q + 4, mine ? xd + (i >> 5) : &dummy_d);
  }
  __syncthreads();
  // The rows: a thread a row, its nb blocks in order, its partial added at once.
  for (int i = threadIdx.x; i < rows; i += 32 * W) {
    float p = 0.0f;
    for (int j = 0; j < nb; ++j) {
      const float4 d = xd[j];
      p += lathe_ffns_block_dot<C>(ss + 34u * (i * nb + j), xq1 + 32 * j, xq2 + 32 * j, d.x, d.y);
    }
    atomicAdd(reinterpret_cast<unsigned long long*>(s_io + r0 + i), lathe_ffns_fix(p));
  }
  if (stamp) stamp[10] = lathe_globaltimer();
  lathe_cluster_wait();
  if (stamp) stamp[11] = lathe_globaltimer();
}


template <int D, int W, int C>
__device__ __forceinline__ void lathe_attn_o_cluster_body(
    const float* q, const __half* k_cache, const __half* v_cache, const int* sequences, const int* positions,
    int n_head, int n_head_kv, int n_ctx, int window, float scale, float cap, const float* sinks, const float* k,
    const float* v, const double* freq, double position_scale, int n_rot, int neox, const float* q_weight,
    const float* k_weight, int norm, float eps, const uint8_t* o_w, int E, long long* s_io) {
  constexpr int R = LATHE_ATTN_O_CLUSTER, SPLIT_MIN = ATTD_CHUNK;
  extern __shared__ float4 attd_shared4[];
  unsigned char* base = reinterpret_cast<unsigned char*>(attd_shared4);
  const int group = n_head / n_head_kv, nb = group * D / 32, gd = group * D;
  const int r = blockIdx.x, kvh = blockIdx.y, rows = E / R, r0 = r * rows;
  const long long row_bytes = 34LL * (n_head * D / 32);
  const lathe_o_cluster_layout<D, W> L(base, group, rows);
  float* part = L.part;
  const unsigned ss = static_cast<unsigned>(__cvta_generic_to_shared(L.slice));
  // the slice, before the wait (a group before the ring's)
  lathe_o_slice_cp_async(ss, o_w + static_cast<long long>(r0) * row_bytes + 34LL * nb * kvh, rows, 34 * nb, row_bytes,
                         32 * W);
  // Split r of the row's visible slots (attd_decode's rule).
  const int pos = positions[0];
  const int first = window > 0 ? max(0, pos - window + 1) : 0;
  const int len = attd_split_len(pos - first + 1, R, SPLIT_MIN);
  if (first + r * len > pos) {  // nothing to see: an empty partial, after the wait all the same
    lathe_step_wait(nullptr, LATHE_ATTD_RELEASE == 0);
    if (LATHE_ATTD_RELEASE == 1) lathe_pdl_release();
    for (int i = threadIdx.x; i < group; i += 32 * W)
      reinterpret_cast<float2*>(part + gd)[i] = make_float2(ATTD_NEG_INF, 0.0f);
    for (int i = threadIdx.x; i < gd; i += 32 * W) part[i] = 0.0f;  // (0 e_s times whatever was there: NaN)
  } else {
    const attd_rope_prologue<D, W> rope{q,        k,        v,   sequences, freq,      position_scale,
                                        n_rot,    neox,     norm, n_head,   n_head_kv, n_ctx,
                                        q_weight, k_weight, eps, const_cast<__half*>(k_cache),
                                        const_cast<__half*>(v_cache), L.rope_sm};
    attd_decode<D, W, attd_rope_prologue<D, W>, false, 1, true>(
        q, k_cache, v_cache, sequences, positions, nullptr, nullptr, nullptr, n_head, n_head_kv, n_ctx, window,
        SPLIT_MIN, R, scale, cap, sinks, nullptr, nullptr, C, 1, r, kvh, 0, gridDim.y, 1, rope, part);
  }
  lathe_o_cluster_finish<D, W, C>(L, group, kvh, sinks, rows, r0, s_io);
}

// Kernels lathe_attn_o_cluster_<D>_q8_0_<contract>: 8 warps, a one-chunk ring.
#define LATHE_ATTN_O_CLUSTER_KERNEL(D, C, CNAME)                                                                  \
  extern "C" __global__ void __cluster_dims__(LATHE_ATTN_O_CLUSTER, 1, 1) __launch_bounds__(256)                 \
      lathe_attn_o_cluster_##D##_q8_0_##CNAME(                                                                   \
          const float* q, const __half* k_cache, const __half* v_cache, const int* sequences,                   \
          const int* positions, int n_head, int n_head_kv, int n_ctx, int window, float scale, float cap,       \
          const float* sinks, const float* k, const float* v, const double* freq, double position_scale,        \
          int n_rot, int neox, const float* q_weight, const float* k_weight, int norm, float eps,               \
          const uint8_t* o_w, int E, long long* s_io) {                                                          \
    lathe_attn_o_cluster_body<D, 8, C>(q, k_cache, v_cache, sequences, positions, n_head, n_head_kv, n_ctx,     \
                                       window, scale, cap, sinks, k, v, freq, position_scale, n_rot, neox,      \
                                       q_weight, k_weight, norm, eps, o_w, E, s_io);                            \
  }

LATHE_ATTN_O_CLUSTER_KERNEL(64, 1, int8)
LATHE_ATTN_O_CLUSTER_KERNEL(64, 2, int8x2)
LATHE_ATTN_O_CLUSTER_KERNEL(128, 1, int8)
LATHE_ATTN_O_CLUSTER_KERNEL(128, 2, int8x2)
