// The checker: the model programs check symbolically and with a real model's numbers, in every cut;
// the types it infers; the rules it enforces when parameters are numbers.
#include "lang/checker.h"
#include "lang/diagnostic.h"
#include "lang/program.h"

#include <gtest/gtest.h>

#include <string>

using namespace lathe::lang;

namespace {

std::string model_path(const std::string& name) { return std::string(LATHE_SOURCE_DIR) + "/models/" + name + ".lathe"; }
std::string every_op_path() { return std::string(LATHE_TEST_DATA) + "/lang/every_op.lathe"; }

// Qwen3-8B's numbers, and a Qwen3-30B-A3B mixture; extra entries are ignored by programs that do
// not declare them.
Bindings qwen3_8b() {
  return {{"n_vocab", 151936}, {"n_embd", 4096}, {"n_layer", 36}, {"n_head", 32}, {"n_head_kv", 8},
          {"head_dim", 128}, {"n_ff", 12288}, {"n_ctx", 4096}, {"eps", 1e-6}, {"rope_base", 1e6},
          {"n_expert", 128}, {"n_expert_used", 8}, {"n_ff_expert", 768}, {"n_rot", 64},
          {"rope_scale_factor", 8}, {"rope_low_freq_factor", 1}, {"rope_high_freq_factor", 4},
          {"rope_original_context", 8192}, {"n_rot_pairs", 64}};
}

std::string shape_of(const CheckResult& r, const std::string& output) {
  for (const auto& [name, type] : r.outputs)
    if (name == output) return type.str();
  return "none";
}

TEST(LangCheck, ModelsCheckSymbolicallyAndWithNumbersInEveryCut) {
  Bindings b = qwen3_8b();
  for (const std::string name : {"llama", "qwen2", "qwen3", "qwen3moe"}) {
    SCOPED_TRACE(name);
    Program p = parse_program_file(model_path(name));
    CheckResult r = check(p);
    EXPECT_EQ(shape_of(r, "logits"), "activation [rows, n_vocab]");
    EXPECT_EQ(shape_of(r, "next"), "token ids [rows]");
    EXPECT_EQ(shape_of(check(p, &b), "logits"), "activation [rows, 151936]");
    for (auto [cut, rows] : {std::pair{"decode", 1}, {"prefill:16", 16}, {"batch:8", 8}}) {
      Program c = make_cut(p, parse_cut(cut));
      EXPECT_EQ(shape_of(check(c), "logits"), fmt::format("activation [{}, n_vocab]", rows));
      EXPECT_EQ(shape_of(check(c, &b), "logits"), fmt::format("activation [{}, 151936]", rows));
      EXPECT_EQ(shape_of(check(c, &b), "next"), fmt::format("token ids [{}]", rows));
    }
  }
  Program every = parse_program_file(every_op_path());
  EXPECT_EQ(shape_of(check(every), "pt"), "activation [n_vocab, rows]");
  check(make_cut(every, parse_cut("batch:4")), &b);
}

TEST(LangCheck, InfersTheTypeOfEveryLet) {
  Program p = parse_program_file(model_path("qwen3"));
  CheckResult r = check(p);
  std::map<std::string, std::string> last;  // the last type of each name bound in the loop
  for (const Statement& s : p.body[1].body)
    if (s.kind == Statement::Kind::let) last[s.target] = r.types.at(s.id)->str();
  EXPECT_EQ(last["q"], "activation [rows, n_head, head_dim]");
  EXPECT_EQ(last["k"], "activation [rows, n_head_kv, head_dim]");
  EXPECT_EQ(last["a"], "activation [rows, n_embd]");
  EXPECT_EQ(last["g"], "activation [rows, n_ff]");
  EXPECT_EQ(r.types.at(p.body[1].id), std::nullopt);  // a loop binds nothing
  EXPECT_EQ(r.types.at(0)->str(), "activation [rows, n_embd]");
}

std::string check_error(const Program& p, const Bindings* b) {
  try {
    check(p, b);
  } catch (const LangError& e) {
    return e.message;
  }
  return "no error";
}

TEST(LangCheck, NumbersAreCheckedWhenBound) {
  Program p = parse_program_file(every_op_path());
  Bindings b = qwen3_8b();
  EXPECT_EQ(check_error(p, &b), "no error");
  Bindings wide = b;
  wide["n_rot"] = 256;  // more than head_dim
  EXPECT_NE(check_error(p, &wide).find("rope rotates 256 dims of heads of 128"), std::string::npos);
  Bindings odd = b;
  odd["n_rot"] = 63;
  EXPECT_NE(check_error(p, &odd).find("rotated dims are even"), std::string::npos);
  Bindings few = b;
  few["n_head"] = 12;  // v is heads 8..15 of 12
  EXPECT_NE(check_error(p, &few).find("heads 8 to 15 are past the 12 heads"), std::string::npos);
  Bindings missing = b;
  missing.erase("eps");
  EXPECT_NE(check_error(p, &missing).find("parameter `eps` has no value"), std::string::npos);
  Bindings fraction = b;
  fraction["n_head"] = 2.5;
  EXPECT_NE(check_error(p, &fraction).find("it counts"), std::string::npos);
  Bindings group = b;
  group["n_head"] = 12;
  group["n_head_kv"] = 5;  // 12 query heads over 5 cache heads
  Program q3 = parse_program_file(model_path("qwen3"));
  EXPECT_NE(check_error(q3, &group).find("grouped heads: the 12 heads of `q` are not a multiple of the caches' 5"),
            std::string::npos);
  Bindings used = b;
  used["n_expert_used"] = 200;
  EXPECT_NE(check_error(p, &used).find("uses 200 of only 128 experts"), std::string::npos);
}

TEST(LangCheck, ShapesAreSymbolicWithoutNumbers) {
  // n_embd and n_head*head_dim are different dims until numbers say otherwise: a program that mixes
  // them is refused without numbers.
  std::string text = R"(Model m.
Use parameters n_embd, n_head, head_dim and n_vocab.
Input tokens are the token ids of the rows.
Constant token_embd.weight is a matrix of n_vocab by n_embd.
Constant w.weight is a matrix of n_embd by n_head*head_dim.
Let x be the rows of token_embd.weight at tokens.
Let y be x times w.weight.
Return y.
)";
  Program p = parse_program(text, "m.lathe");
  EXPECT_NE(check_error(p, nullptr).find("shape mismatch: `x` has rows of n_embd values but `w.weight` takes rows "
                                         "of head_dim*n_head"), std::string::npos);
  Bindings b = {{"n_embd", 64}, {"n_head", 4}, {"head_dim", 16}, {"n_vocab", 10}};
  EXPECT_EQ(check_error(p, &b), "no error");
  b["head_dim"] = 8;
  EXPECT_NE(check_error(p, &b).find("rows of 64 values but `w.weight` takes rows of 32"), std::string::npos);
}

}  // namespace
