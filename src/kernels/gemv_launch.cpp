#include "kernels/gemv_launch.h"

#include "gguf/block_format.h"
#include "kernels/decode_stream.h"
#include "kernels/library.h"
#include "kernels/tensor_map.h"
#include "runtime/cuda_api.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace lathe::kernels {
namespace {

// How the device code cuts a row of each format (gemv_blocks.cuh's traits): unit_values values in
// unit_bytes bytes; the float formats in units of 8 values.
struct Unit {
  const char* name;  // kernel name suffix
  int values;
  int bytes;
};

const Unit* unit_of(GgmlType type) {
  static const Unit q8_0{"q8_0", 32, 34}, q4_0{"q4_0", 32, 18}, q4_1{"q4_1", 32, 20}, q5_0{"q5_0", 32, 22},
      q5_1{"q5_1", 32, 24}, q2_k{"q2_k", 256, 84}, q3_k{"q3_k", 256, 110}, q4_k{"q4_k", 256, 144},
      q5_k{"q5_k", 256, 176}, q6_k{"q6_k", 256, 210},
      f32{"f32", 8, 32}, f16{"f16", 8, 16}, bf16{"bf16", 8, 16};
  switch (type) {
    case GgmlType::Q8_0: return &q8_0;
    case GgmlType::Q4_0: return &q4_0;
    case GgmlType::Q4_1: return &q4_1;
    case GgmlType::Q5_0: return &q5_0;
    case GgmlType::Q5_1: return &q5_1;
    case GgmlType::Q2_K: return &q2_k;
    case GgmlType::Q3_K: return &q3_k;
    case GgmlType::Q4_K: return &q4_k;
    case GgmlType::Q5_K: return &q5_k;
    case GgmlType::Q6_K: return &q6_k;
    case GgmlType::F32: return &f32;
    case GgmlType::F16: return &f16;
    case GgmlType::BF16: return &bf16;
    default: return nullptr;
  }
}

const Unit& checked_unit(const WeightMatrix& w, const char* what) {
  const Unit* u = unit_of(w.type);
  if (!u) fail("{}: no GPU kernel reads {} weights", what, ggml_type_name(w.type));
  const int64_t block = block_format(w.type).block_size;
  if (w.k <= 0 || w.k % 32 != 0 || w.k % block != 0)
    fail("{}: {} rows of {} values are not whole blocks of max(32, {})", what, ggml_type_name(w.type), w.k, block);
  if (w.n_out <= 0 || w.n_out > (int64_t{1} << 31) / 4) fail("{}: {} output rows is out of range", what, w.n_out);
  LATHE_CHECK(w.data % 16 == 0);
  return *u;
}

// 16-byte loads a lane may hold per chunk (LATHE_GEMV_LOADS) and warps per block (LATHE_GEMV_WARPS).
constexpr int kLoads = 9, kWarps = 4;

struct GemvShape {
  int split = 1;        // warps per output row; 0: streaming rows (gemv_product.cuh)
  int chunk_units = 1;  // units a warp streams at once
  unsigned blocks = 1;
};

// Dense products with at least kStreamWarps warps' worth of rows per SM stream (split == 0): a grid of
// at most that many warps, rows dealt out evenly, each warp loading its next chunk while it computes.
// Otherwise enough warps to fill every SM (32 a SM) by splitting rows when there are few. Chunks as
// large as the stage allows (each lane up to 9 loads in flight), of equal size within a row.
constexpr int64_t kStreamWarps = 16;

GemvShape gemv_shape(const Unit& u, int64_t n_out, int64_t k, int64_t tasks, bool dense) {
  GemvShape s;
  const int64_t units = k / u.values;
  const int64_t max_units = (kLoads * 512 - 30) / u.bytes;  // a chunk may start 15 bytes past a 16-byte line
  const int64_t sm_count = cuda::Context::get().info().sm_count;
  const int64_t stream_warps = kStreamWarps * sm_count;
  if (dense && n_out >= stream_warps) {
    const int64_t rows_per_warp = (n_out + stream_warps - 1) / stream_warps;
    const int64_t warps = (n_out + rows_per_warp - 1) / rows_per_warp;
    const int64_t n_chunks = (units + max_units - 1) / max_units;
    s.split = 0;
    s.chunk_units = static_cast<int>((units + n_chunks - 1) / n_chunks);
    s.blocks = static_cast<unsigned>((warps + kWarps - 1) / kWarps);
    return s;
  }
  const int64_t target_warps = 32 * sm_count;
  while (s.split < kWarps && n_out * tasks * s.split < target_warps && units >= 2 * s.split) s.split *= 2;
  int64_t n_chunks = (units + max_units - 1) / max_units;
  n_chunks = std::min(units, (n_chunks + s.split - 1) / s.split * s.split);
  s.chunk_units = static_cast<int>((units + n_chunks - 1) / n_chunks);
  const int64_t rows_per_block = kWarps / s.split;
  s.blocks = static_cast<unsigned>((n_out + rows_per_block - 1) / rows_per_block);
  return s;
}

struct ActPointers {
  CUdeviceptr f = 0, q1 = 0, q2 = 0, ds = 0;
};

ActPointers act_pointers(Activations a, CUdeviceptr x, int64_t rows, int64_t k) {
  ActPointers p;
  if (a == Activations::f32) {
    p.f = x;
    return p;
  }
  p.q1 = x;
  p.q2 = a == Activations::int8x2 ? x + rows * k : 0;
  p.ds = x + rows * k * (a == Activations::int8x2 ? 2 : 1);
  return p;
}

// ---- the decode GEMV (gemv_decode.cuh): one row of x, int8 contracts, q8_0 / q4_K / q6_K.
// Mirrors LATHE_GEMV1_WARPS / STAGES / SLOT and each format's chunk_units there.
constexpr int kDecodeWarps = 16;


bool g_decode_enabled = true;

// The Q4_K decode products on tensor cores (gemv_decode_tiles.cuh): on for every product by default
// (qwen3-8b Q4_K_M tg128 +9%: docs/perf.md, 2026-12-02); LATHE_DECODE_TILES (0, merged, 1; read at
// the first use, so that a bad value is a user error where the caller reports it) or set_decode_tiles
// sets them.
std::optional<DecodeTiles> g_decode_tiles;
DecodeTiles decode_tiles_setting() {
  if (!g_decode_tiles) {
    const char* e = std::getenv("LATHE_DECODE_TILES");
    g_decode_tiles = decode_tiles_named(e ? e : "");
  }
  return *g_decode_tiles;
}

// Launches the tile kernel where it takes w (decode_tiles_group, dealt).
bool launch_decode_tiles(const WeightMatrix& w, Activations a, CUdeviceptr x, CUdeviceptr y, CUstream stream,
                         CUdeviceptr x_f32) {
  int group = decode_tiles_group(w, a, TileProduct::plain);
  if (group == 0) return false;
  const int64_t shared = decode_tile_shared_bytes(w, a);
  const int64_t sm_count = cuda::Context::get().info().sm_count, n_tiles = w.n_out / kDecodeTileRows;
  const unsigned blocks = static_cast<unsigned>(std::min(sm_count, n_tiles));  // a block a tile at a time
  long long row_bytes = lathe::row_bytes(w.type, w.k);
  int k = static_cast<int>(w.k), n_out = static_cast<int>(w.n_out), early = decode_early_requests();
  CUdeviceptr wp = w.data;
  CUtensorMap map = decode_tile_map(w);
  const std::string name =
      std::string("lathe_gemv1t_") + decode_tile_format(w.type)->name + "_" + std::string(activations_name(a));
  cuda::launch(kernel(name), {blocks, 1, 1}, {32 * kDecodeWarps, 1, 1}, static_cast<unsigned>(shared), stream,
               {&wp, &row_bytes, &x, &y, &k, &n_out, &group, &early, &x_f32, &map}, "launching the decode GEMV's tiles");
  return true;
}

// Launches the decode kernel when it applies; false otherwise (the caller takes the general one).
// x_f32: x is the f32 row, quantized by each block (x then unused).
bool launch_decode_gemv(const WeightMatrix& w, Activations a, CUdeviceptr x, CUdeviceptr y, CUstream stream,
                        CUdeviceptr x_f32 = 0) {
  if (launch_decode_tiles(w, a, x, y, stream, x_f32)) return true;
  DecodeGemvLaunch l;
  if (!decode_gemv_launch(w, a, l)) return false;
  int mode = l.mode;
  long long row_bytes = lathe::row_bytes(w.type, w.k);
  int k = static_cast<int>(w.k), n_out = static_cast<int>(w.n_out);
  CUdeviceptr wp = w.data;
  int early = decode_early_requests();
  const std::string name = std::string("lathe_gemv1_") + dense_kernel_format(w.type) + "_" + std::string(activations_name(a));
  cuda::launch(kernel(name), {l.blocks, 1, 1}, {32 * kDecodeWarps, 1, 1}, static_cast<unsigned>(l.shared_bytes),
               stream, {&wp, &row_bytes, &x, &y, &k, &n_out, &mode, &early, &x_f32}, "launching the decode GEMV");
  return true;
}

void launch_gemv(const WeightMatrix& w, const Unit& u, Activations a, CUdeviceptr x, int64_t x_rows,
                 int64_t n_rows, int64_t tasks, const ExpertRouting* routing, CUdeviceptr y, CUstream stream) {
  LATHE_CHECK(x % 16 == 0 && y % 4 == 0);
  const GemvShape s = gemv_shape(u, w.n_out, w.k, tasks, routing == nullptr);
  ActPointers p = act_pointers(a, x, x_rows, w.k);
  long long row_bytes = lathe::row_bytes(w.type, w.k), expert_bytes = row_bytes * w.n_out;
  int k = static_cast<int>(w.k), n_out = static_cast<int>(w.n_out), rows = static_cast<int>(n_rows);
  int chunk_units = s.chunk_units, split = s.split;
  CUdeviceptr ids = routing ? routing->ids : 0, route_w = routing ? routing->route_w : 0;
  int top_k = routing ? static_cast<int>(routing->top_k) : 1;
  int combine = routing && routing->combine, x_per_slot = routing && routing->x_per_slot;
  CUdeviceptr wp = w.data;
  const std::string name = std::string("lathe_gemv_") + u.name + "_" + std::string(activations_name(a));
  cuda::launch(kernel(name), {s.blocks, 1, static_cast<unsigned>(tasks)}, {32 * kWarps, 1, 1}, 0, stream,
               {&wp, &row_bytes, &expert_bytes, &p.f, &p.q1,
                &p.q2, &p.ds, &y, &k, &n_out, &rows, &chunk_units,
                &split, &ids, &route_w, &top_k, &combine, &x_per_slot},
               "launching a GEMV");
}

}  // namespace

