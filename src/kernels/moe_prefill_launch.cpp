#include "kernels/moe_prefill_launch.h"

#include "base/error.h"
#include "gguf/block_format.h"
#include "kernels/decode_stream.h"
#include "kernels/gemm_launch.h"
#include "kernels/gemm_wgmma_launch.h"
#include "kernels/library.h"
#include "kernels/moe_wgmma_launch.h"
#include "kernels/route_launch.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace lathe::kernels {
namespace {

constexpr int kMaxExperts = 1024;  // moe_prefill.cuh's shared arrays
constexpr int64_t kGroupSharedBytes = 96 * 1024;
constexpr int kGateUpBn = 64, kDownBn = 128;  // per matrix; moe_grouped_gemm.cuh's instances

int g_row_tile = 0, g_stages = 0;
MoePrefillEngine g_engine = MoePrefillEngine::automatic;

struct GroupedFormat {
  const char* name;
  int lines;  // 16-byte lines of a staged 256-value tile (gemm_blocks.cuh)
};

const GroupedFormat* grouped_format(GgmlType t) {
  static const GroupedFormat q8_0{"q8_0", 18}, q4_k{"q4_k", 9}, q6_k{"q6_k", 14};
  switch (t) {
    case GgmlType::Q8_0: return &q8_0;
    case GgmlType::Q4_K: return &q4_k;
    case GgmlType::Q6_K: return &q6_k;
    default: return nullptr;
  }
}

// Mirrors LatheMoeGemmLayout (moe_grouped_gemm.cuh).
unsigned grouped_shared_bytes(const GroupedFormat& f, bool x2, int bm, int bn, int n_mat, int stages) {
  const int stage = n_mat * bn * (f.lines | 1) * 16 + bm * 256 * (x2 ? 2 : 1) + bm * 128;
  return static_cast<unsigned>(stages * stage + n_mat * bn * 336 + bm * 4);
}

// Stages of the grouped products' k-loop at 32-row tiles: 1 (two blocks an SM; gate/up 432 vs 522 us,
// down 236 vs 289 at the Qwen3-30B-A3B layer under int8x2; pp512 9,858 vs 8,740 tok/s), or 2 when
// forced or asked for with LATHE_MOE_STAGES=2. 64-row tiles always take 2 (one stage would not fit
// two blocks an SM).
int grouped_stages(int bm) {
  static const int env = [] {
    const char* v = std::getenv("LATHE_MOE_STAGES");
    return v && std::string(v) == "2" ? 2 : 1;
  }();
  return bm == 32 ? (g_stages != 0 ? g_stages : env) : 2;
}

int64_t align16(int64_t n) { return (n + 15) / 16 * 16; }

bool shape_ok(const WeightMatrix& w) {
  return grouped_format(w.type) && w.k > 0 && w.k % 32 == 0 && w.k % block_format(w.type).block_size == 0 &&
         w.k < (int64_t{1} << 30) && w.n_out > 0 && w.n_out < (int64_t{1} << 30) && w.n_expert >= 1 &&
         w.n_expert <= kMaxExperts;  // data's alignment is checked at launch: the planner asks before it has pointers
}

void launch_grouped(const char* what, const WeightMatrix& w0, const WeightMatrix* w1, Activations a, CUdeviceptr xq,
                    int64_t x_rows, CUdeviceptr pair_of, int64_t rows, int64_t top_k, int bm, CUdeviceptr group,
                    CUdeviceptr y, CUstream stream) {
  const GroupedFormat* f = grouped_format(w0.type);
  LATHE_CHECK(f && a != Activations::f32 && (bm == 32 || bm == 64) && xq % 16 == 0 && y % 4 == 0);
  LATHE_CHECK(w0.data % 16 == 0 && (!w1 || w1->data % 16 == 0));
  const bool x2 = a == Activations::int8x2;
  const int n_mat = w1 ? 2 : 1, bn = w1 ? kGateUpBn : kDownBn;
  const MoeGroupView v = moe_group_view(group, rows, top_k, w0.n_expert);
  const int64_t pairs = rows * top_k;
  CUdeviceptr p0 = w0.data, p1 = w1 ? w1->data : w0.data, q1 = xq, q2 = x2 ? xq + x_rows * w0.k : 0;
  CUdeviceptr ds = xq + x_rows * w0.k * (x2 ? 2 : 1), po = pair_of, tiles = v.tiles, nt = v.n_tiles, yp = y;
  long long row_bytes = lathe::row_bytes(w0.type, w0.k), expert_bytes = row_bytes * w0.n_out;
  int kk = static_cast<int>(top_k), k = static_cast<int>(w0.k), n_out = static_cast<int>(w0.n_out);
  const int stages = grouped_stages(bm);
  const cuda::Dim3 grid{static_cast<unsigned>(moe_max_tiles(pairs, w0.n_expert, bm)),
                        static_cast<unsigned>((w0.n_out + bn - 1) / bn), 1};
  const std::string name = std::string("lathe_moe_grouped_") + what + "_" + f->name + "_" +
                           std::string(activations_name(a)) + "_" + std::to_string(bm) + (stages == 1 ? "_1s" : "");
  cuda::launch(kernel(name), grid, {256, 1, 1}, grouped_shared_bytes(*f, x2, bm, bn, n_mat, stages), stream,
               {&p0, &p1, &row_bytes, &expert_bytes, &q1, &q2, &ds, &po, &kk, &tiles, &nt, &yp, &k, &n_out},
               "launching the mixture's grouped product");
}

}  // namespace

