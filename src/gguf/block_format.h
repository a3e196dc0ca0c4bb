// Block formats: how a row of a GGUF tensor is stored. The descriptor is what kernels share (the GPU
// lane emits its block layouts from the same table); dequantization and quantization are the CPU
// reference, bit-exact with ggml's (tests compare with PyPI's gguf.quants).
#pragma once

#include "gguf/ggml_type.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lathe {

struct BlockFormat {
  GgmlType type;
  std::string_view name;    // ggml's name: "q8_0", "q4_K", "bf16", ...
  int64_t block_size;       // values per block (1 for the float types, 32, or 256 for the K types)
  int64_t block_bytes;      // bytes per block
  bool quantized;           // false for f32, f16, bf16
  bool can_quantize;        // quantize_row() accepts it
  std::string_view layout;  // the block's fields in order, as a reader of the kernels wants them
};

const BlockFormat& block_format(GgmlType type);

// Bytes of a row of n values; n must be a multiple of the block size (checked: UserError otherwise).
int64_t row_bytes(GgmlType type, int64_t n);

// n values from src (n / block_size blocks) into dst. n must be a multiple of the block size.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);

// n values from src into dst (row_bytes(type, n) bytes), as ggml's reference quantizer does
// (no importance matrix). Throws UserError for a type with can_quantize == false.
void quantize_row(GgmlType type, const float* src, void* dst, int64_t n);

// IEEE half and bfloat16 conversions used by every format (round to nearest even; NaN kept NaN).
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t h);
// f rounded to the nearest f16 and back (what storing it as f16 keeps).
inline float f16_rounded(float f) { return f16_to_f32(f32_to_f16(f)); }
uint16_t f32_to_bf16(float f);

}  // namespace lathe
