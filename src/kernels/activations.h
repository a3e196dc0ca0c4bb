// The numerics contracts (../shared/design.md) and the int8 form of an activation, shared by the
// kernels that read it (the products) and those that make it (the quantizer, and the norms and
// elementwise runs whose epilogue quantizes: fusion rule quantize_epilogue).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string_view>

namespace lathe::kernels {

// How activations enter a product.
//   f32:    f32 activations; weights dequantized exactly; f32 products and sums.
//   int8:   activations quantized per 32 values to int8 with an f32 scale (like llama.cpp's q8_1);
//           products of levels with __dp4a, scales applied per block.
//   int8x2: two int8 words per value (the second quantizes the first's residual), ~14 bits.
// Float weight formats use f32 products under every contract (int contracts: x rebuilt from levels).
enum class Activations { f32, int8, int8x2 };
std::string_view activations_name(Activations a);

// Bytes of the quantized form of rows x k activations: q1 [rows][k] int8, then (int8x2) q2
// [rows][k] int8, then ds [rows][k / 32] float4 (d1, d2, block sum, 0). 0 for Activations::f32.
int64_t quantized_activation_bytes(int64_t rows, int64_t k, Activations a);

// Where a producing kernel also writes the quantized form of its [rows][k] output (k % 32 == 0):
// `q` holds quantized_activation_bytes(rows, k, a) bytes, 16-byte aligned. q == 0: not asked for.
struct QuantizedOut {
  CUdeviceptr q = 0;
  Activations a = Activations::f32;
};

// The kernel arguments of a QuantizedOut (q1 == 0 when none).
struct QuantizedPointers {
  CUdeviceptr q1 = 0, q2 = 0, ds = 0;
  int two_words = 0;
};
QuantizedPointers quantized_pointers(const QuantizedOut& out, int64_t rows, int64_t k);

}  // namespace lathe::kernels
