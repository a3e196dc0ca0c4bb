// Rule qk_norm_rope: `Let q be the RMS norm of each head of q weighted by w.` then `Let q be q rotated
// at positions ...` run as one kernel (norm and rotate each head in registers). Applies when the
// norm's result is read only by the rope.
#include "fuse/fusion.h"

namespace lathe::fuse {

void qk_norm_rope_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups) {
  for (const graph::Node& norm : g.nodes) {
    if (norm.kind != lang::OpKind::rms_norm || !norm.each_head || claimed[static_cast<size_t>(norm.id)]) continue;
    const int c = only_consumer(g, norm.output);
    if (c < 0 || claimed[static_cast<size_t>(c)]) continue;
    const graph::Node& rope = g.nodes[static_cast<size_t>(c)];
    if (rope.kind != lang::OpKind::rope || rope.args[0].tensor != norm.output) continue;
    claimed[static_cast<size_t>(norm.id)] = claimed[static_cast<size_t>(c)] = true;
    groups.push_back({"qk_norm_rope", {norm.id, c}});
  }
}

}  // namespace lathe::fuse
