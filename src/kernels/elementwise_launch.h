// Host launchers of the elementwise ops (elementwise.cuh) on f32 device arrays of n values.
#pragma once

#include "runtime/cuda_driver.h"

#include <cstdint>

namespace lathe::kernels {

// Codes shared with elementwise.cuh (elem_binary_op / elem_unary_op): keep in step.
enum class ElemBinary { add = 0, subtract = 1, multiply = 2, divide = 3, swiglu = 4 };
enum class ElemUnary { scale = 0, silu = 1, gelu = 2, sigmoid = 3, relu = 4, soft_cap = 5 };

// out[i] = op(a[i], b[i % period]): period = n when b has a's shape, or a's last dimension when b is a
// vector broadcast over rows (n a multiple of period). swiglu is silu(a) * b. out may equal a.
void elementwise_binary(ElemBinary op, CUdeviceptr out, CUdeviceptr a, CUdeviceptr b, int64_t n,
                        int64_t period, CUstream stream);

// out[i] = op(x[i]); `param` is the factor of scale and the cap of soft_cap (> 0), unused otherwise.
// out may equal x.
void elementwise_unary(ElemUnary op, CUdeviceptr out, CUdeviceptr x, int64_t n, float param,
                       CUstream stream);

}  // namespace lathe::kernels