int moe_prefill_row_tile(int64_t rows, int64_t top_k, int64_t n_expert) {
  if (g_row_tile != 0) return g_row_tile;
  // Measured at the Qwen3-30B-A3B layer (512 rows, 32 pairs an expert on average), whole mixture:
  // int8 32 rows one stage 728 us, 64 rows 747, 32 rows two stages 785; int8x2 893 / 949 / 942.
  const int64_t pairs = rows * top_k, used = std::min(pairs, n_expert);
  return pairs >= 64 * used ? 64 : 32;
}

void set_moe_prefill_row_tile(int bm) { g_row_tile = bm; }

void set_moe_prefill_stages(int stages) { g_stages = stages; }

int64_t moe_max_tiles(int64_t pairs, int64_t n_expert, int bm) {
  return (pairs + std::min(n_expert, pairs) * (bm - 1)) / bm;
}

int64_t moe_group_bytes(int64_t rows, int64_t top_k, int64_t n_expert) {
  const int64_t pairs = rows * top_k;
  return align16((n_expert + 1 + 2 * pairs + 4) * 4) + 16 * moe_max_tiles(pairs, n_expert, 32);
}

MoeGroupView moe_group_view(CUdeviceptr group, int64_t rows, int64_t top_k, int64_t n_expert) {
  const int64_t pairs = rows * top_k;
  MoeGroupView v;
  v.offsets = group;
  v.pair_of = group + static_cast<CUdeviceptr>((n_expert + 1) * 4);
  v.pos_of = v.pair_of + static_cast<CUdeviceptr>(pairs * 4);
  v.n_tiles = v.pos_of + static_cast<CUdeviceptr>(pairs * 4);
  v.tiles = group + static_cast<CUdeviceptr>(align16((n_expert + 1 + 2 * pairs + 4) * 4));
  return v;
}

MoeGrouping moe_group_reference(const std::vector<int32_t>& ids, int64_t rows, int64_t top_k, int64_t n_expert,
                                int bm) {
  const int64_t pairs = rows * top_k;
  LATHE_CHECK(static_cast<int64_t>(ids.size()) == pairs);
  MoeGrouping g;
  g.offsets.assign(static_cast<size_t>(n_expert + 1), 0);
  for (int32_t e : ids) g.offsets[static_cast<size_t>(e) + 1]++;
  for (int64_t e = 0; e < n_expert; ++e) g.offsets[e + 1] += g.offsets[e];
  g.pair_of.assign(static_cast<size_t>(pairs), 0);
  g.pos_of.assign(static_cast<size_t>(pairs), 0);
  std::vector<int32_t> next(g.offsets.begin(), g.offsets.end() - 1);
  for (int64_t i = 0; i < pairs; ++i) {  // pairs in row order: within an expert, rows ascend
    const int32_t p = next[static_cast<size_t>(ids[i])]++;
    g.pair_of[p] = static_cast<int32_t>(i);
    g.pos_of[i] = p;
  }
  for (int64_t e = 0; e < n_expert; ++e)
    for (int32_t s = g.offsets[e]; s < g.offsets[e + 1]; s += bm)
      g.tiles.insert(g.tiles.end(), {static_cast<int32_t>(e), s, std::min(bm, g.offsets[e + 1] - s), 0});
  return g;
}

