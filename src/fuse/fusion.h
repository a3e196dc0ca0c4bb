// Fusion: named rules that group a graph's nodes so a back end runs each group as one kernel. Each
// rule is one pass (one file, one function) over the graph; every rule can be held back by name
// (`--hold add_norm`), and every rule has a test that runs the fused and the held-back plans and
// compares them within the numerics contract.
//
//   FusionPlan f = fuse(graph, {"qk_norm_rope"});   // every rule but qk_norm_rope
//   for (const Group& g : f.groups) ...             // in execution order; singles included
#pragma once

#include "graph/graph.h"

#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace lathe::fuse {

// rope_attention applies where a kv head has at most this many query heads: the decode attention's
// blocks take that many each (kernels/attention.cuh's ATTD_HEADS; test_decode_stream checks the two).
constexpr int64_t kRopeAttentionMaxGroup = 8;

struct Group {
  std::string rule;        // "" for a node that runs alone
  std::vector<int> nodes;  // graph node ids, in execution order
};

struct FusionPlan {
  std::vector<Group> groups;     // in execution order, every node in exactly one group
  std::vector<int> group_of;     // node id -> group index
  std::set<int> quantized_by_producer;  // tensors whose producing group also writes their int8 form
  std::set<int> one_launch_mixtures;    // mixture nodes a back end may run as one launch
  std::set<int> by_slot_mixtures;       // mixture nodes whose kept experts a back end may run dealt by slot
  std::map<int, int> router_epilogues;  // product node -> the mixture whose router its launch may run
  std::map<int, int> norm_epilogues;    // product node -> the add (of a norm_prologue group) its launch may form
  std::map<int, int> ffn_splits;        // down product (or mixture) node -> the next add whose sum its feed-forward launch may form
  std::map<int, int> o_splits;          // o product node -> the attention whose launch may run it, o split along its input
  std::map<int, int> attention_halves;  // o product node -> the attention whose launch may also run the q/k/v before it
  int count(std::string_view rule) const;
};

struct Rule {
  std::string_view name;
  std::string_view what;  // one line for `lathe program --graph` and the docs
  // Claims groups of unclaimed nodes; `claimed[node]` marks nodes already in a group. Or, for a rule
  // that changes what groups' kernels do rather than which nodes they hold, `annotate`, run on the
  // finished plan.
  void (*pass)(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups) = nullptr;
  void (*annotate)(const graph::Graph& g, FusionPlan& plan) = nullptr;
};

// The rules, in the order they run.
const std::vector<Rule>& fusion_rules();
// A UserError naming the known rules for an unknown name.
void check_rule_names(const std::set<std::string>& names);

FusionPlan fuse(const graph::Graph& g, const std::set<std::string>& held = {});

// Whether an op is elementwise (arithmetic, SwiGLU, the activations, scale, soft cap).
bool is_elementwise(lang::OpKind kind);

// The RMS norm a residual sum opens (add_norm's match, which norm_prologue extends): `add` is
// unclaimed, adds two 2-D tensors of one shape, its first operand (the residual, a temporary) dies in
// it, and the sum's first consumer is an unclaimed whole-row RMS norm of the sum. Null when not.
const graph::Node* norm_of_residual_sum(const graph::Graph& g, const graph::Node& add, const std::vector<bool>& claimed);

// quantize_epilogue: the tensor whose int8 form a group's kernel can write in its last pass (its last
// node's output, or an attention's through the join of its heads), or -1. The mark, when set, is on
// this tensor (FusionPlan::quantized_by_producer).
int epilogue_output(const graph::Graph& g, const Group& grp);

// Helpers for the rules: the single consumer of a tensor, or -1 when it has none or several.
int only_consumer(const graph::Graph& g, int tensor);
// Whether every reader of a tensor is one of `nodes`.
bool read_only_by(const graph::Graph& g, int tensor, std::initializer_list<int> nodes);

// o_split's match at group gi (o_split.cpp): a rope_attention group, its o product alone two groups on,
// a feed-forward norm_prologue group adding o's result to the residual, which the q/k/v norm_prologue
// group `qkv_group` formed. All -1 where it does not hold. attention_half builds on it.
struct OSplitMatch {
  int o = -1, attention = -1, qkv_group = -1;
};
OSplitMatch match_o_split(const graph::Graph& g, const FusionPlan& plan, size_t gi);

// router_epilogue's and norm_epilogue's match: the product of a checkpoint matrix that is group gi - 1
// alone, when group gi opens with an add whose second operand is that product's result, read by
// nothing else. Null when not.
const graph::Node* product_added_by(const graph::Graph& g, const FusionPlan& plan, size_t gi);

}  // namespace lathe::fuse
