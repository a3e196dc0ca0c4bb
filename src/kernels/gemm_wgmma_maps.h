// Internal to the wgmma launchers (gemm_wgmma_launch.cpp, gemm_wgmma_multi_launch.cpp): argument
// checks and the TMA tensor maps of the register-A kernels (gemm_wgmma_rs.cuh), shared so every
// launch form reads x16 and W exactly as gemm_wgmma does.
#pragma once

#include "kernels/gemv_launch.h"

#include <cuda.h>

#include <cstdint>

namespace lathe::kernels::wgmma_detail {

// gemm_wgmma's argument checks of W and the row count (UserError on a shape it does not take).
void check_product(const WeightMatrix& w, int64_t rows);

// x16 [rows][k] f16: boxes of 64 values x tile_rows rows, 128-byte swizzle.
CUtensorMap x_map(CUdeviceptr x16, int64_t k, int64_t rows, int tile_rows);

// W's rows (the register-A format of w.type: gemm_wgmma_uses_rs holds): the format's maps 0 and 1
// (lathe_gwr_boxes; mw1 = mw0 where the format has one), boxes of box_rows rows (128: a whole tile;
// 64: the fused SwiGLU's half tile).
void weight_maps(const WeightMatrix& w, int box_rows, CUtensorMap* mw0, CUtensorMap* mw1);

}  // namespace lathe::kernels::wgmma_detail
