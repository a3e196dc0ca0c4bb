// A card probe (scripts/probes/build.sh builds it; docs/perf.md, forty-fifth session): a whole decode
// step's products in ONE persistent launch whose warps stream their weights ahead across the step's
// dependencies. The question before any such kernel is built: with every weight byte independent of
// the activations, can the DRAM stay busy through the edges (a product waiting for the one before, the
// attention's chain of L2 round trips), so that a step costs its bytes over the read rate plus little?
// The lane today pays ~2-2.6 us of ramp and tail at each of ~5 launches a layer (edge_probe).
//
// The step is a list of ops, each dependent on the one before: products y = clamp(W x >> 12) (int8
// weights row-major [n_out][k], int8 x; 16-byte loads and dp4a, a Q8_0-sized stream less its scales)
// and "attention" ops (no weights: A warps each run a chain of L dependent L2 loads, then write the
// next product's x). Every warp of the grid (132 blocks x 16 warps, one block an SM, cooperative)
// owns a contiguous range of each product's rows; its own ring of S slots of 3 KB in shared memory is
// filled by TMA bulk copies of its next bytes in op order, across op boundaries: a fill never waits for
// an activation, only for a free slot. Before product i a block waits (thread 0, ld.acquire) until
// every warp with rows in op i - 1 has added 1 to op i - 1's counter, then stages x (L2, 16-byte loads)
// and walks its rows from the ring; the slots it frees are refilled at once with the bytes after.
//
// Printed: per step shape, the step's time (median of 20 launches), its bytes over that time, the same
// launch without the waits and without x (the stream's own rate through the same code: wrong values),
// a check that the GPU's outputs equal a host reference of the same chain, exactly (the counters work),
// and one launch stamped by op. Forms (compile-time): SIGNAL (how a warp says it is done), SIDE_LANE
// (which lane polls and signals), DEFER_LAST_FILL (the slot an op's last chunk frees refilled after the
// signal), PACE (fills in flight a warp), SLOTS x CHUNK (the ring). build.sh builds the first form and
// the two the forty-fifth session measured best (docs/perf.md).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "probe.h"

#ifndef SLOTS
#define SLOTS 4
#endif
#ifndef CHUNK
#define CHUNK 3072
#endif
constexpr int kWarps = 16, kSlots = SLOTS, kChunk = CHUNK, kMaxOps = 256, kBuf = 160 * 1024;
constexpr int kRing = kWarps * kSlots * kChunk;  // 192 KB
constexpr int kMaxK = 12288;

struct Op {
  const int8_t* w;  // products: [n_out][k] row-major; null: an attention op
  const int8_t* x;  // its input (k bytes)
  int8_t* y;        // its output (n_out bytes)
  int n_out, k;
  unsigned count;   // how many warps add 1 to its counter when done
};
__constant__ Op ops[kMaxOps];

__host__ __device__ inline int8_t weight_at(uint64_t seed, uint64_t i) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + i;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<int8_t>(static_cast<int>(z % 255) - 127);
}

__global__ void fill_weights(int8_t* w, uint64_t n, uint64_t seed) {
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
    w[i] = weight_at(seed, i);
}

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// How a warp says it is done with an op (-DSIGNAL=): 0 a gpu fence then a relaxed atomic add; 1 a release
// add (no fence); 2 as 1, once a block: the block's last warp with rows in the op adds (an acq_rel add on
// a shared counter finds it), so 132 adds an op reach the counter, not 2,112.
#ifndef SIGNAL
#define SIGNAL 0
#endif
// The lane that waits for an op and says it is done (-DSIDE_LANE=): 0 is the lane that asks for the
// ring's fills; another never has a bulk copy of its own in flight.
#ifndef SIDE_LANE
#define SIDE_LANE 0
#endif
constexpr int kSide = SIDE_LANE;
// -DDEFER_LAST_FILL=1: the slot an op's last chunk frees is refilled after the warp's signal, not before
#ifndef PACE
#define PACE 0
#endif
// Paced, the waiting warps pump their rings: warp 0 polls and raises a flag in shared memory the others
// spin on (-DPUMP_WAIT=0/1 overrides); unpaced, the block waits for its side thread at a barrier.
#ifndef PUMP_WAIT
#define PUMP_WAIT (PACE > 0)
#endif
constexpr bool kPumpWhileWaiting = PUMP_WAIT;
#ifndef DEFER_LAST_FILL
#define DEFER_LAST_FILL 0
#endif
__device__ __forceinline__ void signal_done(unsigned* p) {
  if (SIGNAL == 0) {
    __threadfence();
    atomicAdd(p, 1u);
  } else {
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(p) : "memory");
  }
}
__device__ __forceinline__ unsigned shared_add_acq_rel(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.acq_rel.cta.shared::cta.add.u32 %0, [%1], %2;"
               : "=r"(old)
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(p))), "r"(v)
               : "memory");
  return old;
}
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ bool ring_landed(unsigned bar, unsigned parity) {
  unsigned ok;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}
