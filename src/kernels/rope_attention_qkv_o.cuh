// Fusion rule attention_half (plan/step_plan_osplit.cpp; docs/perf.md, thirty-seventh session): a decode
// row's attention half in one launch: o_split's cluster form (rope_attention_o_cluster.cuh) with the
// layer's q/k/v product in front, so a layer is two launches (this, then ffn_split's feed-forward half)
// where it was four (q/k/v, the attention, o, the feed-forward half). attention_o_split_launch.h says
// what it computes.
//
// Grid (8, n_head_kv), clusters (8, 1, 1), 32 W threads. Kv head g's rows of q, k and v are taken as one
// list of (G + 2) D rows: its G query heads' G D rows of q, then its D rows of k, then its D rows of v.
// Block (r, g):
//   asks for its RB = (G + 2) D / 8 rows of that list, [r RB, (r + 1) RB) (Q8_0 in place, E / 32 blocks a
//     row) and the norm's weights, then its o slice (the cluster form's), before its wait (cp.async:
//     constants; the ring's first chunks after them, as attention.cuh asks for them);
//   after it: x = s_in 2^-32 (every block all E values), h = x rsqrt(sum x^2 / E + eps) norm_w in the
//     contract's levels (quantize_act.cuh's), its RB rows times h (a warp a row, lane l taking blocks l,
//     l + 32, ...), the values left in its shared memory; one cluster barrier;
//   then split r of g's attention as the cluster form runs it, its rope prologue (head norms, rope, the
//     row's slot appended by the split that holds it) reading the G + 2 heads' values from the blocks
//     that made them (distributed shared memory) where rope_attention.cuh reads q, k and v from memory;
//     a split with nothing to see makes its rows all the same and leaves an empty partial;
//   the merge and its E / 8 rows of o as the cluster form, added into s_out; blocks in turn add s_in
//     itself into s_out (so s_out is the residual with o's output: the sum the feed-forward launch
//     reads) and zero `zero` (the sum the next such launch adds into).
// s_out must be zero before the launch and is not s_in: blocks read s_in after others have begun to add.
// stamps (0, or [gridDim.y][gridDim.x][12] globaltimer readings by thread 0, a measurement): entry, the
// weights asked for, the wait returned, h's levels, the rows, the first cluster barrier passed, the
// rope done, the partial in place, the second barrier passed, the merge done, o's rows added, the end.

// Past the cluster form's layout (lathe_o_cluster_layout::end): the block's rows [RB][E / 32][34], the
// norm's weights [E], x [E], h's levels [E] and [E] (two words), their scales [E / 32] float4, the rows'
// values [RB], 32 floats for the block's sum.
struct lathe_half_layout {
  uint8_t* rows;
  float* norm_w;
  float* x;
  int8_t* hq1;
  int8_t* hq2;
  float4* hd;
  float* vals;
  float* scratch;
  __device__ __forceinline__ lathe_half_layout(unsigned char* end, int rb_rows, int E) {
    rows = end;
    norm_w = reinterpret_cast<float*>(rows + 34LL * (E / 32) * rb_rows);  // E % 256 == 0: 16-byte aligned
    x = norm_w + E;
    hq1 = reinterpret_cast<int8_t*>(x + E);
    hq2 = hq1 + E;
    hd = reinterpret_cast<float4*>(hq2 + E);
    vals = reinterpret_cast<float*>(hd + E / 32);
    scratch = vals + ((rb_rows + 3) & ~3);
  }
};

// The q/k/v phase's parameters, and the phase (after the wait, by the block's 32 W threads): x, h's
// levels, the block's rows times h into vals, the residual added and the next sum zeroed (its share),
// then the first cluster barrier.
struct lathe_half_qkv {
  lathe_half_layout L;
  const long long* s_in;
  long long* s_out;
  long long* zero;
  float eps;
  int E, rb_rows;
  unsigned long long* stamp;  // this block's 12 stamps (thread 0), or null

