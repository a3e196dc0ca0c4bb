// Shared by every kernel file: fixed-width types, f16/bf16 loads, warp reductions. NVRTC compiles
// the library with no system headers, so this file uses only built-ins and cuda_fp16/bf16.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

typedef unsigned char uint8_t;
typedef signed char int8_t;
typedef unsigned short uint16_t;
typedef short int16_t;
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned long long uint64_t;
typedef long long int64_t;

// Thread block clusters (the cluster kernels: moe_route.cuh's router, rope_attention_o_cluster.cuh,
// rope_attention_qkv_o.cuh): the block's rank in its cluster, the cluster barrier's two halves, and
// distributed shared memory (an address of this block's shared memory mapped to cluster block `rank`'s,
// loads and stores there). Like the bulk copies and the tiles' TMA, these need compute capability 9.0,
// which the library as a whole takes (cuda_driver.h's gpu_available refuses earlier cards).
__device__ __forceinline__ unsigned lathe_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void lathe_cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void lathe_cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
__device__ __forceinline__ unsigned lathe_cluster_addr(unsigned local, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  return remote;
}
__device__ __forceinline__ float lathe_cluster_ld1(unsigned remote) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
}
__device__ __forceinline__ float2 lathe_cluster_ld2(unsigned remote) {
  float2 v;
  asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(remote) : "memory");
  return v;
}
__device__ __forceinline__ float4 lathe_cluster_ld4(unsigned remote) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(remote)
               : "memory");
  return v;
}
__device__ __forceinline__ void lathe_cluster_st1(unsigned remote, float v) {
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(remote), "f"(v) : "memory");
}

// The first statement of every kernel (programmatic dependent launch, runtime/cuda_driver.cpp): wait
// until the kernel before this one has finished and its writes are visible, then let the next kernel
// launch, so its launch and block scheduling overlap this kernel's work. Without a programmatic
// dependency (a plain launch) the wait returns at once.
__device__ __forceinline__ void lathe_pdl_entry() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// A logit and its token as one 64-bit key in the sampler's order (runtime/sampler.h: the larger value
// first, of equal values the lower token first; -0 as +0, NaN below every number), the larger key
// first: the float's bits made orderable as unsigned over ~index. top_candidates.cuh writes a row's
// best keys; sample_head.cuh reads them back (lathe_head_key_value, lathe_head_key_token).
// LATHE_HEAD_MAX: the longest head (kMaxTopCandidates, top_candidates_launch.h).
#define LATHE_HEAD_MAX 1024
__device__ __forceinline__ unsigned long long lathe_head_key(float v, unsigned index) {
  if (v == 0.0f) v = 0.0f;  // -0 as +0
  const unsigned u = __float_as_uint(v);
  unsigned ordered = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  if (v != v) ordered = 0u;
  return ((unsigned long long)ordered << 32) | (unsigned long long)(~index);
}
__device__ __forceinline__ double lathe_head_key_value(unsigned long long key) {
  const unsigned ordered = (unsigned)(key >> 32);
  const unsigned u = (ordered & 0x80000000u) ? (ordered & 0x7fffffffu) : ~ordered;
  return (double)__uint_as_float(u);
}
__device__ __forceinline__ int lathe_head_key_token(unsigned long long key) { return (int)~(unsigned)key; }

// The two halves of lathe_pdl_entry, for a kernel that lets its successor launch later than its start
// (a block that never releases releases when it exits).
__device__ __forceinline__ void lathe_pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void lathe_pdl_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// The persistent decode step (step_persistent.cuh) runs kernel bodies as phases of one cooperative
// launch; where a kernel waits for its predecessor (lathe_pdl_entry), a phase waits for every block
// to finish the phase before it: a grid barrier on a counter that only grows during the launch
// (phase i waits for it to reach (i + 1) * blocks). A body given no lathe_grid (a plain launch)
// waits as a kernel does.
struct lathe_grid {
  unsigned* count;  // zero when the launch begins; the launch's last block sets it back
  unsigned target;
};

