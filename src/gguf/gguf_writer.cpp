#include "gguf/gguf_writer.h"

#include "base/error.h"
#include "gguf/block_format.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>
#include <thread>

#include <unistd.h>

namespace lathe {
namespace {

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

class ByteSink {
 public:
  std::vector<uint8_t> bytes;
  template <typename T>
  void put(T v) {
    const size_t at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &v, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void put_value(const GgufValue& v) {
    switch (v.type) {
      case GgufValueType::UINT8: put<uint8_t>(static_cast<uint8_t>(v.u)); break;
      case GgufValueType::INT8: put<int8_t>(static_cast<int8_t>(v.i)); break;
      case GgufValueType::UINT16: put<uint16_t>(static_cast<uint16_t>(v.u)); break;
      case GgufValueType::INT16: put<int16_t>(static_cast<int16_t>(v.i)); break;
      case GgufValueType::UINT32: put<uint32_t>(static_cast<uint32_t>(v.u)); break;
      case GgufValueType::INT32: put<int32_t>(static_cast<int32_t>(v.i)); break;
      case GgufValueType::UINT64: put<uint64_t>(v.u); break;
      case GgufValueType::INT64: put<int64_t>(v.i); break;
      case GgufValueType::FLOAT32: put<float>(static_cast<float>(v.f)); break;
      case GgufValueType::FLOAT64: put<double>(v.f); break;
      case GgufValueType::BOOL: put<uint8_t>(v.u ? 1 : 0); break;
      case GgufValueType::STRING: put_string(v.str); break;
      case GgufValueType::ARRAY:
        put<uint32_t>(static_cast<uint32_t>(v.elem_type));
        put<uint64_t>(v.items.size());
        for (const GgufValue& item : v.items) {
          LATHE_CHECK(item.type == v.elem_type);
          put_value(item);
        }
        break;
    }
  }
};

}  // namespace

GgufWriter::GgufWriter(uint64_t alignment) : alignment_(alignment) {
  LATHE_CHECK(alignment > 0 && (alignment & (alignment - 1)) == 0);
  if (alignment != 32) set("general.alignment", GgufValue::of_u32(static_cast<uint32_t>(alignment)));
}

void GgufWriter::set(const std::string& key, GgufValue value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

namespace {
uint64_t tensor_bytes(const std::vector<int64_t>& dims, GgmlType type) {
  LATHE_CHECK(!dims.empty());
  int64_t rows = 1;
  for (size_t k = 1; k < dims.size(); ++k) rows *= dims[k];
  return static_cast<uint64_t>(row_bytes(type, dims[0])) * static_cast<uint64_t>(rows);
}
}  // namespace

void GgufWriter::add_tensor(const std::string& name, std::vector<int64_t> dims, GgmlType type,
                            std::vector<uint8_t> data) {
  const uint64_t n = tensor_bytes(dims, type);
  if (data.size() != n)
    internal_fail("tensor '{}': {} bytes given, {} expected", name, data.size(), n);
  Tensor t{name, std::move(dims), type, n, data_size_, std::move(data), nullptr};
  data_size_ = align_up(data_size_ + n, alignment_);
  tensors_.push_back(std::move(t));
}

void GgufWriter::add_tensor(const std::string& name, std::vector<int64_t> dims, GgmlType type,
                            RowFiller fill) {
  const uint64_t n = tensor_bytes(dims, type);
  Tensor t{name, std::move(dims), type, n, data_size_, {}, std::move(fill)};
  data_size_ = align_up(data_size_ + n, alignment_);
  tensors_.push_back(std::move(t));
}

std::vector<uint8_t> GgufWriter::header_bytes() const {
  ByteSink s;
  s.put<uint32_t>(0x46554747);  // "GGUF" little-endian
  s.put<uint32_t>(3);
  s.put<uint64_t>(tensors_.size());
  s.put<uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    s.put_string(key);
    s.put<uint32_t>(static_cast<uint32_t>(value.type));
    s.put_value(value);
  }
  for (const Tensor& t : tensors_) {
    s.put_string(t.name);
    s.put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) s.put<uint64_t>(static_cast<uint64_t>(d));
    s.put<uint32_t>(static_cast<uint32_t>(t.type));
    s.put<uint64_t>(t.offset);
  }
  s.bytes.resize(align_up(s.bytes.size(), alignment_), 0);
  return std::move(s.bytes);
}

void GgufWriter::fill_tensor(const Tensor& t, uint8_t* dst, int threads) const {
  if (!t.fill) {
    std::memcpy(dst, t.data.data(), t.n_bytes);
    return;
  }
  int64_t rows = 1;
  for (size_t k = 1; k < t.dims.size(); ++k) rows *= t.dims[k];
  const int64_t bytes_per_row = row_bytes(t.type, t.dims[0]);
  const int64_t n_threads = std::max<int64_t>(1, std::min<int64_t>(threads, rows));
  const int64_t per = (rows + n_threads - 1) / n_threads;
  std::vector<std::thread> pool;
  for (int64_t k = 0; k < n_threads; ++k) {
    const int64_t r0 = k * per, r1 = std::min(rows, r0 + per);
    if (r0 >= r1) break;
    pool.emplace_back([&, r0, r1] { t.fill(dst + r0 * bytes_per_row, r0, r1); });
  }
  for (std::thread& th : pool) th.join();
}

uint64_t GgufWriter::write(const std::string& final_path, int threads, bool zero_data) const {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // A regular file is written beside its name and renamed over it when complete, so a reader that
  // has the old file mapped keeps it whole and nobody sees half a file. Other paths (/dev/null, a
  // pipe) are written in place.
  std::error_code ec;
  const bool atomic = !std::filesystem::exists(final_path, ec) || std::filesystem::is_regular_file(final_path, ec);
  const std::string path = atomic ? fmt::format("{}.{}.partial", final_path, ::getpid()) : final_path;
  struct Publish {
    const std::string& from;
    const std::string& to;
    bool atomic, done = false;
    ~Publish() {
      if (atomic && !done) std::remove(from.c_str());
    }
  } publish{path, final_path, atomic};
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) fail("{}: cannot write: {}", final_path, std::strerror(errno));
  auto put = [&](const uint8_t* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f.get()) != n) fail("{}: write failed: {}", final_path, std::strerror(errno));
  };
  const std::vector<uint8_t> header = header_bytes();
  put(header.data(), header.size());
  const uint64_t size =
      header.size() + (tensors_.empty() ? 0 : tensors_.back().offset + tensors_.back().n_bytes);
  auto finish = [&] {
    if (std::fflush(f.get()) != 0) fail("{}: write failed: {}", final_path, std::strerror(errno));
    f.reset();
    if (atomic && std::rename(path.c_str(), final_path.c_str()) != 0)
      fail("{}: cannot move the written file into place: {}", final_path, std::strerror(errno));
    publish.done = true;
    return size;
  };
  if (zero_data) {
    if (std::fflush(f.get()) != 0 || ftruncate(fileno(f.get()), static_cast<off_t>(size)) != 0)
      fail("{}: write failed: {}", final_path, std::strerror(errno));
    return finish();
  }
  // Fill the next tensor while the last one is written: generation and disk run side by side.
  std::vector<uint8_t> writing, filling;
  std::future<void> pending;
  const std::vector<uint8_t> zeros(alignment_, 0);
  for (size_t k = 0; k < tensors_.size(); ++k) {
    const Tensor& t = tensors_[k];
    filling.resize(t.n_bytes);
    fill_tensor(t, filling.data(), threads);
    if (pending.valid()) pending.get();
    std::swap(writing, filling);
    const uint64_t pad = align_up(t.n_bytes, alignment_) - t.n_bytes;
    const bool last = k + 1 == tensors_.size();
    pending = std::async(std::launch::async, [&, pad, last] {
      put(writing.data(), writing.size());
      if (!last) put(zeros.data(), pad);  // the last tensor needs no padding after it
    });
  }
  if (pending.valid()) pending.get();
  return finish();
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<uint8_t> out = header_bytes();
  const size_t data_start = out.size();
  out.resize(data_start + (tensors_.empty() ? 0 : tensors_.back().offset + tensors_.back().n_bytes), 0);
  for (const Tensor& t : tensors_) fill_tensor(t, out.data() + data_start + t.offset, 1);
  return out;
}

}  // namespace lathe
