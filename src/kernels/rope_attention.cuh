// Fusion rule rope_attention: the decode attention (attention.cuh) with rope_append's work in its
// prologue (rope.cuh), one launch where there were two. After waiting for the q/k/v product each
// block normalizes (per head, when asked) and rotates the query heads it reads into its own shared
// memory (q itself is not written), and the split that holds the row's slot pos writes the row's
// rotated k and its v there, as lathe_rope_append would, before it asks for the chunk that holds it
// (the chunks of earlier slots were asked for before the wait, as without the rule). The angles are
// made before the wait (positions are the step's inputs), and the norm's weights read into registers
// there too (constants), so a head's way to its norm after the wait is one round trip (its values,
// into registers), not three (values, shared memory, weights); and a warp with several units (the
// 30B's 8 query heads, k and v on 8 warps) asks for all of their values at once. The same arithmetic
// as rope_append then the attention, in the same order: the bits are the same.
// Valid where a row's new slot is read by that row alone (decode rows, one a sequence): the plan
// applies the rule only there.
//
// Shared memory past the attention's (attd_shared_bytes): the row's cosines and sines (D / 2 each),
// the block's query heads (ATTD_HEADS x D), k (D), and a buffer of D floats a warp: (10 + W) D floats
// (attention_launch.cpp's rope_shared_bytes mirrors this).

template <int D, int W>
struct attd_rope_prologue {
  const float* q;  // [rows, n_head, D] as the product wrote it (not rotated)
  const float* k;  // [rows, n_head_kv, D]
  const float* v;
  const int* sequences;
  const double* freq;
  double position_scale;
  int n_rot, neox, norm, n_head, n_head_kv, n_ctx;
  const float* q_weight;
  const float* k_weight;
  float eps;
  __half* k_cache;
  __half* v_cache;
  float* smem;             // the rope's shared memory
  mutable int head0 = 0;   // the block's first query head (after_wait)
  // The norm's weights at this lane's dims (i + 32 j), read before the wait (constants): a warp's
  // units are q heads and k, so both; 1 where the model has none.
  mutable float wq[D / 32], wk[D / 32];

  __device__ __forceinline__ float* cos_t() const { return smem; }
  __device__ __forceinline__ float* sin_t() const { return smem + D / 2; }
  __device__ __forceinline__ float* q_heads() const { return smem + D; }
  __device__ __forceinline__ float* k_head() const { return smem + D + ATTD_HEADS * D; }
  __device__ __forceinline__ float* buffer(int warp) const { return smem + (10 + warp) * D; }

  __device__ __forceinline__ void before_wait(int, int pos) const {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int j = 0; j < D / 32; ++j) {
      wq[j] = norm && q_weight ? q_weight[lane + 32 * j] : 1.0f;
      wk[j] = norm && k_weight ? k_weight[lane + 32 * j] : 1.0f;
    }
    const double position = double(pos) * position_scale;
    for (int j = threadIdx.x; j < n_rot / 2; j += 32 * W) {
      double sn, cs;
      sincos(position * freq[j], &sn, &cs);
      cos_t()[j] = float(cs);
      sin_t()[j] = float(sn);
    }
  }

  // Units: the block's query heads, then (the split that holds pos) k, then v; one warp a unit.
  __device__ __forceinline__ void after_wait(int row, int pos, int kvh, int h0, int n_here, bool owns_pos) const {
    head0 = h0;
    lathe_sync_first(32 * W);  // the angles
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, half = n_rot / 2;
    const int units = n_here + (owns_pos ? 2 : 0);
    const long long slot = ((long long)sequences[row] * n_ctx + pos) * n_head_kv * D + (long long)kvh * D;
    // Every unit's values asked for at once (a warp takes R units at most: one round trip however
    // many), then each normed and rotated, or (v) appended, in turn.
    constexpr int R = (ATTD_HEADS + 2 + W - 1) / W;
    float xv[R][D / 32];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int u = warp + r * W;
      if (u < units) {
        const float* src = u < n_here    ? q + ((long long)row * n_head + h0 + u) * D
                           : u == n_here ? k + ((long long)row * n_head_kv + kvh) * D
                                         : v + ((long long)row * n_head_kv + kvh) * D;
#pragma unroll
        for (int j = 0; j < D / 32; ++j) xv[r][j] = src[lane + 32 * j];
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int u = warp + r * W;
      if (u > n_here && u < units) {  // v
#pragma unroll
        for (int j = 0; j < D / 32; ++j) v_cache[slot + lane + 32 * j] = __float2half_rn(xv[r][j]);
      } else if (u <= n_here && u < units) {  // a query head, or k
        const bool is_k = u == n_here;
        float wv[D / 32];
#pragma unroll
        for (int j = 0; j < D / 32; ++j) wv[j] = is_k ? wk[j] : wq[j];
        lathe_rope_head_held<D>(xv[r], wv, is_k ? k_head() : q_heads() + u * D, half, n_rot, neox, cos_t(), sin_t(),
                                buffer(warp), norm, eps, is_k ? k_cache + slot : nullptr);
      }
    }
    __threadfence_block();     // the slot's k and v before the block's cp.async reads of them
    lathe_sync_first(32 * W);  // and the rotated q heads
  }

  __device__ __forceinline__ const float* q_head(const float*, long long, int, int head, int) const {
    return q_heads() + (head - head0) * D;
  }
};

#define ATTD_ROPE_ENTRY(D, W, NAME)                                                                       \
  extern "C" __global__ void __launch_bounds__(32 * W) NAME(                                              \
      const float* q, const __half* k_cache, const __half* v_cache, const int* sequences,                 \
      const int* positions, float* out, float* part_o, float2* part_ml, int n_head, int n_head_kv,        \
      int n_ctx, int window, int split_min, int n_split, float scale, float cap, const float* sinks,      \
      int* tickets, int8_t* qout, int q_words, int q_rows, const float* k, const float* v,                \
      const double* freq, double position_scale, int n_rot, int neox, const float* q_weight,             \
      const float* k_weight, int norm, float eps) {                                                       \
    extern __shared__ float4 attd_shared4[];                                                              \
    const attd_rope_prologue<D, W> rope{                                                                  \
        q, k, v, sequences, freq, position_scale, n_rot, neox, norm, n_head, n_head_kv, n_ctx, q_weight,  \
        k_weight, eps, const_cast<__half*>(k_cache), const_cast<__half*>(v_cache),                        \
        reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(attd_shared4) + attd_shared_bytes(D, W))}; \
    const int early = gridDim.z == 1;                                                                     \
    if (!early) lathe_pdl_entry(); /* several rows (one a sequence): the q/k/v product before */         \
    attd_decode<D, W>(q, k_cache, v_cache, sequences, positions, out, part_o, part_ml, n_head, n_head_kv, \
                      n_ctx, window, split_min, n_split, scale, cap, sinks, tickets, qout, q_words, q_rows, \
                      blockIdx.x, blockIdx.y, blockIdx.z, gridDim.y, early, rope);                        \
  }
ATTD_ROPE_ENTRY(64, 4, lathe_attn_decode_rope_64)
ATTD_ROPE_ENTRY(128, 4, lathe_attn_decode_rope_128)
ATTD_ROPE_ENTRY(256, 4, lathe_attn_decode_rope_256)
ATTD_ROPE_ENTRY(64, 8, lathe_attn_decode_rope_64_w8)
ATTD_ROPE_ENTRY(128, 8, lathe_attn_decode_rope_128_w8)
