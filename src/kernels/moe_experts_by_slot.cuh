// The mixture's kept experts for ONE decode row in one launch (fusion rule experts_by_slot): gate/up
// with SwiGLU, then the down product with the weighted combine, in place of moe_decode.cuh's two
// kernels (lathe_moe_gate_up_*, lathe_moe_down_*). Why: between those two kernels every block waits
// for the whole grid (a launch edge: the gate/up kernel's tail, the down kernel's release and its
// copy of h, ~4-5 us of a qwen3-30b-a3b layer), and the down kernel's 13 MB stream starts only then.
// But a down row of expert e needs only e's h, so the grid is dealt by slot: the blocks of slot j
// (blocks j * bps .. j * bps + bps - 1) compute slot j's h between them and meet on a count of their
// own, while each warp's down rows are already in flight behind its gate/up chunks in one ring.
//
// Block (j, p), p < bps, of the slot whose expert is e = ids[j]:
// - gate/up: h_j's values f0 .. f1 - 1 (f0 = p n_ff / bps), gate's and up's row f of e as the gate/up
//   kernel sums them for the same `group` (lathe_moe_gu_rows), h[j][f] = silu(g) u written to global
//   memory: the same bits as lathe_moe_gate_up_rows.
// - the slot's count (lathe_grid_barrier on counts[j], bps blocks): then every block of the slot
//   quantizes h_j into shared memory (lathe_moe_quantize_h: the quantizer's bytes).
// - down: rows o0 .. o1 - 1 (o0 = p n_out / bps) of e, a warp a run of consecutive rows, a chunk of
//   the ring several whole rows (rows_per_chunk, one 16-byte-line copy: e's rows are contiguous);
//   parts[j][o] = w_j (row o . h_j), each row's lanes added by lathe_warp_sum.
// - the combine: the block that counts p's top_k-th part (counts[top_k + p]) adds them in slot order,
//   out[o] = ((0 + parts[0][o]) + parts[1][o]) + ..., and sets the count back to zero. Deterministic
//   for a shape and device; not the down kernel's order (it weights each lane's terms before the warp
//   sum), so the held-back form's out within f32 rounding, not its bits (test_moe_gpu says how close).
// The slot counts need the slot's blocks resident at once: they are, since the next kernel can launch
// (and take SMs) only after every block of this one has passed its programmatic-launch wait, and the
// grid (top_k * bps blocks, one an SM) fits the SMs. The last block out (counts[top_k + bps]) sets the
// slot counts back to zero, so a captured graph replays the launch.
// Dynamic shared memory: the ring (LATHE_GEMV1_WARPS x STAGES x SLOT), x's int8 form (staged(k)), then
// h_j's (staged(n_ff)), each from a 16-byte boundary.

// A warp's run of down rows [first, end) of expert e (base already applied), rows_per_chunk a chunk.
template <class F>
struct lathe_moe_down_run {
  const uint8_t* w;  // expert e's rows
  long long row_bytes;
  int first, end, per_chunk;
  __device__ __forceinline__ int chunks() const { return end > first ? (end - first + per_chunk - 1) / per_chunk : 0; }
  __device__ __forceinline__ int rows_of(int c) const { return min(per_chunk, end - first - c * per_chunk); }
  // Copies chunk c's rows into slot as whole 16-byte lines; returns where its first row starts.
  __device__ __forceinline__ int chunk(int c, uint8_t* slot, bool issue) const {
    const uint8_t* g = w + static_cast<long long>(first + c * per_chunk) * row_bytes;
    const uint8_t* g16 = reinterpret_cast<const uint8_t*>(reinterpret_cast<uint64_t>(g) & ~15ull);
    const int head = static_cast<int>(g - g16);
    if (issue) {
      const int n16 = (head + rows_of(c) * static_cast<int>(row_bytes) + 15) >> 4;
      lathe_gemv1_cp16_weights<F::evict_first>(slot, g16, n16);
    }
    return head;
  }
};

