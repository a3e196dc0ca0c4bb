// Host launchers of the mixture for a prefill chunk, tokens grouped by expert (moe_prefill.cuh,
// moe_grouped_gemm.cuh): for R rows routed to K of E experts each, the P = R K (row, slot) pairs are
// sorted by expert on the device, and each projection is ONE launch over a tile table of
// (expert, BM of its pairs) x (BN outputs), so an expert's weights are read once per BM of its rows
// and experts no row chose are never read. Every pointer is a device pointer; every call only
// enqueues on `stream`, with launch counts and grids that depend on shapes only (the step is captured
// as a CUDA graph): the tile table's length is known on the device alone, so the grouped products
// launch the worst case's grid and surplus blocks leave.
//
// Weights: stacks [E][n_out][k] of one GGUF format that gemm_supports (q8_0, q4_K, q6_K), rows
// row_bytes(type, k) apart, 16-byte aligned, readable to the next 16-byte line past their end.
// Semantics are the interpreter's mixture (interp/cpu_ops.h) under the int8 / int8x2 contracts:
// x and h = silu(gate x) * up x enter the products as quantize_activations' x^ and h^.
//
// Results are deterministic (fixed order everywhere, no float atomics) for a shape and device.
//
// Speed (H200, tests/test_moe_prefill_gpu.cpp MoePrefillGpu.Timing: one Qwen3-30B-A3B layer, 2048 /
// ff 768, 8 of 128 experts, q8_0, 512 rows routed at random, 4,096 pairs; TOPS = 2 P 3 ff n / time):
//   int8x2, 32-row tiles, one stage: 893 us a layer (43 TOPS): router + top k 54, grouping 9,
//     gate/up/SwiGLU 433 (60 TOPS), h^ 18, down 236 (55 TOPS), combine 15;
//   int8: 728 us (53 TOPS), gate/up 359 (72 TOPS), down 192 (67 TOPS).
// lathe bench qwen3-30b-a3b q8_0 -p 512: 9,858 tok/s int8x2 (the eight-row f32 path before: 593).
// The products are bound by each block's fixed cost per 256-value k-tile (staging and unpacking 128
// weight rows, two barriers: lathe_gemm_kstep's lockstep design) more than by DRAM (641 MB of
// experts a layer is 139 us at 4.6 TB/s); an expert with 33 rows pays a second weight pass for one.
#pragma once

#include "kernels/gemv_launch.h"

#include <cuda.h>

#include <cstdint>
#include <vector>

