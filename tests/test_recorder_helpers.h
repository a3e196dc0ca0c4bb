// A virtual H200 for tests that plan and record launches without a GPU (cuda::Recorder), the kernel
// library's parameter sizes parsed from its text as `lathe emit` parses them.
#pragma once

#include "emit/kernel_params.h"
#include "kernels/library.h"
#include "runtime/cuda_driver.h"

#include <map>
#include <string>
#include <vector>

namespace lathe::test {

inline cuda::DeviceInfo virtual_h200() {
  cuda::DeviceInfo d;
  d.name = "virtual";
  d.cc_major = 9;
  d.sm_count = 132;
  d.shared_optin_bytes = 232448;
  d.free_memory = d.total_memory = size_t{1} << 40;
  return d;
}

inline cuda::Recorder::ParamSizes library_param_sizes() {
  static const std::map<std::string, std::vector<emit::KernelParam>> params =
      emit::kernel_params(kernels::library_source());
  return [](const std::string& k) {
    std::vector<size_t> sizes;
    for (const emit::KernelParam& p : params.at(k)) sizes.push_back(p.bytes);
    return sizes;
  };
}

}  // namespace lathe::test