template <class FG, class FD, int C>
__device__ __forceinline__ void lathe_moe_experts_body(const uint8_t* wg, const uint8_t* wu, long long gu_row_bytes,
                                                       long long gu_expert_bytes, const int* ids, const float* route_w,
                                                       const int8_t* xq, int k, int n_ff, int top_k, int group,
                                                       float* h, const uint8_t* wd, long long d_row_bytes,
                                                       long long d_expert_bytes, int n_out, int rows_per_chunk,
                                                       float* parts, unsigned* counts, int bps, float* out) {
  extern __shared__ uint4 lathe_moe_slot_smem[];
  __shared__ float2 partial[2][LATHE_GEMV1_WARPS];
  __shared__ int last_of_part;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int j = static_cast<int>(blockIdx.x) / bps, p = static_cast<int>(blockIdx.x) - j * bps;
  uint8_t* base = reinterpret_cast<uint8_t*>(lathe_moe_slot_smem);
  uint8_t* stage = base + warp * (LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT);
  uint8_t* sxq = base + LATHE_GEMV1_WARPS * LATHE_GEMV1_STAGES * LATHE_GEMV1_SLOT;
  uint8_t* sh = sxq + ((((k * C + k / 2) + 15) >> 4) << 4);
  LATHE_BLOCK_STAMPS(stamps);

  lathe_pdl_entry();  // ids, the route weights and x's int8 form come from the launch before
  LATHE_STAMP_AT(stamps, 1);
  lathe_moe_stage_row_x<C>(sxq, xq, 0, 1, k);  // one commit group, ahead of the weights
  const int my_id = lane < top_k ? ids[lane] : 0;
  const int e = __shfl_sync(0xffffffffu, my_id, j);
  const float w_j = route_w ? route_w[j] : 1.0f;

  // gate/up: items j n_ff + f, f in [f0, f1): group `group`'s warps share an item, as in the gate/up kernel.
  const int gu_units = k / FG::unit_values, gu_nc = (gu_units + FG::chunk_units - 1) / FG::chunk_units;
  const lathe_moe_gu_rows<FG, C> gu{wg, wu, gu_row_bytes, gu_expert_bytes, gu_units, gu_nc, n_ff, k, my_id, sxq};
  const int gpb = LATHE_GEMV1_WARPS / group, sub = warp % group;
  const int f0 = static_cast<int>(static_cast<long long>(p) * n_ff / bps);
  const int f1 = static_cast<int>(static_cast<long long>(p + 1) * n_ff / bps);
  const int g0 = j * n_ff + f0 + warp / group, n_items = j * n_ff + f1, chunks_gu = 2 * gu_nc;
  // down: rows [o0, o1), warp w the run [o0 + w r, o0 + (w + 1) r) (r = its share, rounded up).
  const int o0 = static_cast<int>(static_cast<long long>(p) * n_out / bps);
  const int o1 = static_cast<int>(static_cast<long long>(p + 1) * n_out / bps);
  const int per_warp = (o1 - o0 + LATHE_GEMV1_WARPS - 1) / LATHE_GEMV1_WARPS;
  const int d_first = min(o1, o0 + warp * per_warp), d_end = min(o1, d_first + per_warp);
  const lathe_moe_down_run<FD> dn{wd + e * d_expert_bytes, d_row_bytes, d_first, d_end, rows_per_chunk};
  const int d_units = n_ff / FD::unit_values, n_dc = dn.chunks();

  // The loader: gate/up items' chunks, then the down run's; one commit group a call.
  int ld_item = g0, ld_c = sub, ld_d = 0;
  auto ld_next = [&](uint8_t* slot) {
    if (ld_item < n_items) {
      gu.chunk(ld_item, ld_c, slot, true);
      ld_c += group;
      if (ld_c >= chunks_gu) {
        ld_c = sub;
        ld_item += gpb;
      }
    } else if (ld_d < n_dc) {
      dn.chunk(ld_d++, slot, true);
    }
    lathe_gemv1_commit();
  };
  for (int s = 0; s < LATHE_GEMV1_STAGES - 1; ++s) ld_next(stage + s * LATHE_GEMV1_SLOT);
  lathe_gemv1_wait<LATHE_GEMV1_STAGES - 1>();  // x's group, the oldest, has landed
  __syncthreads();
  LATHE_STAMP_AT(stamps, 2);
  LATHE_STAMP_AT(stamps, 3);

  int slot = 0, parity = 0;
  auto next_landed = [&]() -> const uint8_t* {  // the consumer's next chunk, its slot refilled behind it
    lathe_gemv1_wait<LATHE_GEMV1_STAGES - 2>();
    __syncwarp();  // chunk `slot` landed for every lane; the slot refilled below was read last round
    const int refill = slot == 0 ? LATHE_GEMV1_STAGES - 1 : slot - 1;
    ld_next(stage + refill * LATHE_GEMV1_SLOT);
    const uint8_t* s = stage + slot * LATHE_GEMV1_SLOT;
    slot = slot + 1 == LATHE_GEMV1_STAGES ? 0 : slot + 1;
    return s;
  };
  lathe_moe_gu_items(gu, g0, n_items, gpb, group, sub, chunks_gu, h, partial, parity, next_landed);

  // The slot's blocks meet; then h_j's int8 form, the quantizer's bytes, in every block of the slot.
  lathe_grid_barrier(counts + j, static_cast<unsigned>(bps));
  lathe_moe_quantize_h<C>(h + static_cast<long long>(j) * n_ff, n_ff, reinterpret_cast<int8_t*>(sh),
                          reinterpret_cast<int8_t*>(sh + n_ff), reinterpret_cast<float4*>(sh + n_ff * C));
  __syncthreads();
  const int4* sq1 = reinterpret_cast<const int4*>(sh);
  const int4* sq2 = reinterpret_cast<const int4*>(sh + n_ff);
  const float4* sds = reinterpret_cast<const float4*>(sh + n_ff * C);
  float* pj = parts + static_cast<long long>(j) * n_out;
  for (int c = 0; c < n_dc; ++c) {
    const uint8_t* s = next_landed() + dn.chunk(c, nullptr, false);
    const int n = dn.rows_of(c), o = d_first + c * rows_per_chunk;
    for (int r = 0; r < n; ++r) {
      const float v = lathe_warp_sum(lathe_gemvm_chunk_dot<FD, C>(s + r * d_row_bytes, d_units, 0, sq1, sq2, sds));
      if (lane == 0) pj[o + r] = w_j * v;
    }
  }
  lathe_gemv1_wait<0>();

  // The combine: the block that brings part p's count to top_k adds the slots' parts in slot order.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last_of_part = atomicAdd(counts + top_k + p, 1u) == static_cast<unsigned>(top_k - 1);
  __syncthreads();
  if (last_of_part) {
    __threadfence();
    // Every part's load in flight before the first add (a loop of load-then-add waits an L2 round
    // trip a slot): 8 at a time, added in slot order.
    for (int o = o0 + static_cast<int>(threadIdx.x); o < o1; o += blockDim.x) {
      float sum = 0.0f;
      for (int j0 = 0; j0 < top_k; j0 += 8) {
        float v[8];
#pragma unroll
        for (int i = 0; i < 8; ++i)
          v[i] = j0 + i < top_k ? __ldcg(parts + static_cast<long long>(j0 + i) * n_out + o) : 0.0f;
#pragma unroll
        for (int i = 0; i < 8; ++i)
          if (j0 + i < top_k) sum += v[i];
      }
      out[o] = sum;
    }
    if (threadIdx.x == 0) counts[top_k + p] = 0;
  }
  if (threadIdx.x == 0) {  // the last block out sets the slots' counts back (every block has left its wait)
    __threadfence();
    if (atomicAdd(counts + top_k + bps, 1u) == gridDim.x - 1) {
      for (int jj = 0; jj < top_k; ++jj) counts[jj] = 0;
      counts[top_k + bps] = 0;
      __threadfence();
    }
  }
  LATHE_STAMP_END(stamps, wg, top_k * n_ff, k);
}

