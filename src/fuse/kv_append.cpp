// Rule kv_append: `Append k to the key cache of layer L.` and `Append v to the value cache of layer
// L.` as one kernel. Applies when the value append is the very next node, so moving the key append
// to it passes nothing that reads the key cache.
#include "fuse/fusion.h"

namespace lathe::fuse {

void kv_append_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups) {
  for (size_t i = 0; i + 1 < g.nodes.size(); ++i) {
    const graph::Node& k = g.nodes[i];
    const graph::Node& v = g.nodes[i + 1];
    if (k.kind != lang::OpKind::append_keys || v.kind != lang::OpKind::append_values) continue;
    if (claimed[i] || claimed[i + 1]) continue;
    if (g.tensor(k.state[0]).layer != g.tensor(v.state[0]).layer) continue;
    if (g.tensor(k.args[0].tensor).shape[0] != g.tensor(v.args[0].tensor).shape[0]) continue;
    claimed[i] = claimed[i + 1] = true;
    groups.push_back({"kv_append", {k.id, v.id}});
  }
}

}  // namespace lathe::fuse
