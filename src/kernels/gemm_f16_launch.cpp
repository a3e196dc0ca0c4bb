#include "kernels/gemm_f16_launch.h"

#include "base/error.h"
#include "gguf/block_format.h"
#include "kernels/library.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace lathe::kernels {
namespace {

constexpr int kStages = 4;  // LATHE_GF16_STAGES

GemmF16Tile g_override;

}  // namespace

const GemmF16Format* gemm_f16_format(GgmlType type) {
  static const GemmF16Format f16{"f16", 8, true, 32}, q8_0{"q8_0", 6, false, 32}, q4_k{"q4_k", 3, false, 256},
      q2_k{"q2_k", 7, false, 256}, q3_k{"q3_k", 8, false, 256}, q5_k{"q5_k", 5, false, 256},
      q6_k{"q6_k", 10, false, 256};
  switch (type) {
    case GgmlType::F16: return &f16;
    case GgmlType::Q8_0: return &q8_0;
    case GgmlType::Q2_K: return &q2_k;
    case GgmlType::Q3_K: return &q3_k;
    case GgmlType::Q4_K: return &q4_k;
    case GgmlType::Q5_K: return &q5_k;
    case GgmlType::Q6_K: return &q6_k;
    default: return nullptr;
  }
}

bool gemm_f16_supports(GgmlType type) { return gemm_f16_format(type) != nullptr; }

std::vector<GemmF16Tile> gemm_f16_candidate_tiles() { return {{128, 128}, {64, 128}, {64, 64}}; }

std::string gemm_f16_kernel_name(GgmlType type, GemmF16Tile t) {
  const GemmF16Format* f = gemm_f16_format(type);
  LATHE_CHECK(f != nullptr);
  return fmt::format("lathe_gemm_f16_{}_{}x{}", f->name, t.bm, t.bn);
}

// Mirrors LatheGf16Layout (gemm_f16.cuh): S stages of x16 [BM][64] f16 and the raw lines (rows padded
// to an odd count of lines), then two dequantized [BN][64] f16 tiles.
unsigned gemm_f16_shared_bytes(GgmlType type, GemmF16Tile t) {
  const GemmF16Format* f = gemm_f16_format(type);
  LATHE_CHECK(f != nullptr);
  const int raw_stride = f->direct ? 128 : (f->lines | 1) * 16;
  const int stage = t.bm * 128 + t.bn * raw_stride;
  return static_cast<unsigned>(kStages * stage + (f->direct ? 0 : 2 * t.bn * 128));
}

GemmF16Tile gemm_f16_tile(int64_t rows, int64_t n_out) {
  if (g_override.bm != 0) return g_override;
  const int64_t sm_count = cuda::Context::get().info().sm_count;
  const std::vector<GemmF16Tile> tiles = gemm_f16_candidate_tiles();
  for (const GemmF16Tile& t : tiles)
    if (4 * ((rows + t.bm - 1) / t.bm) * ((n_out + t.bn - 1) / t.bn) >= 3 * sm_count) return t;
  return tiles.back();
}

void set_gemm_f16_tile_override(GemmF16Tile tile) { g_override = tile; }

PrefillGemm prefill_gemm_setting() {
  static const PrefillGemm setting = [] {
    const char* e = std::getenv("LATHE_PREFILL_GEMM");
    const std::string v = e ? e : "";
    if (v.empty()) return PrefillGemm::rule;
    if (v == "wgmma") return PrefillGemm::wgmma;
    if (v == "f16") return PrefillGemm::f16;
    if (v == "int8") return PrefillGemm::int8;
    fail("LATHE_PREFILL_GEMM={}: it takes wgmma, f16 or int8 (unset: the planner's rule)", v);
  }();
  return setting;
}

void gemm_f16(const WeightMatrix& w, CUdeviceptr x16, int64_t rows, CUdeviceptr y, CUstream stream) {
  const GemmF16Format* f = gemm_f16_format(w.type);
  if (!f) fail("gemm_f16: no f16 tensor-core GEMM reads {} weights", ggml_type_name(w.type));
  if (w.k <= 0 || w.k % f->k_multiple != 0 || w.k >= (int64_t{1} << 30))
    fail("gemm_f16: {} rows of {} values are not whole blocks of {}", ggml_type_name(w.type), w.k, f->k_multiple);
  if (w.n_out <= 0 || w.n_out >= (int64_t{1} << 29)) fail("gemm_f16: {} output rows is out of range", w.n_out);
  if (w.n_expert != 1) fail("gemm_f16: a stack of {} experts needs the expert GEMV", w.n_expert);
  if (rows <= 0 || rows >= (int64_t{1} << 31) || rows * w.n_out >= (int64_t{1} << 62) / 4)
    fail("gemm_f16: {} rows is out of range", rows);
  LATHE_CHECK(w.data % 16 == 0 && x16 % 16 == 0 && y % 16 == 0);
  const GemmF16Tile t = gemm_f16_tile(rows, w.n_out);
  const std::vector<GemmF16Tile> tiles = gemm_f16_candidate_tiles();
  LATHE_CHECK(std::any_of(tiles.begin(), tiles.end(), [&](const GemmF16Tile& c) { return c.bm == t.bm && c.bn == t.bn; }));
  CUdeviceptr wp = w.data, xp = x16, yp = y;
  long long row_bytes = lathe::row_bytes(w.type, w.k);
  int n_rows = static_cast<int>(rows), k = static_cast<int>(w.k), n_out = static_cast<int>(w.n_out);
  const cuda::Dim3 grid{static_cast<unsigned>((rows + t.bm - 1) / t.bm), static_cast<unsigned>((w.n_out + t.bn - 1) / t.bn),
                        1};
  if (grid.y > 65535u) fail("gemm_f16: {} outputs need more than 65535 tiles of {}", w.n_out, t.bn);
  cuda::launch(kernel(gemm_f16_kernel_name(w.type, t)), grid, {256, 1, 1}, gemm_f16_shared_bytes(w.type, t), stream,
               {&wp, &row_bytes, &xp, &yp, &n_rows, &k, &n_out}, "launching the f16 GEMM");
}

void convert_to_f16(CUdeviceptr x_f32, int64_t count, CUdeviceptr x16, CUstream stream) {
  if (count <= 0) return;
  if (count >= (int64_t{1} << 40)) fail("convert_to_f16: {} values is out of range", count);
  LATHE_CHECK(x_f32 % 16 == 0 && x16 % 8 == 0);
  CUdeviceptr xp = x_f32, op = x16;
  long long n = count;
  const cuda::Dim3 grid{static_cast<unsigned>((count + 1023) / 1024), 1, 1};
  cuda::launch(kernel("lathe_convert_f32_to_f16"), grid, {256, 1, 1}, 0, stream, {&xp, &n, &op},
               "launching the f16 conversion");
}

}  // namespace lathe::kernels
