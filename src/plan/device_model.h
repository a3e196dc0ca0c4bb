// The model on the device: the checkpoint's tensors a program reads, uploaded once in their own
// format (vectors as f32), and the KV caches sized by the context. Residence: when the device is
// short of memory, matrices move to pinned host memory (read over PCIe, slowly) in a stated order:
// the token embedding first (a decode step reads one row of it), then expert stacks, then the
// largest other matrices; when even that does not fit, a CudaError gives the numbers.
#pragma once

#include "gguf/gguf_file.h"
#include "runtime/cuda_driver.h"

#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace lathe::plan {

struct DeviceWeight {
  GgmlType type = GgmlType::F32;
  std::vector<int64_t> dims;  // ggml order
  CUdeviceptr ptr = 0;
  bool pinned_host = false;   // lives in pinned host memory, mapped for the device
};

struct CacheShape {
  int64_t n_layer = 0, n_seq = 1, n_ctx = 0, n_head_kv = 0, head_dim = 0;
  size_t bytes_per_cache() const { return static_cast<size_t>(n_seq * n_ctx * n_head_kv * head_dim) * 2; }
};

class DeviceModel {
 public:
  // Uploads the named tensors. `reserve` is the device memory the steps need beside (arenas,
  // workspaces), kept free when deciding residence. `device_cap` > 0: take at most that much of the
  // device (--gpu-memory: share a card, or exercise residence on a large one).
  DeviceModel(const GgufFile& file, const std::set<std::string>& tensors, const CacheShape& caches,
              size_t reserve, size_t device_cap = 0);

  const DeviceWeight& weight(const std::string& name) const;  // InternalError if not uploaded
  // The f32 values of an uploaded vector, kept on the host for what the plan computes there (rope
  // frequency factors); InternalError if no vector of that name was uploaded.
  const std::vector<float>& host_vector(const std::string& name) const;
  // The f32 values of a checkpoint tensor, dequantized on the host from the file, for constants the
  // plan forms from a matrix (the router's columns: route_epilogue_launch.h). The file outlives the
  // model (the engine and the recorder hold it).
  std::vector<float> host_f32(const std::string& name) const;
  // A checkpoint tensor's bytes as the file holds them (its own format), for constants the plan
  // re-lays from a matrix (ffn_split's down by slices: ffn_split_launch.h).
  std::span<const uint8_t> host_bytes(const std::string& name) const;
  CUdeviceptr keys(int64_t layer) const { return caches_.at(static_cast<size_t>(2 * layer)).ptr(); }
  CUdeviceptr values(int64_t layer) const { return caches_.at(static_cast<size_t>(2 * layer + 1)).ptr(); }
  const CacheShape& cache_shape() const { return cache_shape_; }
  size_t device_bytes() const { return device_bytes_; }
  size_t host_bytes() const { return host_bytes_; }
  // What residence keeps free on the device besides the weights: caches, step buffers, a margin.
  size_t fixed_bytes() const { return fixed_bytes_; }
  // The device bytes left beyond the weights and fixed_bytes() within what the model may take (the
  // card's free memory at load, or the --gpu-memory cap): where a plan may keep constants it derives
  // at load that are not needed to run (ffn_split's re-laid matrices), so they never push a weight
  // to host memory. 0 when the weights did not all fit.
  size_t spare_bytes() const { return spare_bytes_; }
  const std::string& residence() const { return residence_; }  // a line: what lives where

 private:
  const GgufFile* file_ = nullptr;
  std::map<std::string, DeviceWeight> weights_;
  std::map<std::string, std::vector<float>> host_vectors_;
  std::vector<cuda::DeviceBuffer> device_;
  std::vector<cuda::PinnedBuffer> pinned_;
  std::vector<cuda::DeviceBuffer> caches_;
  CacheShape cache_shape_;
  size_t device_bytes_ = 0, host_bytes_ = 0, fixed_bytes_ = 0, spare_bytes_ = 0;
  std::string residence_;
};

}  // namespace lathe::plan
