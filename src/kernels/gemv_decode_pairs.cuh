// The decode GEMV's paired products (gemv_decode.cuh's pieces and ring, two rows an item), the
// decode kernels' entry (lathe_gemv1_body: one row an item, or two) and the lathe_gemv1_* kernels.
//
// A paired item is two rows over the same values: the decode GEMV's rows 2 i and 2 i + 1, or gate's
// and up's row o (gemv_multi.cuh's SwiGLU product, moe_decode.cuh's gate/up). A ring slot holds a
// half chunk of each side by side, two bulk copies on the slot's barrier, so each x block a lane
// reads serves both rows. Launchers choose them by shape (decode_stream.h's decode_pairs_pay) and
// say so in bit 8 of the group parameter (LATHE_GEMV1_PAIRS).

// The paired products: a slot holds a half chunk (F::chunk_units / 2 units)
// of two rows, row A's at the slot's start and row B's LATHE_GEMV1_HALF bytes in, over the same
// values, so each x block a lane reads serves both rows: half the shared-memory traffic of x a weight
// byte. Half a slot holds a half chunk from its 16-byte line (q6_K: 6 x 210 + 14 = 1,274 bytes).
#define LATHE_GEMV1_HALF (LATHE_GEMV1_SLOT / 2)
template <class F>
struct lathe_gemv1_half {
  static constexpr int units = F::chunk_units / 2, bytes = units * F::unit_bytes;
  static_assert(bytes + 15 + 4 <= LATHE_GEMV1_HALF, "a half chunk and its line's head fit half a slot");
};

// The lane's share of a paired chunk: row A's half chunk at shared address sa, row B's at sb (has_b:
// B exists), n_pieces pieces each from x block xg0; pieces p = lane + 32 i, added to acc_a and acc_b
// in that order (for one row, the order lathe_gemv1_chunk_dot adds them over whole chunks).
template <class F, int C>
__device__ __forceinline__ void lathe_gemv1_chunk_dot2(float& acc_a, float& acc_b, unsigned sa, unsigned sb, bool has_b,
                                                       int n_pieces, int xg0, unsigned sx1, int kq2, unsigned sds) {
  const int lane = threadIdx.x & 31, sw = lathe_gemv1_lane_swap(), j = lane % F::pieces;
  const unsigned lane_off = (lane / F::pieces) * F::unit_bytes;
  const unsigned ua = (sa + lane_off) & ~3u, ma = (sa + lane_off) & 3u;
  const unsigned ub = (sb + lane_off) & ~3u, mb = (sb + lane_off) & 3u;
  constexpr int stride = (32 / F::pieces) * F::unit_bytes;
  static_assert(stride % 4 == 0, "a piece's words keep their alignment from round to round");
  const unsigned xa = sx1 + 32 * (xg0 + lane) + 16 * sw;
  const unsigned ds = sds + 16 * (xg0 + lane);
  const int xo = 16 - 32 * sw;
  constexpr int rounds = (lathe_gemv1_half<F>::units * F::pieces + 31) / 32;
#pragma unroll
  for (int i = 0; i < rounds; ++i) {
    if (lane + 32 * i < n_pieces) {
      const lathe_gemv1_x x = lathe_gemv1_load_x<F, C>(xa + 1024 * i, xo, kq2, ds + 512 * i);
      acc_a += lathe_gemv1_piece_x<F, C>(ua + i * stride, ma, j, sw, x);
      if (has_b) acc_b += lathe_gemv1_piece_x<F, C>(ub + i * stride, mb, j, sw, x);
    }
  }
}

// A warp's walk over paired items: items item0, item0 + n_groups, ..., half chunks sub, sub + group,
// ... of each. rows(item, ga, gb) gives an item's two rows' first bytes (gb = nullptr: no row B);
// the walk carries the current half chunk's addresses.
template <class F>
struct lathe_gemv1_pair_walk {
  static constexpr int half_bytes = lathe_gemv1_half<F>::bytes;
  const uint8_t* ga;
  const uint8_t* gb;
  int item, c;
  template <class Rows>
  __device__ __forceinline__ void begin(Rows& rows, int item0, int sub) {
    item = item0;
    c = sub;
    rows(item, ga, gb);
    ga += static_cast<long long>(sub) * half_bytes;
    if (gb) gb += static_cast<long long>(sub) * half_bytes;
  }
  template <class Rows>
  __device__ __forceinline__ void next(Rows& rows, int sub, int group, int n_groups, int n_halves, int n_items) {
    c += group;
    ga += static_cast<long long>(group) * half_bytes;
    if (gb) gb += static_cast<long long>(group) * half_bytes;
    if (c >= n_halves) {
      item += n_groups;
      if (item < n_items) begin(rows, item, sub);
    }
  }
  __device__ __forceinline__ int n_units(int units) const {
    return min(lathe_gemv1_half<F>::units, units - c * lathe_gemv1_half<F>::units);
  }
};

