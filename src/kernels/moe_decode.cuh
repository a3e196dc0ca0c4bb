// The mixture's expert products for decode (1..8 rows, int8 / int8x2 contracts), built on the decode
// GEMV's pieces (gemv_decode.cuh: format traits, a per-warp ring of LATHE_GEMV1_STAGES slots filled
// by bulk copies (gate/up) or 16-byte cp.async lines (down's segments), piece dot products against x
// staged in shared memory) and on gemv_multi.cuh's chunk dot. Only the chosen experts' rows are
// read: expert e's matrix starts e * expert_bytes into the stacked tensor [n_expert][n_out][k].
//
// Both kernels: blocks of 16 warps, the grid `rows` x blocks_per_row (<= the SM count). Block b
// serves row r = b % rows only, so it stages only that row's activation (x_r, or the row's k slots of
// h) once in shared memory. A group of `group` warps owns an item at a time (items g, g + n_groups of
// the row), its warps taking the item's chunks round-robin; partial sums meet in shared memory in a
// fixed order: results are deterministic. Expert ids (and route weights) of the row are held one a
// lane (top_k <= 32) and broadcast with shuffles.
//
// lathe_moe_gate_up_<fmt>_<contract>: item (j, o) of row r is output o of slot j (expert ids[r][j]):
// gate row o's chunks, then up row o's; epilogue h[r * top_k + j][o] = silu(g) * u with
// silu(g) = g / (1 + exp(-g)) (gemv_multi.cuh's formula). The ids come from the kernel just before
// (the router), so nothing is requested before the programmatic-launch wait. With hq, h's int8 form
// too, each 32-value block quantized by the block that completes it (lathe_moe_h_quantized).
//
// lathe_moe_down_<fmt>_<contract>: item o of row r is output o; its chunks are row o of each slot's
// expert, slot by slot, several slots' rows to a chunk when they fit (`segs`, below);
// out[r][o] = sum_j route_w[r][j] * (down_ids[r][j][o] . h[r * top_k + j]), each lane's terms weighted
// as they are added (no atomics). h is either the quantized form of [rows * top_k][n_ff] (copied in)
// or f32, quantized by the whole block into shared memory (lathe_moe_quantize_h, bit-identical to the
// quantizer kernel). early != 0: ids and route_w were
// written two launches back (the router, before the gate/up kernel), so they are read and the first
// STAGES - 1 weight chunks requested BEFORE the programmatic-launch wait; h after it.
// Dynamic shared memory: LATHE_GEMV1 stage bytes + the staged activation (x_r: k * C + k / 2;
// h_r: top_k * n_ff * C + top_k * n_ff / 2), C = 1 (int8) or 2 (int8x2).

// Chunk c of the row o of matrix w (expert base already applied) into slot; returns the head.
template <class F>
__device__ __forceinline__ int lathe_moe_chunk(const uint8_t* w, long long row_bytes, int units, int o, int c,
                                               uint8_t* slot, bool issue) {
  return lathe_gemv1_chunk<F>(w, row_bytes, units, o, c, slot, issue);
}

// The shared loop of both kernels: streams each item's chunks and hands the lane's share of each to
// `dot(item, c, staged)`, which returns it already placed in acc0 (d = 0) or acc1 (d = 1) by
// `which(item, c)`; `done(item, v0, v1)` is called by one lane per finished item with the group sums.
// The loader prologue (STAGES - 1 chunks) has been issued by the caller; ld_item / ld_c continue it.
template <class Locate, class Dot, class Done>
__device__ __forceinline__ void lathe_moe_stream(int g0, int sub, int group, int n_groups, int n_items,
                                                 int item_chunks, uint8_t* stage, int ld_item, int ld_c,
                                                 Locate chunk, Dot dot, Done done) {
  __shared__ float2 lathe_moe_partial[2][LATHE_GEMV1_WARPS];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  int item = g0, c = sub, slot = 0, parity = 0;
  float acc0 = 0.0f, acc1 = 0.0f;
  while (item < n_items) {
    lathe_gemv1_wait<LATHE_GEMV1_STAGES - 2>();
    __syncwarp();  // chunk `slot` landed for every lane; the slot refilled below was read last round
    const int refill = slot == 0 ? LATHE_GEMV1_STAGES - 1 : slot - 1;
    if (ld_item < n_items) chunk(ld_item, ld_c, stage + refill * LATHE_GEMV1_SLOT, true);
    lathe_gemv1_commit();
    ld_c += group;
    if (ld_item < n_items && ld_c >= item_chunks) {
      ld_c = sub;
      ld_item += n_groups;
    }
    const uint8_t* s = stage + slot * LATHE_GEMV1_SLOT + chunk(item, c, nullptr, false);
    dot(item, c, s, acc0, acc1);
    slot = slot + 1 == LATHE_GEMV1_STAGES ? 0 : slot + 1;
    c += group;
    if (c >= item_chunks) {  // the group's item is done
      float v0 = lathe_warp_sum(acc0), v1 = lathe_warp_sum(acc1);
      acc0 = acc1 = 0.0f;
      const bool writer = lathe_gemv_group_sum2(lathe_moe_partial, parity, warp, group, sub, lane, v0, v1);
      if (writer) done(item, v0, v1);
      c = sub;
      item += n_groups;
    }
  }
  lathe_gemv1_wait<0>();
}

