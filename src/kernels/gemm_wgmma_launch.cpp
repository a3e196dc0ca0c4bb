#include "kernels/gemm_wgmma_launch.h"

#include "kernels/gemm_f16_launch.h"  // the formats and their staging: the kernel reuses gemm_f16's dequantizers

#include "base/error.h"
#include "gguf/block_format.h"
#include "kernels/gemm_wgmma.cuh"  // lathe_gwg_geometry: the kernel's shared-memory layout, on the host
#include "kernels/library.h"

#include <fmt/format.h>

#include <mutex>
#include <string>

namespace lathe::kernels {
namespace {

constexpr int kTileOutputs = 128;  // LATHE_GWG_BN
int g_override = 0;

}  // namespace

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
  const int64_t sm_count = cuda::Context::get().info().sm_count;
  return 4 * ((rows + 255) / 256) * ((n_out + kTileOutputs - 1) / kTileOutputs) >= 3 * sm_count ? 256 : 128;
}

void set_gemm_wgmma_tile_override(int tile_rows) {
  LATHE_CHECK(tile_rows == 0 || tile_rows == 128 || tile_rows == 256);
  g_override = tile_rows;
}

void gemm_wgmma(const WeightMatrix& w, CUdeviceptr x16, int64_t rows, CUdeviceptr y, CUstream stream) {
  const GemmF16Format* f = gemm_f16_format(w.type);
  if (!f) fail("gemm_wgmma: no wgmma GEMM reads {} weights", ggml_type_name(w.type));
  if (w.k <= 0 || w.k % f->k_multiple != 0 || w.k >= (int64_t{1} << 30))
    fail("gemm_wgmma: {} rows of {} values are not whole blocks of {}", ggml_type_name(w.type), w.k, f->k_multiple);
  if (w.n_out <= 0 || w.n_out >= (int64_t{1} << 29)) fail("gemm_wgmma: {} output rows is out of range", w.n_out);
  if (w.n_expert != 1) fail("gemm_wgmma: a stack of {} experts needs the expert GEMV", w.n_expert);
  if (rows <= 0 || rows >= (int64_t{1} << 31) || rows * w.n_out >= (int64_t{1} << 62) / 4)
    fail("gemm_wgmma: {} rows is out of range", rows);
  LATHE_CHECK(w.data % 16 == 0 && x16 % 16 == 0 && y % 16 == 0);
  const int bm = gemm_wgmma_tile_rows(rows, w.n_out);
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
