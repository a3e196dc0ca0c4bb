// Decode attention over f16 KV caches, split along the cache (flash decoding), on tensor cores.
//
// q [rows, n_head, D] f32; caches [sequences, n_ctx, n_head_kv, D] f16; row r attends to the slots
// first..pos of its own sequence, pos = positions[r], first = max(0, pos - window + 1) with a window,
// else 0. Scores s = scale * q.k, soft-capped (cap * tanh(s / cap)) when cap > 0; with sinks (one
// logit per query head) the softmax denominator also counts exp(sink). out [rows, n_head, D] f32.
// Rows are independent, so a prefill chunk (rows at consecutive positions, appended before) is causal.
//
// Grid (n_split, n_head_kv * n_sets, rows), W warps (4, or 8 for D <= 128). A block takes one row,
// one kv head and a set of up to 8 of the G = n_head / n_head_kv query heads that share it
// (n_sets = ceil(G / 8); G <= 8, every model we know, reads the cache once), over its split of the
// visible slots. The split length is sized on the device from the row's position (attd_split_len),
// so a graph captured for n_ctx slots spreads a short row over few blocks and the rest exit at once.
// Warps take 16-slot chunks in turn; each lane copies whole 16-byte pieces of K and V into its own
// part of a per-warp ring of shared memory (cp.async, STAGES chunks in flight; a lane reads back only
// what it copied, so the warps never wait on each other until the end).
//
// Arithmetic: mma.sync m16n8k16 (f16 in, f32 accumulate) with f32 accuracy kept by splitting each f32
// operand into a high and a low f16 (x = hi + lo to 2^-22): the 16 rows of the A operand are the 8
// heads' hi parts (rows 0-7) and lo parts (rows 8-15), so row g plus row g+8 of the product is the
// f32-accurate result for head g at the cost of one mma.
//   scores S = Q K^T: A = q (hi; lo), B = 8 slots' keys; the head dimension is permuted (lane t of a
//     quad holds dims 8t..8t+7 of each 32) identically for q and k, which leaves the dot unchanged.
//   output O += P V: A = p (hi; lo) straight from the score fragments (same slot order), B = V with
//     two slots' values of one dim paired by byte_perm; lane (g, t) ends with dims 16t..16t+15 of
//     each 64 for head g.
// Softmax runs in log2 units (q carries scale * log2 e, or the cap's tanh is scaled after).
// The block's warps combine through shared memory; when the row uses one split the block finishes
// it (sinks, division; with qout, the output's int8 form too: attd_quantize_out), else it writes its
// unnormalized output and (max, sum) to the partials. Then,
// with tickets (an int per (row, blockIdx.y), zero between launches), the last of the row's splits
// to finish merges them (attd_merge_dims) and sets its ticket back to zero; without them (the
// form a decode step takes at long positions; attention_launch.h) lathe_attn_merge does it in a
// launch of its own.
// Invariants (the launcher checks them): G <= 32, split_min a multiple of ATTD_CHUNK, caches and q
// 16-byte aligned, D in {64, 128, 256}.

#define ATTD_CHUNK 16
#define ATTD_WARPS 4  // warps a block of lathe_attn_decode_<D> (W); lathe_attn_decode_<D>_w8 has 8
#define ATTD_HEADS 8
#define ATTD_LOG2E 1.4426950408889634f
#define ATTD_NEG_INF __int_as_float(0xff800000)
// When a one-row decode attention lets the next launch (o) start: 1 (the default) once its prologue
// (rope, the cache append) is done, so o's blocks and their loads before their wait arrive after it;
// 0 once its own wait returns, as every other kernel; 2 once its chunks are done. The next launch's
// wait returns only after this one has ended, whenever it was released: the same bits. On the H200,
// tg128, 1 against 0: qwen3-30b-a3b Q8_0 +1.0%, qwen3-0.6b Q8_0 +0.6%, qwen3-8b Q8_0 even; 2 loses on
// the 0.6B (docs/perf.md, thirty-third session; device_run.sh at1, at2).
#ifndef LATHE_ATTD_RELEASE
#define LATHE_ATTD_RELEASE 1
#endif

