// Rule add_norm: `Let x be x plus a.` then `Let h be the RMS norm of x weighted by w.` run as one
// kernel that adds in place and norms the sum. Applies when the sum feeds the norm and the first
// operand of the add (the residual) is read by nothing after the add (earlier readers, like the norm
// that opened the block, are done with it), so its storage may take the sum.
#include "fuse/fusion.h"

namespace lathe::fuse {

void add_norm_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups) {
  for (const graph::Node& add : g.nodes) {
    if (add.kind != lang::OpKind::add || claimed[static_cast<size_t>(add.id)]) continue;
    if (!add.args[0].is_tensor() || !add.args[1].is_tensor()) continue;
    const graph::Tensor& a = g.tensor(add.args[0].tensor);
    const graph::Tensor& b = g.tensor(add.args[1].tensor);
    const graph::Tensor& sum = g.tensor(add.output);
    if (a.shape != b.shape || a.shape.size() != 2 || a.role != graph::Role::temporary) continue;
    if (a.consumers.empty() || a.consumers.back() != add.id) continue;  // the residual dies in the add
    // The norm: the first consumer of the sum after the add.
    for (int c : sum.consumers) {
      const graph::Node& norm = g.nodes[static_cast<size_t>(c)];
      if (norm.kind != lang::OpKind::rms_norm || norm.each_head || claimed[static_cast<size_t>(c)]) continue;
      if (norm.args[0].tensor != sum.id) continue;
      // Nothing between the add and the norm may read or write the sum's buffer differently: the
      // norm must be the sum's first consumer.
      if (sum.consumers.front() != c) break;
      claimed[static_cast<size_t>(add.id)] = claimed[static_cast<size_t>(c)] = true;
      groups.push_back({"add_norm", {add.id, c}});
      break;
    }
  }
}

}  // namespace lathe::fuse
