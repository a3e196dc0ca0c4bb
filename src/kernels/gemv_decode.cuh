// The decode GEMV: y[o] = W[o] . x for ONE row of x under the int8 contracts (C = 1 int8, C = 2
// int8x2; quantize_act.cuh's layout), for the formats that carry decode (q8_0, q4_K, q6_K). The same
// products as gemv_product.cuh (same level words, scales and offsets), cut for streaming speed:
//
// - Blocks of 16 warps, one block an SM (the grid never exceeds the SM count: persistent). A group of
//   `group` warps (1, 2, 4, 8 or 16) owns one item at a time, items g, g + n_groups, ...: a row cut
//   into chunks of F::chunk_units units (~2.3 KB), or, for the paired products (LATHE_GEMV1_PAIRS in
//   the launch's group; decode_stream.h's decode_pairs_pay says where), two rows cut into half chunks
//   staged side by side in one slot, so each x block a lane reads serves both rows. The group's warps
//   take the item's (half) chunks round-robin.
// - Each warp streams its chunks into its own ring of LATHE_GEMV1_STAGES shared-memory slots, one
//   bulk copy a chunk completing on the slot's mbarrier (lathe_ring_*; no registers held): up to
//   STAGES - 1 chunks (~7 KB) a warp, ~110 KB an SM, in flight while it computes the current one.
// - x (levels, and per 32 values d1, d2 and the block sum) is copied once a block into shared memory
//   after the weights' first chunks: its layout there is its layout in global memory. Or, xf != 0,
//   each block quantizes the f32 row itself into that layout (bit-identical to lathe_quantize_act):
//   the quantizer's own launch is saved where this product is the int8 form's only reader.
// - A lane decodes whole 32-value pieces (a q8_0 block, a K-format sub-block of 32) into 8 words of
//   int8 levels: 8 __dp4a per word of x, no per-value work; the pieces of a chunk are unrolled, their
//   shared-memory addresses 32-bit integers formed once a chunk (lathe_lds*), and the weights' halves
//   taken in the order the lane reads x's (no selects on x).
// - Partial sums of a group meet in shared memory in a fixed order behind a named barrier: results
//   are deterministic.
// Measured (H200): q8_0 at 71-92% of 4,630 GB/s for 12288 rows and up, q4_K / q6_K ~45-53%
// (decode-bound); gemv_launch.h has the table.
// Launch (gemv_launch.cpp): grid (blocks, 1, 1), 512 threads, dynamic shared memory
// lathe_gemv1 stage bytes + x bytes (k * (1 or 2) + k / 2).

#define LATHE_GEMV1_WARPS 16
#define LATHE_GEMV1_STAGES 4
#define LATHE_GEMV1_SLOT 2560  // a chunk of <= 2520 bytes from its 16-byte line, plus 4 bytes over-read

