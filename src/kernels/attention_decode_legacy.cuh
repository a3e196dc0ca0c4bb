// The decode attention kernel before issue 6 (kept only so the timing test can compare; to be removed).
// Decode attention over f16 KV caches, split along the cache (flash decoding).
//
// q [rows, n_head, D] f32; caches [sequences, n_ctx, n_head_kv, D] f16; row r attends to the slots
// first..pos of its own sequence, pos = positions[r], first = max(0, pos - window + 1) with a window,
// else 0. Scores s = scale * q.k, soft-capped (cap * tanh(s / cap)) when cap > 0; with sinks (one
// logit per query head) the softmax denominator also counts exp(sink). out [rows, n_head, D] f32.
// Rows are independent, so a prefill chunk (rows at consecutive positions, appended before) is causal.
//
// Grid (n_split, n_head_kv, rows), ATTN_THREADS(D) threads. A block takes one row, one kv head and the
// group of G = n_head / n_head_kv query heads that share it (the cache is read once for the group),
// over the visible slots [first + split * split_len, ... + split_len), in tiles of ATTN_TILE slots:
//   load the tile's K and V to shared memory -> scores (thread = slot, heads strided) ->
//   online softmax per head (one warp per head) -> output (thread = 4 dims, heads strided).
// With n_split == 1 the block finishes the row (sinks, division) and writes out; otherwise it writes
// its unnormalized output and (max, sum) to the partials, and lathe_attn_merge combines the splits
// a row uses (ceil(visible / split_len)). Blocks past a row's visible slots exit at once.
// Invariants (the launcher checks them): G <= 32, split_len a multiple of ATTN_TILE, caches and q
// 16-byte aligned.

#define ATTN_TILE 64
#define ATTN_MAX_GROUP 32
#define ATTN_NEG_INF __int_as_float(0xff800000)

// 16 bytes from global to shared memory without passing through registers (sm_80+), and the wait
// for all of this thread's copies; a __syncthreads after the wait publishes them to the block.
__device__ __forceinline__ void attn_copy16(void* shared_dst, const void* global_src) {
  const unsigned dst = (unsigned)__cvta_generic_to_shared(shared_dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(global_src) : "memory");
}
__device__ __forceinline__ void attn_copy_wait() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
}

template <int D>
struct AttnShape {
  static constexpr int threads = D >= 256 ? 256 : 128;
  static constexpr int k_stride = D + 8;                        // halves; padded against bank conflicts
  static constexpr int score_sets = threads / ATTN_TILE;        // head sets in the score phase
  static constexpr int score_heads = ATTN_MAX_GROUP / score_sets;
  static constexpr int out_lanes = D / 4;                       // threads per head, 4 dims each
  static constexpr int out_sets = threads / out_lanes;
  static constexpr int out_heads = (ATTN_MAX_GROUP + out_sets - 1) / out_sets;
  static constexpr int s_stride = ATTN_TILE + 4;                // floats per head's scores
};

// Dynamic shared memory of a block for group size g (the launcher mirrors this).
__host__ __device__ constexpr int attn_shared_floats(int d, int g) {
  return g * d + ATTN_TILE * (d + 8) / 2 + ATTN_TILE * d / 2 + g * (ATTN_TILE + 4) + 3 * g;
}

