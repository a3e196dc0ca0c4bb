// The CUDA driver and NVRTC, loaded at run time (dlopen), so that Lathe starts and runs on the CPU
// on machines with no NVIDIA driver or toolkit; the GPU lane says what is missing when asked for.
// Every entry is resolved by the versioned name cuda.h maps it to (cuMemAlloc -> cuMemAlloc_v2).
#pragma once

#include <cuda.h>
#include <nvrtc.h>

#include <functional>
#include <string>

namespace lathe::cuda {

#define LATHE_DRIVER_FUNCTIONS(X)                                                              \
  X(cuInit) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet)           \
  X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent)    \
  X(cuMemGetInfo) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemsetD8)     \
  X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemHostGetDevicePointer) X(cuStreamCreate)            \
  X(cuStreamDestroy) X(cuStreamSynchronize) X(cuModuleLoadData) X(cuModuleUnload)              \
  X(cuModuleGetFunction) X(cuModuleGetGlobal) X(cuFuncSetAttribute) X(cuLaunchKernel)         \
  X(cuStreamBeginCapture)                                                                      \
  X(cuStreamEndCapture) X(cuGraphInstantiate) X(cuGraphLaunch) X(cuGraphExecDestroy)           \
  X(cuGraphDestroy) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize)  \
  X(cuEventElapsedTime) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync)         \
  X(cuMemsetD8Async) X(cuCtxSynchronize) X(cuLaunchKernelEx)                                 \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuFuncGetAttribute)

// Entries only some paths need, left null where the driver lacks them (older than CUDA 12.4): the
// persistent decode step reads each launch's kernel name and parameter layout with them, and says
// so when they are missing; everything else runs without them.
#define LATHE_DRIVER_OPTIONAL_FUNCTIONS(X) X(cuFuncGetParamInfo) X(cuFuncGetName)

#define LATHE_NVRTC_FUNCTIONS(X)                                                               \
  X(nvrtcCreateProgram) X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) \
  X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcDestroyProgram) X(nvrtcGetErrorString)          \
  X(nvrtcVersion)

struct DriverApi {
#define LATHE_DECLARE(name) decltype(&::name) name = nullptr;
  LATHE_DRIVER_FUNCTIONS(LATHE_DECLARE)
  LATHE_DRIVER_OPTIONAL_FUNCTIONS(LATHE_DECLARE)
};

struct NvrtcApi {
  LATHE_NVRTC_FUNCTIONS(LATHE_DECLARE)
#undef LATHE_DECLARE
};

// The driver's entries by `symbol` (dlsym on libcuda.so.1, or a test's table): ok is false, and why
// names the first missing one, when a required entry is missing; optional ones may stay null.
struct DriverLoad {
  DriverApi api;
  bool ok = false;
  std::string why;
};
DriverLoad resolve_driver(const std::function<void*(const char*)>& symbol);

// The loaded driver; a CudaError saying what is missing when there is none.
const DriverApi& driver();

// The loaded driver, or nullptr with `why` set (no libcuda.so.1, or a symbol missing).
const DriverApi* driver_api(std::string* why = nullptr);
// The loaded NVRTC (libnvrtc.so.13 or .12), or nullptr with `why` set.
const NvrtcApi* nvrtc_api(std::string* why = nullptr);

}  // namespace lathe::cuda
