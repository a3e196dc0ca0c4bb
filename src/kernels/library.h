// The kernel library: every src/kernels/*.cuh file, embedded in the binary at build time
// (cmake/embed_kernels.cmake) and compiled together by NVRTC into one module for the card in use,
// cached on disk by digest. Kernels are `extern "C" __global__ void lathe_<name>(...)`; each family
// has a host launcher (src/kernels/<family>_launch.h) that tests and the runtime call.
#pragma once

#include "runtime/cuda_driver.h"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lathe::kernels {

struct KernelFile {
  std::string_view name;  // "gemv.cuh"
  std::string_view text;
};

std::span<const KernelFile> kernel_files();  // generated: every .cuh, sorted by name

// common.cuh first, then the rest in name order, each behind a `// ---- file: NAME` line. Files
// named gemm_wgmma*.cuh are left out: they need sm_90a (library_90a_source).
std::string library_source();
bool is_sm90a_only_file(std::string_view name);

// The second module, for compute capability 9.0 cards only, compiled for sm_90a (wgmma,
// setmaxnreg): common.cuh, gemm_f16.cuh and gemm_f16_blocks.cuh (the weight formats it reuses), then
// the gemm_wgmma*.cuh files in name order. library_90a() compiles it on first use (a CudaError when
// the card is not 9.0 or it fails); kernel_90a is kernel() for it (never recorded: lathe emit has no
// sm_90a unit, so callers check cuda::recorder() first).
std::string library_90a_source();
const cuda::Module& library_90a();
CUfunction kernel_90a(const std::string& name);
// NVRTC's options selecting sm_90a (appended after the device's --gpu-architecture=sm_90; the last
// architecture named wins, which tests/test_gemm_wgmma_layout.cpp checks by compiling the module).
const std::vector<std::string>& sm90a_options();

// The NVRTC options of the main module (read once): -DLATHE_PRODUCT_STAMPS where LATHE_STAMPS is set
// (runtime/product_stamps.h: the decode products stamp their blocks' edges), and the words of
// LATHE_KERNEL_DEFINES, each -DLATHE_NAME or -DLATHE_NAME=N (a measuring knob: a kernel's compile-time
// variant, e.g. gemv_decode.cuh's LATHE_GEMV1_BEFORE_WAIT; anything else is refused). Without either
// the library is compiled exactly as written.
const std::vector<std::string>& library_options();
bool library_has_stamps();

// The compiled library (compiled on first use; a CudaError when there is no GPU or it fails).
const cuda::Module& library();

// A kernel of the library by name; CudaError naming it when absent. While a cuda::Recorder is
// active (lathe emit): a handle standing for the name, with no library compiled.
CUfunction kernel(const std::string& name);

}  // namespace lathe::kernels