// Row r of x's int8 form (q1, q2 under int8x2, ds; quantize_act.cuh's layout for `rows` rows of k)
// into shared memory at sx as one cp.async commit group, waited for by the caller.
template <int C>
__device__ __forceinline__ void lathe_moe_stage_row_x(uint8_t* sx, const int8_t* xq, int r, int rows, int k) {
  const int8_t* q1 = xq + static_cast<long long>(r) * k;
  const int8_t* q2 = xq + static_cast<long long>(rows + r) * k;
  const int8_t* dsp = xq + static_cast<long long>(rows) * k * C + static_cast<long long>(r) * (k >> 5) * 16;
  for (int i = threadIdx.x; i < (k >> 4); i += blockDim.x) lathe_gemv1_cp16(sx + 16 * i, q1 + 16 * i);
  if (C == 2)
    for (int i = threadIdx.x; i < (k >> 4); i += blockDim.x) lathe_gemv1_cp16(sx + k + 16 * i, q2 + 16 * i);
  for (int i = threadIdx.x; i < (k >> 5); i += blockDim.x) lathe_gemv1_cp16(sx + k * C + 16 * i, dsp + 16 * i);
  lathe_gemv1_commit();
}

// h's int8 form made where h is written (hq != 0): row r's K = top_k n_ff values as quantize_act.cuh
// lays out `rows` rows of K (q1, q2, ds), each 32-item block quantized once, by the block (CTA) that
// completes it. This block's items are its groups' (g0 .. g0 + gpb - 1 of each round of n_groups);
// once its warps are done it adds, for each 32-item block it wrote into, how many of its items it
// wrote to that block's count; the block whose count completes 32 reads the block's h back (from L2,
// after the fences), quantizes it as the quantizer does (lathe_quantize_block32: the same bytes) and
// sets the count back to zero. counts: rows K / 32 u32, zero between launches. Every thread calls it.
template <int C>
__device__ __forceinline__ void lathe_moe_h_quantized(const float* hr, int r, int rows, int K, int first_group,
                                                      int gpb, int n_groups, int8_t* hq, unsigned* counts) {
  __threadfence();  // this thread's items of h are visible (each warp as soon as it is done) ...
  __syncthreads();  // ... and every warp's, before this block counts them
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, n_warps = blockDim.x >> 5;
  int8_t* q1 = hq + static_cast<long long>(r) * K;
  int8_t* q2 = hq + static_cast<long long>(rows + r) * K;
  float4* ds = reinterpret_cast<float4*>(hq + static_cast<long long>(rows) * K * C) + static_cast<long long>(r) * (K >> 5);
  unsigned* cr = counts + static_cast<long long>(r) * (K >> 5);
  // Round t's items [lo, lo + gpb) touch blocks lo / 32 .. (hi - 1) / 32: warp w takes rounds w, w + n_warps, ...
  for (int lo = first_group + warp * n_groups; lo < K; lo += n_warps * n_groups) {
    const int hi = min(lo + gpb, K);
    for (int b = lo >> 5; b <= (hi - 1) >> 5; ++b) {
      const int n = min(hi, 32 * b + 32) - max(lo, 32 * b);
      unsigned done = 0;
      if (lane == 0) done = atomicAdd(cr + b, static_cast<unsigned>(n)) + n == 32u;
      if (__shfl_sync(0xffffffffu, done, 0)) {
        __threadfence();
        const int i = 32 * b + lane;
        lathe_quantize_block32(__ldcg(hr + i), i, C == 2, q1, q2, ds);
        if (lane == 0) cr[b] = 0;
      }
    }
  }
}

