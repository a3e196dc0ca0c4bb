// The parser and the canonical printer: round trips of every model program in every cut, the fixed
// layout, modifier order, continuation lines, comments, cuts and identity, and the op table's
// coverage (every op has a sentence in the every-op program and a CPU function).
#include "base/digest.h"
#include "lang/diagnostic.h"
#include "lang/lexer.h"
#include "lang/op_table.h"
#include "lang/program.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>

using namespace lathe::lang;

namespace {

const std::vector<std::string> kModels = {"llama", "qwen2", "qwen3", "qwen3moe"};
const std::vector<std::string> kCuts = {"decode", "prefill:16", "batch:8"};

std::string model_path(const std::string& name) { return std::string(LATHE_SOURCE_DIR) + "/models/" + name + ".lathe"; }
std::string every_op_path() { return std::string(LATHE_TEST_DATA) + "/lang/every_op.lathe"; }

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void expect_round_trip(const Program& p) {
  std::string text = print_canonical(p);
  Program again = parse_program(text, "canonical");
  EXPECT_EQ(again, p) << text;
  EXPECT_EQ(print_canonical(again), text);
}

TEST(LangParse, EveryModelRoundTripsInEveryCut) {
  for (const std::string& name : kModels) {
    SCOPED_TRACE(name);
    Program p = parse_program_file(model_path(name));
    EXPECT_EQ(p.model, name);
    EXPECT_FALSE(p.step.has_value());
    expect_round_trip(p);
    for (const std::string& cut : kCuts) {
      SCOPED_TRACE(cut);
      expect_round_trip(make_cut(p, parse_cut(cut)));
    }
  }
}

TEST(LangParse, EveryOpProgramRoundTrips) { expect_round_trip(parse_program_file(every_op_path())); }

TEST(LangParse, CutsDifferOnlyInTheStepLine) {
  Program p = parse_program_file(model_path("qwen3"));
  std::vector<std::string> model_lines = split_lines(print_canonical(p));
  std::set<std::string> ids = {identity(p)};
  for (const std::string& cut : kCuts) {
    std::vector<std::string> lines = split_lines(print_canonical(make_cut(p, parse_cut(cut))));
    ASSERT_EQ(lines.size(), model_lines.size() + 1);
    EXPECT_EQ(lines[0], model_lines[0]);
    EXPECT_TRUE(lines[1].starts_with("The step runs ")) << lines[1];
    EXPECT_EQ(std::vector<std::string>(lines.begin() + 2, lines.end()),
              std::vector<std::string>(model_lines.begin() + 1, model_lines.end()));
    ids.insert(identity(make_cut(p, parse_cut(cut))));
  }
  EXPECT_EQ(ids.size(), 1 + kCuts.size());
}

TEST(LangParse, CutsStateRowsAndSequences) {
  Program p = parse_program_file(model_path("llama"));
  EXPECT_EQ(*make_cut(p, parse_cut("decode")).step, (Step{1, 1, {}}));
  EXPECT_EQ(*make_cut(p, parse_cut("prefill:16")).step, (Step{16, 1, {}}));
  EXPECT_EQ(*make_cut(p, parse_cut("batch:8")).step, (Step{8, 8, {}}));
  EXPECT_NE(print_canonical(make_cut(p, parse_cut("decode"))).find("The step runs 1 row of 1 sequence.\n"),
            std::string::npos);
  EXPECT_NE(print_canonical(make_cut(p, parse_cut("batch:8"))).find("The step runs 8 rows of 8 sequences.\n"),
            std::string::npos);
  // A cut of a cut replaces the step line.
  Program twice = make_cut(make_cut(p, parse_cut("batch:8")), parse_cut("prefill:4"));
  EXPECT_EQ(print_canonical(twice), print_canonical(make_cut(p, parse_cut("prefill:4"))));
  EXPECT_EQ(cut_name(parse_cut("prefill:16")), "prefill:16");
  for (const char* bad : {"prefill", "prefill:0", "batch:x", "decode:1", "chunk:4", "prefill:16x"})
    EXPECT_THROW(parse_cut(bad), lathe::UserError) << bad;
}

TEST(LangParse, IdentityIsTheDigestOfTheCanonicalText) {
  Program p = parse_program_file(model_path("qwen2"));
  EXPECT_EQ(identity(p), lathe::sha256_hex(print_canonical(p)));
  EXPECT_EQ(identity(p).size(), 64u);
}

TEST(LangParse, LayoutAndCommentsDoNotChangeIdentity) {
  std::string text = read(model_path("qwen3"));
  Program p = parse_program(text, "a");
  // Comments, blank lines, indentation, continuation lines and another order of modifiers and
  // declarations: the same program.
  std::string other = text;
  auto replace = [&](const std::string& from, const std::string& to) {
    size_t at = other.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    other.replace(at, from.size(), to);
  };
  replace("Let q be q rotated at positions in neox order, with base rope_base.",
          "Let q be q rotated at positions  # a comment\n      with base rope_base in neox order.");
  replace("Input tokens are the token ids of the rows.\nInput positions are the positions of the rows.\n",
          "\n\nInput positions are the positions of the rows.   # reordered\nInput tokens are the token ids of the rows.\n");
  Program q = parse_program(other, "b");
  EXPECT_NE(q, p);  // the inputs' order is part of the program
  std::swap(q.inputs[0], q.inputs[1]);
  EXPECT_EQ(q, p);
  EXPECT_EQ(identity(q), identity(p));
  replace("Let x be x plus f.", "Let x be f plus x.");
  EXPECT_NE(identity(parse_program(other, "c")), identity(p));
}

TEST(LangParse, StatementsAreOpsWithKindsArgsAndModifiers) {
  Program p = parse_program_file(model_path("qwen3"));
  ASSERT_EQ(p.body.size(), 5u);
  const Statement& loop = p.body[1];
  ASSERT_EQ(loop.kind, Statement::Kind::loop);
  EXPECT_EQ(loop.loop_var, "L");
  EXPECT_EQ(loop.id, 1);
  EXPECT_EQ(loop.body[0].id, 2);
  const Statement* rope = nullptr;
  int appends = 0;
  for (const Statement& s : loop.body) {
    if (s.kind == Statement::Kind::let && s.op.kind == OpKind::rope && !rope) rope = &s;
    if (s.kind == Statement::Kind::effect) ++appends;
  }
  EXPECT_EQ(appends, 2);
  ASSERT_NE(rope, nullptr);
  EXPECT_EQ(rope->target, "q");
  ASSERT_EQ(rope->op.args.size(), 2u);
  EXPECT_EQ(rope->op.args[1].name, "positions");
  ASSERT_NE(rope->op.find(ModKind::neox_order), nullptr);
  const Modifier* base = rope->op.find(ModKind::base);
  ASSERT_NE(base, nullptr);
  ASSERT_EQ(base->args[0].factors.size(), 1u);
  EXPECT_EQ(base->args[0].factors[0].name, "rope_base");
  EXPECT_EQ(rope->loc.line, 38);
}

TEST(LangParse, TheOpTableIsCoveredAndMapsOntoCpuOps) {
  Program p = parse_program_file(every_op_path());
  std::set<OpKind> ops;
  std::set<ModKind> mods;
  std::function<void(const std::vector<Statement>&)> walk = [&](const std::vector<Statement>& body) {
    for (const Statement& s : body) {
      if (s.kind == Statement::Kind::loop) walk(s.body);
      else ops.insert(s.op.kind);
      for (const Modifier& m : s.op.mods) mods.insert(m.kind);
    }
  };
  walk(p.body);
  std::string cpu_ops = read(std::string(LATHE_SOURCE_DIR) + "/src/interp/cpu_ops.h");
  for (const OpInfo& info : op_table()) {
    EXPECT_TRUE(ops.count(info.kind)) << info.name << " is not in every_op.lathe";
    EXPECT_NE(cpu_ops.find(" " + std::string(info.cpu_op) + "("), std::string::npos) << info.cpu_op;
    EXPECT_EQ(std::set<ModKind>(info.mods.begin(), info.mods.end()).size(), info.mods.size()) << info.name;
  }
  for (const ModInfo& info : mod_table()) EXPECT_TRUE(mods.count(info.kind)) << info.name;
}

TEST(LangParse, NumbersPrintInOneSpelling) {
  std::string text = read(every_op_path());
  size_t at = text.find("scaled by 0.125");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 15, "scaled by 1.250e-1");
  Program p = parse_program(text, "x");
  EXPECT_EQ(p, parse_program_file(every_op_path()));
  EXPECT_NE(print_canonical(p).find("scaled by 0.125"), std::string::npos);
}

}  // namespace
