#include "kernels/moe_launch.h"

#include "gguf/block_format.h"
#include "kernels/elementwise_launch.h"
#include "kernels/decode_stream.h"
#include "kernels/library.h"
#include "kernels/norm_launch.h"
#include "kernels/route_launch.h"
#include "runtime/cuda_api.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace lathe::kernels {
namespace {

// Mirrors moe_route.cuh (cluster, warps, rows) and gemv_decode.cuh (warps; stages and formats: decode_stream.h).
constexpr int kRouteCluster = 8, kRouteWarps = 16, kMaxRows = 8, kMaxTopK = 32;
constexpr int kWarps = 16;

bool g_enabled = true;
// moe_route.cuh's options, none by default: on the H200 (MoeGpu.Timing, 2026-11-29) the router took
// 8.1 us with none, 8.2 with the L2 prefetch, 8.7 with the register top k, 8.8 with both. Flag 8 (the
// wide router's sorted top k) is prepared, not yet measured. LATHE_MOE_ROUTE_FLAGS=N sets them at
// start (a measuring knob).
int g_route_flags = [] {
  const char* v = std::getenv("LATHE_MOE_ROUTE_FLAGS");
  return v ? std::atoi(v) & 15 : 0;
}();

const char* route_format(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return "f32";
    case GgmlType::F16: return "f16";
    case GgmlType::BF16: return "bf16";
    case GgmlType::Q8_0: return "q8_0";
    case GgmlType::Q4_0: return "q4_0";
    case GgmlType::Q4_1: return "q4_1";
    case GgmlType::Q5_0: return "q5_0";
    case GgmlType::Q5_1: return "q5_1";
    case GgmlType::Q2_K: return "q2_k";
    case GgmlType::Q3_K: return "q3_k";
    case GgmlType::Q4_K: return "q4_k";
    case GgmlType::Q5_K: return "q5_k";
    case GgmlType::Q6_K: return "q6_k";
    default: return nullptr;
  }
}

// Parts a router row is cut into: enough (expert, part) units for the cluster's warps, each part at
// least 32 pieces of 8 values (one a lane).
int route_parts(int64_t n_expert, int64_t k) {
  int parts = 1;
  while (n_expert * parts * 2 <= kRouteCluster * kRouteWarps && k / 8 >= 64 * parts) parts *= 2;
  return parts;
}

int64_t route_shared_bytes(int64_t rows, int64_t n_expert, int64_t k) {
  return rows * (k + n_expert * (route_parts(n_expert, k) + 1)) * 4;
}

// moe_route_wide.cuh: blocks of kWideWarps warps, one (expert, part) unit a warp, each staged in
// unit_stride bytes: the unit's units of the format (one more where a part starts inside one) and the
// 16-byte line's head, in 16-byte lines.
constexpr int kWideWarps = 4, kWideNormSets = 4;

int64_t wide_unit_stride(const WeightMatrix& router) {
  const int64_t parts = route_parts(router.n_out, router.k), pieces = router.k / 8;
  const int64_t per_part = (pieces + parts - 1) / parts;
  const int64_t uv = std::max<int64_t>(8, block_format(router.type).block_size), ub = lathe::row_bytes(router.type, uv);
  const int64_t bytes = ((per_part * 8 + uv - 1) / uv + 1) * ub;  // at most; the copy adds < 31 bytes
  return (bytes + 30 + 15) / 16 * 16;
}

int64_t wide_shared_bytes(const WeightMatrix& router, int64_t rows) {
  return rows * router.k * 4 + kWideWarps * wide_unit_stride(router) + rows * router.n_out * 4;
}

bool experts_apply(const WeightMatrix& w, Activations a, int64_t top_k, int64_t staged_values) {
  if (!g_enabled || a == Activations::f32 || !decode_format(w.type) || top_k < 1 || top_k > kMaxTopK) return false;
  if (w.k % block_format(w.type).block_size != 0 || w.k % 32 != 0 || w.n_out <= 0 || w.n_out > (1 << 24)) return false;
  return kDecodeStageBytes + staged_levels_bytes(staged_values, a) + kDecodeStaticBytes <= shared_optin_bytes();
}

