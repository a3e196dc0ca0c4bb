// The decode GEMV: y[o] = W[o] . x for ONE row of x under the int8 contracts (C = 1 int8, C = 2
// int8x2; quantize_act.cuh's layout), for the formats that carry decode (q8_0, q4_K, q6_K). The same
// products as gemv_product.cuh (same level words, scales and offsets), cut for streaming speed:
//
// - Blocks of 16 warps, one block an SM (the grid never exceeds the SM count: persistent). A group of
//   `group` warps (1, 2, 4, 8 or 16) owns one output row at a time, rows g, g + n_groups, ...; a row
//   is cut into chunks of F::chunk_units units (~2.3 KB) and the group's warps take them round-robin.
// - Each warp streams its chunks into its own ring of LATHE_GEMV1_STAGES shared-memory slots, one
//   bulk copy a chunk completing on the slot's mbarrier (lathe_ring_*; no registers held): up to
//   STAGES - 1 chunks (~7 KB) a warp, ~110 KB an SM, in flight while it computes the current one.
// - x (levels, and per 32 values d1, d2 and the block sum) is copied once a block into shared memory
//   after the weights' first chunks: its layout there is its layout in global memory. Or, xf != 0,
//   each block quantizes the f32 row itself into that layout (bit-identical to lathe_quantize_act):
//   the quantizer's own launch is saved where this product is the int8 form's only reader.
// - A lane decodes whole 32-value pieces (a q8_0 block, a K-format sub-block of 32) into 8 words of
//   int8 levels: 8 __dp4a per word of x, no per-value work; the pieces of a chunk are unrolled.
// - Partial sums of a group meet in shared memory in a fixed order behind a named barrier: results
//   are deterministic.
// Measured (H200): q8_0 at 71-92% of 4,630 GB/s for 12288 rows and up, q4_K / q6_K ~45-53%
// (decode-bound); gemv_launch.h has the table.
// Launch (gemv_launch.cpp): grid (blocks, 1, 1), 512 threads, dynamic shared memory
// lathe_gemv1 stage bytes + x bytes (k * (1 or 2) + k / 2).

#define LATHE_GEMV1_WARPS 16
#define LATHE_GEMV1_STAGES 4
#define LATHE_GEMV1_SLOT 2560  // a chunk of <= 2520 bytes from its 16-byte line, plus 4 bytes over-read

__device__ __forceinline__ void lathe_gemv1_cp16(void* smem, const void* g) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(g) : "memory");
}

__device__ __forceinline__ void lathe_gemv1_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N>
__device__ __forceinline__ void lathe_gemv1_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// Asks L2 for `bytes` at p (16-byte aligned, a multiple of 16) without waiting or using registers:
// the decode products ask for chunks past their cp.async ring before the programmatic-launch wait,
// so the weights stream while the small kernel before them runs.
__device__ __forceinline__ void lathe_prefetch_l2(const void* p, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"(bytes) : "memory");
#endif
}

// The 4-byte aligned word at or below p. Pointer arithmetic, not an integer round trip: the compiler
// then still knows p's space, and a shared-memory p gives LDS, not the generic LD (slower, 64-bit
// addresses) that `reinterpret_cast<const uint32_t*>(uint64_t(p) & ~3)` gave.
__device__ __forceinline__ const uint32_t* lathe_gemv1_word_below(const uint8_t* p) {
  return reinterpret_cast<const uint32_t*>(p - (reinterpret_cast<uint64_t>(p) & 3));
}

// 8 words at a 2-byte aligned shared address: 9 aligned loads and funnel shifts (shift 0 or 16).
__device__ __forceinline__ void lathe_gemv1_words8(const uint8_t* p, uint32_t* q) {
  const uint32_t* w = lathe_gemv1_word_below(p);
  const int sh = static_cast<int>(reinterpret_cast<uint64_t>(p) & 3) * 8;
  uint32_t v[9];
#pragma unroll
  for (int i = 0; i < 9; ++i) v[i] = w[i];
#pragma unroll
  for (int i = 0; i < 8; ++i) q[i] = __funnelshift_r(v[i], v[i + 1], sh);
}

