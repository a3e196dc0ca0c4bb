// Host launcher of the prefill product on Hopper's wgmma (src/kernels/gemm_wgmma.cuh,
// gemm_wgmma_kernel.cuh; sm_90a, its own module: kernels::library_90a). gemm_f16's contract on a
// faster engine: y = x16 . dequant(W)^T for a chunk of rows, W read in place in its GGUF format and
// dequantized once per block into shared memory as f16.
//
// NOT YET RUN ON A GPU. Written and compile-checked without a device (NVRTC for sm_90a; ptxas: no
// spills, no serialized wgmma); tests/test_gemm_wgmma_gpu.cpp is ready for the first run. The
// planner uses it only under LATHE_PREFILL_GEMM=wgmma; gemm_f16 stays the default.
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
// Launch shape: 384 threads (a producer warpgroup that loads and dequantizes, two consumer
// warpgroups issuing wgmma m64n128k16 from shared-memory descriptors, 128-byte swizzle), BM x 128
// tiles of y with BM = 128 (each consumer 64 rows) or 256 (each 128 rows); a ring of 3-6 stages
// handed over by mbarriers (lathe_gwg_geometry: as deep as 227 KB of shared memory allows per
// format). Tile (gemm_wgmma_tile): 256 rows when that makes at least 3/4 as many blocks as the card
// has SMs, else 128. Blocks walk rows fastest, as gemm_f16's do.
#pragma once

#include "kernels/gemv_launch.h"

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

// Forces one kernel for measurements and tests (automatic: the rule above; register_a where the
// rows allow it). Not thread-safe against concurrent gemm_wgmma calls.
enum class GemmWgmmaEngine { automatic, staged };
void set_gemm_wgmma_engine_override(GemmWgmmaEngine engine);

// Forces the tile rows (128 or 256) for measurements; 0 restores the rule. Not thread-safe against
// concurrent gemm_wgmma calls.
void set_gemm_wgmma_tile_override(int tile_rows);

}  // namespace lathe::kernels
