// The mixture's split feed-forward half in one wave (LATHE_MOE_SPLIT=ring; docs/perf.md, thirty-seventh
// session): ffn_split_launch.h's moe_split with 64 intermediate values a block where ffn_split.cuh's
// lathe_moe_split_* takes 32, so qwen3-30b-a3b's 8 kept experts x 768 values are 96 blocks, one wave on
// the H200's 132 SMs (the 32-value form's 192 blocks of ~215 KB ran as two waves: ms1, -10%). A block's
// gate and up rows (128 of them, 278 KB at E 2048) cannot be staged whole beside its down slices, so
// each warp streams its own rows through a two-row ring (cp.async), and the block's two slices of down
// (slices 2j and 2j + 1 of its expert: adjacent in relay_down_stack_by_slices's stack) are staged in
// eighths, an eighth with each of the warps' rows 0..7, so they land while gate/up streams and the first
// row waits only for x's form and an eighth (asked for in one group with x's form, the slices would hold
// back row 0 until all 139 KB had landed). Nothing is asked for before the wait: which rows depends on
// the router's ids, made by the launch before.
//
// Block b: kept slot k = b / (F / 64), values [64 j, 64 j + 64) of expert e = ids[k], j = b % (F / 64):
//   warp w (of 16) takes values 64 j + 4 w .. + 3: rows gate_v, up_v in turn through its ring, each row's
//     lanes taking blocks l, l + 32, ... of x's form (the router's, staged), a = silu(g) u;
//   a's two 32-value blocks quantized (the contract's levels);
//   p_r = down_e[r][64 j .. 64 j + 63] . a for every r < E (a thread a row, both slices), s_out[r] +=
//     fix(w_k p_r); block 0 adds fix(s) too; zero = 0 (spread over the blocks).
// The same arithmetic as lathe_moe_split_body but each row's two slices summed in f32 before one fix
// (the 32-value form rounds each slice's partial to 2^-32 apart). stamps: 0, or [gridDim.x][8] (thread
// 0): entry, the wait, the copies asked for, the residual added, the first row landed, gate/up done,
// a's levels, the end.

#define LATHE_MSR_WARPS 16

