// `lathe program` run as a user runs it (the built binary, LATHE_BINARY): a model's program cut and
// bound, a program file's canonical text, and a bad program file's diagnostic with exit 1.
#include "lang/program.h"

#include "test_cli_helpers.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

namespace {


Ran run(const std::string& args) { return run_lathe(args); }

std::string data(const std::string& rel) { return std::string(LATHE_TEST_DATA) + "/" + rel; }

// The identity line's digest.
std::string identity_of(const std::string& out) {
  std::smatch m;
  return std::regex_search(out, m, std::regex("# identity: ([0-9a-f]{64})")) ? m[1].str() : "";
}

TEST(CliProgram, PrintsAModelsCutProgramItsParametersAndItsIdentity) {
  Ran r = run("program " + data("transformers/qwen3moe.gguf") + " --cut prefill:16 --ctx 256");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Model qwen3moe."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("16 rows"), std::string::npos) << r.out;  // the step line of the cut
  EXPECT_NE(r.out.find("n_expert = 8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("n_ctx = 256"), std::string::npos) << r.out;
  // The printed text is a program: parsing it back gives the identity printed.
  std::string text = r.out.substr(0, r.out.find("\n# parameters"));
  lathe::lang::Program p = lathe::lang::parse_program(text, "printed");
  EXPECT_EQ(identity_of(r.out), lathe::lang::identity(p));
  // Cuts differ in identity; the same cut prints the same identity.
  Ran decode = run("program " + data("transformers/qwen3moe.gguf"));
  ASSERT_EQ(decode.status, 0) << decode.out;
  EXPECT_NE(identity_of(decode.out), identity_of(r.out));
  EXPECT_EQ(identity_of(run("program " + data("transformers/qwen3moe.gguf") + " --cut decode").out),
            identity_of(decode.out));
}

TEST(CliProgram, PrintsAProgramFileCanonically) {
  Ran r = run("program " + std::string(LATHE_SOURCE_DIR) + "/models/llama.lathe --cut batch:4");
  ASSERT_EQ(r.status, 0) << r.out;
  lathe::lang::Program file = lathe::lang::make_cut(
      lathe::lang::parse_program_file(std::string(LATHE_SOURCE_DIR) + "/models/llama.lathe"), lathe::lang::parse_cut("batch:4"));
  EXPECT_EQ(r.out, lathe::lang::print_canonical(file) + "# identity: " + lathe::lang::identity(file) + "\n");
}

TEST(CliProgram, ABadProgramFileGivesItsDiagnosticAndExit1) {
  std::string path = (std::filesystem::path(::testing::TempDir()) / "lathe_bad.lathe").string();
  std::ifstream in(std::string(LATHE_SOURCE_DIR) + "/models/qwen3.lathe");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string good = "Let f be the SwiGLU of g and u.";
  ASSERT_NE(text.find(good), std::string::npos);
  text.replace(text.find(good), good.size(), "Let f be the SwiGLU of g and w.");
  std::ofstream(path) << text;
  Ran r = run("program " + path);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("lathe_bad.lathe:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unknown name `w`"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("^"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("identity"), std::string::npos) << r.out;
}

TEST(CliProgram, RefusesABadCutAndAMissingFile) {
  Ran cut = run("program " + data("transformers/qwen3.gguf") + " --cut prefill:0");
  EXPECT_EQ(cut.status, 1) << cut.out;
  EXPECT_NE(cut.out.find("bad cut `prefill:0`"), std::string::npos) << cut.out;
  Ran missing = run("program /nonexistent/model.lathe");
  EXPECT_EQ(missing.status, 1) << missing.out;
}

}  // namespace

namespace {

TEST(CliProgram, GraphShowsTheLiftedOpsAndTheFusionGroups) {
  Ran r = run("program " + data("transformers/qwen3.gguf") + " --graph --ctx 64");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("constant  blk.1.attn_q.weight[64,64] matrix f32"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("state     cache.keys.1[1,64,2,16]"), std::string::npos) << r.out;
  // Sums and norms: three in the merged products' prologue (norm_prologue), the output norm's alone.
  EXPECT_NE(r.out.find("norm_prologue        3 groups"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("add_norm             1 groups"), std::string::npos) << r.out;
  // The rules that mark: every down but the last (ffn_split), every o after the first layer's (o_split).
  EXPECT_NE(r.out.find("ffn_split            1 downs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("o_split              1 o's"), std::string::npos) << r.out;
  Ran held = run("program " + data("transformers/qwen3.gguf") + " --graph --ctx 64 --hold add_norm");
  ASSERT_EQ(held.status, 0) << held.out;
  EXPECT_NE(held.out.find("add_norm             0 groups"), std::string::npos) << held.out;
  Ran bad = run("program " + data("transformers/qwen3.gguf") + " --graph --hold nonsense");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("unknown fusion rule 'nonsense'"), std::string::npos) << bad.out;
}

}  // namespace

namespace {

// A program file bound to a checkpoint's weights: `lathe program FILE --weights M --graph` lowers it
// as a model's own program; `lathe check FILE` needs the weights and says so (no GPU needed to refuse).
TEST(CliProgram, AProgramFileRunsOnACheckpointsWeights) {
  const std::string program = data("programs/qwen3_elementwise_runs.lathe");
  const std::string weights = testing::TempDir() + "/cli-program-qwen3-tiny.gguf";
  ASSERT_EQ(run("synth --shape qwen3-tiny --type q8_0 -o " + weights).status, 0);
  Ran r = run("program " + program + " --weights " + weights + " --graph");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("elementwise_run      3 groups"), std::string::npos) << r.out;
  // Layer 1's attention norm is quantized in its products' prologue (norm_prologue), not by its
  // producer; each layer's attention output is, by the blocks that finish its rows.
  EXPECT_NE(r.out.find("norm_prologue        1 groups"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("quantize_epilogue    8 values"), std::string::npos) << r.out;
  Ran held = run("program " + program + " --weights " + weights + " --graph --hold elementwise_run");
  ASSERT_EQ(held.status, 0) << held.out;
  EXPECT_NE(held.out.find("elementwise_run      0 groups"), std::string::npos) << held.out;
  Ran no_weights = run("check " + program);
  EXPECT_EQ(no_weights.status, 1);
  EXPECT_NE(no_weights.out.find("is a program: say which checkpoint's weights it runs on with --weights"),
            std::string::npos) << no_weights.out;
  Ran weights_on_model = run("check " + weights + " --weights " + weights);
  EXPECT_EQ(weights_on_model.status, 1);
  EXPECT_NE(weights_on_model.out.find("--weights goes with a program file"), std::string::npos) << weights_on_model.out;
  Ran twice = run("check " + program + " --weights " + weights + " --program " + program);
  EXPECT_EQ(twice.status, 1);
  EXPECT_NE(twice.out.find("give the program once"), std::string::npos) << twice.out;
}

}  // namespace
