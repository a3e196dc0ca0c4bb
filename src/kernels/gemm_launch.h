// Host launcher of the prefill product on int8 tensor cores (src/kernels/gemm_int8.cuh,
// gemm_blocks.cuh): y = x^ . W^T for a chunk of rows, W read in place in its GGUF block format.
// Every pointer is a device pointer; every call only enqueues on `stream`.
//
// Contract of gemm_quantized(w, a, xq, rows, y, stream):
//   W      (gemv_launch.h's WeightMatrix) n_out rows of k values in q8_0, q4_K or q6_K (gemm_supports),
//          rows row_bytes(type, k) apart, n_expert == 1; data 16-byte aligned and readable up to the
//          next 16-byte boundary past its end (device allocations are). k % 256 == 0 for q4_K / q6_K,
//          k % 32 == 0 for q8_0 (rows then start at any even byte; they are staged by 16-byte lines).
//   a      Activations::int8 or int8x2 (f32 is refused: use matmul).
//   xq     quantize_activations(x, rows, k, a) output for the same rows, k and contract (16-byte aligned):
//          q1 [rows][k] int8, q2 [rows][k] (int8x2), ds [rows][k / 32] float4 (d1, d2, block sum of x^).
//   rows   >= 1, any (ragged tiles are masked).
//   y      [rows][n_out] f32, fully written, nothing else written.
// Numerics: every 32-value block's sums of levels are exact int32 (q6_K: its two 16-value sub-block
// sums times their integer scales, < 2^24), scaled in f32 registers: y = sum over blocks of
// w_scale * (d1 S1 + d2 S2) - w_min * block_sum (q4_K's min term). So y equals the f64 product of
// dequantize_row(W) and x^ up to f32 rounding of the per-block terms and their sum (~1e-6 of max|y|
// in tests/test_gemm_gpu.cpp); the contract's error against x itself is quantize_activations'.
// int8x2 runs two mma passes (q1, q2) over the same weight fragments: twice the tensor work.
//
// Launch shape: 256 threads (8 warps) per BM x BN tile of y, k in tiles of 256 values, two cp.async
// stages, ~100-220 KB of shared memory. Tiles (gemm_tile): the first of int8 128x128, 128x64, 64x128,
// 64x64 (int8x2: 64x128, 64x64; its second level word leaves no room for 128 rows) that makes at
// least 3/4 as many blocks as the card has SMs, else the smallest. A per-card autotuner (cached per
// card and shape) is a later step.
//
// Speed (H200, rows 512, tests/test_gemm_gpu.cpp TimingPrintsTops; TOPS = 2 rows n_out k / time,
// int8 / int8x2; the f32 matmul does 20-26 TFLOP/s on the same shapes):
//   q8_0 4096x4096 168 / 101, 1024x4096 101 / 78, 12288x4096 171 / 104, 4096x12288 177 / 104,
//        151936x4096 184 / 109;
//   q4_K 4096x4096 157 / 95, 1024x4096 90 / 72, 12288x4096 159 / 98, 4096x12288 164 / 98;
//   q6_K 4096x4096 122 / 70, 1024x4096 81 / 62, 12288x4096 123 / 71, 4096x12288 128 / 72.
// That is 5-9% of the 1,979 dense int8 TOPS: about half the target. Per 256-value k-tile a block
// spends a fixed ~2 us (unpack + two barriers, its 8 warps in lockstep) that the mma work does not
// hide. The warp-specialized variant (GemmVariant below) has producer warps stage and unpack while
// consumer warps multiply; the tuner (tile_tuner.h) measures it beside the lockstep tiles. Still
// bounded by the f32 work of applying every 32-value block's scales (3 f32 ops per output per mma,
// as much issue time as the mma itself); then wgmma (needs sm_90a, which NVRTC is not asked for).
#pragma once

#include "kernels/gemv_launch.h"

#include <string>
#include <vector>

namespace lathe::kernels {

// Whether gemm_quantized reads this weight format.
bool gemm_supports(GgmlType type);

void gemm_quantized(const WeightMatrix& w, Activations a, CUdeviceptr xq, int64_t rows, CUdeviceptr y, CUstream stream);

// Which kernel family computes a tile (both give bit-identical y: the same per-output order of terms):
//   lockstep          gemm_int8.cuh: 256 threads that all stage, unpack, then multiply (2 stages).
//   warp_specialized  gemm_ws_kernel.cuh: 384 threads, 4 producer warps (cp.async + unpack into a ring
//                     of unpacked stages, 2 raw slots) and 8 consumer warps (mma.sync), meeting at
//                     mbarriers. Tiles int8 128x128 (2 stages), 128x64 (3); int8x2 64x128 (2), 64x64 (3).
//                     Every format gemm_supports. Not yet timed on a GPU: a tuner candidate, never the rule's.
enum class GemmVariant { lockstep, warp_specialized };

// The tile gemm_quantized picks for a shape (for tests and the planner's notes): rows x outputs.
struct GemmTile {
  int bm = 0, bn = 0;
  GemmVariant variant = GemmVariant::lockstep;
};
GemmTile gemm_tile(Activations a, int64_t rows, int64_t n_out);

// The tiles the tuner measures for a format and contract, the rule's preference first (lockstep
// tiles, then the warp-specialized ones). Empty for a format gemm_supports refuses.
std::vector<GemmTile> gemm_candidate_tiles(GgmlType type, Activations a);

// The library kernel and dynamic shared memory of a tile (one of gemm_candidate_tiles).
std::string gemm_kernel_name(GgmlType type, Activations a, GemmTile tile);
unsigned gemm_shared_bytes(GgmlType type, Activations a, GemmTile tile);

// The tile a launch takes: a forced one (below), else the one measured fastest for this shape on this
// card (tune_gemm; remembered in the kernel cache directory), else the rule (gemm_tile). `lathe emit`
// records the rule's.
//
// Measures every candidate tile for this shape on this card (a few launches each, on a private stream,
// synchronizing: never inside a graph capture) and remembers the fastest, unless it already is
// remembered, tuning is off (LATHE_TUNE=0), a tile is forced, or a Recorder is active. xq and y as
// for gemm_quantized (their contents do not matter; y is overwritten).
void tune_gemm(const WeightMatrix& w, Activations a, CUdeviceptr xq, int64_t rows, CUdeviceptr y);

// Forces a tile, one of gemm_candidate_tiles (lockstep: bm, bn in {64, 128}, int8x2 only bm 64;
// warp_specialized: as listed above), for measurements; {} restores the rule. Not thread-safe
// against concurrent gemm_quantized calls.
void set_gemm_tile_override(GemmTile tile);

}  // namespace lathe::kernels