// When the ring's first fills are asked for. x's reads, issued after the programmatic-launch wait,
// queue behind the fills its SM asked for before it (test_shared_reads_gpu, H200: 16 KB of x lands
// 1.2 us after the wait alone, 1.5 / 2.3 / 2.75 us behind 1 / 2 / 3 fills a warp), and once the
// fills ahead of x have landed nothing is in flight until x is in place and the first chunk is
// consumed. So LATHE_GEMV1_BEFORE_WAIT = B of the STAGES - 1 first fills are asked for before the
// wait (they stream while the kernel before finishes), the others right after x's reads, behind
// them. B = 1 measured best on qwen3-8b (tg128 345 -> 360: docs/perf.md, tenth session); B = 3 is the
// form before (with one L2 request a warp past the ring before the wait in the single products).
// LATHE_GEMV1_L2_AFTER_X = P also asks L2 for P chunks a warp past the ring after x (measured
// slower). Both are compile-time knobs through LATHE_KERNEL_DEFINES (kernels/library.h).
#ifndef LATHE_GEMV1_BEFORE_WAIT
#define LATHE_GEMV1_BEFORE_WAIT 1
#endif
#ifndef LATHE_GEMV1_L2_AFTER_X
#define LATHE_GEMV1_L2_AFTER_X 0
#endif
// Some products take their own counts:
//   LATHE_GEMV1_NORM_BEFORE_WAIT   the norm epilogue's (the row walk's ByBlock form,
//                                  gemv_norm_epilogue.cuh: o and down; x always a copy), 1;
//   LATHE_GEMVM_EARLY_BEFORE_WAIT  the merged products' _early kernels (gemv_multi.cuh: q/k/v and
//                                  gate/up where x is a copy, or normed in the prologue after a dense
//                                  product; the plan's choice, NormPrologue::early_fills), 2.
// Measured on the H200, tg128 (docs/perf.md, twenty-seventh and twenty-eighth sessions): two fills for
// every product qwen3-8b Q8_0 385 -> 394 but qwen3-30b-a3b (q/k/v norm their x) 455 -> 445 and Q4_K_M's
// tiles 509 -> 496; two for every product that copies x qwen3-8b 391 -> 396 but qwen3-0.6b 1,372 ->
// 1,332 (its o, after the attention: o's fills queue beside the attention's reads, as the twentieth
// session found); two for the norm epilogue's alone 391 -> 391.5; two for the merged products that
// copy x qwen3-8b 393.9 -> 397.7, llama3-8b 407.3 -> 412.1. Chosen in the kernel from nx (a branch
// between two unrolled runs) that cost qwen3-0.6b 1,350 -> 1,313, whose merged products all norm x: so
// the merged products take their count at compile time, each a kernel of its own. And (twenty-ninth
// session, m4) two for the merged products that norm x too: qwen3-0.6b 1,372 -> 1,422 (after its
// dense down and o), but qwen3-30b-a3b 475 -> 465 (its q/k/v after the mixture, whose launch keeps
// every SM busy to its end): so the plan asks for the _early form after a dense product only.
#ifndef LATHE_GEMV1_NORM_BEFORE_WAIT
#define LATHE_GEMV1_NORM_BEFORE_WAIT LATHE_GEMV1_BEFORE_WAIT
#endif
#ifndef LATHE_GEMVM_EARLY_BEFORE_WAIT
#define LATHE_GEMVM_EARLY_BEFORE_WAIT 2
#endif
// Whether any fill waits for x's reads (then x's staging calls late(), which issues them).
#define LATHE_GEMV1_LATE                                                                                  \
  (LATHE_GEMV1_BEFORE_WAIT < LATHE_GEMV1_STAGES - 1 || LATHE_GEMV1_NORM_BEFORE_WAIT < LATHE_GEMV1_STAGES - 1 || \
   LATHE_GEMVM_EARLY_BEFORE_WAIT < LATHE_GEMV1_STAGES - 1 || LATHE_GEMV1_L2_AFTER_X > 0)


__device__ __forceinline__ void lathe_gemv1_cp16(void* smem, const void* g) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(g) : "memory");
}

__device__ __forceinline__ void lathe_gemv1_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N>
__device__ __forceinline__ void lathe_gemv1_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// Whether the weights' chunks stream with an L2 evict-first policy (createpolicy), so the 4-8 GB a
// token reads through the 60 MB L2 are the first lines it gives up, not the activations, the caches
// or the kernels' code: a format trait's evict_first, true only for lathe_gemv1_q8_0_ef, Q8_0 under
// another name, whose kernels (_q8_0_ef_) the launchers take where the host asked for it
// (kernels::set_weights_evict_first, by the model: docs/perf.md, fifteenth and nineteenth sessions).
// A compile-time choice: the same switch read from a constant at each copy cost qwen3-8b Q8_0 2.5%
// with it off (nineteenth session), so each form's copies are straight-line code.

// The L2 evict-first policy the weights' copies take where their format's evict_first says so.
__device__ __forceinline__ unsigned long long lathe_evict_first_policy() {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}

