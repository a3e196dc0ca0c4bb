// The pieces of the warp-specialized int8 GEMM (gemm_ws_kernel.cuh): shared-memory layout, mbarrier and
// named-barrier wrappers, and the producer's loads. It reuses gemm_blocks.cuh's cp.async, ldmatrix, mma
// and unpackers (that file sorts, and so compiles, before this one).
//
// Shared memory (LatheGemmWsLayout; gemm_launch.cpp's gemm_ws_shared_bytes mirrors it):
//   S stages, each what the consumers read for one 256-value k-tile:
//     x1 [BM][256] int8 swizzled, x2 likewise (int8x2 only),
//     ds [8][BM][DSW] float: the words of the quantizer's float4 (d1, d2, block sum, -) the format
//        and contract use, DSW = 4 (q4_K: it needs the sum), 2 (int8x2), else 1,
//     levels [BN][256] int8 swizzled, scale [8][BN] float, minus [8][BN] float (q4_K only),
//     sub [16][BN] int8 (q6_K only): gemm_blocks.cuh's unpacked form;
//   2 raw slots [BN][w_stride]: the GGUF bytes of a k-tile's weight rows, read only by producers;
//   2 S mbarriers: full[s] (each producer thread arrives once the stage is unpacked and its x / ds
//   copies are in) and empty[s] (each consumer thread arrives when done reading the stage).

#define LATHE_GEMM_WS_CONSUMERS 256  // 8 warps: 2 along rows x 4 along outputs, as gemm_int8.cuh's
#define LATHE_GEMM_WS_PRODUCERS 128  // 4 warps: load, unpack
#define LATHE_GEMM_WS_THREADS 384

template <class F, bool X2, int BM, int BN, int S>
struct LatheGemmWsLayout {
  static constexpr int dsw = F::has_min ? 4 : (X2 ? 2 : 1);
  static constexpr int x_bytes = BM * 256;
  static constexpr int ds_at = x_bytes * (X2 ? 2 : 1);
  static constexpr int levels_at = ds_at + BM * 8 * dsw * 4;
  static constexpr int scale_at = levels_at + BN * 256;
  static constexpr int minus_at = scale_at + BN * 32;
  static constexpr int sub_at = minus_at + (F::has_min ? BN * 32 : 0);
  static constexpr int stage_bytes = sub_at + (F::sub16 ? BN * 16 : 0);  // a multiple of 16
  static constexpr int w_stride = (F::lines | 1) * 16;  // an odd count of lines, as gemm_int8.cuh's
  static constexpr int raw_at = S * stage_bytes;
  static constexpr int raw_bytes = BN * w_stride;
  static constexpr int bars_at = raw_at + 2 * raw_bytes;
  static constexpr int total = bars_at + 2 * S * 8;
  static_assert(total <= 232448, "more shared memory than a Hopper block may have");
};

__device__ __forceinline__ unsigned lathe_gemm_ws_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void lathe_gemm_ws_bar_init(uint64_t* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(lathe_gemm_ws_addr(bar)), "r"(count) : "memory");
}

// Release: this thread's earlier shared-memory reads and writes (and its completed cp.async copies)
// happen before whatever a thread that waits on the completed phase does next.
__device__ __forceinline__ void lathe_gemm_ws_bar_arrive(uint64_t* bar) {
  asm volatile(
      "{\n .reg .b64 state;\n mbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(lathe_gemm_ws_addr(bar))
      : "memory");
}

// Acquire: returns once the phase of the given parity has completed. A fresh barrier is in phase 0,
// so waiting for parity 1 returns at once (the producer's first pass over the empty ring).
__device__ __forceinline__ void lathe_gemm_ws_bar_wait(uint64_t* bar, unsigned parity) {
  const unsigned a = lathe_gemm_ws_addr(bar);
  unsigned done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(a), "r"(parity)
        : "memory");
  } while (!done);
}

// Named barrier 1 over the producer warps only (the consumers never wait on it).
__device__ __forceinline__ void lathe_gemm_ws_producers_sync() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(LATHE_GEMM_WS_PRODUCERS) : "memory");
}