// Stages: the chunks a warp's ring holds (0: by D, the launchers' count; the o_split kernels,
// rope_attention_o_split.cuh and rope_attention_o_cluster.cuh, take 1: a short span's chunks one a warp).
template <int D, int W = ATTD_WARPS, int Stages = 0>
struct AttdShape {
  static constexpr int warps = W;
  static constexpr int threads = W * 32;
  static constexpr int stages = Stages > 0 ? Stages : D <= 64 ? 4 : D <= 128 ? 3 : 2;
  static constexpr int k_pieces = D / 16;  // 2 n-tiles of 8 slots x D/32 pieces
  static constexpr int v_pieces = D / 16;  // 4 slots x D/64 pieces
  static constexpr int stage_bytes = (k_pieces + v_pieces) * 32 * 16;
  static constexpr int warp_bytes = stages * stage_bytes;
  static constexpr int out_stride = D + 4;  // floats per head in the block's merge
};

// Dynamic shared memory of a block of w warps (the launcher mirrors this): the warps' rings, which the
// end of the block reuses for its merge (w * ATTD_HEADS * (D + 6) floats, always smaller).
__host__ __device__ constexpr int attd_shared_bytes(int d, int w = ATTD_WARPS) {
  return w * (d <= 64 ? 4 : d <= 128 ? 3 : 2) * (d / 8) * 32 * 16;
}

// Slots of each split of a row that sees `visible` slots: an even share rounded up to split_min.
// The merge uses the same rule, so the splits a row used are ceil(visible / len).
__device__ __forceinline__ int attd_split_len(int visible, int n_split, int split_min) {
  const int len = (visible + n_split - 1) / n_split;
  return (len + split_min - 1) / split_min * split_min;
}

__device__ __forceinline__ void attd_copy16(unsigned shared_dst, const void* global_src, bool valid) {
  // src-size 0 fills the 16 bytes with zeros (slots past the row's end).
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_dst), "l"(global_src),
               "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void attd_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void attd_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// c += A B, A 16x16 f16 (rows g, g+8; k pairs 2t, 2t+8), B 16x8 f16 (k pairs 2t, 2t+8; col g).