template <class F, int C>
__device__ __forceinline__ void lathe_moe_gate_up_pairs(const uint8_t* wg, const uint8_t* wu, long long row_bytes,
                                                       long long expert_bytes, const int* ids, const int8_t* xq,
                                                       float* h, int k, int n_ff, int rows, int top_k, int group,
                                                       int8_t* hq, unsigned* counts) {
  extern __shared__ uint4 lathe_moe_smem[];
  __shared__ float2 partial[2][LATHE_GEMV1_WARPS];
  __shared__ __align__(8) unsigned long long ring_bars[LATHE_GEMV1_WARPS][LATHE_GEMV1_STAGES];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const unsigned mbar = static_cast<unsigned>(__cvta_generic_to_shared(ring_bars[warp]));
  const int units = k / F::unit_values, n_halves = (units + lathe_gemv1_half<F>::units - 1) / lathe_gemv1_half<F>::units;
  const int r = blockIdx.x % rows, bpr = gridDim.x / rows, br = blockIdx.x / rows;
  uint8_t* stage = reinterpret_cast<uint8_t*>(lathe_moe_smem) + warp * (LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT);
  uint8_t* sx = reinterpret_cast<uint8_t*>(lathe_moe_smem) + LATHE_GEMV1_WARPS * LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT;
  const int gpb = LATHE_GEMV1_WARPS / group, sub = warp % group;
  const int n_groups = bpr * gpb, g0 = br * gpb + warp / group;
  const int n_items = top_k * n_ff;
  if (r >= rows || br >= bpr) return;  // a grid not a multiple of rows: whole blocks leave
  LATHE_BLOCK_STAMPS(stamps);  // the mixture's kernels stamp x and the first chunk as one time

  lathe_pdl_entry();
  LATHE_STAMP_AT(stamps, 1);
  lathe_moe_stage_row_x<C>(sx, xq, r, rows, k);  // the one commit group: the weights complete on the ring
  const int my_id = lane < top_k ? ids[r * top_k + lane] : 0;

  // Paired products (gemv_decode.cuh's lathe_gemv1_pair_ring): item (j, o) is row o of slot j's
  // expert in gate (A) and in up (B), so each x block a lane reads serves both.
  auto pair_rows = [&](int item, const uint8_t*& ga, const uint8_t*& gb) {
    const int j = item / n_ff, o = item - j * n_ff;
    const long long off = static_cast<long long>(__shfl_sync(0xffffffffu, my_id, j)) * expert_bytes + o * row_bytes;
    ga = wg + off;
    gb = wu + off;
  };
  lathe_gemv1_pair_ring<F, C, decltype(pair_rows)> ring{pair_rows, n_items, units, n_halves, group, sub, n_groups, g0,
                                                         lathe_smem_addr(stage), mbar, {}};
  lathe_ring_init(mbar);
  ring.begin();
  lathe_gemv1_wait<0>();  // x's group has landed
  __syncthreads();
  LATHE_STAMP_AT(stamps, 2);
  LATHE_STAMP_AT(stamps, 3);
  float* hr = h + static_cast<long long>(r) * top_k * n_ff;
  ring.run(lathe_smem_addr(sx), k, lathe_smem_addr(sx + k * C), partial,
           [&](int item, float g, float u) { hr[item] = lathe_swiglu(g, u); });
  lathe_ring_release(mbar);
  if (hq) lathe_moe_h_quantized<C>(hr, r, rows, n_items, br * gpb, gpb, n_groups, hq, counts);
  LATHE_STAMP_END(stamps, wg, n_items, k);
}

// The gate/up rows path's chunks and dot (shared with moe_single_launch.cuh): item (j, o) is row o of
// slot j's expert, chunks 0 .. nc - 1 of its gate row then nc .. 2 nc - 1 of its up row; my_id holds
// the row's expert ids one a lane. x's int8 form is staged at sx (lathe_moe_stage_row_x's layout).
template <class F, int C>
struct lathe_moe_gu_rows {
  const uint8_t *wg, *wu;
  long long row_bytes, expert_bytes;
  int units, nc, n_ff, k, my_id;
  const uint8_t* sx;
  __device__ __forceinline__ int chunk(int item, int c, uint8_t* slot, bool issue) const {
    const int j = item / n_ff, o = item - j * n_ff;
    const long long e = __shfl_sync(0xffffffffu, my_id, j);
    const bool is_up = c >= nc;
    return lathe_moe_chunk<F>((is_up ? wu : wg) + e * expert_bytes, row_bytes, units, o, is_up ? c - nc : c, slot,
                              issue);
  }
  // The same chunk as one bulk copy into the warp's ring slot s (gemv_decode.cuh's lathe_ring_fill:
  // lane 0 issues it; it lands `chunk(item, c, ...)` bytes into the slot, as the lines do). Every lane
  // calls it (the expert id's shuffle).
  __device__ __forceinline__ void ring_fill(int item, int c, uint8_t* slot, unsigned mbar, int s) const {
    const int j = item / n_ff, o = item - j * n_ff;
    const long long e = __shfl_sync(0xffffffffu, my_id, j);
    const bool is_up = c >= nc;
    lathe_ring_fill<F>((is_up ? wu : wg) + e * expert_bytes, row_bytes, units, o, is_up ? c - nc : c, slot, mbar, s,
                       true);
  }
  __device__ __forceinline__ void dot(int, int c, const uint8_t* s, float& acc0, float& acc1) const {
    const int4* sq1 = reinterpret_cast<const int4*>(sx);
    const int4* sq2 = reinterpret_cast<const int4*>(sx + k);
    const float4* sds = reinterpret_cast<const float4*>(sx + k * C);
    if (c < nc) acc0 += lathe_gemvm_chunk_dot<F, C>(s, units, c, sq1, sq2, sds);
    else acc1 += lathe_gemvm_chunk_dot<F, C>(s, units, c - nc, sq1, sq2, sds);
  }
};