__device__ __forceinline__ void ring_wait(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra W;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// The host's and the device's attention chain: L dependent loads of a 4 MB table, from seed s.
__host__ __device__ inline unsigned chain_next(unsigned v, int j) { return (v * 2654435761u + j) & ((1u << 20) - 1); }

// The warp g's rows of op `o` as bytes [b0, b1) of its matrix (empty for an attention op).
__device__ __forceinline__ void warp_bytes(const Op& o, int g, int n_warps, long long& b0, long long& b1) {
  if (!o.w) {
    b0 = b1 = 0;
    return;
  }
  b0 = (long long)o.n_out * g / n_warps * o.k;
  b1 = (long long)o.n_out * (g + 1) / n_warps * o.k;
}

__global__ void __launch_bounds__(32 * kWarps, 1)
    step(int n_ops, unsigned epoch, unsigned* done, const unsigned* table, int chain_len, int n_att, int wait,
         unsigned long long* stamps) {
  // stamps (null: none), 6 an op: [0] the last block's thread 0 starts its wait, [1] sees the count, [2] x
  // staged, [3] its warp 0's first slot of the op landed, [4] warp 0 done; [5] the op's last warp done
  // (atomicMax over every warp); for an attention op [1] and [4] are block 0's attention warp's.
  const bool stamp_block = stamps && blockIdx.x == gridDim.x - 1;
  extern __shared__ __align__(128) uint8_t sm[];
  __shared__ __align__(8) unsigned long long full[kWarps][kSlots];
  __shared__ unsigned block_done[2];
  __shared__ unsigned go;  // the block's flag: i + 1 once op i - 1 is done everywhere (warp 0 raises it)
  if (threadIdx.x < 2) block_done[threadIdx.x] = 0;
  if (threadIdx.x == 0) go = 0;
  __syncthreads();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int n_warps = gridDim.x * kWarps, g = blockIdx.x * kWarps + warp;
  uint8_t* ring = sm + warp * kSlots * kChunk;
  int8_t* xs = reinterpret_cast<int8_t*>(sm + kRing);  // two x buffers of kMaxK
  if (lane == 0) {
    for (int s = 0; s < kSlots; ++s)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&full[warp][s])) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncwarp();

  // Weights are read once a step: evict-first in L2 (as the lane's Q8_0 products ask).
  uint64_t evict_first;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(evict_first));
  // The fill cursor: the warp's next bytes, in op order, across ops.
  int f_op = -1;
  const int8_t *f_at = nullptr, *f_end = nullptr;
  unsigned f_seq = 0;
  auto fill = [&]() -> bool {
    while (f_at == f_end && f_op < n_ops) {  // the next op with bytes of this warp's
      if (++f_op == n_ops) return false;
      long long b0, b1;
      warp_bytes(ops[f_op], g, n_warps, b0, b1);
      f_at = ops[f_op].w + b0;
      f_end = ops[f_op].w + b1;
    }
    if (f_op >= n_ops) return false;
    const int len = static_cast<int>(min((long long)kChunk, (long long)(f_end - f_at)));
    const int s = f_seq % kSlots;
    if (lane == 0) {
      const unsigned bar = smem_addr(&full[warp][s]);
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(len) : "memory");
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], "
          "%4;" ::"r"(smem_addr(ring + s * kChunk)),
          "l"(f_at), "r"(len), "r"(bar), "l"(evict_first)
          : "memory");
    }
    f_at += len;
    ++f_seq;
    return true;
  };
  // Pacing (-DPACE=N > 0): at most N of the warp's fills in flight (asked, not landed); landed ones
  // wait in their slots. PACE 0: a slot is refilled as soon as it is read (every free slot in flight).
  unsigned c_seq = 0, l_seq = 0;  // consumed; known landed
  auto pump = [&] {
    if (PACE == 0) {
      while (f_seq - c_seq < kSlots && fill()) {
      }
      return;
    }
    l_seq = max(l_seq, c_seq);
    while (l_seq < f_seq && ring_landed(smem_addr(&full[warp][l_seq % kSlots]), (l_seq / kSlots) & 1)) ++l_seq;
    while (f_seq - c_seq < kSlots && f_seq - l_seq < PACE && fill()) {
    }
  };
  pump();
  for (int i = 0; i < n_ops; ++i) {
    const Op o = ops[i];
    if (!o.w) {  // attention: warp 0 of blocks 0 .. n_att - 1, after op i - 1
      if (warp == 0 && blockIdx.x < n_att) {
        if (wait == 1 && i > 0)
          for (;;) {  // the whole warp, pumping its ring between polls
            unsigned v = 0;
            if (lane == kSide) v = ld_acquire(done + i - 1);
            if (__shfl_sync(0xffffffffu, v, kSide) >= (epoch + 1) * ops[i - 1].count) break;
            pump();
          }
        if (stamps && lane == kSide && blockIdx.x == 0) stamps[6 * i + 1] = gtime();
        __syncwarp();
        unsigned v = blockIdx.x;
        if (lane == 0)
          for (int j = 0; j < chain_len; ++j) v = __ldcg(table + chain_next(v, j));
        v = __shfl_sync(0xffffffffu, v, 0);
        const int r0 = o.n_out * blockIdx.x / n_att, r1 = o.n_out * (blockIdx.x + 1) / n_att;
        for (int r = r0 + lane; r < r1; r += 32) o.y[r] = static_cast<int8_t>(__ldcg(o.x + r) ^ (int8_t)(v & 3));
        __syncwarp();
        if (lane == kSide) {
          if (stamps) {
            const unsigned long long t = gtime();
            atomicMax(stamps + 6 * i + 5, t);
            if (blockIdx.x == 0) stamps[6 * i + 4] = t;
          }
          signal_done(done + i);  // (one warp a block: SIGNAL 2 is SIGNAL 1 here)
        }
      }
      continue;
    }
    // A product: op i - 1 done, x staged (all of the block's warps), then the warp's rows.
    if (stamp_block && threadIdx.x == kSide) stamps[6 * i] = gtime();
    if (!kPumpWhileWaiting) {  // the side thread polls op i - 1's count while the block waits at a barrier
      if (threadIdx.x == kSide && wait == 1 && i > 0)
        while (ld_acquire(done + i - 1) < (epoch + 1) * ops[i - 1].count) {
        }
      if (wait != 2) __syncthreads();
    } else {
      // Warp 0 polls op i - 1's count and raises the block's flag; every warp pumps its ring meanwhile.
      if (warp == 0) {
        if (wait == 1 && i > 0)
          for (;;) {
            unsigned v = 0;
            if (lane == kSide) v = ld_acquire(done + i - 1);
            if (__shfl_sync(0xffffffffu, v, kSide) >= (epoch + 1) * ops[i - 1].count) break;
            pump();
          }
        if (lane == 0) {
          __threadfence_block();
          *reinterpret_cast<volatile unsigned*>(&go) = i + 1;
        }
      } else {
        for (;;) {
          unsigned v = 0;
          if (lane == 0) v = *reinterpret_cast<volatile unsigned*>(&go);
          // (at least: without the waits and x, wait 2, warp 0 may run ops ahead with no barrier between)
          if (__shfl_sync(0xffffffffu, v, 0) >= static_cast<unsigned>(i + 1)) break;
          pump();
        }
        __threadfence_block();
      }
    }
    if (stamp_block && threadIdx.x == kSide) stamps[6 * i + 1] = gtime();
    int8_t* x = xs + (i & 1) * kMaxK;
    if (wait != 2) {  // 2: neither the wait nor x (the ring's stream alone through the same loop)
      for (int j = threadIdx.x; j < o.k / 16; j += blockDim.x)
        reinterpret_cast<int4*>(x)[j] = __ldcg(reinterpret_cast<const int4*>(o.x) + j);
      __syncthreads();
    }
    if (stamp_block && threadIdx.x == 0) stamps[6 * i + 2] = gtime();
    long long b0, b1;
    warp_bytes(o, g, n_warps, b0, b1);
    if (b0 == b1) continue;
    int acc = 0;
    long long row = b0 / o.k;  // the warp's bytes start a row; a 512-byte stripe lies in one (k % 512 == 0)
    int col = 0;
    for (long long off = b0; off < b1; off += kChunk) {
      const int len = static_cast<int>(min((long long)kChunk, b1 - off)), s = c_seq % kSlots;
      ring_wait(smem_addr(&full[warp][s]), (c_seq / kSlots) & 1);
      if (stamp_block && threadIdx.x == 0 && off == b0) stamps[6 * i + 3] = gtime();
      const uint8_t* slot = ring + s * kChunk;
      for (int st = 0; st < len; st += 512) {
        const int4 wv = *reinterpret_cast<const int4*>(slot + st + 16 * lane);
        const int4 xv = *reinterpret_cast<const int4*>(x + col + 16 * lane);
        acc = __dp4a(wv.x, xv.x, acc);
        acc = __dp4a(wv.y, xv.y, acc);
        acc = __dp4a(wv.z, xv.z, acc);
        acc = __dp4a(wv.w, xv.w, acc);
        if ((col += 512) == o.k) {
          acc = __reduce_add_sync(0xffffffffu, acc);
          if (lane == 0) o.y[row] = static_cast<int8_t>(max(-127, min(127, acc >> 12)));
          acc = 0;
          col = 0;
          ++row;
        }
      }
      __syncwarp();  // every lane has read the slot: refill it
      ++c_seq;
      if (!DEFER_LAST_FILL || off + kChunk < b1) pump();
    }
    __syncwarp();
    if (lane == kSide) {
      if (stamps) {
        const unsigned long long t = gtime();
        atomicMax(stamps + 6 * i + 5, t);
        if (stamp_block && warp == 0) stamps[6 * i + 4] = t;
      }
      if (SIGNAL == 2) {
        // the block's warps with rows in op i: those whose ranges are not empty
        int with_rows = 0;
        for (int w = 0; w < kWarps; ++w) {
          long long c0, c1;
          warp_bytes(o, blockIdx.x * kWarps + w, n_warps, c0, c1);
          with_rows += c0 != c1;
        }
        unsigned* counter = &block_done[i & 1];
        if (shared_add_acq_rel(counter, 1u) + 1 == static_cast<unsigned>(with_rows)) {
          *counter = 0;  // next used by op i + 2, after every warp's staging barrier of op i + 1
          signal_done(done + i);
        }
      } else {
        signal_done(done + i);
      }
    }
    if (DEFER_LAST_FILL) {
      __syncwarp();
      pump();
    }
  }
}

