// A card probe (scripts/probes/build.sh builds it; docs/perf.md, thirty-fourth session): a decode
// layer's feed-forward half at batch 1 as the lane runs it, two launches (gate/up with the norm and
// SwiGLU, then down quantizing its row in every block), against one launch that splits down along its
// input: block b takes S of the F intermediate values, their gate and up rows, then down's S columns
// (re-laid so a block's columns are contiguous), and adds its partial of every output row into an
// int64 fixed-point sum (red.add: integer adds in any order give the same bits). The next layer's
// launch reads that sum as its x. The question: whether one global edge less (down's launch, its x
// phase and tail) pays for the reductions, before the lane builds it.
//
// Both forms read the same bytes a layer (a Q8_0-sized layout: int8 levels and an f16 scale per 32,
// kept apart so every load is 16-byte aligned) with the same dot-product code, in a CUDA graph of L
// layers with programmatic launch, each layer its own weights (no L2 reuse). A check first: one layer
// from the same x, both forms, the outputs compared.
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe.h"

constexpr int kThreads = 512, kWarps = 16;
constexpr double kFix = 4294967296.0;  // 2^32: the fixed-point sum's unit is 2^-32

struct Layer {
  const int8_t* gu;     // [2F][E]: gate rows, then up rows
  const __half* gu_s;   // [2F][E / 32]
  const int8_t* dn;     // [E][F] (the two-launch form's down)
  const __half* dn_s;   // [E][F / 32]
  const int8_t* dr;     // [F / S][E][S]: down re-laid by slices of S columns (the fused form's)
  const __half* dr_s;   // [F / S][E][S / 32]
};

__device__ __forceinline__ void pdl_wait_release() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// Asks L2 for bytes [p, p + n) (128-byte lines), lane by lane of a warp.
__device__ __forceinline__ void prefetch_span(const int8_t* p, int n) {
  for (int i = (threadIdx.x & 31) * 128; i < n; i += 32 * 128) prefetch_l2(p + i);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Quantizes n values v (thread t: values t, t + 512, ...; n % 32 == 0) to int8 levels per 32 and
// their scales, into shared memory.
__device__ void quantize_to_shared(const float* v, int n, int8_t* q, float* qs) {
  for (int i = threadIdx.x; i < n; i += kThreads) {
    const float x = v[i];
    float m = fabsf(x);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    const float d = m / 127.0f;
    q[i] = static_cast<int8_t>(d > 0.0f ? __float2int_rn(x / d) : 0);
    if ((i & 31) == 0) qs[i >> 5] = d;
  }
}

// RMS-norms x [n] (in shared memory, n % 512 == 0) in place.
__device__ void rms_norm_shared(float* x, int n, float* red) {
  float ss = 0.0f;
  for (int i = threadIdx.x; i < n; i += kThreads) ss += x[i] * x[i];
  ss = warp_sum(ss);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
  __syncthreads();
  float t = 0.0f;
  for (int w = 0; w < kWarps; ++w) t += red[w];
  const float inv = rsqrtf(t / n + 1e-6f);
  for (int i = threadIdx.x; i < n; i += kThreads) x[i] *= inv;
  __syncthreads();
}

// The dot products of R rows with x (levels xq, scales xs), by a warp: lane l takes blocks l, l + 32,
// ..., four blocks of every row asked for before any is used (the loads in flight the stream needs).
__device__ __forceinline__ int dot32(int4 w0, int4 w1, const int8_t* xq) {
  const int4 x0 = *reinterpret_cast<const int4*>(xq), x1 = *reinterpret_cast<const int4*>(xq + 16);
  int d = 0;
  d = __dp4a(w0.x, x0.x, d), d = __dp4a(w0.y, x0.y, d), d = __dp4a(w0.z, x0.z, d), d = __dp4a(w0.w, x0.w, d);
  d = __dp4a(w1.x, x1.x, d), d = __dp4a(w1.y, x1.y, d), d = __dp4a(w1.z, x1.z, d), d = __dp4a(w1.w, x1.w, d);
  return d;
}
template <int R>
__device__ __forceinline__ void rows_dot(const int8_t* const (&q)[R], const __half* const (&s)[R], int k, const int8_t* xq,
                                         const float* xs, float (&out)[R]) {
  const int lane = threadIdx.x & 31, nb = k / 32;
  float acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0.0f;
  for (int b0 = lane; b0 < nb; b0 += 128) {
    int4 w[R][4][2];
    float sw[R][4];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int b = b0 + 32 * u;
        const bool in = b < nb;
        const int4* p = reinterpret_cast<const int4*>(q[r] + (in ? b : 0) * 32);
        w[r][u][0] = in ? __ldcs(p) : make_int4(0, 0, 0, 0);
        w[r][u][1] = in ? __ldcs(p + 1) : make_int4(0, 0, 0, 0);
        sw[r][u] = in ? __half2float(s[r][b]) : 0.0f;
      }
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int b = b0 + 32 * u;
        if (b < nb) acc[r] += static_cast<float>(dot32(w[r][u][0], w[r][u][1], xq + b * 32)) * sw[r][u] * xs[b];
      }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) out[r] = warp_sum(acc[r]);
}