  template <int W, int C>
  __device__ __forceinline__ void run() const {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int nb = E / 32;
    if (stamp) stamp[2] = lathe_globaltimer();
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");  // the rows and the weights (the o slice may follow)
    float ss = 0.0f;
    for (int i = threadIdx.x; i < E; i += 32 * W) {
      const float v = lathe_fix_to_float(s_in[i]);
      L.x[i] = v;
      ss = fmaf(v, v, ss);
    }
    const int b = blockIdx.y * gridDim.x + blockIdx.x, n_blocks = gridDim.x * gridDim.y;
    for (int i = b * 32 * W + threadIdx.x; i < E; i += n_blocks * 32 * W) {
      atomicAdd(reinterpret_cast<unsigned long long*>(s_out + i), static_cast<unsigned long long>(s_in[i]));
      zero[i] = 0;
    }
    const float inv = rsqrtf(lathe_block_sum(ss, L.scratch) / static_cast<float>(E) + eps);  // (its barriers order x)
    for (int i4 = threadIdx.x; i4 < E / 4; i4 += 32 * W) {  // E % 256 == 0: whole warps
      const float4 w4 = reinterpret_cast<const float4*>(L.norm_w)[i4];
      const float4 h = make_float4(L.x[4 * i4] * inv * w4.x, L.x[4 * i4 + 1] * inv * w4.y, L.x[4 * i4 + 2] * inv * w4.z,
                                   L.x[4 * i4 + 3] * inv * w4.w);
      lathe_quantize_block32_part(h, C == 2, L.hq1 + 4 * i4, L.hq2 + 4 * i4, L.hd + i4 / 8);
    }
    __syncthreads();
    if (stamp) stamp[3] = lathe_globaltimer();
    const unsigned sr = static_cast<unsigned>(__cvta_generic_to_shared(L.rows));
    const unsigned rb = 34u * static_cast<unsigned>(nb);
    for (int j = warp; j < rb_rows; j += W) {
      float p = 0.0f;
      for (int k = lane; k < nb; k += 32) {
        const float4 d = L.hd[k];
        p += lathe_ffns_block_dot<C>(sr + rb * j + 34u * k, L.hq1 + 32 * k, L.hq2 + 32 * k, d.x, d.y);
      }
      p = lathe_warp_sum(p);
      if (lane == 0) L.vals[j] = p;
    }
    if (stamp) stamp[4] = lathe_globaltimer();
    lathe_cluster_arrive();  // the rows' values in place for the cluster
    lathe_cluster_wait();
    if (stamp) stamp[5] = lathe_globaltimer();
  }
};

// attention.cuh's prologue for this launch: the q/k/v phase, then rope_attention.cuh's units with the
// heads' values read from the cluster's blocks (value c of kv head g's list lies in block c / RB, at
// vals[c % RB]). The same rope arithmetic as rope_attention.cuh's.
template <int D, int W, int C>
struct attd_half_prologue {
  attd_rope_prologue<D, W> rope;  // the angles, the head norms' weights, the rotated heads (its q, k, v unused)
  lathe_half_qkv qkv;

  __device__ __forceinline__ void before_wait(int row, int pos) const { rope.before_wait(row, pos); }

  __device__ __forceinline__ void after_wait(int row, int pos, int kvh, int h0, int n_here, bool owns_pos) const {
    qkv.template run<W, C>();
    rope.head0 = h0;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, half = rope.n_rot / 2;
    const int units = n_here + (owns_pos ? 2 : 0);
    const long long slot = ((long long)rope.sequences[row] * rope.n_ctx + pos) * rope.n_head_kv * D + (long long)kvh * D;
    const unsigned vals_at = static_cast<unsigned>(__cvta_generic_to_shared(qkv.L.vals));
    constexpr int R = (ATTD_HEADS + 2 + W - 1) / W;
    float xv[R][D / 32];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int u = warp + r * W;
      if (u < units) {  // n_here is G (G <= 8: one set), so unit u's values open the list at u D
#pragma unroll
        for (int j = 0; j < D / 32; ++j) {
          const int c = u * D + lane + 32 * j;
          xv[r][j] = lathe_cluster_ld1(
              lathe_cluster_addr(vals_at + 4u * static_cast<unsigned>(c % qkv.rb_rows), static_cast<unsigned>(c / qkv.rb_rows)));
        }
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int u = warp + r * W;
      if (u > n_here && u < units) {  // v
#pragma unroll
        for (int j = 0; j < D / 32; ++j) rope.v_cache[slot + lane + 32 * j] = __float2half_rn(xv[r][j]);
      } else if (u <= n_here && u < units) {  // a query head, or k
        const bool is_k = u == n_here;
        float wv[D / 32];
#pragma unroll
        for (int j = 0; j < D / 32; ++j) wv[j] = is_k ? rope.wk[j] : rope.wq[j];
        lathe_rope_head_held<D>(xv[r], wv, is_k ? rope.k_head() : rope.q_heads() + u * D, half, rope.n_rot, rope.neox,
                                rope.cos_t(), rope.sin_t(), rope.buffer(warp), rope.norm, rope.eps,
                                is_k ? rope.k_cache + slot : nullptr);
      }
    }
    __threadfence_block();     // the slot's k and v before the block's cp.async reads of them
    lathe_sync_first(32 * W);  // and the rotated q heads
    if (qkv.stamp) qkv.stamp[6] = lathe_globaltimer();
  }

