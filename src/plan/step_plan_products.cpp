// The products of a step: one GEMV, GEMM or matmul per product, the merged decode products
// (merged_products, gate_up_swiglu), and the mixture of experts.
#include "kernels/elementwise_launch.h"
#include "kernels/ffn_split_launch.h"
#include "kernels/gemm_f16_launch.h"
#include "kernels/gemm_launch.h"
#include "kernels/gemm_wgmma_launch.h"
#include "kernels/gemv_launch.h"
#include "kernels/gemv_multi_launch.h"
#include "kernels/norm_epilogue_launch.h"
#include "kernels/moe_launch.h"
#include "kernels/norm_launch.h"
#include "kernels/moe_prefill_launch.h"
#include "kernels/route_launch.h"
#include "plan/step_plan_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace lathe::plan {
namespace {

using lang::ModKind;
using lang::OpKind;
namespace k = kernels;

}  // namespace

// The mixture's three decode kernels (moe_launch.h): on unless LATHE_MOE_KERNELS=0 (measured on the
// H200: Qwen3-30B-A3B tg128 190 -> 261 tok/s; their tests against the interpreter and the eight
// launches pass).
bool moe_kernels_enabled() {
  const char* v = std::getenv("LATHE_MOE_KERNELS");
  return !(v && std::string(v) == "0");
}

// The mixture in one launch (fusion rule mixture_one_launch) where LATHE_MOE_ONE_LAUNCH=1: measured on
// the H200 (2026-12-01) the one launch alone beats the three (27.1 against 29.8 us at qwen3-30b-a3b's
// shape) but costs the 30B's step ~10 us a layer (tg128 388 -> 326); the mark stays, honoured on ask.
bool moe_one_launch_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("LATHE_MOE_ONE_LAUNCH");
    return v && std::string(v) == "1";
  }();
  return on;
}

// The kept experts dealt by slot (fusion rule experts_by_slot) where LATHE_MOE_BY_SLOT=1 (read once):
// measured on the H200 (2026-12-03, docs/perf.md) it is correct but slower, alone (20.6 against 18.2
// us a layer at qwen3-30b-a3b's shape) and more so in the step (the 30B's tg128 374 against 451-454);
// the mark stays, honoured on ask.
bool moe_by_slot_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("LATHE_MOE_BY_SLOT");
    return v && std::string(v) == "1";
  }();
  return on;
}

// Read at each call (the tests set it around one engine).
bool moe_split_enabled() {
  const char* v = std::getenv("LATHE_MOE_SPLIT");
  return v && (std::string(v) == "1" || std::string(v) == "ring");
}

bool moe_split_ring() {
  const char* v = std::getenv("LATHE_MOE_SPLIT");
  return v && std::string(v) == "ring";
}

int64_t gemv_quantized_bytes(int64_t rows, int64_t k, kernels::Activations a) {
  return rows > kGemvRows ? 0 : kernels::quantized_activation_bytes(rows, k, a);
}

// A product reads its activation's int8 form under the int8 contracts: the GEMV for a few rows, the
// tensor-core GEMM for a chunk when it takes the weights' format (else the f32 matmul).
bool StepPlan::Builder::reads_quantized(const graph::Node& product) const {
  if (product.kind != OpKind::product || o.activations == k::Activations::f32) return false;
  const graph::Tensor& x = g.tensor(product.args[0].tensor);
  const graph::Tensor& wt = g.tensor(product.args[1].tensor);
  if (wt.role != graph::Role::constant) return false;
  const int64_t rows = numel(x) / x.shape.back();
  return rows <= kGemvRows || (k::gemm_supports(weight_of(m, wt).type) && !reads_half(product));
}

// A chunk's product under the int8 contracts on f16 tensor cores (gemm_f16_launch.h: x and the
// dequantized weights rounded to f16, ~3e-4 of max|y|, inside the contracts' end-to-end bound) where
// it takes the format, unless LATHE_PREFILL_GEMM=int8 keeps the int8 GEMM (for measurements).
bool StepPlan::Builder::reads_half(const graph::Node& product) const {
  if (k::prefill_gemm_setting() == k::PrefillGemm::int8 || product.kind != OpKind::product ||
      o.activations == k::Activations::f32)
    return false;
  const graph::Tensor& x = g.tensor(product.args[0].tensor);
  const graph::Tensor& wt = g.tensor(product.args[1].tensor);
  if (wt.role != graph::Role::constant) return false;
  const int64_t rows = numel(x) / x.shape.back();
  return rows > kGemvRows && k::gemm_f16_supports(weight_of(m, wt).type);
}

