// A decode row's feed-forward half in one launch, down split along its input (docs/perf.md, thirty-
// fourth session: scripts/probes/ffn_probe.cu measured the form before it was built). Taken by the
// lane's plan under the fusion rule ffn_split (plan/step_plan_ffn.cpp); ffn_split_launch.h says what
// it computes and what the plan gives it.
//
// Block b owns the intermediate values j in [32 b, 32 b + 32):
//   s = (s_in * 2^-32 where s_in is given, else x) + y (y optional)     [E]  (every block forms all of s)
//   h = s * rsqrt(sum s^2 / E + eps) * norm_w, quantized under the contract (quantize_act.cuh's levels)
//   a_j = silu(gate_j . h) * (up_j . h), the block's 32 values quantized the same way
//   p_r = down[r][32 b .. 32 b + 31] . a   for every r < E
//   s_out[r] += fix(p_r)  (red.add on int64, unit 2^-32); block 0 adds fix(s_r) too, so after the
//   launch s_out = fix(s) + sum over blocks of fix(p): the next residual, in fixed point.
//   zero[r] = 0 (the sum the launch after next adds into, which the launch before this one read).
// Integer adds in any order give the same sum, so the result is the same bits every run. fix(v) =
// rint(v * 2^32), clamped to +-2^62 (a value beyond 2^30 in magnitude, or not finite, is not held).
//
// Weights: gate and up rows in place (Q8_0, E / 32 blocks of 34 bytes a row); down re-laid by slices
// (ffn_split_launch.h's relay_down_by_slices): slice b is E consecutive Q8_0 blocks, block r holding
// down[r][32 b .. 32 b + 31]. The block's 32 gate rows, 32 up rows and its slice are asked for (cp.async,
// 16 bytes a request) before the wait for the launch before: they are constants, so their reads overlap
// that launch's tail; all of them stay in shared memory (the launcher takes E where they fit). The _lv
// kernels read gate, up and the slices in the levels layout instead (ffn_split_launch.h's
// relay_q8_0_levels over each 32-row group of gate and up and over each slice: the same bytes a
// group, so the same copies), which lathe_ffns_block_dot_lv reads without bank conflicts.
// Launch: grid (F / 32), 512 threads, ffn_split_shared_bytes(E) of dynamic shared memory; E % 256 == 0.
// stamps (0, or [gridDim.x][8] globaltimer readings by thread 0, a measurement): entry, the weights
// asked for, the wait returned, s and its norm, h's levels and the weights landed, the SwiGLU values,
// a's levels, the end.

#define LATHE_FFNS_THREADS 512

__device__ __forceinline__ void lathe_ffns_copy16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}

// 8 words at the 2-byte aligned shared-memory address a: 9 aligned ld.shared and funnel shifts. (Shared
// addresses, not generic pointers: through a generic pointer nvcc emits generic loads, LD.E, which the
// split launch's stamps put at ~2 us of its gate/up phase.)
__device__ __forceinline__ void lathe_ffns_words8(unsigned a, uint32_t* out) {
  const unsigned w = a & ~3u, sh = (a & 3u) * 8u;
  uint32_t v[9];
#pragma unroll
  for (int i = 0; i < 9; ++i) asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v[i]) : "r"(w + 4 * i));
#pragma unroll
  for (int i = 0; i < 8; ++i) out[i] = __funnelshift_r(v[i], v[i + 1], sh);
}

// The 32 levels in w (8 words) times the 32 at q (16-byte aligned shared memory), summed in order.
__device__ __forceinline__ int lathe_ffns_dot32(const uint32_t* w, const int8_t* q) {
  const int4 a0 = *reinterpret_cast<const int4*>(q), a1 = *reinterpret_cast<const int4*>(q + 16);
  const int a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
  int s = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) s = __dp4a(static_cast<int>(w[i]), a[i], s);
  return s;
}

// The Q8_0 block at shared address p (2-byte aligned: d as f16, then 32 levels) times 32 values of x
// (levels q1, and q2 when two words, with their scales d1, d2): d * (d1 * q1 . l + d2 * q2 . l).
template <int C>
__device__ __forceinline__ float lathe_ffns_block_dot(unsigned p, const int8_t* q1, const int8_t* q2, float d1,
                                                      float d2) {
  uint32_t w[8];
  lathe_ffns_words8(p + 2, w);
  unsigned short dh;
  asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(dh) : "r"(p));
  const float d = __half2float(__ushort_as_half(dh));
  float v = d1 * static_cast<float>(lathe_ffns_dot32(w, q1));
  if (C == 2) v = fmaf(d2, static_cast<float>(lathe_ffns_dot32(w, q2)), v);
  return d * v;
}

