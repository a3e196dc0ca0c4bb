// The mixture's router in the epilogue of the product before it (fusion rule router_epilogue): whether
// the lane takes a marked pair, and the product's launch that then forms the sum, the router's top k and
// x's int8 form (kernels/route_epilogue_launch.h). The mixture group then runs its expert kernels only
// (emit_mixture).
#include "kernels/gemv_launch.h"
#include "kernels/moe_launch.h"
#include "kernels/route_epilogue_launch.h"
#include "plan/step_plan_ops.h"
#include "runtime/cuda_driver.h"

#include <fmt/format.h>

namespace lathe::plan {
namespace {

using lang::ModKind;
namespace k = kernels;

}  // namespace

// Where the three mixture kernels with the norm in the router's prologue would run (emit_mixture's
// choice) and the fused launch takes the product and the router's shape; never with the mixture in one
// launch or the wide router asked for (measuring knobs), nor without the norm's weight. Nor while
// recording for `lathe emit`: the standalone program would carry the columns as a blob of its source
// (1 MB a layer at qwen3-30b-a3b); it runs the router kernel instead.
bool StepPlan::Builder::takes_router_epilogue(int go, int gm) const {
  if (cuda::recorder()) return false;
  const fuse::Group& pg = p.fusion_.groups[static_cast<size_t>(go)];
  const fuse::Group& mg = p.fusion_.groups[static_cast<size_t>(gm)];
  const graph::Node& prod = g.nodes[static_cast<size_t>(pg.nodes[0])];
  const graph::Node& norm = g.nodes[static_cast<size_t>(mg.nodes[1])];
  const graph::Node& mix = g.nodes[static_cast<size_t>(mg.nodes[2])];
  const k::Activations a = o.activations;
  if (g.rows != 1 || a == k::Activations::f32 || !moe_kernels_enabled() || k::moe_route_wide_chosen()) return false;
  if (moe_one_launch_enabled() && p.fusion_.one_launch_mixtures.count(mix.id)) return false;
  if (!reads_quantized(prod) || !norm.find(ModKind::weighted_by)) return false;
  const graph::Attr* ex = mix.find(ModKind::experts);
  const k::WeightMatrix router = weight_of(m, g.tensor(mix.find(ModKind::routed_by)->args[0].tensor));
  const k::WeightMatrix gate = weight_of(m, g.tensor(ex->args[0].tensor));
  const k::WeightMatrix up = weight_of(m, g.tensor(ex->args[1].tensor));
  const k::WeightMatrix down = weight_of(m, g.tensor(ex->args[2].tensor));
  const k::WeightMatrix w = weight_of(m, g.tensor(prod.args[1].tensor));
  const int64_t top_k = static_cast<int64_t>(mix.args[0].number);
  if (!k::moe_route_norm_applies(router, 1, top_k) || !k::moe_gate_up_applies(gate, up, a, top_k) ||
      !k::moe_down_applies(down, a, top_k))
    return false;
  return w.n_out == router.k && k::route_epilogue_applies(w, a, router.n_out, top_k);
}

// The product of a marked pair: the decode GEMV whose epilogue writes the sum (the next residual) and,
// in its last block, the router's ids, weights and logits and x's int8 form into the mixture group's
// scratch (slots as emit_mixture names them). `quantize`: this launch first makes its input's int8 form.
void StepPlan::Builder::emit_router_epilogue(const graph::Node& n, int gi, bool quantize) {
  const int gm = router_epi_of_product.at(gi);
  const fuse::Group& mg = p.fusion_.groups[static_cast<size_t>(gm)];
  const graph::Node& sum_node = g.nodes[static_cast<size_t>(mg.nodes[0])];
  const graph::Node& norm = g.nodes[static_cast<size_t>(mg.nodes[1])];
  const graph::Node& mix = g.nodes[static_cast<size_t>(mg.nodes[2])];
  const graph::Tensor& router_t = g.tensor(mix.find(ModKind::routed_by)->args[0].tensor);
  const graph::Tensor& norm_w = g.tensor(norm.find(ModKind::weighted_by)->args[0].tensor);
  const k::WeightMatrix router = weight_of(m, router_t);
  const k::WeightMatrix w = weight_of(m, g.tensor(n.args[1].tensor));
  const graph::Tensor& x = g.tensor(n.args[0].tensor);
  const int64_t kk = x.shape.back();
  const k::Activations a = o.activations;

  // The router's columns weighted by the norm: a constant, formed here from the checkpoint.
  const std::vector<float> r32 = m.host_f32(router_t.checkpoint_name);
  const std::vector<float> cols = k::router_columns(r32.data(), m.host_vector(norm_w.checkpoint_name).data(),
                                                    router.n_out, router.k);
  p.router_columns_.emplace_back(cols.size() * 4 + 16, "router columns");
  p.router_columns_.back().upload(cols.data(), cols.size() * 4);

  k::RouteEpilogue r;
  r.resid = ptr(sum_node.args[0].tensor);
  r.sum = ptr(sum_node.output);
  r.cols = p.router_columns_.back().ptr();
  r.norm_w = ptr(norm_w.id);
  const graph::Attr* ea = norm.find(ModKind::epsilon);
  r.eps = static_cast<float>(ea ? ea->args.at(0).number : 1e-6);
  r.n_expert = router.n_out;
  r.top_k = static_cast<int64_t>(mix.args[0].number);
  r.renormalize = mix.find(ModKind::renormalized) != nullptr;
  r.logits = scratch_ptr(gm, 0);
  r.ids = scratch_ptr(gm, 1);
  r.weights = scratch_ptr(gm, 2);
  r.x_q = k::QuantizedOut{scratch_ptr(gm, 5), a};
  r.parts = scratch_ptr(gm, 6);
  r.count = p.moe_sync_.ptr() + 12;
  const CUdeviceptr xp = ptr(x.id), q = scratch_ptr(gi, 0);
  add(fmt::format("gemv {} {} [1 x {}] . [{} x {}]^T with the router of {} of {} experts in its epilogue",
                  k::activations_name(a), ggml_type_name(w.type), kk, w.n_out, kk, r.top_k, r.n_expert),
      n, [=](CUstream s) {
        if (quantize) k::quantize_activations(xp, 1, kk, a, q, s);
        k::gemv_route_epilogue(w, a, q, r, s);
      });
}

}  // namespace lathe::plan
