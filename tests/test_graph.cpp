// Lifting model programs to tensor graphs: roles, shapes, the unrolled layers, tied output, and
// refusals that name the statement.
#include "graph/graph.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "lang/program.h"
#include "model/model_spec.h"
#include "model/synth.h"

#include <gtest/gtest.h>

namespace lathe {
namespace {

lang::Bindings bind(const ModelSpec& s) {
  return {{"n_vocab", s.n_vocab}, {"n_embd", s.n_embd}, {"n_layer", s.n_layer},
          {"n_head", s.n_head}, {"n_head_kv", s.n_head_kv}, {"head_dim", s.head_dim},
          {"n_ff", s.n_ff}, {"n_expert", s.n_expert}, {"n_expert_used", s.n_expert_used},
          {"n_ff_expert", s.n_ff_expert}, {"n_rot", s.n_rot}, {"n_ctx", 64},
          {"eps", s.norm_eps}, {"rope_base", s.rope_base}, {"rope_scale_factor", 1.0},
          {"rope_low_freq_factor", 1.0}, {"rope_high_freq_factor", 4.0},
          {"rope_original_context", 8192}, {"n_rot_pairs", s.n_rot / 2}};
}

graph::ConstantLookup lookup_in(const GgufFile& f) {
  return [&f](const std::string& name) -> std::optional<graph::CheckpointTensor> {
    const GgufTensor* t = f.find_tensor(name);
    if (!t) return std::nullopt;
    return graph::CheckpointTensor{t->type, t->dims};
  };
}

std::string synth_path(const std::string& shape) {
  const std::string path = testing::TempDir() + "/graph-" + shape + ".gguf";
  SynthOptions o;
  o.shape = shape;
  o.type = "q8_0";
  write_synthetic_checkpoint(o, path);
  return path;
}

lang::Program model_program(const std::string& arch, const std::string& cut) {
  const lang::Program p = lang::parse_program_file(std::string(LATHE_SOURCE_DIR) + "/models/" + arch + ".lathe");
  return lang::make_cut(p, lang::parse_cut(cut));
}

TEST(Lift, Qwen3DecodeHasEveryRoleAndShape) {
  const GgufFile f = GgufFile::open(synth_path("qwen3-tiny"));
  const ModelSpec s = read_model_spec(f);
  const graph::Graph g = graph::lift(model_program("qwen3", "decode"), bind(s), lookup_in(f));
  int inputs = 0, constants = 0, state = 0, outputs = 0;
  for (const graph::Tensor& t : g.tensors) {
    inputs += t.role == graph::Role::input;
    constants += t.role == graph::Role::constant;
    state += t.role == graph::Role::state;
    outputs += t.role == graph::Role::output;
    if (t.role == graph::Role::temporary || t.role == graph::Role::output) {
      EXPECT_GE(t.producer, 0) << t.name;
    }
    if (t.role != graph::Role::output && t.role != graph::Role::input) {
      EXPECT_FALSE(t.consumers.empty()) << t.name << " is never read";
    }
  }
  EXPECT_EQ(inputs, 3);
  EXPECT_EQ(state, 2 * s.n_layer);
  EXPECT_EQ(outputs, 2);
  // Tied output: output.weight falls back to token_embd.weight, one constant for both uses.
  EXPECT_EQ(constants, static_cast<int>(f.tensors().size()));
  ASSERT_EQ(g.outputs.size(), 2u);
  EXPECT_EQ(g.tensor(g.outputs[0]).shape, (std::vector<int64_t>{1, s.n_vocab}));
  EXPECT_EQ(g.tensor(g.outputs[1]).shape, (std::vector<int64_t>{1}));
  // Layers are unrolled: the same statement appears once a layer, with the layer's own constants.
  int attention = 0;
  for (const graph::Node& n : g.nodes) {
    if (n.kind != lang::OpKind::attention) continue;
    EXPECT_EQ(n.state.size(), 2u);
    EXPECT_EQ(g.tensor(n.state[0]).layer, attention);
    EXPECT_EQ(g.tensor(n.state[0]).shape, (std::vector<int64_t>{1, 64, s.n_head_kv, s.head_dim}));
    EXPECT_NE(n.text.find("Let a be the attention of q"), std::string::npos) << n.text;
    ++attention;
  }
  EXPECT_EQ(attention, s.n_layer);
  const std::string text = graph::print_graph(g);
  EXPECT_NE(text.find("blk.1.attn_q.weight[256,256] matrix q8_0"), std::string::npos) << text;
}

TEST(Lift, CutsSetTheRows) {
  const GgufFile f = GgufFile::open(synth_path("qwen3moe-tiny"));
  const ModelSpec s = read_model_spec(f);
  for (const auto& [cut, rows, seqs] : {std::tuple{"prefill:8", 8, 1}, std::tuple{"batch:4", 4, 4}}) {
    const graph::Graph g = graph::lift(model_program("qwen3moe", cut), bind(s), lookup_in(f));
    EXPECT_EQ(g.rows, rows);
    EXPECT_EQ(g.sequences, seqs);
    EXPECT_EQ(g.tensor(g.outputs[0]).shape, (std::vector<int64_t>{rows, s.n_vocab}));
    int mixtures = 0;
    for (const graph::Node& n : g.nodes) mixtures += n.kind == lang::OpKind::mixture;
    EXPECT_EQ(mixtures, s.n_layer);
  }
}

// A copy of a checkpoint with one tensor dropped or replaced.
std::vector<uint8_t> edited(const GgufFile& f, const std::string& drop, const std::string& reshape) {
  GgufWriter w;
  for (const auto& [k, v] : f.metadata()) w.set(k, v);
  for (const GgufTensor& t : f.tensors()) {
    if (t.name == drop) continue;
    if (t.name == reshape) {
      std::vector<int64_t> dims = {t.dims[0] * 2};
      w.add_tensor(t.name, dims, GgmlType::F32, std::vector<uint8_t>(dims[0] * 4, 0));
      continue;
    }
    w.add_tensor(t.name, t.dims, t.type, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  return w.to_bytes();
}

void expect_lift_error(const std::vector<uint8_t>& bytes, const ModelSpec& s,
                       const std::vector<std::string>& words) {
  const GgufFile f = GgufFile::from_bytes(bytes, "edited.gguf");
  try {
    graph::lift(model_program("qwen3", "decode"), bind(s), lookup_in(f));
    ADD_FAILURE() << "lifted";
  } catch (const graph::LiftError& e) {
    for (const std::string& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
  }
}

TEST(Lift, RefusesMissingAndMisshapenConstantsByStatement) {
  const GgufFile f = GgufFile::open(synth_path("qwen3-tiny"));
  const ModelSpec s = read_model_spec(f);
  expect_lift_error(edited(f, "blk.1.attn_k_norm.weight", ""), s,
                    {"qwen3.lathe:", "(layer 1)", "no tensor 'blk.1.attn_k_norm.weight'",
                     "Let k be the RMS norm of each head of k"});
  expect_lift_error(edited(f, "", "blk.0.ffn_norm.weight"), s,
                    {"tensor 'blk.0.ffn_norm.weight' is [512]", "declares [256]",
                     "Let h be the RMS norm of x weighted by blk.{L}.ffn_norm.weight"});
  expect_lift_error(edited(f, "token_embd.weight", ""), s, {"no tensor 'token_embd.weight'"});
}

TEST(Lift, UntiedOutputReadsItsOwnMatrix) {
  const GgufFile f = GgufFile::open(synth_path("llama-tiny"));
  const ModelSpec s = read_model_spec(f);
  const graph::Graph g = graph::lift(model_program("llama", "decode"), bind(s), lookup_in(f));
  const graph::Node& last_product = [&]() -> const graph::Node& {
    for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it)
      if (it->kind == lang::OpKind::product) return *it;
    throw std::runtime_error("no product");
  }();
  EXPECT_EQ(g.tensor(last_product.args[1].tensor).checkpoint_name, "output.weight");
}

}  // namespace
}  // namespace lathe