// Every thread of the block calls it. The fence and the arrival publish the block's writes (after
// its barrier, every thread's); the acquire poll orders the block's later reads after every other
// block's writes (and discards the SM's L1 lines, so no stale activation of an earlier phase is
// read). Measured on the H200 (132 blocks): ~1.45 us a barrier; a release reduction with relaxed
// polls and one acquire fence took ~1.6.
__device__ __forceinline__ void lathe_grid_barrier(unsigned* count, unsigned target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(count, 1u);
    unsigned v;
    do {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(count) : "memory");
    } while (v < target);
  }
  __syncthreads();
}

__device__ __forceinline__ void lathe_step_wait(const lathe_grid* grid) {
  if (grid) lathe_grid_barrier(grid->count, grid->target);
  else lathe_pdl_entry();
}

// The same, releasing the next launch only where release is true: a kernel that lets its successor
// launch later calls lathe_pdl_release() itself (or its blocks release as they leave): the decode
// attention and the router's product (moe_route_epilogue.cuh).
__device__ __forceinline__ void lathe_step_wait(const lathe_grid* grid, bool release) {
  if (release) lathe_step_wait(grid);
  else if (grid) lathe_grid_barrier(grid->count, grid->target);
  else lathe_pdl_wait();
}

// A barrier of the first n threads of the block (named barrier 15; n a multiple of 32): a block
// body that a phase runs on some of the block's warps syncs with this, never __syncthreads.
__device__ __forceinline__ void lathe_sync_first(int n) { asm volatile("bar.sync 15, %0;\n" ::"r"(n) : "memory"); }

// The globaltimer in nanoseconds (the traces of the persistent step and the one-launch mixture).
__device__ __forceinline__ unsigned long long lathe_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

// ---- A product block's edge stamps (a measuring knob: LATHE_STAMPS, runtime/product_stamps.h, which
// compiles the library with LATHE_PRODUCT_STAMPS defined; without it these are empty and the kernels'
// machine code is what it is without them). The host points lathe_stamps at lathe_stamps_cap records
// of 12 words. A record: the weights' address; n_out | k << 32; smid << 32 | block; then the
// globaltimer (ns) at the block's entry, when its programmatic-launch wait (or grid barrier) returned,
// when x was in place for every warp, when warp 0's first chunk had landed, when the block's last warp
// finished; and three stamps inside x's staging by thread 0 (0 where the staging has fewer): the
// norm prologue's loads landed, its block sum, its quantization written; a copy's landing; a
// quantizing row's quantization written.
#define LATHE_STAMP_WORDS 12
struct lathe_block_stamps {  // in shared memory, one a block
  unsigned long long t[7];   // entry, wait, x, first, and the three inside x
  unsigned on, done;
  long long c1;  // LATHE_STAMP_CYCLES: the SM's clock64 at stamp 1 (below)
};
// LATHE_STAMP_CYCLES (a measuring define, with LATHE_STAMPS): stamps 2-6 record stamp 1's time plus
// the SM's clock64 cycles since it (1 cycle a "ns"), not the globaltimer; entry, wait and end stay on
// the globaltimer. A phase between two of those stamps then reads in thousands of cycles where
// product_stamps.py prints us: at the card's 1,980 MHz, 1.98 times its globaltimer figure where the
// clock runs at full speed (the twenty-ninth session's question: the chains that run twice their
// cycle counts in the step, on a slower clock or stalled).
#ifndef LATHE_STAMP_CYCLES
#define LATHE_STAMP_CYCLES 0
#endif
#ifdef LATHE_PRODUCT_STAMPS
extern "C" {
__device__ unsigned long long* lathe_stamps;
__device__ unsigned lathe_stamps_cap;
__device__ unsigned lathe_stamps_used;
}
// The block's stamps (every kernel that stamps has its own; a phase of the persistent step reuses
// its block's after the grid barrier).
__shared__ lathe_block_stamps lathe_stamps_block;