  __device__ __forceinline__ const float* q_head(const float* q, long long row, int n_head, int head, int d) const {
    return rope.q_head(q, row, n_head, head, d);
  }
};

template <int D, int W, int C>
__device__ __forceinline__ void lathe_attn_half_body(
    const uint8_t* wq, const uint8_t* wk, const uint8_t* wv, const long long* s_in, const float* norm_w,
    float norm_eps, int E, const __half* k_cache, const __half* v_cache, const int* sequences, const int* positions,
    int n_head, int n_head_kv, int n_ctx, int window, float scale, float cap, const float* sinks, const double* freq,
    double position_scale, int n_rot, int neox, const float* q_weight, const float* k_weight, int norm, float eps,
    const uint8_t* o_w, long long* s_out, long long* zero, unsigned long long* stamps) {
  constexpr int R = LATHE_ATTN_O_CLUSTER, SPLIT_MIN = ATTD_CHUNK;
  unsigned long long* stamp =
      stamps && threadIdx.x == 0 ? stamps + 12 * (blockIdx.y * gridDim.x + blockIdx.x) : nullptr;
  if (stamp) stamp[0] = lathe_globaltimer();
  extern __shared__ float4 attd_shared4[];
  unsigned char* base = reinterpret_cast<unsigned char*>(attd_shared4);
  const int group = n_head / n_head_kv, nb_o = group * D / 32, gd = group * D;
  const int r = blockIdx.x, kvh = blockIdx.y, rows = E / R, r0 = r * rows;
  const int rb_rows = (group + 2) * D / R, nb = E / 32;
  const long long rb = 34LL * nb;
  const lathe_o_cluster_layout<D, W> L(base, group, rows);
  const lathe_half_layout H(L.end, rb_rows, E);
  // Before the wait: the block's rows of the list and the norm's weights (one group), then the o slice.
  {
    const unsigned sr = static_cast<unsigned>(__cvta_generic_to_shared(H.rows));
    const int per_row = static_cast<int>(rb / 16);
    for (int i = threadIdx.x; i < rb_rows * per_row; i += 32 * W) {
      const int c = r * rb_rows + i / per_row;  // the row's place in kv head kvh's list
      const uint8_t* src = c < gd        ? wq + (static_cast<long long>(kvh) * gd + c) * rb
                           : c < gd + D ? wk + (static_cast<long long>(kvh) * D + c - gd) * rb
                                        : wv + (static_cast<long long>(kvh) * D + c - gd - D) * rb;
      lathe_ffns_copy16(sr + 16u * static_cast<unsigned>(i), src + 16LL * (i % per_row));
    }
    const unsigned sw = static_cast<unsigned>(__cvta_generic_to_shared(H.norm_w));
    for (int i = threadIdx.x; i < E / 4; i += 32 * W) lathe_ffns_copy16(sw + 16u * static_cast<unsigned>(i), norm_w + 4 * i);
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  }
  const long long o_row_bytes = 34LL * (n_head * D / 32);
  lathe_o_slice_cp_async(static_cast<unsigned>(__cvta_generic_to_shared(L.slice)),
                         o_w + static_cast<long long>(r0) * o_row_bytes + 34LL * nb_o * kvh, rows, 34 * nb_o, o_row_bytes,
                         32 * W);
  if (stamp) stamp[1] = lathe_globaltimer();
  const lathe_half_qkv qkv{H, s_in, s_out, zero, norm_eps, E, rb_rows, stamp};
  // Split r of the row's visible slots (attd_decode's rule).
  const int pos = positions[0];
  const int first = window > 0 ? max(0, pos - window + 1) : 0;
  const int len = attd_split_len(pos - first + 1, R, SPLIT_MIN);
  float* part = L.part;
  if (first + r * len > pos) {  // nothing to see: its rows all the same, then an empty partial
    lathe_step_wait(nullptr, LATHE_ATTD_RELEASE == 0);
    qkv.run<W, C>();
    if (stamp) stamp[6] = lathe_globaltimer();
    if (LATHE_ATTD_RELEASE == 1) lathe_pdl_release();
    for (int i = threadIdx.x; i < group; i += 32 * W)
      reinterpret_cast<float2*>(part + gd)[i] = make_float2(ATTD_NEG_INF, 0.0f);
    for (int i = threadIdx.x; i < gd; i += 32 * W) part[i] = 0.0f;  // (0 e_s times whatever was there: NaN)
  } else {
    const attd_half_prologue<D, W, C> prologue{
        attd_rope_prologue<D, W>{nullptr, nullptr, nullptr, sequences, freq, position_scale, n_rot, neox, norm, n_head,
                                 n_head_kv, n_ctx, q_weight, k_weight, eps, const_cast<__half*>(k_cache),
                                 const_cast<__half*>(v_cache), L.rope_sm},
        qkv};
    attd_decode<D, W, attd_half_prologue<D, W, C>, false, 1, true>(
        nullptr, k_cache, v_cache, sequences, positions, nullptr, nullptr, nullptr, n_head, n_head_kv, n_ctx, window,
        SPLIT_MIN, R, scale, cap, sinks, nullptr, nullptr, C, 1, r, kvh, 0, gridDim.y, 1, prologue, part);
  }
  if (stamp) stamp[7] = lathe_globaltimer();
  lathe_o_cluster_finish<D, W, C>(L, group, kvh, sinks, rows, r0, s_out, stamp);
}

