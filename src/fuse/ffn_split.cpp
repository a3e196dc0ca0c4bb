// Rule ffn_split: in a one-row cut, a layer's feed-forward half and the residual sum after it as one
// launch, the down product split along its input:
//   [add, norm, gate, up, swiglu]  (a norm_prologue group)   then   down   (a product alone)
// where the next group is a norm_prologue group of products ([add, norm, q, k, v]) whose add sums the
// first group's sum and down's result, read by nothing else. The launch (kernels/ffn_split_launch.h)
// forms the first sum, its norm, gate/up, the SwiGLU and down, and adds every block's share of down
// and the sum into the next residual held in fixed point (int64 in units of 2^-32: the same bits every
// run); the next group's prologue reads that sum instead of adding. It groups no nodes: it marks the
// down product with the add whose sum its launch forms (FusionPlan::ffn_splits). Also a mixture:
//   [add, norm, mixture]  (a norm_prologue group)   then   [add, norm, q, k, v]
// where the next add sums the first sum and the mixture's result: one launch runs the kept experts'
// gate/up, SwiGLU and down (each down split the same way, weighted) after the router (ffn_split_launch.h's
// moe_split), and the mixture node is marked (the lane takes that form only under LATHE_MOE_SPLIT=1:
// slower so far). The GPU lane honours
// the mark where its kernel takes the shapes (Q8_0, int8 or int8x2, n_embd within shared memory) and
// runs the two launches otherwise; held back (or with norm_prologue held), always those. Numerics: the
// sum rounded to 2^-32 (docs/numerics.md).
#include "fuse/fusion.h"

namespace lathe::fuse {

namespace {

// Whether group gi is a norm_prologue [add, norm, mixture] group and group gi + 1 a norm_prologue
// group of products whose add sums the mixture group's sum and the mixture's result, read by nothing
// else: the mixture's node, else -1.
int mixture_before_products(const graph::Graph& g, const FusionPlan& plan, size_t gi) {
  const Group& mg = plan.groups[gi];
  const Group& next = plan.groups[gi + 1];
  if (mg.rule != "norm_prologue" || mg.nodes.size() != 3 || next.rule != "norm_prologue" || next.nodes.size() < 4)
    return -1;
  const graph::Node& mix = g.nodes[static_cast<size_t>(mg.nodes[2])];
  if (mix.kind != lang::OpKind::mixture || g.nodes[static_cast<size_t>(next.nodes.back())].kind == lang::OpKind::mixture)
    return -1;
  const graph::Node& add = g.nodes[static_cast<size_t>(mg.nodes[0])];
  const graph::Node& next_add = g.nodes[static_cast<size_t>(next.nodes[0])];
  if (next_add.kind != lang::OpKind::add || !next_add.args[0].is_tensor() || !next_add.args[1].is_tensor()) return -1;
  if (next_add.args[0].tensor != add.output || next_add.args[1].tensor != mix.output) return -1;
  if (only_consumer(g, mix.output) != next_add.id) return -1;
  return read_only_by(g, add.output, {mg.nodes[1], next_add.id}) ? mix.id : -1;
}

}  // namespace

void ffn_split_pass(const graph::Graph& g, FusionPlan& plan) {
  if (g.rows != 1) return;
  for (size_t gi = 0; gi + 1 < plan.groups.size(); ++gi) {
    if (const int mix = mixture_before_products(g, plan, gi); mix >= 0) {
      plan.ffn_splits[mix] = plan.groups[gi + 1].nodes[0];
      continue;
    }
    if (gi + 2 >= plan.groups.size()) continue;
    const Group& ffn = plan.groups[gi];
    if (ffn.rule != "norm_prologue" || ffn.nodes.size() != 5) continue;
    const graph::Node& sw = g.nodes[static_cast<size_t>(ffn.nodes.back())];
    if (sw.kind != lang::OpKind::swiglu) continue;
    const Group& next = plan.groups[gi + 2];
    if (next.rule != "norm_prologue" || next.nodes.size() < 4) continue;  // products, not a mixture
    if (g.nodes[static_cast<size_t>(next.nodes.back())].kind == lang::OpKind::mixture) continue;
    const graph::Node* down = product_added_by(g, plan, gi + 2);
    if (!down || down->args[0].tensor != sw.output || only_consumer(g, sw.output) != down->id) continue;
    // The next add sums the first group's sum and down's result; the first sum has no other reader
    // beyond the group's norm (the launch writes it only in fixed point, into the next sum).
    const graph::Node& add = g.nodes[static_cast<size_t>(ffn.nodes[0])];
    const graph::Node& next_add = g.nodes[static_cast<size_t>(next.nodes[0])];
    if (!next_add.args[0].is_tensor() || next_add.args[0].tensor != add.output) continue;
    if (!read_only_by(g, add.output, {ffn.nodes[1], next_add.id})) continue;
    plan.ffn_splits[down->id] = next_add.id;
  }
}

}  // namespace lathe::fuse
