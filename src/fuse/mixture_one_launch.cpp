// Rule mixture_one_launch: a mixture of experts run as ONE launch where a back end can (its router, top
// k, the kept experts' gate/up/SwiGLU and the down product with the weighted combine as phases of one
// grid), instead of a launch each. It groups no nodes: it marks the mixtures (FusionPlan::
// one_launch_mixtures). The GPU lane honours the mark, under LATHE_MOE_ONE_LAUNCH=1 (measured slower in
// the decode step than the three launches, docs/perf.md), for a decode row under an int8 contract where
// its kernel takes the shapes (kernels/moe_launch.h, moe_single_launch_applies), and runs the three
// launches otherwise; held back, always the three. Either way the results are the same bits.
#include "fuse/fusion.h"

namespace lathe::fuse {

void mixture_one_launch_pass(const graph::Graph& g, FusionPlan& plan) {
  for (const graph::Node& n : g.nodes)
    if (n.kind == lang::OpKind::mixture) plan.one_launch_mixtures.insert(n.id);
}

}  // namespace lathe::fuse
