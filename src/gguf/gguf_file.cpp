#include "gguf/gguf_file.h"

#include "gguf/block_format.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

namespace lathe {
namespace {

constexpr int kMaxArrayDepth = 8;  // nested arrays deeper than this are refused, not recursed into
constexpr int kMaxDims = 4;        // ggml's GGML_MAX_DIMS

// A bounds-checked cursor over the untrusted bytes. Every read checks the bytes left first.
class Cursor {
 public:
  Cursor(std::span<const uint8_t> bytes, const std::string& name) : bytes_(bytes), name_(name) {}

  uint64_t pos() const { return pos_; }
  uint64_t left() const { return bytes_.size() - pos_; }

  template <typename... Args>
  [[noreturn]] void error(fmt::format_string<Args...> format, Args&&... args) const {
    throw GgufError(fmt::format("{}: {}", name_, fmt::format(format, std::forward<Args>(args)...)));
  }

  void need(uint64_t n, std::string_view what) const {
    if (n > left())
      error("{} needs {} bytes at offset {} but the file has {} left (truncated?)", what, n, pos_,
            left());
  }

  template <typename T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(std::string_view what) {
    const uint64_t n = read<uint64_t>(what);
    if (n > left())
      error("{}: string length {} is more than the {} bytes left in the file", what, n, left());
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return s;
  }

 private:
  std::span<const uint8_t> bytes_;
  const std::string& name_;
  uint64_t pos_ = 0;
};

// The fewest bytes one value of a type can take in the file; used to refuse counts the file
// cannot hold before anything is allocated.
uint64_t min_value_bytes(GgufValueType type) {
  switch (type) {
    case GgufValueType::UINT8: case GgufValueType::INT8: case GgufValueType::BOOL: return 1;
    case GgufValueType::UINT16: case GgufValueType::INT16: return 2;
    case GgufValueType::UINT32: case GgufValueType::INT32: case GgufValueType::FLOAT32: return 4;
    case GgufValueType::UINT64: case GgufValueType::INT64: case GgufValueType::FLOAT64: return 8;
    case GgufValueType::STRING: return 8;
    case GgufValueType::ARRAY: return 12;
  }
  return 1;
}

GgufValue read_value(Cursor& c, GgufValueType type, const std::string& key, int depth) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufValueType::UINT8: v.u = c.read<uint8_t>(key); v.i = static_cast<int64_t>(v.u); break;
    case GgufValueType::INT8: v.i = c.read<int8_t>(key); v.u = static_cast<uint64_t>(v.i); break;
    case GgufValueType::UINT16: v.u = c.read<uint16_t>(key); v.i = static_cast<int64_t>(v.u); break;
    case GgufValueType::INT16: v.i = c.read<int16_t>(key); v.u = static_cast<uint64_t>(v.i); break;
    case GgufValueType::UINT32: v.u = c.read<uint32_t>(key); v.i = static_cast<int64_t>(v.u); break;
    case GgufValueType::INT32: v.i = c.read<int32_t>(key); v.u = static_cast<uint64_t>(v.i); break;
    case GgufValueType::UINT64: v.u = c.read<uint64_t>(key); v.i = static_cast<int64_t>(v.u); break;
    case GgufValueType::INT64: v.i = c.read<int64_t>(key); v.u = static_cast<uint64_t>(v.i); break;
    case GgufValueType::FLOAT32: v.f = c.read<float>(key); break;
    case GgufValueType::FLOAT64: v.f = c.read<double>(key); break;
    case GgufValueType::BOOL: {
      const uint8_t b = c.read<uint8_t>(key);
      if (b > 1) c.error("metadata '{}': bool value {} is neither 0 nor 1", key, b);
      v.u = b;
      v.i = b;
      break;
    }
    case GgufValueType::STRING: v.str = c.read_string(fmt::format("metadata '{}'", key)); break;
    case GgufValueType::ARRAY: {
      if (depth >= kMaxArrayDepth)
        c.error("metadata '{}': arrays nested more than {} deep", key, kMaxArrayDepth);
      const uint32_t elem = c.read<uint32_t>(key);
      if (!gguf_value_type_valid(elem))
        c.error("metadata '{}': unknown array element type {}", key, elem);
      v.elem_type = static_cast<GgufValueType>(elem);
      const uint64_t n = c.read<uint64_t>(key);
      const uint64_t min_bytes = min_value_bytes(v.elem_type);
      if (n > c.left() / min_bytes)
        c.error("metadata '{}': array of {} {} values cannot fit in the {} bytes left", key, n,
                gguf_value_type_name(v.elem_type), c.left());
      v.items.reserve(n);
      for (uint64_t k = 0; k < n; ++k) v.items.push_back(read_value(c, v.elem_type, key, depth + 1));
      break;
    }
  }
  return v;
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

int64_t GgufTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string GgufTensor::shape_string() const {
  std::string s = "[";
  for (size_t k = 0; k < dims.size(); ++k) s += (k ? ", " : "") + std::to_string(dims[k]);
  return s + "]";
}

GgufFile GgufFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw GgufError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw GgufError(fmt::format("{}: not a regular file", path));
  }
  if (st.st_size == 0) {
    ::close(fd);
    throw GgufError(fmt::format("{}: the file is empty, not a GGUF checkpoint", path));
  }
  void* map = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) throw GgufError(fmt::format("{}: mmap failed: {}", path, std::strerror(errno)));
  GgufFile file;
  file.path_ = path;
  file.map_ = map;
  file.bytes_ = std::span<const uint8_t>(static_cast<const uint8_t*>(map), static_cast<size_t>(st.st_size));
  file.parse();  // on a throw, file's destructor unmaps
  return file;
}