int64_t decode_tile_shared_bytes(const WeightMatrix& w, Activations a) {
  const DecodeTileFormat* f = decode_tile_format(w.type);
  LATHE_CHECK(f != nullptr);
  return f->x_offset + staged_levels_bytes(w.k, a);
}

int decode_tiles_group(const WeightMatrix& w, Activations a, TileProduct p) {
  const DecodeTiles set = decode_tiles_setting();
  const bool set_for = set == DecodeTiles::all || (set == DecodeTiles::merged && p == TileProduct::merged);
  if (!g_decode_enabled || !set_for || a == Activations::f32) return 0;
  // The formats decode_tile_format takes (Q2_K to Q6_K; Q2_K, Q3_K, Q5_K opt-in) in every product but
  // Q6_K, which the merged kernels do not take (their tiles read x where the row walk stages it, which
  // Q6_K's rings overlap).
  if (!decode_tile_format(w.type) || (w.type == GgmlType::Q6_K && p == TileProduct::merged)) return 0;
  const bool dealt = p == TileProduct::plain;
  // Whole tiles, rows of whole 16-unit rounds (a unit for each warp of the block each round).
  if (w.n_out % kDecodeTileRows != 0 || w.k % (256 * kDecodeWarps) != 0 || w.n_expert != 1) return 0;
  // Dealt tiles keep a tile in one block, so fewer tiles than SMs would leave SMs idle that the row
  // walk fills.
  if (dealt && w.n_out / kDecodeTileRows < cuda::Context::get().info().sm_count) return 0;
  if (decode_tile_shared_bytes(w, a) + kDecodeTileStaticBytes > shared_optin_bytes()) return 0;
  return kDecodeWarps;
}

