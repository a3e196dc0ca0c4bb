// Fusion rule o_split: a decode row's attention (rope_attention's form: the head norms, the rope and
// the cache append in its prologue) and the o product after it in one launch, o split along its input
// by kv head, each block adding its rows' partials into the residual's int64 fixed-point sum (the one
// the q/k/v launch before read, which the feed-forward launch after reads: ffn_split_launch.h's s_in).
// attention_o_split_launch.h says what the plan gives it.
//
// Grid (1, n_head_kv * R, 1), 32 W threads. Block (kvh, r) = blockIdx.y / R, blockIdx.y % R:
//   its o slice: rows [r E / R, (r + 1) E / R) of o [E][n_head D] at the columns of kv head kvh's G
//     query heads (G D values: NB = G D / 32 Q8_0 blocks a row, 34 NB bytes; NB divides 32), asked
//     for (bulk copies, or cp.async) before the wait for the q/k/v launch, with the row's first cache
//     chunks and the rope's angles: constants and earlier steps' slots;
//   the attention of kvh's G heads over every visible slot in one split (attention.cuh's attd_decode
//     with the rope prologue: every one of the R blocks of a kv head appends the row's k and v slot,
//     the same bytes, before it reads it), its outputs left in shared memory;
//   those G D values in the contract's int8 form (lathe_quantize_block32_part: the same levels the
//     attention's quantize epilogue gives the o product when held back);
//   for each of its rows i: p_i = o[i][kvh's columns] . x (lathe_ffns_block_dot, a thread a row, its
//     NB blocks in order), s_io[i] += fix(p_i) (red.add on int64, ffn_split.cuh's unit 2^-32).
// Integer adds in any order: the same bits every run. The R blocks of a kv head each compute its
// attention (R times the cache reads, from L2 after the first): the plan takes the launch only below
// a decode step's long_from (a short visible span), where its attention is a few chunks.

template <int D, int W, int C, int Stages>
__device__ __forceinline__ void lathe_attn_o_split_body(
    const float* q, const __half* k_cache, const __half* v_cache, const int* sequences, const int* positions,
    int n_head, int n_head_kv, int n_ctx, int window, int split_min, float scale, float cap, const float* sinks,
    const float* k, const float* v, const double* freq, double position_scale, int n_rot, int neox,
    const float* q_weight, const float* k_weight, int norm, float eps, const uint8_t* o_w, int E, int R,
    long long* s_io, int bulk_rows) {
  extern __shared__ float4 attd_shared4[];
  unsigned char* base = reinterpret_cast<unsigned char*>(attd_shared4);
  const int group = n_head / n_head_kv, nb = group * D / 32;
  const int kvh = blockIdx.y / R, rep = blockIdx.y % R, rows = E / R, r0 = rep * rows;
  const long long row_bytes = 34LL * (n_head * D / 32);
  // Past the attention's ring and the rope's floats: the slice [rows][nb][34], the heads' outputs
  // [G D] f32, their levels [G D] (and the second word's), their scales [nb] float4.
  typedef AttdShape<D, W, Stages> S;
  float* rope_sm = reinterpret_cast<float*>(base + S::warps * S::warp_bytes);
  uint8_t* slice = reinterpret_cast<uint8_t*>(rope_sm + (10 + W) * D);
  float* xo = reinterpret_cast<float*>(slice + ((34 * rows * nb + 15) & ~15));
  int8_t* xq1 = reinterpret_cast<int8_t*>(xo + group * D);
  int8_t* xq2 = xq1 + group * D;
  float4* xd = reinterpret_cast<float4*>(xq2 + group * D);
  const unsigned ss = static_cast<unsigned>(__cvta_generic_to_shared(slice));
  // The slice first, asked for before the wait. Where a row's share is whole 16-byte lines (NB % 8 ==
  // 0: the 0.6B's, the 8B's), as one bulk copy a row by thread 0, completing on an mbarrier of its own
  // (outside the ring's cp.async groups, so the attention's first chunk does not wait for it); else
  // as cp.async requests of 8 or 4 bytes in a group of its own, before the ring's (whose waits then
  // also wait for it).
  __shared__ __align__(8) unsigned long long slice_bar;
  const unsigned bar = static_cast<unsigned>(__cvta_generic_to_shared(&slice_bar));
  const int share = 34 * nb;
  const bool bulk = (bulk_rows & 1) && share % 16 == 0;
  // (measuring probes, wrong sums: bit 1 skips the slice's copies, bit 2 the adds, bit 3 the rows'
  // products and adds; attention_o_split_launch.cpp's LATHE_O_SPLIT_PROBE)
  const bool no_slice = bulk_rows & 2, no_adds = bulk_rows & 4, no_rows = bulk_rows & 8;
  {
    const uint8_t* src = o_w + static_cast<long long>(r0) * row_bytes + 34LL * nb * kvh;
    if (no_slice) {
    } else if (bulk) {
      if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(rows * share)
                     : "memory");
        for (int i = 0; i < rows; ++i)
          lathe_bulk_weights<false>(ss + static_cast<unsigned>(i * share), src + i * row_bytes,
                                    static_cast<unsigned>(share), bar);
      }
    } else {
      lathe_o_slice_cp_async(ss, src, rows, share, row_bytes, 32 * W);  // (rope_attention_o_cluster.cuh)
    }
  }
  const attd_rope_prologue<D, W> rope{q,        k,         v,      sequences, freq,  position_scale,
                                      n_rot,    neox,      norm,   n_head,    n_head_kv, n_ctx,
                                      q_weight, k_weight,  eps,    const_cast<__half*>(k_cache),
                                      const_cast<__half*>(v_cache), rope_sm};
  attd_decode<D, W, attd_rope_prologue<D, W>, true, Stages>(q, k_cache, v_cache, sequences, positions, nullptr, nullptr,
                                                     nullptr, n_head, n_head_kv, n_ctx, window, split_min, 1, scale,
                                                     cap, sinks, nullptr, nullptr, C, 1, 0, kvh, 0, gridDim.y, 1,
                                                     rope, xo);
  if (bulk && !no_slice) {  // the slice's bulk copies (the mbarrier's first phase)
    unsigned done = 0;
    while (!done)
      asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n selp.u32 %0, 1, 0, p;\n}\n"
                   : "=r"(done)
                   : "r"(bar)
                   : "memory");
  } else {
    asm volatile("cp.async.wait_all;\n" ::: "memory");
  }
  __syncthreads();  // the heads' outputs and the slice

  // x's levels: 4 values a thread over whole warps, 8 lanes a 32-value block (group D / 4 a multiple of 8).
  __shared__ __align__(16) int8_t dummy_q[8];
  __shared__ float4 dummy_d;
  const int n4 = group * D / 4, n4_warps = (n4 + 31) & ~31;
  for (int i4 = threadIdx.x; i4 < n4_warps; i4 += 32 * W) {
    const bool mine = i4 < n4;
    const int i = mine ? 4 * i4 : 0;
    const float4 x = *reinterpret_cast<const float4*>(xo + i);
    lathe_quantize_block32_part(x, C == 2, mine ? xq1 + i : dummy_q, mine ? xq2 + i : dummy_q + 4,
                                mine ? xd + (i >> 5) : &dummy_d);
  }
  __syncthreads();

  // The rows: a thread a row, its nb blocks in order, its partial added at once (ffn_split's down
  // phase: every thread's add in flight together, no shuffles on the path).
  for (int i = threadIdx.x; i < (no_rows ? 0 : rows); i += 32 * W) {
    float p = 0.0f;
    for (int j = 0; j < nb; ++j) {
      const float4 d = xd[j];
      p += lathe_ffns_block_dot<C>(ss + 34u * (i * nb + j), xq1 + 32 * j, xq2 + 32 * j, d.x, d.y);
    }
    if (!no_adds) atomicAdd(reinterpret_cast<unsigned long long*>(s_io + r0 + i), lathe_ffns_fix(p));
  }
}