// The levels layout (Lv; ffn_split_launch.h's relay_q8_0_levels): a group of n Q8_0 blocks held as
// their first 16 levels [n][16], their last 16 [n][16], then their scales [n] (f16): block i of the
// group at shared address p times 32 values of x, as lathe_ffns_block_dot. A warp's lanes reading
// consecutive blocks read consecutive 16-byte words (no bank conflicts: two 16-byte loads a block
// where the packed form takes nine 4-byte loads at a 34-byte stride, two lanes a bank).
template <int C>
__device__ __forceinline__ float lathe_ffns_block_dot_lv(unsigned p, int n, int i, const int8_t* q1, const int8_t* q2,
                                                         float d1, float d2) {
  uint32_t w[8];
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
               : "r"(p + 16u * i));
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(w[4]), "=r"(w[5]), "=r"(w[6]), "=r"(w[7])
               : "r"(p + 16u * (n + i)));
  unsigned short dh;
  asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(dh) : "r"(p + 32u * n + 2u * i));
  const float d = __half2float(__ushort_as_half(dh));
  float v = d1 * static_cast<float>(lathe_ffns_dot32(w, q1));
  if (C == 2) v = fmaf(d2, static_cast<float>(lathe_ffns_dot32(w, q2)), v);
  return d * v;
}

// fix(v): v in units of 2^-32 as an int64 (the header's clamp).
__device__ __forceinline__ unsigned long long lathe_ffns_fix(float v) {
  const double f = fmin(fmax(static_cast<double>(v) * 0x1p32, -0x1p62), 0x1p62);
  return static_cast<unsigned long long>(__double2ll_rn(f));
}

// From the weights and h's levels in shared memory on (the caller waited for them and synced): the
// block's 32 gate/up pairs, their SwiGLU values a, a's levels, and down's slice times a, each row's
// partial times wscale added into s_out in fixed point.
template <int C, bool Lv>
__device__ __forceinline__ void lathe_ffns_products(unsigned sg, unsigned su, unsigned sd, long long rb, int nb, int E,
                                                    const float4* xd, const int8_t* xq1, const int8_t* xq2, float* av,
                                                    int8_t* aq1, int8_t* aq2, float4* ad, float wscale,
                                                    long long* s_out, unsigned long long* stamp) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  // The block's 32 pairs, two a warp: lane l takes blocks l, l + 32, ... of both rows.
  for (int j = warp; j < 32; j += LATHE_FFNS_THREADS / 32) {
    float g = 0.0f, u = 0.0f;
    for (int k = lane; k < nb; k += 32) {
      const float4 d = xd[k];
      if constexpr (Lv) {  // the group's 32 rows' blocks, row after row
        g += lathe_ffns_block_dot_lv<C>(sg, 32 * nb, j * nb + k, xq1 + 32 * k, xq2 + 32 * k, d.x, d.y);
        u += lathe_ffns_block_dot_lv<C>(su, 32 * nb, j * nb + k, xq1 + 32 * k, xq2 + 32 * k, d.x, d.y);
      } else {
        g += lathe_ffns_block_dot<C>(sg + static_cast<unsigned>(j * rb + 34 * k), xq1 + 32 * k, xq2 + 32 * k, d.x, d.y);
        u += lathe_ffns_block_dot<C>(su + static_cast<unsigned>(j * rb + 34 * k), xq1 + 32 * k, xq2 + 32 * k, d.x, d.y);
      }
    }
    g = lathe_warp_sum(g);
    u = lathe_warp_sum(u);
    if (lane == 0) av[j] = lathe_swiglu(g, u);
  }
  __syncthreads();
  if (stamp) stamp[5] = lathe_globaltimer();
  if (warp == 0) lathe_quantize_block32(av[lane], lane, C == 2, aq1, aq2, ad);  // a's one 32-value block
  __syncthreads();
  if (stamp) stamp[6] = lathe_globaltimer();

  // Down's slice: row r's block times a, its partial added into the sum.
  const float d1 = ad->x, d2 = ad->y;
  for (int r = threadIdx.x; r < E; r += LATHE_FFNS_THREADS) {
    const float p = Lv ? lathe_ffns_block_dot_lv<C>(sd, E, r, aq1, aq2, d1, d2)
                       : lathe_ffns_block_dot<C>(sd + 34u * r, aq1, aq2, d1, d2);
    atomicAdd(reinterpret_cast<unsigned long long*>(s_out + r), lathe_ffns_fix(wscale * p));
  }
}

