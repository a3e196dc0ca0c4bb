// A card probe (scripts/probes/build.sh builds it; docs/perf.md, twenty-seventh session): the route
// epilogue's pick phase (moe_route_epilogue.cuh, from the logits and keys in shared memory to the picks
// written, with x's int8 form by the other warps) in one block alone, warm and cold, timed by clock64;
// variants of the rank loop. The phase's two forms (the one before the twenty-seventh session, and the
// landed one with the softmax beside the ranks) are copied here on purpose, so each is timed alone; the
// picks printed must agree.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "kernels_local.cuh"  // common.cuh, gemv_blocks.cuh and moe_route.cuh less their typedefs (build.sh)

// A general n's rank with its loads hoisted: 32 keys a round (16 loads of 16 bytes in flight), 8 counts.
__device__ __forceinline__ int rank_hoisted(const unsigned long long* keys, int n, unsigned long long key) {
  int r[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int f = 0;
  if ((reinterpret_cast<unsigned long long>(keys) & 15ull) == 0) {
    const ulonglong2* k2 = reinterpret_cast<const ulonglong2*>(keys);
    for (; f + 32 <= n; f += 32) {
      ulonglong2 v[16];
#pragma unroll
      for (int j = 0; j < 16; ++j) v[j] = k2[(f >> 1) + j];
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        r[(2 * j) & 7] += v[j].x > key ? 1 : 0;
        r[(2 * j + 1) & 7] += v[j].y > key ? 1 : 0;
      }
    }
  }
  for (; f < n; ++f) r[0] += keys[f] > key ? 1 : 0;
  return ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
}

template <int VARIANT>
__device__ __forceinline__ int rank_of(const unsigned long long* keys, int n, unsigned long long key) {
  if constexpr (VARIANT == 0)
    return lathe_route_rank(keys, n, key);
  else
    return rank_hoisted(keys, n, key);
}

// mode bit 0: the other warps quantize x meanwhile; VARIANT: the rank loop
template <int VARIANT, bool BESIDE = false>
__global__ void __launch_bounds__(512, 1)
    pick(const float* logits_in, const float* x_in, int reps, int mode, long long* cycles, int* ids, float* weights,
         int8_t* q1, int8_t* q2, float4* ds) {
  __shared__ float sl[128];
  __shared__ __align__(16) unsigned long long keys[128];
  __shared__ int pick_id[32];
  __shared__ float pick_p[32];
  __shared__ float max_sum[2];
  __shared__ __align__(16) float sx[2048];
  const int n_expert = 128, top_k = 8, n_out = 2048, renormalize = 1;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, n_warps = blockDim.x >> 5;
  for (int i = threadIdx.x; i < n_out; i += blockDim.x) sx[i] = x_in[i];
  for (int rep = 0; rep < reps; ++rep) {
    for (int e = threadIdx.x; e < n_expert; e += blockDim.x) {
      const float l = logits_in[(rep % 4) * 128 + e];
      sl[e] = l;
      keys[e] = lathe_route_key(l, static_cast<unsigned>(e));
    }
    __syncthreads();
    long long t0 = clock64();
    const int top_warps = (n_expert + 31) >> 5;
    if (!BESIDE) {
      if (warp < top_warps) {
        if (warp == 0) {
          float max, total_e;
          lathe_route_softmax_warp(sl, n_expert, max, total_e);
          if (lane == 0) {
            max_sum[0] = max;
            max_sum[1] = total_e;
          }
        }
        asm volatile("bar.sync 1, %0;\n" ::"r"(32 * top_warps) : "memory");
        const int e = threadIdx.x;
        if (e < n_expert) {
          const int rank = rank_of<VARIANT>(keys, n_expert, keys[e]);
          if (rank < top_k) {
            pick_id[rank] = e;
            pick_p[rank] = expf(sl[e] - max_sum[0]) / max_sum[1];
          }
        }
        asm volatile("bar.sync 1, %0;\n" ::"r"(32 * top_warps) : "memory");
        if (e < top_k) {
          float kept = 0.0f;
          for (int i = 0; i < top_k; ++i) kept += pick_p[i];
          ids[e] = pick_id[e];
          weights[e] = renormalize ? pick_p[e] / kept : pick_p[e];
        }
        if (e == 0) cycles[rep] = clock64() - t0;
      } else if (mode & 1) {
        const int t = threadIdx.x - 32 * top_warps, n_t = 32 * (n_warps - top_warps), part = 4 * (t & 7);
        for (int b = t >> 3; b < (n_out >> 5); b += n_t >> 3)
          lathe_quantize_block32_part(*reinterpret_cast<const float4*>(sx + 32 * b + part), 1, q1 + 32 * b + part,
                                      q2 + 32 * b + part, ds + b);
      }
    } else {  // moe_route_epilogue.cuh's form since the twenty-seventh session: the softmax beside the ranks
      const int soft_warp = top_warps, pickers = 32 * (top_warps + 1);
      if (warp == soft_warp) {
        float max, total_e;
        lathe_route_softmax_warp(sl, n_expert, max, total_e);
        if (lane == 0) {
          max_sum[0] = max;
          max_sum[1] = total_e;
        }
      }
      if (warp < top_warps) {
        const int e = threadIdx.x;
        const int rank = e < n_expert ? rank_of<VARIANT>(keys, n_expert, keys[e]) : top_k;
        asm volatile("bar.sync 1, %0;\n" ::"r"(pickers) : "memory");
        if (rank < top_k) {
          pick_id[rank] = e;
          pick_p[rank] = expf(sl[e] - max_sum[0]) / max_sum[1];
        }
        asm volatile("bar.sync 2, %0;\n" ::"r"(32 * top_warps) : "memory");
        if (e < top_k) {
          float kept = 0.0f;
          for (int i = 0; i < top_k; ++i) kept += pick_p[i];
          ids[e] = pick_id[e];
          weights[e] = renormalize ? pick_p[e] / kept : pick_p[e];
        }
        if (e == 0) cycles[rep] = clock64() - t0;
      } else {
        if (warp == soft_warp) asm volatile("bar.sync 1, %0;\n" ::"r"(pickers) : "memory");
        const int first = pickers;
        const int t = threadIdx.x - first, n_t = 32 * n_warps - first, part = 4 * (t & 7);
        if ((mode & 1) && t >= 0)
          for (int b = t >> 3; b < (n_out >> 5); b += n_t >> 3)
            lathe_quantize_block32_part(*reinterpret_cast<const float4*>(sx + 32 * b + part), 1, q1 + 32 * b + part,
                                        q2 + 32 * b + part, ds + b);
      }
    }
    __syncthreads();
  }
}