// A warp's gate/up items g0, g0 + step, ... below n_items through a ring's consumer (`next()`: the
// next landed chunk, its slot refilled behind it), each item's gate and up sums met by its group and
// h[item] = silu(g) u written by the group's writer (shared by moe_single_launch.cuh and
// moe_experts_by_slot.cuh, whose rings carry other chunks after these).
template <class F, int C, class Next>
__device__ __forceinline__ void lathe_moe_gu_items(const lathe_moe_gu_rows<F, C>& gu, int g0, int n_items, int step,
                                                   int group, int sub, int chunks, float* h,
                                                   float2 (*partial)[LATHE_GEMV1_WARPS], int& parity, Next&& next) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int item = g0; item < n_items; item += step) {
    float acc0 = 0.0f, acc1 = 0.0f;
    for (int c = sub; c < chunks; c += group) {
      const uint8_t* s = next();
      gu.dot(item, c, s + gu.chunk(item, c, nullptr, false), acc0, acc1);
    }
    float v0 = lathe_warp_sum(acc0), v1 = lathe_warp_sum(acc1);
    if (lathe_gemv_group_sum2(partial, parity, warp, group, sub, lane, v0, v1)) h[item] = lathe_swiglu(v0, v1);
  }
}

// The rows path's weights stream on the decode products' bulk ring (one cp.async.bulk a chunk that
// lane 0 issues, completing on the slot's mbarrier: gemv_decode.cuh), not the lanes' 16-byte lines:
// the same chunks in the same slots, so the same sums, and ~100 fewer instructions a chunk a lane.
// Measured on the H200 (docs/perf.md, thirtieth session, p3): qwen3-30b-a3b Q8_0 tg128 472.5 / 473.1
// -> 480.7 / 481.3.
template <class F, int C>
__device__ __forceinline__ void lathe_moe_gate_up_rows(const uint8_t* wg, const uint8_t* wu, long long row_bytes,
                                                       long long expert_bytes, const int* ids, const int8_t* xq,
                                                       float* h, int k, int n_ff, int rows, int top_k, int group,
                                                       int8_t* hq, unsigned* counts) {
  extern __shared__ uint4 lathe_moe_smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int units = k / F::unit_values, nc = (units + F::chunk_units - 1) / F::chunk_units;
  const int r = blockIdx.x % rows, bpr = gridDim.x / rows, br = blockIdx.x / rows;
  uint8_t* stage = reinterpret_cast<uint8_t*>(lathe_moe_smem) + warp * (LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT);
  uint8_t* sx = reinterpret_cast<uint8_t*>(lathe_moe_smem) + LATHE_GEMV1_WARPS * LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT;
  const int gpb = LATHE_GEMV1_WARPS / group, sub = warp % group;
  const int n_groups = bpr * gpb, g0 = br * gpb + warp / group;
  const int n_items = top_k * n_ff;
  if (r >= rows || br >= bpr) return;  // a grid not a multiple of rows: whole blocks leave
  LATHE_BLOCK_STAMPS(stamps);
  __shared__ float2 partial[2][LATHE_GEMV1_WARPS];
  __shared__ __align__(8) unsigned long long ring_bars[LATHE_GEMV1_WARPS][LATHE_GEMV1_STAGES];
  const unsigned mbar = static_cast<unsigned>(__cvta_generic_to_shared(ring_bars[warp]));
  lathe_ring_init(mbar);

  lathe_pdl_entry();
  LATHE_STAMP_AT(stamps, 1);
  lathe_moe_stage_row_x<C>(sx, xq, r, rows, k);  // x: the one cp.async group (the weights land on the ring)
  const int my_id = lane < top_k ? ids[r * top_k + lane] : 0;
  const lathe_moe_gu_rows<F, C> gu{wg, wu, row_bytes, expert_bytes, units, nc, n_ff, k, my_id, sx};
  int ld_item = g0, ld_c = sub;
  // The loader runs STAGES - 1 chunks ahead along the warp's items (g0, g0 + n_groups, ...; chunks sub,
  // sub + group, ... of gate's row, then of up's), nothing filled past the end; x is the only
  // cp.async group.
  auto fill = [&](int s) {
    if (ld_item < n_items) gu.ring_fill(ld_item, ld_c, stage + s * LATHE_GEMV1_SLOT, mbar, s);
    ld_c += group;
    if (ld_item < n_items && ld_c >= 2 * nc) {
      ld_c = sub;
      ld_item += n_groups;
    }
  };
  for (int s = 0; s < LATHE_GEMV1_STAGES - 1; ++s) fill(s);
  lathe_gemv1_wait<0>();  // x's group has landed
  __syncthreads();
  LATHE_STAMP_AT(stamps, 2);
  LATHE_STAMP_AT(stamps, 3);
  unsigned taken = 0;  // chunks consumed: chunk `taken` is fill taken / STAGES of slot taken % STAGES
  int parity = 0;
  lathe_moe_gu_items(gu, g0, n_items, n_groups, group, sub, 2 * nc, h + static_cast<long long>(r) * top_k * n_ff,
                     partial, parity, [&]() -> const uint8_t* {
                       const int slot = static_cast<int>(taken % LATHE_GEMV1_STAGES);
                       lathe_ring_wait(mbar, slot, (taken / LATHE_GEMV1_STAGES) & 1);
                       __syncwarp();  // every lane is past the previous chunk: its slot, refilled here, is free
                       fill(static_cast<int>((taken + LATHE_GEMV1_STAGES - 1) % LATHE_GEMV1_STAGES));
                       ++taken;
                       return stage + slot * LATHE_GEMV1_SLOT;
                     });
  lathe_ring_release(mbar);
  if (hq)
    lathe_moe_h_quantized<C>(h + static_cast<long long>(r) * top_k * n_ff, r, rows, n_items, br * gpb, gpb, n_groups,
                             hq, counts);
  LATHE_STAMP_END(stamps, wg, n_items, k);
}