// Piece traits: piece(u, j, q, sa, sb, offset) gives piece j of the unit at u (shared memory) as 8
// words of signed levels, words 0-3 scaled by sa and 4-7 by sb, plus offset * (sum of the 32 x).
struct lathe_gemv1_q8_0 {  // d:f16, qs:int8[32]; a piece is a block
  static constexpr int unit_values = 32, unit_bytes = 34, pieces = 1, chunk_units = 64;
  static constexpr bool has_offset = false, two_scales = false;
  static __device__ __forceinline__ void piece(const uint8_t* u, int, uint32_t* q, float& sa, float& sb, float& offset) {
    const uint32_t* w = lathe_gemv1_word_below(u);
    const int sh = static_cast<int>(reinterpret_cast<uint64_t>(u) & 3) * 8;  // 0 or 16
    uint32_t v[9];
#pragma unroll
    for (int i = 0; i < 9; ++i) v[i] = w[i];
    // qs begins 2 bytes after u: shift 16 within a word pair, or (clamped at 32) the next word.
#pragma unroll
    for (int i = 0; i < 8; ++i) q[i] = __funnelshift_rc(v[i], v[i + 1], sh + 16);
    const uint32_t dbits = __funnelshift_r(v[0], v[1], sh) & 0xFFFFu;
    sa = sb = __half2float(__ushort_as_half(static_cast<unsigned short>(dbits)));
    offset = 0.0f;
  }
};

// Q4_K: piece j is sub-block j; its nibbles are the low (j even) or high halves of qs[32 (j / 2) ..].
// Units are 144 bytes from a 16-byte aligned base: 16-byte aligned.
struct lathe_gemv1_q4_k {
  static constexpr int unit_values = 256, unit_bytes = 144, pieces = 8, chunk_units = 16;
  static constexpr bool has_offset = true, two_scales = false;
  static __device__ __forceinline__ void piece(const uint8_t* u, int j, uint32_t* q, float& sa, float& sb, float& offset) {
    const uint4* qs = reinterpret_cast<const uint4*>(u + 16 + 32 * (j >> 1));
    const uint4 a = qs[0], b = qs[1];
    const int shift = 4 * (j & 1);
    const uint32_t words[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) q[i] = (words[i] >> shift) & 0x0F0F0F0Fu;
    // Scales without branches or byte loads: the unit's first 16 bytes are d, dmin, scales[12]; for
    // jj = j % 4, j < 4: sc = s[jj] & 63, m = s[jj + 4] & 63; j >= 4: sc = (s[jj + 8] & 15) |
    // (s[jj] >> 6) << 4, m = (s[jj + 8] >> 4) | (s[jj + 4] >> 6) << 4 (block_codecs.h's k4_scale_min).
    const uint4 hd = *reinterpret_cast<const uint4*>(u);
    const int bs = 8 * (j & 3);
    const uint32_t s0 = (hd.y >> bs) & 0xFFu, s4 = (hd.z >> bs) & 0xFFu, s8 = (hd.w >> bs) & 0xFFu;
    const bool low = j < 4;
    const uint32_t sc = low ? s0 & 63u : (s8 & 15u) | ((s0 >> 6) << 4);
    const uint32_t m = low ? s4 & 63u : (s8 >> 4) | ((s4 >> 6) << 4);
    const float d = __half2float(__ushort_as_half(static_cast<unsigned short>(hd.x & 0xFFFFu)));
    const float dmin = __half2float(__ushort_as_half(static_cast<unsigned short>(hd.x >> 16)));
    sa = sb = __fmul_rn(d, static_cast<float>(sc));
    offset = -__fmul_rn(dmin, static_cast<float>(m));
  }
};

// Q6_K: piece j = 4 h + kk covers values 128 h + 32 kk .. + 31 (see gemv_blocks.cuh); its first and
// second 16 values have scales 8 h + 2 kk and + 1.
struct lathe_gemv1_q6_k {
  static constexpr int unit_values = 256, unit_bytes = 210, pieces = 8, chunk_units = 12;
  static constexpr bool has_offset = false, two_scales = true;
  static __device__ __forceinline__ void piece(const uint8_t* u, int j, uint32_t* q, float& sa, float& sb, float& offset) {
    const int h = j >> 2, kk = j & 3;
    uint32_t lo[8], hi[8];
    lathe_gemv1_words8(u + 64 * h + 32 * (kk & 1), lo);
    lathe_gemv1_words8(u + 128 + 32 * h, hi);
    const int lo_shift = 4 * (kk >> 1), hi_shift = 2 * kk;
#pragma unroll
    for (int i = 0; i < 8; ++i)
      q[i] = static_cast<uint32_t>(
          lathe_gemv_bias(((lo[i] >> lo_shift) & 0x0F0F0F0Fu) | (((hi[i] >> hi_shift) & 0x03030303u) << 4), 32));
    const float d = lathe_f16(u + 208);
    const int8_t* sc = reinterpret_cast<const int8_t*>(u + 192 + 8 * h + 2 * kk);
    sa = __fmul_rn(d, static_cast<float>(sc[0]));
    sb = __fmul_rn(d, static_cast<float>(sc[1]));
    offset = 0.0f;
  }
};

