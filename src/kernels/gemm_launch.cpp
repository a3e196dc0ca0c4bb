#include "kernels/gemm_launch.h"

#include "base/error.h"
#include "gguf/block_format.h"
#include "kernels/library.h"
#include "kernels/tile_tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace lathe::kernels {
namespace {

// Mirrors gemm_blocks.cuh's unpackers: 16-byte lines staged per weight row of a 256-value tile.
struct GemmFormat {
  const char* name;
  int lines;
  bool has_min, sub16;  // q4_K's min term; q6_K's 16-value sub-block scales
};

const GemmFormat* gemm_format(GgmlType type) {
  static const GemmFormat q8_0{"q8_0", 18, false, false}, q4_k{"q4_k", 9, true, false},
      q6_k{"q6_k", 14, false, true};
  switch (type) {
    case GgmlType::Q8_0: return &q8_0;
    case GgmlType::Q4_K: return &q4_k;
    case GgmlType::Q6_K: return &q6_k;
    default: return nullptr;
  }
}

// Mirrors LatheGemmLayout (gemm_int8.cuh): two stages of raw weights, levels and ds, then the
// unpacked weight tile (levels, scales, mins, q6_K sub-block scales).
constexpr int kStages = 2;

unsigned lockstep_shared_bytes(const GemmFormat& f, bool x2, int bm, int bn) {
  const int stage = bn * (f.lines | 1) * 16 + bm * 256 * (x2 ? 2 : 1) + bm * 128;
  return static_cast<unsigned>(kStages * stage + bn * 256 + bn * 32 * 2 + bn * 16);
}

// Mirrors LatheGemmWsLayout (gemm_ws_blocks.cuh): S unpacked stages (S = 2 at 128 outputs, else 3;
// LATHE_GEMM_WS_FORMAT), two raw slots, 2 S mbarriers.
int ws_stages(int bn) { return bn == 128 ? 2 : 3; }
unsigned ws_shared_bytes(const GemmFormat& f, bool x2, int bm, int bn) {
  const int dsw = f.has_min ? 4 : (x2 ? 2 : 1);
  const int stage = bm * 256 * (x2 ? 2 : 1) + bm * 8 * dsw * 4 + bn * 256 + bn * 32 + (f.has_min ? bn * 32 : 0) +
                    (f.sub16 ? bn * 16 : 0);
  const int s = ws_stages(bn);
  return static_cast<unsigned>(s * stage + 2 * bn * (f.lines | 1) * 16 + 16 * s);
}

bool same_tile(const GemmTile& a, const GemmTile& b) { return a.bm == b.bm && a.bn == b.bn && a.variant == b.variant; }

const char* variant_prefix(GemmVariant v) { return v == GemmVariant::warp_specialized ? "ws" : ""; }

GemmTile g_override;

}  // namespace

bool gemm_supports(GgmlType type) { return gemm_format(type) != nullptr; }

std::vector<GemmTile> gemm_candidate_tiles(GgmlType type, Activations a) {
  if (!gemm_format(type) || a == Activations::f32) return {};
  constexpr GemmVariant ws = GemmVariant::warp_specialized;
  if (a == Activations::int8x2) return {{64, 128}, {64, 64}, {64, 128, ws}, {64, 64, ws}};
  return {{128, 128}, {128, 64}, {64, 128}, {64, 64}, {128, 128, ws}, {128, 64, ws}};
}

std::string gemm_kernel_name(GgmlType type, Activations a, GemmTile t) {
  const GemmFormat* f = gemm_format(type);
  LATHE_CHECK(f != nullptr);
  return fmt::format("lathe_gemm_{}{}_{}_{}x{}", t.variant == GemmVariant::warp_specialized ? "ws_" : "", f->name,
                     activations_name(a), t.bm, t.bn);
}

unsigned gemm_shared_bytes(GgmlType type, Activations a, GemmTile t) {
  const GemmFormat* f = gemm_format(type);
  LATHE_CHECK(f != nullptr);
  const bool x2 = a == Activations::int8x2;
  return t.variant == GemmVariant::warp_specialized ? ws_shared_bytes(*f, x2, t.bm, t.bn)
                                                    : lockstep_shared_bytes(*f, x2, t.bm, t.bn);
}

namespace {

std::string tune_key(const WeightMatrix& w, Activations a, int64_t rows) {
  std::string key = fmt::format("gemm {} {} rows {} n {} k {} tiles", ggml_type_name(w.type), activations_name(a), rows,
                                w.n_out, w.k);
  for (const GemmTile& t : gemm_candidate_tiles(w.type, a))
    key += fmt::format(" {}{}x{}", variant_prefix(t.variant), t.bm, t.bn);
  return key;
}

// The tuned tile of a shape when one was measured on this card (never while recording for `lathe
// emit`, whose text must not depend on a cache).
std::optional<GemmTile> tuned_tile(const WeightMatrix& w, Activations a, int64_t rows) {
  if (cuda::recorder() || !tuning_enabled()) return std::nullopt;
  const std::vector<GemmTile> tiles = gemm_candidate_tiles(w.type, a);
  if (auto i = card_tuner().known(tune_key(w, a, rows), static_cast<int>(tiles.size()))) return tiles[static_cast<size_t>(*i)];
  return std::nullopt;
}

}  // namespace