int main() {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  std::vector<float> lg(512), xs(2048);
  for (auto& v : lg) v = nd(rng);
  for (auto& v : xs) v = nd(rng);
  float *dl, *dx, *w;
  long long* cyc;
  int* ids;
  int8_t *q1, *q2;
  float4* ds;
  cudaMalloc(&dl, 512 * 4);
  cudaMalloc(&dx, 2048 * 4);
  cudaMalloc(&cyc, 1000 * 8);
  cudaMalloc(&ids, 64);
  cudaMalloc(&w, 64);
  cudaMalloc(&q1, 2048);
  cudaMalloc(&q2, 2048);
  cudaMalloc(&ds, 64 * 16);
  cudaMemcpy(dl, lg.data(), 512 * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dx, xs.data(), 2048 * 4, cudaMemcpyHostToDevice);
  int clk_khz;
  cudaDeviceGetAttribute(&clk_khz, cudaDevAttrClockRate, 0);
  auto run = [&](auto kern, const char* name, int mode) {
    const int reps = 200;
    kern<<<1, 512>>>(dl, dx, reps, mode, cyc, ids, w, q1, q2, ds);
    cudaDeviceSynchronize();
    std::vector<long long> c(reps);
    cudaMemcpy(c.data(), cyc, reps * 8, cudaMemcpyDeviceToHost);
    const long long first = c[0];
    std::sort(c.begin() + 1, c.end());
    int h_ids[8];
    cudaMemcpy(h_ids, ids, 32, cudaMemcpyDeviceToHost);
    printf("  %-34s first (cold) %6lld cycles, warm median %6lld cycles (%.2f us at 1.98 GHz); picks %d %d %d .. %d\n",
           name, first, c[reps / 2], c[reps / 2] / 1980.0, h_ids[0], h_ids[1], h_ids[2], h_ids[7]);
  };
  printf("the route epilogue's pick phase, one block of 512 threads alone (cudaDevAttrClockRate %d kHz)\n", clk_khz);
  run(pick<0>, "as landed, x quantized beside", 1);
  run(pick<0>, "as landed, nothing beside", 0);
  run(pick<1>, "rank hoisted, x quantized beside", 1);
  run(pick<1>, "rank hoisted, nothing beside", 0);
  run(pick<0, true>, "softmax beside, x quantized beside", 1);
  run(pick<0, true>, "softmax beside, nothing beside", 0);
  return 0;
}
