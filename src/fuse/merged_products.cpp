// Rule merged_products: two or three products of one activation against checkpoint matrices of one
// input size (attention's q, k and v) in one launch, their rows dealt to every multiprocessor as one
// work list, so the narrow ones (k and v of grouped-query attention) no longer leave the card idle.
// Applies to products not claimed by an earlier rule (gate_up_swiglu takes a feed-forward's pair);
// the group runs at its last product's place, so a product joins only if nothing reads its output
// before that place (q, k, v written one after another, then used); nothing between the products
// writes their input (products only write their own outputs).
#include "fuse/fusion.h"

#include <map>

namespace lathe::fuse {

bool is_constant_product(const graph::Graph& g, const graph::Node& n);

namespace {
constexpr size_t kMaxMerged = 3;  // kernels::gemv_multi
}  // namespace

void merged_products_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups) {
  std::map<int, std::vector<int>> by_input;  // activation -> its unclaimed products, in order
  for (const graph::Node& n : g.nodes)
    if (!claimed[static_cast<size_t>(n.id)] && is_constant_product(g, n)) by_input[n.args[0].tensor].push_back(n.id);
  // Whether every reader of the group's products comes after its last one.
  auto read_after = [&](const std::vector<int>& group) {
    for (int n : group)
      for (int c : g.tensor(g.nodes[static_cast<size_t>(n)].output).consumers)
        if (c < group.back()) return false;
    return true;
  };
  for (auto& [input, products] : by_input) {
    std::vector<int> group;
    for (int n : products) {
      group.push_back(n);
      if (!read_after(group)) group = {n};
      if (group.size() == kMaxMerged) {
        for (int m : group) claimed[static_cast<size_t>(m)] = true;
        groups.push_back({"merged_products", group});
        group.clear();
      }
    }
    if (group.size() >= 2) {
      for (int m : group) claimed[static_cast<size_t>(m)] = true;
      groups.push_back({"merged_products", group});
    }
  }
}

}  // namespace lathe::fuse