CUtensorMap decode_tile_map(const WeightMatrix& w) {
  // The boxes' L2 promotion: 128 bytes unless LATHE_TILE_L2_PROMOTION (none, 64, 128, 256) says
  // otherwise (a measuring knob). A box's 16 rows are 144-byte pieces, a line and a part each; in
  // qwen3-8b Q4_K_M's step 128 measured +2.5% over none, +3.6% over 256 (docs/perf.md, 2026-12-02).
  static const CUtensorMapL2promotion promotion = [] {
    const char* e = std::getenv("LATHE_TILE_L2_PROMOTION");
    const std::string v = e ? e : "128";
    if (v == "none") return CU_TENSOR_MAP_L2_PROMOTION_NONE;
    if (v == "64") return CU_TENSOR_MAP_L2_PROMOTION_L2_64B;
    if (v == "128") return CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
    if (v == "256") return CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
    fail("LATHE_TILE_L2_PROMOTION={}: it takes none, 64, 128 or 256", v);
  }();
  const DecodeTileFormat* f = decode_tile_format(w.type);
  LATHE_CHECK(f != nullptr);
  const uint64_t rb = static_cast<uint64_t>(lathe::row_bytes(w.type, w.k));
  return tensor_map_2d(w.data, CU_TENSOR_MAP_DATA_TYPE_UINT8, rb, static_cast<uint64_t>(w.n_out), rb,
                       static_cast<uint32_t>(f->box_bytes), static_cast<uint32_t>(kDecodeTileRows),
                       false, "the decode tiles", promotion);
}

