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

namespace lathe {
namespace {

graph::Graph lift_shape(const std::string& shape, const std::string& cut) {
  const std::string path = testing::TempDir() + "/fuse-" + shape + ".gguf";
  SynthOptions o;
  o.shape = shape;
  write_synthetic_checkpoint(o, path);
  static std::vector<std::unique_ptr<GgufFile>> keep;
  keep.push_back(std::make_unique<GgufFile>(GgufFile::open(path)));
  const GgufFile& f = *keep.back();
  const ModelProgram mp = model_program(f, read_model_spec(f), 64);
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

TEST(Fuse, Qwen3DecodeGroups) {
  const graph::Graph g = lift_shape("qwen3-tiny", "decode");  // 2 layers
  const fuse::FusionPlan all = fuse::fuse(g);
  expect_partition(g, all);
  // add -> norm: attention output into the ffn norm (2), ffn output into the next layer's attention
  // norm (1) and into the output norm (1).
  EXPECT_EQ(all.count("add_norm"), 4);
  EXPECT_EQ(all.count("qk_norm_rope"), 4);  // q and k of each layer
  EXPECT_EQ(all.count("kv_append"), 2);     // one a layer
  const fuse::FusionPlan no_add = fuse::fuse(g, {"add_norm"});
  expect_partition(g, no_add);
  EXPECT_EQ(no_add.count("add_norm"), 0);
  EXPECT_EQ(no_add.count("qk_norm_rope"), 4);
  EXPECT_EQ(no_add.groups.size(), all.groups.size() + 4);
  const fuse::FusionPlan none = fuse::fuse(g, {"add_norm", "qk_norm_rope", "kv_append"});
  EXPECT_EQ(none.groups.size(), g.nodes.size());
}

TEST(Fuse, LlamaHasNoQkNorm) {
  const graph::Graph g = lift_shape("llama-tiny", "prefill:4");
  const fuse::FusionPlan p = fuse::fuse(g);
  expect_partition(g, p);
  EXPECT_EQ(p.count("qk_norm_rope"), 0);
  EXPECT_EQ(p.count("add_norm"), 4);
}

TEST(Fuse, UnknownRuleIsRefusedByName) {
  const graph::Graph g = lift_shape("qwen3-tiny", "decode");
  try {
    fuse::fuse(g, {"add_nrom"});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown fusion rule 'add_nrom' (rules: add_norm, qk_norm_rope, kv_append)"),
              std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lathe
