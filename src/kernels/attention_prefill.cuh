// Causal prefill attention over the f16 KV caches on tensor cores (flash attention: the scores stay
// in registers, never in memory).
//
// q [rows, n_head, D] f32; caches [sequences, n_ctx, n_head_kv, D] f16; out [rows, n_head, D] f32.
// Contract of a prefill chunk (the launcher's header repeats it): every row belongs to the sequence
// sequences[0] and row r sits at position positions[0] + r; its keys and values are already in the
// cache. Row r sees slots first_r..pos_r, first_r = max(0, pos_r - window + 1) with a window, else 0.
// Scores s = scale * q.k, soft-capped (cap * tanh(s / cap)) when cap > 0; with sinks the softmax
// denominator also counts exp(sink of the head). The softmax runs in base 2 (scores times log2 e).
//
// Grid (m tiles, n_head_kv, n_split), PATTN_THREADS threads (4 warps). The G = n_head / n_head_kv
// query heads of one kv head are packed with the rows into one "m" axis, m = row * G + g, so a block's
// K/V tiles serve every head of the group. A block takes PATTN_BM = 64 consecutive m (warp w: m
// 16w..16w+15), converts their q to f16 in shared memory, then keeps them as mma fragments.
// It streams tiles of BN slots of K and V (cp.async, two buffers, slots outside [kv_begin, kv_end)
// zero-filled so stale cache contents never reach an mma) over its visible range:
//   S = Q K^T (mma.sync m16n8k16, f16 in, f32 out) -> scale, cap, mask -> online softmax (running max
//   and sum per m row, in registers) -> P to f16 -> O += P V (mma.sync) .
// Splits (n_split > 1, for chunks too short to fill the device): split z takes the block's visible
// slots [kv_begin + z * split_len, ... + split_len) and writes its unnormalized O and (max, sum) to the
// partials; lathe_attn_prefill_merge adds them. A split past the block's causal bound exits at once
// after marking its partial empty (max = -inf). Blocks are numbered so the longest (last rows) start
// first. Invariants (the launcher checks): D in {64, 128, 256}, split_len a multiple of BN.

#define PATTN_BM 64
#define PATTN_THREADS 128
#define PATTN_LOG2E 1.4426950408889634f
#define PATTN_NEG_INF __int_as_float(0xff800000)

template <int D>
struct PattnShape {
  static constexpr int bn = D >= 256 ? 32 : 64;  // slots a tile
  static constexpr int stride = D + 8;           // halves a shared row: ldmatrix rows on distinct banks
  static constexpr bool q_in_registers = D <= 128;
  static constexpr int tile_halves = bn * stride;
  // K[2], V[2]; q aliases K[1] when it lives in registers (bn == PATTN_BM there), else its own rows.
  static constexpr int shared_halves = 4 * tile_halves + (q_in_registers ? 0 : PATTN_BM * stride);
};

