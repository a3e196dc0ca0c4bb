#include "plan/device_model.h"

#include "gguf/block_format.h"
#include "plan/residence.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace lathe::plan {

DeviceModel::DeviceModel(const GgufFile& file, const std::set<std::string>& tensors,
                         const CacheShape& caches, size_t reserve, size_t device_cap)
    : file_(&file), cache_shape_(caches) {
  cuda::Context& ctx = cuda::Context::get();
  std::vector<const GgufTensor*> list;
  for (const std::string& name : tensors) {
    const GgufTensor& t = file.tensor(name);
    list.push_back(&t);
  }
  const size_t cache_bytes = 2 * static_cast<size_t>(caches.n_layer) * caches.bytes_per_cache();
  ResidenceRequest request;
  for (const GgufTensor* t : list)
    request.tensors.push_back({t->name, t->dims.size() == 1 ? static_cast<uint64_t>(t->n_elements()) * 4 : t->n_bytes,
                               t->dims.size() >= 2});
  request.cache_bytes = cache_bytes;
  request.n_ctx = caches.n_ctx;
  request.step_bytes = reserve;
  request.device_free = ctx.refresh_memory().free_memory;
  if (device_cap > 0 && device_cap < request.device_free) {
    request.device_free = device_cap;
    request.device_limited = true;
  }
  request.host_available = available_host_memory();
  fixed_bytes_ = request.cache_bytes + request.step_bytes + request.margin;
  const Residence residence = plan_residence(request);
  const std::set<std::string>& to_host = residence.on_host;
  for (const GgufTensor* t : list) {
    DeviceWeight w;
    w.dims = t->dims;
    std::vector<float> f32;
    const void* src = t->data;
    size_t bytes = t->n_bytes;
    if (t->dims.size() == 1) {  // vectors: f32 whatever the file holds
      f32.resize(static_cast<size_t>(t->n_elements()));
      dequantize_row(t->type, t->data, f32.data(), t->n_elements());
      src = f32.data();
      bytes = f32.size() * 4;
      w.type = GgmlType::F32;
    } else {
      w.type = t->type;
    }
    if (to_host.count(t->name)) {
      try {
        pinned_.emplace_back(bytes + 16);
      } catch (const cuda::CudaError& e) {
        throw cuda::CudaError(fmt::format("pinned host memory for '{}' ({:.2f} GB) could not be had: {}",
                                          t->name, bytes / 1e9, e.what()));
      }
      std::memcpy(pinned_.back().data(), src, bytes);
      w.ptr = pinned_.back().device_ptr();
      w.pinned_host = true;
      host_bytes_ += bytes;
    } else {
      device_.emplace_back(bytes + 16, t->name.c_str());  // + 16: kernels read whole 16-byte words
      device_.back().upload(src, bytes);
      w.ptr = device_.back().ptr();
      device_bytes_ += bytes;
    }
    weights_[t->name] = std::move(w);
    if (t->dims.size() == 1) host_vectors_[t->name] = std::move(f32);
  }
  // (the 16 bytes past each weight and the caches' rounding are inside fixed_bytes_'s margin)
  const size_t taken = device_bytes_ + fixed_bytes_;
  spare_bytes_ = host_bytes_ == 0 && request.device_free > taken ? request.device_free - taken : 0;
  for (int64_t l = 0; l < caches.n_layer; ++l) {
    for (int kv = 0; kv < 2; ++kv) {
      caches_.emplace_back(caches.bytes_per_cache(), "KV cache");
      caches_.back().zero();
    }
  }
  residence_ = fmt::format("weights {:.2f} GB on the GPU{}, KV cache {:.2f} GB (f16, {} positions)",
                           device_bytes_ / 1e9,
                           host_bytes_ ? fmt::format(", {:.2f} GB in pinned host memory ({} matrices)",
                                                     host_bytes_ / 1e9, to_host.size())
                                       : "",
                           cache_bytes / 1e9, caches.n_ctx);
}

const DeviceWeight& DeviceModel::weight(const std::string& name) const {
  auto it = weights_.find(name);
  if (it == weights_.end()) internal_fail("tensor '{}' was not uploaded", name);
  return it->second;
}

const std::vector<float>& DeviceModel::host_vector(const std::string& name) const {
  auto it = host_vectors_.find(name);
  if (it == host_vectors_.end()) internal_fail("vector '{}' was not uploaded", name);
  return it->second;
}

std::vector<float> DeviceModel::host_f32(const std::string& name) const {
  const GgufTensor& t = file_->tensor(name);
  std::vector<float> out(static_cast<size_t>(t.n_elements()));
  dequantize_row(t.type, t.data, out.data(), t.n_elements());
  return out;
}

std::span<const uint8_t> DeviceModel::host_bytes(const std::string& name) const {
  const GgufTensor& t = file_->tensor(name);
  return {t.data, static_cast<size_t>(t.n_bytes)};
}

}  // namespace lathe::plan