// One bulk copy of `bytes` weights from src into shared address dst, completing on the mbarrier at
// bar; with the evict-first policy where `hint`.
template <bool hint>
__device__ __forceinline__ void lathe_bulk_weights(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
  if constexpr (hint) {
    const unsigned long long policy = lathe_evict_first_policy();
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;\n" ::"r"(dst),
        "l"(src), "r"(bytes), "r"(bar), "l"(policy)
        : "memory");
  } else {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
  }
}

// Lane i's 16-byte cp.async lines i, i + 32, ... of n16 weights lines from g16 into slot
// (lathe_gemv1_chunk's), with one evict-first policy a lane for them all where `hint`.
template <bool hint>
__device__ __forceinline__ void lathe_gemv1_cp16_weights(uint8_t* slot, const uint8_t* g16, int n16) {
  if constexpr (hint) {
    const unsigned long long policy = lathe_evict_first_policy();
    for (int i = threadIdx.x & 31; i < n16; i += 32) {
      const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(slot + 16 * i));
      asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(s), "l"(g16 + 16 * i),
                   "l"(policy)
                   : "memory");
    }
  } else {
    for (int i = threadIdx.x & 31; i < n16; i += 32) lathe_gemv1_cp16(slot + 16 * i, g16 + 16 * i);
  }
}

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

__device__ __forceinline__ int lathe_gemv1_dot4(const uint32_t* q, int4 x, int acc) {
  acc = __dp4a(static_cast<int>(q[0]), x.x, acc);
  acc = __dp4a(static_cast<int>(q[1]), x.y, acc);
  acc = __dp4a(static_cast<int>(q[2]), x.z, acc);
  return __dp4a(static_cast<int>(q[3]), x.w, acc);
}

// The lane's bank order: a lane's 32 x levels are two 16-byte words, and lanes 4-7 of each 8 read
// them in the other order, so that the 8 lanes of an LDS.128 phase hit 8 distinct 16-byte bank groups
// (no 2-way conflict). sw = 1: the lane reads half 1 first.
__device__ __forceinline__ int lathe_gemv1_lane_swap() { return (threadIdx.x >> 2) & 1; }

// One staged x block as a lane reads it: q1's halves in the lane's order (a0 = half sw, a1 the other),
// q2's the same (int8x2), ds = (d1, d2, d1 * sum q1 + d2 * sum q2). Loaded once for every row a lane
// multiplies by it (the paired products read it for two rows).
struct lathe_gemv1_x {
  int4 a0, a1, b0, b1;
  float4 ds;
};

// x block at shared addresses: xa its q1 half sw, xa + xo the other half (xo = 16 - 32 sw), xa + kq2
// and xa + kq2 + xo q2's halves, ds_a its ds.
template <class F, int C>
__device__ __forceinline__ lathe_gemv1_x lathe_gemv1_load_x(unsigned xa, int xo, int kq2, unsigned ds_a) {
  lathe_gemv1_x x;
  if constexpr (F::has_offset) {
    x.ds = lathe_lds128f(ds_a);
  } else {
    const float2 d12 = lathe_lds64f(ds_a);
    x.ds = make_float4(d12.x, d12.y, 0.0f, 0.0f);
  }
  x.a0 = lathe_lds128(xa);
  x.a1 = lathe_lds128(xa + xo);
  if constexpr (C == 2) {
    x.b0 = lathe_lds128(xa + kq2);
    x.b1 = lathe_lds128(xa + kq2 + xo);
  }
  return x;
}

