// Rule norm_prologue (on by default; LATHE_NORM_PROLOGUE=0 or --hold norm_prologue turns it off): in a one-row cut,
// `Let x be x plus a.`, `Let h be the RMS norm of x weighted by w.` and the two or three products that
// read h (q, k and v; or gate and up with the SwiGLU of their results) as one launch: every block of
// the merged decode GEMV adds, norms and quantizes the row in its prologue, so the row's norm no
// longer is a launch of one block. Applies when the add's residual dies in it and the norm is the
// sum's first reader (as add_norm), h is read by those products only, and the nodes are one
// contiguous run of the graph (so running them at the last one moves nothing past a reader).
// Also a mixture that alone reads h, right after the norm: the router kernel (moe_route.cuh) adds
// and norms the row in its prologue, with add_rms_norm's arithmetic to the bit.
#include "fuse/fusion.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace lathe::fuse {
namespace {

// Measured on the H200 (qwen3-8b Q8_0 tg128): 285.5 -> 302.1 tok/s; with the mixture's router too,
// qwen3-30b-a3b Q8_0 held back 347.1, on 367.3. LATHE_NORM_PROLOGUE=0 turns it off
// for measurements, as --hold does for a run.
bool enabled() {
  const char* v = std::getenv("LATHE_NORM_PROLOGUE");
  return !(v && std::string(v) == "0");
}

}  // namespace

void norm_prologue_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups) {
  if (g.rows != 1 || !enabled()) return;
  for (const graph::Node& add : g.nodes) {
    const graph::Node* norm_node = norm_of_residual_sum(g, add, claimed);
    if (!norm_node) continue;
    const graph::Node& norm = *norm_node;
    const graph::Tensor& h = g.tensor(norm.output);
    // Or a mixture reading h alone: its router kernel adds and norms in its prologue.
    if (h.consumers.size() == 1) {
      const graph::Node& mix = g.nodes[static_cast<size_t>(h.consumers[0])];
      if (mix.kind != lang::OpKind::mixture || mix.args[2].tensor != h.id || mix.id != norm.id + 1 ||
          norm.id != add.id + 1 || claimed[static_cast<size_t>(mix.id)])
        continue;
      for (int n : {add.id, norm.id, mix.id}) claimed[static_cast<size_t>(n)] = true;
      groups.push_back({"norm_prologue", {add.id, norm.id, mix.id}});
      continue;
    }
    std::vector<int> products;
    bool ok = h.consumers.size() >= 2 && h.consumers.size() <= 3;
    for (int c : h.consumers) {
      const graph::Node& p = g.nodes[static_cast<size_t>(c)];
      ok = ok && p.kind == lang::OpKind::product && p.args[0].tensor == h.id &&
           g.tensor(p.args[1].tensor).role == graph::Role::constant;
      products.push_back(c);
    }
    if (!ok) continue;
    std::vector<int> nodes = {add.id, norm.id};
    if (products.size() == 2) {  // gate and up: their SwiGLU joins when it reads exactly them
      const int s0 = only_consumer(g, g.nodes[static_cast<size_t>(products[0])].output);
      const int s1 = only_consumer(g, g.nodes[static_cast<size_t>(products[1])].output);
      if (s0 < 0 || s0 != s1 || g.nodes[static_cast<size_t>(s0)].kind != lang::OpKind::swiglu) continue;
      const graph::Node& sw = g.nodes[static_cast<size_t>(s0)];
      // Ordered as the SwiGLU reads them: gate, then up.
      const int gate = g.tensor(sw.args[0].tensor).producer, up = g.tensor(sw.args[1].tensor).producer;
      if (gate == up) continue;
      nodes.insert(nodes.end(), {gate, up, sw.id});
    } else {
      nodes.insert(nodes.end(), products.begin(), products.end());
    }
    std::vector<int> sorted = nodes;
    std::sort(sorted.begin(), sorted.end());
    ok = sorted.back() - sorted.front() + 1 == static_cast<int>(sorted.size());  // one contiguous run
    // The planner reads add, norm, the products (gate before up), [the SwiGLU]; the group runs at its
    // last node, which must be the run's last.
    ok = ok && nodes.back() == sorted.back();
    for (int n : nodes) ok = ok && !claimed[static_cast<size_t>(n)];
    if (!ok) continue;
    for (int n : nodes) claimed[static_cast<size_t>(n)] = true;
    groups.push_back({"norm_prologue", nodes});
  }
}

}  // namespace lathe::fuse