namespace lathe::kernels {

// Rows of the grouped products' row tile (BM) for a chunk: 64 when the pairs an expert gets on
// average fill them, else 32. Depends on shapes only.
int moe_prefill_row_tile(int64_t rows, int64_t top_k, int64_t n_expert);

// The most tiles of bm pairs a routing of P pairs over E experts can need:
// sum_e ceil(c_e / bm) <= (P + min(E, P) (bm - 1)) / bm.
int64_t moe_max_tiles(int64_t pairs, int64_t n_expert, int bm);

// ---- grouping. ids [rows][top_k] int32 (each in [0, n_expert), distinct within a row), n_expert <=
// 1024. Writes into `group` (moe_group_bytes bytes, 16-byte aligned) the layout of moe_prefill.cuh:
// offsets [E + 1], pair_of [P], pos_of [P], n_tiles, tiles {expert, first position, rows, 0}.
// Sized for the smallest row tile (32), so any bm fits.
int64_t moe_group_bytes(int64_t rows, int64_t top_k, int64_t n_expert);
void moe_group(CUdeviceptr ids, int64_t rows, int64_t top_k, int64_t n_expert, int bm, CUdeviceptr group,
               CUstream stream);

// Where the parts of `group` are (for tests and the launches below).
struct MoeGroupView {
  CUdeviceptr offsets = 0, pair_of = 0, pos_of = 0, n_tiles = 0, tiles = 0;
};
MoeGroupView moe_group_view(CUdeviceptr group, int64_t rows, int64_t top_k, int64_t n_expert);

// The same grouping on the host (the device's definition; tests compare them byte for byte).
struct MoeGrouping {
  std::vector<int32_t> offsets, pair_of, pos_of;
  std::vector<int32_t> tiles;  // 4 a tile
};
MoeGrouping moe_group_reference(const std::vector<int32_t>& ids, int64_t rows, int64_t top_k, int64_t n_expert, int bm);

// ---- the grouped products. x_q: quantize_activations of x [rows][gate.k] under a. h: f32 [P][n_ff],
// h[p] = silu(gate_e . x^_r) * (up_e . x^_r) for the pair r * K + j = pair_of[p], e its expert; fully
// written. gate, up: the same format and shape.
void moe_grouped_gate_up(const WeightMatrix& gate, const WeightMatrix& up, Activations a, CUdeviceptr x_q,
                         int64_t rows, int64_t top_k, int bm, CUdeviceptr group, CUdeviceptr h, CUstream stream);
// h_q: quantize_activations of h [P][down.k] under a. y: f32 [P][down.n_out], y[p] = down_e . h^[p].
void moe_grouped_down(const WeightMatrix& down, Activations a, CUdeviceptr h_q, int64_t rows, int64_t top_k, int bm,
                      CUdeviceptr group, CUdeviceptr y, CUstream stream);
// out [rows][n_out] f32 = sum_j weights[r][j] y[pos_of[r K + j]], j in slot order (weights 0: ones).
void moe_combine(CUdeviceptr y, int64_t rows, int64_t top_k, int64_t n_expert, int64_t n_out, CUdeviceptr group,
                 CUdeviceptr weights, CUdeviceptr out, CUstream stream);

// ---- the router's logits [rows][E] f32 = x . router^T in f32: an f32 router takes
// lathe_moe_router_f32 (16 rows x 16 experts a block, k in 8 groups summed in order), any other
// format matmul.
void moe_router_logits(const WeightMatrix& router, CUdeviceptr x, int64_t rows, CUdeviceptr logits, CUstream stream);

// ---- the whole mixture of a chunk: router (moe_router_logits, route_top_k), grouping, then one of two
// engines for the products, and the combine. x, out: f32 [rows][n_embd], 16-byte aligned; out fully
// written.
//   wgmma (moe_wgmma_launch.h; when gemm_wgmma_available() and moe_wgmma_supports the weights): x
//     gathered into grouped order in f16 (into scratch.y, free until down writes it), gate/up/SwiGLU
//     on wgmma writing h in f16 (into scratch.h), down on wgmma. scratch.q is not used.
//   int8: x^, gate/up/SwiGLU, h^, down on the int8 grouped products (moe_grouped_gemm.cuh).
// The engine: set_moe_prefill_engine, else LATHE_MOE_PREFILL=int8 forces int8, else wgmma wherever it
// applies.
struct MoePrefillScratch {
  CUdeviceptr logits = 0;   // f32 [rows][E]
  CUdeviceptr ids = 0;      // int32 [rows][K]
  CUdeviceptr weights = 0;  // f32 [rows][K]
  CUdeviceptr h = 0;        // f32 [P][n_ff]
  CUdeviceptr y = 0;        // f32 [P][n_embd]
  CUdeviceptr q = 0;        // moe_prefill_quantized_bytes: x^, later h^
  CUdeviceptr group = 0;    // moe_group_bytes(rows, K, E)
};
int64_t moe_prefill_quantized_bytes(int64_t rows, int64_t top_k, int64_t n_embd, int64_t n_ff, Activations a);

// Whether moe_prefill takes these weights and contract (no launch; shared memory needs a driver).
bool moe_prefill_applies(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down, Activations a,
                         int64_t top_k);

void moe_prefill(const WeightMatrix& router, const WeightMatrix& gate, const WeightMatrix& up,
                 const WeightMatrix& down, Activations a, CUdeviceptr x, int64_t rows, int64_t top_k, bool renormalize,
                 CUdeviceptr out, const MoePrefillScratch& scratch, CUstream stream);

// Whether a chunk's mixture of these weights runs its products on wgmma where the card has it (the
// grouped kernels take the format and shapes, moe_wgmma_supports them, and no setting forces int8):
// shapes only, no driver, so the interpreter can replay those products' f16 roundings
// (--lane-rounding) without a GPU. moe_prefill_engine also asks whether the card runs wgmma.
bool moe_prefill_rounds_f16(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down);

enum class MoePrefillEngine { automatic, int8, wgmma };
// Forces an engine (wgmma: a UserError where it does not apply); automatic restores the rule. Not
// thread-safe.
void set_moe_prefill_engine(MoePrefillEngine engine);
// The engine moe_prefill takes for these weights (no launch; asks whether the card runs wgmma).
MoePrefillEngine moe_prefill_engine(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down);

// Forces the row tile (32 or 64; 0 restores the rule), for measurements. Not thread-safe.
void set_moe_prefill_row_tile(int bm);
// Forces the grouped products' stages at 32-row tiles (2: the next k-tile loads while a block works;
// 1: half the shared memory, two blocks an SM; 0: the rule, 1 unless LATHE_MOE_STAGES=2). Not
// thread-safe.
void set_moe_prefill_stages(int stages);

}  // namespace lathe::kernels