template <int D>
__device__ void attn_decode(const float* __restrict__ q, const __half* __restrict__ k_cache,
                            const __half* __restrict__ v_cache, const int* __restrict__ sequences,
                            const int* __restrict__ positions, float* __restrict__ out,
                            float* __restrict__ part_o, float2* __restrict__ part_ml, int n_head,
                            int n_head_kv, int n_ctx, int window, int split_len, int n_split,
                            float scale, float cap, const float* __restrict__ sinks) {
  typedef AttnShape<D> S;
  extern __shared__ float4 attn_shared4[];
  float* smem = reinterpret_cast<float*>(attn_shared4);
  const int group = n_head / n_head_kv;
  float* qs = smem;                                                        // [group][D]
  __half* ks = reinterpret_cast<__half*>(qs + group * D);                 // [TILE][k_stride]
  __half* vs = ks + ATTN_TILE * S::k_stride;                               // [TILE][D]
  float* ss = reinterpret_cast<float*>(vs + ATTN_TILE * D);               // [group][s_stride]
  float* m_run = ss + group * S::s_stride;
  float* l_run = m_run + group;
  float* alpha = l_run + group;

  const int split = blockIdx.x, kvh = blockIdx.y, row = blockIdx.z, tid = threadIdx.x;
  const int pos = positions[row];
  const int first = window > 0 ? max(0, pos - window + 1) : 0;
  const int begin = first + split * split_len;
  if (begin > pos) return;  // this split sees nothing of this row; the merge skips it
  const int end = min(begin + split_len, pos + 1);
  const long long seq_base = (long long)sequences[row] * n_ctx;
  const int head0 = kvh * group;

  // Every copy of the block (q, then the first tile) is in flight at once: cp.async, no registers.
  const float* q_group = q + ((long long)row * n_head + head0) * D;
  for (int i = tid; i < group * D / 4; i += S::threads) attn_copy16(qs + i * 4, q_group + i * 4);
  for (int g = tid; g < group; g += S::threads) {
    m_run[g] = ATTN_NEG_INF;
    l_run[g] = 0.0f;
  }

  const int out_lane = tid % S::out_lanes, out_set = tid / S::out_lanes;
  float4 acc[S::out_heads];
#pragma unroll
  for (int k = 0; k < S::out_heads; ++k) acc[k] = make_float4(0.f, 0.f, 0.f, 0.f);

  for (int tile = begin; tile < end; tile += ATTN_TILE) {
    const int nt = min(ATTN_TILE, end - tile);
    __syncthreads();  // the previous tile's readers are done; m_run and l_run are set
    for (int i = tid; i < nt * (D / 8); i += S::threads) {
      const int p = i / (D / 8), c = i % (D / 8);
      const long long at = ((seq_base + tile + p) * n_head_kv + kvh) * D + c * 8;
      attn_copy16(ks + p * S::k_stride + c * 8, k_cache + at);
      attn_copy16(vs + p * D + c * 8, v_cache + at);
    }
    attn_copy_wait();
    __syncthreads();

    {  // scores: thread = one slot, heads set, set + score_sets, ...
      const int p = tid % ATTN_TILE, set = tid / ATTN_TILE;
      float dot[S::score_heads];
#pragma unroll
      for (int k = 0; k < S::score_heads; ++k) dot[k] = 0.0f;
      if (p < nt) {
        for (int c = 0; c < D / 8; ++c) {
          const uint4 raw = *reinterpret_cast<const uint4*>(ks + p * S::k_stride + c * 8);
          const __half2* h2 = reinterpret_cast<const __half2*>(&raw);
          float kf[8];
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const float2 f = __half22float2(h2[j]);
            kf[2 * j] = f.x;
            kf[2 * j + 1] = f.y;
          }
#pragma unroll
          for (int k = 0; k < S::score_heads; ++k) {
            const int g = set + k * S::score_sets;
            if (g < group) {
              const float4 a = *reinterpret_cast<const float4*>(qs + g * D + c * 8);
              const float4 b = *reinterpret_cast<const float4*>(qs + g * D + c * 8 + 4);
              dot[k] += a.x * kf[0] + a.y * kf[1] + a.z * kf[2] + a.w * kf[3] + b.x * kf[4] +
                        b.y * kf[5] + b.z * kf[6] + b.w * kf[7];
            }
          }
        }
      }
#pragma unroll
      for (int k = 0; k < S::score_heads; ++k) {
        const int g = set + k * S::score_sets;
        if (g < group) {
          float s = dot[k] * scale;
          if (cap > 0.0f) s = cap * tanhf(s / cap);
          ss[g * S::s_stride + p] = p < nt ? s : ATTN_NEG_INF;
        }
      }
    }
    __syncthreads();

    {  // online softmax, one warp per head
      const int warp = tid >> 5, lane = tid & 31;
      for (int g = warp; g < group; g += S::threads / 32) {
        float* sg = ss + g * S::s_stride;
        const float a = sg[lane], b = sg[lane + 32];
        const float m_old = m_run[g];
        const float m_new = fmaxf(m_old, lathe_warp_max(fmaxf(a, b)));
        const float wa = expf(a - m_new), wb = expf(b - m_new);
        sg[lane] = wa;
        sg[lane + 32] = wb;
        const float sum = lathe_warp_sum(wa + wb);
        if (lane == 0) {
          const float f = expf(m_old - m_new);  // 0 on the first tile (m_old = -inf)
          alpha[g] = f;
          l_run[g] = l_run[g] * f + sum;
          m_run[g] = m_new;
        }
      }
    }
    __syncthreads();

    // output: thread = 4 dims (out_lane) of heads out_set, out_set + out_sets, ...
#pragma unroll
    for (int k = 0; k < S::out_heads; ++k) {
      const int g = out_set + k * S::out_sets;
      if (g < group) {
        const float f = alpha[g];
        acc[k].x *= f; acc[k].y *= f; acc[k].z *= f; acc[k].w *= f;
      }
    }
    for (int p = 0; p < nt; ++p) {
      const uint2 raw = *reinterpret_cast<const uint2*>(vs + p * D + out_lane * 4);
      const float2 v01 = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
      const float2 v23 = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
#pragma unroll
      for (int k = 0; k < S::out_heads; ++k) {
        const int g = out_set + k * S::out_sets;
        if (g < group) {
          const float w = ss[g * S::s_stride + p];
          acc[k].x += w * v01.x; acc[k].y += w * v01.y; acc[k].z += w * v23.x; acc[k].w += w * v23.y;
        }
      }
    }
  }
  __syncthreads();  // m_run, l_run final

