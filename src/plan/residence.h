// Residence: where each of a model's tensors lives. Everything on the device when it fits; when the
// device is short, matrices move to pinned host memory (the GPU reads them over PCIe, slowly) in a
// stated order: the token embedding first (a decode step reads one row of it), then expert stacks
// (a token reads a few of them), then the largest other matrices. When even that does not fit, a
// UserError gives the numbers. A pure function of sizes, so it is tested without a GPU.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace lathe::plan {

struct ResidenceRequest {
  struct Tensor {
    std::string name;
    uint64_t bytes = 0;
    bool matrix = false;  // vectors always stay on the device
  };
  std::vector<Tensor> tensors;
  uint64_t cache_bytes = 0;      // the KV caches
  int64_t n_ctx = 0;             // for the message
  uint64_t step_bytes = 0;       // arenas and workspaces
  uint64_t margin = 512ull << 20;  // the driver, the kernel module, fragmentation
  uint64_t device_free = 0;
  bool device_limited = false;   // device_free is the user's cap (--gpu-memory), not all that is free
  uint64_t host_available = 0;   // pinned host memory that may be taken (0: none)
};

struct Residence {
  std::set<std::string> on_host;  // the matrices that live in pinned host memory
  uint64_t device_bytes = 0, host_bytes = 0;
};

Residence plan_residence(const ResidenceRequest& request);

// The host memory a process may pin now (MemAvailable), for ResidenceRequest::host_available.
uint64_t available_host_memory();

}  // namespace lathe::plan
