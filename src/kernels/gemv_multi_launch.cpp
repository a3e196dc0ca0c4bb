#include "kernels/gemv_multi_launch.h"

#include "gguf/block_format.h"
#include "kernels/elementwise_launch.h"
#include "kernels/decode_stream.h"
#include "kernels/library.h"
#include "runtime/cuda_api.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace lathe::kernels {
namespace {

// Mirrors gemv_decode.cuh's LATHE_GEMV1_WARPS (its stages and formats: decode_stream.h).
constexpr int kWarps = 16;

bool g_merged_enabled = true;
bool g_early_weights = true;

int64_t merged_shared_bytes(int64_t k, Activations a) {
  return kDecodeStageBytes + staged_levels_bytes(k, a);
}

// The kernel for a set of formats: FA for every segment, or Q4_K or Q5_K with Q6_K segments (b_mask
// marks the Q6_K ones; llama.cpp's Q4_K_M and Q5_K_M files mix them). Empty name: no kernel takes this mix.
struct KernelChoice {
  std::string name;
  int b_mask = 0;
};

KernelChoice choose_kernel(const WeightMatrix* w, int n, Activations a) {
  KernelChoice c;
  bool all_same = true;
  GgmlType fa = GgmlType::Q6_K;  // the segments' format that is not Q6_K, where one is
  bool one_beside_q6k = true;
  for (int m = 0; m < n; ++m) {
    all_same = all_same && w[m].type == w[0].type;
    if (w[m].type == GgmlType::Q6_K) {
      c.b_mask |= 1 << m;
    } else {
      one_beside_q6k = one_beside_q6k && (fa == GgmlType::Q6_K || fa == w[m].type);
      fa = w[m].type;
    }
  }
  const std::string contract(activations_name(a));
  if (all_same) {
    c.b_mask = 0;
    c.name = std::string("lathe_gemvm_") + dense_kernel_format(w[0].type) + "_" + contract;
  } else if (one_beside_q6k && (fa == GgmlType::Q4_K || fa == GgmlType::Q5_K)) {
    c.name = std::string("lathe_gemvm_") + (fa == GgmlType::Q4_K ? "q4_k" : "q5_k") + "_q6_k_" + contract;
  }
  return c;
}

bool applies(const WeightMatrix* w, int n, Activations a) {
  if (!g_merged_enabled || a == Activations::f32 || n < 1 || n > 3) return false;
  for (int m = 0; m < n; ++m) {
    if (!decode_format(w[m].type) || w[m].n_expert != 1 || w[m].k != w[0].k) return false;
    if (w[m].k % block_format(w[m].type).block_size != 0 || w[m].n_out <= 0) return false;
  }
  int64_t items = 0;
  for (int m = 0; m < n; ++m) items += w[m].n_out;
  if (items > (int64_t{1} << 30)) return false;
  if (choose_kernel(w, n, a).name.empty()) return false;
  return merged_shared_bytes(w[0].k, a) + kDecodeStaticBytes <= shared_optin_bytes();
}

// Warps per item: each warp of a group takes >= 1 chunk of every item (group <= min_chunks); among
// those, the fewest rounds x chunks a warp, then the most SMs busy, then the fewest warps an item (a
// group > 1 syncs per item).
int choose_group(int64_t n_items, int64_t min_chunks, int64_t max_chunks, int64_t sm_count) {
  int best = 1;
  int64_t best_cost = -1, best_blocks = 0;
  for (int g = 1; g <= kWarps && g <= min_chunks; g *= 2) {
    const int64_t per_block = kWarps / g;
    const int64_t blocks = std::min(sm_count, (n_items + per_block - 1) / per_block);
    const int64_t n_groups = blocks * per_block;
    const int64_t cost = (n_items + n_groups - 1) / n_groups * ((max_chunks + g - 1) / g);
    if (best_cost < 0 || cost < best_cost || (cost == best_cost && blocks > best_blocks)) {
      best = g;
      best_cost = cost;
      best_blocks = blocks;
    }
  }
  return best;
}

// qout (gate/up only): the SwiGLU's output also quantized for contract a into qout, by the kernel's
// epilogue where its rows are whole 32-value blocks (n_out % 32 == 0, y and qout 16-byte aligned),
// else by quantize_activations after it.
// The merged kernel's work list: paired products or not, its items and the warps an item.
struct MergedShape {
  bool pairs = false;
  int64_t n_items = 0;
  int group = 1;
};
MergedShape merged_shape(const WeightMatrix* w, int n, bool swiglu, int64_t sm_count) {
  const int64_t k64 = w[0].k;
  MergedShape ms;
  int64_t min_chunks = 0, max_chunks = 0;
  ms.pairs = swiglu && w[0].type == w[1].type && decode_pairs_pay(*decode_format(w[0].type), w[0].n_out, k64);
  if (ms.pairs) {  // the kernel's paired products: an item's half chunks
    ms.n_items = w[0].n_out;
    min_chunks = max_chunks = decode_half_chunks_per_row(*decode_format(w[0].type), k64);
  } else if (swiglu) {
    ms.n_items = w[0].n_out;
    min_chunks = max_chunks = decode_chunks_per_row(*decode_format(w[0].type), k64) + decode_chunks_per_row(*decode_format(w[1].type), k64);
  } else {
    for (int m = 0; m < n; ++m) {
      const int64_t nc = decode_chunks_per_row(*decode_format(w[m].type), k64);
      min_chunks = m == 0 ? nc : std::min(min_chunks, nc);
      max_chunks = std::max(max_chunks, nc);
      ms.n_items += w[m].n_out;
    }
  }
  ms.group = choose_group(ms.n_items, min_chunks, max_chunks, sm_count);
  return ms;
}

// Whether gate/up's rows dealt by whole 32-row blocks (what the epilogue's quantization needs) keep
// every block of the launch busy and load none with more rows than dealing them one by one does: the
// widest block sets the launch's time. Measured on the H200 (docs/perf.md, 2026-12-01): qwen3-8b's
// 12,288 rows (96 a block either way) gain; llama3-8b's 14,336 (128 against 112) and qwen3-0.6b's
// 3,072 (96 blocks of 32 rows for 132 SMs) would lose, so they stay dealt.
// LATHE_GATE_UP_BY_BLOCK=force drops the balance (a measuring knob: qwen3-0.6b's 96 row blocks,
// 36 blocks idle); =0 refuses every shape. Read at each call.
bool by_block_balanced(int64_t n_items, int group, int64_t sm_count) {
  const char* v = std::getenv("LATHE_GATE_UP_BY_BLOCK");
  const std::string mode = v ? v : "";
  if (mode == "0") return false;
  if (mode == "force") return n_items % 32 == 0;
  const int64_t per_block = kWarps / group;
  const int64_t blocks = std::min(sm_count, (n_items + per_block - 1) / per_block);
  const int64_t dealt = per_block * ((n_items + blocks * per_block - 1) / (blocks * per_block));
  const int64_t by_block = 32 * ((n_items / 32 + blocks - 1) / blocks);
  return n_items % 32 == 0 && n_items / 32 >= blocks && by_block <= dealt;
}

// The kernels with a _fixed_early form (gemv_multi.cuh): the Q8_0 row kernels.
bool fixed_kernel(const std::string& name) {
  return name.starts_with("lathe_gemvm_q8_0_int8") || name.starts_with("lathe_gemvm_q8_0_ef_int8");
}

void launch_merged(const WeightMatrix* w, int n, bool swiglu, Activations a, CUdeviceptr x, const CUdeviceptr* y,
                   CUstream stream, const NormPrologue* norm = nullptr, CUdeviceptr qout = 0) {
  LATHE_CHECK(x % 16 == 0);
  const bool made = norm && norm->parts;  // norm_epilogue: x's int8 form and the parts made before
  if (norm && !made) LATHE_CHECK(norm->x % 16 == 0 && norm->y % 16 == 0 && norm->w % 16 == 0 && norm->sum % 16 == 0);
  if (made) LATHE_CHECK(norm->xq % 16 == 0 && norm->n_parts > 0);
  for (int m = 0; m < n; ++m) LATHE_CHECK(w[m].data % 16 == 0 && y[swiglu ? 0 : m] % 4 == 0);  // swiglu: one y
  const KernelChoice kc = choose_kernel(w, n, a);
  const int64_t k64 = w[0].k;
  const int64_t sm_count = cuda::Context::get().info().sm_count;
  const MergedShape ms = merged_shape(w, n, swiglu, sm_count);
  const bool pairs = ms.pairs;
  const int64_t n_items = ms.n_items;
  int group = ms.group;
  const int64_t per_block = kWarps / group;
  const unsigned blocks = static_cast<unsigned>(std::min(sm_count, (n_items + per_block - 1) / per_block));

  CUdeviceptr wp[3] = {0, 0, 0}, yp[3] = {0, 0, 0};
  long long rb[3] = {0, 0, 0};
  int n_out[3] = {0, 0, 0};
  for (int m = 0; m < n; ++m) {
    wp[m] = w[m].data;
    yp[m] = swiglu ? y[0] : y[m];
    rb[m] = lathe::row_bytes(w[m].type, w[m].k);
    n_out[m] = static_cast<int>(w[m].n_out);
  }
  int b_mask = kc.b_mask, sw = pairs ? 2 : swiglu ? 1 : 0, k = static_cast<int>(k64);
  int early = g_early_weights ? decode_early_requests() : 0;
  CUdeviceptr xq = made ? norm->xq : x;
  const bool in_prologue = norm && !made;
  CUdeviceptr nx = in_prologue ? norm->x : 0, ny = in_prologue ? norm->y : 0, nw = in_prologue ? norm->w : 0,
              nsum = in_prologue ? norm->sum : 0, xparts = made ? norm->parts : 0;
  int n_parts = made ? static_cast<int>(norm->n_parts) : 0;
  const bool x_fixed = in_prologue && norm->x_fixed;
  float eps = norm ? norm->eps : 0.0f;
  const bool quantize_in_epilogue =
      swiglu && qout && by_block_balanced(n_items, group, sm_count) && y[0] % 16 == 0 && qout % 16 == 0;
  // Q2_K's to Q5_K's tiles (gemv_decode_tiles.cuh): items are 16-row tiles, where every matrix takes them
  // (one format: the tile kernels read one).
  int tile_items = 0;
  if (!pairs) {
    int all = 0;
    for (int m = 0; m < n; ++m) {
      const int tg = decode_tiles_group(w[m], a, TileProduct::merged);
      all += tg > 0 && w[m].type == w[0].type;
      tile_items += static_cast<int>(w[m].n_out / kDecodeTileRows);
    }
    if (swiglu) tile_items = static_cast<int>(w[0].n_out / kDecodeTileRows);
    if (all != n || tile_items < sm_count) tile_items = 0;
  }
  unsigned grid = blocks;
  std::string name = kc.name;
  if (tile_items > 0) {  // a block a tile at a time; by block, the row form's blocks own the 32-row blocks
    if (!quantize_in_epilogue) grid = static_cast<unsigned>(std::min<int64_t>(sm_count, tile_items));
    group = kWarps;
    name = std::string("lathe_gemvm_t_") + decode_tile_format(w[0].type)->name + "_" + std::string(activations_name(a));
  }
  CUdeviceptr qk = quantize_in_epilogue ? qout : 0;
  const unsigned shared = static_cast<unsigned>(merged_shared_bytes(k64, a));
  std::vector<void*> args = {&wp[0], &wp[1], &wp[2], &yp[0], &yp[1], &yp[2], &rb[0], &rb[1], &rb[2],
                             &n_out[0], &n_out[1], &n_out[2], &b_mask, &sw, &xq, &k, &group, &early,
                             &nx, &ny, &nw, &eps, &nsum, &qk, &xparts, &n_parts};
  CUtensorMap maps[3];  // the tile kernels' parameters end with the segments' tensor maps
  if (tile_items > 0)
    for (int m = 0; m < 3; ++m) {
      maps[m] = decode_tile_map(w[m < n ? m : 0]);  // past the count: unread
      args.push_back(&maps[m]);
    }
  // The row kernels' _early forms (two of the ring's first fills before the wait: gemv_multi.cuh) where
  // x is a copy, or is normed in the prologue and the plan asked for them (norm->early_fills). The
  // tiles keep theirs.
  const bool early_form = tile_items == 0 && (!in_prologue || norm->early_fills == 2);
  std::string form = std::string(quantize_in_epilogue ? "_quantizing" : "") + (early_form ? "_early" : "");
  // x_fixed: the Q8_0 row kernels' _fixed_early form (merged_fixed_applies checked the shapes).
  if (x_fixed) {
    if (!fixed_kernel(kc.name) || tile_items > 0 || quantize_in_epilogue)
      internal_fail("merged GEMV: {} has no form reading a fixed-point sum", kc.name);
    form = "_fixed_early";
  }
  cuda::launch(kernel(name + form), {grid, 1, 1}, {32 * kWarps, 1, 1},
               shared, stream, std::move(args),
               made   ? "launching a merged decode GEMV scaling its rows by the norm's factor"
               : norm ? "launching a merged decode GEMV with the norm in its prologue"
                      : "launching a merged decode GEMV");
  if (swiglu && qout && !quantize_in_epilogue) quantize_activations(y[0], 1, n_out[0], a, qout, stream);
}

}  // namespace

