// Shared by every kernel file: fixed-width types, f16/bf16 loads, warp reductions. NVRTC compiles
// the library with no system headers, so this file uses only built-ins and cuda_fp16/bf16.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

typedef unsigned char uint8_t;
typedef signed char int8_t;
typedef unsigned short uint16_t;
typedef short int16_t;
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned long long uint64_t;
typedef long long int64_t;

// The first statement of every kernel (programmatic dependent launch, runtime/cuda_driver.cpp): wait
// until the kernel before this one has finished and its writes are visible, then let the next kernel
// launch, so its launch and block scheduling overlap this kernel's work. Without a programmatic
// dependency (a plain launch) the wait returns at once.
__device__ __forceinline__ void lathe_pdl_entry() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

__device__ __forceinline__ float lathe_f16(const uint8_t* p) {
  return __half2float(*reinterpret_cast<const __half*>(p));
}

__device__ __forceinline__ float lathe_bf16(const uint8_t* p) {
  return __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(p));
}

__device__ __forceinline__ float lathe_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float lathe_warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// The sum over a block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
// `scratch` is 32 floats of shared memory.
__device__ __forceinline__ float lathe_block_sum(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = lathe_warp_sum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int n_warps = (blockDim.x + 31) >> 5;
  v = lane < n_warps ? scratch[lane] : 0.0f;
  return lathe_warp_sum(v);
}
