// TMA tensor maps (cuTensorMapEncodeTiled, from the driver cuda_api loaded): what the kernels that
// copy boxes of a 2D array (the wgmma GEMMs, the decode tiles) receive as a __grid_constant__
// parameter. A map holds its array's address, so it is encoded for each launch (once where a step is
// captured in a graph). Under a recording (lathe emit's virtual device) it is not encoded: its bytes
// carry the arguments, tagged, and the emitted program encodes them at its start.
#pragma once

#include "runtime/cuda_driver.h"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lathe::kernels {

// A 2D tiled map: dims {inner, outer} of `type`, rows `stride` bytes apart, box {box_inner,
// box_outer}, no interleave, 128-byte swizzle or none, L2 promotion as given, out-of-bounds boxes
// zero-filled. `who` names the caller in the internal error a failed encoding raises.
CUtensorMap tensor_map_2d(CUdeviceptr base, CUtensorMapDataType type, uint64_t inner, uint64_t outer, uint64_t stride,
                          uint32_t box_inner, uint32_t box_outer, bool swizzle_128b, std::string_view who,
                          CUtensorMapL2promotion promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B);

// A 2D map's arguments, as a recording keeps them in the map's bytes (the virtual device has no driver).
struct TensorMapArgs {
  CUdeviceptr base = 0;
  uint64_t inner = 0, outer = 0, stride = 0;
  uint32_t type = 0, box_inner = 0, box_outer = 0, swizzle_128b = 0, promotion = 0;
};

// The arguments a recording's map carries; false where `bytes` is not one.
bool recorded_tensor_map(const void* bytes, size_t size, TensorMapArgs* out);

}  // namespace lathe::kernels