void set_merged_gemv_enabled(bool enabled) { g_merged_enabled = enabled; }

void set_merged_gemv_early_weights(bool early) { g_early_weights = early; }

bool merged_gemv_applies(const WeightMatrix* w, int n_matrices, Activations a) {
  return n_matrices > 1 && applies(w, n_matrices, a);
}

void gemv_multi(const WeightMatrix* w, int n_matrices, Activations a, CUdeviceptr x, const CUdeviceptr* y,
                CUstream stream, int64_t n_rows) {
  if (n_matrices < 1 || n_matrices > 3) fail("merged GEMV: {} matrices; it takes 1 to 3", n_matrices);
  for (int m = 1; m < n_matrices; ++m)
    if (w[m].k != w[0].k) fail("merged GEMV: matrices of {} and {} inputs do not read one activation", w[0].k, w[m].k);
  // One matrix: gemv's decode kernel is faster (fewer instructions a chunk: measured 6.4 vs 7.4 us for
  // q8_0 4096 x 4096), so the merged kernel is for two or three.
  if (n_rows == 1 && n_matrices > 1 && applies(w, n_matrices, a)) {
    launch_merged(w, n_matrices, false, a, x, y, stream);
    return;
  }
  for (int m = 0; m < n_matrices; ++m) gemv(w[m], a, x, n_rows, y[m], stream);
}