// Warps per item: each warp of a group takes >= 1 chunk of every item (group <= chunks); among those,
// the fewest rounds x chunks a warp, then the most SMs busy, then the fewest warps an item.
int choose_group(int64_t n_items, int64_t chunks, int64_t blocks_per_row) {
  int best = 1;
  int64_t best_cost = -1, best_blocks = 0;
  for (int g = 1; g <= kWarps && g <= chunks; g *= 2) {
    const int64_t per_block = kWarps / g;
    const int64_t blocks = std::min(blocks_per_row, (n_items + per_block - 1) / per_block);
    const int64_t n_groups = blocks * per_block;
    const int64_t cost = (n_items + n_groups - 1) / n_groups * ((chunks + g - 1) / g);
    if (best_cost < 0 || cost < best_cost || (cost == best_cost && blocks > best_blocks)) {
      best = g;
      best_cost = cost;
      best_blocks = blocks;
    }
  }
  return best;
}

struct ExpertShape {
  int group = 1;
  unsigned blocks = 1;  // rows x blocks per row
};

ExpertShape expert_shape(int64_t rows, int64_t n_items, int64_t chunks) {
  const int64_t sm_count = cuda::Context::get().info().sm_count;
  const int64_t per_row = std::max<int64_t>(1, sm_count / rows);
  ExpertShape s;
  s.group = choose_group(n_items, chunks, per_row);
  const int64_t per_block = kWarps / s.group;
  s.blocks = static_cast<unsigned>(rows * std::min(per_row, (n_items + per_block - 1) / per_block));
  return s;
}

// Rows of the down stack a chunk carries (moe_decode.cuh, lathe_moe_seg_stride): several experts' row o
// when a row is one chunk and more than one fits a ring slot (2,560 bytes), else 1.
int down_segments(const WeightMatrix& down, int64_t top_k) {
  const DecodeFormat& f = *decode_format(down.type);
  const int64_t units = down.k / f.unit_values;
  if (units > f.chunk_units) return 1;
  const int64_t stride = (lathe::row_bytes(down.type, down.k) + 19 + 15) / 16 * 16;
  // The kernel's segs > 1 dot takes at most kMoeDownRounds rounds of 32 pieces (32 values each) a chunk.
  const int64_t most = std::max<int64_t>(1, 32 * kMoeDownRounds / (down.k / 32));
  return static_cast<int>(std::clamp<int64_t>(std::min(2560 / stride, most), 1, top_k));
}

std::string expert_kernel(const char* what, GgmlType t, Activations a) {
  return std::string("lathe_moe_") + what + "_" + decode_format(t)->name + "_" + std::string(activations_name(a));
}

void check_rows(int64_t rows, int64_t top_k, const char* what) {
  if (rows < 1 || rows > kMaxRows) fail("{}: {} rows; the decode mixture takes 1 to {}", what, rows, kMaxRows);
  if (top_k < 1) fail("{}: top k of {}", what, top_k);
}

}  // namespace

// The cluster router's warps a block (LATHE_MOE_ROUTE_WARPS=8 at start, a measuring knob): 16, or 8
// where the norm prologue's threads and weights fit 8 warps (the lathe_moe_route8_ kernels).
int g_route_cluster_warps = [] {
  const char* v = std::getenv("LATHE_MOE_ROUTE_WARPS");
  return v && std::string(v) == "8" ? 8 : kRouteWarps;
}();

void set_moe_kernels_enabled(bool enabled) { g_enabled = enabled; }
void set_moe_route_cluster_warps(int warps) { g_route_cluster_warps = warps == 8 ? 8 : kRouteWarps; }
void set_moe_route_flags(int flags) { g_route_flags = flags; }

