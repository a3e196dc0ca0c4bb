// Host launcher of the prefill product on f16 tensor cores (src/kernels/gemm_f16.cuh,
// gemm_f16_blocks.cuh): y = x16 . dequant(W)^T for a chunk of rows, W read in place in its GGUF
// format and dequantized ONCE per block into shared memory as f16, so the block-scale work is spread
// over the tile's rows (the int8 GEMM, gemm_launch.h, pays it per output on CUDA cores).
// Every pointer is a device pointer; every call only enqueues on `stream`.
//
// Contract of gemm_f16(w, x16, rows, y, stream):
//   W     (gemv_launch.h's WeightMatrix) n_out rows of k values in f16, q8_0 or q2_K to q6_K
//         (gemm_f16_supports), rows row_bytes(type, k) apart, n_expert == 1; data 16-byte aligned and
//         readable up to the next 16-byte boundary past its end (device allocations are).
//         k % 32 == 0 (f16, q8_0), k % 256 == 0 (the K formats); k < 2^30, n_out < 2^29.
//   x16   f16 [rows][k] row-major, 16-byte aligned (convert_to_f16 makes it from f32).
//   rows  >= 1, any (ragged tiles are masked).
//   y     f32 [rows][n_out], 16-byte aligned: fully written, nothing else written.
// Numerics: each weight is dequantized as dequantize_row does (in f32) and rounded once to f16; x16
// is x rounded to f16 (convert_to_f16: nearest even; |x| must stay below 65504, f16's largest);
// products and sums are f32 on the tensor cores. So y differs from the f64 product of x and
// dequantize_row(W) by the two f16 roundings of every term (each <= 2^-11 relative, about 2.1e-4 rms)
// plus f32 summation: about 3e-4 of max|y| on random data, the rounding errors adding up like a random
// walk as the terms themselves do (tests/test_gemm_f16_gpu.cpp: bound 1e-3 per shape and row count,
// 5e-4 where >= 16k outputs are compared). f16 weights are used exactly.
//
// Launch shape: 256 threads (8 warps: 2 along rows x 4 along outputs) per BM x BN tile of y, k in
// chunks of 64 through a 4-stage cp.async ring (x16 and the raw weight lines), two dequantized f16
// weight tiles (one filled while the other feeds mma.sync m16n8k16 via ldmatrix), 128-184 KB of shared
// memory at 128 x 128. Tiles (gemm_f16_tile): the first of 128x128, 64x128, 64x64 that makes at least
// 3/4 as many blocks as the card has SMs, else 64x64. Blocks walk rows fastest, so the row tiles that
// share a weight tile run together and read it from DRAM once.
//
// Speed (H200, tests/test_gemm_f16_gpu.cpp TimingPrintsTflops; TFLOP/s = 2 rows n_out k / time, median
// of 10 after a warm-up; beside it the int8x2 GEMM, gemm_quantized, on the same shape), rows 512 / 4096:
//   q8_0 4096x4096 153 / 162 (int8x2 98 / 103), 12288x4096 159 / 162 (102 / 106), 4096x12288 162 / 165
//        (102 / 106), 151936x4096 168 / 170 (109 / 108): 1.53-1.58x;
//   q4_K 4096x4096 171 / 185 (93 / 97), 12288x4096 181 / 187, 4096x12288 186 / 190, 151936x4096 191 / 194
//        (102 / 102): 1.84-1.90x;
//   q6_K 4096x4096 114 / 122, 4096x12288 121 / 124 (int8x2 68-72): 1.7x; f16 weights 209-233.
// convert_to_f16 of 512 x 4096: 8 us. That is 12-24% of the ~990 dense f16 TFLOP/s: even f16 weights
// (no dequantizing) reach only 23%, so the bound is the mma loop itself (one block of 8 warps per SM,
// a barrier per 64-value chunk, ldmatrix traffic of 64x32 warp tiles), not the dequantizing, which
// costs q8_0 ~30% and q4_K ~20% on top. Next: 64x64 warp tiles (256x128 blocks) with split-k for the
// 512-row shapes, wgmma (sm_90a) fed from the same dequantized tiles.
#pragma once

#include "kernels/gemv_launch.h"

#include <string>
#include <vector>

namespace lathe::kernels {

// A weight format as gemm_f16_blocks.cuh stages it (lathe_gf16_<fmt>::lines, ::direct): its kernel-name
// part, the 16-byte lines a weight row of a 64-value chunk takes, whether it is staged as the f16 tile
// itself (no dequantized copies), and the k it needs a multiple of. The wgmma GEMM reads the same.
struct GemmF16Format {
  const char* name;
  int lines;
  bool direct;
  int k_multiple;
};
const GemmF16Format* gemm_f16_format(GgmlType type);  // nullptr for a format it does not read

// Whether gemm_f16 reads this weight format.
bool gemm_f16_supports(GgmlType type);

void gemm_f16(const WeightMatrix& w, CUdeviceptr x16, int64_t rows, CUdeviceptr y, CUstream stream);

// x_f32 [count] f32 (16-byte aligned) -> x16 [count] f16 (8-byte aligned), round to nearest even.
// What the planner feeds gemm_f16 until a producer's epilogue writes f16 itself.
void convert_to_f16(CUdeviceptr x_f32, int64_t count, CUdeviceptr x16, CUstream stream);

// The tile gemm_f16 picks for a shape (rows x outputs), the candidates, and a tile's kernel and
// dynamic shared memory (for tests and the planner's notes).
struct GemmF16Tile {
  int bm = 0, bn = 0;
};
GemmF16Tile gemm_f16_tile(int64_t rows, int64_t n_out);
std::vector<GemmF16Tile> gemm_f16_candidate_tiles();
std::string gemm_f16_kernel_name(GgmlType type, GemmF16Tile tile);
unsigned gemm_f16_shared_bytes(GgmlType type, GemmF16Tile tile);

// Forces a tile, one of gemm_f16_candidate_tiles, for measurements; {} restores the rule. Not
// thread-safe against concurrent gemm_f16 calls.
void set_gemm_f16_tile_override(GemmF16Tile tile);

// LATHE_PREFILL_GEMM (a measuring knob, read once): the engine of a chunk's dense products under the
// int8 contracts. rule (unset): the planner's, gemm_f16 or wgmma by format and rows; wgmma: wgmma at
// any row count where it reads the format; f16: gemm_f16 wherever it reads the format; int8: the int8
// GEMM on x's int8 forms (no f16 rounding). Any other value is a UserError naming these.
enum class PrefillGemm { rule, wgmma, f16, int8 };
PrefillGemm prefill_gemm_setting();

}  // namespace lathe::kernels