namespace {
void check_quantized_out(const QuantizedOut& qout, Activations a, int64_t n_out) {
  if (qout.q && (qout.a != a || a == Activations::f32 || n_out % 32 != 0))
    internal_fail("gate/up product: a quantized output needs the product's int8 contract and whole 32-value blocks");
}
}  // namespace

void gemv_gate_up_swiglu(const WeightMatrix& gate, const WeightMatrix& up, Activations a, CUdeviceptr x,
                         CUdeviceptr y, CUstream stream, int64_t n_rows, const QuantizedOut& qout) {
  if (gate.n_out != up.n_out || gate.k != up.k)
    fail("gate/up product: gate is {} x {} but up is {} x {}", gate.n_out, gate.k, up.n_out, up.k);
  check_quantized_out(qout, a, gate.n_out);
  const WeightMatrix pair[2] = {gate, up};
  if (n_rows == 1 && applies(pair, 2, a)) {
    const CUdeviceptr ys[1] = {y};
    launch_merged(pair, 2, true, a, x, ys, stream, nullptr, qout.q);
    return;
  }
  const int64_t n = n_rows * gate.n_out;
  const CUdeviceptr u = launcher_scratch(kScratchGateUp, static_cast<size_t>(n) * sizeof(float));
  gemv(gate, a, x, n_rows, y, stream);
  gemv(up, a, x, n_rows, u, stream);
  elementwise_binary(ElemBinary::swiglu, y, y, u, n, n, stream);
  if (qout.q) quantize_activations(y, n_rows, gate.n_out, a, qout.q, stream);
}