void moe_group(CUdeviceptr ids, int64_t rows, int64_t top_k, int64_t n_expert, int bm, CUdeviceptr group,
               CUstream stream) {
  if (n_expert < 1 || n_expert > kMaxExperts) fail("mixture grouping: {} experts; it takes 1 to {}", n_expert, kMaxExperts);
  if (rows < 1 || top_k < 1 || top_k > n_expert || rows * top_k >= (int64_t{1} << 30))
    fail("mixture grouping: {} rows, top {} of {}", rows, top_k, n_expert);
  LATHE_CHECK(group % 16 == 0 && (bm == 32 || bm == 64 || bm == 128));  // 128: the wgmma products' tile
  const MoeGroupView v = moe_group_view(group, rows, top_k, n_expert);
  // Rows are marked 32 * words at a time: 2 n_expert (words + 1) words of shared memory, <= 96 KB.
  const int64_t fit = kGroupSharedBytes / (8 * n_expert) - 1;
  int words = static_cast<int>(std::max<int64_t>(1, std::min((rows + 31) / 32, fit)));
  const unsigned shared = static_cast<unsigned>(8 * n_expert * (words + 1));
  int r = static_cast<int>(rows), kk = static_cast<int>(top_k), ne = static_cast<int>(n_expert), b = bm;
  CUdeviceptr off = v.offsets, po = v.pair_of, ps = v.pos_of, nt = v.n_tiles, tiles = v.tiles;
  cuda::launch(kernel("lathe_moe_group"), {1, 1, 1}, {1024, 1, 1}, shared, stream,
               {&ids, &r, &kk, &ne, &b, &words, &off, &po, &ps, &nt, &tiles}, "launching the mixture's grouping");
}

void moe_grouped_gate_up(const WeightMatrix& gate, const WeightMatrix& up, Activations a, CUdeviceptr x_q,
                         int64_t rows, int64_t top_k, int bm, CUdeviceptr group, CUdeviceptr h, CUstream stream) {
  if (gate.type != up.type || gate.k != up.k || gate.n_out != up.n_out || gate.n_expert != up.n_expert)
    fail("mixture gate/up: gate and up differ in format or shape");
  LATHE_CHECK(shape_ok(gate));
  const MoeGroupView v = moe_group_view(group, rows, top_k, gate.n_expert);
  launch_grouped("gate_up", gate, &up, a, x_q, rows, v.pair_of, rows, top_k, bm, group, h, stream);
}

void moe_grouped_down(const WeightMatrix& down, Activations a, CUdeviceptr h_q, int64_t rows, int64_t top_k, int bm,
                      CUdeviceptr group, CUdeviceptr y, CUstream stream) {
  LATHE_CHECK(shape_ok(down));
  launch_grouped("down", down, nullptr, a, h_q, rows * top_k, 0, rows, top_k, bm, group, y, stream);
}

void moe_combine(CUdeviceptr y, int64_t rows, int64_t top_k, int64_t n_expert, int64_t n_out, CUdeviceptr group,
                 CUdeviceptr weights, CUdeviceptr out, CUstream stream) {
  LATHE_CHECK(rows >= 1 && rows < (int64_t{1} << 31) && n_out >= 1 && y % 4 == 0 && out % 4 == 0);
  const MoeGroupView v = moe_group_view(group, rows, top_k, n_expert);
  CUdeviceptr yp = y, ps = v.pos_of, w = weights, o = out;
  int kk = static_cast<int>(top_k), n = static_cast<int>(n_out);
  cuda::launch(kernel("lathe_moe_combine"), {static_cast<unsigned>(rows), 1, 1}, {256, 1, 1}, 0, stream,
               {&yp, &ps, &w, &kk, &n, &o}, "launching the mixture's combine");
}

void moe_router_logits(const WeightMatrix& router, CUdeviceptr x, int64_t rows, CUdeviceptr logits, CUstream stream) {
  if (router.type != GgmlType::F32 || router.n_expert != 1 || router.k % 4 != 0 || x % 16 != 0 || rows > int64_t{65535} * 16 || router.n_out > 65535 * 32) {
    matmul(router, x, rows, logits, stream);
    return;
  }
  CUdeviceptr w = router.data;
  int r = static_cast<int>(rows), k = static_cast<int>(router.k), ne = static_cast<int>(router.n_out);
  const cuda::Dim3 grid{static_cast<unsigned>((router.n_out + 15) / 16), static_cast<unsigned>((rows + 15) / 16), 1};
  cuda::launch(kernel("lathe_moe_router_f32"), grid, {256, 1, 1}, 0, stream, {&w, &x, &r, &k, &ne, &logits},
               "launching the mixture's router product");
}