namespace {
// LATHE_MOE_GAPS=1: the router kernel prints each row's k-th and (k+1)-th logits (moe_route.cuh's
// report, which rides on its register top k), to tell a near-tie in the router from a bug.
int route_report_flag() {
  static const int flag = [] {
    const char* v = std::getenv("LATHE_MOE_GAPS");
    return v && std::string(v) == "1" ? 2 | 4 : 0;
  }();
  return flag;
}
}  // namespace

bool moe_route_applies(const WeightMatrix& router, int64_t rows, int64_t top_k) {
  if (!g_enabled || !route_format(router.type) || router.n_expert != 1) return false;
  if (rows < 1 || rows > kMaxRows || top_k < 1 || top_k > router.n_out || router.n_out > 1024) return false;
  if (router.k % 32 != 0 || router.k % block_format(router.type).block_size != 0) return false;
  return route_shared_bytes(rows, router.n_out, router.k) + 1024 <= shared_optin_bytes();
}

bool moe_route_norm_applies(const WeightMatrix& router, int64_t rows, int64_t top_k) {
  return moe_route_applies(router, rows, top_k) && block_threads(router.k) <= 32 * kRouteWarps &&
         router.k <= 8 * 32 * kRouteWarps;  // 8 norm weights a thread (moe_route.cuh)
}

bool moe_gate_up_applies(const WeightMatrix& gate, const WeightMatrix& up, Activations a, int64_t top_k) {
  return gate.type == up.type && gate.k == up.k && gate.n_out == up.n_out && experts_apply(gate, a, top_k, gate.k);
}

bool moe_down_applies(const WeightMatrix& down, Activations a, int64_t top_k) {
  return experts_apply(down, a, top_k, top_k * down.k);
}

int64_t moe_route_part_bytes(const WeightMatrix& router, int64_t rows) {
  return rows * route_parts(router.n_out, router.k) * router.n_out * 4;
}

bool moe_route_wide_chosen() {
  static const bool on = [] {
    const char* v = std::getenv("LATHE_MOE_ROUTE");
    return v && std::string(v) == "wide";
  }();
  return on;
}

bool moe_route_wide_applies(const WeightMatrix& router, int64_t rows, int64_t top_k, bool norm) {
  if (!(norm ? moe_route_norm_applies(router, rows, top_k) : moe_route_applies(router, rows, top_k))) return false;
  if (norm && block_threads(router.k) > 32 * kWideWarps * kWideNormSets) return false;
  return wide_shared_bytes(router, rows) + 1024 <= shared_optin_bytes();
}

