// The mixture of one decode row in ONE launch (fusion rule mixture_one_launch): the router and its top
// k, the kept experts' gate/up/SwiGLU and the down product with the weighted combine as three phases
// of one grid with two grid barriers between them, in place of moe_route.cuh's and moe_decode.cuh's
// three kernels. What it buys: each warp's weight stream does not stop at the phase boundary. The warp
// walks its gate/up items' chunks and then its down items' chunks through ONE ring, so while its last
// gate/up chunks are computed and the grid waits for every block's h, its first LATHE_GEMV1_STAGES - 1
// down chunks are already in flight (for qwen3-30b-a3b all of a warp's down chunks). The router is
// dealt over every SM's warps instead of one 8-block cluster.
//
// Bit for bit the three kernels' results (the held-back form; test_moe_gpu checks it): the router's
// units (expert, part) are the router kernel's, each summed by one warp in its lane order, and the parts
// added in part order; the top k is the same function on the same logits; x's and h's int8 forms are
// made by the same quantizers; every gate/up and down item is summed as the separate kernels sum it for
// the same group (moe_launch.cpp passes the groups those kernels would choose), whichever warp owns it.
//
// Shape: grid = the SM count, one block an SM (the ring and staged rows take more than half an SM's
// shared memory), 16 warps. The grid barriers need every block resident at once: they are, since the
// next kernel can launch (and take SMs) only after every block of this one has passed its
// programmatic-launch wait. sync: two counters, zero at the launch's start; the last block out sets
// them back. part_sums: [parts][n_expert] floats. One row (decode).
// Dynamic shared memory: the ring (LATHE_GEMV1_WARPS x stages x SLOT), then x as f32 [k] later reused
// for h's int8 form (max(4 k, staged(top_k n_ff)) bytes), then x's int8 form (staged(k)), each from a
// 16-byte boundary, then the top k's keys [n_expert] u64, the logits [n_expert] floats, the ids [top_k]
// and the route weights [top_k]. stages: the ring's slots a warp, 4 or LATHE_MOE_SINGLE_MAX_STAGES.

template <class FR>
__device__ __forceinline__ float lathe_moe_route_unit(const uint8_t* row, const float* sx, int first, int end) {
  const int lane = threadIdx.x & 31;
  float acc = 0.0f;
#pragma unroll 8  // the router kernel's sums (unroll 4 there: the order of the additions is the same)
  for (int q = first + lane; q < end; q += 32) {
    const int vi = q << 3;
    float wv[8];
    lathe_gemv_dequant8<FR>(row + static_cast<long long>(vi / FR::unit_values) * FR::unit_bytes,
                            (vi % FR::unit_values) >> 3, wv);
    const float4 a = reinterpret_cast<const float4*>(sx + vi)[0];
    const float4 b = reinterpret_cast<const float4*>(sx + vi)[1];
    float t = acc;
    t = fmaf(wv[0], a.x, t); t = fmaf(wv[1], a.y, t); t = fmaf(wv[2], a.z, t); t = fmaf(wv[3], a.w, t);
    t = fmaf(wv[4], b.x, t); t = fmaf(wv[5], b.y, t); t = fmaf(wv[6], b.z, t); t = fmaf(wv[7], b.w, t);
    acc = t;
  }
  return lathe_warp_sum(acc);
}

#define LATHE_MOE_SINGLE_MAX_STAGES 5  // the deepest ring the launcher may ask for (stages 4 or 5)