// The walk's half chunks (nu units each) into the slot at shared address dst (A) and dst +
// LATHE_GEMV1_HALF (B): their whole 16-byte lines, two bulk copies lane 0 issues on one barrier.
template <class F>
__device__ __forceinline__ void lathe_ring_fill_pair(const lathe_gemv1_pair_walk<F>& at, int nu, unsigned dst,
                                                     unsigned bar) {
  if ((threadIdx.x & 31) == 0) {
    const int ha = static_cast<int>(reinterpret_cast<uint64_t>(at.ga) & 15);
    const int hb = at.gb ? static_cast<int>(reinterpret_cast<uint64_t>(at.gb) & 15) : 0;
    const unsigned na = static_cast<unsigned>((ha + nu * F::unit_bytes + 15) & ~15);
    const unsigned nb = at.gb ? static_cast<unsigned>((hb + nu * F::unit_bytes + 15) & ~15) : 0u;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(na + nb) : "memory");
    lathe_bulk_weights<F::evict_first>(dst, at.ga - ha, na, bar);
    if (at.gb) lathe_bulk_weights<F::evict_first>(dst + LATHE_GEMV1_HALF, at.gb - hb, nb, bar);
  }
}

// The paired products' ring: the loader (ld) STAGES - 1 half chunks ahead of the consumer, each warp
// on its own walk. begin() issues the ring's first fills; run() consumes every item, handing each
// finished one's two group sums to done(item, va, vb) on one lane.
template <class F, int C, class Rows>
struct lathe_gemv1_pair_ring {
  Rows& rows;
  int n_items, units, n_halves, group, sub, n_groups, item0;
  unsigned stage_a, mbar;
  lathe_gemv1_pair_walk<F> ld;