// Waits until at most 2 of this thread's cp.async groups are still in flight.
__device__ __forceinline__ void lathe_gemm_ws_wait_2() { asm volatile("cp.async.wait_group 2;\n" ::: "memory"); }

// N (4, 8, 16) bytes; 0 bytes read (zero-fill) when !valid.
template <int N>
__device__ __forceinline__ void lathe_gemm_ws_cp(void* smem, const void* g, bool valid) {
  const unsigned s = lathe_gemm_ws_addr(smem);
  const int n = valid ? N : 0;
  if (N == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(g), "r"(n) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(s), "l"(g), "n"(N), "r"(n) : "memory");
}

// The raw weight bytes of k-tile kt for outputs n0 .. n0 + BN - 1: each row's span of 16-byte lines
// from the line holding its first byte (lines past the span and rows >= n_out are zero-filled).
template <class F, int BN, int WSTRIDE>
__device__ __forceinline__ void lathe_gemm_ws_load_w(uint8_t* raw, const uint8_t* w, long long row_bytes, int k,
                                                     int n_out, int n0, int kt, int pt) {
  const int n_blocks = min(8, (k >> 5) - kt * 8);
  const int need = F::tile_bytes == 272 ? 34 * n_blocks : F::tile_bytes;
  for (int i = pt; i < BN * F::lines; i += LATHE_GEMM_WS_PRODUCERS) {
    const int r = i / F::lines, l = i - r * F::lines;
    const long long base = static_cast<long long>(n0 + r) * row_bytes + static_cast<long long>(kt) * F::tile_bytes;
    const bool valid = n0 + r < n_out && l * 16 < static_cast<int>(base & 15) + need;
    lathe_gemm_cp16(raw + r * WSTRIDE + l * 16, valid ? w + (base & ~15ll) + l * 16 : w, valid);
  }
}

// The activation levels and the used words of ds for k-tile kt, rows m0 .. m0 + BM - 1, into a stage
// (rows >= n_rows and blocks past k zero-filled, so every staged value is finite).
template <class L, bool X2, int BM>
__device__ __forceinline__ void lathe_gemm_ws_load_x(uint8_t* stage, const int8_t* q1, const int8_t* q2,
                                                     const float4* ds, int n_rows, int k, int m0, int kt, int pt) {
  const int k0 = kt * 256, n_blocks = min(8, (k >> 5) - kt * 8);
  for (int i = pt; i < BM * 16; i += LATHE_GEMM_WS_PRODUCERS) {
    const int r = i >> 4, c = i & 15;
    const bool valid = m0 + r < n_rows && k0 + 16 * c < k;
    const long long at = static_cast<long long>(m0 + r) * k + k0 + 16 * c;
    lathe_gemm_cp16(stage + lathe_gemm_swz(r, c), valid ? q1 + at : q1, valid);
    if (X2) lathe_gemm_cp16(stage + L::x_bytes + lathe_gemm_swz(r, c), valid ? q2 + at : q2, valid);
  }
  for (int i = pt; i < BM * 8; i += LATHE_GEMM_WS_PRODUCERS) {
    const int r = i >> 3, b = i & 7;
    const bool valid = m0 + r < n_rows && b < n_blocks;
    const float4* src = ds + static_cast<long long>(m0 + r) * (k >> 5) + kt * 8 + b;
    lathe_gemm_ws_cp<L::dsw * 4>(stage + L::ds_at + (b * BM + r) * L::dsw * 4, valid ? src : ds, valid);
  }
}

// The (d1, d2, block sum) of a staged ds entry; the words a DSW leaves out read as 0.
template <int DSW>
__device__ __forceinline__ float4 lathe_gemm_ws_dx(const float* p) {
  if (DSW == 4) return *reinterpret_cast<const float4*>(p);
  if (DSW == 2) {
    const float2 v = *reinterpret_cast<const float2*>(p);
    return make_float4(v.x, v.y, 0.0f, 0.0f);
  }
  return make_float4(p[0], 0.0f, 0.0f, 0.0f);
}
