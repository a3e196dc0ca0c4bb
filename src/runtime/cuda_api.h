// The CUDA driver and NVRTC, loaded at run time (dlopen), so that Lathe starts and runs on the CPU
// on machines with no NVIDIA driver or toolkit; the GPU lane says what is missing when asked for.
// Every entry is resolved by the versioned name cuda.h maps it to (cuMemAlloc -> cuMemAlloc_v2).
#pragma once

#include <cuda.h>
#include <nvrtc.h>

#include <string>

namespace lathe::cuda {

#define LATHE_DRIVER_FUNCTIONS(X)                                                              \
  X(cuInit) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet)           \
  X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent)    \
  X(cuMemGetInfo) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemsetD8)     \
  X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemHostGetDevicePointer) X(cuStreamCreate)            \
  X(cuStreamDestroy) X(cuStreamSynchronize) X(cuModuleLoadData) X(cuModuleUnload)              \
  X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuStreamBeginCapture)       \
  X(cuStreamEndCapture) X(cuGraphInstantiate) X(cuGraphLaunch) X(cuGraphExecDestroy)           \
  X(cuGraphDestroy) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize)  \
  X(cuEventElapsedTime) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync)         \
  X(cuMemsetD8Async) X(cuCtxSynchronize) X(cuLaunchKernelEx)  \
  X(cuFuncGetParamInfo) X(cuFuncGetName) X(cuOccupancyMaxActiveBlocksPerMultiprocessor)

#define LATHE_NVRTC_FUNCTIONS(X)                                                               \
  X(nvrtcCreateProgram) X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) \
  X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcDestroyProgram) X(nvrtcGetErrorString)          \
  X(nvrtcVersion)

struct DriverApi {
#define LATHE_DECLARE(name) decltype(&::name) name = nullptr;
  LATHE_DRIVER_FUNCTIONS(LATHE_DECLARE)
};

struct NvrtcApi {
  LATHE_NVRTC_FUNCTIONS(LATHE_DECLARE)
#undef LATHE_DECLARE
};

// The loaded driver; a CudaError saying what is missing when there is none.
const DriverApi& driver();

// The loaded driver, or nullptr with `why` set (no libcuda.so.1, or a symbol missing).
const DriverApi* driver_api(std::string* why = nullptr);
// The loaded NVRTC (libnvrtc.so.13 or .12), or nullptr with `why` set.
const NvrtcApi* nvrtc_api(std::string* why = nullptr);

}  // namespace lathe::cuda