// 16 bytes from global to shared memory; src_bytes 0 writes zeros and reads nothing.
__device__ __forceinline__ void pattn_copy16(void* shared_dst, const void* global_src, int src_bytes) {
  const unsigned dst = (unsigned)__cvta_generic_to_shared(shared_dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(global_src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void pattn_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void pattn_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

__device__ __forceinline__ void pattn_ldmatrix_x4(unsigned (&r)[4], const __half* p) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
__device__ __forceinline__ void pattn_ldmatrix_x4_trans(unsigned (&r)[4], const __half* p) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

// c (16x8 f32) += a (16x16 f16, row major) * b (16x8 f16, column major).
__device__ __forceinline__ void pattn_mma(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ unsigned pattn_pack(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&h);
}

template <int D>
__device__ void attn_prefill(const float* __restrict__ q, const __half* __restrict__ k_cache,
                             const __half* __restrict__ v_cache, const int* __restrict__ sequences,
                             const int* __restrict__ positions, float* __restrict__ out,
                             float* __restrict__ part_o, float2* __restrict__ part_ml, int rows, int n_head,
                             int n_head_kv, int n_ctx, int window, int split_len, int n_split, float scale,
                             float cap, const float* __restrict__ sinks) {
  typedef PattnShape<D> S;
  constexpr int BN = S::bn, ST = S::stride;
  extern __shared__ float4 pattn_shared4[];
  __half* ks = reinterpret_cast<__half*>(pattn_shared4);  // [2][BN][ST]
  __half* vs = ks + 2 * S::tile_halves;                    // [2][BN][ST]
  __half* qs = S::q_in_registers ? ks + S::tile_halves : vs + 2 * S::tile_halves;  // [BM][ST]

  const int group = n_head / n_head_kv;
  const int m_total = rows * group;
  const int tile_m = gridDim.x - 1 - blockIdx.x;  // the last rows see the most slots: start them first
  const int kvh = blockIdx.y, split = blockIdx.z;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int m0 = tile_m * PATTN_BM;
  const int pos0 = positions[0];
  const long long seq_base = (long long)sequences[0] * n_ctx;

  // The block's visible slots: from the first row's first slot to its last row's position.
  const int row_lo = m0 / group, row_hi = min(rows - 1, (m0 + PATTN_BM - 1) / group);
  const int pos_lo = pos0 + row_lo, pos_hi = pos0 + row_hi;
  const int kv_first = window > 0 ? max(0, pos_lo - window + 1) : 0;
  const int kv_begin = kv_first + split * split_len;
  const int kv_end = n_split > 1 ? min(pos_hi + 1, kv_begin + split_len) : pos_hi + 1;

  // This thread's two m rows (lane / 4 and lane / 4 + 8 of its warp's 16): position, first slot.
  int row_pos[2], row_first[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int m = m0 + warp * 16 + lane / 4 + i * 8;
    row_pos[i] = m < m_total ? pos0 + m / group : pos_hi;  // padding rows: any visible slot, never written
    row_first[i] = window > 0 ? max(0, row_pos[i] - window + 1) : 0;
  }

  if (kv_begin >= kv_end) {  // a split past this block's bound: an empty partial for the merge
    if (tid < PATTN_BM && m0 + tid < m_total) {
      const int m = m0 + tid;
      const long long head_row = (long long)(m / group) * n_head + kvh * group + m % group;
      part_ml[(long long)split * rows * n_head + head_row] = make_float2(PATTN_NEG_INF, 0.0f);
    }
    return;
  }

  auto load_tile = [&](int buffer, int slot0) {
    __half* kb = ks + buffer * S::tile_halves;
    __half* vb = vs + buffer * S::tile_halves;
    for (int i = tid; i < BN * (D / 8); i += PATTN_THREADS) {
      const int p = i / (D / 8), c = i % (D / 8);
      const int slot = slot0 + p;
      const bool in = slot < kv_end;
      const long long at = in ? ((seq_base + slot) * n_head_kv + kvh) * D + c * 8 : 0;
      pattn_copy16(kb + p * ST + c * 8, k_cache + at, in ? 16 : 0);
      pattn_copy16(vb + p * ST + c * 8, v_cache + at, in ? 16 : 0);
    }
    pattn_commit();
  };

  // q of the block's m rows, f32 -> f16 in shared memory (zeros past the last row).
  for (int i = tid; i < PATTN_BM * (D / 4); i += PATTN_THREADS) {
    const int ml = i / (D / 4), c = i % (D / 4), m = m0 + ml;
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
    if (m < m_total)
      x = *reinterpret_cast<const float4*>(q + ((long long)(m / group) * n_head + kvh * group + m % group) * D + c * 4);
    const __half2 lo = __floats2half2_rn(x.x, x.y), hi = __floats2half2_rn(x.z, x.w);
    uint2 packed;
    packed.x = *reinterpret_cast<const unsigned*>(&lo);
    packed.y = *reinterpret_cast<const unsigned*>(&hi);
    *reinterpret_cast<uint2*>(qs + ml * ST + c * 4) = packed;
  }
  load_tile(0, kv_begin);
  __syncthreads();

  // ldmatrix addressing: lane l gives row l % 8 of matrix l / 8.
  const int lrow = lane & 7, lmat = lane >> 3;
  const __half* q_warp = qs + (warp * 16 + lrow + (lmat & 1) * 8) * ST + (lmat >> 1) * 8;
  unsigned qf[S::q_in_registers ? D / 16 : 1][4];
  if constexpr (S::q_in_registers) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) pattn_ldmatrix_x4(qf[kk], q_warp + kk * 16);
    __syncthreads();  // q's rows (K buffer 1) are free for the next tile
  }

  float o[D / 8][4];
#pragma unroll
  for (int j = 0; j < D / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  float row_max[2] = {PATTN_NEG_INF, PATTN_NEG_INF}, row_sum[2] = {0.0f, 0.0f};  // sums: this thread's share
  const float scale2 = scale * PATTN_LOG2E;
  const int first_hi = window > 0 ? max(0, pos_hi - window + 1) : 0;  // the last row's first slot

  int buffer = 0;
  for (int slot0 = kv_begin; slot0 < kv_end; slot0 += BN) {
    if (slot0 + BN < kv_end) {
      load_tile(buffer ^ 1, slot0 + BN);
      pattn_wait<1>();
    } else {
      pattn_wait<0>();
    }
    __syncthreads();
    const __half* kb = ks + buffer * S::tile_halves;
    const __half* vb = vs + buffer * S::tile_halves;

    // S = Q K^T: 16 m rows x BN slots a warp; lane holds rows lane/4 (+8), slots 2 (lane%4) (+1) of each 8.
    float s[BN / 8][4];
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      unsigned a[4];
      if constexpr (S::q_in_registers) {
#pragma unroll
        for (int t = 0; t < 4; ++t) a[t] = qf[kk][t];
      } else {
        pattn_ldmatrix_x4(a, q_warp + kk * 16);
      }
#pragma unroll
      for (int j = 0; j < BN / 8; j += 2) {
        unsigned b[4];  // slots 8j.. (d lo, d hi), slots 8(j+1).. (d lo, d hi)
        pattn_ldmatrix_x4(b, kb + ((j + (lmat >> 1)) * 8 + lrow) * ST + kk * 16 + (lmat & 1) * 8);
        pattn_mma(s[j], a, b[0], b[1]);
        pattn_mma(s[j + 1], a, b[2], b[3]);
      }
    }

    // Scale, cap, mask (only tiles that cross a row's bound need the mask), online softmax.
    const bool masked = slot0 + BN - 1 > pos_lo || (window > 0 && slot0 < first_hi);
    float tile_max[2] = {PATTN_NEG_INF, PATTN_NEG_INF};
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[j][e];
        if (cap > 0.0f) {
          x = cap * tanhf(x * scale / cap) * PATTN_LOG2E;
        } else {
          x *= scale2;
        }
        if (masked) {
          const int slot = slot0 + j * 8 + (lane & 3) * 2 + (e & 1), i = e >> 1;
          if (slot > row_pos[i] || slot < row_first[i]) x = PATTN_NEG_INF;
        }
        s[j][e] = x;
        tile_max[e >> 1] = fmaxf(tile_max[e >> 1], x);
      }
    }
    float alpha[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      tile_max[i] = fmaxf(tile_max[i], __shfl_xor_sync(0xffffffffu, tile_max[i], 1));
      tile_max[i] = fmaxf(tile_max[i], __shfl_xor_sync(0xffffffffu, tile_max[i], 2));
      const float m_new = fmaxf(row_max[i], tile_max[i]);
      const float ref = m_new == PATTN_NEG_INF ? 0.0f : m_new;  // a row with nothing visible yet
      alpha[i] = exp2f(row_max[i] - ref);
      row_max[i] = m_new;
      tile_max[i] = ref;
      row_sum[i] *= alpha[i];
    }
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float p = exp2f(s[j][e] - tile_max[e >> 1]);
        s[j][e] = p;
        row_sum[e >> 1] += p;
      }
    }
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      o[j][0] *= alpha[0];
      o[j][1] *= alpha[0];
      o[j][2] *= alpha[1];
      o[j][3] *= alpha[1];
    }

    // O += P V: P's accumulators become the A fragments of 16-slot steps; V through ldmatrix.trans.
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      unsigned a[4];
      a[0] = pattn_pack(s[2 * kk][0], s[2 * kk][1]);
      a[1] = pattn_pack(s[2 * kk][2], s[2 * kk][3]);
      a[2] = pattn_pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      a[3] = pattn_pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
      for (int j = 0; j < D / 8; j += 2) {
        unsigned b[4];  // d 8j.. (slots lo, hi), d 8(j+1).. (slots lo, hi)
        pattn_ldmatrix_x4_trans(b, vb + (kk * 16 + (lmat & 1) * 8 + lrow) * ST + (j + (lmat >> 1)) * 8);
        pattn_mma(o[j], a, b[0], b[1]);
        pattn_mma(o[j + 1], a, b[2], b[3]);
      }
    }
    __syncthreads();  // every warp is done with this buffer before it is refilled
    buffer ^= 1;
  }

  // Finish: the quad's sums, sinks, division; or the partials of a split.
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    row_sum[i] += __shfl_xor_sync(0xffffffffu, row_sum[i], 1);
    row_sum[i] += __shfl_xor_sync(0xffffffffu, row_sum[i], 2);
    const int m = m0 + warp * 16 + lane / 4 + i * 8;
    if (m >= m_total) continue;
    const int head = kvh * group + m % group;
    const long long head_row = (long long)(m / group) * n_head + head;
    float* dst;
    float r = 1.0f;
    if (n_split == 1) {
      float l = row_sum[i], f = 1.0f;
      if (sinks) {
        const float sink = sinks[head] * PATTN_LOG2E, m_all = fmaxf(row_max[i], sink);
        f = exp2f(row_max[i] - m_all);
        l = l * f + exp2f(sink - m_all);
      }
      r = f / l;
      dst = out + head_row * D;
    } else {
      const long long at = (long long)split * rows * n_head + head_row;
      dst = part_o + at * D;
      if ((lane & 3) == 0) part_ml[at] = make_float2(row_max[i], row_sum[i]);
    }
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
      *reinterpret_cast<float2*>(dst + j * 8 + (lane & 3) * 2) = make_float2(o[j][2 * i] * r, o[j][2 * i + 1] * r);
  }
}

