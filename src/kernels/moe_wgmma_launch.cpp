#include "kernels/moe_wgmma_launch.h"

#include "base/error.h"
#include "gguf/block_format.h"
#include "kernels/gemm_wgmma_launch.h"
#include "kernels/gemm_wgmma_rs.cuh"      // lathe_gwr_boxes: the formats' TMA boxes, on the host
#include "kernels/gemm_wgmma_rs_moe.cuh"  // lathe_gwm_geometry: the kernels' shared memory, on the host
#include "kernels/library.h"
#include "kernels/moe_prefill_launch.h"
#include "kernels/tensor_map.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace lathe::kernels {
namespace {

int g_row_tile = 0;

// lathe_gwr_boxes' format index and the kernel name's format; -1: none.
int wgmma_format(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0: return 1;
    case GgmlType::Q4_K: return 2;
    case GgmlType::Q6_K: return 3;
    default: return -1;
  }
}
const char* format_name(GgmlType type) {
  return type == GgmlType::Q8_0 ? "q8_0" : type == GgmlType::Q4_K ? "q4_k" : "q6_k";
}

// A 2D tiled map (kernels/tensor_map.h) named as this launcher's.
CUtensorMap tensor_map(CUdeviceptr base, CUtensorMapDataType type, uint64_t inner, uint64_t outer, uint64_t stride,
                       uint32_t bi, uint32_t bo, bool swizzle) {
  return tensor_map_2d(base, type, inner, outer, stride, bi, bo, swizzle, "moe_wgmma");
}

bool matrix_ok(const WeightMatrix& w) {
  return wgmma_format(w.type) >= 0 && gemm_wgmma_uses_rs(w.type, w.k) && w.k > 0 && w.k < (int64_t{1} << 30) &&
         w.n_out > 0 && w.n_expert >= 1 && w.n_expert * w.n_out < (int64_t{1} << 31);
}

// The weight maps of a stack: map 0 and map 1 of the format's boxes (64 rows a box).
void weight_maps(const WeightMatrix& w, CUtensorMap& m0, CUtensorMap& m1) {
  const LatheGwrBoxes b = lathe_gwr_boxes(wgmma_format(w.type));
  const uint64_t rb = static_cast<uint64_t>(lathe::row_bytes(w.type, w.k)), n = static_cast<uint64_t>(w.n_expert * w.n_out);
  m0 = tensor_map(w.data, CU_TENSOR_MAP_DATA_TYPE_UINT8, rb, n, rb, static_cast<uint32_t>(b.map0), 64, false);
  m1 = b.map1 == 0 ? m0 : tensor_map(w.data, CU_TENSOR_MAP_DATA_TYPE_UINT8, rb, n, rb, static_cast<uint32_t>(b.map1), 64, false);
}

void launch(bool gate_up, const WeightMatrix& wa, const WeightMatrix& wb, CUdeviceptr x16, int64_t rows, int64_t top_k,
            int bn, CUdeviceptr group, CUdeviceptr out, CUstream stream) {
  LATHE_CHECK(matrix_ok(wa) && (bn == 64 || bn == 128) && x16 % 16 == 0 && out % 16 == 0 && wa.data % 16 == 0 &&
              wb.data % 16 == 0);
  const int64_t pairs = rows * top_k;
  const CUtensorMap mx = tensor_map(x16, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, static_cast<uint64_t>(wa.k),
                                    static_cast<uint64_t>(pairs), static_cast<uint64_t>(wa.k) * 2, 64,
                                    static_cast<uint32_t>(bn), true);
  CUtensorMap ma0, ma1, mb0, mb1;
  weight_maps(wa, ma0, ma1);
  weight_maps(wb, mb0, mb1);
  const MoeGroupView v = moe_group_view(group, rows, top_k, wa.n_expert);
  CUdeviceptr tiles = v.tiles, nt = v.n_tiles, o = out;
  int k = static_cast<int>(wa.k), n_out = static_cast<int>(wa.n_out);
  const int per_block = gate_up ? 64 : 128;
  const cuda::Dim3 grid{static_cast<unsigned>(moe_max_tiles(pairs, wa.n_expert, bn)),
                        static_cast<unsigned>((wa.n_out + per_block - 1) / per_block), 1};
  cuda::launch(kernel_90a(moe_wgmma_kernel_name(gate_up, wa.type, bn)), grid, {256, 1, 1},  // LATHE_GWM_THREADS
               moe_wgmma_shared_bytes(wa.type, bn), stream,
               {const_cast<CUtensorMap*>(&mx), &ma0, &ma1, &mb0, &mb1, &tiles, &nt, &o, &k, &n_out},
               "launching the mixture's wgmma grouped product");
}

}  // namespace

