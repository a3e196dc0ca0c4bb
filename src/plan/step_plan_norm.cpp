// The sum and the norm's weighting in the epilogue of the product before a norm_prologue group of
// products (fusion rule norm_epilogue): whether the lane takes a marked pair, and the product's launch
// that then forms the sum, h = s * w's int8 form and the sum of squares' parts
// (kernels/norm_epilogue_launch.h). The norm_prologue group then copies its x (emit_norm_prologue).
#include "kernels/norm_epilogue_launch.h"
#include "plan/step_plan_ops.h"

#include <fmt/format.h>

namespace lathe::plan {
namespace {

using lang::ModKind;
using lang::OpKind;
namespace k = kernels;

}  // namespace

// The products a norm_prologue group of products ([add, norm, q, k, v] or [add, norm, gate, up,
// swiglu]) multiplies.
std::vector<k::WeightMatrix> StepPlan::Builder::norm_group_matrices(const fuse::Group& grp) const {
  const bool swiglu = g.nodes[static_cast<size_t>(grp.nodes.back())].kind == OpKind::swiglu;
  const size_t n_products = grp.nodes.size() - 2 - (swiglu ? 1 : 0);
  std::vector<k::WeightMatrix> ws;
  for (size_t i = 0; i < n_products; ++i)
    ws.push_back(weight_of(m, g.tensor(g.nodes[static_cast<size_t>(grp.nodes[2 + i])].args[1].tensor)));
  return ws;
}

// Where the norm group would run the merged kernel with the norm in its prologue (emit_norm_prologue's
// choice), the norm has a weight, and the product's launch takes the shape; never for a product whose
// launch takes a router (router_epilogue). Measured on the H200 (docs/perf.md, 2026-12-02): after the
// attention too. There o's blocks that start last (on the attention's SMs) carry whole 32-row blocks
// where dealt one row at a time they carry half, and o ends ~2 us later, but gate/up gains that back
// (Q8_0) or far more (Q4_K_M: 414 -> 435 tok/s with o, against down alone).
bool StepPlan::Builder::takes_norm_epilogue(int go, int gn) const {
  const fuse::Group& pg = p.fusion_.groups[static_cast<size_t>(go)];
  const fuse::Group& ng = p.fusion_.groups[static_cast<size_t>(gn)];
  const graph::Node& prod = g.nodes[static_cast<size_t>(pg.nodes[0])];
  const graph::Node& norm = g.nodes[static_cast<size_t>(ng.nodes[1])];
  const k::Activations a = o.activations;
  if (g.rows != 1 || a == k::Activations::f32 || router_epi_of_product.count(go)) return false;
  if (ffn_split_of_ffn.count(gn) || ffn_split_downs.count(go)) return false;  // ffn_split's launch forms the sum
  if (!reads_quantized(prod) || !norm.find(ModKind::weighted_by) || norm.find(ModKind::shifted_by)) return false;
  const std::vector<k::WeightMatrix> ws = norm_group_matrices(ng);
  if (!k::merged_norm_applies(ws.data(), static_cast<int>(ws.size()), a)) return false;
  const k::WeightMatrix w = weight_of(m, g.tensor(prod.args[1].tensor));
  return w.n_out == ws[0].k && k::norm_epilogue_applies(w, a);
}

// The product of a marked pair: the decode GEMV whose epilogue writes the sum (the next residual), h's
// int8 form and the parts into the norm group's storage and scratch (slot 0 and norm_epi_parts', as
// emit_norm_prologue reads them). `quantize`: this launch first makes its input's int8 form.
void StepPlan::Builder::emit_norm_epilogue(const graph::Node& n, int gi, bool quantize) {
  const int gn = norm_epi_of_product.at(gi);
  const fuse::Group& ng = p.fusion_.groups[static_cast<size_t>(gn)];
  const graph::Node& sum_node = g.nodes[static_cast<size_t>(ng.nodes[0])];
  const graph::Node& norm = g.nodes[static_cast<size_t>(ng.nodes[1])];
  const k::WeightMatrix w = weight_of(m, g.tensor(n.args[1].tensor));
  const graph::Tensor& x = g.tensor(n.args[0].tensor);
  const int64_t kk = x.shape.back();
  const k::Activations a = o.activations;
  k::NormEpilogue e;
  e.resid = ptr(sum_node.args[0].tensor);
  e.sum = ptr(sum_node.output);
  e.norm_w = ptr(norm.find(ModKind::weighted_by)->args[0].tensor);
  e.x_q = k::QuantizedOut{scratch_ptr(gn, 0), a};
  e.parts = scratch_ptr(gn, norm_epi_parts.at(gn));
  if (k::norm_epilogue_count_bytes(w, a) > 0) e.count = p.norm_counts_.ptr();
  const CUdeviceptr xp = ptr(x.id), q = scratch_ptr(gi, 0);
  const bool in_row = quantize && k::norm_epilogue_quantizes_row(w, a) && xp % 16 == 0;
  add(fmt::format("gemv {} {} [1 x {}] . [{} x {}]^T with the sum and the norm's weighting in its epilogue",
                  k::activations_name(a), ggml_type_name(w.type), kk, w.n_out, kk),
      n, [=](CUstream s) {
        if (in_row) return k::gemv_norm_epilogue(w, a, 0, e, s, xp);  // every block quantizes x's row
        if (quantize) k::quantize_activations(xp, 1, kk, a, q, s);
        k::gemv_norm_epilogue(w, a, q, e, s);
      });
}

}  // namespace lathe::plan
