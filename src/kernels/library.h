// The kernel library: every src/kernels/*.cuh file, embedded in the binary at build time
// (cmake/embed_kernels.cmake) and compiled together by NVRTC into one module for the card in use,
// cached on disk by digest. Kernels are `extern "C" __global__ void lathe_<name>(...)`; each family
// has a host launcher (src/kernels/<family>_launch.h) that tests and the runtime call.
#pragma once

#include "runtime/cuda_driver.h"

#include <span>
#include <string>
#include <string_view>

namespace lathe::kernels {

struct KernelFile {
  std::string_view name;  // "gemv.cuh"
  std::string_view text;
};

std::span<const KernelFile> kernel_files();  // generated: every .cuh, sorted by name

// common.cuh first, then the rest in name order, each behind a `// ---- file: NAME` line.
std::string library_source();

// The compiled library (compiled on first use; a CudaError when there is no GPU or it fails).
const cuda::Module& library();

// A kernel of the library by name; CudaError naming it when absent. While a cuda::Recorder is
// active (lathe emit): a handle standing for the name, with no library compiled.
CUfunction kernel(const std::string& name);

}  // namespace lathe::kernels
