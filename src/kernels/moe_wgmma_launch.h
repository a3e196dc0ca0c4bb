// Host launchers of the mixture's grouped prefill products on Hopper wgmma (gemm_wgmma_rs_moe.cuh,
// sm_90a module; the gather lathe_moe_gather_f16 is in moe_prefill.cuh, main module). moe_prefill
// (moe_prefill_launch.h) takes this path when moe_wgmma_applies; the int8 grouped products otherwise.
//
// Numerics (the planner's "reads_half" precedent for dense products under the int8 contracts): x and
// h enter the products rounded to f16, each weight is gemm_f16's f16 value, products and sums f32 on
// the tensor cores, k16 slices in increasing order: each output equals the f64 product of the f16
// operands up to f32 accumulation (~1e-6 of max|y|); against the f32 mixture the f16 rounding of x
// and h leaves ~3e-4 of max|y|, inside the int8x2 contract's 2e-3.
//
// Every pointer is a device pointer, every call only enqueues on `stream`, grids depend on shapes only
// (the tile table's length is known on the device alone: worst-case grids, surplus blocks leave).
// Weights: stacks [E][n_out][k] as moe_prefill_launch.h's, data 16-byte aligned; the tensor maps see
// a stack as one matrix of E n_out rows of row_bytes(type, k) bytes, so row_bytes % 16 == 0
// (gemm_wgmma_uses_rs: q8_0 with k % 256 == 0, q4_K, q6_K with k % 2048 == 0).
//
// Measured (H200, tests/test_moe_wgmma_gpu.cpp MoeWgmmaGpu.Timing, Qwen3-30B-A3B layer: 2048 / ff 768,
// 8 of 128 experts, q8_0, 512 rows at random): whole mixture 409 us a layer (int8x2 engine 769 us in
// the same run): router 36, top-k 5, group 9, gather 7, gate/up 206 (125 TOPS), down 101 (128 TOPS),
// combine 15 at 64-row tiles; 128-row tiles: gate/up 265, down 140. The products move ~2.1 TB/s of
// weights (each chosen expert's read once), half the card's DRAM rate: not yet understood (the dense
// register-A kernel shows the same ~1 us per 64-value chunk per SM).
#pragma once

#include "kernels/gemv_launch.h"

#include <cuda.h>

#include <cstdint>

namespace lathe::kernels {

// Whether the wgmma grouped products take these weights (formats and shapes; no launch). Does not ask
// whether the card runs them: gemm_wgmma_available().
bool moe_wgmma_supports(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down);

// The x rows of a tile (BN: 64, or 128 when the pairs an expert gets on average fill 128). The
// grouping (moe_group) must be made with bm = this. Depends on shapes only.
int moe_wgmma_row_tile(int64_t rows, int64_t top_k, int64_t n_expert);
// Forces the row tile (64 or 128; 0 restores the rule), for measurements. Not thread-safe.
void set_moe_wgmma_row_tile(int bn);

// x16s [P][k] f16 = f16(x[pair_of[p] / top_k]) (round to nearest even): x f32 [rows][k], 16-byte
// aligned, k % 4 == 0; x16s 16-byte aligned. `group`: moe_group's layout for (rows, top_k, n_expert).
void moe_gather_f16(CUdeviceptr x, int64_t rows, int64_t k, int64_t top_k, int64_t n_expert, CUdeviceptr group,
                    CUdeviceptr x16s, CUstream stream);

// h16 [P][n_ff] f16: h16[p][o] = f16(silu(g) u), g = gate_e[o] . x16s[p], u = up_e[o] . x16s[p] in f32,
// e the expert of grouped position p; rows of every tile written, nothing else. x16s [P][gate.k] f16.
// `group` made with bm = bn. x16s and h16 16-byte aligned.
void moe_wgmma_gate_up(const WeightMatrix& gate, const WeightMatrix& up, CUdeviceptr x16s, int64_t rows,
                       int64_t top_k, int bn, CUdeviceptr group, CUdeviceptr h16, CUstream stream);
// y [P][down.n_out] f32: y[p][o] = down_e[o] . h16[p] (h16 [P][down.k] f16, grouped order).
void moe_wgmma_down(const WeightMatrix& down, CUdeviceptr h16, int64_t rows, int64_t top_k, int bn,
                    CUdeviceptr group, CUdeviceptr y, CUstream stream);

// The kernels' names and dynamic shared memory, for tests.
std::string moe_wgmma_kernel_name(bool gate_up, GgmlType type, int bn);
unsigned moe_wgmma_shared_bytes(GgmlType type, int bn);

}  // namespace lathe::kernels