#define ATTN_PREFILL_ENTRY(D)                                                                         \
  extern "C" __global__ void __launch_bounds__(PATTN_THREADS, 2) lathe_attn_prefill_##D(              \
      const float* q, const __half* k_cache, const __half* v_cache, const int* sequences,             \
      const int* positions, float* out, float* part_o, float2* part_ml, int rows, int n_head,         \
      int n_head_kv, int n_ctx, int window, int split_len, int n_split, float scale, float cap,       \
      const float* sinks) {                                                                           \
    lathe_pdl_entry();                                                                                \
    attn_prefill<D>(q, k_cache, v_cache, sequences, positions, out, part_o, part_ml, rows, n_head,   \
                    n_head_kv, n_ctx, window, split_len, n_split, scale, cap, sinks);                \
  }
ATTN_PREFILL_ENTRY(64)
ATTN_PREFILL_ENTRY(128)
ATTN_PREFILL_ENTRY(256)

// Adds the splits of lathe_attn_prefill_<D>: grid (rows * n_head), d threads. Partials are
// [n_split][rows * n_head] (max, sum in base 2) and [n_split][rows * n_head][d]; an empty split has
// max -inf and its o is never read. out = sum_z e_z o_z / (sum_z e_z l_z + 2^(sink - m)).
extern "C" __global__ void lathe_attn_prefill_merge(const float* __restrict__ part_o,
                                                    const float2* __restrict__ part_ml, float* __restrict__ out,
                                                    int rows, int n_head, int d, int n_split,
                                                    const float* __restrict__ sinks) {
  lathe_pdl_entry();
  const long long head_row = blockIdx.x, n = (long long)rows * n_head;
  const int h = (int)(head_row % n_head), i = threadIdx.x;
  float m = sinks ? sinks[h] * PATTN_LOG2E : PATTN_NEG_INF;
  for (int z = 0; z < n_split; ++z) m = fmaxf(m, part_ml[z * n + head_row].x);
  float l = sinks ? exp2f(sinks[h] * PATTN_LOG2E - m) : 0.0f, o = 0.0f;
  for (int z = 0; z < n_split; ++z) {
    const float2 ml = part_ml[z * n + head_row];
    if (ml.x == PATTN_NEG_INF) continue;
    const float e = exp2f(ml.x - m);
    l += e * ml.y;
    o += e * part_o[(z * n + head_row) * d + i];
  }
  out[head_row * d + i] = o / l;
}