void moe_route(const WeightMatrix& router, CUdeviceptr x, int64_t rows, int64_t top_k, bool renormalize,
               CUdeviceptr ids, CUdeviceptr weights, const QuantizedOut& x_q, CUstream stream, CUdeviceptr logits,
               const NormPrologue* norm, const RouteScratch* wide) {
  check_rows(rows, top_k, "mixture router");
  if (top_k > router.n_out) fail("mixture router: top {} of {} experts", top_k, router.n_out);
  LATHE_CHECK(x % 16 == 0);
  LATHE_CHECK(!norm || moe_route_norm_applies(router, rows, top_k));
  if (!moe_route_applies(router, rows, top_k)) {
    const CUdeviceptr l = logits ? logits : launcher_scratch(kScratchMoe, static_cast<size_t>(rows * router.n_out * 4));
    gemv(router, Activations::f32, x, rows, l, stream);
    route_top_k(ids, weights, l, rows, router.n_out, top_k, renormalize, stream);
    if (x_q.q != 0 && x_q.a != Activations::f32) quantize_activations(x, rows, router.k, x_q.a, x_q.q, stream);
    return;
  }
  const QuantizedPointers qp = quantized_pointers(x_q, rows, router.k);
  CUdeviceptr wp = router.data, xp = x, idp = ids, wtp = weights, lp = logits, q1 = qp.q1, q2 = qp.q2, ds = qp.ds;
  long long row_bytes = lathe::row_bytes(router.type, router.k);
  int r = static_cast<int>(rows), k = static_cast<int>(router.k), ne = static_cast<int>(router.n_out);
  int parts = route_parts(router.n_out, router.k), kk = static_cast<int>(top_k), renorm = renormalize ? 1 : 0;
  int two = qp.two_words, flags = g_route_flags | route_report_flag();
  CUdeviceptr nx = norm ? norm->x : 0, ny = norm ? norm->y : 0, nw = norm ? norm->w : 0, ns = norm ? norm->sum : 0;
  float eps = norm ? norm->eps : 0.0f;
  int norm_threads = static_cast<int>(block_threads(router.k));
  LATHE_CHECK(norm_threads <= 32 * kRouteWarps);
  if (wide && moe_route_wide_applies(router, rows, top_k, norm != nullptr)) {
    LATHE_CHECK(wide->part_sums % 4 == 0 && wide->count % 4 == 0 && wide->count != 0);
    CUdeviceptr ps = wide->part_sums, cnt = wide->count, tr = wide->trace;
    int stride = static_cast<int>(wide_unit_stride(router));
    const unsigned blocks = static_cast<unsigned>((router.n_out * parts + kWideWarps - 1) / kWideWarps);
    cuda::launch(kernel(std::string("lathe_moe_route_wide_") + route_format(router.type)), {blocks, 1, 1},
                 {32 * kWideWarps, 1, 1}, static_cast<unsigned>(wide_shared_bytes(router, rows)), stream,
                 {&wp, &row_bytes, &xp, &r, &k, &ne, &parts, &kk, &renorm, &idp, &wtp, &lp, &q1, &q2, &ds, &two,
                  &flags, &nx, &ny, &nw, &eps, &ns, &norm_threads, &ps, &cnt, &stride, &tr},
                 norm ? "launching the wide mixture router with the norm in its prologue"
                      : "launching the wide mixture router");
    return;
  }
  // 8 warps a block take the norm prologue where its threads and its 8 weights a thread fit them.
  const bool eight = g_route_cluster_warps == 8 && (!norm || (norm_threads <= 256 && router.k <= 8 * 256));
  cuda::launch(kernel(std::string(eight ? "lathe_moe_route8_" : "lathe_moe_route_") + route_format(router.type)),
               {kRouteCluster, 1, 1}, {32u * (eight ? 8u : kRouteWarps), 1, 1},
               static_cast<unsigned>(route_shared_bytes(rows, router.n_out, router.k)),
               stream, {&wp, &row_bytes, &xp, &r, &k, &ne, &parts, &kk, &renorm, &idp, &wtp, &lp, &q1, &q2, &ds, &two, &flags,
                        &nx, &ny, &nw, &eps, &ns, &norm_threads},
               norm ? "launching the mixture router with the norm in its prologue" : "launching the mixture router");
}

