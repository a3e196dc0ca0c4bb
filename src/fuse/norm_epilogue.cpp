// Rule norm_epilogue: in a one-row cut, a norm_prologue group of products ([add, norm, q, k, v] or
// [add, norm, gate, up, swiglu]) whose add sums the residual and the result of the product right
// before it: that product's launch also forms the sum (the next residual), the norm's weighting of it
// and that row's int8 form in its epilogue, and each of its blocks its rows' share of the sum of
// squares (kernels/gemv_norm_epilogue.cuh); the merged products then copy their x and multiply each
// row's sums by the norm's factor 1 / rms(s) that they take from the shares, instead of adding,
// norming and quantizing the row in every block. The int8 levels do not depend on that factor (a block's levels are its
// values over its largest one), so they are quantized before it is known. It groups no nodes: it marks
// the product (FusionPlan::norm_epilogues). The GPU lane honours the mark where its kernels take the
// shapes (norm_epilogue_launch.h) and runs the product and the norm in the prologue otherwise; held
// back, always those. The sum is the same bits either way; x's levels and scales differ from the norm
// prologue's by that rounding (docs/numerics.md).
#include "fuse/fusion.h"

namespace lathe::fuse {

void norm_epilogue_pass(const graph::Graph& g, FusionPlan& plan) {
  if (g.rows != 1) return;
  for (size_t gi = 1; gi < plan.groups.size(); ++gi) {
    const Group& grp = plan.groups[gi];
    if (grp.rule != "norm_prologue" || grp.nodes.size() < 4) continue;  // products, not a mixture
    if (g.nodes[static_cast<size_t>(grp.nodes.back())].kind == lang::OpKind::mixture) continue;
    if (const graph::Node* p = product_added_by(g, plan, gi)) plan.norm_epilogues[p->id] = grp.nodes[0];
  }
}

}  // namespace lathe::fuse
