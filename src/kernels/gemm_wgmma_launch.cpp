#include "kernels/gemm_wgmma_launch.h"
#include "kernels/gemm_wgmma_maps.h"

#include "kernels/gemm_f16_launch.h"  // the formats and their staging: the kernel reuses gemm_f16's dequantizers

#include "base/error.h"
#include "gguf/block_format.h"
#include "kernels/gemm_wgmma.cuh"  // lathe_gwg_geometry: the kernel's shared-memory layout, on the host
#include "kernels/gemm_wgmma_rs.cuh"  // lathe_gwr_geometry, lathe_gwr_boxes: the register-A kernel's layout
#include "kernels/library.h"
#include "kernels/tensor_map.h"
#include "kernels/tile_tuner.h"
#include "runtime/cuda_driver.h"

#include <fmt/format.h>

#include <cstring>
#include <mutex>
#include <string>

namespace lathe::kernels {
namespace {

constexpr int kTileOutputs = 128;  // LATHE_GWG_BN, and the register-A kernel's weight rows a block
int g_override = 0;
GemmWgmmaEngine g_engine = GemmWgmmaEngine::automatic;

// The register-A kernel's format index (lathe_gwr_boxes) and the kernel name's format.
int rs_format(GgmlType type) {
  switch (type) {
    case GgmlType::F16: return 0;
    case GgmlType::Q8_0: return 1;
    case GgmlType::Q4_K: return 2;
    case GgmlType::Q6_K: return 3;
    default: return -1;
  }
}

// A 2D tiled map (kernels/tensor_map.h) named as this launcher's.
CUtensorMap tensor_map(CUdeviceptr base, CUtensorMapDataType type, uint64_t inner, uint64_t outer, uint64_t stride,
                       uint32_t bi, uint32_t bo, bool swizzle) {
  return tensor_map_2d(base, type, inner, outer, stride, bi, bo, swizzle, "gemm_wgmma");
}

}  // namespace

namespace wgmma_detail {

void check_product(const WeightMatrix& w, int64_t rows) {
  const GemmF16Format* f = gemm_f16_format(w.type);
  if (!f) fail("gemm_wgmma: no wgmma GEMM reads {} weights", ggml_type_name(w.type));
  if (w.k <= 0 || w.k % f->k_multiple != 0 || w.k >= (int64_t{1} << 30))
    fail("gemm_wgmma: {} rows of {} values are not whole blocks of {}", ggml_type_name(w.type), w.k, f->k_multiple);
  if (w.n_out <= 0 || w.n_out >= (int64_t{1} << 29)) fail("gemm_wgmma: {} output rows is out of range", w.n_out);
  if (w.n_expert != 1) fail("gemm_wgmma: a stack of {} experts needs the expert GEMV", w.n_expert);
  if (rows <= 0 || rows >= (int64_t{1} << 31) || rows * w.n_out >= (int64_t{1} << 62) / 4)
    fail("gemm_wgmma: {} rows is out of range", rows);
}

CUtensorMap x_map(CUdeviceptr x16, int64_t k, int64_t rows, int tile_rows) {
  return tensor_map(x16, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, static_cast<uint64_t>(k), static_cast<uint64_t>(rows),
                    static_cast<uint64_t>(k) * 2, 64, static_cast<uint32_t>(tile_rows), true);
}

void weight_maps(const WeightMatrix& w, int box_rows, CUtensorMap* mw0, CUtensorMap* mw1) {
  const int fmt_index = rs_format(w.type);
  LATHE_CHECK(fmt_index >= 0);
  const LatheGwrBoxes boxes = lathe_gwr_boxes(fmt_index);
  const uint64_t rb = static_cast<uint64_t>(lathe::row_bytes(w.type, w.k));
  const auto rows = static_cast<uint32_t>(box_rows);
  if (fmt_index == 0) {
    *mw0 = tensor_map(w.data, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, static_cast<uint64_t>(w.k),
                      static_cast<uint64_t>(w.n_out), rb, 64, rows, true);
  } else {
    *mw0 = tensor_map(w.data, CU_TENSOR_MAP_DATA_TYPE_UINT8, rb, static_cast<uint64_t>(w.n_out), rb,
                      static_cast<uint32_t>(boxes.map0), rows, false);
  }
  *mw1 = boxes.map1 == 0 ? *mw0
                         : tensor_map(w.data, CU_TENSOR_MAP_DATA_TYPE_UINT8, rb, static_cast<uint64_t>(w.n_out), rb,
                                      static_cast<uint32_t>(boxes.map1), rows, false);
}

}  // namespace wgmma_detail

bool gemm_wgmma_supports(GgmlType type) { return gemm_f16_format(type) != nullptr; }

bool gemm_wgmma_available(std::string* why) {
  if (cuda::recorder() != nullptr) {
    if (why) *why = "recording a program (lathe emit has no sm_90a unit)";
    return false;
  }
  static std::once_flag once;
  static bool ok = false;
  static std::string reason;
  std::call_once(once, [] {
    try {
      if (!cuda::gpu_available(&reason)) return;
      const cuda::DeviceInfo& info = cuda::Context::get().info();
      if (info.cc_major != 9 || info.cc_minor != 0) {
        reason = fmt::format("wgmma needs a compute capability 9.0 card, not {}", info.arch());
        return;
      }
      (void)library_90a();
      ok = true;
    } catch (const UserError& e) {
      reason = e.what();
    }
  });
  if (!ok && why) *why = reason;
  return ok;
}

std::string gemm_wgmma_kernel_name(GgmlType type, int tile_rows) {
  const GemmF16Format* f = gemm_f16_format(type);
  LATHE_CHECK(f != nullptr && (tile_rows == 128 || tile_rows == 256));
  return fmt::format("lathe_gemm_wgmma_{}_{}x{}", f->name, tile_rows, kTileOutputs);
}

unsigned gemm_wgmma_shared_bytes(GgmlType type, int tile_rows) {
  const GemmF16Format* f = gemm_f16_format(type);
  LATHE_CHECK(f != nullptr);
  return static_cast<unsigned>(lathe_gwg_geometry(tile_rows, kTileOutputs, f->lines, f->direct).total);
}

int gemm_wgmma_tile_rows(int64_t rows, int64_t n_out) {
  if (g_override != 0) return g_override;
  // 256 rows once the 256-row tiles number >= 0.7 of the SMs (measured on the H200, register-A
  // kernel: 512 rows of 4096 outputs 128 (400 vs 340 TFLOP/s q8_0), of 6144 256 (446 vs 402); 4096
  // rows always 256). 128-row tiles run two blocks an SM, 256-row tiles one.
  const int64_t sm_count = cuda::Context::get().info().sm_count;
  return 10 * ((rows + 255) / 256) * ((n_out + kTileOutputs - 1) / kTileOutputs) >= 7 * sm_count ? 256 : 128;
}

std::string gemm_wgmma_rs_kernel_name(GgmlType type, int tile_rows) {
  const GemmF16Format* f = gemm_f16_format(type);
  LATHE_CHECK(f != nullptr && (tile_rows == 128 || tile_rows == 256));
  return fmt::format("lathe_gemm_wgmma_rs_{}_{}", f->name, tile_rows);
}

unsigned gemm_wgmma_rs_shared_bytes(GgmlType type, int tile_rows) {
  LATHE_CHECK(rs_format(type) >= 0);
  return static_cast<unsigned>(lathe_gwr_geometry(tile_rows, rs_format(type)).total);
}

bool gemm_wgmma_uses_rs(GgmlType type, int64_t k) {
  if (g_engine == GemmWgmmaEngine::staged || rs_format(type) < 0) return false;
  return lathe::row_bytes(type, k) % 16 == 0 && k % 8 == 0;
}

void set_gemm_wgmma_engine_override(GemmWgmmaEngine engine) { g_engine = engine; }

void set_gemm_wgmma_tile_override(int tile_rows) {
  LATHE_CHECK(tile_rows == 0 || tile_rows == 128 || tile_rows == 256);
  g_override = tile_rows;
}

namespace {

std::string tune_key(GemmWgmmaForm form, GgmlType type, int64_t k, int64_t rows, int64_t n_out) {
  const char* name = form == GemmWgmmaForm::single ? "" : form == GemmWgmmaForm::multi ? " multi" : " swiglu";
  return fmt::format("gemm wgmma{} {} rows {} n {} k {} tiles 128,256", name, ggml_type_name(type), rows, n_out, k);
}

}  // namespace

int gemm_wgmma_chosen_tile(GemmWgmmaForm form, GgmlType type, int64_t k, int64_t rows, int64_t n_out) {
  if (g_override == 0 && tuning_enabled() && !cuda::recorder())
    if (auto i = card_tuner().known(tune_key(form, type, k, rows, n_out), 2)) return *i == 0 ? 128 : 256;
  return gemm_wgmma_tile_rows(rows, n_out);
}

void tune_gemm_wgmma(GemmWgmmaForm form, GgmlType type, int64_t k, int64_t rows, int64_t n_out,
                     const std::function<void(CUstream)>& launch) {
  if (cuda::recorder() || !tuning_enabled() || g_override != 0) return;
  card_tuner().choose(tune_key(form, type, k, rows, n_out), 2, [&](int i) {
    g_override = i == 0 ? 128 : 256;
    const double us = time_launch_us(launch);
    g_override = 0;
    return us;
  });
}

void gemm_wgmma(const WeightMatrix& w, CUdeviceptr x16, int64_t rows, CUdeviceptr y, CUstream stream) {
  wgmma_detail::check_product(w, rows);
  LATHE_CHECK(w.data % 16 == 0 && x16 % 16 == 0 && y % 16 == 0);
  const int bm = gemm_wgmma_chosen_tile(GemmWgmmaForm::single, w.type, w.k, rows, w.n_out);
  if (gemm_wgmma_uses_rs(w.type, w.k)) {
    // Tensor maps of x16 [rows][k] f16 (box 64 x bm, 128-byte swizzle) and of W's bytes
    // [n_out][row_bytes] (boxes of the format's widths x 128 rows; f16 weights: 64 values x 128, swizzled).
    const CUtensorMap mx = wgmma_detail::x_map(x16, w.k, rows, bm);
    CUtensorMap mw0, mw1;
    wgmma_detail::weight_maps(w, kTileOutputs, &mw0, &mw1);
    CUdeviceptr yp = y;
    int n_rows = static_cast<int>(rows), k = static_cast<int>(w.k), n_out = static_cast<int>(w.n_out);
    const cuda::Dim3 grid{static_cast<unsigned>((rows + bm - 1) / bm),
                          static_cast<unsigned>((w.n_out + kTileOutputs - 1) / kTileOutputs), 1};
    if (grid.y > 65535u) fail("gemm_wgmma: {} outputs need more than 65535 tiles of {}", w.n_out, kTileOutputs);
    cuda::launch(kernel_90a(gemm_wgmma_rs_kernel_name(w.type, bm)), grid, {256, 1, 1},  // LATHE_GWR_THREADS
                 gemm_wgmma_rs_shared_bytes(w.type, bm), stream,
                 {const_cast<CUtensorMap*>(&mx), &mw0, &mw1, &yp, &n_rows, &k, &n_out},
                 "launching the register-A wgmma GEMM");
    return;
  }
  CUdeviceptr wp = w.data, xp = x16, yp = y;
  long long row_bytes = lathe::row_bytes(w.type, w.k);
  int n_rows = static_cast<int>(rows), k = static_cast<int>(w.k), n_out = static_cast<int>(w.n_out);
  const cuda::Dim3 grid{static_cast<unsigned>((rows + bm - 1) / bm),
                        static_cast<unsigned>((w.n_out + kTileOutputs - 1) / kTileOutputs), 1};
  if (grid.y > 65535u) fail("gemm_wgmma: {} outputs need more than 65535 tiles of {}", w.n_out, kTileOutputs);
  // 384 threads exactly: the kernel's setmaxnreg split (one producer, two consumer warpgroups) needs it.
  cuda::launch(kernel_90a(gemm_wgmma_kernel_name(w.type, bm)), grid, {384, 1, 1}, gemm_wgmma_shared_bytes(w.type, bm),
               stream, {&wp, &row_bytes, &xp, &yp, &n_rows, &k, &n_out}, "launching the wgmma GEMM");
}

}  // namespace lathe::kernels