void moe_gate_up_swiglu(const WeightMatrix& gate, const WeightMatrix& up, Activations a, CUdeviceptr x, int64_t rows,
                        CUdeviceptr ids, int64_t top_k, CUdeviceptr h, CUstream stream, const QuantizedOut& h_q,
                        CUdeviceptr counts) {
  check_rows(rows, top_k, "mixture gate/up");
  if (gate.n_out != up.n_out || gate.k != up.k || gate.n_expert != up.n_expert)
    fail("mixture gate/up: gate is {} x {} x {} but up is {} x {} x {}", gate.n_expert, gate.n_out, gate.k,
         up.n_expert, up.n_out, up.k);
  LATHE_CHECK(x % 16 == 0 && h % 4 == 0 && gate.data % 16 == 0 && up.data % 16 == 0);
  if (!moe_gate_up_applies(gate, up, a, top_k)) {
    const int64_t n = rows * top_k * gate.n_out;
    const CUdeviceptr u = launcher_scratch(kScratchMoe + 1, static_cast<size_t>(n) * 4);
    const ExpertRouting route{ids, top_k, 0, false, false};
    gemv_experts(gate, a, x, rows, route, h, stream);
    gemv_experts(up, a, x, rows, route, u, stream);
    elementwise_binary(ElemBinary::swiglu, h, h, u, n, n, stream);
    if (h_q.q && a != Activations::f32) quantize_activations(h, rows * top_k, gate.n_out, a, h_q.q, stream);
    return;
  }
  LATHE_CHECK(!h_q.q || (h_q.a == a && a != Activations::f32 && h_q.q % 16 == 0 && counts != 0 && counts % 4 == 0));
  const int64_t n_items = top_k * gate.n_out;
  // Items (slot, row): gate's and up's row, as chunks of each, or (decode_pairs_pay) as the paired
  // products' half chunks of both.
  const DecodeFormat& f = *decode_format(gate.type);
  const bool pairs = decode_pairs_pay(f, n_items, gate.k);
  const ExpertShape s = expert_shape(rows, n_items,
                                     pairs ? decode_half_chunks_per_row(f, gate.k) : 2 * decode_chunks_per_row(f, gate.k));
  CUdeviceptr wg = gate.data, wu = up.data, idp = ids, xp = x, hp = h, hq = h_q.q, cp = counts;
  long long row_bytes = lathe::row_bytes(gate.type, gate.k), expert_bytes = row_bytes * gate.n_out;
  int k = static_cast<int>(gate.k), n_ff = static_cast<int>(gate.n_out), r = static_cast<int>(rows);
  int kk = static_cast<int>(top_k), group = s.group | (pairs ? kDecodePairs : 0);
  const unsigned shared = static_cast<unsigned>(kDecodeStageBytes + staged_levels_bytes(gate.k, a));
  cuda::launch(kernel(expert_kernel("gate_up", gate.type, a)), {s.blocks, 1, 1}, {32 * kWarps, 1, 1}, shared, stream,
               {&wg, &wu, &row_bytes, &expert_bytes, &idp, &xp, &hp, &k, &n_ff, &r, &kk, &group, &hq, &cp},
               "launching the mixture's gate/up/SwiGLU");
}

void moe_down_combine(const WeightMatrix& down, Activations a, CUdeviceptr h, bool h_quantized, int64_t rows,
                      CUdeviceptr ids, CUdeviceptr route_w, int64_t top_k, CUdeviceptr out, CUstream stream,
                      bool ids_settled) {
  check_rows(rows, top_k, "mixture down/combine");
  if (h_quantized && a == Activations::f32) fail("mixture down/combine: a quantized h under the f32 contract");
  LATHE_CHECK(h % 16 == 0 && out % 4 == 0 && down.data % 16 == 0);
  if (!moe_down_applies(down, a, top_k)) {
    CUdeviceptr hin = h;
    if (!h_quantized && a != Activations::f32) {
      hin = launcher_scratch(kScratchMoe + 2, static_cast<size_t>(quantized_activation_bytes(rows * top_k, down.k, a)));
      quantize_activations(h, rows * top_k, down.k, a, hin, stream);
    }
    const ExpertRouting combine{ids, top_k, route_w, true, true};
    gemv_experts(down, a, hin, rows, combine, out, stream);
    return;
  }
  const int segs = down_segments(down, top_k);
  const int64_t item_chunks =
      segs > 1 ? (top_k + segs - 1) / segs : top_k * decode_chunks_per_row(*decode_format(down.type), down.k);
  const ExpertShape s = expert_shape(rows, down.n_out, item_chunks);
  CUdeviceptr wp = down.data, idp = ids, rw = route_w, hp = h, op = out;
  long long row_bytes = lathe::row_bytes(down.type, down.k), expert_bytes = row_bytes * down.n_out;
  int h_f32 = h_quantized ? 0 : 1, n_out = static_cast<int>(down.n_out), n_ff = static_cast<int>(down.k);
  int r = static_cast<int>(rows), kk = static_cast<int>(top_k), group = s.group, early = ids_settled ? 1 : 0, sg = segs;
  const unsigned shared = static_cast<unsigned>(kDecodeStageBytes + staged_levels_bytes(top_k * down.k, a));
  cuda::launch(kernel(expert_kernel("down", down.type, a)), {s.blocks, 1, 1}, {32 * kWarps, 1, 1}, shared, stream,
               {&wp, &row_bytes, &expert_bytes, &idp, &rw, &hp, &h_f32, &op, &n_out, &n_ff, &r, &kk, &group, &early,
                &sg},
               "launching the mixture's down/combine");
}

