// Rule attention_half: in a one-row cut, a layer's attention half as one launch:
//   [add, norm, q, k, v]  [norm, rope, append, attention]  join_heads  o  [add, norm, gate, up, swiglu]
// where o_split's match holds (o_split.cpp: the residual the q/k/v group formed is read by its norm
// and the feed-forward add alone) and the q/k/v group is exactly the residual's add, its norm and three
// products of checkpoint matrices reading the norm, whose results the rope_attention group alone reads,
// directly or through their split into heads (no bias between). The launch (kernels/attention_o_split_launch.h's attention_half) forms the norm
// of the residual held in fixed point, the q/k/v products by kv head, the attention split over a
// cluster of blocks a kv head with rope_attention's prologue, and o split along its input, adding o's
// output and the residual into the next fixed-point sum, which the feed-forward launch reads. It groups
// no nodes: it marks the o product with the attention (FusionPlan::attention_halves). The GPU lane
// honours the mark where o_split's would be (the residual a fixed-point sum, the feed-forward half an
// ffn_split launch), the kernel takes the shapes, and in the decode step's short form; otherwise,
// held back, the launches o_split or the held-back rules give. Numerics: as o_split's (o's output and
// the residual rounded to 2^-32; docs/numerics.md).
#include "fuse/fusion.h"

namespace lathe::fuse {

void attention_half_pass(const graph::Graph& g, FusionPlan& plan) {
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const OSplitMatch m = match_o_split(g, plan, gi);
    if (m.o < 0) continue;
    const Group& qkv = plan.groups[static_cast<size_t>(m.qkv_group)];
    if (qkv.nodes.size() != 5) continue;
    const graph::Node& norm = g.nodes[static_cast<size_t>(qkv.nodes[1])];
    // (weighted and unshifted: the launch reads the norm's weights, and has no bias to add)
    bool ok = norm.kind == lang::OpKind::rms_norm && norm.find(lang::ModKind::weighted_by) &&
              !norm.find(lang::ModKind::shifted_by);
    for (size_t i = 2; i < 5 && ok; ++i) {
      const graph::Node& p = g.nodes[static_cast<size_t>(qkv.nodes[i])];
      ok = p.kind == lang::OpKind::product && p.args[0].is_tensor() && p.args[0].tensor == norm.output &&
           p.args[1].is_tensor() && g.tensor(p.args[1].tensor).role == graph::Role::constant;
      for (int c : ok ? g.tensor(p.output).consumers : std::vector<int>{}) {
        // read by the attention's group, or through the split into heads (a view) by it alone
        const graph::Node& cn = g.nodes[static_cast<size_t>(c)];
        if (plan.group_of[static_cast<size_t>(c)] == static_cast<int>(gi)) continue;
        ok = ok && cn.kind == lang::OpKind::split_heads && !g.tensor(cn.output).consumers.empty();
        for (int cc : ok ? g.tensor(cn.output).consumers : std::vector<int>{})
          ok = ok && plan.group_of[static_cast<size_t>(cc)] == static_cast<int>(gi);
      }
    }
    if (ok) plan.attention_halves[m.o] = m.attention;
  }
}

}  // namespace lathe::fuse