// The SwiGLU of pair p (gate row p, up row F + p) by a warp.
__device__ __forceinline__ float swiglu_pair(const Layer& L, int p, int E, int F, const int8_t* xq, const float* xs) {
  const long long nb = E / 32;
  const int8_t* const q[2] = {L.gu + (long long)p * E, L.gu + (long long)(F + p) * E};
  const __half* const s[2] = {L.gu_s + p * nb, L.gu_s + (F + p) * nb};
  float gu[2];
  rows_dot<2>(q, s, E, xq, xs, gu);
  return gu[0] / (1.0f + __expf(-gu[0])) * gu[1];
}

// Two-launch form, first: x [E] normed and quantized in every block, then the pairs dealt a warp at a
// time over the grid: y [F].
// early: each warp asks L2 for its first pair's rows before the wait (the weights are constants).
__global__ void __launch_bounds__(kThreads, 1) gate_up(Layer L, int E, int F, const float* x, float* y, int early) {
  extern __shared__ float smem[];
  float* xf = smem;                                         // [E]
  float* xs = xf + E;                                       // [E / 32]
  float* red = xs + E / 32;                                 // [16]
  int8_t* xq = reinterpret_cast<int8_t*>(red + kWarps);     // [E]
  if (early) {
    const int p = blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (p < F) {
      prefetch_span(L.gu + (long long)p * E, E);
      prefetch_span(L.gu + (long long)(F + p) * E, E);
    }
  }
  pdl_wait_release();
  for (int i = threadIdx.x; i < E; i += kThreads) xf[i] = x[i];
  __syncthreads();
  rms_norm_shared(xf, E, red);
  quantize_to_shared(xf, E, xq, xs);
  __syncthreads();
  const int warp = threadIdx.x >> 5, n_warps = gridDim.x * kWarps;
  for (int p = blockIdx.x * kWarps + warp; p < F; p += n_warps) {
    const float v = swiglu_pair(L, p, E, F, xq, xs);
    if ((threadIdx.x & 31) == 0) y[p] = v;
  }
}

// Two-launch form, second: y [F] quantized in every block, then down's rows a warp each:
// out = x + down y.
__global__ void __launch_bounds__(kThreads, 1) down(Layer L, int E, int F, const float* y, const float* x, float* out,
                                                    int early) {
  extern __shared__ float smem[];
  float* ys = smem;                                   // [F / 32]
  int8_t* yq = reinterpret_cast<int8_t*>(ys + F / 32);  // [F]
  if (early && blockIdx.x * kWarps + (threadIdx.x >> 5) < E)
    prefetch_span(L.dn + (long long)(blockIdx.x * kWarps + (threadIdx.x >> 5)) * F, F);
  pdl_wait_release();
  quantize_to_shared(y, F, yq, ys);
  __syncthreads();
  const int warp = threadIdx.x >> 5, n_warps = gridDim.x * kWarps;
  for (int r = blockIdx.x * kWarps + warp; r < E; r += n_warps) {
    const int8_t* const q[1] = {L.dn + (long long)r * F};
    const __half* const sc[1] = {L.dn_s + (long long)r * (F / 32)};
    float v[1];
    rows_dot<1>(q, sc, F, yq, ys, v);
    if ((threadIdx.x & 31) == 0) out[r] = x[r] + v[0];
  }
}