// Thread 0, first thing; the other warps read `on` only after a barrier of the whole block.
__device__ __forceinline__ void lathe_stamps_begin(lathe_block_stamps& s) {
  if (threadIdx.x == 0) {
    s.on = lathe_stamps != nullptr;
    s.done = 0;
    for (int j = 1; j < 7; ++j) s.t[j] = 0;  // 0: not passed (warp 0 had no chunk, no such step)
    if (s.on) s.t[0] = lathe_globaltimer();
  }
}

__device__ __forceinline__ void lathe_stamps_at(lathe_block_stamps& s, int i) {  // thread 0
  if (threadIdx.x != 0 || !s.on) return;
  if (LATHE_STAMP_CYCLES && i >= 2 && s.t[1] != 0) {
    s.t[i] = s.t[1] + static_cast<unsigned long long>(clock64() - s.c1);
    return;
  }
  s.t[i] = lathe_globaltimer();
  if (LATHE_STAMP_CYCLES && i == 1) s.c1 = clock64();
}

// Lane 0 of every warp of the block, after its last chunk; the last to get here writes the record.
__device__ __forceinline__ void lathe_stamps_end(lathe_block_stamps& s, const void* w, int n_out, int k) {
  if ((threadIdx.x & 31) != 0 || !s.on) return;
  __threadfence_block();  // this warp's stamps before its arrival
  if (atomicAdd(&s.done, 1u) != (blockDim.x >> 5) - 1) return;
  __threadfence_block();
  const unsigned long long t_end = lathe_globaltimer();
  const unsigned i = atomicAdd(&lathe_stamps_used, 1u);
  if (i >= lathe_stamps_cap) return;
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  unsigned long long* r = lathe_stamps + static_cast<unsigned long long>(LATHE_STAMP_WORDS) * i;
  r[0] = reinterpret_cast<unsigned long long>(w);
  r[1] = static_cast<unsigned>(n_out) | static_cast<unsigned long long>(static_cast<unsigned>(k)) << 32;
  r[2] = static_cast<unsigned long long>(smid) << 32 | blockIdx.x;
  for (int j = 0; j < 4; ++j) r[3 + j] = s.t[j];
  r[7] = t_end;
  for (int j = 4; j < 7; ++j) r[4 + j] = s.t[j];
}
// The kernels use these (so that without LATHE_PRODUCT_STAMPS they leave no trace in the machine
// code): a block's stamps declared and begun; stamp i; warp 0 waits for its first chunk (`wait`, a
// statement the warp's loop then passes at once) where it has one (`has`) and stamps it; the record;
// and, from code with no name for the block's stamps, slot i (LATHE_STAMP_SLOT: a slot the block
// has not used or no longer needs) and inside-x stamp j (LATHE_STAMP_X, in x's staging: slot 4 + j).
#define LATHE_BLOCK_STAMPS(s)                    \
  lathe_block_stamps& s = lathe_stamps_block; \
  lathe_stamps_begin(s)
#define LATHE_STAMP_SLOT(i) lathe_stamps_at(lathe_stamps_block, i)
#define LATHE_STAMP_AT(s, i) lathe_stamps_at(s, i)
#define LATHE_STAMP_FIRST(s, has, wait)                         \
  do {                                                          \
    if (s.on && (threadIdx.x >> 5) == 0 && (has)) {            \
      wait;                                                     \
      lathe_stamps_at(s, 3);                                    \
    }                                                           \
  } while (0)
#define LATHE_STAMP_END(s, w, n_out, k) lathe_stamps_end(s, w, n_out, k)
#else
#define LATHE_BLOCK_STAMPS(s) \
  do {                        \
  } while (0)
#define LATHE_STAMP_AT(s, i) \
  do {                       \
  } while (0)
#define LATHE_STAMP_FIRST(s, has, wait) \
  do {                                  \
  } while (0)
#define LATHE_STAMP_END(s, w, n_out, k) \
  do {                                  \
  } while (0)
#define LATHE_STAMP_SLOT(i) \
  do {                      \
  } while (0)
#endif
#define LATHE_STAMP_X(j) LATHE_STAMP_SLOT(4 + (j))