// One step shape: per layer a merged q/k/v, the attention, o, a merged gate/up, down; then the output.
struct Shape {
  const char* name;
  int layers, embd, qkv, att_out, ff;
  long long vocab;
};

struct HostOp {
  uint64_t seed;
  long long n_out, k;
  bool att;
};

// The host's reference of the chain: the same ops on the same bytes.
std::vector<int8_t> reference(const std::vector<HostOp>& hs, const std::vector<int8_t>& x0, const std::vector<unsigned>& table,
                              int chain_len, int n_att) {
  std::vector<int8_t> buf[2] = {std::vector<int8_t>(kBuf, 0), std::vector<int8_t>(kBuf, 0)};
  const int8_t* x = x0.data();
  for (size_t i = 0; i < hs.size(); ++i) {
    int8_t* y = buf[i & 1].data();
    const HostOp& h = hs[i];
    if (h.att) {
      for (int b = 0; b < n_att; ++b) {
        unsigned v = b;
        for (int j = 0; j < chain_len; ++j) v = table[chain_next(v, j)];
        const long long r0 = h.n_out * b / n_att, r1 = h.n_out * (b + 1) / n_att;
        for (long long r = r0; r < r1; ++r) y[r] = static_cast<int8_t>(x[r] ^ (int8_t)(v & 3));
      }
    } else {
      const int n_threads = std::max(1u, std::thread::hardware_concurrency());
      std::vector<std::thread> pool;
      for (int p = 0; p < n_threads; ++p)
        pool.emplace_back([&, p] {
          for (long long r = p; r < h.n_out; r += n_threads) {
            int acc = 0;
            for (long long c = 0; c < h.k; ++c) acc += weight_at(h.seed, r * h.k + c) * x[c];
            y[r] = static_cast<int8_t>(std::max(-127, std::min(127, acc >> 12)));
          }
        });
      for (auto& t : pool) t.join();
    }
    x = y;
  }
  return std::vector<int8_t>(x, x + hs.back().n_out);
}