  __device__ __forceinline__ void fill(int s) {
    if (ld.item < n_items) lathe_ring_fill_pair<F>(ld, ld.n_units(units), stage_a + s * LATHE_GEMV1_SLOT, mbar + 8 * s);
    if (ld.item < n_items) ld.next(rows, sub, group, n_groups, n_halves, n_items);
  }
  // The ring's first n fills (all STAGES - 1 unless the caller holds some back); rest(n) the others.
  __device__ __forceinline__ void begin(int n = LATHE_GEMV1_STAGES - 1) {
    if (item0 < n_items) ld.begin(rows, item0, sub);
    else ld.item = item0;
    for (int s = 0; s < n; ++s) fill(s);
  }
  __device__ __forceinline__ void rest(int n) {
    for (int s = n; s < LATHE_GEMV1_STAGES - 1; ++s) fill(s);
  }
  // Asks L2 for the half chunks (both rows) of the loader's walk `ahead` steps on: the next chunks
  // past the ring, before the programmatic-launch wait.
  __device__ __forceinline__ void prefetch(int ahead) {
    lathe_gemv1_pair_walk<F> p = ld;
    for (int i = 0; i < ahead && p.item < n_items; ++i) p.next(rows, sub, group, n_groups, n_halves, n_items);
    if (p.item >= n_items) return;
    const unsigned nu = static_cast<unsigned>(p.n_units(units)) * F::unit_bytes;
    const uint8_t* g16 = reinterpret_cast<const uint8_t*>(reinterpret_cast<uint64_t>(p.ga) & ~15ull);
    lathe_prefetch_l2(g16, static_cast<unsigned>((p.ga - g16 + nu + 15) & ~15));
    if (p.gb) {
      g16 = reinterpret_cast<const uint8_t*>(reinterpret_cast<uint64_t>(p.gb) & ~15ull);
      lathe_prefetch_l2(g16, static_cast<unsigned>((p.gb - g16 + nu + 15) & ~15));
    }
  }
  template <class Done>
  __device__ __forceinline__ void run(unsigned sx_a, int kq2, unsigned sds_a, float2 (*partial)[LATHE_GEMV1_WARPS],
                                      Done done) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    lathe_gemv1_pair_walk<F> at;
    if (item0 < n_items) at.begin(rows, item0, sub);
    else at.item = item0;
    int parity = 0, slot = 0;
    unsigned phase = 0;
    float acc_a = 0.0f, acc_b = 0.0f;
    while (at.item < n_items) {
      lathe_ring_wait(mbar, slot, phase);
      __syncwarp();  // every lane is past the previous chunk: its slot, refilled below, is free
      fill(slot == 0 ? LATHE_GEMV1_STAGES - 1 : slot - 1);
      const unsigned sl = stage_a + slot * LATHE_GEMV1_SLOT;
      const int nu = at.n_units(units);
      lathe_gemv1_chunk_dot2<F, C>(acc_a, acc_b, sl + static_cast<unsigned>(reinterpret_cast<uint64_t>(at.ga) & 15),
                                   sl + LATHE_GEMV1_HALF + (at.gb ? static_cast<unsigned>(reinterpret_cast<uint64_t>(at.gb) & 15) : 0u),
                                   at.gb != nullptr, nu * F::pieces, at.c * lathe_gemv1_half<F>::units * F::pieces,
                                   sx_a, kq2, sds_a);
      if (++slot == LATHE_GEMV1_STAGES) {
        slot = 0;
        phase ^= 1;
      }
      if (at.c + group >= n_halves) {  // the group's item is done
        float va = lathe_warp_sum(acc_a), vb = lathe_warp_sum(acc_b);
        acc_a = acc_b = 0.0f;
        if (lathe_gemv_group_sum2(partial, parity, warp, group, sub, lane, va, vb)) done(at.item, va, vb);
      }
      at.next(rows, sub, group, n_groups, n_halves, n_items);
    }
  }
};

// The decode GEMV as paired products: item i is rows 2 i and 2 i + 1 (the last alone when n_out is
// odd), cut into half chunks; a group of warps owns an item, its warps taking the half chunks
// round-robin. With group 1 a lane adds a row's pieces in the order the one-row loop did.
template <class F, int C>
__device__ __forceinline__ void lathe_gemv1_pair_body(const uint8_t* w, long long row_bytes, const int8_t* xq, float* y,
                                                      int k, int n_out, int group, int early, const float* xf,
                                                      const lathe_grid* grid) {
  extern __shared__ uint4 lathe_gemv1_smem[];
  __shared__ float2 partial[2][LATHE_GEMV1_WARPS];
  __shared__ __align__(8) unsigned long long ring_bars[LATHE_GEMV1_WARPS][LATHE_GEMV1_STAGES];
  LATHE_BLOCK_STAMPS(stamps);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const unsigned mbar = static_cast<unsigned>(__cvta_generic_to_shared(ring_bars[warp]));
  constexpr int half_units = lathe_gemv1_half<F>::units;
  const int units = k / F::unit_values, n_halves = (units + half_units - 1) / half_units;
  const int n_items = (n_out + 1) >> 1;
  uint8_t* stage = reinterpret_cast<uint8_t*>(lathe_gemv1_smem) + warp * (LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT);
  uint8_t* sx = reinterpret_cast<uint8_t*>(lathe_gemv1_smem) + LATHE_GEMV1_WARPS * LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT;
  const int x_level_bytes = k * (C == 2 ? 2 : 1);

  const int groups_per_block = LATHE_GEMV1_WARPS / group, sub = warp % group;
  const int n_groups = gridDim.x * groups_per_block;
  const int g0 = blockIdx.x * groups_per_block + warp / group;
  auto rows = [&](int item, const uint8_t*& ga, const uint8_t*& gb) {
    ga = w + static_cast<long long>(2 * item) * row_bytes;
    gb = 2 * item + 1 < n_out ? ga + row_bytes : nullptr;
  };
  lathe_gemv1_pair_ring<F, C, decltype(rows)> ring{rows, n_items, units, n_halves, group, sub, n_groups, g0,
                                                    lathe_smem_addr(stage), mbar, {}};

  // The loader runs STAGES - 1 half chunks ahead along this warp's walk, through the bulk ring.
  // early > 0: the weights do not depend on the kernel before, so the ring's first
  // LATHE_GEMV1_BEFORE_WAIT fills are issued BEFORE the programmatic-launch wait (with B = STAGES - 1,
  // lane i < early also asks L2 for the warp's (STAGES - 1 + i)-th half chunk), the rest once x's
  // reads are asked for (gemv_decode.cuh). early == 0 waits first.
  lathe_ring_init(mbar);
  if (early == 0) lathe_step_wait(grid);
  ring.begin(LATHE_GEMV1_BEFORE_WAIT);
  if (early > 0) {
    if (!LATHE_GEMV1_LATE && lane < early) ring.prefetch(lane);
    lathe_step_wait(grid);
  }
  LATHE_STAMP_AT(stamps, 1);
  lathe_gemv1_stage_x<C>(sx, xq, xf, k, [&] {
    ring.rest(LATHE_GEMV1_BEFORE_WAIT);
    if (lane < LATHE_GEMV1_L2_AFTER_X) ring.prefetch(lane);
  });
  LATHE_STAMP_AT(stamps, 2);
  LATHE_STAMP_FIRST(stamps, g0 < n_items, lathe_ring_wait(mbar, 0, 0));

  ring.run(lathe_smem_addr(sx), k, lathe_smem_addr(sx + x_level_bytes), partial, [&](int item, float va, float vb) {
    y[2 * item] = va;
    if (2 * item + 1 < n_out) y[2 * item + 1] = vb;
  });
  lathe_ring_release(mbar);
  LATHE_STAMP_END(stamps, w, n_out, k);
}