template <class FR, class FG, class FD, int C>
__device__ __forceinline__ void lathe_moe_single_body(
    const uint8_t* rw, long long r_row_bytes, const float* x, int k, int n_expert, int parts, int top_k, int renormalize,
    int flags, int* ids, float* weights, float* logits, float* part_sums, unsigned* sync, const float* nx,
    const float* ny, const float* nw, float eps, float* nsum, int norm_threads, const uint8_t* wg, const uint8_t* wu,
    long long gu_row_bytes, long long gu_expert_bytes, int n_ff, int group_gu, float* h, const uint8_t* wd,
    long long d_row_bytes, long long d_expert_bytes, int n_out, int group_d, int blocks_d, int segs, float* out,
    int stages, unsigned long long* trace) {
  extern __shared__ uint4 lathe_moe_single_smem[];
  // trace (a measurement, usually null): each block's thread 0 stamps the globaltimer at the phases'
  // edges, trace[stamp * grid + block]: entry, after the wait, before the first barrier, after it,
  // after the top k, before the second barrier, after it, after h's quantization, the end.
  auto stamp = [&](int i) {
    if (trace && threadIdx.x == 0) trace[i * gridDim.x + blockIdx.x] = lathe_globaltimer();
  };
  stamp(0);
  __shared__ float2 partial[2][LATHE_GEMV1_WARPS];
  __shared__ float norm_scratch[32];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int K = top_k * n_ff;
  uint8_t* base = reinterpret_cast<uint8_t*>(lathe_moe_single_smem);
  uint8_t* stage = base + warp * (stages * LATHE_GEMV1_SLOT);
  uint8_t* region = base + LATHE_GEMV1_WARPS * stages * LATHE_GEMV1_SLOT;
  const int h_bytes = K * C + K / 2, region_bytes = ((max(4 * k, h_bytes) + 15) >> 4) << 4;
  float* sx = reinterpret_cast<float*>(region);  // x in f32 (phase 0), then h's int8 form
  uint8_t* sh = region;
  uint8_t* sxq = region + region_bytes;  // x's int8 form
  unsigned long long* s_keys = reinterpret_cast<unsigned long long*>(sxq + (((k * C + k / 2) + 15) >> 4 << 4));
  float* sl = reinterpret_cast<float*>(s_keys + n_expert);
  int* s_ids = reinterpret_cast<int*>(sl + n_expert);
  float* s_w = reinterpret_cast<float*>(s_ids + top_k);

  // ---- phase 0: the router. Unit u = (expert u % n_expert, part u / n_expert) is block u % grid's
  // warp u / grid, so the units spread over the SMs; its rows are requested into L2 before the wait.
  const int n_units = n_expert * parts, pieces_row = k >> 3, per_part = (pieces_row + parts - 1) / parts;
  const int grid = gridDim.x;
  auto unit_of = [&](int i) { return i * grid + static_cast<int>(blockIdx.x); };  // this block's i-th unit
  for (int i = warp; unit_of(i) < n_units; i += LATHE_GEMV1_WARPS)
    lathe_moe_prefetch_unit<FR>(rw, r_row_bytes, unit_of(i), n_expert, pieces_row, per_part, lane);
  float norm_w[8];
  lathe_moe_load_norm_w(norm_w, nx, nw, k);
  lathe_pdl_entry();
  stamp(1);
  if (nx) {  // the router kernel's norm prologue, to the bit
    lathe_moe_norm_row(nx, ny, norm_w, k, norm_threads, eps, sx, blockIdx.x == 0 ? nsum : nullptr, norm_scratch);
  } else {
    for (int i = threadIdx.x; i < (k >> 2); i += blockDim.x)
      reinterpret_cast<float4*>(sx)[i] = reinterpret_cast<const float4*>(x)[i];
  }
  __syncthreads();
  // x's int8 form, the quantizer's bytes: 8 threads a 32-value block (4 blocks a warp a pass) where the
  // blocks fill whole warps, else a warp a block.
  int8_t* xq1 = reinterpret_cast<int8_t*>(sxq);
  float4* xds = reinterpret_cast<float4*>(sxq + k * C);
  if (((k >> 5) & 3) == 0) {
    const int part = 4 * (threadIdx.x & 7);
    for (int b = threadIdx.x >> 3; b < (k >> 5); b += blockDim.x >> 3)
      lathe_quantize_block32_part(*reinterpret_cast<const float4*>(sx + 32 * b + part), C == 2, xq1 + 32 * b + part,
                                  xq1 + k + 32 * b + part, xds + b);
  } else {
    for (int b = warp; b < (k >> 5); b += LATHE_GEMV1_WARPS) {
      const int i = 32 * b + lane;
      lathe_quantize_block32(sx[i], i, C == 2, xq1, xq1 + k, xds);
    }
  }
  for (int i = warp; unit_of(i) < n_units; i += LATHE_GEMV1_WARPS) {
    const int u = unit_of(i), e = u % n_expert, p = u / n_expert;
    const int first = p * per_part, end = min(pieces_row, first + per_part);
    const float v = lathe_moe_route_unit<FR>(rw + e * r_row_bytes, sx, first, end);
    if (lane == 0) part_sums[p * n_expert + e] = v;
  }
  stamp(2);
  lathe_grid_barrier(sync, grid);
  stamp(3);
  for (int e = threadIdx.x; e < n_expert; e += blockDim.x) {
    float s = 0.0f;
    for (int p = 0; p < parts; ++p) s += __ldcg(part_sums + p * n_expert + e);
    sl[e] = s;
    if (logits && blockIdx.x == 0) logits[e] = s;
  }
  __syncthreads();
  if (flags & LATHE_MOE_ROUTE_REGISTER_TOP_K) {  // the router kernel's option (with its gap report)
    if (warp == 0)
      lathe_moe_top_k_warp(sl, n_expert, top_k, renormalize, s_ids, s_w, flags & LATHE_MOE_ROUTE_REPORT_GAP);
  } else {
    lathe_moe_top_k_ranks(sl, s_keys, 1, n_expert, top_k, renormalize, s_ids, s_w);
  }
  __syncthreads();
  if (blockIdx.x == 0 && static_cast<int>(threadIdx.x) < top_k) {
    ids[threadIdx.x] = s_ids[threadIdx.x];
    weights[threadIdx.x] = s_w[threadIdx.x];
  }
  stamp(4);
  const int my_id = lane < top_k ? s_ids[lane] : 0;
  const float my_w = lane < top_k ? s_w[lane] : 0.0f;

  // ---- phases 1 and 2: one stream of chunks a warp, its gate/up items' then its down items'.
  const int gu_units = k / FG::unit_values, gu_nc = (gu_units + FG::chunk_units - 1) / FG::chunk_units;
  const lathe_moe_gu_rows<FG, C> gu{wg, wu, gu_row_bytes, gu_expert_bytes, gu_units, gu_nc, n_ff, k, my_id, sxq};
  const int d_units = n_ff / FD::unit_values, d_nc = (d_units + FD::chunk_units - 1) / FD::chunk_units;
  lathe_moe_down_rows<FD, C> dn{wd, d_row_bytes, d_expert_bytes, d_units, d_nc, n_ff, top_k, segs, my_id, my_w, sh};
  dn.init();
  const int gpb_gu = LATHE_GEMV1_WARPS / group_gu, sub_gu = warp % group_gu;
  const int n_groups_gu = grid * gpb_gu, g0_gu = static_cast<int>(blockIdx.x) * gpb_gu + warp / group_gu;
  const int n_items_gu = K, chunks_gu = 2 * gu_nc;
  const int gpb_d = LATHE_GEMV1_WARPS / group_d, sub_d = warp % group_d;
  const int n_groups_d = blocks_d * gpb_d;
  const int g0_d = static_cast<int>(blockIdx.x) < blocks_d ? static_cast<int>(blockIdx.x) * gpb_d + warp / group_d : n_out;
  const int chunks_d = dn.item_chunks();

  // The loader's place: phase (0 gate/up, 1 down, 2 done), item, chunk.
  int ld_phase = 0, ld_item = g0_gu, ld_c = sub_gu;
  auto ld_settle = [&]() {
    if (ld_phase == 0 && ld_item >= n_items_gu) {
      ld_phase = 1;
      ld_item = g0_d;
      ld_c = sub_d;
    }
    if (ld_phase == 1 && ld_item >= n_out) ld_phase = 2;
  };
  auto ld_next = [&](uint8_t* slot) {  // one commit group a call, empty when the stream is done
    ld_settle();
    if (ld_phase == 0) {
      gu.chunk(ld_item, ld_c, slot, true);
      ld_c += group_gu;
      if (ld_c >= chunks_gu) {
        ld_c = sub_gu;
        ld_item += n_groups_gu;
      }
    } else if (ld_phase == 1) {
      dn.chunk(ld_item, ld_c, slot, true);
      ld_c += group_d;
      if (ld_c >= chunks_d) {
        ld_c = sub_d;
        ld_item += n_groups_d;
      }
    }
    lathe_gemv1_commit();
  };
  for (int s = 0; s < stages - 1; ++s) ld_next(stage + s * LATHE_GEMV1_SLOT);

  int slot = 0, parity = 0;
  auto next_landed = [&]() -> const uint8_t* {  // the consumer's next chunk, its slot refilled behind it
    if (stages == LATHE_MOE_SINGLE_MAX_STAGES) lathe_gemv1_wait<LATHE_MOE_SINGLE_MAX_STAGES - 2>();
    else lathe_gemv1_wait<LATHE_GEMV1_STAGES - 2>();
    __syncwarp();  // chunk `slot` landed for every lane; the slot refilled below was read last round
    const int refill = slot == 0 ? stages - 1 : slot - 1;
    ld_next(stage + refill * LATHE_GEMV1_SLOT);
    const uint8_t* s = stage + slot * LATHE_GEMV1_SLOT;
    slot = slot + 1 == stages ? 0 : slot + 1;
    return s;
  };
  // Phase 1: gate/up and SwiGLU into h (global).
  lathe_moe_gu_items(gu, g0_gu, n_items_gu, n_groups_gu, group_gu, sub_gu, chunks_gu, h, partial, parity, next_landed);
  // Every block's h is written; each down block quantizes all of it into shared memory (x's f32 copy is
  // dead), as the down kernel does.
  stamp(5);
  lathe_grid_barrier(sync, 2 * grid);
  stamp(6);
  if (static_cast<int>(blockIdx.x) < blocks_d)
    lathe_moe_quantize_h<C>(h, K, reinterpret_cast<int8_t*>(sh), reinterpret_cast<int8_t*>(sh + K),
                            reinterpret_cast<float4*>(sh + K * C));
  __syncthreads();
  stamp(7);
  // Phase 2: down and the weighted combine.
  for (int item = g0_d; item < n_out; item += n_groups_d) {
    float acc0 = 0.0f, acc1 = 0.0f;
    for (int c = sub_d; c < chunks_d; c += group_d) {
      const uint8_t* s = next_landed();
      dn.dot(item, c, s + dn.chunk(item, c, nullptr, false), acc0, acc1);
    }
    float v0 = lathe_warp_sum(acc0), v1 = lathe_warp_sum(acc1);
    if (lathe_gemv_group_sum2(partial, parity, warp, group_d, sub_d, lane, v0, v1)) out[item] = v0;
  }
  lathe_gemv1_wait<0>();
  stamp(8);
  __syncthreads();
  if (threadIdx.x == 0) lathe_grid_count_out(sync);
}