int main(int argc, char** argv) {
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int smem = kRing + 2 * kMaxK;
  CK(cudaFuncSetAttribute(step, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const Shape shapes[] = {{"qwen3-0.6b", 28, 1024, 4096, 2048, 3072, 151936},
                          {"qwen3-8b", 36, 4096, 6144, 4096, 12288, 151936}};
  const bool check = !(argc > 1 && !strcmp(argv[1], "--no-check"));
  unsigned* table;
  std::vector<unsigned> h_table(1u << 20);
  for (size_t i = 0; i < h_table.size(); ++i) h_table[i] = static_cast<unsigned>(weight_at(7, i) & 0xFFFFF) ^ (i >> 3);
  for (auto& v : h_table) v &= (1u << 20) - 1;
  CK(cudaMalloc(&table, h_table.size() * 4));
  CK(cudaMemcpy(table, h_table.data(), h_table.size() * 4, cudaMemcpyHostToDevice));
  int8_t *x0, *bufs;
  CK(cudaMalloc(&x0, kBuf));
  CK(cudaMalloc(&bufs, 2 * kBuf));
  std::vector<int8_t> h_x0(kBuf);
  for (int i = 0; i < kBuf; ++i) h_x0[i] = weight_at(3, i);
  CK(cudaMemcpy(x0, h_x0.data(), kBuf, cudaMemcpyHostToDevice));
  unsigned* done;
  CK(cudaMalloc(&done, kMaxOps * 4));
  unsigned long long* stamps;
  CK(cudaMalloc(&stamps, 6 * 8 * kMaxOps));
  printf("%d blocks x %d warps, rings of %d x %d bytes a warp, signal %d by lane %d, last fill deferred %d, pace %d%s; us a "
         "step (median of 20)\n", sms, kWarps, kSlots, kChunk, SIGNAL, kSide, DEFER_LAST_FILL, PACE,
         kPumpWhileWaiting ? " (waiting warps pump)" : "");
  for (const Shape& sh : shapes) {
    for (int chain_len : {0, 8}) {
      const int n_att = 8;
      std::vector<HostOp> hs;
      for (int l = 0; l < sh.layers; ++l) {
        hs.push_back({100ull + 8 * l, sh.qkv, sh.embd, false});
        hs.push_back({0, sh.att_out, 0, true});
        hs.push_back({101ull + 8 * l, sh.embd, sh.att_out, false});
        hs.push_back({102ull + 8 * l, 2LL * sh.ff, sh.embd, false});
        hs.push_back({103ull + 8 * l, sh.embd, sh.ff, false});
      }
      hs.push_back({99, sh.vocab, sh.embd, false});
      long long bytes = 0;
      for (const HostOp& h : hs) bytes += h.att ? 0 : h.n_out * h.k;
      int8_t* w;
      CK(cudaMalloc(&w, bytes + 128 * hs.size()));
      std::vector<Op> dev(hs.size());
      long long at = 0;
      const int n_warps = sms * kWarps;
      for (size_t i = 0; i < hs.size(); ++i) {
        const HostOp& h = hs[i];
        Op& o = dev[i];
        o.x = i == 0 ? x0 : bufs + ((i - 1) & 1) * kBuf;
        o.y = bufs + (i & 1) * kBuf;
        o.n_out = static_cast<int>(h.n_out);
        o.k = static_cast<int>(h.k);
        if (h.att) {
          o.w = nullptr;
          o.count = n_att;
          o.k = 0;
        } else {
          o.w = w + at;
          fill_weights<<<1024, 256>>>(w + at, h.n_out * h.k, h.seed);
          at += (h.n_out * h.k + 127) / 128 * 128;
          unsigned c = 0;
          for (int gw = 0; gw < n_warps; ++gw) {
            const bool rows = (h.n_out * gw / n_warps) != (h.n_out * (gw + 1) / n_warps);
            // SIGNAL 2: a block adds once, by the last of its warps with rows
            bool block_first = true;
            if (SIGNAL == 2)
              for (int w = gw - gw % kWarps; w < gw; ++w)
                block_first &= (h.n_out * w / n_warps) == (h.n_out * (w + 1) / n_warps);
            c += rows && block_first;
          }
          o.count = c;
        }
      }
      CK(cudaMemcpyToSymbol(ops, dev.data(), sizeof(Op) * dev.size()));
      CK(cudaMemset(done, 0, kMaxOps * 4));
      CK(cudaDeviceSynchronize());
      int n_ops = static_cast<int>(hs.size());
      unsigned epoch = 0;
      unsigned long long* stamps_arg = nullptr;
      auto launch = [&](int wait) -> cudaError_t {
        void* args[] = {&n_ops, &epoch, &done, &table, &chain_len, (void*)&n_att, &wait, &stamps_arg};
        cudaError_t e = cudaLaunchCooperativeKernel((void*)step, sms, 32 * kWarps, args, smem, 0);
        ++epoch;
        return e;
      };
      cudaEvent_t e0, e1;
      cudaEventCreate(&e0);
      cudaEventCreate(&e1);
      float med[3];
      for (int wait : {1, 0, 2}) {  // (the no-wait launches only add to the counters; the check resets them)
        std::vector<float> t;
        for (int r = 0; r < 23; ++r) {
          cudaEventRecord(e0);
          CK(launch(wait));
          cudaEventRecord(e1);
          CK(cudaEventSynchronize(e1));
          float ms;
          cudaEventElapsedTime(&ms, e0, e1);
          if (r >= 3) t.push_back(ms * 1000.0f);
        }
        std::sort(t.begin(), t.end());
        med[wait == 1 ? 0 : wait == 0 ? 1 : 2] = t[t.size() / 2];
      }
      // the check: a waited launch's output against the host's chain
      const char* verdict = "not checked";
      if (check) {
        CK(cudaMemset(done, 0, kMaxOps * 4));
        epoch = 0;
        CK(launch(1));
        CK(cudaDeviceSynchronize());
        std::vector<int8_t> got(hs.back().n_out);
        CK(cudaMemcpy(got.data(), dev.back().y, got.size(), cudaMemcpyDeviceToHost));
        const std::vector<int8_t> want = reference(hs, h_x0, h_table, chain_len, n_att);
        verdict = got == want ? "equal to the host's" : "DIFFERENT from the host's";
      }
      printf("%-11s attention chain %2d: %8.1f us a step (%4.0f tok/s), %6.0f GB/s, %.1f MB; without the waits "
             "%8.1f us (%4.0f GB/s); nor x %8.1f us (%4.0f GB/s); output %s\n",
             sh.name, chain_len, med[0], 1e6 / med[0], bytes / med[0] / 1e3, bytes / 1e6, med[1], bytes / med[1] / 1e3,
             med[2], bytes / med[2] / 1e3, verdict);
      if (chain_len > 0) {  // one stamped launch (the atomicMax a warp adds a little): medians by op, us
        CK(cudaMemset(stamps, 0, 6 * 8 * kMaxOps));
        stamps_arg = stamps;
        CK(launch(1));
        CK(cudaDeviceSynchronize());
        stamps_arg = nullptr;
        std::vector<unsigned long long> st(6 * kMaxOps);
        CK(cudaMemcpy(st.data(), stamps, st.size() * 8, cudaMemcpyDeviceToHost));
        const char* names[5] = {"q/k/v", "attention", "o", "gate/up", "down"};
        printf("  stamped (last block, its warp 0), medians over layers, us: seen = the wait's end less the op "
               "before's last warp's end (before its signal); x; first = its first slot landed after x; run; last = the op's last warp less "
               "warp 0's end; period = last warp to last warp\n");
        for (int kind = 0; kind < 5; ++kind) {
          std::vector<double> c[6];
          for (int l = 1; l < sh.layers; ++l) {
            const int i = 5 * l + kind;
            const unsigned long long* a = &st[6 * i];
            const unsigned long long prev_last = st[6 * (i - 1) + 5];
            c[0].push_back((double)(long long)(a[1] - prev_last) / 1e3);
            if (kind != 1) {
              c[1].push_back((double)(long long)(a[2] - a[1]) / 1e3);
              if (a[3]) c[2].push_back((double)(long long)(a[3] - a[2]) / 1e3);
              if (a[3] && a[4]) c[3].push_back((double)(long long)(a[4] - a[3]) / 1e3);
            } else {
              c[3].push_back((double)(long long)(a[4] - a[1]) / 1e3);
            }
            if (a[4]) c[4].push_back((double)(long long)(a[5] - a[4]) / 1e3);
            c[5].push_back((double)(long long)(a[5] - prev_last) / 1e3);
          }
          auto med = [](std::vector<double> v) {
            if (v.empty()) return -1.0;
            std::sort(v.begin(), v.end());
            return v[v.size() / 2];
          };
          printf("  %-10s seen %6.2f  x %6.2f  first %6.2f  run %6.2f  last %6.2f  period %6.2f\n", names[kind],
                 med(c[0]), med(c[1]), med(c[2]), med(c[3]), med(c[4]), med(c[5]));
        }
      }
      CK(cudaFree(w));
    }
  }
  return 0;
}
