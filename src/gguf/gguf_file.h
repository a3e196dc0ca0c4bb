// A GGUF checkpoint (v2 or v3), mmapped read-only and validated before anything is used: magic,
// version, counts, lengths, dims, types, alignment, and every tensor's bytes inside the file and
// disjoint from the others. A malformed file throws GgufError naming the field or tensor; the reader
// never over-reads and never allocates from a count it has not checked against the bytes left.
#pragma once

#include "base/error.h"
#include "gguf/ggml_type.h"
#include "gguf/gguf_value.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace lathe {

class GgufError : public UserError {
 public:
  using UserError::UserError;
};

struct GgufTensor {
  std::string name;
  std::vector<int64_t> dims;  // ggml order: dims[0] is the row length (fastest), dims[1] the rows...
  GgmlType type = GgmlType::F32;
  uint64_t offset = 0;        // from the start of the data section
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;  // into the mmap

  int64_t n_elements() const;
  int64_t n_rows() const { return dims.empty() ? 1 : n_elements() / dims[0]; }
  std::string shape_string() const;  // "[4096, 151936]"
};

class GgufFile {
 public:
  // Opens and validates; throws GgufError ("<path>: <what>") on any defect.
  static GgufFile open(const std::string& path);
  // Validates a file already in memory (tests, the fuzzer). The bytes must outlive the GgufFile.
  static GgufFile from_bytes(std::span<const uint8_t> bytes, std::string name = "<memory>");

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  ~GgufFile();

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t file_size() const { return bytes_.size(); }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t alignment() const { return alignment_; }
  std::span<const uint8_t> bytes() const { return bytes_; }

  // Metadata, in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* find(const std::string& key) const;
  bool has(const std::string& key) const { return find(key) != nullptr; }
  // Typed getters: throw GgufError naming the key when it is missing or of the wrong type.
  // Integers of any width convert if the value fits.
  std::string get_string(const std::string& key) const;
  uint64_t get_uint(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;  // accepts integers too
  bool get_bool(const std::string& key) const;
  const GgufValue& get_array(const std::string& key) const;
  std::optional<std::string> find_string(const std::string& key) const;
  std::optional<uint64_t> find_uint(const std::string& key) const;
  std::optional<double> find_float(const std::string& key) const;
  std::optional<bool> find_bool(const std::string& key) const;

  // Tensors, in file order.
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(const std::string& name) const;
  const GgufTensor& tensor(const std::string& name) const;  // throws GgufError naming it

 private:
  GgufFile() = default;
  void parse();

  std::string path_;
  std::span<const uint8_t> bytes_;
  void* map_ = nullptr;  // non-null when this object owns an mmap of bytes_
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::map<std::string, size_t> metadata_index_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

}  // namespace lathe