__device__ __forceinline__ void attd_mma(float (&c)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                         unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// (x, y) as f16 pairs hi and lo with x = hi.x + lo.x, y = hi.y + lo.y to about 2^-22 relative.
__device__ __forceinline__ void attd_split2(float x, float y, unsigned& hi, unsigned& lo) {
  const __half2 h = __floats2half2_rn(x, y);
  const float2 back = __half22float2(h);
  const __half2 l = __floats2half2_rn(x - back.x, y - back.y);
  hi = *reinterpret_cast<const unsigned*>(&h);
  lo = *reinterpret_cast<const unsigned*>(&l);
}

// The attention's output in the int8 form the next product reads (quantize_epilogue: quantize_act.cuh's
// layout for q_rows rows of k = n_head * D values, q_words 1 or 2), bit-identical to lathe_quantize_act:
// called by whole warps whose thread holds values i.. i + 3 (4 | i), 8 lanes a 32-value block, as the
// finishing loops below do; a lane not `mine` quantizes into a shared dummy.
__device__ __forceinline__ void attd_quantize_out(float4 v, bool mine, long long i, int k, int8_t* qout, int q_words,
                                                  int q_rows) {
  __shared__ __align__(16) int8_t attd_dummy_q[8];
  __shared__ float4 attd_dummy_ds;
  const long long values = static_cast<long long>(q_rows) * k;
  float4* ds = reinterpret_cast<float4*>(qout + values * q_words);
  lathe_quantize_block32_part(v, q_words == 2, mine ? qout + i : attd_dummy_q, mine ? qout + values + i : attd_dummy_q + 4,
                              mine ? ds + (i >> 5) : &attd_dummy_ds);
}

// One head's splits merged for 4 consecutive dims: ml its splits' (max, sum) in log2 units, po its
// partial outputs at those dims (split s at po + s * d), sk the sink's logit in log2 units where
// has_sink. out = sum_s e_s o_s / (sum_s e_s l_s + [2^(sk - m)]), e_s = 2^(m_s - m), m the largest m_s
// and the sink, summed in split order. B > 0: the first B splits' loads all in flight at once (one
// round trip where used <= B; the merge kernel's); B == 0: loop by loop (the last split's block, whose
// registers the decode loop sizes). The arithmetic and its order are the same, so both merges give
// the same bits (test_gpu_attention_gpu).
template <int B>
__device__ __forceinline__ float4 attd_merge_dims(const float2* __restrict__ ml, const float* __restrict__ po, int d,
                                                  int used, float sk, bool has_sink) {
  float m = sk, l, o[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (B > 0 && used <= B) {
    float2 v[B > 0 ? B : 1];
    float4 p[B > 0 ? B : 1];
#pragma unroll
    for (int s = 0; s < B; ++s)
      if (s < used) {
        v[s] = __ldcg(&ml[s]);
        p[s] = __ldcg(reinterpret_cast<const float4*>(po + (long long)s * d));
      }
#pragma unroll
    for (int s = 0; s < B; ++s)
      if (s < used) m = fmaxf(m, v[s].x);
    l = has_sink ? exp2f(sk - m) : 0.0f;
#pragma unroll
    for (int s = 0; s < B; ++s)
      if (s < used) {
        const float e = exp2f(v[s].x - m);
        l = fmaf(e, v[s].y, l);
        o[0] = fmaf(e, p[s].x, o[0]);
        o[1] = fmaf(e, p[s].y, o[1]);
        o[2] = fmaf(e, p[s].z, o[2]);
        o[3] = fmaf(e, p[s].w, o[3]);
      }
  } else {
    for (int s = 0; s < used; ++s) m = fmaxf(m, __ldcg(&ml[s].x));
    l = has_sink ? exp2f(sk - m) : 0.0f;
    for (int s = 0; s < used; ++s) {
      const float2 v = __ldcg(&ml[s]);
      const float e = exp2f(v.x - m);
      l = fmaf(e, v.y, l);
      const float4 p = __ldcg(reinterpret_cast<const float4*>(po + (long long)s * d));
      o[0] = fmaf(e, p.x, o[0]);
      o[1] = fmaf(e, p.y, o[1]);
      o[2] = fmaf(e, p.z, o[2]);
      o[3] = fmaf(e, p.w, o[3]);
    }
  }
  return make_float4(o[0] / l, o[1] / l, o[2] / l, o[3] / l);
}

// What a block does around its wait for the kernel before, beside the cache's first chunks: nothing
// here (q is read from memory); rope_attention.cuh's prologue ropes q and appends the row's own k and
// v slot in the block. before_wait(row, pos) runs before the wait; after_wait(...) after it, its
// results visible to the block's S::threads threads once it returns (it syncs them); q_head(q, row,
// n_head, head) is where head's D values of the row lie.
struct attd_no_prologue {
  __device__ __forceinline__ void before_wait(int, int) const {}
  __device__ __forceinline__ void after_wait(int, int, int, int, int, bool) const {}
  __device__ __forceinline__ const float* q_head(const float* q, long long row, int n_head, int head, int d) const {
    return q + (row * n_head + head) * d;
  }
};

// OutShared (rope_attention_o_split.cuh): a row's only split leaves its block's heads' outputs in
// shared memory (out_sh [heads here][D]) instead of `out` and `qout`, for the block's own product.
// PartShared (rope_attention_o_cluster.cuh): every split, its row's only one too, leaves its partial
// there instead (out_sh: the unnormalized outputs [heads here][D], then (m, l) [heads here] as float2),
// for its cluster's merge.
template <int D, int W = ATTD_WARPS, class Prologue = attd_no_prologue, bool OutShared = false, int Stages = 0,
          bool PartShared = false>
__device__ void attd_decode(const float* __restrict__ q, const __half* __restrict__ k_cache,
                            const __half* __restrict__ v_cache, const int* __restrict__ sequences,
                            const int* __restrict__ positions, float* __restrict__ out,
                            float* __restrict__ part_o, float2* __restrict__ part_ml, int n_head,
                            int n_head_kv, int n_ctx, int window, int split_min, int n_split,
                            float scale, float cap, const float* __restrict__ sinks, int* __restrict__ tickets,
                            int8_t* qout, int q_words, int q_rows, int split, int by, int row, int grid_y,
                            int early, const Prologue& prologue = Prologue(), float* out_sh = nullptr) {
  typedef AttdShape<D, W, Stages> S;
  constexpr int KB = D / 32, VB = D / 64;
  extern __shared__ float4 attd_shared4[];
  unsigned char* smem = reinterpret_cast<unsigned char*>(attd_shared4);

  const int group = n_head / n_head_kv, n_sets = (group + ATTD_HEADS - 1) / ATTD_HEADS;
  // Block (split, by, row) of grid (n_split, grid_y, rows), on the block's first S::threads threads.
  // (In the persistent step the phase before this one wrote q: nothing writes it while this body
  // runs, and the grid barrier's acquire has discarded the SM's L1 lines since, so reading it through
  // the read-only path is safe there too.)
  const int kvh = by / n_sets, set = by % n_sets;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int pos = positions[row];  // positions and sequences are the step's inputs: read before any wait
  const int first = window > 0 ? max(0, pos - window + 1) : 0;
  const int len = attd_split_len(pos - first + 1, n_split, split_min);
  const int begin = first + split * len;
  if (begin > pos) return;  // this split sees nothing of this row; the merge skips it
  const int end = min(begin + len, pos + 1);
  const int n_chunks = (end - begin + ATTD_CHUNK - 1) / ATTD_CHUNK;
  const int my_chunks = n_chunks > warp ? (n_chunks - warp + S::warps - 1) / S::warps : 0;
  const long long seq_slot0 = (long long)sequences[row] * n_ctx;
  const int head0 = kvh * group + set * ATTD_HEADS;
  const int n_heads_here = min(ATTD_HEADS, group - set * ATTD_HEADS);

  // (LATHE_STAMPS: the block's wait, its prologue done, warp 0's first chunk landed, its chunks done,
  // the block's outputs combined, the finishing loop done, the end; product_stamps.py's attention table)
  LATHE_BLOCK_STAMPS(stamps);
  unsigned char* ring = smem + warp * S::warp_bytes;
  const unsigned ring_addr = (unsigned)__cvta_generic_to_shared(ring);

  // Copies the warp's i-th chunk into stage i % stages (an empty group past the last, so that
  // wait_group counts stay uniform). Lane (g, t): K of slots g and 8 + g, dims 8t.. of each 32;
  // V of slots 2t, 2t+1, 2t+8, 2t+9, dims 8g.. of each 64.
  auto issue = [&](int i) {
    const int c = warp + i * S::warps;
    if (c < n_chunks) {
      const int slot0 = begin + c * ATTD_CHUNK;
      const unsigned stage = ring_addr + (i % S::stages) * S::stage_bytes + lane * 16;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int slot = slot0 + j * 8 + g;
        const bool valid = slot < end;
        const __half* src = k_cache + ((seq_slot0 + (valid ? slot : begin)) * n_head_kv + kvh) * D + t * 8;
#pragma unroll
        for (int b = 0; b < KB; ++b) attd_copy16(stage + (j * KB + b) * 512, src + b * 32, valid);
      }
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int slot = slot0 + 2 * t + (r & 1) + 8 * (r >> 1);
        const bool valid = slot < end;
        const __half* src = v_cache + ((seq_slot0 + (valid ? slot : begin)) * n_head_kv + kvh) * D + g * 8;
#pragma unroll
        for (int e = 0; e < VB; ++e) attd_copy16(stage + (S::k_pieces + e * 4 + r) * 512, src + e * 64, valid);
      }
    }
    attd_commit();
  };
  // early != 0 (the kernel, for one row): the chunks that hold only slots before pos (written by
  // earlier steps) are asked for before waiting for the kernel before, which appends slot pos; the
  // rest of the ring, and q, after it (a split with nothing to see returned above without waiting:
  // it reads nothing of this step's). early == 0: the caller has waited (the persistent step; and
  // several rows, whose earlier rows' slots this step appends too).
  int issued = 0;
  if (early) {
    while (issued < S::stages) {
      const int c = warp + issued * S::warps;
      if (c < n_chunks && begin + (c + 1) * ATTD_CHUNK > pos) break;
      issue(issued++);
    }
  }
  prologue.before_wait(row, pos);
  if (early) lathe_step_wait(nullptr, LATHE_ATTD_RELEASE == 0);
  LATHE_STAMP_AT(stamps, 1);
  // The split that holds slot pos (its last) appends it (set 0 of the kv head's sets).
  prologue.after_wait(row, pos, kvh, head0, n_heads_here, begin + len > pos && set == 0);
  if (early && LATHE_ATTD_RELEASE == 1) lathe_pdl_release();
  LATHE_STAMP_AT(stamps, 2);
  for (; issued < S::stages; ++issued) issue(issued);

  // q of head g as A fragments (hi rows g, lo rows g + 8), dims permuted as the keys'.
  unsigned qf[KB][8];
  {
    const float qscale = cap > 0.0f ? scale : scale * ATTD_LOG2E;
    const bool has = g < n_heads_here;
    const float* qh = prologue.q_head(q, row, n_head, head0 + (has ? g : 0), D) + t * 8;
#pragma unroll
    for (int b = 0; b < KB; ++b) {
      float4 x0 = make_float4(0.f, 0.f, 0.f, 0.f), x1 = x0;
      if (has) {
        x0 = *reinterpret_cast<const float4*>(qh + b * 32);
        x1 = *reinterpret_cast<const float4*>(qh + b * 32 + 4);
      }
      attd_split2(x0.x * qscale, x0.y * qscale, qf[b][0], qf[b][1]);
      attd_split2(x0.z * qscale, x0.w * qscale, qf[b][2], qf[b][3]);
      attd_split2(x1.x * qscale, x1.y * qscale, qf[b][4], qf[b][5]);
      attd_split2(x1.z * qscale, x1.w * qscale, qf[b][6], qf[b][7]);
    }
  }
  const float cap_log2 = cap * ATTD_LOG2E;

  float acc[VB][8][4];
#pragma unroll
  for (int e = 0; e < VB; ++e)
#pragma unroll
    for (int jj = 0; jj < 8; ++jj) acc[e][jj][0] = acc[e][jj][1] = acc[e][jj][2] = acc[e][jj][3] = 0.0f;
  float m_run = ATTD_NEG_INF, l_run = 0.0f;  // head g's; l_run is this lane's share of the sum

  for (int i = 0; i < my_chunks; ++i) {
    attd_wait<S::stages - 1>();
    if (i == 0) LATHE_STAMP_AT(stamps, 3);
    const unsigned char* stage = ring + (i % S::stages) * S::stage_bytes + lane * 16;
    float sc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int b = 0; b < KB; ++b) {
      const uint4 k0 = *reinterpret_cast<const uint4*>(stage + b * 512);
      const uint4 k1 = *reinterpret_cast<const uint4*>(stage + (KB + b) * 512);
      attd_mma(sc[0], qf[b][0], qf[b][1], qf[b][2], qf[b][3], k0.x, k0.y);
      attd_mma(sc[0], qf[b][4], qf[b][5], qf[b][6], qf[b][7], k0.z, k0.w);
      attd_mma(sc[1], qf[b][0], qf[b][1], qf[b][2], qf[b][3], k1.x, k1.y);
      attd_mma(sc[1], qf[b][4], qf[b][5], qf[b][6], qf[b][7], k1.z, k1.w);
    }
    // Head g's scores of slots 2t, 2t+1, 8+2t, 9+2t of the chunk.
    const int slot0 = begin + (warp + i * S::warps) * ATTD_CHUNK + 2 * t;
    float s[4] = {sc[0][0] + sc[0][2], sc[0][1] + sc[0][3], sc[1][0] + sc[1][2], sc[1][1] + sc[1][3]};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (cap > 0.0f) s[e] = cap_log2 * tanhf(s[e] / cap);
      if (slot0 + (e & 1) + 8 * (e >> 1) >= end) s[e] = ATTD_NEG_INF;
    }
    float mx = fmaxf(fmaxf(s[0], s[1]), fmaxf(s[2], s[3]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m_run, mx);
    const float m_use = m_new == ATTD_NEG_INF ? 0.0f : m_new;
    const float alpha = exp2f(m_run - m_use);  // 0 on the first chunk (m_run = -inf)
    float p[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) p[e] = exp2f(s[e] - m_use);
    l_run = l_run * alpha + ((p[0] + p[1]) + (p[2] + p[3]));
    m_run = m_new;
    if (__any_sync(0xffffffffu, alpha != 1.0f)) {
#pragma unroll
      for (int e = 0; e < VB; ++e)
#pragma unroll
        for (int jj = 0; jj < 8; ++jj)
#pragma unroll
          for (int c = 0; c < 4; ++c) acc[e][jj][c] *= alpha;
    }
    // A rows g (hi) and g+8 (lo), k pairs 2t (slots 2t, 2t+1) and 2t+8 (slots 8+2t, 9+2t).
    unsigned p01_hi, p01_lo, p23_hi, p23_lo;
    attd_split2(p[0], p[1], p01_hi, p01_lo);
    attd_split2(p[2], p[3], p23_hi, p23_lo);
#pragma unroll
    for (int e = 0; e < VB; ++e) {
      const uint4 va = *reinterpret_cast<const uint4*>(stage + (S::k_pieces + e * 4 + 0) * 512);
      const uint4 vb = *reinterpret_cast<const uint4*>(stage + (S::k_pieces + e * 4 + 1) * 512);
      const uint4 vc = *reinterpret_cast<const uint4*>(stage + (S::k_pieces + e * 4 + 2) * 512);
      const uint4 vd = *reinterpret_cast<const uint4*>(stage + (S::k_pieces + e * 4 + 3) * 512);
      const unsigned wa[4] = {va.x, va.y, va.z, va.w}, wb[4] = {vb.x, vb.y, vb.z, vb.w};
      const unsigned wc[4] = {vc.x, vc.y, vc.z, vc.w}, wd[4] = {vd.x, vd.y, vd.z, vd.w};
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        const unsigned sel = (jj & 1) ? 0x7632u : 0x5410u;
        const unsigned b0 = __byte_perm(wa[jj >> 1], wb[jj >> 1], sel);
        const unsigned b1 = __byte_perm(wc[jj >> 1], wd[jj >> 1], sel);
        attd_mma(acc[e][jj], p01_hi, p01_lo, p23_hi, p23_lo, b0, b1);
      }
    }
    issue(i + S::stages);
  }
  attd_wait<0>();
  if (early && LATHE_ATTD_RELEASE == 2) lathe_pdl_release();