// Kernels lathe_attn_half_<D>_q8_0_<contract>: 8 warps, a one-chunk ring.
#define LATHE_ATTN_HALF_KERNEL(D, C, CNAME)                                                                        \
  extern "C" __global__ void __cluster_dims__(LATHE_ATTN_O_CLUSTER, 1, 1) __launch_bounds__(256)                  \
      lathe_attn_half_##D##_q8_0_##CNAME(                                                                         \
          const uint8_t* wq, const uint8_t* wk, const uint8_t* wv, const long long* s_in, const float* norm_w,    \
          float norm_eps, int E, const __half* k_cache, const __half* v_cache, const int* sequences,              \
          const int* positions, int n_head, int n_head_kv, int n_ctx, int window, float scale, float cap,        \
          const float* sinks, const double* freq, double position_scale, int n_rot, int neox,                    \
          const float* q_weight, const float* k_weight, int norm, float eps, const uint8_t* o_w, long long* s_out, \
          long long* zero, unsigned long long* stamps) {                                                          \
    lathe_attn_half_body<D, 8, C>(wq, wk, wv, s_in, norm_w, norm_eps, E, k_cache, v_cache, sequences, positions,  \
                                  n_head, n_head_kv, n_ctx, window, scale, cap, sinks, freq, position_scale, n_rot, \
                                  neox, q_weight, k_weight, norm, eps, o_w, s_out, zero, stamps);                 \
  }

LATHE_ATTN_HALF_KERNEL(64, 1, int8)
LATHE_ATTN_HALF_KERNEL(64, 2, int8x2)
LATHE_ATTN_HALF_KERNEL(128, 1, int8)
LATHE_ATTN_HALF_KERNEL(128, 2, int8x2)
