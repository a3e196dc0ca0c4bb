// Rule quantize_epilogue: the activation a quantized product reads, quantized by the kernel that
// produces it (an RMS norm, a sum and its norm, an elementwise op or run, the SwiGLU of a merged gate
// and up product, an attention through the join of its heads) in its last pass, instead of by a
// quantizer launched before the product or in every block of the product's prologue. It groups
// no nodes: it marks the tensors whose producing group also writes their int8 form
// (FusionPlan::quantized_by_producer). The back end honours the mark under the int8 contracts, for the
// row counts whose products read that form, and ignores it otherwise (f32 contract). Applies to
// [rows, k] values, k % 32 == 0 (whole 32-value blocks), with at least one product reading them
// against a checkpoint matrix.
#include "fuse/fusion.h"

namespace lathe::fuse {

int epilogue_output(const graph::Graph& g, const Group& grp) {
  const graph::Node& last = g.nodes[static_cast<size_t>(grp.nodes.back())];
  if (grp.rule == "add_norm" || grp.rule == "elementwise_run") return last.output;
  // gate, up and the SwiGLU (alone or after the norm in the merged kernel's prologue): its epilogue.
  if ((grp.rule == "gate_up_swiglu" || grp.rule == "norm_prologue") && last.kind == lang::OpKind::swiglu)
    return last.output;
  // The attention's blocks that finish a row hold whole heads: its joined row, 32 values at a time
  // (alone, or after rope and the cache appends in its prologue).
  if (last.kind == lang::OpKind::attention && (grp.rule.empty() || grp.rule == "rope_attention")) {
    const int c = only_consumer(g, last.output);
    if (c >= 0 && g.nodes[static_cast<size_t>(c)].kind == lang::OpKind::join_heads) return g.nodes[static_cast<size_t>(c)].output;
    return -1;
  }
  if (!grp.rule.empty()) return -1;
  if (last.kind == lang::OpKind::rms_norm && !last.each_head) return last.output;
  if (is_elementwise(last.kind)) return last.output;
  return -1;
}

void quantize_epilogue_pass(const graph::Graph& g, FusionPlan& plan) {
  for (const Group& grp : plan.groups) {
    const int t = epilogue_output(g, grp);
    if (t < 0) continue;
    const graph::Tensor& x = g.tensor(t);
    if (x.shape.size() != 2 || x.shape[1] % 32 != 0) continue;
    for (int c : x.consumers) {
      const graph::Node& n = g.nodes[static_cast<size_t>(c)];
      if (n.kind == lang::OpKind::product && n.args[0].tensor == t && n.args[1].is_tensor() &&
          g.tensor(n.args[1].tensor).role == graph::Role::constant) {
        plan.quantized_by_producer.insert(t);
        break;
      }
    }
  }
}

}  // namespace lathe::fuse
