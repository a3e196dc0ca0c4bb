// Host launcher of the row argmax (argmax.cuh).
#pragma once

#include "runtime/cuda_driver.h"

#include <cstdint>

namespace lathe::kernels {

// Device memory the argmax of [rows, n] needs: partial results and a counter per row. Zero it once
// (DeviceBuffer::zero) before the first use; each launch leaves the counters zero again, so a captured
// graph can replay it.
size_t argmax_workspace_bytes(int64_t rows, int64_t n);

// out [rows] int32 = the index of each row's largest value in x [rows, n] f32, the first of equal
// maxima, NaN losing to every number (the interpreter's argmax). n < 2^31.
void argmax(CUdeviceptr out, CUdeviceptr x, int64_t rows, int64_t n, CUdeviceptr workspace,
            CUstream stream);

}  // namespace lathe::kernels
