// Host launchers of the matrix products (src/kernels/gemv_*.cuh, quantize_act.cuh, matmul.cuh):
// GEMV for decode and small batches in three numerics contracts, its expert-indexed form for
// mixtures, the activation quantizer of the int8 contracts, the embedding row gather and the batched
// product for prefill chunks. Every pointer is a device pointer; every call only enqueues on `stream`.
//
// Weights are read in place in their GGUF block format: a matrix W has n_out rows of k values (ggml:
// row o is output o), rows contiguous and row_bytes(type, k) apart; a stack of experts is n_expert
// such matrices back to back. Formats: f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K.
// Shapes: k % 32 == 0 (k % 256 == 0 for the K formats); weights 16-byte aligned and readable up to
// the next 16-byte boundary past their end (device allocations are); f32 activations 16-byte aligned.
//
// Speed (H200, one row, weights cycled past L2, launches in a graph; tests/test_gemv_gpu.cpp
// TimingPrintsBandwidth), decode kernel (gemv_decode.cuh), int8 / int8x2, % of 4,630 GB/s, measured
// 2026-12-01 (docs/perf.md): q8_0 151936x4096 95 / 94%; 12288x4096 80 / 78%; 4096x12288 81 / 78%;
// 4096x4096 56 / 52%; 1024x4096 28 / 28%; q4_K 12288x4096 53 / 48%, 4096x4096 38 / 35% (2026-12-02:
// 62 / 56%, 44 / 40%, and 4096x12288 63 / 58%; its tiles, gemv_decode_tiles.cuh: 58 / 54%, 48 / 44%,
// 65 / 62%); q6_K 12288x4096 50 / 46%, 4096x4096 37 / 34% (2026-12-03, int8x2: rows 52%, 41%, and
// 4096x12288 55%, 151936x4096 65%; its tiles 59%, 47%, 63%, 77%). (General kernel: q8_0 4096x4096 26%, 12288x4096 37%,
// q4_K 13%, q6_K 20%.) Small matrices pay a ~3 us floor (launch, first DRAM round trip, tail); the
// loop is bound by the SM's shared-memory pipe (x read per piece, the weights' words 2-way
// conflicted), q4_K / q6_K also by decode work per byte (int8x2 costs them 10-20%). f32 contract:
// ~900-1100 GB/s.
#pragma once

#include "gguf/ggml_type.h"
#include "kernels/activations.h"

#include <cuda.h>

#include <cstdint>
#include <string_view>

