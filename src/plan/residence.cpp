#include "plan/residence.h"

#include "base/error.h"

#include <unistd.h>

#include <algorithm>

namespace lathe::plan {
namespace {

int rank(const std::string& name) {
  if (name == "token_embd.weight") return 0;
  if (name.find("_exps.") != std::string::npos) return 1;
  return 2;
}

double gb(uint64_t bytes) { return static_cast<double>(bytes) / 1e9; }

const char* limited(const ResidenceRequest& r) { return r.device_limited ? " (the --gpu-memory cap)" : ""; }

}  // namespace

Residence plan_residence(const ResidenceRequest& r) {
  const uint64_t fixed = r.cache_bytes + r.step_bytes + r.margin;
  if (fixed > r.device_free)
    fail("too little GPU memory: the KV caches ({:.2f} GB at --ctx {}) and step buffers ({:.2f} GB) need "
         "{:.2f} GB with a margin, {:.2f} GB are free{}; lower --ctx",
         gb(r.cache_bytes), r.n_ctx, gb(r.step_bytes), gb(fixed), gb(r.device_free), limited(r));
  Residence out;
  for (const auto& t : r.tensors) out.device_bytes += t.bytes;
  if (out.device_bytes + fixed <= r.device_free) return out;
  std::vector<const ResidenceRequest::Tensor*> movable;
  for (const auto& t : r.tensors)
    if (t.matrix) movable.push_back(&t);
  std::stable_sort(movable.begin(), movable.end(), [](const auto* a, const auto* b) {
    return rank(a->name) != rank(b->name) ? rank(a->name) < rank(b->name) : a->bytes > b->bytes;
  });
  for (const auto* t : movable) {
    if (out.device_bytes + fixed <= r.device_free) break;
    out.on_host.insert(t->name);
    out.device_bytes -= t->bytes;
    out.host_bytes += t->bytes;
  }
  const uint64_t weights = out.device_bytes + out.host_bytes;
  if (out.device_bytes + fixed > r.device_free || out.host_bytes > r.host_available)
    fail("too little memory for the model: {:.2f} GB of weights, {:.2f} GB of KV cache (--ctx {}) and "
         "{:.2f} GB of step buffers; the GPU has {:.2f} GB free{} and {:.2f} GB of host memory can be "
         "pinned, but {:.2f} GB would have to move to the host{}",
         gb(weights), gb(r.cache_bytes), r.n_ctx, gb(r.step_bytes), gb(r.device_free), limited(r), gb(r.host_available),
         gb(out.host_bytes),
         out.device_bytes + fixed > r.device_free ? " and the vectors alone do not fit on the GPU" : "");
  return out;
}

uint64_t available_host_memory() {
  const long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || size <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(size);
}

}  // namespace lathe::plan
