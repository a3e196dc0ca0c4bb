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

// A decode step's argmax fed to the next step on the device (argmax.cuh's lathe_step_advance): the
// one-row step's token (int32 at tokens) becomes next[0], its position p (at positions) p + 1, and
// ids[p % slots] records the token. The step after it must not begin before it ends (a graph replay of
// its own, or a launch without programmatic serialization): rope and the attention read the position
// before their waits.
void step_advance(CUdeviceptr next, CUdeviceptr tokens, CUdeviceptr positions, CUdeviceptr ids, int slots,
                  CUstream stream);

}  // namespace lathe::kernels