__device__ __forceinline__ float lathe_f16(const uint8_t* p) {
  return __half2float(*reinterpret_cast<const __half*>(p));
}

__device__ __forceinline__ float lathe_bf16(const uint8_t* p) {
  return __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(p));
}

// A residual held in fixed point (the feed-forward launch's sum, ffn_split.cuh: int64 in units of
// 2^-32) as f32: one rounding (int64 to f32), then an exact power-of-two scale. Every reader of such a
// sum converts it this one way.
__device__ __forceinline__ float lathe_fix_to_float(long long v) { return __ll2float_rn(v) * 0x1p-32f; }

// SwiGLU of one gate value g and up value u, silu(g) u, in f32 with IEEE division: every kernel that
// forms it (the elementwise op, the decode and mixture products' epilogues, the wgmma forms) forms it
// this one way, so fused and held-back paths agree bit for bit.
__device__ __forceinline__ float lathe_swiglu(float g, float u) { return g / (1.0f + expf(-g)) * u; }

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block from its 12 scale bytes s (as
// block_codecs.h's k4_scale_min).
__device__ __forceinline__ void lathe_k4_scale_min(const uint8_t* s, int j, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

__device__ __forceinline__ float lathe_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float lathe_warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// The sum over a block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
// `scratch` is 32 floats of shared memory.
__device__ __forceinline__ float lathe_block_sum(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = lathe_warp_sum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int n_warps = (blockDim.x + 31) >> 5;
  v = lane < n_warps ? scratch[lane] : 0.0f;
  return lathe_warp_sum(v);
}

// N words from a 2-byte aligned shared address: N + 1 aligned loads and funnel shifts (it may read
// up to 3 bytes past the last word, inside the staged row's padding). The GEMMs' weight unpacking.
template <int N>
__device__ __forceinline__ void lathe_gemm_words(const uint8_t* p, uint32_t* out) {
  const size_t a = reinterpret_cast<size_t>(p);
  const uint32_t* w = reinterpret_cast<const uint32_t*>(a & ~static_cast<size_t>(3));
  const unsigned sh = static_cast<unsigned>(a & 3) * 8;
  uint32_t prev = w[0];
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const uint32_t next = w[i + 1];
    out[i] = __funnelshift_r(prev, next, sh);
    prev = next;
  }
}

// ---- the int8 contracts' form of an activation (quantize_act.cuh documents it), made by whichever
// kernel produces the values: the quantizer itself, or a norm's or an elementwise run's epilogue.
__device__ __forceinline__ int lathe_quantize_level(float v, float d) {
  if (d == 0.0f) return 0;
  const int q = __float2int_rn(__fdiv_rn(v, d));
  return max(-127, min(127, q));
}

// The same numbers as the IEEE divisions above, without them (a division is ~10 instructions and a
// divergent slow path; the norm prologues quantize their whole row in every block, on the path):
//
// lathe_quantize_scale(m) = m / 127.0f for a block's largest magnitude m: m * rn(1/127) corrected by
// one fma of its exact remainder (Markstein), the correctly rounded quotient for every m in
// [2^-100, 2^100) (tests/test_quantize_gpu.cpp checks every one); elsewhere (0, subnormal,
// huge, not finite) the division itself.
__device__ __forceinline__ float lathe_quantize_scale(float m) {
  if (!(m >= 0x1p-100f && m < 0x1p100f)) return m / 127.0f;
  constexpr float c = 1.0f / 127.0f;
  const float q = m * c;
  return fmaf(fmaf(-q, 127.0f, m), c, q);
}

// l[i] = lathe_quantize_level(v[i], d) for N values of one scale d = lathe_quantize_scale(m), m the
// largest |v|. q = v * rcp(d) (rcp.approx: within 1 ulp) is within 2^-15 of v / d where |q| <= 128,
// and the IEEE quotient within 2^-18; the two round to one integer unless a half-integer lies
// between them. So where any q is within 2^-12 of a half-integer (1 value in ~2,000), or |q| > 128
// or not a number (d 0, subnormal, infinite, v infinite), all N take lathe_quantize_level.
template <int N>
__device__ __forceinline__ void lathe_quantize_levels(const float* v, float d, int* l) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
  if (r == 0.0f) r = __int_as_float(0x7fffffff);  // d past 2^126: every q a NaN, so the division
  bool exact = true;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const float q = v[i] * r, n = rintf(q);
    exact = exact && fabsf(q) <= 128.0f && fabsf(fabsf(q - n) - 0.5f) >= 0x1p-12f;
    l[i] = max(-127, min(127, __float2int_rn(n)));
  }
  if (!exact) {
#pragma unroll
    for (int i = 0; i < N; ++i) l[i] = lathe_quantize_level(v[i], d);
  }
}

