// Host launcher of the prefill product on Hopper's wgmma (src/kernels/gemm_wgmma.cuh,
// gemm_wgmma_kernel.cuh; sm_90a, its own module: kernels::library_90a). gemm_f16's contract on a
// faster engine: y = x16 . dequant(W)^T for a chunk of rows, W read in place in its GGUF format and
// dequantized once per block (into registers or shared memory) as f16.
//
// Two kernels: the register-A kernel (gemm_wgmma_rs.cuh; weights dequantized by the consumer
// warpgroups straight into wgmma's A registers, x16 the B operand loaded by TMA) wherever a format's
// rows are 16-byte multiples, else the staged kernel (gemm_wgmma_kernel.cuh). The planner takes the
// register-A kernel wherever it reads the format and the staged one from kWgmmaRows rows (gemm_f16
// below them); LATHE_PREFILL_GEMM=wgmma takes wgmma at any row count, =f16 never (prefill_gemm_setting).
// Measured (H200, tests/test_gemm_wgmma_gpu.cpp, TFLOP/s at 512 | 4096 rows; gemm_f16 in brackets):
//   q8_0 q/o 4096x4096 414 | 624 (154 | 162); k/v 1024x4096 107 | 553 (62 | 158); qkv 6144x4096 500 |
//   629 (118 | 154); gate/up 12288x4096 496 | 635 (158 | 138); merged 24576x4096 643 | 636 (160 |
//   161); down 4096x12288 461 | 664 (161 | 149). q4_K: 275 | 497, 71 | 469, 365 | 510, 377 | 513,
//   509 | 516, 316 | 535 (gemm_f16 67-188). f16 q/o 424 | 675, down 500 | 721; q6_K q/o 225 | 397,
//   down 237 | 373. Every output bit-equal to gemm_f16 in the error sweep.
//
// Contract of gemm_wgmma(w, x16, rows, y, stream): exactly gemm_f16's (gemm_f16_launch.h):
//   W     (gemv_launch.h's WeightMatrix) n_out rows of k values in f16, q8_0, q4_K or q6_K
//         (gemm_wgmma_supports), rows row_bytes(type, k) apart, n_expert == 1; data 16-byte aligned and
//         readable up to the next 16-byte boundary past its end (device allocations are).
//         k % 32 == 0 (f16, q8_0), k % 256 == 0 (q4_K, q6_K); k < 2^30, n_out < 2^29.
//   x16   f16 [rows][k] row-major, 16-byte aligned (convert_to_f16 makes it from f32).
//   rows  >= 1, any (ragged tiles are masked).
//   y     f32 [rows][n_out], 16-byte aligned: fully written, nothing else written.
// Every pointer is a device pointer; every call only enqueues on `stream`.
// Numerics: each weight is dequantized by gemm_f16's own format code (the same f16 value), x16 as
// given, products and sums f32 on the tensor cores, k in increasing 16-value steps into one f32
// accumulator per output, as gemm_f16's mma.sync chain does. The tensor cores' order inside a k16
// step is not specified, so y is held to gemm_f16 by a bound (1e-5 of max|y|), not bit for bit; to
// the f64 product as gemm_f16 is (1e-3 of max|y|, 5e-4 where >= 16k outputs are compared).
//
// Launch shapes: register-A: 256 threads, tiles of BM rows of x (128: two blocks an SM where 4
// stages fit half the shared memory; 256: one) by 128 weight rows, 3-8 stages (lathe_gwr_geometry).
// Staged: 384 threads (a producer warpgroup that loads and dequantizes, two consumer warpgroups
// issuing wgmma m64n128k16 from shared-memory descriptors), BM x 128 tiles, 3-6 stages
// (lathe_gwg_geometry). Tile (gemm_wgmma_tile_rows, both kernels): 256 rows when the 256-row tiles
// number at least 0.7 of the card's SMs, else 128 (512 rows: n_out >= 6144 gets 256). Blocks walk
// rows fastest, as gemm_f16's do.
#pragma once

#include "kernels/gemv_launch.h"