#ifndef LATHE_ATTD_FINISH_SPLIT  // (a measuring variant: stamp 4 inside the finishing loop instead, below)
  LATHE_STAMP_AT(stamps, 4);
#endif
  l_run += __shfl_xor_sync(0xffffffffu, l_run, 1);
  l_run += __shfl_xor_sync(0xffffffffu, l_run, 2);

  // The block's warps combine: [warp][head][out_stride] outputs, then [warp][head] (m, l).
  lathe_sync_first(S::threads);  // every warp is done with its ring
  float* ob = reinterpret_cast<float*>(smem);
  float* mls = ob + S::warps * ATTD_HEADS * S::out_stride;
  {
    float* o_w = ob + (warp * ATTD_HEADS + g) * S::out_stride + 16 * t;
#pragma unroll
    for (int e = 0; e < VB; ++e)
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        o_w[e * 64 + jj] = acc[e][jj][0] + acc[e][jj][2];
        o_w[e * 64 + 8 + jj] = acc[e][jj][1] + acc[e][jj][3];
      }
    if (t == 0) {
      mls[(warp * ATTD_HEADS + g) * 2] = m_run;
      mls[(warp * ATTD_HEADS + g) * 2 + 1] = l_run;
    }
  }
  lathe_sync_first(S::threads);
  LATHE_STAMP_AT(stamps, 5);
  const bool finish = len >= pos - first + 1;  // the row's only split: no merge (it skips the row)
  // 4 consecutive dims of one head a thread (float4 stores; the int8 form's part quantizer), over
  // whole warps: lanes past the block's values compute on dim 0 and write nothing.
  const int n4 = n_heads_here * D / 4, n4_warps = (n4 + 31) & ~31;
  for (int i4 = threadIdx.x; i4 < n4_warps; i4 += S::threads) {
    const bool mine = i4 < n4;
    const int idx = mine ? 4 * i4 : 0, hi = idx / D, dim = idx % D;
    float m = ATTD_NEG_INF;
#pragma unroll
    for (int w = 0; w < S::warps; ++w) m = fmaxf(m, mls[(w * ATTD_HEADS + hi) * 2]);
    float l = 0.0f, o[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int w = 0; w < S::warps; ++w) {
      const float mw = mls[(w * ATTD_HEADS + hi) * 2];
      const float f = mw == ATTD_NEG_INF ? 0.0f : exp2f(mw - m);  // a warp with no chunk adds nothing
      l += f * mls[(w * ATTD_HEADS + hi) * 2 + 1];
      const float4 ow = *reinterpret_cast<const float4*>(ob + (w * ATTD_HEADS + hi) * S::out_stride + dim);
      o[0] += f * ow.x;
      o[1] += f * ow.y;
      o[2] += f * ow.z;
      o[3] += f * ow.w;
    }
    const int h = head0 + hi;
    const long long head_row = (long long)row * n_head + h;
    if constexpr (PartShared) {
      if (mine) {
        *reinterpret_cast<float4*>(out_sh + idx) = make_float4(o[0], o[1], o[2], o[3]);
        if (dim == 0) reinterpret_cast<float2*>(out_sh + n_heads_here * D)[hi] = make_float2(m, l);
      }
      continue;
    }
    if (finish) {
      if (sinks) {
        const float sk = sinks[h] * ATTD_LOG2E, m_all = fmaxf(m, sk), f = exp2f(m - m_all);
        l = l * f + exp2f(sk - m_all);
#pragma unroll
        for (int e = 0; e < 4; ++e) o[e] *= f;
      }
      const float4 r = make_float4(o[0] / l, o[1] / l, o[2] / l, o[3] / l);
      if constexpr (OutShared) {
        if (mine) *reinterpret_cast<float4*>(out_sh + idx) = r;
        continue;
      }
      if (mine) *reinterpret_cast<float4*>(out + head_row * D + dim) = r;
#ifdef LATHE_ATTD_FINISH_SPLIT
      if (i4 == threadIdx.x) LATHE_STAMP_AT(stamps, 4);  // the output formed and stored, before its int8 form
#endif
      if (qout) attd_quantize_out(r, mine, head_row * D + dim, n_head * D, qout, q_words, q_rows);
    } else if (mine) {
      const long long at = head_row * n_split + split;
      *reinterpret_cast<float4*>(part_o + at * D + dim) = make_float4(o[0], o[1], o[2], o[3]);
      if (dim == 0) part_ml[at] = make_float2(m, l);
    }
  }
  LATHE_STAMP_AT(stamps, 6);
  if (finish || !tickets) {
    LATHE_STAMP_END(stamps, k_cache, n_head, D);
    return;
  }
  // The last split of (row, by) to get here merges: partials published (fence), then a
  // ticket; the block that draws used - 1 sees every other split's partials after its own fence.
  __shared__ int attd_is_last;
  __threadfence();
  lathe_sync_first(S::threads);
  const int used = min(n_split, (pos - first + len) / len);
  if (threadIdx.x == 0) {
    int* ticket = tickets + (long long)row * grid_y + by;
    attd_is_last = atomicAdd(ticket, 1) == used - 1;
    if (attd_is_last) *ticket = 0;  // every split of this launch has drawn: ready for the next launch
  }
  lathe_sync_first(S::threads);
  if (!attd_is_last) {
    LATHE_STAMP_END(stamps, k_cache, n_head, D);
    return;
  }
  __threadfence();
  for (int i4 = threadIdx.x; i4 < n4_warps; i4 += S::threads) {  // as above: 4 dims a thread, whole warps
    const bool mine = i4 < n4;
    const int idx = mine ? 4 * i4 : 0, h = head0 + idx / D, dim = idx % D;
    const long long head_row = (long long)row * n_head + h;
    const float sk = sinks ? sinks[h] * ATTD_LOG2E : ATTD_NEG_INF;
    const float4 r = attd_merge_dims<0>(part_ml + head_row * n_split, part_o + head_row * n_split * D + dim, D, used,
                                        sk, sinks != nullptr);
    if (mine) *reinterpret_cast<float4*>(out + head_row * D + dim) = r;
    if (qout) attd_quantize_out(r, mine, head_row * D + dim, n_head * D, qout, q_words, q_rows);
  }
  LATHE_STAMP_END(stamps, k_cache, n_head, D);
}

