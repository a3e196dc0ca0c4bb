// The persistent decode step: a run of a decode step's launches as the phases of ONE cooperative
// launch, one block an SM, the blocks walking the phases in order with a grid barrier (common.cuh's
// lathe_grid_barrier) where each launch would have waited for the one before it.
//
// Why: a decode launch pays a fixed few microseconds (its ring filling from DRAM, its blocks'
// prologue, the tail of its last rows) that a 4,096-wide matrix's 4-6 us of streaming cannot hide
// (docs/perf.md). Here a block that finishes its share of a product goes straight on to the next
// product: its ring's bulk copies and L2 requests for the next weights go out BEFORE the barrier that
// waits for the rest of the card, and the warps a small phase leaves idle (rope, attention) ask L2
// for the next product's first weights meanwhile. So the weights stream without draining.
// Measured on the H200 (docs/perf.md): slower than the graph of kernels so far (qwen3-8b Q8_0 tg128
// 242 against 306): the products stream no faster here, the barrier costs ~1.45 us, and the rope and
// attention phases cost more (the attention spills under this kernel's 128 registers). Off by default.
//
// Phases run the kernels' own bodies with the launch's own arguments (the host copies each launch's
// parameter bytes into its phase; the structs below mirror the kernels' parameter lists, which the
// host checks against the driver's offsets), so a phase computes what its kernel computes:
// - products (gemv_decode.cuh, gemv_multi.cuh): every block of the launch runs the body; their rows
//   are dealt over the launch's blocks, and a row's sum does not depend on which block makes it, so
//   the results are the kernel's bit for bit. The body's own wait (lathe_step_wait) is the barrier.
// - rope_append and the decode attention: the kernel's blocks become virtual blocks dealt over the
//   launch's blocks, each run by the first `threads` threads (named barrier 15, lathe_sync_first);
//   the other warps ask L2 for the next product's weights.
// Every phase ends with __syncthreads: a block's shared memory is one phase's at a time.
// Launch (runtime/persistent_step.cpp): grid = SM count (cooperative: all resident), 512 threads,
// dynamic shared memory the largest of its phases'; sync = 2 words, zero at the start and set back
// to zero by the launch's last block, so a captured graph replays it.

enum lathe_phase_kind {
  lathe_phase_gemv1_q8_0 = 1,
  lathe_phase_gemv1_q4_k,
  lathe_phase_gemv1_q6_k,
  lathe_phase_gemvm_q8_0,
  lathe_phase_gemvm_q4_k,
  lathe_phase_gemvm_q6_k,
  lathe_phase_gemvm_q4_k_q6_k,
  lathe_phase_rope_append,
  lathe_phase_attn_decode_64,
  lathe_phase_attn_decode_128,
  lathe_phase_attn_decode_256,
};

// 336 bytes (runtime/persistent_step.cpp mirrors it).
struct lathe_phase {
  int kind;                     // lathe_phase_kind
  int grid_x, grid_y, grid_z;   // the kernel's launch grid
  int threads;                  // the kernel's block size
  int early;                    // products: at least this many chunks a warp asked for before the barrier
  uint64_t prefetch[3];         // the next product's weights (device addresses; 0: none)
  uint64_t prefetch_bytes[3];   // how much of each the idle warps ask L2 for
  uint4 params[16];             // the launch's parameter bytes, as cuLaunchKernel lays them out
};

struct lathe_gemv1_params {
  const uint8_t* w;
  long long row_bytes;
  const int8_t* xq;
  float* y;
  int k, n_out, group, early;
  const float* xf;
};

struct lathe_gemvm_params {
  const uint8_t *w0, *w1, *w2;
  float *y0, *y1, *y2;
  long long rb0, rb1, rb2;
  int n0, n1, n2, b_mask, swiglu;
  const int8_t* xq;
  int k, group, early;
  const float *nx, *ny, *nw;
  float eps;
  float* nsum;
  int8_t* qout;
  const float* xparts;  // norm_epilogue's (held back in the persistent step: null)
  int n_parts;
};

struct lathe_rope_append_params {
  float *q, *k;
  const float* v;
  const int *positions, *sequences;
  int hq, hk, d, n_rot;
  const double* freq;
  double position_scale;
  int neox;
  const float *q_weight, *k_weight;
  int norm;
  float eps;
  __half *k_cache, *v_cache;
  int n_ctx;
};

struct lathe_attn_decode_params {
  const float* q;
  const __half *k_cache, *v_cache;
  const int *sequences, *positions;
  float *out, *part_o;
  float2* part_ml;
  int n_head, n_head_kv, n_ctx, window, split_min, n_split;
  float scale, cap;
  const float* sinks;
  int* tickets;
  int8_t* qout;
  int q_words, q_rows;
};

// The host (runtime/persistent_step.cpp) checks each kernel's parameter table against these sizes.
static_assert(sizeof(lathe_phase) == 336, "lathe_phase");
static_assert(sizeof(lathe_gemv1_params) == 56, "lathe_gemv1_* parameters");
static_assert(sizeof(lathe_gemvm_params) == 184, "lathe_gemvm_* parameters");
static_assert(sizeof(lathe_rope_append_params) == 128, "lathe_rope_append parameters (124 bytes used)");
static_assert(sizeof(lathe_attn_decode_params) == 128, "lathe_attn_decode_* parameters");