bool decode_gemv_launch(const WeightMatrix& w, Activations a, DecodeGemvLaunch& out, bool allow_pairs) {
  const DecodeFormat* f = decode_format(w.type);
  const int chunk_units = f ? f->chunk_units : 0;
  if (!g_decode_enabled || chunk_units == 0 || a == Activations::f32) return false;
  const int64_t shared = kDecodeStageBytes + staged_levels_bytes(w.k, a);
  const int64_t sm_count = cuda::Context::get().info().sm_count;  // the driver is initialized from here on
  if (shared + kDecodeStaticBytes > shared_optin_bytes()) return false;
  // Items: rows cut into chunks, or (decode_pairs_pay) row pairs cut into half chunks. Warps per
  // item: split items (each warp at least one of its chunks) until the items fill every warp.
  const bool pairs = allow_pairs && decode_pairs_pay(*f, w.n_out, w.k);
  const int64_t n_chunks = pairs ? decode_half_chunks_per_row(*f, w.k) : decode_chunks_per_row(*f, w.k);
  const int64_t n_items = pairs ? (w.n_out + 1) / 2 : w.n_out;
  int group = 1;
  while (group < kDecodeWarps && 2 * group <= n_chunks && n_items * group < kDecodeWarps * sm_count) group *= 2;
  const int64_t items_per_block = kDecodeWarps / group;
  out.blocks = static_cast<unsigned>(std::min(sm_count, (n_items + items_per_block - 1) / items_per_block));
  out.mode = group | (pairs ? kDecodePairs : 0);
  out.pairs = pairs;
  out.shared_bytes = shared;
  return true;
}

std::string_view activations_name(Activations a) {
  switch (a) {
    case Activations::f32: return "f32";
    case Activations::int8: return "int8";
    case Activations::int8x2: return "int8x2";
  }
  return "?";
}

bool gemv_supports(GgmlType type) { return unit_of(type) != nullptr; }

