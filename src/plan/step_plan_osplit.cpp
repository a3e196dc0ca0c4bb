// Fusion rule o_split in the plan: where a layer's residual is a fixed-point sum (its q/k/v launch
// reads the sum the feed-forward launch before made, and its own feed-forward half is an ffn_split
// launch), the attention's launch in the decode step's short form also runs the o product, split
// along its input by kv head, adding o's output into that sum (kernels/attention_o_split_launch.h);
// the feed-forward launch then reads the sum (s_in) instead of adding the residual and o's output.
// A layer is then three launches: q/k/v, the attention with o, the feed-forward half. The long form
// (from long_from on, where every block of a kv head would read its whole span) runs the attention
// and o as two launches, and the feed-forward launch adds them as before. Taken only under
// LATHE_O_SPLIT=1 (slower so far).
// Fusion rule attention_half in the plan, on the same layers: the attention's launch in the short form
// also runs the q/k/v group before it (kernels/attention_o_split_launch.h's attention_half), adding o's
// output and the residual into a sum of its own, which the feed-forward launch then reads: two
// launches a layer. Taken only under LATHE_ATTENTION_HALF=1 (not yet run on a GPU), before o_split.
#include "plan/step_plan_ops.h"

#include "kernels/attention_o_split_launch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

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
    if (attention_half_of_attention.count(p.fusion_.group_of[static_cast<size_t>(attention_node)])) continue;
    const std::optional<OSplitLayer> l = o_split_layer(o_node, attention_node);
    if (!l) continue;
    const k::WeightMatrix ow = weight_of(m, g.tensor(g.nodes[static_cast<size_t>(o_node)].args[1].tensor));
    const bool cluster = form == OSplitForm::cluster;
    if (cluster ? !k::attention_o_cluster_applies(l->shape, ow, o.activations)
                : !k::attention_o_split_applies(l->shape, ow, o.activations))
      continue;
    o_split_of_attention[l->ga] = {l->go, l->sum, cluster};
    o_split_of_ffn[l->gf] = ffn_sum(l->sum);
    short_form_by_attention.insert(l->go);
  }
}

// The groups around a marked o product (o_split's and attention_half's marks): where the layer's
// residual is the fixed-point sum an ffn_split launch made (its q/k/v group reads it), its own
// feed-forward half a dense ffn_split launch, o on the device and the attention a decode row's.
std::optional<StepPlan::Builder::OSplitLayer> StepPlan::Builder::o_split_layer(int o_node, int attention_node) const {
  const graph::Node& on = g.nodes[static_cast<size_t>(o_node)];
  const graph::Node& an = g.nodes[static_cast<size_t>(attention_node)];
  const int add = g.tensor(on.output).consumers.at(0);
  OSplitLayer l;
  l.ga = p.fusion_.group_of[static_cast<size_t>(attention_node)];
  l.go = p.fusion_.group_of[static_cast<size_t>(o_node)];
  l.gf = p.fusion_.group_of[static_cast<size_t>(add)];
  const int residual = g.nodes[static_cast<size_t>(add)].args[0].tensor;
  l.gq = p.fusion_.group_of[static_cast<size_t>(g.tensor(residual).producer)];
  const auto ffn = ffn_split_of_ffn.find(l.gf);
  const auto sum = ffn_sum_of_norm.find(l.gq);
  if (ffn == ffn_split_of_ffn.end() || ffn->second.down_group < 0 || sum == ffn_sum_of_norm.end()) return std::nullopt;
  if (m.weight(g.tensor(on.args[1].tensor).checkpoint_name).pinned_host || flash_prefill(an)) return std::nullopt;
  l.sum = sum->second;
  const graph::Tensor& q = g.tensor(an.args[0].tensor);
  l.shape = {q.shape[0], q.shape[1], m.cache_shape().n_head_kv, q.shape[2], m.cache_shape().n_ctx, m.cache_shape().n_ctx};
  return l;
}

// Taken only under LATHE_ATTENTION_HALF=1: written in the thirty-seventh session, when no device was
// lent; not yet run on a GPU (docs/perf.md).
bool attention_half_enabled() {
  const char* v = std::getenv("LATHE_ATTENTION_HALF");
  return v && std::string(v) == "1";
}