template <class F, int C>
__device__ __forceinline__ void lathe_step_gemv1(const lathe_phase& ph, const lathe_grid* g) {
  const lathe_gemv1_params& p = *reinterpret_cast<const lathe_gemv1_params*>(ph.params);
  lathe_gemv1_body<F, C>(p.w, p.row_bytes, p.xq, p.y, p.k, p.n_out, p.group, max(p.early, ph.early), p.xf, g);
}

template <class FA, class FB, int C>
__device__ __forceinline__ void lathe_step_gemvm(const lathe_phase& ph, const lathe_grid* g) {
  const lathe_gemvm_params& p = *reinterpret_cast<const lathe_gemvm_params*>(ph.params);
  // The quantizing form (lathe_gemvm_*_quantizing) is no phase kind: its launches stay launches.
  lathe_gemvm_body<FA, FB, C, false>(p.w0, p.w1, p.w2, p.y0, p.y1, p.y2, p.rb0, p.rb1, p.rb2, p.n0, p.n1, p.n2,
                                     p.b_mask, p.swiglu, p.xq, p.k, p.group, max(p.early, ph.early), p.nx, p.ny, p.nw,
                                     p.eps, p.nsum, nullptr, p.xparts, p.n_parts, g);
}

// The idle warps' share (warp i of n) of the L2 requests for the next product's first bytes: the
// block's slice of each span, in 16 KB requests.
__device__ __forceinline__ void lathe_step_prefetch(const lathe_phase& ph, int i, int n) {
  const int lane = threadIdx.x & 31;
  for (int s = 0; s < 3; ++s) {
    const unsigned long long bytes = ph.prefetch_bytes[s] & ~15ull;
    if (!ph.prefetch[s] || !bytes) continue;
    const unsigned long long share = ((bytes + gridDim.x - 1) / gridDim.x + 15) & ~15ull;
    const unsigned long long begin = share * blockIdx.x, end = min(bytes, begin + share);
    for (unsigned long long at = begin + 16384ull * (i * 32 + lane); at < end; at += 16384ull * n * 32)
      lathe_prefetch_l2(reinterpret_cast<const void*>(ph.prefetch[s] + at),
                        static_cast<unsigned>(min(16384ull, end - at)));
  }
}

// A phase of virtual blocks: the grid barrier, then the kernel's blocks b, b + gridDim.x, ... on the
// first ph.threads threads. Rope's first part (its angles: rope.cuh) goes before the barrier.
// Not inlined: registers are allocated per function, so the attention's needs (166 registers as a
// kernel of 128 threads, at most 128 here) spill inside it and not in the products' loops.
template <int D>
__device__ __noinline__ void lathe_step_virtual(const lathe_phase& ph, unsigned* sync, unsigned target) {
  const int threads = ph.threads;
  const int n_virtual = ph.grid_x * ph.grid_y * ph.grid_z;
  const bool active = static_cast<int>(threadIdx.x) < threads;
  if constexpr (D == 0) {
    const lathe_rope_append_params& p = *reinterpret_cast<const lathe_rope_append_params*>(ph.params);
    const int v = blockIdx.x;
    if (active && v < n_virtual)
      lathe_rope_append_angles(p.positions, p.hq, p.hk, p.d, p.n_rot, p.freq, p.position_scale, p.q_weight, p.k_weight,
                               p.norm, v % ph.grid_x, v / ph.grid_x, threads);
  }
  lathe_grid_barrier(sync, target);
  if (!active) {
    const int first_idle = threads >> 5;
    lathe_step_prefetch(ph, (threadIdx.x >> 5) - first_idle, (blockDim.x >> 5) - first_idle);
    return;
  }
  for (int v = blockIdx.x; v < n_virtual; v += gridDim.x) {
    const int x = v % ph.grid_x, y = (v / ph.grid_x) % ph.grid_y, z = v / (ph.grid_x * ph.grid_y);
    if constexpr (D == 0) {
      const lathe_rope_append_params& p = *reinterpret_cast<const lathe_rope_append_params*>(ph.params);
      if (v != static_cast<int>(blockIdx.x))  // a second virtual block of this block: its own angles
        lathe_rope_append_angles(p.positions, p.hq, p.hk, p.d, p.n_rot, p.freq, p.position_scale, p.q_weight,
                                 p.k_weight, p.norm, x, y, threads);
      lathe_sync_first(threads);
      lathe_rope_append_heads(p.q, p.k, p.v, p.positions, p.sequences, p.hq, p.hk, p.d, p.n_rot, p.neox, p.q_weight,
                              p.k_weight, p.norm, p.eps, p.k_cache, p.v_cache, p.n_ctx, x, y, threads);
    } else {
      const lathe_attn_decode_params& p = *reinterpret_cast<const lathe_attn_decode_params*>(ph.params);
      // The launch's block size names the body: 8 warps (attention_launch.cpp's default for D <= 128)
      // or 4.
      constexpr int kWide = D <= 128 ? 8 : ATTD_WARPS;
      if (threads == 32 * kWide)
        attd_decode<D, kWide>(p.q, p.k_cache, p.v_cache, p.sequences, p.positions, p.out, p.part_o, p.part_ml,
                              p.n_head, p.n_head_kv, p.n_ctx, p.window, p.split_min, p.n_split, p.scale, p.cap,
                              p.sinks, p.tickets, p.qout, p.q_words, p.q_rows, x, y, z, ph.grid_y, 0);
      else
        attd_decode<D>(p.q, p.k_cache, p.v_cache, p.sequences, p.positions, p.out, p.part_o, p.part_ml, p.n_head,
                       p.n_head_kv, p.n_ctx, p.window, p.split_min, p.n_split, p.scale, p.cap, p.sinks, p.tickets,
                       p.qout, p.q_words, p.q_rows, x, y, z, ph.grid_y, 0);
    }
    lathe_sync_first(threads);  // the virtual block's shared memory is free for the next
  }
}

