// Fusion rules on lifted model programs (no GPU needed): which groups each rule forms, that every
// node is in exactly one group in execution order, and that holding a rule back removes its groups.
#include "fuse/fusion.h"
#include "gguf/gguf_file.h"
#include "graph/graph.h"
#include "lang/program.h"
#include "model/model_program.h"
#include "model/model_spec.h"
#include "model/synth.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

namespace lathe {
namespace {

graph::Graph lift_shape(const std::string& shape, const std::string& cut, const std::string& program_file = "") {
  const std::string path = testing::TempDir() + "/fuse-" + shape + ".gguf";
  SynthOptions o;
  o.shape = shape;
  write_synthetic_checkpoint(o, path);
  static std::vector<std::unique_ptr<GgufFile>> keep;
  keep.push_back(std::make_unique<GgufFile>(GgufFile::open(path)));
  const GgufFile& f = *keep.back();
  const ModelProgram mp = model_program(f, read_model_spec(f), 64, program_file);
  return graph::lift(lang::make_cut(mp.program, lang::parse_cut(cut)), mp.bindings,
                     [&f](const std::string& name) -> std::optional<graph::CheckpointTensor> {
                       const GgufTensor* t = f.find_tensor(name);
                       if (!t) return std::nullopt;
                       return graph::CheckpointTensor{t->type, t->dims};
                     });
}

void expect_partition(const graph::Graph& g, const fuse::FusionPlan& p) {
  std::vector<int> seen(g.nodes.size(), 0);
  int last = -1;
  for (const fuse::Group& grp : p.groups) {
    for (int n : grp.nodes) ++seen[static_cast<size_t>(n)];
    // A group runs at its last node: every node before it in the graph ran in an earlier group.
    EXPECT_GT(grp.nodes.back(), last);
    last = grp.nodes.back();
  }
  for (int s : seen) EXPECT_EQ(s, 1);
}

// The decode-cut counts below are of the rules norm_prologue takes over where it applies (add_norm,
// merged_products, gate_up_swiglu, the quantizing epilogue): those tests run with it off, its own test
// (NormPrologueTakesSumNormAndProducts) counts what it takes.
struct NormPrologueOff {
  NormPrologueOff() { ::setenv("LATHE_NORM_PROLOGUE", "0", 1); }
  ~NormPrologueOff() { ::unsetenv("LATHE_NORM_PROLOGUE"); }
};

TEST(Fuse, Qwen3DecodeGroups) {
  const NormPrologueOff off;
  const graph::Graph g = lift_shape("qwen3-tiny", "decode");  // 2 layers
  const fuse::FusionPlan all = fuse::fuse(g);
  expect_partition(g, all);
  // add -> norm: attention output into the ffn norm (2), ffn output into the next layer's attention
  // norm (1) and into the output norm (1).
  EXPECT_EQ(all.count("add_norm"), 4);
  // q and k norms and ropes, the two appends and the attention: one a layer (rope_attention)
  EXPECT_EQ(all.count("rope_attention"), 2);
  EXPECT_EQ(all.count("rope_append"), 0);
  EXPECT_EQ(all.count("qk_norm_rope"), 0);
  EXPECT_EQ(all.count("kv_append"), 0);
  const fuse::FusionPlan no_add = fuse::fuse(g, {"add_norm"});
  expect_partition(g, no_add);
  EXPECT_EQ(no_add.count("add_norm"), 0);
  EXPECT_EQ(no_add.count("rope_attention"), 2);
  EXPECT_EQ(no_add.groups.size(), all.groups.size() + 4);
  EXPECT_EQ(all.count("gate_up_swiglu"), 2);   // one a layer
  EXPECT_EQ(all.count("merged_products"), 2);  // q, k and v of each layer
  for (const fuse::Group& grp : all.groups)
    if (grp.rule == "merged_products") {
      EXPECT_EQ(grp.nodes.size(), 3u);
    }
  EXPECT_EQ(all.count("elementwise_run"), 0);  // qwen3's SwiGLU is one op
  std::set<std::string> every;
  for (const fuse::Rule& r : fuse::fusion_rules()) every.insert(std::string(r.name));
  const fuse::FusionPlan none = fuse::fuse(g, every);
  EXPECT_EQ(none.groups.size(), g.nodes.size());
  EXPECT_TRUE(none.quantized_by_producer.empty());
  // Held alone, each grouping rule gives back exactly its nodes as singles.
  const fuse::FusionPlan no_merge = fuse::fuse(g, {"merged_products"});
  expect_partition(g, no_merge);
  EXPECT_EQ(no_merge.groups.size(), all.groups.size() + 2 * 2);
  const fuse::FusionPlan no_gate_up = fuse::fuse(g, {"gate_up_swiglu"});
  expect_partition(g, no_gate_up);
  EXPECT_EQ(no_gate_up.count("merged_products"), 4);  // gate and up then merge as a pair
  EXPECT_EQ(no_gate_up.groups.size(), all.groups.size() + 2);
}

// rope_append takes a layer's q and k (norms and ropes) and both appends, and rope_attention the
// attention after them in a cut of one row a sequence; held back, rope_append's group and the
// attention are back, and without rope_append qk_norm_rope and kv_append take them as before. Llama
// has no head norms: its group is the two ropes, the appends and the attention.
TEST(Fuse, RopeAndAppendsInOneGroup) {
  using lang::OpKind;
  const graph::Graph g = lift_shape("qwen3-tiny", "decode");
  const fuse::FusionPlan all = fuse::fuse(g);
  EXPECT_EQ(all.count("rope_attention"), 2);
  for (const fuse::Group& grp : all.groups) {
    if (grp.rule != "rope_attention") continue;
    ASSERT_EQ(grp.nodes.size(), 7u);
    std::vector<OpKind> kinds;
    for (int n : grp.nodes) kinds.push_back(g.nodes[static_cast<size_t>(n)].kind);
    EXPECT_EQ(kinds, (std::vector<OpKind>{OpKind::rms_norm, OpKind::rms_norm, OpKind::rope, OpKind::rope,
                                          OpKind::append_keys, OpKind::append_values, OpKind::attention}));
  }
  const fuse::FusionPlan apart = fuse::fuse(g, {"rope_attention"});
  expect_partition(g, apart);
  EXPECT_EQ(apart.count("rope_append"), 2);
  EXPECT_EQ(apart.groups.size(), all.groups.size() + 2);  // the attentions alone
  const fuse::FusionPlan held = fuse::fuse(g, {"rope_append"});
  expect_partition(g, held);
  EXPECT_EQ(held.count("rope_append") + held.count("rope_attention"), 0);
  EXPECT_EQ(held.count("qk_norm_rope"), 4);
  EXPECT_EQ(held.count("kv_append"), 2);
  EXPECT_EQ(held.groups.size(), apart.groups.size() + 2 * 2);  // per layer 1 group -> qk, qk, kv
  const graph::Graph llama = lift_shape("llama-tiny", "decode");
  const fuse::FusionPlan ll = fuse::fuse(llama);
  expect_partition(llama, ll);
  EXPECT_EQ(ll.count("rope_attention"), 2);
  for (const fuse::Group& grp : ll.groups) {
    if (grp.rule == "rope_attention") {
      EXPECT_EQ(grp.nodes.size(), 5u);
    }
  }
  // A prefill chunk's rows read each other's new slots: the attention stays apart.
  const graph::Graph chunk = lift_shape("qwen3-tiny", "prefill:16");
  EXPECT_EQ(fuse::fuse(chunk).count("rope_append"), 2);
  EXPECT_EQ(fuse::fuse(chunk).count("rope_attention"), 0);
  // A batch of one row a sequence: each row's new slot is its own.
  const graph::Graph batch = lift_shape("qwen3-tiny", "batch:4");
  EXPECT_EQ(fuse::fuse(batch).count("rope_attention"), 2);
  // 16 query heads a kv head: the attention's blocks take 8 each, so a kv head's second block would
  // read the new slot before the first had written it; rope_append and the attention stay apart.
  const graph::Graph mqa = lift_shape("qwen3-mqa-tiny", "decode");
  const fuse::FusionPlan wide = fuse::fuse(mqa);
  expect_partition(mqa, wide);
  EXPECT_EQ(wide.count("rope_attention"), 0);
  EXPECT_EQ(wide.count("rope_append"), 2);
}

// norm_prologue (on by default): in a decode cut, a sum, its norm and the merged products reading the
// norm in one group (the first layer's attention has no sum before its norm); never in a chunk;
// LATHE_NORM_PROLOGUE=0 turns it off.
TEST(Fuse, NormPrologueTakesSumNormAndProducts) {
  const graph::Graph g = lift_shape("qwen3-tiny", "decode");
  ::setenv("LATHE_NORM_PROLOGUE", "0", 1);
  EXPECT_EQ(fuse::fuse(g).count("norm_prologue"), 0);
  ::unsetenv("LATHE_NORM_PROLOGUE");
  const fuse::FusionPlan all = fuse::fuse(g);
  const fuse::FusionPlan chunk = fuse::fuse(lift_shape("qwen3-tiny", "prefill:16"));
  expect_partition(g, all);
  EXPECT_EQ(chunk.count("norm_prologue"), 0);
  ASSERT_EQ(all.count("norm_prologue"), 3);  // layer 0's ffn, layer 1's attention and ffn
  EXPECT_EQ(all.count("add_norm"), 1);       // the output norm (one product reads it)
  EXPECT_EQ(all.count("merged_products"), 1);  // layer 0's q, k, v
  EXPECT_EQ(all.count("gate_up_swiglu"), 0);
  for (const fuse::Group& grp : all.groups) {
    if (grp.rule != "norm_prologue") continue;
    std::vector<lang::OpKind> kinds;
    for (int n : grp.nodes) kinds.push_back(g.nodes[static_cast<size_t>(n)].kind);
    using K = lang::OpKind;
    const bool qkv = kinds == std::vector<K>{K::add, K::rms_norm, K::product, K::product, K::product};
    const bool ffn = kinds == std::vector<K>{K::add, K::rms_norm, K::product, K::product, K::swiglu};
    EXPECT_TRUE(qkv || ffn);
  }
}

// router_epilogue: in a decode cut of a mixture model, each layer's o product (the attention's output
// projection, right before the [add, norm, mixture] group) is marked with that layer's mixture; never
// in a chunk; held back, nothing; with norm_prologue held (no such group), nothing.
TEST(Fuse, RouterEpilogueMarksTheProductBeforeEachMixture) {
  const graph::Graph g = lift_shape("qwen3moe-tiny", "decode");
  const fuse::FusionPlan all = fuse::fuse(g);
  int mixtures = 0;
  for (const graph::Node& n : g.nodes) mixtures += n.kind == lang::OpKind::mixture;
  ASSERT_GT(mixtures, 0);
  EXPECT_EQ(static_cast<int>(all.router_epilogues.size()), mixtures);
  for (const auto& [product, mixture] : all.router_epilogues) {
    const graph::Node& p = g.nodes[static_cast<size_t>(product)];
    EXPECT_EQ(p.kind, lang::OpKind::product);
    EXPECT_EQ(g.nodes[static_cast<size_t>(mixture)].kind, lang::OpKind::mixture);
    const fuse::Group& mg = all.groups[static_cast<size_t>(all.group_of[static_cast<size_t>(mixture)])];
    EXPECT_EQ(mg.rule, "norm_prologue");
    EXPECT_EQ(all.group_of[static_cast<size_t>(product)] + 1, all.group_of[static_cast<size_t>(mixture)]);
    EXPECT_EQ(g.nodes[static_cast<size_t>(mg.nodes[0])].args[1].tensor, p.output);  // the add reads it
  }
  EXPECT_TRUE(fuse::fuse(g, {"router_epilogue"}).router_epilogues.empty());
  EXPECT_TRUE(fuse::fuse(g, {"norm_prologue"}).router_epilogues.empty());
  EXPECT_TRUE(fuse::fuse(lift_shape("qwen3moe-tiny", "prefill:16")).router_epilogues.empty());
  EXPECT_TRUE(fuse::fuse(lift_shape("qwen3-tiny", "decode")).router_epilogues.empty());  // no mixture
}

// experts_by_slot: every mixture is marked (the lane decides where its kernel applies); held back,
// none; a dense model has none to mark.
TEST(Fuse, ExpertsBySlotMarksEveryMixture) {
  const graph::Graph g = lift_shape("qwen3moe-tiny", "decode");
  std::set<int> mixtures;
  for (const graph::Node& n : g.nodes)
    if (n.kind == lang::OpKind::mixture) mixtures.insert(n.id);
  ASSERT_FALSE(mixtures.empty());
  EXPECT_EQ(fuse::fuse(g).by_slot_mixtures, mixtures);
  EXPECT_TRUE(fuse::fuse(g, {"experts_by_slot"}).by_slot_mixtures.empty());
  EXPECT_TRUE(fuse::fuse(lift_shape("qwen3-tiny", "decode")).by_slot_mixtures.empty());
}

// norm_epilogue: in a decode cut of a dense model, each layer's o product (before the [add, norm, gate,
// up, swiglu] group) and each layer's down product but the last (before the next layer's [add, norm,
// q, k, v]) are marked with the add they feed; the last down feeds the output norm, which no merged
// products read. Never in a chunk; held back (or with norm_prologue held), nothing; in a mixture
// model the o product's router_epilogue group and the mixture's output are not products' groups.
TEST(Fuse, NormEpilogueMarksTheProductsBeforeMergedNormProducts) {
  for (const char* shape : {"qwen3-tiny", "llama-tiny"}) {
    const graph::Graph g = lift_shape(shape, "decode");
    const fuse::FusionPlan all = fuse::fuse(g);
    int layers = 0;
    for (const graph::Node& n : g.nodes) layers += n.kind == lang::OpKind::attention;
    ASSERT_GT(layers, 1);
    EXPECT_EQ(static_cast<int>(all.norm_epilogues.size()), 2 * layers - 1) << shape;
    int after_attention = 0;
    for (const auto& [product, add] : all.norm_epilogues) {
      const graph::Node& p = g.nodes[static_cast<size_t>(product)];
      EXPECT_EQ(p.kind, lang::OpKind::product);
      const graph::Node& a = g.nodes[static_cast<size_t>(add)];
      EXPECT_EQ(a.kind, lang::OpKind::add);
      EXPECT_EQ(a.args[1].tensor, p.output);  // the add reads the product's result
      const fuse::Group& ng = all.groups[static_cast<size_t>(all.group_of[static_cast<size_t>(add)])];
      EXPECT_EQ(ng.rule, "norm_prologue");
      EXPECT_EQ(all.group_of[static_cast<size_t>(product)] + 1, all.group_of[static_cast<size_t>(add)]);
      const int x = g.tensor(p.args[0].tensor).producer;
      after_attention += x >= 0 && g.nodes[static_cast<size_t>(x)].kind == lang::OpKind::join_heads;
    }
    EXPECT_EQ(after_attention, layers) << shape;  // the o products; the others are down products
    EXPECT_TRUE(fuse::fuse(g, {"norm_epilogue"}).norm_epilogues.empty());
    EXPECT_TRUE(fuse::fuse(g, {"norm_prologue"}).norm_epilogues.empty());
    EXPECT_TRUE(fuse::fuse(lift_shape(shape, "prefill:16")).norm_epilogues.empty());
  }
  // qwen3moe-tiny: o's group feeds the mixture (router_epilogue's), and q/k/v's add reads the
  // mixture's output, not a product's.
  EXPECT_TRUE(fuse::fuse(lift_shape("qwen3moe-tiny", "decode")).norm_epilogues.empty());
}

// ffn_split: in a decode cut of a dense model, each layer's down product but the last (the last feeds
// the output norm, which no merged products read) is marked with the next layer's add, which sums the
// feed-forward group's sum and down's result; the group before down is the [add, norm, gate, up,
// swiglu] norm_prologue group. Never in a chunk, held back or with norm_prologue held; in a mixture
// model the mixture nodes instead (below).
int count_of(const graph::Graph& g, lang::OpKind kind) {
  int n = 0;
  for (const graph::Node& x : g.nodes) n += x.kind == kind;
  return n;
}

// o_split: every layer's o product whose residual is a norm_prologue group's sum (all layers but the
// first, whose residual is the embedding), marked with its attention; none held back, with
// rope_attention held, or in a prefill cut.
TEST(Fuse, OSplitMarksEveryOAfterASumOfTheResidual) {
  for (const char* shape : {"qwen3-tiny", "llama-tiny"}) {
    const graph::Graph g = lift_shape(shape, "decode");
    const fuse::FusionPlan all = fuse::fuse(g);
    const int layers = count_of(g, lang::OpKind::attention);
    ASSERT_GT(layers, 1);
    EXPECT_EQ(static_cast<int>(all.o_splits.size()), layers - 1) << shape;
    for (const auto& [o, attention] : all.o_splits) {
      const graph::Node& on = g.nodes[static_cast<size_t>(o)];
      EXPECT_EQ(on.kind, lang::OpKind::product);
      const graph::Node& join = g.nodes[static_cast<size_t>(g.tensor(on.args[0].tensor).producer)];
      EXPECT_EQ(join.kind, lang::OpKind::join_heads);
      EXPECT_EQ(g.tensor(join.args[0].tensor).producer, attention);
      EXPECT_EQ(all.groups[static_cast<size_t>(all.group_of[static_cast<size_t>(attention)])].rule, "rope_attention");
      const int add = g.tensor(on.output).consumers.at(0);
      EXPECT_EQ(all.groups[static_cast<size_t>(all.group_of[static_cast<size_t>(add)])].rule, "norm_prologue");
    }
    EXPECT_TRUE(fuse::fuse(g, {"o_split"}).o_splits.empty());
    EXPECT_TRUE(fuse::fuse(g, {"rope_attention"}).o_splits.empty());
    EXPECT_TRUE(fuse::fuse(lift_shape(shape, "prefill:16")).o_splits.empty());
    EXPECT_EQ(fuse::fuse(g, {"o_split"}).ffn_splits, all.ffn_splits);
  }
}

// attention_half: o_split's marks where the q/k/v group is the residual's add, its norm and three
// products that the attention's group alone reads: every one of qwen3's and llama's; none of qwen2's
// (its q/k/v biases are added between); none held back, or in a prefill cut; o_split's marks unchanged.
TEST(Fuse, AttentionHalfMarksOSplitsWhoseQkvTheAttentionAloneReads) {
  for (const char* shape : {"qwen3-tiny", "llama-tiny", "qwen2-tiny"}) {
    const graph::Graph g = lift_shape(shape, "decode");
    const fuse::FusionPlan all = fuse::fuse(g);
    if (std::string(shape) == "qwen2-tiny") {
      EXPECT_FALSE(all.o_splits.empty()) << "qwen2-tiny takes o_split: the case below must be the biases";
      EXPECT_TRUE(all.attention_halves.empty());
      continue;
    }
    EXPECT_EQ(all.attention_halves, all.o_splits) << shape;
    EXPECT_FALSE(all.attention_halves.empty()) << shape;
    EXPECT_TRUE(fuse::fuse(g, {"attention_half"}).attention_halves.empty());
    EXPECT_EQ(fuse::fuse(g, {"attention_half"}).o_splits, all.o_splits);
    EXPECT_TRUE(fuse::fuse(g, {"rope_attention"}).attention_halves.empty());
    EXPECT_TRUE(fuse::fuse(lift_shape(shape, "prefill:16")).attention_halves.empty());
  }
}

TEST(Fuse, FfnSplitMarksEveryDownButTheLast) {
  for (const char* shape : {"qwen3-tiny", "llama-tiny", "qwen2-tiny"}) {
    const graph::Graph g = lift_shape(shape, "decode");
    const fuse::FusionPlan all = fuse::fuse(g);
    const int layers = count_of(g, lang::OpKind::attention);
    ASSERT_GT(layers, 1);
    EXPECT_EQ(static_cast<int>(all.ffn_splits.size()), layers - 1) << shape;
    for (const auto& [down, add] : all.ffn_splits) {
      const graph::Node& d = g.nodes[static_cast<size_t>(down)];
      EXPECT_EQ(d.kind, lang::OpKind::product);
      EXPECT_EQ(g.nodes[static_cast<size_t>(g.tensor(d.args[0].tensor).producer)].kind, lang::OpKind::swiglu);
      const graph::Node& a = g.nodes[static_cast<size_t>(add)];
      EXPECT_EQ(a.kind, lang::OpKind::add);
      EXPECT_EQ(a.args[1].tensor, d.output);
      const int gd = all.group_of[static_cast<size_t>(down)];
      EXPECT_EQ(all.groups[static_cast<size_t>(gd - 1)].rule, "norm_prologue");
      EXPECT_EQ(all.groups[static_cast<size_t>(gd - 1)].nodes.size(), 5u);
      EXPECT_EQ(all.group_of[static_cast<size_t>(add)], gd + 1);
      EXPECT_EQ(all.groups[static_cast<size_t>(gd + 1)].rule, "norm_prologue");
      // The next add sums the feed-forward group's sum and down's result.
      EXPECT_EQ(a.args[0].tensor, g.nodes[static_cast<size_t>(all.groups[static_cast<size_t>(gd - 1)].nodes[0])].output);
    }
    EXPECT_TRUE(fuse::fuse(g, {"ffn_split"}).ffn_splits.empty());
    EXPECT_TRUE(fuse::fuse(g, {"norm_prologue"}).ffn_splits.empty());
    EXPECT_TRUE(fuse::fuse(lift_shape(shape, "prefill:16")).ffn_splits.empty());
    // Held back, norm_epilogue still marks what it marked.
    EXPECT_EQ(fuse::fuse(g, {"ffn_split"}).norm_epilogues, all.norm_epilogues);
  }
  // qwen3moe-tiny: each layer's mixture but the last, marked with the next layer's add, which sums the
  // mixture group's sum and the mixture's result.
  const graph::Graph moe = lift_shape("qwen3moe-tiny", "decode");
  const fuse::FusionPlan mp = fuse::fuse(moe);
  const int mixtures = count_of(moe, lang::OpKind::mixture);
  ASSERT_GT(mixtures, 1);
  EXPECT_EQ(static_cast<int>(mp.ffn_splits.size()), mixtures - 1);
  for (const auto& [mix, add] : mp.ffn_splits) {
    const graph::Node& x = moe.nodes[static_cast<size_t>(mix)];
    EXPECT_EQ(x.kind, lang::OpKind::mixture);
    const graph::Node& a = moe.nodes[static_cast<size_t>(add)];
    EXPECT_EQ(a.args[1].tensor, x.output);
    const int gm = mp.group_of[static_cast<size_t>(mix)];
    EXPECT_EQ(mp.groups[static_cast<size_t>(gm)].rule, "norm_prologue");
    EXPECT_EQ(mp.group_of[static_cast<size_t>(add)], gm + 1);
    EXPECT_EQ(mp.groups[static_cast<size_t>(gm + 1)].rule, "norm_prologue");
  }
  EXPECT_TRUE(fuse::fuse(moe, {"ffn_split"}).ffn_splits.empty());
  EXPECT_TRUE(fuse::fuse(lift_shape("qwen3moe-tiny", "prefill:16")).ffn_splits.empty());
}

// The names of the values a plan quantizes in their producers' epilogue.
std::set<std::string> quantized_names(const graph::Graph& g, const fuse::FusionPlan& p) {
  std::set<std::string> out;
  for (int t : p.quantized_by_producer) out.insert(g.tensor(t).name.substr(0, g.tensor(t).name.find('#')));
  return out;
}

TEST(Fuse, QuantizeEpilogueMarksWhatProductsRead) {
  const NormPrologueOff off;
  const graph::Graph g = lift_shape("qwen3-tiny", "decode");
  const fuse::FusionPlan all = fuse::fuse(g);
  // Per layer: the attention norm's h (q, k, v read it), the attention's joined a (o: the blocks
  // that finish a row quantize it), the ffn norm's h (gate, up), the SwiGLU's f (down; the merged
  // gate/up kernel's epilogue, its rows dealt by 32-row blocks); then the output norm's x (logits).
  EXPECT_EQ(all.quantized_by_producer.size(), 2u * 4u + 1u);
  EXPECT_EQ(quantized_names(g, all), (std::set<std::string>{"h", "a", "f", "x"}));
  const fuse::FusionPlan unmerged = fuse::fuse(g, {"gate_up_swiglu"});
  EXPECT_EQ(unmerged.quantized_by_producer, all.quantized_by_producer);  // the SwiGLU alone makes f then
  for (int t : all.quantized_by_producer) {
    const graph::Node& producer = g.nodes[static_cast<size_t>(g.tensor(t).producer)];
    EXPECT_TRUE(producer.kind == lang::OpKind::rms_norm || producer.kind == lang::OpKind::swiglu ||
                producer.kind == lang::OpKind::join_heads)
        << producer.text;
  }
  // The same values whether or not the norm is fused with the sum before it.
  EXPECT_EQ(fuse::fuse(g, {"add_norm"}).quantized_by_producer, all.quantized_by_producer);
  const fuse::FusionPlan held = fuse::fuse(g, {"quantize_epilogue"});
  EXPECT_TRUE(held.quantized_by_producer.empty());
  EXPECT_EQ(held.groups.size(), all.groups.size());
}

TEST(Fuse, ElementwiseRunsCarryValuesInRegisters) {
  const NormPrologueOff off;
  const graph::Graph g =
      lift_shape("qwen3-tiny", "decode", std::string(LATHE_TEST_DATA) + "/programs/qwen3_elementwise_runs.lathe");
  const fuse::FusionPlan all = fuse::fuse(g);
  expect_partition(g, all);
  // Per layer SiLU -> multiplied by -> scaled by (the `f plus f` after it reads f twice: a run
  // boundary); then the logits' cap and scale.
  ASSERT_EQ(all.count("elementwise_run"), 3);
  std::vector<std::vector<lang::OpKind>> runs;
  for (const fuse::Group& grp : all.groups) {
    if (grp.rule != "elementwise_run") continue;
    runs.emplace_back();
    for (int n : grp.nodes) runs.back().push_back(g.nodes[static_cast<size_t>(n)].kind);
  }
  using lang::OpKind;
  EXPECT_EQ(runs[0], (std::vector<OpKind>{OpKind::silu, OpKind::multiply, OpKind::scale}));
  EXPECT_EQ(runs[1], runs[0]);
  EXPECT_EQ(runs[2], (std::vector<OpKind>{OpKind::soft_cap, OpKind::scale}));
  // `f plus f` (the down product's input) is quantized in its kernel's epilogue, and per layer the
  // norms' h and the attention's joined a.
  EXPECT_EQ(all.quantized_by_producer.size(), 9u);
  const fuse::FusionPlan held = fuse::fuse(g, {"elementwise_run"});
  expect_partition(g, held);
  EXPECT_EQ(held.count("elementwise_run"), 0);
  EXPECT_EQ(held.groups.size(), all.groups.size() + 2 + 2 + 1);
}

TEST(Fuse, LlamaHasNoQkNorm) {
  const graph::Graph g = lift_shape("llama-tiny", "prefill:4");
  const fuse::FusionPlan p = fuse::fuse(g);
  expect_partition(g, p);
  EXPECT_EQ(p.count("qk_norm_rope"), 0);
  EXPECT_EQ(fuse::fuse(g, {"rope_append"}).count("qk_norm_rope"), 0);
  EXPECT_EQ(p.count("add_norm"), 4);
}

TEST(Fuse, UnknownRuleIsRefusedByName) {
  const graph::Graph g = lift_shape("qwen3-tiny", "decode");
  try {
    fuse::fuse(g, {"add_nrom"});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown fusion rule 'add_nrom' (rules: norm_prologue, add_norm, rope_append, rope_attention, qk_norm_rope, "
                                         "kv_append, "
                                         "gate_up_swiglu, merged_products, elementwise_run, quantize_epilogue, mixture_one_launch, "
                                         "experts_by_slot, router_epilogue, norm_epilogue, ffn_split, o_split, "
                                         "attention_half)"),
              std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lathe