namespace lathe::kernels {

// Whether the products and the gather read this format.
bool gemv_supports(GgmlType type);

struct WeightMatrix {
  GgmlType type = GgmlType::F32;
  CUdeviceptr data = 0;
  int64_t n_out = 0;     // rows of W: outputs
  int64_t k = 0;         // values per row: inputs
  int64_t n_expert = 1;  // > 1: a stack [n_expert][n_out][k]
};

// ---- activations for the int8 contracts (their layout: kernels/activations.h)
// x [rows][k] f32 -> q (quantized_activation_bytes(rows, k, a) bytes, 16-byte aligned).
// |x - x^| <= d1 / 2 per value for int8 and <= d2 / 2 (about max|block| / 64516) for int8x2.
void quantize_activations(CUdeviceptr x, int64_t rows, int64_t k, Activations a, CUdeviceptr q, CUstream stream);

// ---- GEMV: y[r][o] = sum_i W[o][i] * x[r][i] for rows r < n_rows, 1 <= n_rows <= 8.
// x: f32 [n_rows][k] for Activations::f32, otherwise the quantize_activations output for the same
// rows, k and contract. y: f32 [n_rows][n_out], fully written. W: n_expert must be 1.
// One row under int8 / int8x2 with q8_0, q4_K or q6_K weights takes the decode kernel
// (gemv_decode.cuh: cp.async-streamed chunks, x staged in shared memory once a block) where the
// device's opt-in shared memory holds its ~160 KB + 2.5 k bytes; everything else the general one.
void gemv(const WeightMatrix& w, Activations a, CUdeviceptr x, int64_t n_rows, CUdeviceptr y, CUstream stream);

// One row under int8 / int8x2 from its f32 form x (16-byte aligned, k % 128 == 0): each block of the
// decode kernel quantizes x into its shared memory (bit-identical to quantize_activations, 8 threads
// a 32-value block) and multiplies, so no quantizer launch and no int8 form in memory. Returns false
// and launches nothing where the decode kernel does not take the shape, or k > 8192, where quantizing
// once in a launch of its own is faster (gemv_launch.cpp has the figures; LATHE_QUANTIZING_ROW_MAX_K
// moves the limit): the caller then quantizes and calls gemv.
bool gemv_quantizing_row(const WeightMatrix& w, Activations a, CUdeviceptr x, CUdeviceptr y, CUstream stream);

// The widest row gemv_quantizing_row takes (default 8192); returns the limit before. For tests and
// measurements; not thread-safe against concurrent calls.
int64_t set_quantizing_row_max_k(int64_t k);
int64_t quantizing_row_max_k();

// Whether the dense decode products stream Q8_0 weights with an L2 evict-first policy (their _q8_0_ef_
// kernels, decode_stream.h's dense_kernel_format; default false): for the launches made from now on (a
// graph captured before keeps the kernels it captured). Results do not change, only what L2 keeps.
// The mixture's and the router epilogue's kernels stream plainly either way. Not thread-safe against
// concurrent launches.
void set_weights_evict_first(bool on);

// Whether gemv may take the decode kernel (default true); false forces the general kernel, for
// measurements and tests that compare the two. Not thread-safe against concurrent gemv calls.
void set_decode_gemv_enabled(bool enabled);

// Which decode products of one row of K-format weights take the tensor-core form (gemv_decode_tiles.cuh:
// 16-row tiles, mma.sync for the integer sums) where it applies (decode_tiles_group): none, the merged
// products only (q/k/v, gate/up with SwiGLU), or also the plain and norm-epilogue ones. Default all
// (docs/perf.md has the measurements); LATHE_DECODE_TILES=0, merged or 1 (all) sets it. Returns the
// setting before. For tests and measurements; not thread-safe against concurrent gemv calls.
enum class DecodeTiles { off, merged, all };
DecodeTiles set_decode_tiles(DecodeTiles tiles);

// LATHE_DECODE_TILES's value as a setting: "" (the default), 1 or all; merged; 0 or off. UserError
// naming the variable otherwise.
DecodeTiles decode_tiles_named(std::string_view value);

// The decode products the tile form serves.
enum class TileProduct { plain, norm_epilogue, merged };

// Whether the tile form (gemv_decode_tiles.cuh) takes one row of w under contract a in product p: the
// formats decode_tile_format has (Q4_K; Q2_K, Q3_K and Q5_K unless LATHE_DECODE_K35=0) in every
// product, Q6_K in the plain and norm-epilogue products; whole 16-row tiles, k a multiple of
// 16 units (4,096), the form set for p, its shared memory within the device's; the plain product (its
// tiles dealt over the SMs, not a block's own 32-row blocks) also needs a tile for every SM. Returns
// its group parameter (16: the block's warps a tile), 0 where not.
int decode_tiles_group(const WeightMatrix& w, Activations a, TileProduct p);

// The tile kernels' dynamic shared memory for w under contract a (its format's rings, then x staged):
// Q3_K's, Q4_K's and Q5_K's the decode kernel's, Q6_K's ~20 KB more.
int64_t decode_tile_shared_bytes(const WeightMatrix& w, Activations a);

// The tile kernels' tensor map of w (a LatheTileMap parameter, gemv_decode_tiles.cuh): w's rows as 2D
// bytes [n_out][row_bytes], a box 16 rows of the format's box width (decode_tile_format: Q4_K's and
// Q5_K's unit, 144 and 176 bytes; Q2_K's 84-byte unit in 112, Q3_K's 110-byte one in 144, Q6_K's
// 210-byte one in 240: the unit up to 14 bytes in, zeros past a row's end).
CUtensorMap decode_tile_map(const WeightMatrix& w);

// The decode products' requests made before the programmatic-launch wait (their `early` argument):
// 0 waits first; 1 + P asks for the cp.async ring's first chunks and P more chunks a warp of L2
// (P <= 31; the single-matrix decode kernel asks for one more) while the kernel before still runs.
// Default P = 0. Measured on the H200 (tg128, 2026-11-29): the ring's early requests took qwen3-8b
// Q8_0 from 269 to 277 tok/s; L2 requests (P = 8) then cost it (258) and did not help qwen3-0.6b (927
// against 939 at P = 0). LATHE_DECODE_PREFETCH=P forces P, =off waits first. Read once.
int decode_early_requests();

// The decode kernel's launch for one row of w under an int8 contract (gemv_decode.cuh): its grid, the
// group parameter (warps an item, kDecodePairs for the paired products) and its dynamic shared
// memory. False where that kernel does not take w (format, contract, shared memory, or turned off).
// allow_pairs = false: one row an item even where the paired products would be its choice.
struct DecodeGemvLaunch {
  unsigned blocks = 0;
  int mode = 0;
  bool pairs = false;
  int64_t shared_bytes = 0;
};
bool decode_gemv_launch(const WeightMatrix& w, Activations a, DecodeGemvLaunch& out, bool allow_pairs = true);

// ---- GEMV over experts (mixtures). W is a stack [n_expert][n_out][k]; ids [n_rows][top_k] int32 on
// the device, each in [0, n_expert) (not checked on the device).
//   combine == false: y [n_rows * top_k][n_out], y[r * top_k + j] = x[xr] . W_ids[r][j]^T  (gate, up)
//   combine == true:  y [n_rows][n_out], y[r] = sum_j route_w[r][j] * (x[xr] . W_ids[r][j]^T)
//                     (down-and-combine; route_w [n_rows][top_k] f32, or 0 for weights of 1),
// with xr = x_per_slot ? r * top_k + j : r: x holds n_rows rows, or n_rows * top_k rows (one per slot,
// as the down product reads the activation of each expert), in the contract's form.
struct ExpertRouting {
  CUdeviceptr ids = 0;
  int64_t top_k = 1;
  CUdeviceptr route_w = 0;
  bool combine = false;
  bool x_per_slot = false;
};
void gemv_experts(const WeightMatrix& w, Activations a, CUdeviceptr x, int64_t n_rows, const ExpertRouting& routing,
                  CUdeviceptr y, CUstream stream);

// ---- embedding rows: out [n_ids][n_cols] f32, out[r] = row ids[r] of table (ids int32 on the device,
// each in [0, n_rows)), exactly the values of dequantize_row. out 32-byte aligned.
void gather_rows(const WeightMatrix& table, CUdeviceptr ids, int64_t n_ids, CUdeviceptr out, CUstream stream);

// ---- the batched product for prefill chunks: y [n_rows][n_out] = x [n_rows][k] . W^T, any n_rows,
// f32 activations and accumulation (the f32 contract).
void matmul(const WeightMatrix& w, CUdeviceptr x, int64_t n_rows, CUdeviceptr y, CUstream stream);

}  // namespace lathe::kernels