GgufFile GgufFile::from_bytes(std::span<const uint8_t> bytes, std::string name) {
  GgufFile file;
  file.path_ = std::move(name);
  file.bytes_ = bytes;
  file.parse();
  return file;
}

GgufFile::GgufFile(GgufFile&& other) noexcept { *this = std::move(other); }

GgufFile& GgufFile::operator=(GgufFile&& other) noexcept {
  if (this != &other) {
    if (map_) munmap(map_, bytes_.size());
    path_ = std::move(other.path_);
    bytes_ = other.bytes_;
    map_ = other.map_;
    other.map_ = nullptr;
    version_ = other.version_;
    alignment_ = other.alignment_;
    data_offset_ = other.data_offset_;
    metadata_ = std::move(other.metadata_);
    metadata_index_ = std::move(other.metadata_index_);
    tensors_ = std::move(other.tensors_);
    tensor_index_ = std::move(other.tensor_index_);
  }
  return *this;
}

GgufFile::~GgufFile() {
  if (map_) munmap(map_, bytes_.size());
}

void GgufFile::parse() {
  Cursor c(bytes_, path_);
  c.need(4, "the magic");
  if (std::memcmp(bytes_.data(), "GGUF", 4) != 0) c.error("not a GGUF file (bad magic)");
  c.read<uint32_t>("the magic");
  version_ = c.read<uint32_t>("the version");
  if (version_ == 1) c.error("GGUF version 1 is not supported (only 2 and 3)");
  if (version_ != 2 && version_ != 3) c.error("unknown GGUF version {} (only 2 and 3)", version_);
  const uint64_t n_tensors = c.read<uint64_t>("the tensor count");
  const uint64_t n_kv = c.read<uint64_t>("the metadata count");
  // A key-value pair takes at least 8 + 1 + 4 + 1 bytes; a tensor entry at least 8 + 1 + 4 + 8 + 4 + 8.
  if (n_kv > c.left() / 14)
    c.error("metadata count {} cannot fit in the {} bytes of the file", n_kv, bytes_.size());
  if (n_tensors > c.left() / 33)
    c.error("tensor count {} cannot fit in the {} bytes of the file", n_tensors, bytes_.size());

  metadata_.reserve(n_kv);
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key = c.read_string(fmt::format("metadata key #{}", k));
    if (key.empty()) c.error("metadata key #{} is empty", k);
    const uint32_t type = c.read<uint32_t>(key);
    if (!gguf_value_type_valid(type)) c.error("metadata '{}': unknown value type {}", key, type);
    GgufValue value = read_value(c, static_cast<GgufValueType>(type), key, 0);
    if (metadata_index_.count(key)) c.error("metadata '{}' appears twice", key);
    metadata_index_[key] = metadata_.size();
    metadata_.emplace_back(std::move(key), std::move(value));
  }

  if (const GgufValue* a = find("general.alignment")) {
    if (a->type != GgufValueType::UINT32)
      c.error("metadata 'general.alignment' must be uint32, not {}", gguf_value_type_name(a->type));
    if (a->u == 0 || (a->u & (a->u - 1)) != 0)
      c.error("metadata 'general.alignment' = {} is not a power of two", a->u);
    alignment_ = a->u;
  }

  tensors_.reserve(n_tensors);
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensor t;
    t.name = c.read_string(fmt::format("tensor #{} name", k));
    if (t.name.empty()) c.error("tensor #{} has an empty name", k);
    const uint32_t n_dims = c.read<uint32_t>(t.name);
    if (n_dims == 0 || n_dims > kMaxDims)
      c.error("tensor '{}': {} dimensions (must be 1 to {})", t.name, n_dims, kMaxDims);
    int64_t n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t dim = c.read<uint64_t>(t.name);
      if (dim == 0) c.error("tensor '{}': dimension {} is zero", t.name, d);
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max() / n_elements))
        c.error("tensor '{}': dimensions overflow (dimension {} = {})", t.name, d, dim);
      n_elements *= static_cast<int64_t>(dim);
      t.dims.push_back(static_cast<int64_t>(dim));
    }
    const uint32_t type = c.read<uint32_t>(t.name);
    const std::optional<GgmlType> gt = ggml_type_from_number(type);
    if (!gt) {
      const std::string_view known = ggml_type_number_name(type);
      c.error("tensor '{}': unknown or unsupported type {}{}", t.name, type,
              known.empty() ? std::string(" (not a ggml type)")
                            : fmt::format(" ({}, which Lathe does not read; it reads f32, f16, bf16, q4_0, q4_1, "
                                          "q5_0, q5_1, q8_0, q8_1 and q2_K to q8_K)", known));
    }
    t.type = *gt;
    const BlockFormat& bf = block_format(t.type);
    if (t.dims[0] % bf.block_size != 0)
      c.error("tensor '{}': row length {} is not a multiple of {}'s block size {}", t.name, t.dims[0],
              bf.name, bf.block_size);
    const uint64_t blocks = static_cast<uint64_t>(n_elements / bf.block_size);
    if (blocks > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(bf.block_bytes))
      c.error("tensor '{}': byte size overflows", t.name);
    t.n_bytes = blocks * static_cast<uint64_t>(bf.block_bytes);
    t.offset = c.read<uint64_t>(t.name);
    if (tensor_index_.count(t.name)) c.error("tensor '{}' appears twice", t.name);
    tensor_index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }

  data_offset_ = align_up(c.pos(), alignment_);
  if (!tensors_.empty() && data_offset_ > bytes_.size())
    c.error("the data section would start at {}, past the end of the file ({} bytes)", data_offset_,
            bytes_.size());
  const uint64_t data_size = bytes_.size() - std::min<uint64_t>(data_offset_, bytes_.size());
  for (GgufTensor& t : tensors_) {
    if (t.offset % alignment_ != 0)
      c.error("tensor '{}': data offset {} is not a multiple of the alignment {}", t.name, t.offset,
              alignment_);
    if (t.offset > data_size || t.n_bytes > data_size - t.offset)
      c.error("tensor '{}' {} {}: data [{}, +{} bytes] runs past the end of the file (data section "
              "is {} bytes)", t.name, ggml_type_name(t.type), t.shape_string(), t.offset, t.n_bytes,
              data_size);
    t.data = bytes_.data() + data_offset_ + t.offset;
  }
  std::vector<const GgufTensor*> by_offset;
  for (const GgufTensor& t : tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
  for (size_t k = 1; k < by_offset.size(); ++k) {
    const GgufTensor& a = *by_offset[k - 1];
    const GgufTensor& b = *by_offset[k];
    if (a.offset + a.n_bytes > b.offset)
      c.error("tensors '{}' and '{}' overlap (bytes {}+{} and {}+{})", a.name, b.name, a.offset,
              a.n_bytes, b.offset, b.n_bytes);
  }
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

namespace {
[[noreturn]] void key_error(const std::string& path, const std::string& key, std::string_view want,
                            const GgufValue* v) {
  if (!v) throw GgufError(fmt::format("{}: missing metadata key '{}' ({})", path, key, want));
  throw GgufError(fmt::format("{}: metadata '{}' is {} {}, expected {}", path, key,
                              gguf_value_type_name(v->type), v->to_string(), want));
}
}  // namespace

std::string GgufFile::get_string(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v || v->type != GgufValueType::STRING) key_error(path_, key, "a string", v);
  return v->str;
}