#pragma unroll
  for (int k = 0; k < S::out_heads; ++k) {
    const int g = out_set + k * S::out_sets;
    if (g >= group) continue;
    const int h = head0 + g;
    const long long head_row = (long long)row * n_head + h;
    if (n_split == 1) {
      float m = m_run[g], l = l_run[g], f = 1.0f;
      if (sinks) {
        const float m_all = fmaxf(m, sinks[h]);
        f = expf(m - m_all);
        l = l * f + expf(sinks[h] - m_all);
      }
      const float r = f / l;
      *reinterpret_cast<float4*>(out + head_row * D + out_lane * 4) =
          make_float4(acc[k].x * r, acc[k].y * r, acc[k].z * r, acc[k].w * r);
    } else {
      const long long at = head_row * n_split + split;
      *reinterpret_cast<float4*>(part_o + at * D + out_lane * 4) = acc[k];
      if (out_lane == 0) part_ml[at] = make_float2(m_run[g], l_run[g]);
    }
  }
}

#define ATTN_DECODE_ENTRY(D)                                                                       \
  extern "C" __global__ void __launch_bounds__(AttnShape<D>::threads) lathe_attn_legacy_decode_##D(        \
      const float* q, const __half* k_cache, const __half* v_cache, const int* sequences,          \
      const int* positions, float* out, float* part_o, float2* part_ml, int n_head, int n_head_kv, \
      int n_ctx, int window, int split_len, int n_split, float scale, float cap,                  \
      const float* sinks) { lathe_pdl_entry();                                                                        \
    attn_decode<D>(q, k_cache, v_cache, sequences, positions, out, part_o, part_ml, n_head,       \
                   n_head_kv, n_ctx, window, split_len, n_split, scale, cap, sinks);              \
  }
ATTN_DECODE_ENTRY(64)
ATTN_DECODE_ENTRY(128)
ATTN_DECODE_ENTRY(256)

// Combines the splits of lathe_attn_decode: grid (n_head, rows), d threads (d <= 1024).
// out = sum_s e_s o_s / (sum_s e_s l_s + exp(sink - m)), e_s = exp(m_s - m), m the largest m_s and sink.
extern "C" __global__ void lathe_attn_legacy_merge(const float* __restrict__ part_o,
                                            const float2* __restrict__ part_ml,
                                            const int* __restrict__ positions, float* __restrict__ out,
                                            int n_head, int d, int window, int split_len, int n_split,
                                            const float* __restrict__ sinks) { lathe_pdl_entry();
  const int h = blockIdx.x, row = blockIdx.y, i = threadIdx.x;
  const int pos = positions[row];
  const int first = window > 0 ? max(0, pos - window + 1) : 0;
  const int used = min(n_split, (pos - first + split_len) / split_len);
  const long long head_row = (long long)row * n_head + h;
  const float2* ml = part_ml + head_row * n_split;
  float m = sinks ? sinks[h] : ATTN_NEG_INF;
  for (int s = 0; s < used; ++s) m = fmaxf(m, ml[s].x);
  float l = sinks ? expf(sinks[h] - m) : 0.0f, o = 0.0f;
  for (int s = 0; s < used; ++s) {
    const float e = expf(ml[s].x - m);
    l += e * ml[s].y;
    o += e * part_o[(head_row * n_split + s) * d + i];
  }
  out[head_row * d + i] = o / l;
}
