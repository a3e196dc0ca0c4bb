// Rule o_split: in a one-row cut, a layer's attention and its o product as one launch, o split along
// its input by kv head:
//   [add, norm, q, k, v]  ...  [norm, rope, append, attention]  (a rope_attention group)
//   join_heads   o (a product alone)   [add, norm, gate, up, swiglu]  (a norm_prologue group)
// where the feed-forward group's add sums the q/k/v group's sum (the residual) and o's result, each
// read by nothing else beyond their groups. The launch (kernels/attention_o_split_launch.h) computes
// each kv head's attention in R blocks, every one multiplying its share of o's rows at that head's
// columns and adding the partials into the residual held in fixed point (int64 in units of 2^-32:
// the same bits every run), the sum the q/k/v launch read (ffn_split's) and the feed-forward launch
// then reads (its s_in). It groups no nodes: it marks the o product with the attention
// (FusionPlan::o_splits). The GPU lane honours the mark where that residual is a fixed-point sum
// (the layer's q/k/v after an ffn_split launch, its feed-forward an ffn_split launch), the kernel
// takes the shapes (o Q8_0, int8 or int8x2, head size 64 or 128, a kv head's columns whole 16-byte
// lines) and in the decode step's short form (below long_from: every block reads its kv head's
// whole span); otherwise, held back (or with rope_attention or ffn_split held), the two launches.
// Numerics: o's output rounded to 2^-32 (docs/numerics.md).
#include "fuse/fusion.h"

namespace lathe::fuse {

OSplitMatch match_o_split(const graph::Graph& g, const FusionPlan& plan, size_t gi) {
  if (g.rows != 1 || gi + 3 >= plan.groups.size()) return {};
  auto node = [&](int id) -> const graph::Node& { return g.nodes[static_cast<size_t>(id)]; };
  const Group& att = plan.groups[gi];
  if (att.rule != "rope_attention") return {};
  const graph::Node& an = node(att.nodes.back());
  const Group& join = plan.groups[gi + 1];
  const Group& og = plan.groups[gi + 2];
  const Group& ffn = plan.groups[gi + 3];
  if (an.kind != lang::OpKind::attention || !join.rule.empty() || join.nodes.size() != 1 || !og.rule.empty() ||
      og.nodes.size() != 1)
    return {};
  const graph::Node& jn = node(join.nodes[0]);
  if (jn.kind != lang::OpKind::join_heads || jn.args[0].tensor != an.output || only_consumer(g, an.output) != jn.id)
    return {};
  const graph::Node& o = node(og.nodes[0]);
  if (o.kind != lang::OpKind::product || o.args[0].tensor != jn.output || only_consumer(g, jn.output) != o.id ||
      !o.args[1].is_tensor() || g.tensor(o.args[1].tensor).role != graph::Role::constant)
    return {};
  if (ffn.rule != "norm_prologue" || ffn.nodes.size() != 5 || node(ffn.nodes.back()).kind != lang::OpKind::swiglu)
    return {};
  const graph::Node& add = node(ffn.nodes[0]);
  if (add.kind != lang::OpKind::add || !add.args[0].is_tensor() || !add.args[1].is_tensor() ||
      add.args[1].tensor != o.output || only_consumer(g, o.output) != add.id)
    return {};
  // The residual: the sum a norm_prologue group of products formed, read by that group's norm and
  // this add alone (the launch adds o into its fixed-point form).
  const int producer = g.tensor(add.args[0].tensor).producer;
  if (producer < 0) return {};
  const int gq = plan.group_of[static_cast<size_t>(producer)];
  if (gq < 0) return {};
  const Group& qkv = plan.groups[static_cast<size_t>(gq)];
  if (qkv.rule != "norm_prologue" || qkv.nodes.size() < 4 || qkv.nodes[0] != producer) return {};
  if (node(qkv.nodes.back()).kind == lang::OpKind::mixture) return {};
  if (!read_only_by(g, add.args[0].tensor, {qkv.nodes[1], add.id})) return {};
  return {o.id, an.id, gq};
}

void o_split_pass(const graph::Graph& g, FusionPlan& plan) {
  for (size_t gi = 0; gi < plan.groups.size(); ++gi)
    if (const OSplitMatch m = match_o_split(g, plan, gi); m.o >= 0) plan.o_splits[m.o] = m.attention;
}

}  // namespace lathe::fuse
