// Host launcher of the mixture router's softmax and top k (route.cuh).
#pragma once

#include "runtime/cuda_driver.h"

#include <cstdint>

namespace lathe::kernels {

// For each row of logits [rows, n_expert] f32 (no NaN): ids [rows, k] int32, the k largest logits'
// experts in falling order (equal logits: lower index first), and weights [rows, k] f32, their softmax
// probabilities over all experts, divided by the kept k's sum when `renormalize`. As the interpreter's
// route_top_k. 1 <= k <= n_expert <= 8192.
void route_top_k(CUdeviceptr ids, CUdeviceptr weights, CUdeviceptr logits, int64_t rows,
                 int64_t n_expert, int64_t k, bool renormalize, CUstream stream);

}  // namespace lathe::kernels