// Whether a chunk's f16 product of w over `rows` rows runs on wgmma (after reads_half): always where
// its register-A kernel reads the weight (rows of whole 16-byte lines: measured on the H200 at 512
// rows of Qwen3-8B's shapes 1.6-4.0x gemm_f16), else from kWgmmaRows rows (its staged kernel:
// 1.29-1.48x at 4,096 rows, 0.88-1.03x at 512). LATHE_PREFILL_GEMM=wgmma takes it at any row count,
// =f16 never (for measurements). Asked at plan time: the first call loads the sm_90a module, which
// must not happen inside a graph capture.
namespace {
bool takes_wgmma(const k::WeightMatrix& w, int64_t rows) {
  const k::PrefillGemm setting = k::prefill_gemm_setting();
  return setting != k::PrefillGemm::f16 && k::gemm_wgmma_supports(w.type) &&
         (setting == k::PrefillGemm::wgmma || rows >= kWgmmaRows || k::gemm_wgmma_uses_rs(w.type, w.k)) &&
         k::gemm_wgmma_available();
}
}  // namespace

// One product: the GEMV (a few rows), the f16 or int8 GEMM or the f32 matmul (a chunk). `quantize`:
// this launch first makes the form of its input the product reads (int8, or f16 for the f16 GEMM; no
// producer or earlier product made it); the form is in the group's scratch slot 0.
void StepPlan::Builder::emit_product(const graph::Node& n, int gi, bool quantize) {
  const graph::Tensor& x = g.tensor(n.args[0].tensor);
  const graph::Tensor& wt = g.tensor(n.args[1].tensor);
  if (wt.role != graph::Role::constant) no_kernel(n, "a product with a matrix that is not a checkpoint constant");
  const k::WeightMatrix w = weight_of(m, wt);
  const int64_t kk = x.shape.back(), rows = numel(x) / kk;
  const CUdeviceptr xp = ptr(x.id), y = ptr(n.output);
  const k::Activations a = o.activations;
  const std::string shape = fmt::format("{} [{} x {}] . [{} x {}]^T", ggml_type_name(w.type), rows, kk, w.n_out, kk);
  if (o.last_row_outputs && rows > 1 && g.tensor(n.output).role == graph::Role::output) {
    // Only the last row's values are read: one GEMV row (the output's other rows are not written).
    const CUdeviceptr xl = xp + static_cast<CUdeviceptr>((rows - 1) * kk * 4);
    const CUdeviceptr yl = y + static_cast<CUdeviceptr>((rows - 1) * w.n_out * 4);
    const CUdeviceptr q = group_scratch.at(static_cast<size_t>(gi)).empty() ? 0 : scratch_ptr(gi, 0);
    const k::Activations la = q ? a : k::Activations::f32;  // the f32 contract has no form to quantize into
    add(fmt::format("gemv {} of the last row {}", k::activations_name(la), shape), n, [=](CUstream s) {
      if (la == k::Activations::f32) return k::gemv(w, la, xl, 1, yl, s);
      if (k::gemv_quantizing_row(w, la, xl, yl, s)) return;
      k::quantize_activations(xl, 1, kk, la, q, s);
      k::gemv(w, la, q, 1, yl, s);
    });
    return;
  }
  if (reads_half(n)) {
    const CUdeviceptr h = scratch_ptr(gi, 0);
    // The same contract on Hopper's wgmma (gemm_wgmma_launch.h) where takes_wgmma says so.
    const bool wg = takes_wgmma(w, rows);
    if (wg)
      k::tune_gemm_wgmma(k::GemmWgmmaForm::single, w.type, kk, rows, w.n_out,
                         [=](CUstream s) { k::gemm_wgmma(w, h, rows, y, s); });
    add(fmt::format("gemm {} {}", wg ? "wgmma" : "f16", shape), n, [=](CUstream s) {
      if (quantize) k::convert_to_f16(xp, rows * kk, h, s);
      if (wg)
        k::gemm_wgmma(w, h, rows, y, s);
      else
        k::gemm_f16(w, h, rows, y, s);
    });
    return;
  }
  if (!reads_quantized(n)) {
    if (rows > kGemvRows)
      add("matmul " + shape, n, [=](CUstream s) { k::matmul(w, xp, rows, y, s); });
    else
      add("gemv f32 " + shape, n, [=](CUstream s) { k::gemv(w, k::Activations::f32, xp, rows, y, s); });
    return;
  }
  if (router_epi_of_product.count(gi)) return emit_router_epilogue(n, gi, quantize);
  if (norm_epi_of_product.count(gi)) return emit_norm_epilogue(n, gi, quantize);
  const CUdeviceptr q = scratch_ptr(gi, 0);
  const bool gemm = rows > kGemvRows;
  // A decode row whose int8 form no later product reads: the decode kernel quantizes it in each
  // block's prologue (no quantizer launch; the scratch is then unused).
  const int q_request = group_scratch.at(static_cast<size_t>(gi)).at(0);
  if (!gemm && rows == 1 && quantize && scratch_requests.at(static_cast<size_t>(q_request)).last == gi) {
    add(fmt::format("gemv {} quantizing {}", k::activations_name(a), shape), n, [=](CUstream s) {
      if (k::gemv_quantizing_row(w, a, xp, y, s)) return;
      k::quantize_activations(xp, rows, kk, a, q, s);
      k::gemv(w, a, q, rows, y, s);
    });
    return;
  }
  // The GEMM's tile for this shape is measured on the card once (remembered in the kernel cache).
  if (gemm) k::tune_gemm(w, a, q, rows, y);
  add(fmt::format("{} {} {}", gemm ? "gemm" : "gemv", k::activations_name(a), shape), n, [=](CUstream s) {
    if (quantize) k::quantize_activations(xp, rows, kk, a, q, s);
    if (gemm)
      k::gemm_quantized(w, a, q, rows, y, s);
    else
      k::gemv(w, a, q, rows, y, s);
  });
}

