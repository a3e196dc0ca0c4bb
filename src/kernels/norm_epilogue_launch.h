// Host launcher of a decode product with the sum and the RMS norm's weighting of the next merged
// products' input in its epilogue (gemv_norm_epilogue.cuh; fusion rule norm_epilogue): for one decode
// row under an int8 contract,
//   s = W . x + resid                  (written to `sum`: the next residual)
//   h = s * norm_w                     (its int8 form to x_q: quantize_activations' bytes for h)
//   parts[b] = sum of s_i^2 over block b's rows
// in one launch of the decode GEMV, its rows dealt by whole 32-row blocks. The merged products after
// it (gemv_multi_launch.h's NormPrologue with xq and parts) copy x_q and multiply each row's sums by
// rsqrt(sum of the parts / n + eps): the norm the merged kernel's prologue would have formed, without
// forming it in every block. The product's own output y is not written. Every pointer is a device
// pointer, 16-byte aligned; the call only enqueues on `stream`.
#pragma once

#include "kernels/activations.h"
#include "kernels/gemv_launch.h"

#include <cuda.h>

#include <cstdint>

namespace lathe::kernels {

// Mirrors LATHE_NORM_EPI_ROWS (gemv_norm_epilogue.cuh): the most rows a block keeps.
constexpr int64_t kNormEpilogueRows = 128;

struct NormEpilogue {
  CUdeviceptr resid = 0, sum = 0, norm_w = 0;  // [n_out] f32
  QuantizedOut x_q;                            // h's int8 form (contract a)
  CUdeviceptr parts = 0;                       // norm_epilogue_blocks floats
  CUdeviceptr count = 0;                       // the dealt form's: norm_epilogue_count_bytes, zero before the
                                               // first launch; each launch leaves it zero
};

// Whether the launch takes w under contract a: the decode kernel's row walk, n_out % 32 == 0, at most
// kNormEpilogueRows rows a block, and its rows dealt by 32-row blocks load no block with more rows than
// dealing them one by one (the widest block sets the launch's time: qwen3-8b's and llama3-8b's 4,096
// rows yes, qwen3-0.6b's 1,024 no). LATHE_NORM_EPILOGUE=force drops that last condition (tests on tiny
// shapes); =dealt takes every shape the tiles do not take with its rows dealt one by one, each 32-row
// block quantized by the warp that writes its last row (e.count; on qwen3-0.6b measured 4% slower than
// no norm epilogue, so only asked for); =0 refuses every shape (measurements, as --hold norm_epilogue).
// Read at each call.
bool norm_epilogue_applies(const WeightMatrix& w, Activations a);
// The number of parts the launch writes (and the merged products add): its blocks, or dealt, the
// 32-row blocks.
int64_t norm_epilogue_blocks(const WeightMatrix& w, Activations a);
// The bytes of e.count the launch needs: 0 by block.
int64_t norm_epilogue_count_bytes(const WeightMatrix& w, Activations a);
// Whether the launch can take x as its f32 row and quantize it in every block (x_f32 below): the dealt
// form, within the plain decode kernel's quantizing-row width (gemv_launch.h).
bool norm_epilogue_quantizes_row(const WeightMatrix& w, Activations a);
// x_f32: 0, or (norm_epilogue_quantizes_row) x's f32 row, xq then unused.
void gemv_norm_epilogue(const WeightMatrix& w, Activations a, CUdeviceptr xq, const NormEpilogue& e,
                        CUstream stream, CUdeviceptr x_f32 = 0);

}  // namespace lathe::kernels