namespace {

// moe_experts_by_slot.cuh's blocks a slot: the SMs shared evenly by the slots (one block an SM).
int64_t experts_blocks_per_slot(int64_t top_k) {
  return std::max<int64_t>(1, cuda::Context::get().info().sm_count / top_k);
}

// Whole down rows a ring chunk carries: the most that fit a slot's 2,520 bytes from a 16-byte line.
int64_t experts_rows_per_chunk(const WeightMatrix& down) {
  return (2520 - 15) / lathe::row_bytes(down.type, down.k);
}

int64_t experts_shared_bytes(const WeightMatrix& gate, const WeightMatrix& down, Activations a) {
  return kDecodeStageBytes + (staged_levels_bytes(gate.k, a) + 15) / 16 * 16 + staged_levels_bytes(down.k, a);
}

}  // namespace

int64_t moe_experts_part_bytes(const WeightMatrix& down, int64_t top_k) { return top_k * down.n_out * 4; }

int64_t moe_experts_count_bytes(int64_t top_k) {
  return (top_k + cuda::Context::get().info().sm_count + 1) * 4;
}

bool moe_experts_by_slot_applies(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down,
                                 Activations a, int64_t rows, int64_t top_k) {
  if (rows != 1 || gate.type != GgmlType::Q8_0 || down.type != GgmlType::Q8_0) return false;
  if (!moe_gate_up_applies(gate, up, a, top_k) || !moe_down_applies(down, a, top_k)) return false;
  if (down.k != gate.n_out || down.n_out != gate.k || top_k > cuda::Context::get().info().sm_count) return false;
  if (decode_pairs_pay(*decode_format(gate.type), top_k * gate.n_out, gate.k)) return false;  // the rows path's h
  if (down.k / decode_format(down.type)->unit_values > decode_format(down.type)->chunk_units) return false;
  if (experts_rows_per_chunk(down) < 1) return false;
  return experts_shared_bytes(gate, down, a) + kDecodeStaticBytes <= shared_optin_bytes();
}

void moe_experts_by_slot(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down, Activations a,
                         CUdeviceptr x, CUdeviceptr ids, CUdeviceptr route_w, int64_t top_k, CUdeviceptr h,
                         CUdeviceptr parts, CUdeviceptr counts, CUdeviceptr out, CUstream stream) {
  if (!moe_experts_by_slot_applies(gate, up, down, a, 1, top_k))
    fail("mixture's experts by slot: these shapes and formats take the two kernels (moe_experts_by_slot_applies)");
  LATHE_CHECK(x % 16 == 0 && h % 16 == 0 && out % 4 == 0 && parts % 4 == 0 && counts % 4 == 0 && counts != 0);
  const int64_t sm_count = cuda::Context::get().info().sm_count;
  // The group the gate/up kernel would choose for one row (its sums, so h's bits, depend on it only).
  const int group = choose_group(top_k * gate.n_out, 2 * decode_chunks_per_row(*decode_format(gate.type), gate.k),
                                 sm_count);
  const int64_t bps = experts_blocks_per_slot(top_k);
  CUdeviceptr wg = gate.data, wu = up.data, idp = ids, rw = route_w, xp = x, hp = h, wd = down.data;
  CUdeviceptr pp = parts, cp = counts, op = out;
  long long gu_row_bytes = lathe::row_bytes(gate.type, gate.k), gu_expert_bytes = gu_row_bytes * gate.n_out;
  long long d_row_bytes = lathe::row_bytes(down.type, down.k), d_expert_bytes = d_row_bytes * down.n_out;
  int k = static_cast<int>(gate.k), n_ff = static_cast<int>(gate.n_out), kk = static_cast<int>(top_k), g = group;
  int n_out = static_cast<int>(down.n_out), rpc = static_cast<int>(experts_rows_per_chunk(down));
  int b = static_cast<int>(bps);
  const unsigned shared = static_cast<unsigned>(experts_shared_bytes(gate, down, a));
  cuda::launch(kernel(std::string("lathe_moe_experts_") + decode_format(gate.type)->name + "_" +
                      decode_format(down.type)->name + "_" + std::string(activations_name(a))),
               {static_cast<unsigned>(top_k * bps), 1, 1}, {32 * kWarps, 1, 1}, shared, stream,
               {&wg, &wu, &gu_row_bytes, &gu_expert_bytes, &idp, &rw, &xp, &k, &n_ff, &kk, &g, &hp, &wd, &d_row_bytes,
                &d_expert_bytes, &n_out, &rpc, &pp, &cp, &b, &op},
               "launching the mixture's experts by slot");
}