// Where o_split's conditions hold for a layer (its residual the fixed-point sum an ffn_split launch
// made, its feed-forward half an ffn_split launch, the short form), its q/k/v group is the marked
// [add, norm, q, k, v] with the three matrices on the device and the launch takes the shapes. Launch i
// of the n taken adds into half sum i and zeroes sum i + 1 (mod n), whose one reader (the feed-forward
// launch after launch i + 1, in the step before; for the last, this step's after launch 0) has run:
// as ffn_split's sums, so n >= 2 (step_plan_ffn.cpp).
void StepPlan::Builder::assign_attention_halves() {
  if (!attention_half_enabled() || p.long_from_ <= 0 || p.long_from_ > kOSplitMaxSpan || ffn_split_of_ffn.empty() ||
      g.rows != 1)
    return;
  std::vector<std::pair<int, AttentionHalfTaken>> found;
  for (const auto& [o_node, attention_node] : p.fusion_.attention_halves) {  // in graph order
    const std::optional<OSplitLayer> l = o_split_layer(o_node, attention_node);
    if (!l) continue;
    const fuse::Group& qkv = p.fusion_.groups[static_cast<size_t>(l->gq)];
    const std::vector<k::WeightMatrix> ws =
        qkv.nodes.size() == 5 ? half_matrices(g.nodes[static_cast<size_t>(attention_node)], qkv) : std::vector<k::WeightMatrix>{};
    if (ws.empty()) continue;
    bool on_device = true;
    for (size_t i = 2; i < 5; ++i)
      on_device = on_device &&
                  !m.weight(g.tensor(g.nodes[static_cast<size_t>(qkv.nodes[i])].args[1].tensor).checkpoint_name).pinned_host;
    const k::WeightMatrix ow = weight_of(m, g.tensor(g.nodes[static_cast<size_t>(o_node)].args[1].tensor));
    if (!on_device || !k::attention_half_applies(l->shape, ws[0], ws[1], ws[2], ow, o.activations)) continue;
    found.push_back({l->ga, {l->gq, l->go, l->sum, 0, ws[0], ws[1], ws[2]}});
  }
  if (found.size() < 2) return;  // one launch a step would zero its own sum
  p.half_sums_ = cuda::DeviceBuffer(found.size() * static_cast<size_t>(ffn_split_embd) * 8, "attention half sums");
  p.half_sums_.zero();
  for (size_t i = 0; i < found.size(); ++i) {
    auto [ga, t] = found[i];
    t.index = static_cast<int>(i);
    attention_half_of_attention[ga] = t;
    const int add = g.tensor(g.nodes[static_cast<size_t>(p.fusion_.groups[static_cast<size_t>(t.o_group)].nodes[0])].output)
                        .consumers.at(0);
    o_split_of_ffn[p.fusion_.group_of[static_cast<size_t>(add)]] = half_sum(t.index);
    short_form_by_attention.insert(t.o_group);
    short_form_by_attention.insert(t.qkv_group);
  }
}

CUdeviceptr StepPlan::Builder::half_sum(int i) const {
  const int64_t n = static_cast<int64_t>(p.half_sums_.bytes() / 8 / static_cast<size_t>(ffn_split_embd));
  return p.half_sums_.ptr() + static_cast<CUdeviceptr>(8 * ffn_split_embd * (i % n));
}

// The q/k/v group's matrices in q, k, v order, as the attention's group reads their results (its
// rope_parts, through their split into heads), or none where those are not the group's three products.
std::vector<k::WeightMatrix> StepPlan::Builder::half_matrices(const graph::Node& attention, const fuse::Group& qkv) const {
  const RopeParts r = rope_parts(p.fusion_.groups[static_cast<size_t>(p.fusion_.group_of[static_cast<size_t>(attention.id)])]);
  std::vector<k::WeightMatrix> ws;
  for (int t : {r.q_in, r.k_in, r.v}) {
    int producer = t >= 0 ? g.tensor(t).producer : -1;
    if (producer >= 0 && g.nodes[static_cast<size_t>(producer)].kind == lang::OpKind::split_heads)  // a view
      producer = g.tensor(g.nodes[static_cast<size_t>(producer)].args[0].tensor).producer;
    if (producer < 0 || std::find(qkv.nodes.begin() + 2, qkv.nodes.end(), producer) == qkv.nodes.end()) return {};
    ws.push_back(weight_of(m, g.tensor(g.nodes[static_cast<size_t>(producer)].args[1].tensor)));
  }
  return ws;
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