#define ATTD_DECODE_ENTRY(D, W, NAME)                                                               \
  extern "C" __global__ void __launch_bounds__(32 * W) NAME(                                        \
      const float* q, const __half* k_cache, const __half* v_cache, const int* sequences,           \
      const int* positions, float* out, float* part_o, float2* part_ml, int n_head, int n_head_kv,  \
      int n_ctx, int window, int split_min, int n_split, float scale, float cap,                    \
      const float* sinks, int* tickets, int8_t* qout, int q_words, int q_rows) {                    \
    const int early = gridDim.z == 1;                                                               \
    if (!early) lathe_pdl_entry(); /* several rows: this step appends their slots before it */     \
    attd_decode<D, W>(q, k_cache, v_cache, sequences, positions, out, part_o, part_ml, n_head,     \
                   n_head_kv, n_ctx, window, split_min, n_split, scale, cap, sinks, tickets, qout, \
                   q_words, q_rows, blockIdx.x, blockIdx.y, blockIdx.z, gridDim.y, early);         \
  }
ATTD_DECODE_ENTRY(64, 4, lathe_attn_decode_64)
ATTD_DECODE_ENTRY(128, 4, lathe_attn_decode_128)
ATTD_DECODE_ENTRY(256, 4, lathe_attn_decode_256)
// 8 warps a block, the launcher's default for D <= 128 (attention_launch.cpp; LATHE_ATTN_WARPS=4 takes
// the 4-warp kernels): twice the chunks a block asks for before its programmatic-launch wait. D = 256
// keeps 4 (8 warps' rings would need 256 KB).
ATTD_DECODE_ENTRY(64, 8, lathe_attn_decode_64_w8)
ATTD_DECODE_ENTRY(128, 8, lathe_attn_decode_128_w8)