GemmTile gemm_tile(Activations a, int64_t rows, int64_t n_out) {
  if (g_override.bm != 0) return g_override;
  // The largest tile that still gives about one block per SM (measured on the H200: 128 blocks of
  // 128 x 128 on 132 SMs beat 256 of 128 x 64 by 35%; 1024 outputs x 512 rows want 64 x 64).
  const int64_t sm_count = cuda::Context::get().info().sm_count;
  const GemmTile int8_tiles[] = {{128, 128}, {128, 64}, {64, 128}, {64, 64}};
  const GemmTile x2_tiles[] = {{64, 128}, {64, 64}};
  const bool x2 = a == Activations::int8x2;
  const GemmTile* tiles = x2 ? x2_tiles : int8_tiles;
  const int n_tiles = x2 ? 2 : 4;
  for (int i = 0; i < n_tiles; ++i) {
    const GemmTile t = tiles[i];
    if (4 * ((rows + t.bm - 1) / t.bm) * ((n_out + t.bn - 1) / t.bn) >= 3 * sm_count) return t;
  }
  return tiles[n_tiles - 1];
}

void set_gemm_tile_override(GemmTile tile) { g_override = tile; }

void gemm_quantized(const WeightMatrix& w, Activations a, CUdeviceptr xq, int64_t rows, CUdeviceptr y,
                    CUstream stream) {
  const GemmFormat* f = gemm_format(w.type);
  if (!f) fail("gemm_quantized: no int8 tensor-core GEMM reads {} weights", ggml_type_name(w.type));
  if (a == Activations::f32) fail("gemm_quantized: the f32 contract has no int8 GEMM (use matmul)");
  const int64_t block = block_format(w.type).block_size;
  if (w.k <= 0 || w.k % 32 != 0 || w.k % block != 0 || w.k >= (int64_t{1} << 30))
    fail("gemm_quantized: {} rows of {} values are not whole blocks of max(32, {})", ggml_type_name(w.type), w.k, block);
  if (w.n_out <= 0 || w.n_out >= (int64_t{1} << 31) / 4) fail("gemm_quantized: {} output rows is out of range", w.n_out);
  if (w.n_expert != 1) fail("gemm_quantized: a stack of {} experts needs the expert GEMV", w.n_expert);
  if (rows <= 0 || rows * w.k >= (int64_t{1} << 31) * 16) fail("gemm_quantized: {} rows is out of range", rows);
  LATHE_CHECK(w.data % 16 == 0 && xq % 16 == 0 && y % 4 == 0);
  const bool x2 = a == Activations::int8x2;
  const GemmTile t = g_override.bm == 0 ? tuned_tile(w, a, rows).value_or(gemm_tile(a, rows, w.n_out))
                                        : g_override;
  const std::vector<GemmTile> tiles = gemm_candidate_tiles(w.type, a);
  LATHE_CHECK(std::any_of(tiles.begin(), tiles.end(), [&](const GemmTile& c) { return same_tile(c, t); }));
  CUdeviceptr wp = w.data, q1 = xq, q2 = x2 ? xq + rows * w.k : 0, ds = xq + rows * w.k * (x2 ? 2 : 1);
  long long row_bytes = lathe::row_bytes(w.type, w.k);
  int n_rows = static_cast<int>(rows), k = static_cast<int>(w.k), n_out = static_cast<int>(w.n_out);
  const bool ws = t.variant == GemmVariant::warp_specialized;
  const cuda::Dim3 grid{static_cast<unsigned>((rows + t.bm - 1) / t.bm), static_cast<unsigned>((w.n_out + t.bn - 1) / t.bn),
                        1};
  cuda::launch(kernel(gemm_kernel_name(w.type, a, t)), grid, {ws ? 384u : 256u, 1, 1}, gemm_shared_bytes(w.type, a, t),
               stream,
               {&wp, &row_bytes, &q1, &q2, &ds, &y, &n_rows, &k, &n_out}, "launching the int8 GEMM");
}

void tune_gemm(const WeightMatrix& w, Activations a, CUdeviceptr xq, int64_t rows, CUdeviceptr y) {
  if (cuda::recorder() || !tuning_enabled() || g_override.bm != 0) return;
  const std::vector<GemmTile> tiles = gemm_candidate_tiles(w.type, a);
  card_tuner().choose(tune_key(w, a, rows), static_cast<int>(tiles.size()), [&](int i) {
    g_override = tiles[static_cast<size_t>(i)];
    const double us = time_launch_us([&](CUstream s) { gemm_quantized(w, a, xq, rows, y, s); });
    g_override = {};
    return us;
  });
}

}  // namespace lathe::kernels
