// Generation's steps (runtime/generate.cpp) on an engine whose logits are a function of the token
// and position: greedy asks for argmaxes, top-k and greedy with a penalty ask for heads (run_head),
// top-p / min-p without top-k for rows; each makes the tokens a loop that samples every row makes.
#include "gguf/gguf_file.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "runtime/sampler.h"
#include "runtime/tokenizer.h"

#include <gtest/gtest.h>

#include <random>
#include <string_view>

namespace lathe {
namespace {

// Logits of a vocabulary of n: hashed from (token, position), with ties (rounded to eighths) and a
// few masked tokens; counts the calls of each kind.
class HashedEngine : public Engine {
 public:
  explicit HashedEngine(int64_t n) : n_(n) {}
  std::vector<float> run(std::span<const int32_t> tokens, int64_t start, bool all_logits) override {
    EXPECT_FALSE(all_logits);
    ++runs;
    const int64_t pos = start + static_cast<int64_t>(tokens.size()) - 1;
    std::mt19937 rng(static_cast<uint32_t>(tokens.back() * 7919 + pos * 104729));
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> l(static_cast<size_t>(n_));
    for (int64_t i = 0; i < n_; ++i) l[i] = i % 5 == 0 ? std::round(normal(rng) * 8) / 8 : normal(rng);
    l[static_cast<size_t>(pos % n_)] = -INFINITY;
    return l;
  }
  LogitHead run_head(int32_t token, int64_t position, int64_t m, std::span<const int32_t> penalized) override {
    ++heads;
    largest_head = std::max(largest_head, m);
    return Engine::run_head(token, position, m, penalized);
  }
  int64_t max_head() const override { return 300; }
  int64_t n_ctx() const override { return ctx; }
  int64_t n_vocab() const override { return n_; }
  std::string name() const override { return "hashed"; }
  int runs = 0, heads = 0;
  int64_t largest_head = 0;
  int64_t ctx = 4096;

 private:
  int64_t n_;
};

TEST(Generate, EachSamplerAsksForWhatItReadsAndMakesTheRowsTokens) {
  const GgufFile f = GgufFile::open(default_model_path());
  const Tokenizer tok = Tokenizer::from_gguf(f);
  const int64_t n = static_cast<int64_t>(tok.n_vocab());
  const std::vector<int32_t> prompt{1, 2, 3, 4, 5};
  struct Case {
    const char* what;
    SamplerOptions o;
    int by_head;  // steps after the prompt's that run_head should run: 47 all, 0 none, -1 some but not all
  };
  std::vector<Case> cases;
  SamplerOptions o;
  cases.push_back({"defaults", o, 47});
  o.repeat_penalty = 1.2;
  cases.push_back({"defaults and a penalty", o, 47});
  o.temperature = 0;
  cases.push_back({"greedy and a penalty", o, 47});
  o = SamplerOptions{};
  o.top_k = 0;
  cases.push_back({"top-p and min-p alone", o, 0});
  o = SamplerOptions{};
  o.top_k = 280;
  o.repeat_penalty = 1.1;
  o.repeat_last_n = 64;
  cases.push_back({"a head past max_head", o, -1});  // once 280 + the penalized tokens pass 300: rows
  for (const Case& c : cases) {
    HashedEngine e(n);
    Sampler s(c.o);
    GenerateOptions g;
    g.max_tokens = 48;
    g.stop_at_end = false;
    std::vector<int32_t> got;
    generate(e, tok, prompt, 0, g, s, [](std::string_view) {}, &got);
    if (c.by_head >= 0) EXPECT_EQ(e.heads, c.by_head) << c.what;
    else EXPECT_TRUE(e.heads > 0 && e.heads < 47) << c.what << ": " << e.heads;
    EXPECT_LE(e.largest_head, e.max_head()) << c.what;
    HashedEngine ref(n);
    Sampler r(c.o);
    std::vector<int32_t> want(prompt.begin(), prompt.end());
    std::vector<float> logits = ref.run(prompt, 0, false);
    for (int i = 0; i < 48; ++i) {
      want.push_back(r.sample(logits, want));
      const int32_t one[1] = {want.back()};
      logits = ref.run(one, static_cast<int64_t>(want.size()) - 1, false);
    }
    EXPECT_EQ(got, want) << c.what;
  }
}

// An engine that chains greedy steps as the GPU's does (Engine::run_argmax_steps): up to `chain` a call,
// each the argmax of the step's logits; records the lengths asked for and returned.
class ChainingEngine : public HashedEngine {
 public:
  ChainingEngine(int64_t n, int64_t chain) : HashedEngine(n), chain_(chain) {}
  std::vector<int32_t> run_argmax_steps(int32_t token, int64_t position, int64_t n) override {
    EXPECT_GE(n, 1);
    EXPECT_LE(position + n, n_ctx());
    asked.push_back(n);
    std::vector<int32_t> out;
    for (int64_t j = 0; j < std::min(n, chain_); ++j) out.push_back(token = run_argmax(token, position + j));
    return out;
  }
  std::vector<int64_t> asked;