__device__ __forceinline__ int lathe_gemv1_dot4(const uint32_t* q, int4 x, int acc) {
  acc = __dp4a(static_cast<int>(q[0]), x.x, acc);
  acc = __dp4a(static_cast<int>(q[1]), x.y, acc);
  acc = __dp4a(static_cast<int>(q[2]), x.z, acc);
  return __dp4a(static_cast<int>(q[3]), x.w, acc);
}

// Piece j of the unit at u times x block xg (staged: q1 at sx, q2 at sx + k, ds after the levels).
template <class F, int C>
__device__ __forceinline__ float lathe_gemv1_piece_dot(const uint8_t* u, int j, const int4* sq1, const int4* sq2,
                                                       const float4* sds, int xg) {
  uint32_t q[8];
  float sa, sb, offset;
  F::piece(u, j, q, sa, sb, offset);
  const float4 ds = sds[xg];
  // A lane's 32 x levels are two 16-byte words; lanes 4-7 of each 8 read them in the other order,
  // so that the 8 lanes of an LDS.128 phase hit 8 distinct 16-byte bank groups (no 2-way conflict).
  const int sw = (threadIdx.x >> 2) & 1;
  int4 a0 = sq1[2 * xg + sw], a1 = sq1[2 * xg + 1 - sw];
  if (sw) {
    const int4 t = a0;
    a0 = a1;
    a1 = t;
  }
  float t;
  if constexpr (F::two_scales) {
    t = ds.x * fmaf(sa, lathe_gemv_i2f(lathe_gemv1_dot4(q, a0, 0)), sb * lathe_gemv_i2f(lathe_gemv1_dot4(q + 4, a1, 0)));
    if constexpr (C == 2) {
      int4 b0 = sq2[2 * xg + sw], b1 = sq2[2 * xg + 1 - sw];
      if (sw) {
        const int4 t = b0;
        b0 = b1;
        b1 = t;
      }
      t = fmaf(ds.y, fmaf(sa, lathe_gemv_i2f(lathe_gemv1_dot4(q, b0, 0)), sb * lathe_gemv_i2f(lathe_gemv1_dot4(q + 4, b1, 0))), t);
    }
  } else {
    t = ds.x * lathe_gemv_i2f(lathe_gemv1_dot4(q + 4, a1, lathe_gemv1_dot4(q, a0, 0)));
    if constexpr (C == 2) {
      int4 b0 = sq2[2 * xg + sw], b1 = sq2[2 * xg + 1 - sw];
      if (sw) {
        const int4 t = b0;
        b0 = b1;
        b1 = t;
      }
      t = fmaf(ds.y, lathe_gemv_i2f(lathe_gemv1_dot4(q + 4, b1, lathe_gemv1_dot4(q, b0, 0))), t);
    }
    t *= sa;
  }
  if constexpr (F::has_offset) t = fmaf(offset, ds.z, t);
  return t;
}

// Copies chunk c of `row` (units [c * chunk_units, ...) into slot: whole 16-byte lines, the chunk
// starting `head` bytes into the first. Returns head.
template <class F>
__device__ __forceinline__ int lathe_gemv1_chunk(const uint8_t* w, long long row_bytes, int units, int row, int c,
                                                 uint8_t* slot, bool issue) {
  const int u0 = c * F::chunk_units, nu = min(F::chunk_units, units - u0);
  const uint8_t* g = w + row * row_bytes + static_cast<long long>(u0) * F::unit_bytes;
  const uint8_t* g16 = reinterpret_cast<const uint8_t*>(reinterpret_cast<uint64_t>(g) & ~15ull);
  const int head = static_cast<int>(g - g16);
  if (issue) {
    const int n16 = (head + nu * F::unit_bytes + 15) >> 4;
    for (int i = threadIdx.x & 31; i < n16; i += 32) lathe_gemv1_cp16(slot + 16 * i, g16 + 16 * i);
  }
  return head;
}

