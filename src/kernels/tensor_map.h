// TMA tensor maps (cuTensorMapEncodeTiled, from the driver cuda_api loaded): what the kernels that
// copy boxes of a 2D array (the wgmma GEMMs, Q4_K's decode tiles) receive as a __grid_constant__
// parameter. A map holds its array's address, so it is encoded for each launch (once where a step is
// captured in a graph) and cannot be recorded for an emitted program.
#pragma once

#include "runtime/cuda_driver.h"

#include <cuda.h>

#include <cstdint>
#include <string_view>

namespace lathe::kernels {

// A 2D tiled map: dims {inner, outer} of `type`, rows `stride` bytes apart, box {box_inner,
// box_outer}, no interleave, 128-byte swizzle or none, L2 promotion as given, out-of-bounds boxes
// zero-filled. `who` names the caller in the internal error a failed encoding raises.
CUtensorMap tensor_map_2d(CUdeviceptr base, CUtensorMapDataType type, uint64_t inner, uint64_t outer, uint64_t stride,
                          uint32_t box_inner, uint32_t box_outer, bool swizzle_128b, std::string_view who,
                          CUtensorMapL2promotion promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B);

}  // namespace lathe::kernels
