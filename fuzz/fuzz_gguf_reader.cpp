// libFuzzer target: any bytes either parse as a valid GGUF file or are refused with a GgufError.
// Built with address and undefined-behaviour sanitizers, so an over-read or an overflow is a crash.
// On success every tensor's first and last rows are dequantized, which reads its whole byte range
// bounds the reader promised.
#include "gguf/block_format.h"
#include "gguf/gguf_file.h"

#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const lathe::GgufFile f = lathe::GgufFile::from_bytes(std::span<const uint8_t>(data, size), "fuzz");
    for (const lathe::GgufTensor& t : f.tensors()) {
      const int64_t n = t.dims[0];
      if (n > (1 << 16)) continue;
      std::vector<float> row(static_cast<size_t>(n));
      const int64_t bytes = lathe::row_bytes(t.type, n);
      lathe::dequantize_row(t.type, t.data, row.data(), n);
      lathe::dequantize_row(t.type, t.data + (t.n_rows() - 1) * bytes, row.data(), n);
    }
    for (const auto& [key, value] : f.metadata()) (void)value.to_string();
  } catch (const lathe::GgufError&) {
  }
  return 0;
}
