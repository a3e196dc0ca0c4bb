// Rule router_epilogue: in a one-row cut, a mixture whose norm_prologue group ([add, norm, mixture]) adds
// a product's result to the residual, with that product right before it: the product's launch also
// forms the sum, its squares and the router's logits in its epilogue, and its last block the norm's
// factor, the top k and x's int8 form (moe_route_epilogue.cuh); the mixture then runs its expert
// kernels only. The router's logits are linear in the sum s: logit_e = inv_rms(s) sum_i router[e][i]
// w_i s_i, so each block adds its rows' share with no x formed first. It groups no nodes: it marks
// the product (FusionPlan::router_epilogues). The GPU lane honours the mark where its kernels take the
// shapes (route_epilogue_launch.h) and runs the product and the router kernel otherwise; held back,
// always those. The sum is the same bits either way; the logits and the norm's factor add the same
// terms in another order (docs/numerics.md).
#include "fuse/fusion.h"

namespace lathe::fuse {

void router_epilogue_pass(const graph::Graph& g, FusionPlan& plan) {
  if (g.rows != 1) return;
  for (size_t gi = 1; gi < plan.groups.size(); ++gi) {
    const Group& grp = plan.groups[gi];
    if (grp.rule != "norm_prologue" || grp.nodes.size() != 3) continue;
    const graph::Node& mix = g.nodes[static_cast<size_t>(grp.nodes[2])];
    if (mix.kind != lang::OpKind::mixture) continue;
    if (const graph::Node* p = product_added_by(g, plan, gi)) plan.router_epilogues[p->id] = mix.id;
  }
}

}  // namespace lathe::fuse