// ---- The bulk ring (the decode and merged products' weights): a warp's STAGES slots, each filled by
// ONE cp.async.bulk that lane 0 issues and that completes on the slot's mbarrier (transaction bytes),
// in place of the lanes' 16-byte cp.async lines and commit groups (lathe_gemv1_chunk, still used by
// moe_decode.cuh): ~100 fewer instructions a chunk. Slot s's n-th fill completes phase n of its
// barrier (parity n & 1). Measured on the H200 (scratch timings, q8_0 int8x2, in a graph of programmatic
// launches): 4096 x 4096 7.13 -> 6.77 us, 6144 x 4096 9.15 -> 8.64, 4096 x 12288 14.91 -> 14.07.
// mbar: the shared address of the warp's STAGES barriers (8 bytes each, 8-byte aligned).
__device__ __forceinline__ void lathe_ring_init(unsigned mbar) {
  if ((threadIdx.x & 31) == 0) {
    for (int s = 0; s < LATHE_GEMV1_STAGES; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(mbar + 8 * s) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // visible to the bulk copies
  }
  __syncwarp();
}

// After the warp's last wait (no fill in flight): the barriers may be initialized again by a later
// body on the same shared memory (the persistent step's phases).
__device__ __forceinline__ void lathe_ring_release(unsigned mbar) {
  __syncwarp();
  if ((threadIdx.x & 31) == 0)
    for (int s = 0; s < LATHE_GEMV1_STAGES; ++s) asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(mbar + 8 * s) : "memory");
}

// Every lane of the warp: until fill n of slot s (parity n & 1) has landed.
__device__ __forceinline__ void lathe_ring_wait(unsigned mbar, int s, unsigned parity) {
  unsigned done;
  do {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(mbar + 8 * s), "r"(parity)
                 : "memory");
  } while (!done);
}

// Chunk c of `row` (units [c * chunk_units, ...) into slot s: its whole 16-byte lines as one bulk copy,
// issued by lane 0 when `issue`, the chunk starting `head` bytes into the first line. Returns head.
template <class F>
__device__ __forceinline__ int lathe_ring_fill(const uint8_t* w, long long row_bytes, int units, int row, int c,
                                               uint8_t* slot, unsigned mbar, int s, bool issue) {
  const int u0 = c * F::chunk_units, nu = min(F::chunk_units, units - u0);
  const uint8_t* g = w + row * row_bytes + static_cast<long long>(u0) * F::unit_bytes;
  const int head = static_cast<int>(reinterpret_cast<uint64_t>(g) & 15);
  if (issue && (threadIdx.x & 31) == 0) {
    const unsigned bytes = static_cast<unsigned>((head + nu * F::unit_bytes + 15) & ~15);
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(slot)), bar = mbar + 8 * s;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
                 "l"(g - head), "r"(bytes), "r"(bar)
                 : "memory");
  }
  return head;
}

// Chunk c of `row` into L2 (no shared memory): the 16-byte lines lathe_gemv1_chunk would stage.
template <class F>
__device__ __forceinline__ void lathe_gemv1_prefetch_chunk(const uint8_t* w, long long row_bytes, int units, int row,
                                                           int c) {
  const int u0 = c * F::chunk_units, nu = min(F::chunk_units, units - u0);
  const uint8_t* g = w + row * row_bytes + static_cast<long long>(u0) * F::unit_bytes;
  const uint8_t* g16 = reinterpret_cast<const uint8_t*>(reinterpret_cast<uint64_t>(g) & ~15ull);
  lathe_prefetch_l2(g16, static_cast<unsigned>((g - g16 + nu * F::unit_bytes + 15) & ~15));
}

// A group of `group` warps (sub: this warp's index in it) that each summed a pair of values (v0, v1)
// for one work item: their sums meet in `partial` behind the group's named barrier (1 + warp / group),
// in a fixed order. Returns true for the one lane that holds the group's totals in (v0, v1) and writes
// the item. Double-buffered: a warp writes buffer `parity` again only after the next barrier, which
// the group's first warp reaches only after reading it. (gemv_multi.cuh, moe_decode.cuh.)
__device__ __forceinline__ bool lathe_gemv_group_sum2(float2 (*partial)[LATHE_GEMV1_WARPS], int& parity, int warp,
                                                      int group, int sub, int lane, float& v0, float& v1) {
  if (group == 1) return lane == 0;
  if (lane == 0) partial[parity][warp] = make_float2(v0, v1);
  asm volatile("bar.sync %0, %1;\n" ::"r"(1 + warp / group), "r"(32 * group) : "memory");
  const bool writer = sub == 0 && lane == 0;
  if (writer) {
    v0 = v1 = 0.0f;
    for (int i = 0; i < group; ++i) {
      v0 += partial[parity][warp + i].x;
      v1 += partial[parity][warp + i].y;
    }
  }
  parity ^= 1;
  return writer;
}