// Kernels lathe_attn_o_split_<D>_q8_0_<contract>_w<W>s<stages>: 8 warps (the held-back attention's
// count for D <= 128) with a ring of one chunk a warp (the plan's short span, at most 128 slots, is 8
// chunks: one round of requests), so the feed-forward launch's blocks fit beside them and ask for
// their weights before they end; 8 warps with the launchers' ring, 4 and 2 warps: measuring forms.
// bulk_rows: the slice as bulk copies where a row's share is whole 16-byte lines, else cp.async.
#define LATHE_ATTN_O_SPLIT_KERNEL(D, W, C, ST, NAME)                                                              \
  extern "C" __global__ void __launch_bounds__(32 * W) NAME(                                                    \
      const float* q, const __half* k_cache, const __half* v_cache, const int* sequences, const int* positions, \
      int n_head, int n_head_kv, int n_ctx, int window, int split_min, float scale, float cap,                  \
      const float* sinks, const float* k, const float* v, const double* freq, double position_scale, int n_rot, \
      int neox, const float* q_weight, const float* k_weight, int norm, float eps, const uint8_t* o_w, int E,   \
      int R, long long* s_io, int bulk_rows) {                                                                   \
    lathe_attn_o_split_body<D, W, C, ST>(q, k_cache, v_cache, sequences, positions, n_head, n_head_kv, n_ctx,   \
                                         window, split_min, scale, cap, sinks, k, v, freq, position_scale,      \
                                         n_rot, neox, q_weight, k_weight, norm, eps, o_w, E, R, s_io,           \
                                         bulk_rows);                                                            \
  }
#define LATHE_ATTN_O_SPLIT_FORMS(D, W, ST, SUFFIX)                                         \
  LATHE_ATTN_O_SPLIT_KERNEL(D, W, 1, ST, lathe_attn_o_split_##D##_q8_0_int8_##SUFFIX)     \
  LATHE_ATTN_O_SPLIT_KERNEL(D, W, 2, ST, lathe_attn_o_split_##D##_q8_0_int8x2_##SUFFIX)

LATHE_ATTN_O_SPLIT_FORMS(64, 8, 1, w8s1)
LATHE_ATTN_O_SPLIT_FORMS(128, 8, 1, w8s1)
LATHE_ATTN_O_SPLIT_FORMS(64, 8, 0, w8s0)
LATHE_ATTN_O_SPLIT_FORMS(128, 8, 0, w8s0)
LATHE_ATTN_O_SPLIT_FORMS(64, 4, 0, w4s0)
LATHE_ATTN_O_SPLIT_FORMS(128, 4, 0, w4s0)
LATHE_ATTN_O_SPLIT_FORMS(64, 2, 0, w2s0)
LATHE_ATTN_O_SPLIT_FORMS(128, 2, 0, w2s0)