// Piece j of the unit at shared address ua + m times the lane's x block. The same float arithmetic in
// the same order as with x's halves in place: the integer sums do not depend on the order of their
// terms.
template <class F, int C>
__device__ __forceinline__ float lathe_gemv1_piece_x(unsigned ua, unsigned m, int j, int sw, const lathe_gemv1_x& x) {
  uint32_t q[8];
  float sa, sb, offset, offset_b = 0.0f;
  if constexpr (F::two_offsets)
    F::piece(ua, m, j, sw, q, sa, sb, offset, offset_b);
  else
    F::piece(ua, m, j, sw, q, sa, sb, offset);
  const float4 ds = x.ds;
  float t;
  if constexpr (F::two_scales) {
    const int f = lathe_gemv1_dot4(q, x.a0, 0), g = lathe_gemv1_dot4(q + 4, x.a1, 0);
    const int h0 = sw ? g : f, h1 = sw ? f : g;  // the halves' sums back in value order
    t = ds.x * fmaf(sa, lathe_gemv_i2f(h0), sb * lathe_gemv_i2f(h1));
    if constexpr (C == 2) {
      const int f2 = lathe_gemv1_dot4(q, x.b0, 0), g2 = lathe_gemv1_dot4(q + 4, x.b1, 0);
      const int h2 = sw ? g2 : f2, h3 = sw ? f2 : g2;
      t = fmaf(ds.y, fmaf(sa, lathe_gemv_i2f(h2), sb * lathe_gemv_i2f(h3)), t);
    }
    if constexpr (F::two_offsets) {  // each half's min times that half's x: x's level sums, in value order
      const uint32_t ones[4] = {0x01010101u, 0x01010101u, 0x01010101u, 0x01010101u};
      const int e = lathe_gemv1_dot4(ones, x.a0, 0), r = lathe_gemv1_dot4(ones, x.a1, 0);
      t = fmaf(ds.x, fmaf(offset, lathe_gemv_i2f(sw ? r : e), offset_b * lathe_gemv_i2f(sw ? e : r)), t);
      if constexpr (C == 2) {
        const int e2 = lathe_gemv1_dot4(ones, x.b0, 0), r2 = lathe_gemv1_dot4(ones, x.b1, 0);
        t = fmaf(ds.y, fmaf(offset, lathe_gemv_i2f(sw ? r2 : e2), offset_b * lathe_gemv_i2f(sw ? e2 : r2)), t);
      }
    }
  } else {
    t = ds.x * lathe_gemv_i2f(lathe_gemv1_dot4(q + 4, x.a1, lathe_gemv1_dot4(q, x.a0, 0)));
    if constexpr (C == 2)
      t = fmaf(ds.y, lathe_gemv_i2f(lathe_gemv1_dot4(q + 4, x.b1, lathe_gemv1_dot4(q, x.b0, 0))), t);
    t *= sa;
  }
  if constexpr (F::has_offset) t = fmaf(offset, ds.z, t);
  return t;
}

// Piece j of the unit at shared address ua + m times one staged x block (lathe_gemv1_load_x's
// addresses).
template <class F, int C>
__device__ __forceinline__ float lathe_gemv1_piece_dot_at(unsigned ua, unsigned m, int j, int sw, unsigned xa, int xo,
                                                          int kq2, unsigned ds_a) {
  return lathe_gemv1_piece_x<F, C>(ua, m, j, sw, lathe_gemv1_load_x<F, C>(xa, xo, kq2, ds_a));
}

// The lane's share of a chunk staged at shared address s (its first unit) whose first x block is xg0,
// the chunk holding n_pieces pieces: piece p = lane + 32 i for each round i, added to acc in that
// order. x is staged as q1 at shared address sx1, q2 kq2 bytes after it, ds at sds. Every lane-fixed
// address is formed once a chunk: a piece's weights and x are a constant stride from the round
// before (the loop is unrolled).
template <class F, int C>
__device__ __forceinline__ float lathe_gemv1_chunk_dot(float acc, unsigned s, int n_pieces, int xg0, unsigned sx1,
                                                       int kq2, unsigned sds) {
  const int lane = threadIdx.x & 31, sw = lathe_gemv1_lane_swap(), j = lane % F::pieces;
  const unsigned u = s + (lane / F::pieces) * F::unit_bytes, ua = u & ~3u, m = u & 3u;
  constexpr int stride = (32 / F::pieces) * F::unit_bytes;  // a round's step: whole words
  static_assert(stride % 4 == 0, "a piece's words keep their alignment from round to round");
  const unsigned xa = sx1 + 32 * (xg0 + lane) + 16 * sw;
  const unsigned ds = sds + 16 * (xg0 + lane);
  const int xo = 16 - 32 * sw;
  constexpr int rounds = (F::chunk_units * F::pieces + 31) / 32;
#pragma unroll
  for (int i = 0; i < rounds; ++i)
    if (lane + 32 * i < n_pieces)
      acc += lathe_gemv1_piece_dot_at<F, C>(ua + i * stride, m, j, sw, xa + 1024 * i, xo, kq2, ds + 512 * i);
  return acc;
}