// The widest row the decode kernel quantizes in every block's prologue; past it the caller quantizes
// once, in the quantizer's own launch. Each block quantizing the whole row is 132 times the work, on
// the product's path: measured on the H200 (scratch GEMV timings, q8_0 int8x2), 4.4 us of a 15.5-us
// 4096 x 12288 product, 1.5 us of a 7.3-us 4096 x 4096 one. With the quantizer launched instead for
// k > 8192 (qwen3-8b's down product), qwen3-8b tg128 went from 308-314 to 327 tok/s; sending the
// 4,096-wide rows there too cost it (324), and qwen3-0.6b's (k <= 3072) lost 1-2% the same way.
// LATHE_QUANTIZING_ROW_MAX_K=K sets it at the first use (measurements); set_quantizing_row_max_k after.
namespace {
int64_t g_quantizing_row_max_k = [] {
  const char* v = std::getenv("LATHE_QUANTIZING_ROW_MAX_K");
  return v && *v ? std::max<int64_t>(0, std::atoll(v)) : int64_t{8192};
}();
}  // namespace

bool gemv_quantizing_row(const WeightMatrix& w, Activations a, CUdeviceptr x, CUdeviceptr y, CUstream stream) {
  const Unit* u = unit_of(w.type);
  if (!u || w.n_expert != 1 || a == Activations::f32 || w.k % 128 != 0) return false;  // whole warps of blocks
  if (w.k > g_quantizing_row_max_k) return false;
  LATHE_CHECK(x % 16 == 0 && y % 4 == 0);
  return launch_decode_gemv(w, a, 0, y, stream, x);
}

void set_decode_gemv_enabled(bool enabled) { g_decode_enabled = enabled; }

DecodeTiles decode_tiles_named(std::string_view v) {
  if (v == "0" || v == "off") return DecodeTiles::off;
  if (v.empty() || v == "1" || v == "all") return DecodeTiles::all;
  if (v == "merged") return DecodeTiles::merged;
  fail("LATHE_DECODE_TILES={}: it takes 0 (off), merged (the merged products) or 1 (every decode product)", v);
}

DecodeTiles set_decode_tiles(DecodeTiles tiles) {
  const DecodeTiles before = decode_tiles_setting();
  g_decode_tiles = tiles;
  return before;
}

int64_t set_quantizing_row_max_k(int64_t k) { return std::exchange(g_quantizing_row_max_k, k); }
int64_t quantizing_row_max_k() { return g_quantizing_row_max_k; }

int decode_early_requests() {
  static const int forced = [] {
    const char* v = std::getenv("LATHE_DECODE_PREFETCH");
    if (!v || !*v) return -1;
    if (std::string(v) == "off") return 0;
    return 1 + std::clamp(std::atoi(v), 0, 31);
  }();
  // The L2 requests lost on every model measured: the ring's only (and with the ring's fills held
  // past x, LATHE_GEMV1_BEFORE_WAIT < 3, the kernels ask L2 for none before the wait).
  return forced >= 0 ? forced : 1;
}

int64_t quantized_activation_bytes(int64_t rows, int64_t k, Activations a) {
  if (a == Activations::f32) return 0;
  return rows * k * (a == Activations::int8x2 ? 2 : 1) + rows * (k / 32) * 16;
}

QuantizedPointers quantized_pointers(const QuantizedOut& out, int64_t rows, int64_t k) {
  QuantizedPointers p;
  if (out.q == 0 || out.a == Activations::f32) return p;
  if (k % 32 != 0 || out.q % 16 != 0) fail("a quantized output needs rows of a multiple of 32 values, got {}", k);
  const ActPointers a = act_pointers(out.a, out.q, rows, k);
  p.q1 = a.q1;
  p.q2 = a.q2;
  p.ds = a.ds;
  p.two_words = out.a == Activations::int8x2;
  return p;
}

