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
      l.driver_ok = true;
#define LATHE_RESOLVE(name)                                                        \
  l.driver.name = reinterpret_cast<decltype(l.driver.name)>(dlsym(lib, LATHE_STR(name))); \
  if (!l.driver.name && l.driver_ok) {                                             \
    l.driver_ok = false;                                                           \
    l.driver_why = fmt::format("the NVIDIA driver lacks {}", LATHE_STR(name));     \
  }
      LATHE_DRIVER_FUNCTIONS(LATHE_RESOLVE)
#undef LATHE_RESOLVE
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
