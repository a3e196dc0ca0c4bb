// Rule add_norm: `Let x be x plus a.` then `Let h be the RMS norm of x weighted by w.` run as one
// kernel that adds in place and norms the sum. Applies when the sum feeds the norm and the first
// operand of the add (the residual) is read by nothing after the add (earlier readers, like the norm
// that opened the block, are done with it), so its storage may take the sum.
#include "fuse/fusion.h"

namespace lathe::fuse {

const graph::Node* norm_of_residual_sum(const graph::Graph& g, const graph::Node& add, const std::vector<bool>& claimed) {
  if (add.kind != lang::OpKind::add || claimed[static_cast<size_t>(add.id)]) return nullptr;
  if (!add.args[0].is_tensor() || !add.args[1].is_tensor()) return nullptr;
  const graph::Tensor& a = g.tensor(add.args[0].tensor);
  const graph::Tensor& b = g.tensor(add.args[1].tensor);
  const graph::Tensor& sum = g.tensor(add.output);
  if (a.shape != b.shape || a.shape.size() != 2 || a.role != graph::Role::temporary) return nullptr;
  if (a.consumers.empty() || a.consumers.back() != add.id) return nullptr;  // the residual dies in the add
  // Nothing between the add and the norm may read or write the sum's buffer differently: the norm
  // must be the sum's first consumer.
  if (sum.consumers.empty()) return nullptr;
  const int c = sum.consumers.front();
  const graph::Node& norm = g.nodes[static_cast<size_t>(c)];
  if (norm.kind != lang::OpKind::rms_norm || norm.each_head || claimed[static_cast<size_t>(c)]) return nullptr;
  return norm.args[0].tensor == sum.id ? &norm : nullptr;
}

void add_norm_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups) {
  for (const graph::Node& add : g.nodes) {
    const graph::Node* norm = norm_of_residual_sum(g, add, claimed);
    if (!norm) continue;
    claimed[static_cast<size_t>(add.id)] = claimed[static_cast<size_t>(norm->id)] = true;
    groups.push_back({"add_norm", {add.id, norm->id}});
  }
}

}  // namespace lathe::fuse
