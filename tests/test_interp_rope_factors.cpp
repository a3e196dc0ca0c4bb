// Rope frequency factors (`with frequency factors V`, V declared `or none when absent`): Llama 3.1+
// checkpoints from llama.cpp's converter carry their scaling as rope_freqs.weight. With the tensor the
// interpreter divides each pair's frequency by its factor (checked against cpu_ops' rope directly);
// without it the modifier is dropped (the same logits as the program with the phrase deleted), and
// lifting leaves the rope node without the attr.
#include "base/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "graph/graph.h"
#include "interp/cpu_ops.h"
#include "interp/interpreter.h"
#include "lang/checker.h"
#include "lang/program.h"
#include "model/embedded_programs.h"
#include "model/model_program.h"
#include "model/model_spec.h"
#include "model/synth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include <unistd.h>

namespace lathe {
namespace {

template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// 1, 1.5, 2, ... capped at 8: one divisor per rotated pair.
std::vector<float> factors(int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) out[static_cast<size_t>(j)] = std::min(8.0f, 1.0f + 0.5f * static_cast<float>(j));
  return out;
}

// llama-tiny (one layer, f32), written once; and the same file with rope_freqs.weight added.
struct LlamaFiles {
  std::vector<uint8_t> with_bytes;
  std::unique_ptr<GgufFile> without, with;
  ModelSpec spec;
};

const LlamaFiles& llama_files() {
  static const LlamaFiles files = [] {
    LlamaFiles f;
    const std::string path =
        (std::filesystem::temp_directory_path() / ("lathe-ropefreqs-" + std::to_string(::getpid()) + ".gguf")).string();
    SynthOptions o;
    o.shape = "llama-tiny";
    o.type = "f32";
    o.layers = 1;
    o.threads = 1;
    f.spec = write_synthetic_checkpoint(o, path);
    f.without = std::make_unique<GgufFile>(GgufFile::open(path));
    GgufWriter w;
    for (const auto& [key, value] : f.without->metadata()) w.set(key, value);
    for (const GgufTensor& t : f.without->tensors())
      w.add_tensor(t.name, t.dims, t.type, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    const std::vector<float> v = factors(f.spec.n_rot / 2);
    std::vector<uint8_t> bytes(v.size() * sizeof(float));
    std::memcpy(bytes.data(), v.data(), bytes.size());
    w.add_tensor("rope_freqs.weight", {static_cast<int64_t>(v.size())}, GgmlType::F32, std::move(bytes));
    f.with_bytes = w.to_bytes();
    f.with = std::make_unique<GgufFile>(GgufFile::from_bytes(f.with_bytes, "llama-factors.gguf"));
    return f;
  }();
  return files;
}

const std::vector<int32_t> kTokens = {5, 17, 200, 33, 81, 9};

// Logits of the prefill cut over all tokens, rows concatenated.
std::vector<float> prefill(const lang::Program& program, const GgufFile& file, const ModelSpec& spec) {
  ModelProgram mp{program, spec_bindings(spec, 32)};
  const int64_t n = static_cast<int64_t>(kTokens.size());
  Interpreter in(lang::make_cut(mp.program, lang::parse_cut("prefill:" + std::to_string(n))), mp.bindings, file);
  KvState s = in.new_state();
  std::vector<int32_t> pos, seq(kTokens.size(), 0);
  for (int32_t i = 0; i < static_cast<int32_t>(n); ++i) pos.push_back(i);
  return in.step({kTokens, pos, seq}, s).at("logits").tensor.data;
}

// Logits of the decode cut, one token at a time.
std::vector<float> decode(const lang::Program& program, const GgufFile& file, const ModelSpec& spec) {
  ModelProgram mp{program, spec_bindings(spec, 32)};
  Interpreter in(lang::make_cut(mp.program, lang::parse_cut("decode")), mp.bindings, file);
  KvState s = in.new_state();
  std::vector<float> out;
  for (int32_t i = 0; i < static_cast<int32_t>(kTokens.size()); ++i) {
    const std::vector<float> l = in.step({{kTokens[static_cast<size_t>(i)]}, {i}, {0}}, s).at("logits").tensor.data;
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
  return d;
}

TEST(RopeFactors, LlamaReadsRopeFreqsAndItChangesTheLogits) {
  const LlamaFiles& f = llama_files();
  EXPECT_NO_THROW(model_program(*f.with, read_model_spec(*f.with), 32));
  const lang::Program llama = program_for_architecture("llama");
  const std::vector<float> with = prefill(llama, *f.with, f.spec);
  const std::vector<float> without = prefill(llama, *f.without, f.spec);
  for (float v : with) ASSERT_TRUE(std::isfinite(v));
  // Row 0 is at position 0, where every angle is 0: equal there, different after.
  const size_t vocab = static_cast<size_t>(f.spec.n_vocab);
  EXPECT_EQ(std::vector<float>(with.begin(), with.begin() + vocab),
            std::vector<float>(without.begin(), without.begin() + vocab));
  EXPECT_GT(max_abs_diff(with, without), 1e-4);
  // Decode one by one agrees with the prefill, factors and all.
  EXPECT_LT(max_abs_diff(decode(llama, *f.with, f.spec), with), 1e-3);
}

TEST(RopeFactors, WithoutTheTensorTheModifierIsDropped) {
  const LlamaFiles& f = llama_files();
  std::string text;
  for (const EmbeddedProgram& e : embedded_programs())
    if (e.name == "llama") text = std::string(e.text);
  const std::string phrase = ", with frequency factors rope_freqs.weight";
  size_t n = 0;
  for (size_t at; (at = text.find(phrase)) != std::string::npos; ++n) text.erase(at, phrase.size());
  ASSERT_EQ(n, 2u);  // q and k
  const lang::Program plain = lang::parse_program(text, "llama-plain.lathe");
  EXPECT_EQ(prefill(program_for_architecture("llama"), *f.without, f.spec), prefill(plain, *f.without, f.spec));
}

// A program of one rope: the interpreter's output equals cpu_ops' rope with the factors given directly.
TEST(RopeFactors, TheInterpreterPassesTheFactorsToRope) {
  const std::string text =
      "Model one_rope.\n"
      "Use parameters n_embd, n_head, head_dim, rope_base and n_rot_pairs.\n"
      "Input tokens are the token ids of the rows.\n"
      "Input positions are the positions of the rows.\n"
      "Constant token_embd.weight is a matrix of 10 by n_embd.\n"
      "Constant rope_freqs.weight is a vector of n_rot_pairs, or none when absent.\n"
      "Let x be the rows of token_embd.weight at tokens.\n"
      "Let q be x split into n_head heads.\n"
      "Let q be q rotated at positions in normal order, with base rope_base, with frequency factors "
      "rope_freqs.weight.\n"
      "Return q.\n";
  const lang::Bindings b = {{"n_embd", 16}, {"n_head", 2}, {"head_dim", 8}, {"rope_base", 10000}, {"n_rot_pairs", 4}};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> embd(10 * 16);
  for (float& v : embd) v = uniform(rng);
  const std::vector<float> fac = {1.0f, 1.5f, 4.0f, 8.0f};
  auto file_with = [&](bool with_factors) {
    GgufWriter w;
    std::vector<uint8_t> e(embd.size() * 4), r(fac.size() * 4);
    std::memcpy(e.data(), embd.data(), e.size());
    std::memcpy(r.data(), fac.data(), r.size());
    w.add_tensor("token_embd.weight", {16, 10}, GgmlType::F32, std::move(e));
    if (with_factors) w.add_tensor("rope_freqs.weight", {4}, GgmlType::F32, std::move(r));
    return w.to_bytes();
  };
  const std::vector<int32_t> tokens = {3, 7, 1}, positions = {5, 40, 1000};
  Tensor x({3, 2, 8});
  for (size_t r = 0; r < tokens.size(); ++r)
    std::memcpy(x.data.data() + r * 16, embd.data() + tokens[r] * 16, 16 * sizeof(float));
  RopeFreqScaling scaling;
  scaling.freq_factors = fac;
  const Tensor expect_with = rope(x, positions, 8, 10000, RopeOrder::normal, scaling);
  const Tensor expect_without = rope(x, positions, 8, 10000, RopeOrder::normal);
  ASSERT_NE(expect_with.data, expect_without.data);
  const lang::Program p = lang::make_cut(lang::parse_program(text, "one_rope.lathe"), lang::parse_cut("prefill:3"));
  for (bool with_factors : {true, false}) {
    SCOPED_TRACE(with_factors);
    const std::vector<uint8_t> bytes = file_with(with_factors);
    const GgufFile file = GgufFile::from_bytes(bytes, "one_rope.gguf");
    Interpreter in(p, b, file);
    KvState s = in.new_state();
    const Tensor q = in.step({tokens, positions, {0, 0, 0}}, s).at("q").tensor;
    EXPECT_LT(max_abs_diff(q.data, (with_factors ? expect_with : expect_without).data), 1e-6);
    // Lifting: the attr is there exactly when the tensor is.
    const graph::Graph g = graph::lift(p, b, [&](const std::string& name) -> std::optional<graph::CheckpointTensor> {
      const GgufTensor* t = file.find_tensor(name);
      if (!t) return std::nullopt;
      return graph::CheckpointTensor{t->type, t->dims};
    });
    int ropes = 0;
    for (const graph::Node& n : g.nodes) {
      if (n.kind != lang::OpKind::rope) continue;
      ++ropes;
      const graph::Attr* a = n.find(lang::ModKind::freq_factors);
      EXPECT_EQ(a != nullptr, with_factors);
      if (a) {
        EXPECT_EQ(g.tensor(a->args.at(0).tensor).checkpoint_name, "rope_freqs.weight");
      }
    }
    EXPECT_EQ(ropes, 1);
  }
  // The wrong number of factors is refused when the tensor is read.
  const lang::Bindings wrong = {{"n_embd", 16}, {"n_head", 2}, {"head_dim", 8}, {"rope_base", 10000}, {"n_rot_pairs", 3}};
  const std::string e = error_of([&] { lang::check(p, &wrong); });
  EXPECT_NE(e.find("must be a vector of 4"), std::string::npos) << e;
}

TEST(RopeFactors, AnOptionalConstantIsOnlyNamedByModifiers) {
  const std::string text =
      "Model bad.\n"
      "Use parameters n_embd.\n"
      "Input tokens are the token ids of the rows.\n"
      "Constant token_embd.weight is a matrix of 10 by n_embd.\n"
      "Constant extra.weight is a matrix of n_embd by n_embd, or none when absent.\n"
      "Let x be the rows of token_embd.weight at tokens.\n"
      "Let y be x times extra.weight.\n"
      "Return y.\n";
  const lang::Program p = lang::parse_program(text, "bad.lathe");
  EXPECT_TRUE(p.constants.at(1).optional);
  EXPECT_EQ(lang::parse_program(lang::print_canonical(p), "again.lathe"), p);
  const std::string e = error_of([&] { lang::check(p); });
  EXPECT_NE(e.find("bad.lathe:7:"), std::string::npos) << e;
  EXPECT_NE(e.find("`extra.weight` may be absent"), std::string::npos) << e;
}

// llama.cpp applies the factors instead of Llama 3 scaling from metadata; both at once is refused.
TEST(RopeFactors, FactorsAndLlama3ScalingTogetherAreRefused) {
  const LlamaFiles& f = llama_files();
  GgufWriter w;
  for (const auto& [key, value] : f.with->metadata()) w.set(key, value);
  w.set("llama.rope.scaling.type", GgufValue::of_string("llama3"));
  w.set("llama.rope.scaling.factor", GgufValue::of_f32(8.0f));
  for (const GgufTensor& t : f.with->tensors())
    w.add_tensor(t.name, t.dims, t.type, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  const std::vector<uint8_t> bytes = w.to_bytes();
  const GgufFile file = GgufFile::from_bytes(bytes, "both.gguf");
  const std::string e = error_of([&] { model_program(file, read_model_spec(file), 32); });
  EXPECT_NE(e.find("will not apply the scaling twice"), std::string::npos) << e;
}

}  // namespace
}  // namespace lathe