namespace {

// moe_single_launch.cuh's kernels: the router's format, then gate/up's and down's.
const char* single_formats(const WeightMatrix& router, const WeightMatrix& gate, const WeightMatrix& down) {
  if (router.type != GgmlType::F32) return nullptr;
  if (gate.type == GgmlType::Q8_0 && down.type == GgmlType::Q8_0) return "f32_q8_0_q8_0";
  if (gate.type == GgmlType::Q4_K && down.type == GgmlType::Q4_K) return "f32_q4_k_q4_k";
  if (gate.type == GgmlType::Q4_K && down.type == GgmlType::Q6_K) return "f32_q4_k_q6_k";
  return nullptr;
}

int64_t single_shared_bytes(const WeightMatrix& gate, Activations a, int64_t top_k, int64_t n_expert, int stages) {
  const int64_t k = gate.k, h = staged_levels_bytes(top_k * gate.n_out, a);
  const int64_t region = (std::max(4 * k, h) + 15) / 16 * 16, xq = (staged_levels_bytes(k, a) + 15) / 16 * 16;
  return stages * kDecodeSlotBytes + region + xq + n_expert * 12 + top_k * 8;
}

// The ring's depth: LATHE_MOE_SINGLE_STAGES=4 or 5 (read once) where it fits, else 4.
int single_stages(const WeightMatrix& gate, Activations a, int64_t top_k, int64_t n_expert) {
  static const int asked = [] {
    const char* v = std::getenv("LATHE_MOE_SINGLE_STAGES");
    return v && std::string(v) == "5" ? kMoeSingleMaxStages : 4;
  }();
  return asked == kMoeSingleMaxStages &&
                 single_shared_bytes(gate, a, top_k, n_expert, asked) + kDecodeStaticBytes <= shared_optin_bytes()
             ? asked
             : 4;
}

}  // namespace

int64_t moe_single_part_bytes(const WeightMatrix& router) {
  return route_parts(router.n_out, router.k) * router.n_out * 4;
}

bool moe_single_launch_applies(const WeightMatrix& router, const WeightMatrix& gate, const WeightMatrix& up,
                               const WeightMatrix& down, Activations a, int64_t rows, int64_t top_k, bool norm) {
  if (rows != 1 || !single_formats(router, gate, down) || router.n_out != gate.n_expert) return false;
  if (!(norm ? moe_route_norm_applies(router, rows, top_k) : moe_route_applies(router, rows, top_k))) return false;
  if (!moe_gate_up_applies(gate, up, a, top_k) || !moe_down_applies(down, a, top_k)) return false;
  if (down.k != gate.n_out || down.n_out != gate.k) return false;
  if (decode_pairs_pay(*decode_format(gate.type), top_k * gate.n_out, gate.k)) return false;
  return single_shared_bytes(gate, a, top_k, router.n_out, 4) + kDecodeStaticBytes <= shared_optin_bytes();
}

