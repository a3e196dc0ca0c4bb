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
};

// Whether the launch takes w under contract a: the decode kernel's row walk, n_out % 32 == 0, at most
// kNormEpilogueRows rows a block, and its rows dealt by 32-row blocks load no block with more rows than
// dealing them one by one (the widest block sets the launch's time: qwen3-8b's and llama3-8b's 4,096
// rows yes, qwen3-0.6b's 1,024 no). LATHE_NORM_EPILOGUE=force drops that last condition (tests on tiny
// shapes); =0 refuses every shape (measurements, as --hold norm_epilogue). Read at each call.
bool norm_epilogue_applies(const WeightMatrix& w, Activations a);
// The launch's blocks: the number of parts it writes (and the merged products add).
int64_t norm_epilogue_blocks(const WeightMatrix& w, Activations a);
void gemv_norm_epilogue(const WeightMatrix& w, Activations a, CUdeviceptr xq, const NormEpilogue& e,
                        CUstream stream);

}  // namespace lathe::kernels
