// A card probe (scripts/probes/build.sh builds it; docs/perf.md, twenty-seventh session): can 8 or 16
// clusters of one block an SM be resident with ~200 KB of shared memory, and what do a cluster barrier,
// a DSMEM read and an L2 round trip cost while the other clusters stream DRAM?
#include <cooperative_groups.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>
namespace cg = cooperative_groups;

#include "probe.h"

// Clusters of even rank in the grid ping (mode 0: cluster barrier rounds, all threads; mode 1: the
// barrier then warp 0 reads the neighbour block's word over DSMEM, chained; mode 2: thread 0's chained
// L2 atomics); clusters of odd rank stream DRAM with 16-byte loads when `stream`, until every pinging
// block is done (a global count), else idle.
__global__ void probe(int mode, int rounds, int stream, const int4* __restrict__ big, size_t big_n, int* l2words,
                      unsigned long long* out, int* sink, int* done) {
  extern __shared__ int4 sm[];
  cg::cluster_group cl = cg::this_cluster();
  int* myword = reinterpret_cast<int*>(sm);
  const int warp = threadIdx.x >> 5;
  const int cid = blockIdx.x / cl.num_blocks();
  const int n_ping = (gridDim.x / cl.num_blocks() + 1) / 2;
  if (threadIdx.x == 0) *myword = blockIdx.x;
  cl.sync();
  if (cid % 2 == 0) {
    unsigned long long t0 = gtime();
    int acc = 0;
    for (int r = 0; r < rounds; ++r) {
      if (mode == 0) {
        asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
      } else if (mode == 1) {
        asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
        if (warp == 0) {
          int* other = cl.map_shared_rank(myword, (cl.block_rank() + 1) % cl.num_blocks());
          acc += *reinterpret_cast<volatile int*>(other);
        }
      } else if (threadIdx.x == 0) {
        acc += atomicAdd(l2words + blockIdx.x * 32, acc & 1);
      }
    }
    unsigned long long t1 = gtime();
    if (threadIdx.x == 0) {
      out[blockIdx.x] = t1 - t0;
      sink[blockIdx.x] = acc;
      __threadfence();
      atomicAdd(done, 1);
    }
  } else if (stream) {
    __shared__ volatile int stop;
    if (threadIdx.x == 0) stop = 0;
    __syncthreads();
    const int n_stream_blocks = gridDim.x - n_ping * cl.num_blocks();
    const int sb = (cid / 2) * cl.num_blocks() + cl.block_rank();
    size_t nthr = (size_t)n_stream_blocks * blockDim.x;
    size_t i = (size_t)sb * blockDim.x + threadIdx.x;
    int4 s = make_int4(0, 0, 0, 0);
    int it = 0;
    while (!stop) {
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        int4 v = __ldcs(big + i);
        s.x ^= v.x;
        s.y ^= v.y;
        i += nthr;
        if (i >= big_n) i -= big_n;
      }
      ++it;
      if (threadIdx.x == 0 && (it & 7) == 0 && *reinterpret_cast<volatile int*>(done) >= n_ping * cl.num_blocks())
        stop = 1;
    }
    if (s.x == 0x12345 && s.y == 7) sink[gridDim.x + blockIdx.x] = s.x;
    if (threadIdx.x == 0) out[blockIdx.x] = it;
  }
  cl.sync();
}

// A launch of `blocks` blocks of 512 threads in clusters of `cs`, with `smem` bytes of dynamic shared
// memory; `a` holds the cluster attribute the config points at.
static cudaLaunchConfig_t cluster_launch(int blocks, int cs, int smem, cudaLaunchAttribute& a) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(512);
  cfg.dynamicSmemBytes = smem;
  a.id = cudaLaunchAttributeClusterDimension;
  a.val.clusterDim.x = cs;
  a.val.clusterDim.y = 1;
  a.val.clusterDim.z = 1;
  cfg.attrs = &a;
  cfg.numAttrs = 1;
  return cfg;
}

int main() {
  int smem = 200 * 1024;
  CK(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(probe, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  int sizes[] = {1, 2, 4, 8, 16};
  for (int cs : sizes) {
    cudaLaunchAttribute a;
    const cudaLaunchConfig_t cfg = cluster_launch(cs * 16, cs, smem, a);
    int n = -1;
    cudaError_t e = cudaOccupancyMaxActiveClusters(&n, probe, &cfg);
    printf("cluster %2d, 512 threads, %d KB smem: max active clusters %d (%d SMs) %s\n", cs, smem / 1024, n, n * cs,
           e ? cudaGetErrorString(e) : "");
  }
  size_t big_bytes = 4ull << 30;
  size_t big_n = big_bytes / 16;
  int4* big;
  CK(cudaMalloc(&big, big_bytes));
  CK(cudaMemset(big, 1, big_bytes));
  int* l2;
  CK(cudaMalloc(&l2, 256 * 32 * 4));
  CK(cudaMemset(l2, 0, 256 * 32 * 4));
  int* done;
  CK(cudaMalloc(&done, 4));
  unsigned long long* out;
  CK(cudaMalloc(&out, 256 * 8));
  int* sink;
  CK(cudaMalloc(&sink, 1024 * 4));
  const char* names[] = {"cluster barrier", "barrier + DSMEM read", "L2 atomic round trip"};
  for (int cs : {8, 16}) {
    int nblk = 128;
    for (int stream = 0; stream < 2; ++stream)
      for (int mode = 0; mode < 3; ++mode) {
        int rounds = mode == 2 ? 2000 : 20000;
        cudaLaunchAttribute a;
        const cudaLaunchConfig_t cfg = cluster_launch(nblk, cs, smem, a);
        cudaEvent_t e0, e1;
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        CK(cudaMemset(done, 0, 4));
        CK(cudaLaunchKernelEx(&cfg, probe, mode, 10, stream, (const int4*)big, big_n, l2, out, sink, done));
        CK(cudaMemset(done, 0, 4));
        CK(cudaDeviceSynchronize());
        cudaEventRecord(e0);
        CK(cudaLaunchKernelEx(&cfg, probe, mode, rounds, stream, (const int4*)big, big_n, l2, out, sink, done));
        cudaEventRecord(e1);
        CK(cudaDeviceSynchronize());
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        std::vector<unsigned long long> all(nblk), h;
        cudaMemcpy(all.data(), out, nblk * 8, cudaMemcpyDeviceToHost);
        for (int b = 0; b < nblk; ++b)
          if ((b / cs) % 2 == 0) h.push_back(all[b]);
        std::sort(h.begin(), h.end());
        double med = h[h.size() / 2] / (double)rounds, mx = h.back() / (double)rounds;
        double streamed = 0;
        for (int b = 0; b < nblk; ++b)
          if ((b / cs) % 2 == 1) streamed += (double)all[b] * 8 * 16 * 512;
        double ping_ns = h.back();
        // bytes streamed over the kernel: approximated by the kernel's time at the read rate is not known;
        printf("cluster %2d %-22s %s: %.3f us a round (median block), %.3f max; kernel %.3f ms, streamed %.0f GB/s\n",
               cs, names[mode], stream ? "with DRAM streamed" : "idle              ", med / 1000.0, mx / 1000.0, ms,
               stream ? streamed / (ms * 1e6) : 0.0);
      }
  }
  // The streaming rate reached by warps 1.. alone (mode 2 with rounds chosen to last ~2 ms): measured by
  // a plain read kernel for reference
  return 0;
}
