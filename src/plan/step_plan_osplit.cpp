// Fusion rule o_split in the plan: where a layer's residual is a fixed-point sum (its q/k/v launch
// reads the sum the feed-forward launch before made, and its own feed-forward half is an ffn_split
// launch), the attention's launch in the decode step's short form also runs the o product, split
// along its input by kv head, adding o's output into that sum (kernels/attention_o_split_launch.h);
// the feed-forward launch then reads the sum (s_in) instead of adding the residual and o's output.
// A layer is then three launches: q/k/v, the attention with o, the feed-forward half. The long form
// (from long_from on, where every block of a kv head would read its whole span) runs the attention
// and o as two launches, and the feed-forward launch adds them as before. Taken only under
// LATHE_O_SPLIT=1 (slower so far).
#include "plan/step_plan_ops.h"

#include "kernels/attention_o_split_launch.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string>

namespace lathe::plan {
namespace {

namespace k = kernels;

// The short form's longest span for which the launch is taken: each of a kv head's R blocks reads the
// whole span (R times its bytes, from L2 after the first).
constexpr int64_t kOSplitMaxSpan = 256;

}  // namespace

// Taken only under LATHE_O_SPLIT=1 (each of a kv head's R blocks computing its attention: slower so far,
// qwen3-0.6b Q8_0 tg128 1,470-1,488 against 1,512 held back; its launch alone 8.5 us against the
// attention's 3.7: docs/perf.md, thirty-sixth session) or LATHE_O_SPLIT=cluster (the attention split
// over a cluster of 8 blocks a kv head: written in the thirty-sixth session, not yet run on a GPU).
OSplitForm o_split_form() {
  const char* v = std::getenv("LATHE_O_SPLIT");
  const std::string s = v ? v : "";
  return s == "1" ? OSplitForm::redundant : s == "cluster" ? OSplitForm::cluster : OSplitForm::none;
}

void StepPlan::Builder::assign_o_splits() {
  const OSplitForm form = o_split_form();
  if (form == OSplitForm::none || p.long_from_ <= 0 || p.long_from_ > kOSplitMaxSpan || ffn_split_of_ffn.empty() ||
      g.rows != 1)
    return;
  for (const auto& [o_node, attention_node] : p.fusion_.o_splits) {
    const graph::Node& on = g.nodes[static_cast<size_t>(o_node)];
    const graph::Node& an = g.nodes[static_cast<size_t>(attention_node)];
    const int add = g.tensor(on.output).consumers.at(0);
    const int ga = p.fusion_.group_of[static_cast<size_t>(attention_node)];
    const int go = p.fusion_.group_of[static_cast<size_t>(o_node)];
    const int gf = p.fusion_.group_of[static_cast<size_t>(add)];
    const int residual = g.nodes[static_cast<size_t>(add)].args[0].tensor;
    const int gq = p.fusion_.group_of[static_cast<size_t>(g.tensor(residual).producer)];
    const auto ffn = ffn_split_of_ffn.find(gf);
    const auto sum = ffn_sum_of_norm.find(gq);
    if (ffn == ffn_split_of_ffn.end() || ffn->second.down_group < 0 || sum == ffn_sum_of_norm.end()) continue;
    const graph::Tensor& wt = g.tensor(on.args[1].tensor);
    if (m.weight(wt.checkpoint_name).pinned_host || flash_prefill(an)) continue;
    const graph::Tensor& q = g.tensor(an.args[0].tensor);
    const k::AttentionShape shape{q.shape[0], q.shape[1], m.cache_shape().n_head_kv, q.shape[2],
                                  m.cache_shape().n_ctx, m.cache_shape().n_ctx};
    const k::WeightMatrix ow = weight_of(m, wt);
    const bool cluster = form == OSplitForm::cluster;
    if (cluster ? !k::attention_o_cluster_applies(shape, ow, o.activations)
                : !k::attention_o_split_applies(shape, ow, o.activations))
      continue;
    o_split_of_attention[ga] = {go, sum->second, cluster};
    o_split_of_ffn[gf] = sum->second;
    o_split_os.insert(go);
  }
}

void StepPlan::Builder::long_form_only(size_t first_launch) {
  for (size_t i = first_launch; i < p.launches_.size(); ++i) {
    Launch& l = p.launches_[i];
    l.what += fmt::format(" (from position {} only: below it the attention's launch runs o)", p.long_from_);
    l.run = [run = std::move(l.run), form = &p.form_](CUstream s) {
      if (*form != StepForm::short_positions) run(s);
    };
  }
}

}  // namespace lathe::plan