// Called by a whole warp whose lane j holds value j of one 32-value block; `i` is the value's index
// in the [rows][k] array (so block i >> 5). q2 is written when two_words (int8x2).
__device__ __forceinline__ void lathe_quantize_block32(float v, long long i, int two_words, int8_t* q1,
                                                       int8_t* q2, float4* ds) {
  const int lane = threadIdx.x & 31;
  const float d1 = lathe_quantize_scale(lathe_warp_max(fabsf(v)));
  int l1, l2 = 0;
  lathe_quantize_levels<1>(&v, d1, &l1);
  q1[i] = static_cast<int8_t>(l1);
  float d2 = 0.0f;
  if (two_words) {
    const float res = fmaf(-d1, static_cast<float>(l1), v);
    d2 = lathe_quantize_scale(lathe_warp_max(fabsf(res)));
    lathe_quantize_levels<1>(&res, d2, &l2);
    q2[i] = static_cast<int8_t>(l2);
  }
  const float s1 = lathe_warp_sum(static_cast<float>(l1)), s2 = lathe_warp_sum(static_cast<float>(l2));  // exact
  if (lane == 0) ds[i >> 5] = make_float4(d1, d2, fmaf(d1, s1, d2 * s2), 0.0f);
}

// The same quantization of one 32-value block by 8 threads of a warp (lanes 8g..8g+7, 4 values
// each, one 16-byte load): a block's prologue quantizes a row four blocks a warp per pass. Bit-
// identical to lathe_quantize_block32 (maxima and sums of integer levels do not depend on order).
// f: this thread's 4 values (values 4 * (lane & 7) .. of its group's block); q1, q2: this thread's 4
// bytes of the block's levels (q2 written when two_words); ds: the block's float4, written by the
// group's first thread. Called by whole warps (8-lane shuffles).
__device__ __forceinline__ void lathe_quantize_block32_part(float4 f, int two_words, int8_t* q1, int8_t* q2,
                                                            float4* ds) {
  float v[4] = {f.x, f.y, f.z, f.w};
  float m1 = fmaxf(fmaxf(fabsf(v[0]), fabsf(v[1])), fmaxf(fabsf(v[2]), fabsf(v[3])));
  for (int o = 4; o > 0; o >>= 1) m1 = fmaxf(m1, __shfl_xor_sync(0xffffffffu, m1, o, 8));
  const float d1 = lathe_quantize_scale(m1);
  int l1[4];
  float s1 = 0.0f, m2 = 0.0f;
  lathe_quantize_levels<4>(v, d1, l1);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    s1 += static_cast<float>(l1[i]);
    v[i] = fmaf(-d1, static_cast<float>(l1[i]), v[i]);  // the residual
    m2 = fmaxf(m2, fabsf(v[i]));
  }
  *reinterpret_cast<int*>(q1) = (l1[0] & 0xff) | ((l1[1] & 0xff) << 8) | ((l1[2] & 0xff) << 16) | ((l1[3] & 0xff) << 24);
  float d2 = 0.0f, s2 = 0.0f;
  if (two_words) {
    for (int o = 4; o > 0; o >>= 1) m2 = fmaxf(m2, __shfl_xor_sync(0xffffffffu, m2, o, 8));
    d2 = lathe_quantize_scale(m2);
    int w = 0, l2[4];
    lathe_quantize_levels<4>(v, d2, l2);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      s2 += static_cast<float>(l2[i]);
      w |= (l2[i] & 0xff) << (8 * i);
    }
    *reinterpret_cast<int*>(q2) = w;
  }
  for (int o = 4; o > 0; o >>= 1) {
    s1 += __shfl_xor_sync(0xffffffffu, s1, o, 8);
    s2 += __shfl_xor_sync(0xffffffffu, s2, o, 8);
  }
  if ((threadIdx.x & 7) == 0) *ds = make_float4(d1, d2, fmaf(d1, s1, d2 * s2), 0.0f);
}