// Combines the splits of lathe_attn_decode for rows that used more than one: grid (n_head, rows), a
// thread 4 dims of the head over whole warps (d / 4 rounded up to 32 threads; lanes past the head's d
// values compute on dim 0 and write nothing), no shared memory. attd_merge_dims with the first
// ATTD_MERGE_BATCH splits' loads in flight at once: the last split's block's arithmetic, so the same
// bits. With qout (not null) the merged rows' int8 form too (attd_quantize_out, q_words and q_rows as
// the decode kernel's): no quantizer after it.
// The row's position (a step input, in place before the step's first kernel) and the sink (a
// constant) are read before the programmatic-launch wait, so only the partials' loads follow it;
// LATHE_ATTD_MERGE_WAIT_FIRST=1 (LATHE_KERNEL_DEFINES, a measuring knob) waits first, as before.
#ifndef LATHE_ATTD_MERGE_WAIT_FIRST
#define LATHE_ATTD_MERGE_WAIT_FIRST 0
#endif
#define ATTD_MERGE_BATCH 16
#define ATTD_MERGE_MAX_THREADS 64  // d 256
extern "C" __global__ void __launch_bounds__(ATTD_MERGE_MAX_THREADS)
    lathe_attn_merge(const float* __restrict__ part_o, const float2* __restrict__ part_ml,
                     const int* __restrict__ positions, float* __restrict__ out, int n_head, int d,
                     int window, int split_min, int n_split, const float* __restrict__ sinks,
                     int8_t* __restrict__ qout, int q_words, int q_rows) {
  if (LATHE_ATTD_MERGE_WAIT_FIRST) lathe_pdl_entry();
  const int h = blockIdx.x, row = blockIdx.y, tid = threadIdx.x;
  const int pos = positions[row];
  const int first = window > 0 ? max(0, pos - window + 1) : 0;
  const int visible = pos - first + 1;
  const int len = attd_split_len(visible, n_split, split_min);
  const int used = min(n_split, (visible + len - 1) / len);
  if (used <= 1) return;  // the decode block wrote this row (a block that exits lets the next kernel launch)
  const long long head_row = (long long)row * n_head + h;
  const bool mine = tid < d / 4;
  const int dim = mine ? 4 * tid : 0;
  const float sk = sinks ? sinks[h] * ATTD_LOG2E : ATTD_NEG_INF;
  if (!LATHE_ATTD_MERGE_WAIT_FIRST) lathe_pdl_entry();  // the splits' partials are the attention's
  const float4 r = attd_merge_dims<ATTD_MERGE_BATCH>(part_ml + head_row * n_split, part_o + head_row * n_split * d + dim,
                                                     d, used, sk, sinks != nullptr);
  if (mine) *reinterpret_cast<float4*>(out + head_row * d + dim) = r;
  if (qout) attd_quantize_out(r, mine, head_row * d + dim, n_head * d, qout, q_words, q_rows);
}