// Row i of the block's own 32-row blocks b, b + gridDim.x, ... (the rows dealt by block, for an
// epilogue that needs whole 32-value blocks of the output: gemv_norm_epilogue.cuh): 32 (b + gridDim.x
// (i / 32)) + i % 32. Past the block's own rows it is >= n_out (n_out % 32 == 0).
__device__ __forceinline__ int lathe_gemv1_block_row(int i) {
  return ((static_cast<int>(blockIdx.x) + static_cast<int>(gridDim.x) * (i >> 5)) << 5) + (i & 31);
}

// A warp's walk over its chunks: rows row0, row0 + n_groups, ..., chunks sub, sub + group, ... of
// each. The chunk's global address is carried from step to step (a row's first chunk costs the one
// multiplication), so the loader and the consumer each advance with a few instructions.
// ByBlock: items i0, i0 + n_groups, ... of the block's own rows (lathe_gemv1_block_row; n_groups is
// then the block's groups), `item` the walk's item. A compile-time form: the dealt walk's instructions
// are the ones they were.
template <class F, bool ByBlock = false>
struct lathe_gemv1_walk {
  static constexpr int chunk_bytes = F::chunk_units * F::unit_bytes;
  const uint8_t* g;  // the chunk's first byte
  int row, c;
  int item;  // ByBlock only
  __device__ __forceinline__ void begin(const uint8_t* w, long long row_bytes, int row0, int sub) {
    row = row0;
    c = sub;
    g = w + static_cast<long long>(row0) * row_bytes + static_cast<long long>(sub) * chunk_bytes;
  }
  __device__ __forceinline__ void begin_item(const uint8_t* w, long long row_bytes, int i, int sub) {
    item = i;
    begin(w, row_bytes, lathe_gemv1_block_row(i), sub);
  }
  __device__ __forceinline__ void next(const uint8_t* w, long long row_bytes, int sub, int group, int n_groups,
                                       int n_chunks) {
    c += group;
    g += static_cast<long long>(group) * chunk_bytes;
    if (c >= n_chunks) {
      if constexpr (ByBlock)
        begin_item(w, row_bytes, item + n_groups, sub);
      else
        begin(w, row_bytes, row + n_groups, sub);
    }
  }
  __device__ __forceinline__ int head() const { return static_cast<int>(reinterpret_cast<uint64_t>(g) & 15); }
  __device__ __forceinline__ int n_units(int units) const { return min(F::chunk_units, units - c * F::chunk_units); }
};