// merged_products and gate_up_swiglu: one merged kernel for a decode row under the int8 contracts,
// else the group's products (and SwiGLU) one by one.
void StepPlan::Builder::emit_merged(int gi) {
  const fuse::Group& grp = p.fusion_.groups[static_cast<size_t>(gi)];
  const bool swiglu = grp.rule == "gate_up_swiglu";
  const size_t n_products = swiglu ? 2 : grp.nodes.size();
  const graph::Node& first = g.nodes[static_cast<size_t>(grp.nodes.front())];
  const graph::Tensor& x = g.tensor(first.args[0].tensor);
  const int64_t rows = numel(x) / x.shape.back();
  std::vector<k::WeightMatrix> ws;
  std::vector<CUdeviceptr> ys;
  for (size_t i = 0; i < n_products; ++i) {
    const graph::Node& pn = g.nodes[static_cast<size_t>(grp.nodes[i])];
    ws.push_back(weight_of(m, g.tensor(pn.args[1].tensor)));
    ys.push_back(ptr(pn.output));
  }
  const bool quantize = quantize_in.count(gi) && quantize_in.at(gi);
  const k::Activations a = o.activations;
  const k::QuantizedOut fq = swiglu ? quantized_output(gi) : k::QuantizedOut{};
  if (rows == 1 && reads_quantized(first) && k::merged_gemv_applies(ws.data(), static_cast<int>(ws.size()), a)) {
    const CUdeviceptr xp = ptr(x.id), q = scratch_ptr(gi, 0);
    const int64_t kk = x.shape.back();
    std::string what = swiglu ? "gemv gate, up and swiglu" : fmt::format("gemv of {} matrices", ws.size());
    for (const k::WeightMatrix& w : ws) what += fmt::format(" {} [{} x {}]", ggml_type_name(w.type), w.n_out, w.k);
    const CUdeviceptr out = swiglu ? ptr(g.nodes[static_cast<size_t>(grp.nodes[2])].output) : 0;
    add(fmt::format("{} {}", what, k::activations_name(a)), first, [=](CUstream s) {
      if (quantize) k::quantize_activations(xp, 1, kk, a, q, s);
      if (swiglu)
        k::gemv_gate_up_swiglu(ws[0], ws[1], a, q, out, s, 1, fq);
      else
        k::gemv_multi(ws.data(), static_cast<int>(ws.size()), a, q, ys.data(), s);
    });
    return;
  }
  // A chunk's q, k and v (or gate and up) on wgmma: one launch over all their output tiles (k and v
  // alone are too few tiles to fill the card), and for gate and up the SwiGLU in the product's
  // epilogue where that pays (gemm_wgmma_swiglu_fused_pays; measured at 512 rows: q8_0 1.23x the
  // three launches, and no gain at 4,096 rows, where the two products and the SwiGLU launch stay).
  if (rows > kGemvRows && reads_half(first) && takes_wgmma(ws[0], rows)) {
    bool same = true;
    for (const k::WeightMatrix& w : ws) same = same && w.type == ws[0].type && w.k == ws[0].k;
    if (same) {
      const CUdeviceptr xp = ptr(x.id), h = scratch_ptr(gi, 0);
      const int64_t kk = x.shape.back();
      std::string what = fmt::format("gemm wgmma of {} matrices", ws.size());
      for (const k::WeightMatrix& w : ws) what += fmt::format(" {} [{} x {}]", ggml_type_name(w.type), w.n_out, w.k);
      if (swiglu) {
        const graph::Node& sw = g.nodes[static_cast<size_t>(grp.nodes[2])];
        const CUdeviceptr out = ptr(sw.output);
        const int64_t count = numel(g.tensor(sw.output));
        const bool fused = k::gemm_wgmma_swiglu_fused_pays(ws[0].type) && rows < kWgmmaRows;
        if (fused)
          k::tune_gemm_wgmma(k::GemmWgmmaForm::swiglu, ws[0].type, kk, rows, 2 * ws[0].n_out,
                             [=](CUstream s) { k::gemm_wgmma_swiglu(ws[0], ws[1], h, rows, out, s); });
        else
          k::tune_gemm_wgmma(k::GemmWgmmaForm::multi, ws[0].type, kk, rows, ws[0].n_out + ws[1].n_out,
                             [=](CUstream s) { k::gemm_wgmma_multi(ws.data(), 2, h, rows, ys.data(), s); });
        add(fmt::format("{} {} [{} rows]", what, fused ? "with the swiglu in its epilogue" : "then swiglu", rows), first,
            [=](CUstream s) {
              if (quantize) k::convert_to_f16(xp, rows * kk, h, s);
              if (fused) {
                k::gemm_wgmma_swiglu(ws[0], ws[1], h, rows, out, s);
              } else {
                k::gemm_wgmma_multi(ws.data(), 2, h, rows, ys.data(), s);
                k::elementwise_binary(k::ElemBinary::swiglu, out, ys[0], ys[1], count, count, s);
              }
              if (fq.q) k::quantize_activations(out, rows, ws[0].n_out, a, fq.q, s);
            });
      } else {
        int64_t outputs = 0;
        for (const k::WeightMatrix& w : ws) outputs += w.n_out;
        k::tune_gemm_wgmma(k::GemmWgmmaForm::multi, ws[0].type, kk, rows, outputs, [=](CUstream s) {
          k::gemm_wgmma_multi(ws.data(), static_cast<int>(ws.size()), h, rows, ys.data(), s);
        });
        add(fmt::format("{} [{} rows]", what, rows), first, [=](CUstream s) {
          if (quantize) k::convert_to_f16(xp, rows * kk, h, s);
          k::gemm_wgmma_multi(ws.data(), static_cast<int>(ws.size()), h, rows, ys.data(), s);
        });
      }
      return;
    }
  }
  // One by one: the first product that reads x's int8 or f16 form makes it (a chunk's products may
  // differ: scratch_for_kernels).
  bool form_pending = quantize;
  for (size_t i = 0; i < n_products; ++i) {
    const graph::Node& pn = g.nodes[static_cast<size_t>(grp.nodes[i])];
    const bool reads_form = reads_quantized(pn) || reads_half(pn);
    emit_product(pn, gi, form_pending && reads_form);
    if (reads_form) form_pending = false;
  }
  if (swiglu) {
    const graph::Node& sw = g.nodes[static_cast<size_t>(grp.nodes[2])];
    const CUdeviceptr gp = ptr(sw.args[0].tensor), up = ptr(sw.args[1].tensor), out = ptr(sw.output);
    const int64_t count = numel(g.tensor(sw.output)), n_ff = ws[0].n_out;
    add(fmt::format("swiglu{} [{}]", fq.q ? " quantized" : "", count), sw, [=](CUstream s) {
      k::elementwise_binary(k::ElemBinary::swiglu, out, gp, up, count, count, s);
      if (fq.q) k::quantize_activations(out, count / n_ff, n_ff, a, fq.q, s);
    });
  }
}