template <int C>
__device__ __forceinline__ void lathe_moe_split_ring_body(const uint8_t* gate, const uint8_t* up,
                                                          const uint8_t* down_slices, int E, int F, const int8_t* x_q,
                                                          const int* ids, const float* wts, const float* s,
                                                          long long* s_out, long long* zero, unsigned long long* stamps) {
  extern __shared__ uint4 lathe_ffns_smem[];
  unsigned long long* stamp = stamps && threadIdx.x == 0 ? stamps + 8 * blockIdx.x : nullptr;
  if (stamp) stamp[0] = lathe_globaltimer();
  const int per_expert = F / 64, k = blockIdx.x / per_expert, j = blockIdx.x % per_expert;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int nb = E / 32;
  const unsigned rb = 34u * static_cast<unsigned>(nb);  // a row's bytes (a multiple of 16: E % 256 == 0)
  // Shared memory: down's two slices [2][E][34], x's levels [2][E] (C of them used), x's scales [nb]
  // float4, the warps' rings [16][2][rb], a [64], a's levels [64] and [64], their scales [2] float4.
  uint8_t* wd = reinterpret_cast<uint8_t*>(lathe_ffns_smem);
  int8_t* xq1 = reinterpret_cast<int8_t*>(wd + 68LL * E);
  int8_t* xq2 = xq1 + E;
  float4* xd = reinterpret_cast<float4*>(xq1 + 2LL * E);
  uint8_t* rings = reinterpret_cast<uint8_t*>(xd + nb);
  float* av = reinterpret_cast<float*>(rings + 2LL * LATHE_MSR_WARPS * rb);
  int8_t* aq1 = reinterpret_cast<int8_t*>(av + 64);
  int8_t* aq2 = aq1 + 64;
  float4* ad = reinterpret_cast<float4*>(aq2 + 64);
  const unsigned sd = static_cast<unsigned>(__cvta_generic_to_shared(wd));
  const unsigned sq = static_cast<unsigned>(__cvta_generic_to_shared(xq1));
  const unsigned sxd = static_cast<unsigned>(__cvta_generic_to_shared(xd));
  const unsigned ring = static_cast<unsigned>(__cvta_generic_to_shared(rings)) + 2u * rb * static_cast<unsigned>(warp);

  lathe_pdl_entry();
  if (stamp) stamp[1] = lathe_globaltimer();
  const int e = ids[k];
  const float w = wts[k];
  // x's form (activations.h: levels [C][E], then a float4 a 32-value block): a group of its own.
  for (int i = threadIdx.x; i < C * E / 16; i += 32 * LATHE_MSR_WARPS) lathe_ffns_copy16(sq + 16 * i, x_q + 16LL * i);
  for (int i = threadIdx.x; i < nb; i += 32 * LATHE_MSR_WARPS)
    lathe_ffns_copy16(sxd + 16 * i, x_q + static_cast<long long>(C) * E + 16LL * i);
  asm volatile("cp.async.commit_group;\n" ::: "memory");
  const uint8_t* d0 = down_slices + 34LL * E * (static_cast<long long>(e) * (F / 32) + 2LL * j);
  const int down_chunks = 68 * E / 16;  // 16-byte pieces of the two slices; E % 256 == 0, so 8 | down_chunks
  // The warp's row i (0..7): value 64 j + 4 warp + i / 2, gate's (even i) or up's, into stage i % 2, and
  // this thread's share of the slices' eighth i; an empty group past the last, so that every wait below
  // leaves exactly the newest group in flight.
  auto issue = [&](int i) {
    if (i < 8) {
      const long long v = static_cast<long long>(e) * F + 64LL * j + 4 * warp + i / 2;
      const uint8_t* src = (i % 2 ? up : gate) + v * rb;
      const unsigned dst = ring + static_cast<unsigned>(i % 2) * rb;
      for (unsigned p = lane; p < rb / 16; p += 32) lathe_ffns_copy16(dst + 16u * p, src + 16LL * p);
      for (int q = i * (down_chunks / 8) + threadIdx.x; q < (i + 1) * (down_chunks / 8); q += 32 * LATHE_MSR_WARPS)
        lathe_ffns_copy16(sd + 16 * q, d0 + 16LL * q);
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  };
  issue(0);
  issue(1);
  if (stamp) stamp[2] = lathe_globaltimer();
  if (blockIdx.x == 0)
    for (int i = threadIdx.x; i < E; i += 32 * LATHE_MSR_WARPS)
      atomicAdd(reinterpret_cast<unsigned long long*>(s_out + i), lathe_ffns_fix(s[i]));
  for (int i = blockIdx.x * 32 * LATHE_MSR_WARPS + threadIdx.x; i < E; i += gridDim.x * 32 * LATHE_MSR_WARPS) zero[i] = 0;
  if (stamp) stamp[3] = lathe_globaltimer();

  float g = 0.0f;
  for (int i = 0; i < 8; ++i) {
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");  // row i and the slices' eighth i (at i = 0 x's form too)
    if (i == 0) {
      __syncthreads();  // x's form, copied by every thread of the block
      if (stamp) stamp[4] = lathe_globaltimer();
    } else {
      __syncwarp();  // row i, copied by the warp's lanes
    }
    const unsigned st = ring + static_cast<unsigned>(i % 2) * rb;
    float p = 0.0f;
    for (int kk = lane; kk < nb; kk += 32) {
      const float4 d = xd[kk];
      p += lathe_ffns_block_dot<C>(st + 34u * kk, xq1 + 32 * kk, xq2 + 32 * kk, d.x, d.y);
    }
    p = lathe_warp_sum(p);
    if (i % 2 == 0)
      g = p;
    else if (lane == 0)
      av[4 * warp + i / 2] = lathe_swiglu(g, p);
    __syncwarp();  // every lane done with stage i % 2 before it is asked for again
    issue(i + 2);
  }
  __syncthreads();
  if (stamp) stamp[5] = lathe_globaltimer();
  if (warp < 2) lathe_quantize_block32(av[32 * warp + lane], lane, C == 2, aq1 + 32 * warp, aq2 + 32 * warp, ad + warp);
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  __syncthreads();  // a's levels, and the slices (every thread's eighths)
  if (stamp) stamp[6] = lathe_globaltimer();

  // Down's two slices: row r's two blocks times a, the partial added into the sum.
  const float4 a0 = ad[0], a1 = ad[1];
  for (int r = threadIdx.x; r < E; r += 32 * LATHE_MSR_WARPS) {
    const float p = lathe_ffns_block_dot<C>(sd + 34u * r, aq1, aq2, a0.x, a0.y) +
                    lathe_ffns_block_dot<C>(sd + 34u * (E + r), aq1 + 32, aq2 + 32, a1.x, a1.y);
    atomicAdd(reinterpret_cast<unsigned long long*>(s_out + r), lathe_ffns_fix(w * p));
  }
  if (stamps) {
    __syncthreads();
    if (stamp) stamp[7] = lathe_globaltimer();
  }
}

// Kernels lathe_moe_split_ring_q8_0_<contract>: 512 threads, grid top_k x F / 64.
#define LATHE_MOE_SPLIT_RING_KERNEL(C, CNAME)                                                                    \
  extern "C" __global__ void __launch_bounds__(32 * LATHE_MSR_WARPS, 1) lathe_moe_split_ring_q8_0_##CNAME(       \
      const uint8_t* gate, const uint8_t* up, const uint8_t* down_slices, int E, int F, const int8_t* x_q,      \
      const int* ids, const float* wts, const float* s, long long* s_out, long long* zero,                     \
      unsigned long long* stamps) {                                                                            \
    lathe_moe_split_ring_body<C>(gate, up, down_slices, E, F, x_q, ids, wts, s, s_out, zero, stamps);          \
  }

LATHE_MOE_SPLIT_RING_KERNEL(1, int8)
LATHE_MOE_SPLIT_RING_KERNEL(2, int8x2)