// The walk's chunk (nu units) into the slot at shared address dst: its whole 16-byte lines as one
// bulk copy that lane 0 issues, completing on the barrier at shared address bar.
template <class F, bool ByBlock>
__device__ __forceinline__ void lathe_ring_fill_walk(const lathe_gemv1_walk<F, ByBlock>& at, int nu, unsigned dst, unsigned bar) {
  if ((threadIdx.x & 31) == 0) {
    const int head = at.head();
    const unsigned bytes = static_cast<unsigned>((head + nu * F::unit_bytes + 15) & ~15);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
    lathe_bulk_weights<F::evict_first>(dst, at.g - head, bytes, bar);
  }
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
    lathe_gemv1_cp16_weights<F::evict_first>(slot, g16, n16);
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
    lathe_bulk_weights<F::evict_first>(dst, g - head, bytes, bar);
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

// x into shared memory for every warp of the block (after the programmatic-launch wait): copied from
// its int8 form xq, or, xf != 0, quantized from f32 by every block (bit-identical to
// lathe_quantize_act), 8 threads a 32-value block (k / 4096 passes of the block's threads). Asking for
// every pass's values before quantizing the first measured slower at k <= 8192, where this path is
// taken (gemv_launch.cpp's quantizing-row limit).
// late() runs once x's reads have been asked for and before they land (LATHE_GEMV1_LATE: the fills
// held back past the wait; without it late() is never called).
template <int C, class Late>
__device__ __forceinline__ void lathe_gemv1_stage_x(uint8_t* sx, const int8_t* xq, const float* xf, int k, Late&& late) {
  const int x_level_bytes = k * (C == 2 ? 2 : 1);
  if (xf) {
    int8_t* q1 = reinterpret_cast<int8_t*>(sx);
    float4* ds = reinterpret_cast<float4*>(sx + x_level_bytes);
    const int part = 4 * (threadIdx.x & 7);
#if LATHE_GEMV1_LATE
    const int b0 = threadIdx.x >> 3;
    const float4 v0 = b0 < (k >> 5) ? *reinterpret_cast<const float4*>(xf + 32 * b0 + part) : make_float4(0, 0, 0, 0);
    late();  // after the first pass's reads
    for (int b = b0; b < (k >> 5); b += blockDim.x >> 3) {  // whole warps: k / 32 % 4 == 0 below
      const float4 v = b == b0 ? v0 : *reinterpret_cast<const float4*>(xf + 32 * b + part);
      lathe_quantize_block32_part(v, C == 2, q1 + 32 * b + part, q1 + k + 32 * b + part, ds + b);
    }
#else
    for (int b = threadIdx.x >> 3; b < (k >> 5); b += blockDim.x >> 3)  // whole warps: k / 32 % 4 == 0 below
      lathe_quantize_block32_part(*reinterpret_cast<const float4*>(xf + 32 * b + part), C == 2, q1 + 32 * b + part,
                                  q1 + k + 32 * b + part, ds + b);
#endif
    LATHE_STAMP_X(2);  // this thread's blocks quantized
  } else {  // x: cp.async lines, the only commit group (the weights' fills complete on the ring)
    const int n16 = (x_level_bytes + k / 2) >> 4;
    for (int i = threadIdx.x; i < n16; i += blockDim.x) lathe_gemv1_cp16(sx + 16 * i, xq + 16 * i);
    lathe_gemv1_commit();
#if LATHE_GEMV1_LATE
    late();
#endif
    lathe_gemv1_wait<0>();
    LATHE_STAMP_X(0);  // this thread's lines landed
  }
  __syncthreads();  // x is in place for every warp
}

// What the row walk does with a finished row (its epilogue). The plain one stores it: row(o, v) is
// called by the one lane holding the group's total. An epilogue with kWarp = true has row(o, v)
// called by every lane of the writing warp (all holding the total), before_wait(g0, n_groups, sub)
// once before the programmatic-launch wait, after_wait() once after it (before x's reads), and
// finish() by every thread once the ring is released. kReleasesLate: the wait does not release the next
// launch; the epilogue does, or the blocks as they leave
// (moe_route_epilogue.cuh: the mixture's router in the o product's epilogue).
struct lathe_gemv1_store {
  static constexpr bool kWarp = false;
  static constexpr bool kReleasesLate = false;
  float* y;
  __device__ __forceinline__ void before_wait(int, int, int) const {}
  __device__ __forceinline__ void after_wait() const {}
  __device__ __forceinline__ void row(int o, float v) const { y[o] = v; }
  __device__ __forceinline__ void finish(uint8_t*) const {}
};

// A measuring knob only (wrong sums): the row walk without its chunks' arithmetic, to time its
// stream by itself (as gemv_decode_tiles.cuh's LATHE_GEMV1T_SKIP_MATH).
#ifndef LATHE_GEMV1_SKIP_MATH
#define LATHE_GEMV1_SKIP_MATH 0
#endif

// The decode GEMV one row an item: a group of warps owns a row, its warps taking the row's chunks
// round-robin; each warp's walk carries its chunks' addresses. ByBlock: the rows dealt by whole 32-row
// blocks (lathe_gemv1_block_row), block b's groups walking its own; a group's arithmetic a row is the
// same, so y is the same bits either way.
template <class F, int C, bool ByBlock = false, class Epi>
__device__ __forceinline__ void lathe_gemv1_row_walk(const uint8_t* w, long long row_bytes, const int8_t* xq, Epi& epi,
                                                     int k, int n_out, int group, int early, const float* xf,
                                                     const lathe_grid* grid) {
  extern __shared__ uint4 lathe_gemv1_smem[];
  __shared__ float partial[2][LATHE_GEMV1_WARPS];
  __shared__ __align__(8) unsigned long long ring_bars[LATHE_GEMV1_WARPS][LATHE_GEMV1_STAGES];
  LATHE_BLOCK_STAMPS(stamps);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const unsigned mbar = static_cast<unsigned>(__cvta_generic_to_shared(ring_bars[warp]));
  const int units = k / F::unit_values, n_chunks = (units + F::chunk_units - 1) / F::chunk_units;
  uint8_t* stage = reinterpret_cast<uint8_t*>(lathe_gemv1_smem) + warp * (LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT);
  uint8_t* sx = reinterpret_cast<uint8_t*>(lathe_gemv1_smem) + LATHE_GEMV1_WARPS * LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT;
  const int x_level_bytes = k * (C == 2 ? 2 : 1);
  const int groups_per_block = LATHE_GEMV1_WARPS / group, sub = warp % group;
  const int n_groups = gridDim.x * groups_per_block;
  const int g0 = blockIdx.x * groups_per_block + warp / group;
  const int step = ByBlock ? groups_per_block : n_groups;  // a walk's step from item to item
  const int first_row = ByBlock ? lathe_gemv1_block_row(warp / group) : g0;
  auto start = [&](lathe_gemv1_walk<F, ByBlock>& walk) {
    if constexpr (ByBlock)
      walk.begin_item(w, row_bytes, warp / group, sub);
    else
      walk.begin(w, row_bytes, g0, sub);
  };

  // The loader runs STAGES - 1 chunks ahead along this warp's walk (nothing is filled past the end).
  // early > 0: the ring's first fills_first fills are issued BEFORE the programmatic-
  // launch wait (with B = STAGES - 1, lane i < early also asks L2 for the warp's (STAGES - 1 + i)-th
  // chunk), the rest once x's reads are asked for. early == 0 waits first.
  lathe_ring_init(mbar);
  if constexpr (Epi::kWarp) epi.before_wait(g0, n_groups, sub);
  if (early == 0) lathe_step_wait(grid, !Epi::kReleasesLate);
  if (early == 0) LATHE_STAMP_AT(stamps, 1);
  const unsigned stage_a = lathe_smem_addr(stage);
  constexpr int fills_first = ByBlock ? LATHE_GEMV1_NORM_BEFORE_WAIT : LATHE_GEMV1_BEFORE_WAIT;
  lathe_gemv1_walk<F, ByBlock> ld;
  start(ld);
  for (int s = 0; s < fills_first; ++s) {
    if (ld.row < n_out) lathe_ring_fill_walk<F>(ld, ld.n_units(units), stage_a + s * LATHE_GEMV1_SLOT, mbar + 8 * s);
    ld.next(w, row_bytes, sub, group, step, n_chunks);
  }
  // Lane i < n asks L2 for the warp's (STAGES - 1 + i)-th chunk (the dealt walk only: measuring knobs).
  auto prefetch_past_ring = [&](int n) {
    if constexpr (ByBlock) return;
    const int per_row = (n_chunks - sub + group - 1) / group;  // this warp's chunks of a row (>= 1)
    const int j = (LATHE_GEMV1_STAGES - 1) + lane;
    const int pf_row = g0 + (j / per_row) * n_groups, pf_c = sub + (j % per_row) * group;
    if (lane < n && pf_row < n_out) lathe_gemv1_prefetch_chunk<F>(w, row_bytes, units, pf_row, pf_c);
  };
  if (early > 0) {
    if (!LATHE_GEMV1_LATE) prefetch_past_ring(early);
    lathe_step_wait(grid, !Epi::kReleasesLate);
    LATHE_STAMP_AT(stamps, 1);
  }
  if constexpr (Epi::kWarp) epi.after_wait();
  lathe_gemv1_stage_x<C>(sx, xq, xf, k, [&] {
    for (int s = fills_first; s < LATHE_GEMV1_STAGES - 1; ++s) {
      if (ld.row < n_out) lathe_ring_fill_walk<F>(ld, ld.n_units(units), stage_a + s * LATHE_GEMV1_SLOT, mbar + 8 * s);
      ld.next(w, row_bytes, sub, group, step, n_chunks);
    }
    prefetch_past_ring(LATHE_GEMV1_L2_AFTER_X);
  });
  LATHE_STAMP_AT(stamps, 2);
  LATHE_STAMP_FIRST(stamps, first_row < n_out, lathe_ring_wait(mbar, 0, 0));

  lathe_gemv1_walk<F, ByBlock> at;  // the chunk consumed: in slot `slot`, its fill of parity `phase`
  start(at);
  int parity = 0, slot = 0;
  unsigned phase = 0;
  const unsigned sx_a = lathe_smem_addr(sx), sds_a = lathe_smem_addr(sx + x_level_bytes);
  float acc = 0.0f;
  while (at.row < n_out) {
    lathe_ring_wait(mbar, slot, phase);
    __syncwarp();  // every lane is past the previous chunk: its slot, refilled below, is free
    const int refill = slot == 0 ? LATHE_GEMV1_STAGES - 1 : slot - 1;
    if (ld.row < n_out)
      lathe_ring_fill_walk<F>(ld, ld.n_units(units), stage_a + refill * LATHE_GEMV1_SLOT, mbar + 8 * refill);
    ld.next(w, row_bytes, sub, group, step, n_chunks);
    const int u0 = at.c * F::chunk_units, n_pieces = at.n_units(units) * F::pieces;
    if (!LATHE_GEMV1_SKIP_MATH)
      acc = lathe_gemv1_chunk_dot<F, C>(acc, stage_a + slot * LATHE_GEMV1_SLOT + at.head(), n_pieces, u0 * F::pieces,
                                        sx_a, k, sds_a);
    if (++slot == LATHE_GEMV1_STAGES) {
      slot = 0;
      phase ^= 1;
    }
    if (at.c + group >= n_chunks) {  // the group's row is done
      const float v = lathe_warp_sum(acc);
      acc = 0.0f;
      if (group == 1) {
        if (Epi::kWarp || lane == 0) epi.row(at.row, v);
      } else {
        // Double-buffered partials: a warp writes buffer `parity` again only after the next barrier,
        // which the group's first warp reaches only after reading it.
        if (lane == 0) partial[parity][warp] = v;
        asm volatile("bar.sync %0, %1;\n" ::"r"(1 + warp / group), "r"(32 * group) : "memory");
        if (sub == 0 && (Epi::kWarp || lane == 0)) {
          float sum = 0.0f;
          for (int i = 0; i < group; ++i) sum += partial[parity][warp + i];
          epi.row(at.row, sum);
        }
        parity ^= 1;
      }
    }
    at.next(w, row_bytes, sub, group, step, n_chunks);
  }
  lathe_ring_release(mbar);
  if constexpr (Epi::kWarp) epi.finish(reinterpret_cast<uint8_t*>(lathe_gemv1_smem));
  LATHE_STAMP_END(stamps, w, n_out, k);
}

template <class F, int C>
__device__ __forceinline__ void lathe_gemv1_row_body(const uint8_t* w, long long row_bytes, const int8_t* xq, float* y,
                                                     int k, int n_out, int group, int early, const float* xf,
                                                     const lathe_grid* grid) {
  lathe_gemv1_store st{y};
  lathe_gemv1_row_walk<F, C>(w, row_bytes, xq, st, k, n_out, group, early, xf, grid);
}

// The paired products, the kernels' entry (lathe_gemv1_body: row or paired items) and the
// lathe_gemv1_* kernels follow in gemv_decode_pairs.cuh.