// The int8 form of the group's output it writes (quantize_epilogue), or none.
k::QuantizedOut StepPlan::Builder::quantized_output(int gi) const {
  const auto it = quantize_out.find(gi);
  return it == quantize_out.end() ? k::QuantizedOut{} : k::QuantizedOut{scratch_ptr(gi, it->second), o.activations};
}

// norm_prologue: a decode row's sum, its RMS norm and the merged products reading it as one merged
// GEMV with the norm in its prologue where the kernel takes the shapes; else the sum and norm
// (add_rms_norm writing the int8 form) and the merged products as before.
// The sum and norm a norm_prologue group opens with ([add, norm, ...]): the operands, weight, epsilon
// and the sum's own storage.
k::NormPrologue StepPlan::Builder::norm_prologue_of(const fuse::Group& grp) {
  const graph::Node& sum_node = g.nodes[static_cast<size_t>(grp.nodes[0])];
  const graph::Node& norm = g.nodes[static_cast<size_t>(grp.nodes[1])];
  const graph::Attr* wa = norm.find(ModKind::weighted_by);
  const graph::Attr* ea = norm.find(ModKind::epsilon);
  k::NormPrologue np;
  np.x = ptr(sum_node.args[0].tensor);
  np.y = ptr(sum_node.args[1].tensor);
  np.w = wa ? ptr(wa->args[0].tensor) : 0;
  np.sum = ptr(sum_node.output);
  np.eps = static_cast<float>(ea ? ea->args.at(0).number : 1e-6);
  // Two first fills before the wait unless a term of the sum is a mixture's output (NormPrologue).
  bool after_mixture = false;
  for (const auto& arg : sum_node.args) {
    const int from = g.tensor(arg.tensor).producer;
    after_mixture = after_mixture || (from >= 0 && g.nodes[static_cast<size_t>(from)].kind == OpKind::mixture);
  }
  np.early_fills = after_mixture ? 1 : 2;
  return np;
}

