#include "fuse/fusion.h"

#include "base/error.h"

#include <algorithm>

namespace lathe::fuse {

void norm_prologue_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups);
void add_norm_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups);
void rope_append_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups);
void rope_attention_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups);
void qk_norm_rope_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups);
void kv_append_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups);
void gate_up_swiglu_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups);
void merged_products_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups);
void elementwise_run_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups);
void quantize_epilogue_pass(const graph::Graph& g, FusionPlan& plan);
void mixture_one_launch_pass(const graph::Graph& g, FusionPlan& plan);
void experts_by_slot_pass(const graph::Graph& g, FusionPlan& plan);
void router_epilogue_pass(const graph::Graph& g, FusionPlan& plan);
void norm_epilogue_pass(const graph::Graph& g, FusionPlan& plan);
void ffn_split_pass(const graph::Graph& g, FusionPlan& plan);
void o_split_pass(const graph::Graph& g, FusionPlan& plan);
void attention_half_pass(const graph::Graph& g, FusionPlan& plan);

const std::vector<Rule>& fusion_rules() {
  static const std::vector<Rule> rules = {
      {"norm_prologue", "a decode row's sum, its RMS norm and the merged products reading it in one launch", norm_prologue_pass},
      {"add_norm", "a sum and the RMS norm of it in one kernel (the residual written back)", add_norm_pass},
      {"rope_append", "a layer's q and k (per-head norms, rope) and the cache appends of k and v in one kernel",
       rope_append_pass},
      {"rope_attention", "a rope_append group and the attention after it in one kernel (one row a sequence)",
       rope_attention_pass},
      {"qk_norm_rope", "a per-head RMS norm and the rope after it in one kernel", qk_norm_rope_pass},
      {"kv_append", "a layer's key and value appends in one kernel", kv_append_pass},
      {"gate_up_swiglu", "a feed-forward's gate and up products and the SwiGLU of them in one kernel",
       gate_up_swiglu_pass},
      {"merged_products", "products of one activation (q, k, v) in one launch over every SM", merged_products_pass},
      {"elementwise_run", "a run of elementwise ops carried in registers in one kernel", elementwise_run_pass},
      {"quantize_epilogue", "the activation a quantized product reads, quantized in its producer's last pass",
       nullptr, quantize_epilogue_pass},
      {"mixture_one_launch", "a decode row's mixture (router, top k, expert products, combine) in one launch",
       nullptr, mixture_one_launch_pass},
      {"experts_by_slot",
       "a decode row's kept experts (gate/up, SwiGLU, down and the weighted combine) in one launch dealt by slot",
       nullptr, experts_by_slot_pass},
      {"router_epilogue",
       "a decode row's mixture router (the sum, its norm, the logits, the top k) in the epilogue of the product "
       "before it",
       nullptr, router_epilogue_pass},
      {"norm_epilogue",
       "a decode row's sum, its norm's weighting and int8 form in the epilogue of the product before the merged "
       "products that read it",
       nullptr, norm_epilogue_pass},
      {"ffn_split",
       "a decode row's feed-forward half (sum, norm, gate/up, SwiGLU, down split along its input) and the next "
       "residual sum, in fixed point, in one launch",
       nullptr, ffn_split_pass},
      {"o_split",
       "a decode row's attention and its o product split along its input by kv head, o's output added into the "
       "residual's fixed-point sum, in one launch",
       nullptr, o_split_pass},
      {"attention_half",
       "a decode row's attention half (the residual's norm, q/k/v, the attention, o split along its input) in one "
       "launch, o's output and the residual added into the next fixed-point sum",
       nullptr, attention_half_pass},
  };
  return rules;
}

void check_rule_names(const std::set<std::string>& names) {
  for (const std::string& n : names) {
    bool known = false;
    std::string all;
    for (const Rule& r : fusion_rules()) {
      known = known || r.name == n;
      all += (all.empty() ? "" : ", ") + std::string(r.name);
    }
    if (!known) fail("unknown fusion rule '{}' (rules: {})", n, all);
  }
}

int FusionPlan::count(std::string_view rule) const {
  return static_cast<int>(std::count_if(groups.begin(), groups.end(),
                                        [&](const Group& g) { return g.rule == rule; }));
}

int only_consumer(const graph::Graph& g, int tensor) {
  const std::vector<int>& c = g.tensor(tensor).consumers;
  if (c.empty()) return -1;
  for (int n : c)
    if (n != c[0]) return -1;
  return c[0];
}

bool read_only_by(const graph::Graph& g, int tensor, std::initializer_list<int> nodes) {
  const std::vector<int>& readers = g.tensor(tensor).consumers;
  return std::all_of(readers.begin(), readers.end(),
                     [&](int c) { return std::find(nodes.begin(), nodes.end(), c) != nodes.end(); });
}

const graph::Node* product_added_by(const graph::Graph& g, const FusionPlan& plan, size_t gi) {
  if (gi == 0 || gi >= plan.groups.size()) return nullptr;
  const graph::Node& add = g.nodes[static_cast<size_t>(plan.groups[gi].nodes[0])];
  const Group& before = plan.groups[gi - 1];
  if (add.kind != lang::OpKind::add || !before.rule.empty() || before.nodes.size() != 1) return nullptr;
  const graph::Node& p = g.nodes[static_cast<size_t>(before.nodes[0])];
  if (p.kind != lang::OpKind::product || !p.args[1].is_tensor() ||
      g.tensor(p.args[1].tensor).role != graph::Role::constant)
    return nullptr;
  if (!add.args[1].is_tensor() || add.args[1].tensor != p.output || only_consumer(g, p.output) != add.id) return nullptr;
  return &p;
}

FusionPlan fuse(const graph::Graph& g, const std::set<std::string>& held) {
  check_rule_names(held);
  std::vector<bool> claimed(g.nodes.size(), false);
  std::vector<Group> fused;
  for (const Rule& r : fusion_rules())
    if (r.pass && !held.count(std::string(r.name))) r.pass(g, claimed, fused);
  // Every group runs where its last node stood; the nodes between were independent of it (the rules
  // only group a node with its consumer, so the order of the rest is kept).
  std::vector<int> group_at_last(g.nodes.size(), -1);
  for (size_t i = 0; i < fused.size(); ++i) group_at_last[static_cast<size_t>(fused[i].nodes.back())] = static_cast<int>(i);
  FusionPlan plan;
  plan.group_of.assign(g.nodes.size(), -1);
  for (const graph::Node& n : g.nodes) {
    const int gi = group_at_last[static_cast<size_t>(n.id)];
    if (gi >= 0) {
      plan.groups.push_back(fused[static_cast<size_t>(gi)]);
    } else if (!claimed[static_cast<size_t>(n.id)]) {
      plan.groups.push_back({"", {n.id}});
    } else {
      continue;
    }
    for (int id : plan.groups.back().nodes) plan.group_of[static_cast<size_t>(id)] = static_cast<int>(plan.groups.size()) - 1;
  }
  for (const Rule& r : fusion_rules())
    if (r.annotate && !held.count(std::string(r.name))) r.annotate(g, plan);
  return plan;
}

}  // namespace lathe::fuse