#define LATHE_MOE_EXPERTS_KERNEL(FG, FD, C, CNAME)                                                                  \
  extern "C" __global__ void __launch_bounds__(32 * LATHE_GEMV1_WARPS, 1) lathe_moe_experts_##FG##_##FD##_##CNAME( \
      const uint8_t* wg, const uint8_t* wu, long long gu_row_bytes, long long gu_expert_bytes, const int* ids,      \
      const float* route_w, const int8_t* xq, int k, int n_ff, int top_k, int group, float* h, const uint8_t* wd,  \
      long long d_row_bytes, long long d_expert_bytes, int n_out, int rows_per_chunk, float* parts,                \
      unsigned* counts, int bps, float* out) {                                                                      \
    lathe_moe_experts_body<lathe_gemv1_##FG, lathe_gemv1_##FD, C>(wg, wu, gu_row_bytes, gu_expert_bytes, ids,     \
                                                                   route_w, xq, k, n_ff, top_k, group, h, wd,      \
                                                                   d_row_bytes, d_expert_bytes, n_out,             \
                                                                   rows_per_chunk, parts, counts, bps, out);       \
  }

LATHE_MOE_EXPERTS_KERNEL(q8_0, q8_0, 1, int8)
LATHE_MOE_EXPERTS_KERNEL(q8_0, q8_0, 2, int8x2)