bool gate_up_quantizes_in_epilogue(const WeightMatrix& gate, const WeightMatrix& up, Activations a) {
  const WeightMatrix pair[2] = {gate, up};
  if (gate.n_out != up.n_out || !applies(pair, 2, a)) return false;
  const int64_t sm_count = cuda::Context::get().info().sm_count;
  const MergedShape ms = merged_shape(pair, 2, true, sm_count);
  return by_block_balanced(ms.n_items, ms.group, sm_count);
}

bool merged_norm_applies(const WeightMatrix* w, int n_matrices, Activations a) {
  // The prologue holds 16 values a thread of the kernel's 512: k <= 8192, in whole warps of blocks.
  return n_matrices >= 2 && n_matrices <= 3 && w[0].k % 128 == 0 && w[0].k <= 16 * 32 * kWarps &&
         merged_gemv_applies(w, n_matrices, a);
}

bool merged_fixed_applies(const WeightMatrix* w, int n_matrices, Activations a) {
  return merged_norm_applies(w, n_matrices, a) && fixed_kernel(choose_kernel(w, n_matrices, a).name);
}

void gemv_multi_norm(const WeightMatrix* w, int n_matrices, Activations a, const NormPrologue& norm,
                     const CUdeviceptr* y, CUstream stream) {
  if (!merged_norm_applies(w, n_matrices, a)) internal_fail("gemv_multi_norm: the merged kernel does not take these shapes");
  launch_merged(w, n_matrices, false, a, 0, y, stream, &norm);
}

void gemv_gate_up_swiglu_norm(const WeightMatrix& gate, const WeightMatrix& up, Activations a, const NormPrologue& norm,
                              CUdeviceptr y, CUstream stream, const QuantizedOut& qout) {
  const WeightMatrix pair[2] = {gate, up};
  if (gate.n_out != up.n_out || !merged_norm_applies(pair, 2, a))
    internal_fail("gemv_gate_up_swiglu_norm: the merged kernel does not take these shapes");
  check_quantized_out(qout, a, gate.n_out);
  const CUdeviceptr ys[1] = {y};
  launch_merged(pair, 2, true, a, 0, ys, stream, &norm, qout.q);
}

}  // namespace lathe::kernels
