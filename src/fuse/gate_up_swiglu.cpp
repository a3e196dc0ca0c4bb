// Rule gate_up_swiglu: a feed-forward's two products of one activation and the SwiGLU of them,
//   Let g be h times blk.{L}.ffn_gate.weight.  Let u be h times blk.{L}.ffn_up.weight.
//   Let f be the SwiGLU of g and u.
// as one kernel for a decode row: a work item reads row o of both matrices and writes silu(g_o) u_o,
// so g and u never reach memory. Applies when both products read the same activation against
// checkpoint matrices of one shape and the SwiGLU is the only reader of each. The group runs at the
// SwiGLU's place; a back end may still run it as two products and the SwiGLU (a prefill chunk).
#include "fuse/fusion.h"

namespace lathe::fuse {

bool is_constant_product(const graph::Graph& g, const graph::Node& n) {
  return n.kind == lang::OpKind::product && n.args.size() == 2 && n.args[0].is_tensor() && n.args[1].is_tensor() &&
         g.tensor(n.args[1].tensor).role == graph::Role::constant;
}

void gate_up_swiglu_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups) {
  for (const graph::Node& s : g.nodes) {
    if (s.kind != lang::OpKind::swiglu || claimed[static_cast<size_t>(s.id)]) continue;
    if (!s.args[0].is_tensor() || !s.args[1].is_tensor() || s.args[0].tensor == s.args[1].tensor) continue;
    const int gate = g.tensor(s.args[0].tensor).producer, up = g.tensor(s.args[1].tensor).producer;
    if (gate < 0 || up < 0 || claimed[static_cast<size_t>(gate)] || claimed[static_cast<size_t>(up)]) continue;
    const graph::Node& gn = g.nodes[static_cast<size_t>(gate)];
    const graph::Node& un = g.nodes[static_cast<size_t>(up)];
    if (!is_constant_product(g, gn) || !is_constant_product(g, un)) continue;
    if (gn.args[0].tensor != un.args[0].tensor) continue;
    if (g.tensor(gn.args[1].tensor).shape != g.tensor(un.args[1].tensor).shape) continue;
    if (only_consumer(g, gn.output) != s.id || only_consumer(g, un.output) != s.id) continue;
    if (g.tensor(gn.output).role != graph::Role::temporary || g.tensor(un.output).role != graph::Role::temporary) continue;
    claimed[static_cast<size_t>(gate)] = claimed[static_cast<size_t>(up)] = claimed[static_cast<size_t>(s.id)] = true;
    groups.push_back({"gate_up_swiglu", {std::min(gate, up), std::max(gate, up), s.id}});
  }
}

}  // namespace lathe::fuse