// The mixture's gate/up: `mode` is the launcher's group (bits 0-7) with bit 8 (LATHE_GEMV1_PAIRS) for
// the paired products (moe_launch.cpp picks them where a row's chunks would leave slots part empty).
template <class F, int C>
__device__ __forceinline__ void lathe_moe_gate_up_body(const uint8_t* wg, const uint8_t* wu, long long row_bytes,
                                                       long long expert_bytes, const int* ids, const int8_t* xq,
                                                       float* h, int k, int n_ff, int rows, int top_k, int mode,
                                                       int8_t* hq, unsigned* counts) {
  if (mode & LATHE_GEMV1_PAIRS)
    lathe_moe_gate_up_pairs<F, C>(wg, wu, row_bytes, expert_bytes, ids, xq, h, k, n_ff, rows, top_k, mode & 255, hq,
                                  counts);
  else
    lathe_moe_gate_up_rows<F, C>(wg, wu, row_bytes, expert_bytes, ids, xq, h, k, n_ff, rows, top_k, mode & 255, hq,
                                 counts);
}

// Down chunks: with segs == 1, chunk c of item o is chunk c % nc of row o of slot c / nc's expert.
// With segs > 1 (a row is one chunk, nc == 1, and several rows fit a slot), chunk c of item o is row o
// of the experts of slots c * segs .. + segs - 1 (fewer in the last), each its own 16-byte-line copy
// into a region of lathe_moe_seg_stride bytes of the slot: a slot carries ~2.4 KB instead of one short
// row (qwen3-30b-a3b: 3 x 816 B), so a warp keeps ~7 KB in flight and an item is 3 chunks, not 8.
__device__ __forceinline__ int lathe_moe_seg_stride(int seg_bytes) { return ((seg_bytes + 19 + 15) >> 4) << 4; }
// The most 32-value pieces a segs > 1 chunk holds, in rounds of 32: moe_launch.cpp's down_segments
// keeps segs * n_ff / 32 <= 32 * LATHE_MOE_DOWN_ROUNDS (q4_K's densest chunks have 128).
#define LATHE_MOE_DOWN_ROUNDS 4