// ---- a mixture's router choice (route.cuh, moe_route.cuh), one warp a row: softmax over all
// experts, the top k by logit in falling order (equal logits, +0 and -0 included, go to the lower
// index, as the interpreter's), their probabilities renormalized over the kept k when asked.
__device__ __forceinline__ unsigned long long lathe_route_key(float v, unsigned index) {
  const unsigned u = v == 0.0f ? 0u : __float_as_uint(v);  // -0 ranks as +0
  unsigned ordered = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  if (v != v) ordered = 0u;  // NaN (a chosen expert) ranks below every number
  return (static_cast<unsigned long long>(ordered) << 32) | static_cast<unsigned long long>(~index);
}

// A row's softmax max and sum of exponentials by one warp (lanes e, e + 32, ...; warp reductions), the
// one order every router's top k uses.
__device__ __forceinline__ void lathe_route_softmax_warp(const float* sl, int n_expert, float& max, float& sum) {
  const int lane = threadIdx.x & 31;
  max = __int_as_float(0xff800000);
  for (int e = lane; e < n_expert; e += 32) max = fmaxf(max, sl[e]);
  max = lathe_warp_max(max);
  sum = 0.0f;
  for (int e = lane; e < n_expert; e += 32) sum += expf(sl[e] - max);
  sum = lathe_warp_sum(sum);
}

// The last block out of a launch with grid barriers (lathe_grid_barrier on sync[0]) sets its counters
// back to zero, sync[1] counting the blocks out: every block has left its last wait when it counts
// out, so a captured graph replays the launch. Thread 0 of every block calls it, last.
__device__ __forceinline__ void lathe_grid_count_out(unsigned* sync) {
  __threadfence();
  if (atomicAdd(sync + 1, 1u) == gridDim.x - 1) {
    sync[0] = 0;
    sync[1] = 0;
    __threadfence();
  }
}

// sl: the row's n_expert logits in shared memory (not NaN; chosen ones are overwritten by NaN).
// Writes ids [k] int32 and weights [k] f32.
__device__ __forceinline__ void lathe_route_top_k_warp(float* sl, int n_expert, int k, int renormalize, int* ids,
                                                       float* weights) {
  const int lane = threadIdx.x & 31;
  float max, sum;
  lathe_route_softmax_warp(sl, n_expert, max, sum);
  __syncwarp();
  float kept = 0.0f;
  for (int i = 0; i < k; ++i) {
    unsigned long long best = 0ull;
    for (int e = lane; e < n_expert; e += 32) {
      const unsigned long long key = lathe_route_key(sl[e], static_cast<unsigned>(e));
      best = key > best ? key : best;
    }
    for (int o = 16; o > 0; o >>= 1) {
      const unsigned long long other = __shfl_xor_sync(0xffffffffu, best, o);
      best = other > best ? other : best;
    }
    const int e = static_cast<int>(~static_cast<unsigned>(best));
    const float p = expf(sl[e] - max) / sum;  // every lane reads sl[e] before lane 0 marks it
    kept += p;
    __syncwarp();
    if (lane == 0) {
      ids[i] = e;
      weights[i] = p;
      sl[e] = __int_as_float(0x7fc00000);  // NaN: never chosen again
    }
    __syncwarp();
  }
  if (renormalize)
    for (int i = lane; i < k; i += 32) weights[i] /= kept;
}