template <int C, bool Lv>
__device__ __forceinline__ void lathe_ffn_split_body(const uint8_t* gate, const uint8_t* up, const uint8_t* down_slices,
                                                     int E, const float* x, const float* y, const long long* s_in,
                                                     const float* norm_w, float eps, long long* s_out, long long* zero,
                                                     unsigned long long* stamps) {
  extern __shared__ uint4 lathe_ffns_smem[];
  unsigned long long* stamp = stamps && threadIdx.x == 0 ? stamps + 8 * blockIdx.x : nullptr;
  if (stamp) stamp[0] = lathe_globaltimer();
  const int b = blockIdx.x;
  const int nb = E / 32;              // Q8_0 blocks a gate or up row
  const long long rb = 34LL * nb;     // a row's bytes (a multiple of 16: E % 256 == 0)
  uint8_t* wg = reinterpret_cast<uint8_t*>(lathe_ffns_smem);  // [32][rb]: the block's gate rows
  uint8_t* wu = wg + 32 * rb;                                  // [32][rb]: its up rows
  uint8_t* wd = wu + 32 * rb;                                  // [E][34]: its slice of down, + 16 bytes read past
  float* s = reinterpret_cast<float*>(wd + 34LL * E + 16);     // [E]
  float4* xd = reinterpret_cast<float4*>(s + E);               // [nb]: h's (d1, d2, -, -) a block
  int8_t* xq1 = reinterpret_cast<int8_t*>(xd + nb);            // [E]
  int8_t* xq2 = xq1 + E;                                       // [E] (two words)
  float* av = reinterpret_cast<float*>(xq2 + E);               // [32]: the block's SwiGLU values
  int8_t* aq1 = reinterpret_cast<int8_t*>(av + 32);            // [32]
  int8_t* aq2 = aq1 + 32;                                      // [32]
  float4* ad = reinterpret_cast<float4*>(aq2 + 32);            // [1]: a's (d1, d2, sum, 0)
  float* scratch = reinterpret_cast<float*>(ad + 1);           // [32]

  const unsigned sg = static_cast<unsigned>(__cvta_generic_to_shared(wg));
  const unsigned su = static_cast<unsigned>(__cvta_generic_to_shared(wu));
  const unsigned sd = static_cast<unsigned>(__cvta_generic_to_shared(wd));
  // The weights first: constants, asked for before the wait.
  {
    const uint8_t* g0 = gate + b * 32 * rb;
    const uint8_t* u0 = up + b * 32 * rb;
    const uint8_t* d0 = down_slices + 34LL * E * b;
    const int n_rows16 = static_cast<int>(32 * rb / 16), n_slice16 = 34 * E / 16;
    for (int i = threadIdx.x; i < n_rows16; i += LATHE_FFNS_THREADS) {
      lathe_ffns_copy16(sg + 16 * i, g0 + 16LL * i);
      lathe_ffns_copy16(su + 16 * i, u0 + 16LL * i);
    }
    for (int i = threadIdx.x; i < n_slice16; i += LATHE_FFNS_THREADS) lathe_ffns_copy16(sd + 16 * i, d0 + 16LL * i);
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  }
  if (stamp) stamp[1] = lathe_globaltimer();
  lathe_pdl_entry();
  if (stamp) stamp[2] = lathe_globaltimer();

  // s, this block's share of the zeroing, and (block 0) s itself into the sum.
  float ss = 0.0f;
  for (int i = threadIdx.x; i < E; i += LATHE_FFNS_THREADS) {
    const float v = (s_in ? lathe_fix_to_float(s_in[i]) : x[i]) + (y ? y[i] : 0.0f);
    s[i] = v;
    ss = fmaf(v, v, ss);
    if (b == 0) atomicAdd(reinterpret_cast<unsigned long long*>(s_out + i), lathe_ffns_fix(v));
  }
  for (int i = b * LATHE_FFNS_THREADS + threadIdx.x; i < E; i += gridDim.x * LATHE_FFNS_THREADS) zero[i] = 0;
  const float inv = rsqrtf(lathe_block_sum(ss, scratch) / static_cast<float>(E) + eps);  // (its barriers order s)
  if (stamp) stamp[3] = lathe_globaltimer();

  // h = s inv w in the contract's levels, 8 threads a 32-value block (E / 4 a multiple of 32: whole warps).
  for (int i4 = threadIdx.x; i4 < E / 4; i4 += LATHE_FFNS_THREADS) {
    const float4 w4 = reinterpret_cast<const float4*>(norm_w)[i4];
    const float4 h = make_float4(s[4 * i4] * inv * w4.x, s[4 * i4 + 1] * inv * w4.y, s[4 * i4 + 2] * inv * w4.z,
                                 s[4 * i4 + 3] * inv * w4.w);
    lathe_quantize_block32_part(h, C == 2, xq1 + 4 * i4, xq2 + 4 * i4, xd + i4 / 8);
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  __syncthreads();
  if (stamp) stamp[4] = lathe_globaltimer();
  lathe_ffns_products<C, Lv>(sg, su, sd, rb, nb, E, xd, xq1, xq2, av, aq1, aq2, ad, 1.0f, s_out, stamp);
  if (stamps) {
    __syncthreads();
    if (stamp) stamp[7] = lathe_globaltimer();
  }
}

// The mixture's form (fusion rule ffn_split on a mixture; docs/perf.md, thirty-fifth session): the kept
// experts' feed-forward halves, each expert's down split along its input the same way, weighted and
// added into the next residual in fixed point. Block b takes kept slot k = b / (F / 32) and the
// intermediate values [32 j, 32 j + 32) of its expert, j = b % (F / 32):
//   e = ids[k], w = wts[k]                              (the router's, made by the launch before)
//   a_j = silu(gate_e,j . h) * (up_e,j . h)             (h: x_q, the router's int8 form of the normed x)
//   s_out[r] += fix(w * (down_e[r][32 j .. 32 j + 31] . quant(a)))   for every r < E
//   block 0: s_out[r] += fix(s[r]) (s: the residual sum the router's launch wrote); zero[r] = 0.
// gate, up: stacks [n_expert][F][E] of Q8_0 rows in place; down_slices: each expert's down re-laid by
// slices (ffn_split_launch.h's relay_down_stack_by_slices): expert e's slice j at (e * F / 32 + j) * E
// blocks. Nothing is asked for before the wait: which rows depends on the router's ids. The same
// shared-memory layout and products as the dense form (lathe_ffns_products).
template <int C>
__device__ __forceinline__ void lathe_moe_split_body(const uint8_t* gate, const uint8_t* up, const uint8_t* down_slices,
                                                     int E, int F, const int8_t* x_q, const int* ids, const float* wts,
                                                     const float* s, long long* s_out, long long* zero,
                                                     unsigned long long* stamps) {
  extern __shared__ uint4 lathe_ffns_smem[];
  unsigned long long* stamp = stamps && threadIdx.x == 0 ? stamps + 8 * blockIdx.x : nullptr;
  if (stamp) stamp[0] = lathe_globaltimer();
  const int n_slices = F / 32, k = blockIdx.x / n_slices, j = blockIdx.x % n_slices;
  const int nb = E / 32;
  const long long rb = 34LL * nb;
  uint8_t* wg = reinterpret_cast<uint8_t*>(lathe_ffns_smem);  // ffn_split's layout (s unused)
  uint8_t* wu = wg + 32 * rb;
  uint8_t* wd = wu + 32 * rb;
  float* sf = reinterpret_cast<float*>(wd + 34LL * E + 16);
  float4* xd = reinterpret_cast<float4*>(sf + E);
  int8_t* xq1 = reinterpret_cast<int8_t*>(xd + nb);
  int8_t* xq2 = xq1 + E;
  float* av = reinterpret_cast<float*>(xq2 + E);
  int8_t* aq1 = reinterpret_cast<int8_t*>(av + 32);
  int8_t* aq2 = aq1 + 32;
  float4* ad = reinterpret_cast<float4*>(aq2 + 32);
  const unsigned sg = static_cast<unsigned>(__cvta_generic_to_shared(wg));
  const unsigned su = static_cast<unsigned>(__cvta_generic_to_shared(wu));
  const unsigned sd = static_cast<unsigned>(__cvta_generic_to_shared(wd));
  const unsigned sq = static_cast<unsigned>(__cvta_generic_to_shared(xq1));
  const unsigned sxd = static_cast<unsigned>(__cvta_generic_to_shared(xd));
  lathe_pdl_entry();
  if (stamp) stamp[1] = stamp[2] = lathe_globaltimer();
  const int e = ids[k];
  const float w = wts[k];
  {
    const uint8_t* g0 = gate + (static_cast<long long>(e) * F + 32LL * j) * rb;
    const uint8_t* u0 = up + (static_cast<long long>(e) * F + 32LL * j) * rb;
    const uint8_t* d0 = down_slices + 34LL * E * (static_cast<long long>(e) * n_slices + j);
    const int n_rows16 = static_cast<int>(32 * rb / 16), n_slice16 = 34 * E / 16;
    // x's form (activations.h: levels [C][E], then a float4 a 32-value block) and the weights.
    const int n_q16 = C * E / 16, n_d16 = nb;
    for (int i = threadIdx.x; i < n_q16; i += LATHE_FFNS_THREADS) lathe_ffns_copy16(sq + 16 * i, x_q + 16LL * i);
    for (int i = threadIdx.x; i < n_d16; i += LATHE_FFNS_THREADS)
      lathe_ffns_copy16(sxd + 16 * i, x_q + static_cast<long long>(C) * E + 16LL * i);
    for (int i = threadIdx.x; i < n_rows16; i += LATHE_FFNS_THREADS) {
      lathe_ffns_copy16(sg + 16 * i, g0 + 16LL * i);
      lathe_ffns_copy16(su + 16 * i, u0 + 16LL * i);
    }
    for (int i = threadIdx.x; i < n_slice16; i += LATHE_FFNS_THREADS) lathe_ffns_copy16(sd + 16 * i, d0 + 16LL * i);
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  }
  if (blockIdx.x == 0)
    for (int i = threadIdx.x; i < E; i += LATHE_FFNS_THREADS)
      atomicAdd(reinterpret_cast<unsigned long long*>(s_out + i), lathe_ffns_fix(s[i]));
  for (int i = blockIdx.x * LATHE_FFNS_THREADS + threadIdx.x; i < E; i += gridDim.x * LATHE_FFNS_THREADS) zero[i] = 0;
  if (stamp) stamp[3] = lathe_globaltimer();
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  __syncthreads();
  if (stamp) stamp[4] = lathe_globaltimer();
  lathe_ffns_products<C, false>(sg, su, sd, rb, nb, E, xd, xq1, xq2, av, aq1, aq2, ad, w, s_out, stamp);
  if (stamps) {
    __syncthreads();
    if (stamp) stamp[7] = lathe_globaltimer();
  }
}

// Kernels lathe_ffn_split_q8_0_<contract>[_lv] (_lv: gate, up and the slices in the levels layout).
#define LATHE_FFN_SPLIT_KERNEL(C, CNAME, LV, SUFFIX)                                                            \
  extern "C" __global__ void __launch_bounds__(LATHE_FFNS_THREADS, 1) lathe_ffn_split_q8_0_##CNAME##SUFFIX(     \
      const uint8_t* gate, const uint8_t* up, const uint8_t* down_slices, int E, const float* x, const float* y, \
      const long long* s_in, const float* norm_w, float eps, long long* s_out, long long* zero,                \
      unsigned long long* stamps) {                                                                             \
    lathe_ffn_split_body<C, LV>(gate, up, down_slices, E, x, y, s_in, norm_w, eps, s_out, zero, stamps);        \
  }

LATHE_FFN_SPLIT_KERNEL(1, int8, false, )
LATHE_FFN_SPLIT_KERNEL(2, int8x2, false, )
LATHE_FFN_SPLIT_KERNEL(1, int8, true, _lv)
LATHE_FFN_SPLIT_KERNEL(2, int8x2, true, _lv)

// Kernels lathe_moe_split_q8_0_<contract>.
#define LATHE_MOE_SPLIT_KERNEL(C, CNAME)                                                                       \
  extern "C" __global__ void __launch_bounds__(LATHE_FFNS_THREADS, 1) lathe_moe_split_q8_0_##CNAME(            \
      const uint8_t* gate, const uint8_t* up, const uint8_t* down_slices, int E, int F, const int8_t* x_q,     \
      const int* ids, const float* wts, const float* s, long long* s_out, long long* zero,                    \
      unsigned long long* stamps) {                                                                           \
    lathe_moe_split_body<C>(gate, up, down_slices, E, F, x_q, ids, wts, s, s_out, zero, stamps);              \
  }

LATHE_MOE_SPLIT_KERNEL(1, int8)
LATHE_MOE_SPLIT_KERNEL(2, int8x2)