void StepPlan::Builder::emit_norm_prologue(int gi) {
  const fuse::Group& grp = p.fusion_.groups[static_cast<size_t>(gi)];
  const graph::Node& sum_node = g.nodes[static_cast<size_t>(grp.nodes[0])];
  const graph::Node& norm = g.nodes[static_cast<size_t>(grp.nodes[1])];
  if (g.nodes[static_cast<size_t>(grp.nodes.back())].kind == OpKind::mixture) {
    emit_mixture(gi, true);
    return;
  }
  if (ffn_split_of_ffn.count(gi)) return emit_ffn_split(gi);
  const bool swiglu = g.nodes[static_cast<size_t>(grp.nodes.back())].kind == OpKind::swiglu;
  const std::vector<k::WeightMatrix> ws = norm_group_matrices(grp);
  std::vector<CUdeviceptr> ys;
  for (size_t i = 0; i < ws.size(); ++i) ys.push_back(ptr(g.nodes[static_cast<size_t>(grp.nodes[2 + i])].output));
  const graph::Tensor& h = g.tensor(norm.output);
  const int64_t rows = h.shape[0], cols = h.shape[1];
  k::NormPrologue np = norm_prologue_of(grp);
  if (const auto it = norm_epi_of_norm.find(gi); it != norm_epi_of_norm.end()) {
    // norm_epilogue: the product before made the sum, x's int8 form and the parts (takes_norm_epilogue
    // checked that the merged kernel below runs).
    const graph::Node& prod = g.nodes[static_cast<size_t>(p.fusion_.groups[static_cast<size_t>(it->second)].nodes[0])];
    np.xq = scratch_ptr(gi, 0);
    np.parts = scratch_ptr(gi, norm_epi_parts.at(gi));
    np.n_parts = k::norm_epilogue_blocks(weight_of(m, g.tensor(prod.args[1].tensor)), o.activations);
  }
  const auto fixed = ffn_sum_of_norm.find(gi);
  if (fixed != ffn_sum_of_norm.end()) {
    // ffn_split: the feed-forward launch before formed the sum in fixed point (takes_ffn_split checked
    // that the merged kernel below runs).
    np.x = ffn_sum(fixed->second);
    np.y = 0;
    np.x_fixed = true;
  }
  const CUdeviceptr out = swiglu ? ptr(g.nodes[static_cast<size_t>(grp.nodes.back())].output) : 0;
  const k::Activations a = o.activations;
  const k::QuantizedOut fq = swiglu ? quantized_output(gi) : k::QuantizedOut{};
  std::string what = swiglu ? "gemv gate, up and swiglu" : fmt::format("gemv of {} matrices", ws.size());
  for (const k::WeightMatrix& w : ws) what += fmt::format(" {} [{} x {}]", ggml_type_name(w.type), w.n_out, w.k);
  if (fq.q) what += " quantized";
  if (rows == 1 && a != k::Activations::f32 && k::merged_norm_applies(ws.data(), static_cast<int>(ws.size()), a)) {
    add(fmt::format("{} {} {}", what, k::activations_name(a),
                    np.parts     ? "scaled by the norm's factor (x made by the product before)"
                    : np.x_fixed ? "with the norm in its prologue (x the feed-forward launch's fixed-point sum)"
                                 : "with the norm in its prologue"),
        sum_node, [=](CUstream s) {
      if (swiglu)
        k::gemv_gate_up_swiglu_norm(ws[0], ws[1], a, np, out, s, fq);
      else
        k::gemv_multi_norm(ws.data(), static_cast<int>(ws.size()), a, np, ys.data(), s);
    });
    return;
  }
  if (np.x_fixed) internal_fail("ffn_split: the merged products after it do not take their shapes");
  // Fallback: the sum into its own storage, then add_rms_norm in place on it (with the int8 form).
  const k::QuantizedOut qout = a == k::Activations::f32 ? k::QuantizedOut{} : k::QuantizedOut{scratch_ptr(gi, 0), a};
  const CUdeviceptr hp = ptr(norm.output), xin = qout.q ? qout.q : hp;
  // Each product into its own output (the group owns them all) and the SwiGLU after: no launcher
  // scratch, so a recording (lathe emit) sees only buffers the plan placed.
  add(fmt::format("add_rms_norm then {} {}", what, k::activations_name(a)), sum_node, [=](CUstream s) {
    cuda::copy_async(np.sum, np.x, static_cast<size_t>(rows * cols * 4), s, "copying on the GPU");
    k::add_rms_norm(np.sum, hp, np.y, np.w, rows, cols, np.eps, s, qout);
    k::gemv_multi(ws.data(), static_cast<int>(ws.size()), a, xin, ys.data(), s, rows);
    if (swiglu) {
      const int64_t count = rows * ws[0].n_out;
      k::elementwise_binary(k::ElemBinary::swiglu, out, ys[0], ys[1], count, count, s);
      if (fq.q) k::quantize_activations(out, rows, ws[0].n_out, a, fq.q, s);
    }
  });
}