void moe_single_launch(const WeightMatrix& router, const WeightMatrix& gate, const WeightMatrix& up,
                       const WeightMatrix& down, Activations a, CUdeviceptr x, int64_t top_k, bool renormalize,
                       CUdeviceptr ids, CUdeviceptr weights, CUdeviceptr logits, CUdeviceptr h, CUdeviceptr out,
                       CUdeviceptr part_sums, CUdeviceptr sync, CUstream stream, const NormPrologue* norm,
                       CUdeviceptr trace) {
  if (!moe_single_launch_applies(router, gate, up, down, a, 1, top_k, norm != nullptr))
    fail("mixture in one launch: these shapes and formats take the three launches (moe_single_launch_applies)");
  LATHE_CHECK(x % 16 == 0 && h % 16 == 0 && out % 4 == 0 && part_sums % 4 == 0 && sync % 4 == 0);
  const int64_t sm_count = cuda::Context::get().info().sm_count;
  // The groups the three kernels would choose for one row (their sums depend on the group only).
  const DecodeFormat& fg = *decode_format(gate.type);
  const int group_gu = choose_group(top_k * gate.n_out, 2 * decode_chunks_per_row(fg, gate.k), sm_count);
  const int segs = down_segments(down, top_k);
  const int64_t item_chunks =
      segs > 1 ? (top_k + segs - 1) / segs : top_k * decode_chunks_per_row(*decode_format(down.type), down.k);
  const ExpertShape sd = expert_shape(1, down.n_out, item_chunks);
  CUdeviceptr rw = router.data, xp = x, idp = ids, wtp = weights, lp = logits, ps = part_sums, sy = sync;
  long long r_row_bytes = lathe::row_bytes(router.type, router.k);
  int k = static_cast<int>(router.k), ne = static_cast<int>(router.n_out), parts = route_parts(router.n_out, router.k);
  int kk = static_cast<int>(top_k), renorm = renormalize ? 1 : 0, flags = g_route_flags | route_report_flag();
  CUdeviceptr nx = norm ? norm->x : 0, ny = norm ? norm->y : 0, nw = norm ? norm->w : 0, ns = norm ? norm->sum : 0;
  float eps = norm ? norm->eps : 0.0f;
  int norm_threads = static_cast<int>(block_threads(router.k));
  CUdeviceptr wg = gate.data, wu = up.data, hp = h, wd = down.data, op = out;
  long long gu_row_bytes = lathe::row_bytes(gate.type, gate.k), gu_expert_bytes = gu_row_bytes * gate.n_out;
  long long d_row_bytes = lathe::row_bytes(down.type, down.k), d_expert_bytes = d_row_bytes * down.n_out;
  int n_ff = static_cast<int>(gate.n_out), n_out = static_cast<int>(down.n_out), gg = group_gu, gd = sd.group;
  int blocks_d = static_cast<int>(sd.blocks), sg = segs;
  int stages = single_stages(gate, a, top_k, router.n_out);
  const unsigned shared = static_cast<unsigned>(single_shared_bytes(gate, a, top_k, router.n_out, stages));
  cuda::launch(kernel(std::string("lathe_moe_single_") + single_formats(router, gate, down) + "_" +
                      std::string(activations_name(a))),
               {static_cast<unsigned>(sm_count), 1, 1}, {32 * kWarps, 1, 1}, shared, stream,
               {&rw, &r_row_bytes, &xp, &k, &ne, &parts, &kk, &renorm, &flags, &idp, &wtp, &lp, &ps, &sy, &nx, &ny, &nw,
                &eps, &ns, &norm_threads, &wg, &wu, &gu_row_bytes, &gu_expert_bytes, &n_ff, &gg, &hp, &wd, &d_row_bytes,
                &d_expert_bytes, &n_out, &gd, &blocks_d, &sg, &op, &stages, &trace},
               norm ? "launching the mixture in one launch with the norm in its prologue"
                    : "launching the mixture in one launch");
}

}  // namespace lathe::kernels
