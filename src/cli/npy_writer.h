// Writing a NumPy .npy file (format version 1.0), readable by numpy.load: the magic "\x93NUMPY", the
// version bytes 1 0, a little-endian u16 header length, a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (d0, d1), } padded with spaces and ended by '\n'
// so the data starts at a multiple of 64 bytes, then the values in C order.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace lathe::cli {

// The header for little-endian f32 values of this shape (data offset a multiple of 64).
std::string npy_header_f32(std::span<const int64_t> shape);

// Writes values (the product of shape of them) as a float32 array; a UserError naming the path when
// the file cannot be written.
void write_npy_f32(const std::string& path, std::span<const int64_t> shape, std::span<const float> values);

}  // namespace lathe::cli
