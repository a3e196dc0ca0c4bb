// Rule experts_by_slot: a decode row's kept experts (their gate/up/SwiGLU and the down product with
// the weighted combine) in ONE launch whose blocks are dealt by slot, where a back end can: the blocks
// of one slot compute that expert's h between them and meet on a count of their own, so no block waits
// for the whole grid between gate/up and down, and each warp's down rows stream behind its gate/up
// rows in one ring. It groups no nodes: it marks the mixtures (FusionPlan::by_slot_mixtures). The GPU
// lane honours the mark under LATHE_MOE_BY_SLOT=1 (measured slower in the decode step than the two
// kernels, docs/perf.md) for one decode row under an int8 contract where its kernel takes the shapes
// (kernels/moe_launch.h, moe_experts_by_slot_applies), and runs the two expert kernels otherwise;
// held back, always the two. The sums of h are the same bits; the combine's order of additions is
// the kernel's own (out within f32 rounding of the held-back form's: test_moe_gpu).
#include "fuse/fusion.h"

namespace lathe::fuse {

void experts_by_slot_pass(const graph::Graph& g, FusionPlan& plan) {
  for (const graph::Node& n : g.nodes)
    if (n.kind == lang::OpKind::mixture) plan.by_slot_mixtures.insert(n.id);
}

}  // namespace lathe::fuse