// trace (LATHE_PERSISTENT_TRACE=1; else null): block 0 writes the time each phase begins and, last,
// the time it ends its last phase (n_phases + 1 values); then every block the time it finished each
// phase's work (n_phases * gridDim.x values): the phases' times and their tails.
template <int C, bool Small>
__device__ __forceinline__ void lathe_step_run(const lathe_phase* phases, int n_phases, unsigned* sync,
                                               unsigned long long* trace) {
  for (int i = 0; i < n_phases; ++i) {
    const lathe_phase& ph = phases[i];
    if (trace && blockIdx.x == 0 && threadIdx.x == 0) trace[i] = lathe_globaltimer();
    const unsigned target = static_cast<unsigned>(i + 1) * gridDim.x;
    const lathe_grid g{sync, target};
    switch (ph.kind) {
      case lathe_phase_gemv1_q8_0: lathe_step_gemv1<lathe_gemv1_q8_0, C>(ph, &g); break;
      case lathe_phase_gemv1_q4_k: lathe_step_gemv1<lathe_gemv1_q4_k, C>(ph, &g); break;
      case lathe_phase_gemv1_q6_k: lathe_step_gemv1<lathe_gemv1_q6_k, C>(ph, &g); break;
      case lathe_phase_gemvm_q8_0: lathe_step_gemvm<lathe_gemv1_q8_0, lathe_gemv1_q8_0, C>(ph, &g); break;
      case lathe_phase_gemvm_q4_k: lathe_step_gemvm<lathe_gemv1_q4_k, lathe_gemv1_q4_k, C>(ph, &g); break;
      case lathe_phase_gemvm_q6_k: lathe_step_gemvm<lathe_gemv1_q6_k, lathe_gemv1_q6_k, C>(ph, &g); break;
      case lathe_phase_gemvm_q4_k_q6_k: lathe_step_gemvm<lathe_gemv1_q4_k, lathe_gemv1_q6_k, C>(ph, &g); break;
      case lathe_phase_rope_append:
        if constexpr (Small) lathe_step_virtual<0>(ph, sync, target);
        else lathe_grid_barrier(sync, target);
        break;
      case lathe_phase_attn_decode_64:
        if constexpr (Small) lathe_step_virtual<64>(ph, sync, target);
        else lathe_grid_barrier(sync, target);
        break;
      case lathe_phase_attn_decode_128:
        if constexpr (Small) lathe_step_virtual<128>(ph, sync, target);
        else lathe_grid_barrier(sync, target);
        break;
      case lathe_phase_attn_decode_256:
        if constexpr (Small) lathe_step_virtual<256>(ph, sync, target);
        else lathe_grid_barrier(sync, target);
        break;
      default: lathe_grid_barrier(sync, target); break;  // the host never writes another kind
    }
    __syncthreads();  // the block's shared memory belongs to the next phase
    if (trace && threadIdx.x == 0) trace[n_phases + 1 + i * gridDim.x + blockIdx.x] = lathe_globaltimer();
  }
  if (trace && blockIdx.x == 0 && threadIdx.x == 0) trace[n_phases] = lathe_globaltimer();
  if (threadIdx.x == 0) lathe_grid_count_out(sync);
}

#define LATHE_STEP_KERNEL(C, SMALL, NAME)                                                     \
  extern "C" __global__ void __launch_bounds__(32 * LATHE_GEMV1_WARPS, 1) NAME(                \
      const lathe_phase* phases, int n_phases, unsigned* sync, unsigned long long* trace) {   \
    lathe_step_run<C, SMALL>(phases, n_phases, sync, trace);                                  \
  }

LATHE_STEP_KERNEL(1, true, lathe_step_persistent_int8)
LATHE_STEP_KERNEL(2, true, lathe_step_persistent_int8x2)
// For measuring only (LATHE_PERSISTENT_KERNEL=products): the products alone, the small phases'
// barriers without their work (wrong results): how much the small phases' registers cost the products.
LATHE_STEP_KERNEL(2, false, lathe_step_persistent_products_int8x2)
