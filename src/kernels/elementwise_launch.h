// Host launchers of the elementwise ops (elementwise.cuh) on f32 device arrays of n values.
#pragma once

#include "kernels/activations.h"
#include "runtime/cuda_driver.h"

#include <cstdint>
#include <vector>

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

// One step of an elementwise run: a unary op, or a binary op with b (n values, or a vector of
// `period` values broadcast over rows) as its second operand, or its first where `swap`.
struct ElemStep {
  bool unary = false;
  int code = 0;  // an ElemUnary or ElemBinary
  bool swap = false;
  float param = 0;
  CUdeviceptr b = 0;
  int64_t period = 0;
};
constexpr size_t kMaxElemSteps = 4;

// out[i] = steps applied in order to x[i], carried in registers: one kernel for a run of 1 to
// kMaxElemSteps ops. `quantized` (k: the row length, n % k == 0, k % 32 == 0): out also written in
// the int8 contracts' form. out may equal x; an operand b may not overlap out unless it equals x.
void elementwise_run(CUdeviceptr out, CUdeviceptr x, int64_t n, const std::vector<ElemStep>& steps, CUstream stream,
                     const QuantizedOut& quantized = {}, int64_t k = 0);

}  // namespace lathe::kernels