// A row's h (K f32 values) into the quantizer's layout in shared memory, by the whole block: thread t
// takes values 16 t .. 16 t + 15 (four 16-byte loads, all in flight at once), the lane pair (t, t ^ 1)
// one 32-value block. Same arithmetic as lathe_quantize_block32: a block's maxima and integer level
// sums do not depend on how it is split, so the bytes equal the quantizer kernel's. Replaces a warp a
// block (a chain of ~20 dependent shuffles per block, 12 blocks a warp at qwen3-30b-a3b).
template <int C>
__device__ __forceinline__ void lathe_moe_quantize_h(const float* hf, int K, int8_t* q1, int8_t* q2, float4* ds) {
  const int n = K >> 4;  // even: K is a multiple of 32, so a pair never straddles a warp or the end
  for (int base = 0; base < n; base += blockDim.x) {  // the same trips for every lane: shuffles see all
    const int t = base + static_cast<int>(threadIdx.x);
    const bool on = t < n;
    float v[16];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float4 a = on ? reinterpret_cast<const float4*>(hf)[4 * t + i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      v[4 * i] = a.x;
      v[4 * i + 1] = a.y;
      v[4 * i + 2] = a.z;
      v[4 * i + 3] = a.w;
    }
    float m = fabsf(v[0]);
#pragma unroll
    for (int i = 1; i < 16; ++i) m = fmaxf(m, fabsf(v[i]));
    if (base == 0) LATHE_STAMP_X(0);  // (LATHE_STAMPS, thread 0) h's lines have landed
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
    const float d1 = lathe_quantize_scale(m);
    int l1[16], l2[16], s1 = 0, s2 = 0;
    lathe_quantize_levels<16>(v, d1, l1);
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      s1 += l1[i];
      l2[i] = 0;
    }
    float d2 = 0.0f;
    if (C == 2) {
      float res[16];
#pragma unroll
      for (int i = 0; i < 16; ++i) res[i] = fmaf(-d1, static_cast<float>(l1[i]), v[i]);
      float m2 = fabsf(res[0]);
#pragma unroll
      for (int i = 1; i < 16; ++i) m2 = fmaxf(m2, fabsf(res[i]));
      m2 = fmaxf(m2, __shfl_xor_sync(0xffffffffu, m2, 1));
      d2 = lathe_quantize_scale(m2);
      lathe_quantize_levels<16>(res, d2, l2);
#pragma unroll
      for (int i = 0; i < 16; ++i) s2 += l2[i];
    }
    s1 += __shfl_xor_sync(0xffffffffu, s1, 1);
    s2 += __shfl_xor_sync(0xffffffffu, s2, 1);
    if (on) {
      int4 w1, w2;
      int* p1 = reinterpret_cast<int*>(&w1);
      int* p2 = reinterpret_cast<int*>(&w2);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        p1[i] = (l1[4 * i] & 0xff) | (l1[4 * i + 1] & 0xff) << 8 | (l1[4 * i + 2] & 0xff) << 16 | (l1[4 * i + 3] & 0xff) << 24;
        p2[i] = (l2[4 * i] & 0xff) | (l2[4 * i + 1] & 0xff) << 8 | (l2[4 * i + 2] & 0xff) << 16 | (l2[4 * i + 3] & 0xff) << 24;
      }
      reinterpret_cast<int4*>(q1)[t] = w1;
      if (C == 2) reinterpret_cast<int4*>(q2)[t] = w2;
      if ((t & 1) == 0)  // the block's sums are exact in f32 (at most 32 x 127 in magnitude)
        ds[t >> 1] = make_float4(d1, d2, fmaf(d1, static_cast<float>(s1), d2 * static_cast<float>(s2)), 0.0f);
    }
  }
  LATHE_STAMP_X(2);  // (LATHE_STAMPS, thread 0) its share quantized
}

// The down/combine's chunks and dot (shared with moe_single_launch.cuh): item o is output row o, its
// chunks row o of each slot's expert (segs == 1: chunk c is chunk c % nc of slot c / nc's row; segs > 1:
// the rows of slots c segs .. + segs - 1, each its own 16-byte-line copy into a region of seg_stride
// bytes). my_id, my_w hold the row's expert ids and route weights one a lane; h's int8 form (K = top_k
// n_ff values) is staged at sx. init() forms the segs > 1 dot's lane-fixed layout.
template <class F, int C>
struct lathe_moe_down_rows {
  const uint8_t* w;
  long long row_bytes, expert_bytes;
  int units, nc, n_ff, top_k, segs, my_id;
  float my_w;
  const uint8_t* sx;
  int seg_bytes, seg_stride, K, seg_pieces, sw;
  unsigned sx_a, sds_a;
  int seg_r[LATHE_MOE_DOWN_ROUNDS], sub_r[LATHE_MOE_DOWN_ROUNDS];
  unsigned off_r[LATHE_MOE_DOWN_ROUNDS];

