// Rule rope_append: a layer's `Let q be q rotated ...` and `Let k be k rotated ...` (each after an
// optional `RMS norm of each head`), `Append k to the key cache ...` and `Append v to the value
// cache ...` as one kernel: q and k normed and rotated in place, k and v written into the caches.
// Applies when those nodes are one contiguous run of the graph (so running them at the last one
// moves nothing past a reader), both ropes read the positions input with the same modifiers, both or
// neither are normed (with one epsilon), the rotated k is read only by its append, and k and v have one shape.
#include "fuse/fusion.h"

#include <algorithm>

namespace lathe::fuse {
namespace {

bool same_attrs(const graph::Node& a, const graph::Node& b) {
  if (a.attrs.size() != b.attrs.size()) return false;
  for (size_t i = 0; i < a.attrs.size(); ++i) {
    if (a.attrs[i].kind != b.attrs[i].kind || a.attrs[i].args.size() != b.attrs[i].args.size()) return false;
    for (size_t j = 0; j < a.attrs[i].args.size(); ++j)
      if (a.attrs[i].args[j].tensor != b.attrs[i].args[j].tensor || a.attrs[i].args[j].number != b.attrs[i].args[j].number)
        return false;
  }
  return true;
}

double epsilon_of(const graph::Node& norm) {
  const graph::Attr* a = norm.find(lang::ModKind::epsilon);
  return a ? a->args[0].number : -1.0;
}

// The per-head norm that only `rope` reads and that feeds it, or -1.
int norm_before(const graph::Graph& g, const graph::Node& rope) {
  const int p = g.tensor(rope.args[0].tensor).producer;
  if (p < 0) return -1;
  const graph::Node& n = g.nodes[static_cast<size_t>(p)];
  if (n.kind != lang::OpKind::rms_norm || !n.each_head || only_consumer(g, n.output) != rope.id) return -1;
  return p;
}

}  // namespace

void rope_append_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups) {
  for (size_t i = 0; i + 1 < g.nodes.size(); ++i) {
    const graph::Node& ak = g.nodes[i];
    const graph::Node& av = g.nodes[i + 1];
    if (ak.kind != lang::OpKind::append_keys || av.kind != lang::OpKind::append_values) continue;
    const graph::Tensor& kt = g.tensor(ak.args[0].tensor);
    const graph::Tensor& vt = g.tensor(av.args[0].tensor);
    if (kt.shape != vt.shape || kt.shape.size() != 3 || kt.producer < 0) continue;
    if (g.tensor(ak.state[0]).layer != g.tensor(av.state[0]).layer) continue;
    const graph::Node& rk = g.nodes[static_cast<size_t>(kt.producer)];
    if (rk.kind != lang::OpKind::rope || only_consumer(g, kt.id) != ak.id) continue;
    // q's rope: the other rope of the run just before the appends.
    const graph::Node* rq = nullptr;
    for (int j = static_cast<int>(i) - 1; j >= 0 && j + 4 >= static_cast<int>(i); --j) {
      const graph::Node& r = g.nodes[static_cast<size_t>(j)];
      if (r.kind == lang::OpKind::rope && r.id != rk.id) {
        rq = &r;
        break;
      }
    }
    if (!rq || rq->args[1].tensor != rk.args[1].tensor || !same_attrs(*rq, rk)) continue;
    const graph::Tensor& pos = g.tensor(rk.args[1].tensor);  // the appends' slots are the input positions
    if (pos.role != graph::Role::input || pos.kind != lang::ValueKind::positions) continue;
    if (g.tensor(rq->output).shape.size() != 3 || g.tensor(rq->output).shape[2] != kt.shape[2]) continue;
    const int nq = norm_before(g, *rq), nk = norm_before(g, rk);
    if ((nq < 0) != (nk < 0)) continue;
    if (nq >= 0 && epsilon_of(g.nodes[static_cast<size_t>(nq)]) != epsilon_of(g.nodes[static_cast<size_t>(nk)]))
      continue;  // the kernel takes one epsilon
    std::vector<int> nodes;
    if (nq >= 0) nodes = {nq, nk};
    nodes.insert(nodes.end(), {rq->id, rk.id, ak.id, av.id});
    std::sort(nodes.begin(), nodes.end());
    bool ok = nodes.back() - nodes.front() + 1 == static_cast<int>(nodes.size());  // one contiguous run
    for (int n : nodes) ok = ok && !claimed[static_cast<size_t>(n)];
    if (!ok) continue;
    for (int n : nodes) claimed[static_cast<size_t>(n)] = true;
    groups.push_back({"rope_append", nodes});
  }
}

}  // namespace lathe::fuse
