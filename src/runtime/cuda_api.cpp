#include "runtime/cuda_api.h"

#include "base/error.h"

#include <dlfcn.h>

#include <fmt/format.h>

#include <mutex>

namespace lathe::cuda {
namespace {

#define LATHE_STR2(x) #x
#define LATHE_STR(x) LATHE_STR2(x)

struct Loaded {
  DriverApi driver;
  bool driver_ok = false;
  std::string driver_why;
  NvrtcApi nvrtc;
  bool nvrtc_ok = false;
  std::string nvrtc_why;
};

Loaded& loaded() {
  static Loaded l;
  static std::once_flag once;
  std::call_once(once, [] {
    if (void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
      DriverLoad d = resolve_driver([lib](const char* name) { return dlsym(lib, name); });
      l.driver = d.api;
      l.driver_ok = d.ok;
      l.driver_why = std::move(d.why);
    } else {
      l.driver_why = "no NVIDIA driver on this machine (libcuda.so.1 not found)";
    }
    void* nv = nullptr;
    for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})
      if ((nv = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (nv) {
      l.nvrtc_ok = true;
#define LATHE_RESOLVE(name)                                                       \
  l.nvrtc.name = reinterpret_cast<decltype(l.nvrtc.name)>(dlsym(nv, LATHE_STR(name))); \
  if (!l.nvrtc.name && l.nvrtc_ok) {                                              \
    l.nvrtc_ok = false;                                                           \
    l.nvrtc_why = fmt::format("NVRTC lacks {}", LATHE_STR(name));                 \
  }
      LATHE_NVRTC_FUNCTIONS(LATHE_RESOLVE)
#undef LATHE_RESOLVE
    } else {
      l.nvrtc_why = "no NVRTC on this machine (libnvrtc.so.13 not found; install the CUDA toolkit "
                    "or add its lib64 folder to LD_LIBRARY_PATH)";
    }
  });
  return l;
}

}  // namespace

DriverLoad resolve_driver(const std::function<void*(const char*)>& symbol) {
  DriverLoad d;
  d.ok = true;
#define LATHE_RESOLVE(name)                                                        \
  d.api.name = reinterpret_cast<decltype(d.api.name)>(symbol(LATHE_STR(name)));   \
  if (!d.api.name && d.ok) {                                                       \
    d.ok = false;                                                                  \
    d.why = fmt::format("the NVIDIA driver lacks {}", LATHE_STR(name));            \
  }
  LATHE_DRIVER_FUNCTIONS(LATHE_RESOLVE)
#undef LATHE_RESOLVE
#define LATHE_RESOLVE_OPTIONAL(name) d.api.name = reinterpret_cast<decltype(d.api.name)>(symbol(LATHE_STR(name)));
  LATHE_DRIVER_OPTIONAL_FUNCTIONS(LATHE_RESOLVE_OPTIONAL)
#undef LATHE_RESOLVE_OPTIONAL
  return d;
}

const DriverApi* driver_api(std::string* why) {
  Loaded& l = loaded();
  if (!l.driver_ok && why) *why = l.driver_why;
  return l.driver_ok ? &l.driver : nullptr;
}

const DriverApi& driver() {
  std::string why;
  const DriverApi* d = driver_api(&why);
  if (!d) throw UserError(why);
  return *d;
}

const NvrtcApi* nvrtc_api(std::string* why) {
  Loaded& l = loaded();
  if (!l.nvrtc_ok && why) *why = l.nvrtc_why;
  return l.nvrtc_ok ? &l.nvrtc : nullptr;
}

}  // namespace lathe::cuda