// The decode GEMV: `mode` is the launcher's group (warps an item, bits 0-7) with bit 8 set for the
// paired products (gemv_launch.cpp picks them where a row's chunks would leave slots part empty).
#define LATHE_GEMV1_PAIRS 256
template <class F, int C>
__device__ __forceinline__ void lathe_gemv1_body(const uint8_t* w, long long row_bytes, const int8_t* xq, float* y,
                                                 int k, int n_out, int mode, int early, const float* xf,
                                                 const lathe_grid* grid = nullptr) {
  if (mode & LATHE_GEMV1_PAIRS)
    lathe_gemv1_pair_body<F, C>(w, row_bytes, xq, y, k, n_out, mode & 255, early, xf, grid);
  else
    lathe_gemv1_row_body<F, C>(w, row_bytes, xq, y, k, n_out, mode & 255, early, xf, grid);
}

#define LATHE_GEMV1_KERNEL(FMT, C, CNAME)                                                                   \
  extern "C" __global__ void __launch_bounds__(32 * LATHE_GEMV1_WARPS, 1) lathe_gemv1_##FMT##_##CNAME(      \
      const uint8_t* w, long long row_bytes, const int8_t* xq, float* y, int k, int n_out, int group, int early,  \
      const float* xf) {                                                                                     \
    lathe_gemv1_body<lathe_gemv1_##FMT, C>(w, row_bytes, xq, y, k, n_out, group, early, xf);               \
  }

LATHE_GEMV1_KERNEL(q8_0, 1, int8)
LATHE_GEMV1_KERNEL(q8_0, 2, int8x2)
LATHE_GEMV1_KERNEL(q8_0_ef, 1, int8)
LATHE_GEMV1_KERNEL(q8_0_ef, 2, int8x2)
LATHE_GEMV1_KERNEL(q4_k, 1, int8)
LATHE_GEMV1_KERNEL(q4_k, 2, int8x2)
LATHE_GEMV1_KERNEL(q5_k, 1, int8)
LATHE_GEMV1_KERNEL(q5_k, 2, int8x2)
LATHE_GEMV1_KERNEL(q2_k, 1, int8)
LATHE_GEMV1_KERNEL(q2_k, 2, int8x2)
LATHE_GEMV1_KERNEL(q3_k, 1, int8)
LATHE_GEMV1_KERNEL(q3_k, 2, int8x2)
LATHE_GEMV1_KERNEL(q6_k, 1, int8)
LATHE_GEMV1_KERNEL(q6_k, 2, int8x2)