template <class F, int C>
__device__ __forceinline__ void lathe_gemv1_body(const uint8_t* w, long long row_bytes, const int8_t* xq, float* y,
                                                 int k, int n_out, int group, int early, const float* xf,
                                                 const lathe_grid* grid = nullptr) {
  extern __shared__ uint4 lathe_gemv1_smem[];
  __shared__ float partial[2][LATHE_GEMV1_WARPS];
  __shared__ __align__(8) unsigned long long ring_bars[LATHE_GEMV1_WARPS][LATHE_GEMV1_STAGES];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const unsigned mbar = static_cast<unsigned>(__cvta_generic_to_shared(ring_bars[warp]));
  const int units = k / F::unit_values, n_chunks = (units + F::chunk_units - 1) / F::chunk_units;
  uint8_t* stage = reinterpret_cast<uint8_t*>(lathe_gemv1_smem) + warp * (LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT);
  uint8_t* sx = reinterpret_cast<uint8_t*>(lathe_gemv1_smem) + LATHE_GEMV1_WARPS * LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT;
  const int x_level_bytes = k * (C == 2 ? 2 : 1);
  const int4* sq1 = reinterpret_cast<const int4*>(sx);
  const int4* sq2 = reinterpret_cast<const int4*>(sx + k);
  const float4* sds = reinterpret_cast<const float4*>(sx + x_level_bytes);

  const int groups_per_block = LATHE_GEMV1_WARPS / group, sub = warp % group;
  const int n_groups = gridDim.x * groups_per_block;
  const int g0 = blockIdx.x * groups_per_block + warp / group;

  // The loader runs STAGES - 1 chunks ahead along this warp's sequence: rows g0, g0 + n_groups, ...,
  // chunks sub, sub + group, ... of each, through the bulk ring (nothing is filled past the end).
  // early > 0: the weights do not depend on the kernel before, so the ring's first chunks are asked
  // for, and lane i asks L2 for the warp's (STAGES - 1 + i)-th chunk (i < early: one chunk more than
  // gemv_multi.cuh's lanes < early - 1, so early == 1 still asks for one; the figures in
  // gemv_launch.h were measured so), BEFORE the programmatic-launch wait; x after it. early == 0
  // waits first.
  lathe_ring_init(mbar);
  if (early == 0) lathe_step_wait(grid);
  int ld_row = g0, ld_c = sub;
  for (int s = 0; s < LATHE_GEMV1_STAGES - 1; ++s) {
    if (ld_row < n_out) lathe_ring_fill<F>(w, row_bytes, units, ld_row, ld_c, stage + s * LATHE_GEMV1_SLOT, mbar, s, true);
    ld_c += group;
    if (ld_c >= n_chunks) {
      ld_c = sub;
      ld_row += n_groups;
    }
  }
  if (early > 0) {
    const int per_row = (n_chunks - sub + group - 1) / group;  // this warp's chunks of a row (>= 1)
    const int j = (LATHE_GEMV1_STAGES - 1) + lane;
    const int pf_row = g0 + (j / per_row) * n_groups, pf_c = sub + (j % per_row) * group;
    if (lane < early && pf_row < n_out) lathe_gemv1_prefetch_chunk<F>(w, row_bytes, units, pf_row, pf_c);
    lathe_step_wait(grid);
  }
  if (xf) {  // x in f32: every block quantizes it into shared memory (bit-identical to lathe_quantize_act),
            // 8 threads a 32-value block (k / 4096 passes of the block's threads). Asking for every
            // pass's values before quantizing the first measured slower at k <= 8192, where this
            // path is taken (gemv_launch.cpp's quantizing-row limit).
    int8_t* q1 = reinterpret_cast<int8_t*>(sx);
    float4* ds = reinterpret_cast<float4*>(sx + x_level_bytes);
    const int part = 4 * (threadIdx.x & 7);
    for (int b = threadIdx.x >> 3; b < (k >> 5); b += blockDim.x >> 3)  // whole warps: k / 32 % 4 == 0 below
      lathe_quantize_block32_part(*reinterpret_cast<const float4*>(xf + 32 * b + part), C == 2, q1 + 32 * b + part,
                                  q1 + k + 32 * b + part, ds + b);
  } else {  // x: cp.async lines, the only commit group (the weights' fills complete on the ring)
    const int n16 = (x_level_bytes + k / 2) >> 4;
    for (int i = threadIdx.x; i < n16; i += blockDim.x) lathe_gemv1_cp16(sx + 16 * i, xq + 16 * i);
    lathe_gemv1_commit();
    lathe_gemv1_wait<0>();
  }
  __syncthreads();  // x is in place for every warp

  int row = g0, c = sub, parity = 0;
  unsigned taken = 0;  // chunks consumed: chunk `taken` is fill taken / STAGES of slot taken % STAGES
  float acc = 0.0f;
  while (row < n_out) {
    const int slot = static_cast<int>(taken % LATHE_GEMV1_STAGES);
    lathe_ring_wait(mbar, slot, (taken / LATHE_GEMV1_STAGES) & 1);
    __syncwarp();  // every lane is past the previous chunk: its slot, refilled below, is free
    const int refill = static_cast<int>((taken + LATHE_GEMV1_STAGES - 1) % LATHE_GEMV1_STAGES);
    if (ld_row < n_out)
      lathe_ring_fill<F>(w, row_bytes, units, ld_row, ld_c, stage + refill * LATHE_GEMV1_SLOT, mbar, refill, true);
    ld_c += group;
    if (ld_c >= n_chunks) {
      ld_c = sub;
      ld_row += n_groups;
    }

    const int head = lathe_ring_fill<F>(w, row_bytes, units, row, c, nullptr, mbar, slot, false);
    const uint8_t* s = stage + slot * LATHE_GEMV1_SLOT + head;
    const int u0 = c * F::chunk_units, n_pieces = min(F::chunk_units, units - u0) * F::pieces;
    constexpr int rounds = (F::chunk_units * F::pieces + 31) / 32;
#pragma unroll
    for (int i = 0; i < rounds; ++i) {
      const int p = lane + 32 * i;
      if (p < n_pieces) {
        const int uu = p / F::pieces, j = p % F::pieces;
        acc += lathe_gemv1_piece_dot<F, C>(s + uu * F::unit_bytes, j, sq1, sq2, sds, u0 * F::pieces + p);
      }
    }
    ++taken;

    c += group;
    if (c >= n_chunks) {  // the group's row is done
      const float v = lathe_warp_sum(acc);
      acc = 0.0f;
      if (group == 1) {
        if (lane == 0) y[row] = v;
      } else {
        // Double-buffered partials: a warp writes buffer `parity` again only after the next barrier,
        // which the group's first warp reaches only after reading it.
        if (lane == 0) partial[parity][warp] = v;
        asm volatile("bar.sync %0, %1;\n" ::"r"(1 + warp / group), "r"(32 * group) : "memory");
        if (sub == 0 && lane == 0) {
          float sum = 0.0f;
          for (int i = 0; i < group; ++i) sum += partial[parity][warp + i];
          y[row] = sum;
        }
        parity ^= 1;
      }
      c = sub;
      row += n_groups;
    }
  }
  lathe_ring_release(mbar);
}

#define LATHE_GEMV1_KERNEL(FMT, C, CNAME)                                                                   \
  extern "C" __global__ void __launch_bounds__(32 * LATHE_GEMV1_WARPS, 1) lathe_gemv1_##FMT##_##CNAME(      \
      const uint8_t* w, long long row_bytes, const int8_t* xq, float* y, int k, int n_out, int group, int early,  \
      const float* xf) {                                                                                     \
    lathe_gemv1_body<lathe_gemv1_##FMT, C>(w, row_bytes, xq, y, k, n_out, group, early, xf);               \
  }

LATHE_GEMV1_KERNEL(q8_0, 1, int8)
LATHE_GEMV1_KERNEL(q8_0, 2, int8x2)
LATHE_GEMV1_KERNEL(q4_k, 1, int8)
LATHE_GEMV1_KERNEL(q4_k, 2, int8x2)
LATHE_GEMV1_KERNEL(q6_k, 1, int8)
LATHE_GEMV1_KERNEL(q6_k, 2, int8x2)
