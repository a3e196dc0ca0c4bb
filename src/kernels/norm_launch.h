// Host launchers of the RMS norms (norm.cuh). All arrays f32, row-major, on the device; weight is a
// vector of the normed dimension or 0 for none. h = x / sqrt(mean(x^2) + eps) * weight per row.
#pragma once

#include "kernels/activations.h"
#include "runtime/cuda_driver.h"

#include <cstdint>

namespace lathe::kernels {

// The threads of a block-per-row norm of n values without the quantized epilogue (about 8 values a
// thread, 128 to 1024): the mixture router's norm prologue sums the squares in the same order.
unsigned block_threads(int64_t n);

// h, x [rows, n]. h may equal x (in place). `quantized`: h also written in the int8 contracts' form
// (activations.h; n % 32 == 0), as quantize_activations would make it from h, value for value.
void rms_norm(CUdeviceptr h, CUdeviceptr x, CUdeviceptr weight, int64_t rows, int64_t n, float eps,
              CUstream stream, const QuantizedOut& quantized = {});

// The sum and the norm after it in one kernel: x += y (x written back), then h = rms_norm(x) * weight.
// x, y, h [rows, n], pairwise distinct.
void add_rms_norm(CUdeviceptr x, CUdeviceptr h, CUdeviceptr y, CUdeviceptr weight, int64_t rows,
                  int64_t n, float eps, CUstream stream, const QuantizedOut& quantized = {});

// Per-head norm: h, x [rows, heads, d], weight [d] or 0; each head's d values normed alone.
// h may equal x.
void head_rms_norm(CUdeviceptr h, CUdeviceptr x, CUdeviceptr weight, int64_t rows, int64_t heads,
                   int64_t d, float eps, CUstream stream);

}  // namespace lathe::kernels
