// The decode products' edge stamps, a measuring knob: with LATHE_STAMPS=FILE the kernel library is
// compiled with LATHE_PRODUCT_STAMPS (kernels/library.h's library_options), and every block of a
// decode or merged product (gemv_decode.cuh, gemv_multi.cuh) and of the mixture's expert kernels
// (moe_decode.cuh: their x and first chunk are one stamp; the weights are the stacked tensor's)
// records the globaltimer at its entry, when its programmatic-launch wait returned, when x was in
// place, when warp 0's first chunk had landed, when its last warp finished, and three stamps inside
// x's staging (kernels/common.cuh's lathe_stamps_end has the record). `lathe bench` records one more
// tg repetition than it times and writes FILE as CSV; scripts/product_stamps.py reads it.
#pragma once

#include "runtime/cuda_driver.h"

#include <cstddef>
#include <string>

namespace lathe::cuda {

// The file LATHE_STAMPS names, or empty: stamps are off.
std::string product_stamps_file();

class ProductStamps {
 public:
  // Room for `records` block records; recording starts at once (the library must have been compiled
  // with the stamps: a CudaError otherwise).
  explicit ProductStamps(size_t records);
  ~ProductStamps();  // stops recording
  ProductStamps(const ProductStamps&) = delete;
  ProductStamps& operator=(const ProductStamps&) = delete;

  // Stops recording and writes the records taken (the first `records`; how many were dropped is in the
  // header line) as CSV: weights,n_out,k,sm,block,entry,wait,x,first,end,xa,xb,xc (ns, from the first
  // entry; -1 for a stamp not passed): xa-xc are thread 0's stamps inside x's staging (common.cuh).
  void write(const std::string& path);

 private:
  void stop();
  DeviceBuffer buffer_;
  size_t records_;
  CUdeviceptr stamps_ = 0, cap_ = 0, used_ = 0;
  bool on_ = false;
};

}  // namespace lathe::cuda