#define LATHE_MOE_SINGLE_KERNEL(FR, FG, FD, C, CNAME)                                                              \
  extern "C" __global__ void __launch_bounds__(32 * LATHE_GEMV1_WARPS, 1)                                           \
      lathe_moe_single_##FR##_##FG##_##FD##_##CNAME(                                                                \
          const uint8_t* rw, long long r_row_bytes, const float* x, int k, int n_expert, int parts, int top_k,     \
          int renormalize, int flags, int* ids, float* weights, float* logits, float* part_sums, unsigned* sync,  \
          const float* nx, const float* ny, const float* nw, float eps, float* nsum, int norm_threads,            \
          const uint8_t* wg, const uint8_t* wu, long long gu_row_bytes, long long gu_expert_bytes, int n_ff,      \
          int group_gu, float* h, const uint8_t* wd, long long d_row_bytes, long long d_expert_bytes, int n_out,  \
          int group_d, int blocks_d, int segs, float* out, int stages, unsigned long long* trace) {               \
    lathe_moe_single_body<lathe_gemv_##FR, lathe_gemv1_##FG, lathe_gemv1_##FD, C>(                                 \
        rw, r_row_bytes, x, k, n_expert, parts, top_k, renormalize, flags, ids, weights, logits, part_sums, sync,  \
        nx, ny, nw, eps, nsum, norm_threads, wg, wu, gu_row_bytes, gu_expert_bytes, n_ff, group_gu, h, wd,         \
        d_row_bytes, d_expert_bytes, n_out, group_d, blocks_d, segs, out, stages, trace);                          \
  }

LATHE_MOE_SINGLE_KERNEL(f32, q8_0, q8_0, 1, int8)
LATHE_MOE_SINGLE_KERNEL(f32, q8_0, q8_0, 2, int8x2)
LATHE_MOE_SINGLE_KERNEL(f32, q4_k, q4_k, 1, int8)
LATHE_MOE_SINGLE_KERNEL(f32, q4_k, q4_k, 2, int8x2)
LATHE_MOE_SINGLE_KERNEL(f32, q4_k, q6_k, 1, int8)
LATHE_MOE_SINGLE_KERNEL(f32, q4_k, q6_k, 2, int8x2)