// The mixture. A chunk of more than 8 rows under an int8 contract whose formats the grouped products
// read: grouped by expert (moe_prefill). Otherwise 8 rows at a time: the f32 router product, top-k,
// the experts' gate and up products, SwiGLU, the down product with the weighted combine (the int8
// forms made between); such chunks of more rows run the f32 contract. Unless LATHE_MOE_KERNELS=0, a step of at most 8 rows
// under an int8 contract runs it as three kernels (router and top-k; gate, up and SwiGLU; down and
// combine) where their launchers take the shapes without falling back (a fallback allocates scratch,
// which a captured graph cannot).
// norm_prologue: the group is [add, norm, mixture] (fusion rule norm_prologue): the router kernel
// adds and norms in its prologue; where it does not apply, the sum and add_rms_norm first.
void StepPlan::Builder::emit_mixture(int gi, bool norm_prologue) {
  const fuse::Group& grp = p.fusion_.groups[static_cast<size_t>(gi)];
  const graph::Node& n = g.nodes[static_cast<size_t>(grp.nodes.back())];
  const graph::Tensor& x = g.tensor(n.args[2].tensor);
  const graph::Attr* ex = n.find(ModKind::experts);
  const k::WeightMatrix router = weight_of(m, g.tensor(n.find(ModKind::routed_by)->args[0].tensor));
  const k::WeightMatrix gate = weight_of(m, g.tensor(ex->args[0].tensor));
  const k::WeightMatrix up = weight_of(m, g.tensor(ex->args[1].tensor));
  const k::WeightMatrix down = weight_of(m, g.tensor(ex->args[2].tensor));
  const int64_t rows = x.shape[0], embd = x.shape[1], top_k = static_cast<int64_t>(n.args[0].number);
  const int64_t n_expert = gate.n_expert, ff = gate.n_out;
  const bool renorm = n.find(ModKind::renormalized) != nullptr;
  const CUdeviceptr xp = ptr(x.id), out = ptr(n.output);
  const CUdeviceptr logits = scratch_ptr(gi, 0), ids = scratch_ptr(gi, 1), wts = scratch_ptr(gi, 2);
  const CUdeviceptr gbuf = scratch_ptr(gi, 3), ubuf = scratch_ptr(gi, 4), q = scratch_ptr(gi, 5);
  if (rows > kGemvRows && k::moe_prefill_applies(gate, up, down, o.activations, top_k)) {
    // moe_prefill takes its wgmma products where the card has them: load the sm_90a module now, not
    // inside the graph capture of the first launch.
    (void)k::gemm_wgmma_available();
    // A chunk under an int8 contract: pairs grouped by expert, one grouped launch per projection
    // (moe_prefill_launch.h); scratch_for sized slot 4 for down's output and added the grouping.
    const k::Activations ga = o.activations;
    const k::MoePrefillScratch sc{logits, ids, wts, gbuf, ubuf, q, scratch_ptr(gi, 6)};
    add(fmt::format("mixture grouped by expert, {} of {} experts {} [{} x {}] ff {} {}", top_k, n_expert,
                    ggml_type_name(gate.type), rows, embd, ff, k::activations_name(ga)), n, [=](CUstream s) {
      k::moe_prefill(router, gate, up, down, ga, xp, rows, top_k, renorm, out, sc, s);
    });
    return;
  }
  const k::Activations a = rows > kGemvRows ? k::Activations::f32 : o.activations;
  const bool three = moe_kernels_enabled() && a != k::Activations::f32 && k::moe_route_applies(router, rows, top_k) &&
                     k::moe_gate_up_applies(gate, up, a, top_k) && k::moe_down_applies(down, a, top_k);
  // mixture_one_launch: the three kernels' work as phases of one launch, the same bits; only under
  // LATHE_MOE_ONE_LAUNCH=1 (a measuring knob: slower in the step, docs/perf.md 2026-12-01).
  const bool single_marked = three && moe_one_launch_enabled() && p.fusion_.one_launch_mixtures.count(n.id) > 0;
  const CUdeviceptr parts = single_marked ? scratch_ptr(gi, 6) : 0, sync = p.moe_sync_.ptr();
  // The wide router only under LATHE_MOE_ROUTE=wide (moe_launch.h says why).
  const k::RouteScratch wide{scratch_ptr(gi, 6), sync + 8};
  const bool use_wide = k::moe_route_wide_chosen();
  // quantize_epilogue: gate/up also writes h's int8 form (into up's slot, unused by the three kernels)
  // and down copies it, instead of every down block quantizing h (LATHE_EPILOGUE_SKIP=moe: not).
  const bool h_epilogue = !o.held.count("quantize_epilogue") && !epilogue_skipped("moe");
  const k::QuantizedOut hq = h_epilogue ? k::QuantizedOut{ubuf, a} : k::QuantizedOut{};
  const CUdeviceptr h_counts = p.moe_h_counts_.ptr(), hin = h_epilogue ? ubuf : gbuf;
  // experts_by_slot: gate/up and down in one launch dealt by slot, where its kernel takes the shapes.
  const bool by_slot = three && moe_by_slot_enabled() && p.fusion_.by_slot_mixtures.count(n.id) > 0 &&
                       k::moe_experts_by_slot_applies(gate, up, down, a, rows, top_k);
  const CUdeviceptr slot_parts = by_slot ? scratch_ptr(gi, 7) : 0, slot_counts = p.moe_slot_counts_.ptr();
  // ffn_split: the kept experts' halves in one launch, down split along its input, into the next sum.
  const auto split_taken = ffn_split_of_ffn.find(gi);
  k::MoeSplit ms;
  CUdeviceptr split_slices = 0;
  if (split_taken != ffn_split_of_ffn.end()) {
    ms.x_q = q;
    ms.ids = ids;
    ms.wts = wts;
    ms.s = ptr(g.nodes[static_cast<size_t>(grp.nodes[0])].output);
    ms.s_out = ffn_sum(split_taken->second.sum);
    ms.zero = ffn_sum(split_taken->second.sum + 1);
    ms.ring = moe_split_ring() && k::moe_split_ring_applies(gate, up, down, a, top_k);  // else the 32-value form
    split_slices = p.ffn_down_slices_.at(static_cast<size_t>(split_taken->second.sum)).ptr();
  }
  const bool split = split_slices != 0;
  if (split && !three) internal_fail("ffn_split: the mixture's kernels do not take its shapes");
  const std::string split_note =
      split ? fmt::format(", the experts in one launch{}, down split along its input (the next sum in fixed point)",
                          ms.ring ? " of 64 values a block (one wave)" : "")
            : "";
  auto experts = [=](CUstream s) {
    if (split) {
      k::moe_split(gate, up, split_slices, a, top_k, ms, s);
      return;
    }
    if (by_slot) {
      k::moe_experts_by_slot(gate, up, down, a, q, ids, wts, top_k, gbuf, slot_parts, slot_counts, out, s);
      return;
    }
    k::moe_gate_up_swiglu(gate, up, a, q, rows, ids, top_k, gbuf, s, hq, h_counts);
    k::moe_down_combine(down, a, hin, h_epilogue, rows, ids, wts, top_k, out, s, true);
  };
  if (norm_prologue && router_epi_of_mixture.count(gi)) {
    // router_epilogue: the product's launch before wrote the sum, ids, weights and x's int8 form.
    const graph::Node& sum_node = g.nodes[static_cast<size_t>(grp.nodes[0])];
    add(fmt::format("mixture's experts in {} (the router in the product's epilogue), {} of {} experts {} "
                    "[{} x {}] ff {}{}", split ? "one kernel" : "two kernels", top_k, n_expert,
                    ggml_type_name(gate.type), rows, embd, ff, split_note), sum_node,
        experts);
    return;
  }
  if (norm_prologue) {
    const graph::Node& sum_node = g.nodes[static_cast<size_t>(grp.nodes[0])];
    const k::NormPrologue np = norm_prologue_of(grp);
    if (single_marked && k::moe_single_launch_applies(router, gate, up, down, a, rows, top_k, true)) {
      add(fmt::format("mixture in one launch with the norm in its prologue, {} of {} experts {} [{} x {}] ff {}", top_k,
                      n_expert, ggml_type_name(gate.type), rows, embd, ff), sum_node, [=](CUstream s) {
        k::moe_single_launch(router, gate, up, down, a, xp, top_k, renorm, ids, wts, logits, gbuf, out, parts, sync, s,
                             &np);
      });
      return;
    }
    if (three && k::moe_route_norm_applies(router, rows, top_k)) {
      add(fmt::format("mixture in {} kernels with the norm in the router's prologue, {} of {} experts {} [{} x {}] "
                      "ff {}{}", split ? "two" : "three", top_k, n_expert, ggml_type_name(gate.type), rows, embd, ff,
                      split_note), sum_node, [=](CUstream s) {
        k::moe_route(router, xp, rows, top_k, renorm, ids, wts, k::QuantizedOut{q, a}, s, logits, &np,
                     use_wide ? &wide : nullptr);
        experts(s);
      });
      return;
    }
    // Fallback: the sum into its own storage, then add_rms_norm in place on it into x, then the
    // mixture below as it would run without the rule.
    const int64_t cols = embd;
    add(fmt::format("add_rms_norm [{} x {}] before the mixture", rows, cols), sum_node, [=](CUstream s) {
      cuda::copy_async(np.sum, np.x, static_cast<size_t>(rows * cols * 4), s, "copying on the GPU");
      k::add_rms_norm(np.sum, xp, np.y, np.w, rows, cols, np.eps, s, k::QuantizedOut{});
    });
  }
  if (single_marked && k::moe_single_launch_applies(router, gate, up, down, a, rows, top_k, false)) {
    add(fmt::format("mixture in one launch, {} of {} experts {} [{} x {}] ff {}", top_k, n_expert,
                    ggml_type_name(gate.type), rows, embd, ff), n, [=](CUstream s) {
      k::moe_single_launch(router, gate, up, down, a, xp, top_k, renorm, ids, wts, logits, gbuf, out, parts, sync, s);
    });
    return;
  }
  if (three) {
    add(fmt::format("mixture in three kernels, {} of {} experts {} [{} x {}] ff {}", top_k, n_expert,
                    ggml_type_name(gate.type), rows, embd, ff), n, [=](CUstream s) {
      k::moe_route(router, xp, rows, top_k, renorm, ids, wts, k::QuantizedOut{q, a}, s, logits, nullptr,
                   use_wide ? &wide : nullptr);
      experts(s);
    });
    return;
  }
  add(fmt::format("mixture {} of {} experts {} [{} x {}] ff {}", top_k, n_expert, ggml_type_name(gate.type), rows,
                  embd, ff), n, [=](CUstream s) {
    for (int64_t r0 = 0; r0 < rows; r0 += kGemvRows) {
      const int64_t nr = std::min(kGemvRows, rows - r0);
      const CUdeviceptr xr = xp + static_cast<CUdeviceptr>(r0 * embd * 4);
      const CUdeviceptr lr = logits + static_cast<CUdeviceptr>(r0 * n_expert * 4);
      const CUdeviceptr ir = ids + static_cast<CUdeviceptr>(r0 * top_k * 4);
      const CUdeviceptr wr = wts + static_cast<CUdeviceptr>(r0 * top_k * 4);
      const CUdeviceptr gr = gbuf + static_cast<CUdeviceptr>(r0 * top_k * ff * 4);
      const CUdeviceptr ur = ubuf + static_cast<CUdeviceptr>(r0 * top_k * ff * 4);
      k::gemv(router, k::Activations::f32, xr, nr, lr, s);
      k::route_top_k(ir, wr, lr, nr, n_expert, top_k, renorm, s);
      CUdeviceptr xin = xr;
      if (a != k::Activations::f32) {
        k::quantize_activations(xr, nr, embd, a, q, s);
        xin = q;
      }
      k::ExpertRouting route{ir, top_k, 0, false, false};
      k::gemv_experts(gate, a, xin, nr, route, gr, s);
      k::gemv_experts(up, a, xin, nr, route, ur, s);
      k::elementwise_binary(k::ElemBinary::swiglu, gr, gr, ur, nr * top_k * ff, nr * top_k * ff, s);
      CUdeviceptr hin = gr;
      if (a != k::Activations::f32) {
        k::quantize_activations(gr, nr * top_k, ff, a, q, s);
        hin = q;
      }
      k::ExpertRouting combine{ir, top_k, wr, true, true};
      k::gemv_experts(down, a, hin, nr, combine, out + static_cast<CUdeviceptr>(r0 * embd * 4), s);
    }
  });
}

}  // namespace lathe::plan
