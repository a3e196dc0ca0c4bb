// Writes GGUF v3 files: metadata, then the tensor table, then the data, each tensor aligned.
// Tensor data is either given as bytes or produced by a callback into the output buffer, so a 30 GB
// synthetic checkpoint streams to disk without being held in memory.
#pragma once

#include "gguf/ggml_type.h"
#include "gguf/gguf_value.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lathe {

class GgufWriter {
 public:
  // Fills dst (exactly the tensor's bytes) with the rows [row_begin, row_end) of the tensor.
  using RowFiller = std::function<void(uint8_t* dst, int64_t row_begin, int64_t row_end)>;

  explicit GgufWriter(uint64_t alignment = 32);

  void set(const std::string& key, GgufValue value);  // replaces an existing key, keeps order
  void add_tensor(const std::string& name, std::vector<int64_t> dims, GgmlType type,
                  std::vector<uint8_t> data);
  void add_tensor(const std::string& name, std::vector<int64_t> dims, GgmlType type, RowFiller fill);

  // Writes the file (throws UserError on I/O failure). Rows are filled on `threads` threads.
  // With zero_data the data section is left as a hole of zeros (a sparse file): shapes and metadata
  // only, for tests of full-size shapes that never read the weights.
  // Returns the file's size in bytes.
  uint64_t write(const std::string& path, int threads = 0, bool zero_data = false) const;
  // The whole file in memory (tests).
  std::vector<uint8_t> to_bytes() const;

  // Lower-level pieces, for tests that build malformed files.
  std::vector<uint8_t> header_bytes() const;  // everything before the data section, padded

 private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> dims;
    GgmlType type;
    uint64_t n_bytes;
    uint64_t offset;
    std::vector<uint8_t> data;
    RowFiller fill;
  };
  uint64_t alignment_;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<Tensor> tensors_;
  uint64_t data_size_ = 0;

  void fill_tensor(const Tensor& t, uint8_t* dst, int threads) const;
};

}  // namespace lathe
