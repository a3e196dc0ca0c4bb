#include "cli/npy_writer.h"

#include "base/error.h"

#include <fmt/core.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace lathe::cli {

std::string npy_header_f32(std::span<const int64_t> shape) {
  static_assert(std::endian::native == std::endian::little, "the .npy data is written as '<f4'");
  std::string dims;  // Python's tuple: (5,) for one dimension, (5, 3) for two, () for none
  for (size_t i = 0; i < shape.size(); ++i) dims += fmt::format("{}{}", i > 0 ? ", " : "", shape[i]);
  if (shape.size() == 1) dims += ',';
  std::string dict = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}", dims);
  // magic (6) + version (2) + length (2) + dict + padding + '\n' ends on a multiple of 64.
  const size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  if (dict.size() > 0xffff) internal_fail("a .npy 1.0 header of {} bytes", dict.size());
  std::string header("\x93NUMPY\x01\x00", 8);
  header += static_cast<char>(dict.size() & 0xff);
  header += static_cast<char>(dict.size() >> 8);
  return header + dict;
}

void write_npy_f32(const std::string& path, std::span<const int64_t> shape, std::span<const float> values) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  LATHE_CHECK(n == static_cast<int64_t>(values.size()));
  const std::string header = npy_header_f32(shape);
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) fail("cannot write {}: {}", path, std::strerror(errno));
  if (std::fwrite(header.data(), 1, header.size(), f.get()) != header.size() ||
      std::fwrite(values.data(), sizeof(float), values.size(), f.get()) != values.size() ||
      std::fclose(f.release()) != 0)
    fail("cannot write {}: {}", path, std::strerror(errno));
}

}  // namespace lathe::cli