 private:
  int64_t chain_;
};

// Greedy generation takes the chained steps' tokens in order: the same tokens as one step a call, never
// asking for more steps than the tokens left or the context's slots.
TEST(Generate, ChainedGreedyStepsMakeTheOneStepTokens) {
  const GgufFile f = GgufFile::open(default_model_path());
  const Tokenizer tok = Tokenizer::from_gguf(f);
  const int64_t n = static_cast<int64_t>(tok.n_vocab());
  const std::vector<int32_t> prompt{1, 2, 3, 4, 5};
  SamplerOptions so;
  so.temperature = 0;
  for (const int64_t ctx : {int64_t{4096}, int64_t{30}}) {  // 30: the context ends in the middle of a chain
    std::vector<int32_t> want;
    HashedEngine one(n);
    one.ctx = ctx;
    Sampler s1(so);
    GenerateOptions g;
    g.max_tokens = 41;
    g.stop_at_end = false;
    const GenerateStats a = generate(one, tok, prompt, 0, g, s1, [](std::string_view) {}, &want);
    for (const int64_t chain : {1, 4, 16}) {
      ChainingEngine e(n, chain);
      e.ctx = ctx;
      Sampler s(so);
      std::vector<int32_t> got;
      const GenerateStats b = generate(e, tok, prompt, 0, g, s, [](std::string_view) {}, &got);
      EXPECT_EQ(got, want) << "chain " << chain << ", context " << ctx;
      EXPECT_EQ(b.generated, a.generated);
      EXPECT_EQ(b.hit_context_end, a.hit_context_end);
      // 41 tokens: the prompt's sample, then 40 steps; at a context of 30, 25 slots after the prompt.
      const int64_t steps = ctx == 30 ? 25 : 40;
      EXPECT_EQ(static_cast<int64_t>(e.asked.size()), (steps + chain - 1) / chain) << "chain " << chain;
      ASSERT_FALSE(e.asked.empty());
      EXPECT_EQ(e.asked.front(), steps) << "chain " << chain;
    }
  }
}

// An engine that chains sampled steps as the GPU's does (Engine::run_sampled_steps): up to `chain` a
// call, each drawn from the step's head with the uniform given for it.
class SampledChainingEngine : public HashedEngine {
 public:
  SampledChainingEngine(int64_t n, int64_t chain) : HashedEngine(n), chain_(chain) {}
  std::vector<int32_t> run_sampled_steps(int32_t token, int64_t position, int64_t n, const SamplerOptions& o,
                                         std::span<const double> uniforms) override {
    EXPECT_GE(n, 1);
    EXPECT_EQ(static_cast<int64_t>(uniforms.size()), n);
    EXPECT_LE(position + n, n_ctx());
    ++calls;
    const Sampler s(o);
    std::vector<int32_t> out;
    for (int64_t j = 0; j < std::min(n, chain_); ++j) {
      const LogitHead h = run_head(token, position + j, std::min(n_vocab(), static_cast<int64_t>(o.top_k)), {});
      out.push_back(token = s.sample_head_at(h, uniforms[static_cast<size_t>(j)]));
    }
    return out;
  }
  int calls = 0;

 private:
  int64_t chain_;
};

// Sampled generation without a penalty takes chained steps where the engine offers them, drawing with
// the sampler's uniforms in order: the same tokens as a step at a time, and the sampler's generator
// where a step at a time leaves it (a second generation after the first continues the same way).
TEST(Generate, ChainedSampledStepsMakeTheOneStepTokens) {
  const GgufFile f = GgufFile::open(default_model_path());
  const Tokenizer tok = Tokenizer::from_gguf(f);
  const int64_t n = static_cast<int64_t>(tok.n_vocab());
  const std::vector<int32_t> prompt{1, 2, 3, 4, 5};
  GenerateOptions g;
  g.max_tokens = 37;
  g.stop_at_end = false;
  for (const bool penalty : {false, true}) {
    SamplerOptions so;
    if (penalty) so.repeat_penalty = 1.1;
    HashedEngine one(n);
    Sampler s1(so);
    std::vector<int32_t> want;
    generate(one, tok, prompt, 0, g, s1, [](std::string_view) {}, &want);
    generate(one, tok, prompt, 0, g, s1, [](std::string_view) {}, &want);  // the generator goes on
    for (const int64_t chain : {1, 8}) {
      SampledChainingEngine e(n, chain);
      Sampler s(so);
      std::vector<int32_t> got;
      generate(e, tok, prompt, 0, g, s, [](std::string_view) {}, &got);
      generate(e, tok, prompt, 0, g, s, [](std::string_view) {}, &got);
      EXPECT_EQ(got, want) << "chain " << chain << (penalty ? ", a penalty" : "");
      // 36 steps a generation: 36 / chain calls each, or none with a penalty (a head at a time).
      EXPECT_EQ(e.calls, penalty ? 0 : 2 * static_cast<int>((36 + chain - 1) / chain)) << "chain " << chain;
    }
  }
}

}  // namespace
}  // namespace lathe
