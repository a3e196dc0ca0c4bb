// Host side of the streamed decode kernels (gemv_decode.cuh's pieces, used again by gemv_multi.cuh and
// moe_decode.cuh): how they cut a row of each format into chunks, the shared memory their warps' rings
// take, the device's opt-in shared memory, and the fallback scratch of their launchers.
#pragma once

#include "gguf/ggml_type.h"
#include "kernels/activations.h"

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace lathe::kernels {

// Mirrors LATHE_GEMV1_WARPS x LATHE_GEMV1_STAGES x LATHE_GEMV1_SLOT (gemv_decode.cuh): the cp.async
// rings of a block's 16 warps.
constexpr int64_t kDecodeStageBytes = 16 * 4 * 2560;

// Mirrors LATHE_GEMV1_WARPS x LATHE_GEMV1_SLOT: one slot of every warp's ring (a ring of S slots is S of
// these); and LATHE_MOE_SINGLE_MAX_STAGES (moe_single_launch.cuh), the deepest ring the one-launch
// mixture takes.
constexpr int64_t kDecodeSlotBytes = 16 * 2560;
constexpr int kMoeSingleMaxStages = 5;

// Mirrors LATHE_GEMV1_PAIRS: the bit of a decode kernel's group parameter that asks for the paired
// products.
constexpr int kDecodePairs = 256;

// Mirrors LATHE_MOE_DOWN_ROUNDS (moe_decode.cuh): the most 32-piece rounds (pieces of 32 values) a
// chunk of the mixture's down kernel carries when it holds several experts' rows.
constexpr int64_t kMoeDownRounds = 4;

// Mirrors LATHE_GEMV1T_ROWS (gemv_decode_tiles.cuh): the rows of a tile of the tensor-core decode
// products.
constexpr int64_t kDecodeTileRows = 16;

// A format the tile walk reads (gemv_decode_tiles.cuh's lathe_gemv1t_fmt_*, mirrored): its kernel-name
// part, a unit's bytes, a box's width in bytes (a box is 16 rows of it; Q6_K's 210-byte unit is read
// as 240, so that a slot's rows fall on distinct banks), the ring's slots a warp, and where x starts
// in the dynamic shared memory (after the rings; the kernel's dynamic shared memory is that plus x's
// staged bytes). Null for formats without a tile form.
struct DecodeTileFormat {
  const char* name;
  int64_t unit_bytes, box_bytes, stages, x_offset;
};
const DecodeTileFormat* decode_tile_format(GgmlType t);
// LATHE_DECODE_K35's setting (Q2_K, Q3_K and Q5_K on the row walk and the tiles) for tests that plan
// with it on the CPU; returns the setting before. Not thread-safe against concurrent planning.
bool set_decode_k35(bool on);
// Every format the tile kernels are built for, whether the lane takes its tiles or not (Q2_K's, Q3_K's and
// Q5_K's not under LATHE_DECODE_K35=0: decode_tile_format): for the tests that hold the table to the kernels.
const DecodeTileFormat* decode_tile_format_listed(GgmlType t);

// The most static shared memory a decode kernel declares beside its dynamic ring and x (the row and
// the paired bodies' barriers and partial sums: 1,408 bytes by ptxas), with room to spare; and the
// most a kernel with the tile walk (gemv_decode_tiles.cuh) declares: the merged ones, whose tile
// kernels also hold the row walk's sums beside the tiles' two sums of 16 rows a warp and the warps'
// ring barriers (4,784 bytes by ptxas), with room to spare.
constexpr int64_t kDecodeStaticBytes = 2048;
constexpr int64_t kDecodeTileStaticBytes = 6144;

// A format the streamed kernels read: its kernel-name part, values a unit (a block, or a K-format
// super-block) and units a chunk (each format's chunk_units in the device code). Null for others.
struct DecodeFormat {
  const char* name;
  int unit_values;
  int chunk_units;
};
const DecodeFormat* decode_format(GgmlType t);

// The kernel-name part of the dense decode products (lathe_gemv1_, lathe_gemv1_norm_, lathe_gemvm_)
// for weights of type t: decode_format(t)->name, or "q8_0_ef" for Q8_0 while the weights stream
// evict-first (gemv_launch.h's set_weights_evict_first): the same arithmetic, the copies with an L2
// evict-first policy. Null for formats the decode kernels do not read.
const char* dense_kernel_format(GgmlType t);

// Chunks a row of k values takes.
int64_t decode_chunks_per_row(const DecodeFormat& f, int64_t k);

// Half chunks (chunk_units / 2 units, gemv_decode.cuh's lathe_gemv1_half) a row of k values takes:
// the paired products stage two rows' half chunks a slot.
int64_t decode_half_chunks_per_row(const DecodeFormat& f, int64_t k);

// Whether the paired products (two rows' half chunks a ring slot, each x block read once for both)
// are the decode kernels' choice for n_out rows of k values: where a row's last chunk would leave its
// slot part empty (k % (32 chunk_units) != 0 for q8_0: qwen3-0.6b's k = 1,024 and 3,072) or the
// product is small (n_out k <= 4M values: qwen3-0.6b's o, 1,024 x 2,048); never for Q6_K (its half
// chunk, 48 pieces, leaves a quarter of the lanes idle). Measured on the H200 (docs/perf.md,
// 2026-12-01): qwen3-0.6b tg128 +8% with them everywhere; the 8B shapes, whose rows are whole chunks
// of large products, -2 to -4% (so those keep one row an item). LATHE_DECODE_PAIRS=0 / 1 (read once)
// turns them off / on for every product but Q6_K's, to measure.
bool decode_pairs_pay(const DecodeFormat& f, int64_t n_out, int64_t k);

// Bytes of x's int8 form a block stages for `values` values (levels, and d1, d2, sum per 32).
int64_t staged_levels_bytes(int64_t values, Activations a);

// The device's opt-in shared memory per block, read once (0 when unknown: no driver, e.g. recording).
int64_t shared_optin_bytes();

// Scratch a launcher's fallback path owns, one per `use` (a small integer per launcher and purpose):
// grown, never shrunk; a replaced buffer is kept (a launch already enqueued may still read it). Made
// on first use, so a path that needs it must not first run inside a graph capture.
CUdeviceptr launcher_scratch(int use, size_t bytes);
constexpr int kScratchGateUp = 0;  // gemv_gate_up_swiglu's fallback: the up product
constexpr int kScratchMoe = 1;     // moe_launch's fallbacks: + 0 router logits, + 1 up, + 2 quantized h

}  // namespace lathe::kernels