  __device__ __forceinline__ void init() {
    seg_bytes = units * F::unit_bytes;
    seg_stride = lathe_moe_seg_stride(seg_bytes);
    K = top_k * n_ff;
    // Round r's piece is piece p = 32 r + lane of the chunk, in segment p / seg_pieces, unit
    // (p % seg_pieces) / pieces, sub-piece p % pieces.
    seg_pieces = units * F::pieces;
    sw = lathe_gemv1_lane_swap();
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int r = 0; r < LATHE_MOE_DOWN_ROUNDS; ++r) {
      const int p = 32 * r + lane, sg = p / seg_pieces, pp = p - sg * seg_pieces, uu = pp / F::pieces;
      seg_r[r] = sg;
      sub_r[r] = pp - uu * F::pieces;
      off_r[r] = static_cast<unsigned>(sg * seg_stride + uu * F::unit_bytes);
    }
    sx_a = lathe_smem_addr(sx);
    sds_a = lathe_smem_addr(sx + K * C);
  }
  __device__ __forceinline__ int item_chunks() const { return segs > 1 ? (top_k + segs - 1) / segs : top_k * nc; }

  __device__ __forceinline__ int chunk(int item, int c, uint8_t* slot, bool issue) const {
    const int lane = threadIdx.x & 31;
    if (segs == 1) {
      const int j = c / nc;
      const long long e = __shfl_sync(0xffffffffu, my_id, j);
      return lathe_moe_chunk<F>(w + e * expert_bytes, row_bytes, units, item, c - j * nc, slot, issue);
    }
    if (issue) {
      for (int sg = 0; sg < segs && c * segs + sg < top_k; ++sg) {  // warp-uniform bounds
        const long long e = __shfl_sync(0xffffffffu, my_id, c * segs + sg);
        const uint8_t* g = w + e * expert_bytes + item * row_bytes;
        const uint8_t* g16 = reinterpret_cast<const uint8_t*>(reinterpret_cast<uint64_t>(g) & ~15ull);
        const int n16 = (static_cast<int>(g - g16) + seg_bytes + 15) >> 4;
        for (int i = lane; i < n16; i += 32) lathe_gemv1_cp16(slot + sg * seg_stride + 16 * i, g16 + 16 * i);
      }
    }
    return 0;  // each segment's head is found by the dot
  }

  __device__ __forceinline__ void dot(int item, int c, const uint8_t* s, float& acc0, float&) const {
    const int lane = threadIdx.x & 31;
    if (segs == 1) {
      const int j = c / nc;
      const float wj = __shfl_sync(0xffffffffu, my_w, j);
      const int4* sq1 = reinterpret_cast<const int4*>(sx + j * n_ff);
      const int4* sq2 = reinterpret_cast<const int4*>(sx + K + j * n_ff);
      const float4* sds = reinterpret_cast<const float4*>(sx + K * C) + j * (n_ff >> 5);
      acc0 = fmaf(wj, lathe_gemvm_chunk_dot<F, C>(s, units, c - j * nc, sq1, sq2, sds), acc0);
      return;
    }
    // Piece p of the chunk is piece p % seg_pieces of segment p / seg_pieces; each term is weighted by
    // its slot's route weight as it is added (a fixed order per lane: deterministic). Where a lane's
    // piece of round r lies in the slot (its segment, unit and sub-piece) is the same for every chunk:
    // formed once (seg_r, off_r, sub_r); a chunk adds only its segments' heads and expert weights.
    const int j0 = c * segs, n_pieces = min(segs, top_k - j0) * seg_pieces;
    const unsigned slot_a = lathe_smem_addr(s);
    const unsigned row_lo = static_cast<unsigned>(reinterpret_cast<uint64_t>(w + item * row_bytes));
#pragma unroll
    for (int r = 0; r < LATHE_MOE_DOWN_ROUNDS; ++r) {
      if (32 * r >= n_pieces) break;  // warp-uniform: the shuffles below see every lane
      const int j = min(j0 + seg_r[r], top_k - 1);
      const float wj = __shfl_sync(0xffffffffu, my_w, j);
      const unsigned e = static_cast<unsigned>(__shfl_sync(0xffffffffu, my_id, j));
      if (32 * r + lane < n_pieces) {
        // A segment's head: the low bits of its global address, 32-bit arithmetic suffices.
        const unsigned head = (row_lo + e * static_cast<unsigned>(expert_bytes)) & 15u;
        const unsigned u = slot_a + off_r[r] + head;
        const int xb = j0 * seg_pieces + 32 * r + lane;
        acc0 = fmaf(wj,
                    lathe_gemv1_piece_dot_at<F, C>(u & ~3u, u & 3u, sub_r[r], sw, sx_a + 32 * xb + 16 * sw,
                                                   16 - 32 * sw, K, sds_a + 16 * xb),
                    acc0);
      }
    }
  }
};