bool moe_wgmma_supports(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down) {
  return matrix_ok(gate) && matrix_ok(down) && gate.type == up.type && gate.k == up.k && gate.n_out == up.n_out &&
         gate.n_expert == up.n_expert && down.n_expert == gate.n_expert && down.k == gate.n_out &&
         down.n_out == gate.k && gate.k % 4 == 0;
}

int moe_wgmma_row_tile(int64_t rows, int64_t top_k, int64_t n_expert) {
  if (g_row_tile != 0) return g_row_tile;
  // 64 x rows a tile (wgmma m64n64, two blocks an SM) while an expert's pairs fit one on average; 128
  // (one block an SM, half the weight passes) once they fill 128.
  const int64_t pairs = rows * top_k, used = std::min(pairs, n_expert);
  return pairs >= 128 * used ? 128 : 64;
}

void set_moe_wgmma_row_tile(int bn) {
  LATHE_CHECK(bn == 0 || bn == 64 || bn == 128);
  g_row_tile = bn;
}

std::string moe_wgmma_kernel_name(bool gate_up, GgmlType type, int bn) {
  LATHE_CHECK(wgmma_format(type) >= 0 && (bn == 64 || bn == 128));
  return fmt::format("lathe_moe_wgmma_{}_{}_{}", gate_up ? "gate_up" : "down", format_name(type), bn);
}

unsigned moe_wgmma_shared_bytes(GgmlType type, int bn) {
  LATHE_CHECK(wgmma_format(type) >= 0);
  return static_cast<unsigned>(lathe_gwm_geometry(bn, lathe_gwr_boxes(wgmma_format(type)).row_bytes).total);
}

void moe_gather_f16(CUdeviceptr x, int64_t rows, int64_t k, int64_t top_k, int64_t n_expert, CUdeviceptr group,
                    CUdeviceptr x16s, CUstream stream) {
  LATHE_CHECK(k % 4 == 0 && k < (int64_t{1} << 30) && x % 16 == 0 && x16s % 16 == 0);
  const MoeGroupView v = moe_group_view(group, rows, top_k, n_expert);
  CUdeviceptr xp = x, po = v.pair_of, o = x16s;
  int kk = static_cast<int>(top_k), kv = static_cast<int>(k);
  cuda::launch(kernel("lathe_moe_gather_f16"), {static_cast<unsigned>(rows * top_k), 1, 1}, {256, 1, 1}, 0, stream,
               {&xp, &po, &kk, &kv, &o}, "launching the mixture's f16 gather");
}

void moe_wgmma_gate_up(const WeightMatrix& gate, const WeightMatrix& up, CUdeviceptr x16s, int64_t rows,
                       int64_t top_k, int bn, CUdeviceptr group, CUdeviceptr h16, CUstream stream) {
  if (gate.type != up.type || gate.k != up.k || gate.n_out != up.n_out || gate.n_expert != up.n_expert)
    fail("mixture gate/up: gate and up differ in format or shape");
  launch(true, gate, up, x16s, rows, top_k, bn, group, h16, stream);
}

void moe_wgmma_down(const WeightMatrix& down, CUdeviceptr h16, int64_t rows, int64_t top_k, int bn,
                    CUdeviceptr group, CUdeviceptr y, CUstream stream) {
  launch(false, down, down, h16, rows, top_k, bn, group, y, stream);
}

}  // namespace lathe::kernels