#include <functional>
#include <string>
#include <vector>

namespace lathe::kernels {

// Whether gemm_wgmma reads this weight format (gemm_f16's formats).
bool gemm_wgmma_supports(GgmlType type);

// Whether gemm_wgmma can run here: a compute capability 9.0 card, the sm_90a module compiles, and
// no cuda::Recorder is active (lathe emit has no sm_90a unit). Cached after the first call; never
// throws (false on a CPU-only machine).
bool gemm_wgmma_available(std::string* why = nullptr);

void gemm_wgmma(const WeightMatrix& w, CUdeviceptr x16, int64_t rows, CUdeviceptr y, CUstream stream);

// ---- Two launch forms for a chunk's products that read one x16 (gemm_wgmma_rs_multi.cuh;
// gemm_wgmma_multi_launch.cpp). Both keep gemm_wgmma's contract above for each matrix (formats,
// k, alignment, x16, numerics) and write each output bit-equal to gemm_wgmma on that matrix alone
// (the same main loop: the same chunks and k16 slices in the same order). Where the register-A
// kernel does not read the format (gemm_wgmma_uses_rs false) they fall back inside to the
// per-matrix launches, so callers need not care.
//
// gemm_wgmma_multi: y[m] [rows][w[m].n_out] f32 = x16 . W_m^T for m < n_matrices (1..3), W_m all of
// one format and one k (n_out may differ, ragged ones masked), in ONE launch whose 128-row output
// tiles cover the matrices in order (a tile never straddles two; each matrix its own tensor map and
// y). Each y[m] 16-byte aligned, fully written, nothing else written; the y[m] must not overlap.
// Why: q, k and v of Qwen3-8B at 512 rows: k and v alone make 32 blocks for 132 SMs.
// Fallback (or n_matrices == 1): gemm_wgmma per matrix.
void gemm_wgmma_multi(const WeightMatrix* w, int n_matrices, CUdeviceptr x16, int64_t rows, const CUdeviceptr* y,
                      CUstream stream);

// gemm_wgmma_swiglu: h [rows][n_ff] = silu(x16 . G^T) * (x16 . U^T), n_ff = gate.n_out = up.n_out,
// gate and up of one format and one k; ONE launch, no gate or up output written. SwiGLU is the
// elementwise kernel's (elementwise_binary(swiglu): g / (1 + expf(-g)) * u in f32), so h is bit-equal
// to gemm_wgmma(gate), gemm_wgmma(up), then elementwise_binary(swiglu). h: f32 [rows][n_ff] (0: not
// written); h16: the same values rounded to f16 (nearest even, as convert_to_f16 does) [rows][n_ff]
// (0: not written); at least one of them, each 16-byte aligned, fully written.
// Launch: 256 threads, a block 64 outputs (warpgroup 0 their gate rows, 1 their up rows) by the tile
// rows gemm_wgmma_tile_rows(rows, 2 n_ff) gives.
// Fallback: gemm_wgmma(gate), gemm_wgmma(up) into a stream-ordered scratch (cuMemAllocAsync of
// 2 rows n_ff f32, + rows n_ff where h is 0; freed on the stream after), then elementwise_binary
// (swiglu) and convert_to_f16 as asked.
void gemm_wgmma_swiglu(const WeightMatrix& gate, const WeightMatrix& up, CUdeviceptr x16, int64_t rows, CUdeviceptr h,
                       CUstream stream, CUdeviceptr h16 = 0);

// Measured (H200, tests/test_gemm_wgmma_multi_gpu.cpp, Qwen3-8B, k 4096; ms at 512 | 4096 rows):
//   q+k+v (4096 + 1024 + 1024): q8_0 three launches 0.113 | 0.327, multi 0.052 | 0.324 (499 | 636
//     TFLOP/s); q4_K 0.169 | 0.400 vs 0.071 | 0.394; f16 0.105 | 0.296 vs 0.050 | 0.295; q6_K 0.180 |
//     0.530 vs 0.064 | 0.516.
//   gate + up (12288 each) + swiglu: q8_0 separate 0.217 | 1.43, multi(gate, up) + swiglu 0.182 |
//     1.52, fused 0.176 | 1.45-1.52 (587 | 544 TFLOP/s); q4_K 0.286 | 1.71, 0.227 | 1.84, fused
//     0.250 | 2.20; f16 separate 0.205 | 1.31, fused 0.165 | 1.32; q6_K 0.295 | 2.15, fused 0.281 |
//     2.20. The fused kernel's main loop runs slower than the single kernel's where a chunk takes
//     several boxes (q4_K: 4 weight TMAs of 64 rows a stage, not 2 of 128; not understood yet), so
//     for q4_K multi(gate, up) + elementwise swiglu is faster: gemm_wgmma_swiglu_fused_pays.
//   The fused kernel's 256-row tile beats the 128-row one at every row count (256 to 4096).
// Whether gemm_wgmma_swiglu's fused kernel beats gemm_wgmma_multi({gate, up}) + elementwise_binary
// (swiglu) for this format (measured: f16 and q8_0 yes; q4_K no; q6_K, several boxes a chunk like
// q4_K, assumed no). Both give bit-identical h.
bool gemm_wgmma_swiglu_fused_pays(GgmlType type);

// The kernels of the two forms (register-A only), for tests and notes.
std::string gemm_wgmma_multi_kernel_name(GgmlType type, int tile_rows);
std::string gemm_wgmma_swiglu_kernel_name(GgmlType type, int tile_rows);

// The row count of gemm_wgmma's tile for a shape (128 or 256; the tile is always that x 128), a
// tile's kernel and its dynamic shared memory (lathe_gwg_geometry's total), for tests and notes.
int gemm_wgmma_tile_rows(int64_t rows, int64_t n_out);
std::string gemm_wgmma_kernel_name(GgmlType type, int tile_rows);
unsigned gemm_wgmma_shared_bytes(GgmlType type, int tile_rows);

// The register-A kernel (gemm_wgmma_rs.cuh: weights dequantized into wgmma's A registers, x16 the B
// operand by TMA): used when the format's rows are 16-byte multiples (a tensor map's stride), i.e.
// always for q4_K and f16, for q8_0 when k % 256 == 0, for q6_K when k % 128 == 0 and row_bytes
// allows; the staged kernel (gemm_wgmma_kernel.cuh) otherwise. The tile rows are the same rule.
bool gemm_wgmma_uses_rs(GgmlType type, int64_t k);
std::string gemm_wgmma_rs_kernel_name(GgmlType type, int tile_rows);
unsigned gemm_wgmma_rs_shared_bytes(GgmlType type, int tile_rows);

// Forces the staged kernel for measurements and tests (automatic: the register-A kernel where the
// rows allow it). Not thread-safe against concurrent gemm_wgmma calls.
enum class GemmWgmmaEngine { automatic, staged };
void set_gemm_wgmma_engine_override(GemmWgmmaEngine engine);

// Forces the tile rows (128 or 256) for measurements; 0 restores the rule. Not thread-safe against
// concurrent gemm_wgmma calls.
void set_gemm_wgmma_tile_override(int tile_rows);

// Tiles chosen by measuring (on unless LATHE_TUNE=0, tile_tuner.h): the planner calls tune_gemm_wgmma once per
// form and shape at plan time with the launch it will record; both tile rows (128, 256) are timed on
// the card and the faster is remembered in the card's tile file, so later launches of that form and
// shape (this run's and later runs') take it. Without tuning, or for a shape never tuned, the rule
// (gemm_wgmma_tile_rows). The x and y of `launch` may hold anything: only its time is read.
enum class GemmWgmmaForm { single, multi, swiglu };
int gemm_wgmma_chosen_tile(GemmWgmmaForm form, GgmlType type, int64_t k, int64_t rows, int64_t n_out);
void tune_gemm_wgmma(GemmWgmmaForm form, GgmlType type, int64_t k, int64_t rows, int64_t n_out,
                     const std::function<void(CUstream)>& launch);

}  // namespace lathe::kernels