// The fused form: x from the layer before's fixed-point sum (in), normed and quantized; block b's S
// pairs, their SwiGLU quantized; down's S columns times them, added into out (fixed point), block 0
// adding x itself (the residual). zero: the sum the layer after next adds into, zeroed here (the
// layer before this one, which read it, has ended). reduce = 0 skips the adds (a measuring form);
// early: the block's first gate/up rows and its down slice asked of L2 before the wait.
template <int S, bool CONV>
__global__ void __launch_bounds__(kThreads, 1) fused(Layer L, int E, int F, const long long* in, long long* out,
                                                     long long* zero, int reduce, int early, float* conv_in,
                                                     float* conv_out, unsigned* count) {
  extern __shared__ float smem[];
  float* xf = smem;                                      // [E]
  float* xs = xf + E;                                    // [E / 32]
  float* red = xs + E / 32;                              // [16]
  float* yv = red + kWarps;                              // [S]
  float* ysc = yv + S;                                   // [S / 32], 4 kept (x's levels 16-byte aligned)
  int8_t* xq = reinterpret_cast<int8_t*>(ysc + 4);       // [E]
  int8_t* yq = xq + E;                                   // [S]
  if (early) {  // the block's first pairs' rows (a pair a warp), and down's slice, asked of L2
    const int j = threadIdx.x >> 5, p = blockIdx.x * S + j;
    if (j < S) {
      prefetch_span(L.gu + (long long)p * E, E);
      prefetch_span(L.gu + (long long)(F + p) * E, E);
    }
    for (int i = threadIdx.x * 128; i < E * S; i += kThreads * 128) prefetch_l2(L.dr + (long long)blockIdx.x * E * S + i);
  }
  pdl_wait_release();
  for (int i = threadIdx.x; i < E; i += kThreads)
    xf[i] = CONV ? conv_in[i] : static_cast<float>(static_cast<double>(in[i]) / kFix);
  for (int i = blockIdx.x * kThreads + threadIdx.x; i < E; i += gridDim.x * kThreads) zero[i] = 0;
  if (blockIdx.x == 0 && reduce)
    for (int i = threadIdx.x; i < E; i += kThreads)
      atomicAdd(reinterpret_cast<unsigned long long*>(out + i),
                static_cast<unsigned long long>(CONV ? llrint(static_cast<double>(conv_in[i]) * kFix) : in[i]));
  __syncthreads();
  rms_norm_shared(xf, E, red);
  quantize_to_shared(xf, E, xq, xs);
  __syncthreads();
  const int warp = threadIdx.x >> 5;
  for (int j = warp; j < S; j += kWarps) {
    const float v = swiglu_pair(L, blockIdx.x * S + j, E, F, xq, xs);
    if ((threadIdx.x & 31) == 0) yv[j] = v;
  }
  __syncthreads();
  if (threadIdx.x < S) {  // S <= 512: one thread a value, whole warps
    const float v = yv[threadIdx.x];
    float m = fabsf(v);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    const float d = m / 127.0f;
    yq[threadIdx.x] = static_cast<int8_t>(d > 0.0f ? __float2int_rn(v / d) : 0);
    if ((threadIdx.x & 31) == 0) ysc[threadIdx.x >> 5] = d;
  }
  __syncthreads();
  // Down's slice: row r's S levels contiguous; thread t takes rows t, t + 512, ..., two at a time,
  // both rows' levels asked for before either is used.
  constexpr int NB = S / 32;
  const int8_t* dq = L.dr + (long long)blockIdx.x * E * S;
  const __half* dsc = L.dr_s + (long long)blockIdx.x * E * NB;
  for (int r0 = threadIdx.x; r0 < E; r0 += 2 * kThreads) {
    int4 w[2][NB][2];
    float sw[2][NB];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = min(r0 + h * kThreads, E - 1);
#pragma unroll
      for (int b = 0; b < NB; ++b) {
        const int4* p = reinterpret_cast<const int4*>(dq + (long long)r * S + b * 32);
        w[h][b][0] = __ldcs(p);
        w[h][b][1] = __ldcs(p + 1);
        sw[h][b] = __half2float(dsc[(long long)r * NB + b]);
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = r0 + h * kThreads;
      float acc = 0.0f;
#pragma unroll
      for (int b = 0; b < NB; ++b) acc += static_cast<float>(dot32(w[h][b][0], w[h][b][1], yq + b * 32)) * sw[h][b] * ysc[b];
      const long long f = llrint(static_cast<double>(acc) * kFix);
      if (r >= E) continue;
      if (reduce) atomicAdd(reinterpret_cast<unsigned long long*>(out + r), static_cast<unsigned long long>(f));
      else if (f == 0x7fffffffffffffffLL) out[r] = f;  // never: keeps the arithmetic
    }
  }
  if (!CONV) return;
  // The last block to finish turns the sum into f32 for the next launch (and leaves the count zero).
  __shared__ unsigned last;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(count, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int i = threadIdx.x; i < E; i += kThreads) conv_out[i] = static_cast<float>(static_cast<double>(__ldcg(out + i)) / kFix);
  if (threadIdx.x == 0) *count = 0;
}

