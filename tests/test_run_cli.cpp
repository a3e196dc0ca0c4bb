// `lathe run` and the default model: the interpreter's greedy continuation of the reference prompt
// equals transformers' (tests/data/default_model/reference.json, computed from the same weights),
// the prompt's ids equal the reference tokenizer's, and the command line's refusals are clear.
#include "gguf/gguf_file.h"
#include "runtime/cpu_engine.h"
#include "runtime/generate.h"
#include "runtime/sampler.h"
#include "runtime/tokenizer.h"

#include "test_cli_helpers.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace lathe {
namespace {

nlohmann::json reference() {
  std::ifstream in(std::string(LATHE_TEST_DATA) + "/default_model/reference.json");
  return nlohmann::json::parse(in);
}

TEST(DefaultModel, GreedyContinuationMatchesTransformers) {
  const nlohmann::json ref = reference();
  const GgufFile f = GgufFile::open(default_model_path());
  const Tokenizer tok = Tokenizer::from_gguf(f);
  const std::vector<int32_t> prompt = tok.encode(ref["prompt"].get<std::string>(), true, false);
  EXPECT_EQ(prompt, ref["prompt_ids"].get<std::vector<int32_t>>());
  CpuEngine engine(f, 128);
  std::vector<float> logits = engine.run(prompt, 0, false);
  const std::vector<int32_t> want = ref["greedy_ids"].get<std::vector<int32_t>>();
  std::vector<int32_t> got;
  for (size_t i = 0; i < 16 && i < want.size(); ++i) {
    got.push_back(argmax(logits));
    const int32_t one[1] = {got.back()};
    logits = engine.run(one, static_cast<int64_t>(prompt.size() + i), false);
  }
  EXPECT_EQ(got, std::vector<int32_t>(want.begin(), want.begin() + static_cast<long>(got.size())));
}



TEST(RunCli, GeneratesFromTheDefaultModelOnTheCpu) {
  const Ran r = run_lathe("run --device cpu -p 'In the beginning God created' -n 8 --temp 0");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("In the beginning God created the heavens", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("generated 8 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cpu (reference interpreter)"), std::string::npos) << r.out;
}

// Sampled generation (the engine's run_one a step) repeats with a seed.
TEST(RunCli, SampledGenerationRepeatsWithASeed) {
  const std::string cmd = "run --device cpu -p 'In the beginning God created' -n 12 --seed 7 --temp 1.0";
  const Ran a = run_lathe(cmd), b = run_lathe(cmd);
  EXPECT_EQ(a.status, 0) << a.out;
  EXPECT_NE(a.out.find("generated 12 tokens"), std::string::npos) << a.out;
  EXPECT_EQ(a.out.substr(0, a.out.find("[cpu")), b.out.substr(0, b.out.find("[cpu"))) << a.out << "\n" << b.out;
}

TEST(RunCli, RefusesBadInputClearly) {
  Ran r = run_lathe("run --device cpu --ctx 16 -p 'And God said, Let there be light: and there was light. And God saw the light'");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("longer than the context of 16 tokens"), std::string::npos) << r.out;
  r = run_lathe("run --device cpu --chat --chat-template vicuna -p hi");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("unknown chat template 'vicuna'"), std::string::npos) << r.out;
  r = run_lathe("run /no/such/model.gguf -p hi");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("cannot open"), std::string::npos) << r.out;
  r = run_lathe("run --device cpu --top-p 0 -p hi");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("top-p must be in (0, 1]"), std::string::npos) << r.out;
  r = run_lathe("run --device cpu");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("no prompt"), std::string::npos) << r.out;
  r = run_lathe("run --device gpu --persistent --merge-from 256 -p hi");  // refused before any GPU is asked for
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("--merge-from 256 asks for a second decode graph, which --persistent does not have"),
            std::string::npos)
      << r.out;
}

TEST(RunCli, NoTokenizerIsAClearMessage) {
  // The transformers fixtures carry no tokenizer.
  const Ran r = run_lathe(std::string("run --device cpu -p hi ") + LATHE_TEST_DATA + "/transformers/qwen3.gguf");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("tokenizer"), std::string::npos) << r.out;
}

// A measuring knob's mistake: a word of LATHE_KERNEL_DEFINES that is not -DLATHE_NAME or -DLATHE_NAME=N
// is refused by name with exit 1, before anything is compiled (no GPU needed).
TEST(KernelsCli, RefusesAKernelDefineNotOfTheLibrarysForm) {
  setenv("LATHE_KERNEL_DEFINES", "-DLATHE_GEMV1_BEFORE_WAIT=1 -O0", 1);
  const Ran r = run_lathe("kernels --arch sm_90");
  unsetenv("LATHE_KERNEL_DEFINES");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("'-O0' is not of the form -DLATHE_NAME"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace lathe