uint64_t GgufFile::get_uint(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v || !v->is_integer()) key_error(path_, key, "an unsigned integer", v);
  const bool is_signed = v->type == GgufValueType::INT8 || v->type == GgufValueType::INT16 ||
                         v->type == GgufValueType::INT32 || v->type == GgufValueType::INT64;
  if (is_signed && v->i < 0) key_error(path_, key, "a non-negative integer", v);
  return v->u;
}

int64_t GgufFile::get_int(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v || !v->is_integer()) key_error(path_, key, "an integer", v);
  if (v->type == GgufValueType::UINT64 && v->u > static_cast<uint64_t>(INT64_MAX))
    key_error(path_, key, "an integer that fits in int64", v);
  return v->i;
}

double GgufFile::get_float(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) key_error(path_, key, "a number", v);
  if (v->is_float()) return v->f;
  if (v->is_integer()) return static_cast<double>(v->i);
  key_error(path_, key, "a number", v);
}

bool GgufFile::get_bool(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v || v->type != GgufValueType::BOOL) key_error(path_, key, "a bool", v);
  return v->u != 0;
}

const GgufValue& GgufFile::get_array(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v || v->type != GgufValueType::ARRAY) key_error(path_, key, "an array", v);
  return *v;
}

std::optional<std::string> GgufFile::find_string(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return get_string(key);
}

std::optional<uint64_t> GgufFile::find_uint(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return get_uint(key);
}

std::optional<double> GgufFile::find_float(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return get_float(key);
}

std::optional<bool> GgufFile::find_bool(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return get_bool(key);
}

const GgufTensor* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensor& GgufFile::tensor(const std::string& name) const {
  const GgufTensor* t = find_tensor(name);
  if (!t) throw GgufError(fmt::format("{}: missing tensor '{}'", path_, name));
  return *t;
}

}  // namespace lathe