void quantize_activations(CUdeviceptr x, int64_t rows, int64_t k, Activations a, CUdeviceptr q, CUstream stream) {
  LATHE_CHECK(a != Activations::f32 && k % 32 == 0 && rows > 0 && q % 16 == 0);
  const ActPointers p = act_pointers(a, q, rows, k);
  const int64_t n_blocks = rows * (k / 32);
  int kk = static_cast<int>(k), n_rows = static_cast<int>(rows), two = a == Activations::int8x2;
  CUdeviceptr q1 = p.q1, q2 = p.q2, ds = p.ds;
  cuda::launch(kernel("lathe_quantize_act"), {static_cast<unsigned>((n_blocks + 7) / 8), 1, 1}, {256, 1, 1}, 0,
               stream, {&x, &kk, &n_rows, &two, &q1, &q2, &ds}, "launching the activation quantizer");
}

void gemv(const WeightMatrix& w, Activations a, CUdeviceptr x, int64_t n_rows, CUdeviceptr y, CUstream stream) {
  const Unit& u = checked_unit(w, "GEMV");
  if (n_rows < 1 || n_rows > 8) fail("GEMV: {} rows; the decode product takes 1 to 8 (use matmul)", n_rows);
  LATHE_CHECK(w.n_expert == 1);
  LATHE_CHECK(x % 16 == 0 && y % 4 == 0);
  if (n_rows == 1 && launch_decode_gemv(w, a, x, y, stream)) return;
  launch_gemv(w, u, a, x, n_rows, n_rows, 1, nullptr, y, stream);
}

void gemv_experts(const WeightMatrix& w, Activations a, CUdeviceptr x, int64_t n_rows, const ExpertRouting& routing,
                  CUdeviceptr y, CUstream stream) {
  const Unit& u = checked_unit(w, "expert GEMV");
  LATHE_CHECK(routing.ids != 0 && routing.top_k >= 1 && n_rows >= 1);
  const int64_t tasks = routing.combine ? n_rows : n_rows * routing.top_k;
  if (tasks > 65535) fail("expert GEMV: {} rows x {} experts is more than one launch takes", n_rows, routing.top_k);
  const int64_t x_rows = routing.x_per_slot ? n_rows * routing.top_k : n_rows;
  launch_gemv(w, u, a, x, x_rows, 1, tasks, &routing, y, stream);
}

void gather_rows(const WeightMatrix& table, CUdeviceptr ids, int64_t n_ids, CUdeviceptr out, CUstream stream) {
  const Unit& u = checked_unit(table, "row gather");
  LATHE_CHECK(out % 32 == 0 && n_ids >= 0 && n_ids <= 65535);
  if (n_ids == 0) return;
  long long row_bytes = lathe::row_bytes(table.type, table.k);
  int n_cols = static_cast<int>(table.k);
  CUdeviceptr t = table.data;
  const unsigned blocks = static_cast<unsigned>((table.k / 8 + 255) / 256);
  cuda::launch(kernel(std::string("lathe_gather_") + u.name), {blocks, static_cast<unsigned>(n_ids), 1}, {256, 1, 1},
               0, stream, {&t, &row_bytes, &ids, &n_cols, &out}, "launching the row gather");
}

void matmul(const WeightMatrix& w, CUdeviceptr x, int64_t n_rows, CUdeviceptr y, CUstream stream) {
  const Unit& u = checked_unit(w, "batched product");
  LATHE_CHECK(w.n_expert == 1 && x % 16 == 0 && n_rows >= 1 && (n_rows + 63) / 64 <= 65535);
  long long row_bytes = lathe::row_bytes(w.type, w.k);
  int rows = static_cast<int>(n_rows), k = static_cast<int>(w.k), n_out = static_cast<int>(w.n_out);
  CUdeviceptr wp = w.data;
  const unsigned gx = static_cast<unsigned>((w.n_out + 63) / 64), gy = static_cast<unsigned>((n_rows + 63) / 64);
  cuda::launch(kernel(std::string("lathe_matmul_") + u.name), {gx, gy, 1}, {256, 1, 1}, 0, stream,
               {&wp, &row_bytes, &x, &y, &rows, &k, &n_out}, "launching the batched product");
}

}  // namespace lathe::kernels