int64_t moe_prefill_quantized_bytes(int64_t rows, int64_t top_k, int64_t n_embd, int64_t n_ff, Activations a) {
  return std::max(quantized_activation_bytes(rows, n_embd, a), quantized_activation_bytes(rows * top_k, n_ff, a));
}

bool moe_prefill_applies(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down, Activations a,
                         int64_t top_k) {
  if (a == Activations::f32 || !shape_ok(gate) || !shape_ok(down) || gate.type != up.type || gate.k != up.k ||
      gate.n_out != up.n_out || gate.n_expert != up.n_expert || down.n_expert != gate.n_expert ||
      down.k != gate.n_out || down.n_out != gate.k || top_k < 1 || top_k > gate.n_expert)
    return false;
  const bool x2 = a == Activations::int8x2;
  const unsigned need = std::max(grouped_shared_bytes(*grouped_format(gate.type), x2, 64, kGateUpBn, 2, 2),
                                 grouped_shared_bytes(*grouped_format(down.type), x2, 64, kDownBn, 1, 2));
  return need + 1024 <= shared_optin_bytes();
}

void moe_prefill(const WeightMatrix& router, const WeightMatrix& gate, const WeightMatrix& up,
                 const WeightMatrix& down, Activations a, CUdeviceptr x, int64_t rows, int64_t top_k, bool renormalize,
                 CUdeviceptr out, const MoePrefillScratch& s, CUstream stream) {
  if (!moe_prefill_applies(gate, up, down, a, top_k))
    fail("mixture prefill: no grouped kernels for {} experts of {} under {}", gate.n_expert, ggml_type_name(gate.type),
         activations_name(a));
  const int64_t n_expert = gate.n_expert, pairs = rows * top_k;
  moe_router_logits(router, x, rows, s.logits, stream);
  route_top_k(s.ids, s.weights, s.logits, rows, n_expert, top_k, renormalize, stream);
  if (moe_prefill_engine(gate, up, down) == MoePrefillEngine::wgmma) {
    const int bn = moe_wgmma_row_tile(rows, top_k, n_expert);
    moe_group(s.ids, rows, top_k, n_expert, bn, s.group, stream);
    moe_gather_f16(x, rows, gate.k, top_k, n_expert, s.group, s.y, stream);
    moe_wgmma_gate_up(gate, up, s.y, rows, top_k, bn, s.group, s.h, stream);
    moe_wgmma_down(down, s.h, rows, top_k, bn, s.group, s.y, stream);
  } else {
    const int bm = moe_prefill_row_tile(rows, top_k, n_expert);
    quantize_activations(x, rows, gate.k, a, s.q, stream);
    moe_group(s.ids, rows, top_k, n_expert, bm, s.group, stream);
    moe_grouped_gate_up(gate, up, a, s.q, rows, top_k, bm, s.group, s.h, stream);
    quantize_activations(s.h, pairs, gate.n_out, a, s.q, stream);
    moe_grouped_down(down, a, s.q, rows, top_k, bm, s.group, s.y, stream);
  }
  moe_combine(s.y, rows, top_k, n_expert, down.n_out, s.group, s.weights, out, stream);
}

void set_moe_prefill_engine(MoePrefillEngine engine) { g_engine = engine; }

namespace {
// The engine asked for: set_moe_prefill_engine's, else LATHE_MOE_PREFILL=int8's, else wgmma.
MoePrefillEngine engine_asked() {
  static const bool env_int8 = [] {
    const char* v = std::getenv("LATHE_MOE_PREFILL");
    return v && std::string(v) == "int8";
  }();
  return g_engine != MoePrefillEngine::automatic ? g_engine : env_int8 ? MoePrefillEngine::int8 : MoePrefillEngine::wgmma;
}
}  // namespace

bool moe_prefill_rounds_f16(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down) {
  return engine_asked() != MoePrefillEngine::int8 && shape_ok(gate) && shape_ok(up) && shape_ok(down) &&
         moe_wgmma_supports(gate, up, down);
}

MoePrefillEngine moe_prefill_engine(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down) {
  const MoePrefillEngine want = engine_asked();
  if (want == MoePrefillEngine::int8) return want;
  std::string why;
  const bool ok = moe_wgmma_supports(gate, up, down) && gemm_wgmma_available(&why);
  if (!ok && g_engine == MoePrefillEngine::wgmma)
    fail("mixture prefill: the wgmma products do not take {} experts of {} here{}", gate.n_expert,
         ggml_type_name(gate.type), why.empty() ? "" : ": " + why);
  return ok ? MoePrefillEngine::wgmma : MoePrefillEngine::int8;
}

}  // namespace lathe::kernels
