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

// A format the streamed kernels read: its kernel-name part, values a unit (a block, or a K-format
// super-block) and units a chunk (each format's chunk_units in the device code). Null for others.
struct DecodeFormat {
  const char* name;
  int unit_values;
  int chunk_units;
};
const DecodeFormat* decode_format(GgmlType t);

// Chunks a row of k values takes.
int64_t decode_chunks_per_row(const DecodeFormat& f, int64_t k);

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