struct Shape {
  const char* name;
  int E, F, S, layers;
};

static size_t gate_up_smem(int E) { return E * 4 + E / 32 * 4 + kWarps * 4 + E; }
static size_t down_smem(int F) { return F / 32 * 4 + F; }
static size_t fused_smem(int E, int S) { return E * 4 + E / 32 * 4 + kWarps * 4 + S * 4 + 4 * 4 + E + S; }

int run(const Shape& sh, int sms) {
  const int E = sh.E, F = sh.F, S = sh.S, NL = sh.layers;
  const size_t gu_n = 2ull * F * E, dn_n = 1ull * E * F;
  printf("%s: E %d, F %d, S %d (%d blocks fused), %d layers, %.1f MB a layer\n", sh.name, E, F, S, F / S, NL,
         (gu_n + dn_n) * 1.0625 / 1e6);
  // Weights: random levels and scales; down twice (row-major and re-laid), the same values.
  std::vector<Layer> layers(NL);
  std::vector<int8_t> h_gu(gu_n), h_dn(dn_n), h_dr(dn_n);
  std::vector<__half> h_gus(gu_n / 32), h_dns(dn_n / 32), h_drs(dn_n / 32);
  uint32_t seed = 12345;
  auto rnd = [&] { return seed = seed * 1664525u + 1013904223u; };
  {
    for (auto& v : h_gu) v = static_cast<int8_t>(static_cast<int>(rnd() >> 24) - 128);
    for (auto& v : h_dn) v = static_cast<int8_t>(static_cast<int>(rnd() >> 24) - 128);
    for (auto& v : h_gus) v = __float2half(1.0f / (127.0f * std::sqrt(static_cast<float>(E))) * (1.0f + (rnd() >> 28) / 16.0f));
    for (auto& v : h_dns) v = __float2half(1.0f / (127.0f * std::sqrt(static_cast<float>(F))) * (1.0f + (rnd() >> 28) / 16.0f));
    for (int r = 0; r < E; ++r)
      for (int c = 0; c < F; ++c) {
        const int sl = c / S, cc = c % S;
        h_dr[((size_t)sl * E + r) * S + cc] = h_dn[(size_t)r * F + c];
        if (cc % 32 == 0) h_drs[((size_t)sl * E + r) * (S / 32) + cc / 32] = h_dns[(size_t)r * (F / 32) + c / 32];
      }
  }
  for (int l = 0; l < NL; ++l) {  // the same values in every layer, each layer its own copy
    int8_t *gu, *dn, *dr;
    __half *gus, *dns, *drs;
    CK(cudaMalloc(&gu, gu_n));
    CK(cudaMalloc(&dn, dn_n));
    CK(cudaMalloc(&dr, dn_n));
    CK(cudaMalloc(&gus, gu_n / 32 * 2));
    CK(cudaMalloc(&dns, dn_n / 32 * 2));
    CK(cudaMalloc(&drs, dn_n / 32 * 2));
    CK(cudaMemcpy(gu, h_gu.data(), gu_n, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dn, h_dn.data(), dn_n, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dr, h_dr.data(), dn_n, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(gus, h_gus.data(), gu_n / 32 * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dns, h_dns.data(), dn_n / 32 * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(drs, h_drs.data(), dn_n / 32 * 2, cudaMemcpyHostToDevice));
    layers[l] = {gu, gus, dn, dns, dr, drs};
  }
  // Activations: x and y for the two-launch form (x per layer boundary), three fixed-point sums.
  float *xs, *y;
  long long* acc;
  CK(cudaMalloc(&xs, (NL + 1) * E * 4));
  CK(cudaMalloc(&y, F * 4));
  CK(cudaMalloc(&acc, 3ull * E * 8));
  unsigned* count;
  CK(cudaMalloc(&count, 4));
  CK(cudaMemset(count, 0, 4));
  std::vector<float> x0(E);
  std::vector<long long> a0(E);
  for (int i = 0; i < E; ++i) {
    x0[i] = ((rnd() >> 8) / 16777216.0f - 0.5f) * 2.0f;
    a0[i] = llrint(static_cast<double>(x0[i]) * kFix);
    x0[i] = static_cast<float>(static_cast<double>(a0[i]) / kFix);  // the same x both ways
  }
  const int gu_grid = sms, dn_grid = std::min(sms, (E + kWarps - 1) / kWarps), f_grid = F / S;
  CK(cudaFuncSetAttribute(gate_up, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  CK(cudaFuncSetAttribute(down, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  auto fused_kernel = S == 32 ? fused<32, false> : S == 64 ? fused<64, false> : fused<96, false>;
  auto fused_conv = S == 32 ? fused<32, true> : S == 64 ? fused<64, true> : fused<96, true>;
  CK(cudaFuncSetAttribute(fused_conv, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  if (S != 32 && S != 64 && S != 96) {
    printf("S must be 32, 64 or 96\n");
    return 1;
  }
  CK(cudaFuncSetAttribute(fused_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  // enqueue(form, n): n layers of form 0 (two launches), 1 (fused), 2 (fused, no adds), 3 (two
  // launches, the first rows asked of L2 before each wait), 4 (fused, the same), 5 (fused, its last
  // block turning the sum into f32, which the next layer reads)
  auto enqueue = [&](int form, int n) -> int {
    for (int l = 0; l < n; ++l) {
      cudaLaunchAttribute a;
      const int early = form == 3 || form == 4;
      if (form == 0 || form == 3) {
        cudaLaunchConfig_t c1 = launch_config(gu_grid, kThreads, gate_up_smem(E), s, l > 0, a);
        CK(cudaLaunchKernelEx(&c1, gate_up, layers[l], E, F, (const float*)xs + (size_t)l * E, y, early));
        cudaLaunchAttribute a2;
        cudaLaunchConfig_t c2 = launch_config(dn_grid, kThreads, down_smem(F), s, true, a2);
        CK(cudaLaunchKernelEx(&c2, down, layers[l], E, F, (const float*)y, (const float*)xs + (size_t)l * E,
                              xs + (size_t)(l + 1) * E, early));
      } else {
        cudaLaunchConfig_t c = launch_config(f_grid, kThreads, fused_smem(E, S), s, l > 0, a);
        CK(cudaLaunchKernelEx(&c, form == 5 ? fused_conv : fused_kernel, layers[l], E, F, (const long long*)acc + (size_t)(l % 3) * E,
                              acc + (size_t)((l + 1) % 3) * E, acc + (size_t)((l + 2) % 3) * E, form == 2 ? 0 : 1, form == 4 ? 1 : 0,
                              form == 5 ? xs + (size_t)l * E : nullptr, form == 5 ? xs + (size_t)(l + 1) * E : nullptr,
                              count));
      }
    }
    return 0;
  };
  // The check: one layer each way from x0.
  CK(cudaMemcpy(xs, x0.data(), E * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(acc, 0, 3ull * E * 8));
  CK(cudaMemcpy(acc, a0.data(), E * 8, cudaMemcpyHostToDevice));
  if (enqueue(0, 1) || enqueue(1, 1)) return 1;
  CK(cudaStreamSynchronize(s));
  std::vector<float> o2(E);
  std::vector<long long> o1(E);
  CK(cudaMemcpy(o2.data(), xs + E, E * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(o1.data(), acc + E, E * 8, cudaMemcpyDeviceToHost));
  double err = 0.0, mag = 0.0;
  for (int i = 0; i < E; ++i) {
    err = std::max(err, std::fabs(o1[i] / kFix - o2[i]));
    mag = std::max(mag, std::fabs(static_cast<double>(o2[i] - x0[i])));
  }
  printf("  check: one layer, fused against two launches: max |diff| %.3g (largest down output %.3g)%s\n", err, mag,
         err <= 1e-4 * std::max(1.0, mag) ? "" : "  MISMATCH");
  // The timing: a graph of NL layers, replayed; us a layer, median of 20 after 3.
  const char* names[] = {"two launches (gate/up, then down)", "fused, fixed-point adds", "fused, adds skipped",
                         "two launches, first rows early", "fused, first rows early", "fused, last block to f32"};
  for (int form : {0, 1, 2, 3, 4, 5, 0, 1, 5}) {
    CK(cudaMemset(acc, 0, 3ull * E * 8));
    CK(cudaMemcpy(acc, a0.data(), E * 8, cudaMemcpyHostToDevice));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    if (enqueue(form, NL)) return 1;
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> t;
    for (int r = 0; r < 23; ++r) {
      if (form == 1 || form == 2 || form == 4 || form == 5) {  // each replay from the same start: the sums chain over layers (3 buffers)
        CK(cudaMemsetAsync(acc, 0, 3ull * E * 8, s));
        CK(cudaMemcpyAsync(acc, a0.data(), E * 8, cudaMemcpyHostToDevice, s));
      }
      CK(cudaEventRecord(e0, s));
      CK(cudaGraphLaunch(ge, s));
      CK(cudaEventRecord(e1, s));
      CK(cudaStreamSynchronize(s));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (r >= 3) t.push_back(ms * 1000.0f / NL);
    }
    std::sort(t.begin(), t.end());
    const double us = t[t.size() / 2];
    printf("  %-36s %7.2f us a layer  (%.0f GB/s)\n", names[form], us, (gu_n + dn_n) * 1.0625 / 1e3 / us);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
  }
  return 0;
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  // The 30B's row: its 8 kept experts' gate/up and down as one intermediate of 8 x 768 (the bytes of a
  // decode row's mixture; the route weights left out).
  const Shape shapes[] = {{"qwen3-0.6b ffn", 1024, 3072, 32, 28},
                          {"qwen3-30b-a3b mixture (8 x 768 as one)", 2048, 6144, 64, 48},
                          {"qwen3-8b ffn", 4096, 12288, 96, 36}};
  for (const Shape& sh : shapes)
    if (run(sh, sms)) return 1;
  return 0;
}