template <class F, int C>
__device__ __forceinline__ void lathe_moe_down_body(const uint8_t* w, long long row_bytes, long long expert_bytes,
                                                    const int* ids, const float* route_w, const void* hin, int h_f32,
                                                    float* out, int n_out, int n_ff, int rows, int top_k, int group,
                                                    int early, int segs) {
  extern __shared__ uint4 lathe_moe_smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int units = n_ff / F::unit_values, nc = (units + F::chunk_units - 1) / F::chunk_units;
  const int r = blockIdx.x % rows, bpr = gridDim.x / rows, br = blockIdx.x / rows;
  const int K = top_k * n_ff;  // the row's staged activation: its top_k slots of h
  uint8_t* stage = reinterpret_cast<uint8_t*>(lathe_moe_smem) + warp * (LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT);
  uint8_t* sx = reinterpret_cast<uint8_t*>(lathe_moe_smem) + LATHE_GEMV1_WARPS * LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT;
  const int gpb = LATHE_GEMV1_WARPS / group, sub = warp % group;
  const int n_groups = bpr * gpb, g0 = br * gpb + warp / group;
  if (r >= rows || br >= bpr) return;
  LATHE_BLOCK_STAMPS(stamps);

  if (!early) lathe_pdl_entry();
  const int my_id = lane < top_k ? ids[r * top_k + lane] : 0;
  const float my_w = lane < top_k ? (route_w ? route_w[r * top_k + lane] : 1.0f) : 0.0f;
  lathe_moe_down_rows<F, C> dn{w, row_bytes, expert_bytes, units, nc, n_ff, top_k, segs, my_id, my_w, sx};
  dn.init();
  const int item_chunks = dn.item_chunks();
  auto chunk = [&](int item, int c, uint8_t* slot, bool issue) { return dn.chunk(item, c, slot, issue); };
  int ld_item = g0, ld_c = sub;
  for (int s = 0; s < LATHE_GEMV1_STAGES - 1; ++s) {
    if (ld_item < n_out) chunk(ld_item, ld_c, stage + s * LATHE_GEMV1_SLOT, true);
    lathe_gemv1_commit();
    ld_c += group;
    if (ld_item < n_out && ld_c >= item_chunks) {
      ld_c = sub;
      ld_item += n_groups;
    }
  }
  if (early) lathe_pdl_entry();  // now h, written by the kernel just before, may be read
  LATHE_STAMP_AT(stamps, 1);

  if (h_f32) {
    lathe_moe_quantize_h<C>(reinterpret_cast<const float*>(hin) + static_cast<long long>(r) * K, K,
                            reinterpret_cast<int8_t*>(sx), reinterpret_cast<int8_t*>(sx + K),
                            reinterpret_cast<float4*>(sx + K * C));
  } else {
    // h's int8 form, K values a row (x's layout with k = K)
    lathe_moe_stage_row_x<C>(sx, reinterpret_cast<const int8_t*>(hin), r, rows, K);
    lathe_gemv1_wait<0>();  // h's group is the newest: the weight chunks before it have landed too
  }
  __syncthreads();  // h_r is in place for every warp (the weight chunks are waited for one by one)
  LATHE_STAMP_AT(stamps, 2);
  LATHE_STAMP_AT(stamps, 3);

  auto dot = [&](int item, int c, const uint8_t* s, float& acc0, float& acc1) { dn.dot(item, c, s, acc0, acc1); };
  auto done = [&](int item, float v, float) { out[static_cast<long long>(r) * n_out + item] = v; };
  lathe_moe_stream(g0, sub, group, n_groups, n_out, item_chunks, stage, ld_item, ld_c, chunk, dot, done);
  LATHE_STAMP_END(stamps, w, n_out, K);
}

#define LATHE_MOE_KERNELS(FMT, C, CNAME)                                                                          \
  extern "C" __global__ void __launch_bounds__(32 * LATHE_GEMV1_WARPS, 1) lathe_moe_gate_up_##FMT##_##CNAME(      \
      const uint8_t* wg, const uint8_t* wu, long long row_bytes, long long expert_bytes, const int* ids,         \
      const int8_t* xq, float* h, int k, int n_ff, int rows, int top_k, int group, int8_t* hq,                   \
      unsigned* counts) {                                                                                        \
    lathe_moe_gate_up_body<lathe_gemv1_##FMT, C>(wg, wu, row_bytes, expert_bytes, ids, xq, h, k, n_ff, rows,     \
                                                 top_k, group, hq, counts);                                      \
  }                                                                                                              \
  extern "C" __global__ void __launch_bounds__(32 * LATHE_GEMV1_WARPS, 1) lathe_moe_down_##FMT##_##CNAME(         \
      const uint8_t* w, long long row_bytes, long long expert_bytes, const int* ids, const float* route_w,       \
      const void* h, int h_f32, float* out, int n_out, int n_ff, int rows, int top_k, int group, int early,      \
      int segs) {                                                                                                \
    lathe_moe_down_body<lathe_gemv1_##FMT, C>(w, row_bytes, expert_bytes, ids, route_w, h, h_f32, out, n_out,    \
                                              n_ff, rows, top_k, group, early, segs);                            \
  }

LATHE_MOE_KERNELS(q8_0, 1, int8)
LATHE_MOE_KERNELS(q8_0, 2, int8x2)
LATHE_MOE_KERNELS(q4_k, 1, int8)
LATHE_MOE_KERNELS(q4_k, 2, int8x2)
LATHE_MOE_KERNELS(q5_k, 1, int8)
LATHE_MOE_KERNELS(q5_k, 2, int8x2)
LATHE_MOE_KERNELS(q2_k, 1, int8)
LATHE_MOE_KERNELS(q2_k, 2, int8x2)
LATHE_MOE_KERNELS(q3_k, 1, int8)
LATHE_MOE_KERNELS(q3_k, 2, int8x2)
LATHE_MOE_KERNELS(q6_k, 1, int8)
LATHE_MOE_KERNELS(q6_k, 2, int8x2)
