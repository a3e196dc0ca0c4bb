// Rule rope_attention: a rope_append group and the attention after it (`Let a be the attention of q
// over the caches of layer L up to positions.`) as one kernel (kernels/rope_attention.cuh): each block
// of the attention rotates the query heads it reads in its shared memory after waiting for the q/k/v
// product, and the block that holds a row's new slot writes the row's rotated k and its v there
// first. One launch and one dependent wait fewer a layer. Applies when each row of the cut is its own
// sequence (a decode step, or a batch of one row a sequence: a row's new slot is read by that row
// alone), the attention is the group's very next node, reads the rotated q (its only reader) and
// the caches the group appends to, up to the positions the ropes turn by, and a kv head has at most
// 8 query heads (kernels/attention.cuh's ATTD_HEADS): with more, one kv head's heads are taken by
// several blocks, and those past the first would read the new slot before the first has written it.
// Runs after rope_append, whose groups it extends.
#include "fuse/fusion.h"

namespace lathe::fuse {

void rope_attention_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups) {
  if (g.rows != g.sequences) return;
  for (Group& grp : groups) {
    if (grp.rule != "rope_append") continue;
    const int next = grp.nodes.back() + 1;
    if (next >= static_cast<int>(g.nodes.size()) || claimed[static_cast<size_t>(next)]) continue;
    const graph::Node& attn = g.nodes[static_cast<size_t>(next)];
    if (attn.kind != lang::OpKind::attention) continue;
    const graph::Node* rope_q = nullptr;
    const graph::Node* append_k = nullptr;
    const graph::Node* append_v = nullptr;
    for (int id : grp.nodes) {
      const graph::Node& n = g.nodes[static_cast<size_t>(id)];
      if (n.kind == lang::OpKind::rope && n.output == attn.args[0].tensor) rope_q = &n;
      if (n.kind == lang::OpKind::append_keys) append_k = &n;
      if (n.kind == lang::OpKind::append_values) append_v = &n;
    }
    if (!rope_q || !append_k || !append_v || only_consumer(g, rope_q->output) != attn.id) continue;
    if (attn.state.size() < 2 || attn.state[0] != append_k->state[0] || attn.state[1] != append_v->state[0]) continue;
    const graph::Attr* up_to = attn.find(lang::ModKind::up_to);  // one position a row for both
    if (!up_to || up_to->args[0].tensor != rope_q->args[1].tensor) continue;
    const std::vector<int64_t>& qs = g.tensor(attn.args[0].tensor).shape;
    const std::vector<int64_t>& ks = g.tensor(append_k->args[0].tensor).shape;
    if (qs.size() != 3 || ks.size() != 3 || ks[1] <= 0 || qs[1] > kRopeAttentionMaxGroup * ks[1]) continue;
    claimed[static_cast<size_t>(next)] = true;
    grp.nodes.push_back(next);
    grp.rule = "rope_attention";
  }
}

}  // namespace lathe::fuse
