// The suite of user mistakes: each one a change to a small valid program (tests/data/lang/tiny.lathe),
// each failing with its own message at its line and column, in the `file:line:col: error:` form
// with the statement and a caret under the column.
#include "lang/checker.h"
#include "lang/diagnostic.h"
#include "lang/lexer.h"
#include "lang/program.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

using namespace lathe::lang;

namespace {

std::vector<std::string> tiny_lines() {
  std::ifstream in(std::string(LATHE_TEST_DATA) + "/lang/tiny.lathe");
  std::ostringstream s;
  s << in.rdbuf();
  return split_lines(s.str());
}

struct Mistake {
  std::string what;
  int line;             // the line changed (1-based), and where the error must be
  std::string text;     // its new text
  std::string anchor;   // the error's column is where this first occurs in `text`; "" for the line's end
  std::string message;  // a part of the message
  std::string note = "";  // a part of the notes, if any
};

const std::vector<Mistake> kMistakes = {
    {"unknown name", 33, "  Let x be x plus b.", "b.", "unknown name `b`"},
    {"unknown constant", 20, "  Let q be h times blk.{L}.attn_z.weight.", "blk", "unknown constant `blk.{L}.attn_z.weight`"},
    {"shape mismatch in a product", 20, "  Let q be h times blk.{L}.attn_output.weight.", "blk",
     "shape mismatch: `h` has rows of n_embd values but `blk.{L}.attn_output.weight` takes rows of head_dim*n_head",
     "h: activation [rows, n_embd]"},
    {"shape mismatch in a sum", 33, "  Let x be x plus q.", "q.", "shape mismatch: `q` must have the shape of `x`",
     "q: activation [rows, n_head, head_dim]"},
    {"a product with an activation", 20, "  Let q be h times x.", "x.", "`times` takes a checkpoint matrix"},
    {"wrong arity", 31, "  Let a be the SwiGLU of a.", ".", "expected `and` here, not the period"},
    {"bad modifier", 19, "  Let h be the RMS norm of x weighted by blk.{L}.attn_norm.weight, within a window of 4096.",
     "within", "`within a window of` does not apply to the rms_norm; it takes `weighted by` or `with epsilon`"},
    {"a modifier twice", 26, "  Let q be q rotated at positions with base rope_base, with base 10000.", "with base 1",
     "`with base` is given twice"},
    {"not a modifier", 26, "  Let q be q rotated at positions quickly.", "quickly", "`quickly` is not a modifier of the rope"},
    {"a misspelled modifier", 30, "  Let a be the attention of q over the caches of layer L upto positions.", "upto",
     "`upto` is not a modifier of the attention"},
    {"a sentence not in the grammar", 20, "  Compute q from h.", "Compute", "this sentence is not in the grammar"},
    {"a misspelled op", 31, "  Let a be the silu of a.", "silu", "`SiLU`"},
    {"rebinding a parameter", 33, "  Let eps be x plus a.", "Let", "`eps` is a parameter; `Let` cannot bind it"},
    {"rebinding an input", 33, "  Let tokens be x plus a.", "Let", "`tokens` is an input; `Let` cannot bind it"},
    {"a carried value changing type", 33, "  Let x be q scaled by 2.", "Let",
     "`x` is carried from layer to layer, so it keeps its type", "here it would become activation [rows, n_head, head_dim]"},
    {"a value of the loop used after it", 37, "Let next be the argmax of a.", "a.", "unknown name `a`"},
    {"a constant outside its loop", 36, "Let logits be x times blk.{L}.attn_q.weight.", "blk",
     "`blk.{L}.attn_q.weight` is used outside its loop over layer L"},
    {"missing period", 20, "  Let q be h times blk.{L}.attn_q.weight", "", "missing period at the end of the statement"},
    {"two statements on a line", 20, "  Let q be h times blk.{L}.attn_q.weight. Let k be q.", "Let k",
     "one statement per line"},
    {"unknown parameter", 3, "Use parameters n_embd, n_head, n_head_kv, head_dim, n_ff, n_layer, n_vocab, n_ctx, eps, n_foo and rope_base.",
     "n_foo", "unknown parameter `n_foo`"},
    {"an undeclared parameter", 9, "Constant blk.{L}.attn_q.weight is a matrix of n_expert by n_embd.", "n_expert",
     "parameter `n_expert` is not declared; add it to `Use parameters`"},
    {"a real parameter as a count", 23, "  Let q be q split into eps heads.", "eps", "`eps` is a real number; a count is needed here"},
    {"a split that does not divide", 23, "  Let q be q split into n_head_kv heads.", "n_head_kv",
     "cannot split rows of head_dim*n_head values into n_head_kv heads"},
    {"attention before the append", 29, "  Let z be the attention of q over the caches of layer L up to positions.", "the",
     "the attention reads the caches of layer L before this step's values are appended to them"},
    {"rope before the head split", 26, "  Let q be h rotated at positions in neox order, with base rope_base.", "h rotated",
     "rope rotates heads: split `h` into heads first"},
    {"rope without a base", 26, "  Let q be q rotated at positions in neox order.", "q rotated", "the rope needs `with base B`"},
    {"rope in two orders", 26, "  Let q be q rotated at positions in neox order, in normal order, with base rope_base.", "in normal",
     "neox order or in normal order, not both"},
    {"rope at something not positions", 26, "  Let q be q rotated at tokens with base rope_base.", "tokens",
     "`tokens` is token ids [rows]; the positions of the rows (an input) are needed here"},
    {"a norm without epsilon", 19, "  Let h be the RMS norm of x weighted by blk.{L}.attn_norm.weight.", "the",
     "the rms_norm needs `with epsilon E`"},
    {"each head of a value without heads", 19,
     "  Let h be the RMS norm of each head of x weighted by blk.{L}.attn_norm.weight, with epsilon eps.", "each",
     "`each head of x`: `x` has no heads"},
    {"each head of an op not a norm", 31, "  Let a be the SiLU of each head of a.", "each", "`each head of` applies to norms"},
    {"the loop variable as a value", 33, "  Let x be x plus L.", "L.", "`L` is the loop variable, a layer index"},
    {"a layer that is not the loop's", 28, "  Append k to the key cache of layer M.", "M.", "`M` is not the loop variable"},
    {"appending values of the wrong shape", 28, "  Append q to the key cache of layer L.", "q to",
     "shape mismatch: the caches hold [n_head_kv, head_dim] per position", "q: activation [rows, n_head, head_dim]"},
    {"the wrong End", 34, "End of layer M.", "M.", "the open loop is over layer L, not M"},
    {"a declaration after a statement", 17, "Constant foo.weight is a vector of n_embd.", "Constant",
     "declarations come before the first statement"},
    {"a character outside the language", 20, "  Let q be h @ blk.{L}.attn_q.weight.", "@", "`@` is not a character of the language"},
    {"returning what is not computed", 39, "Return logits and nxt.", "nxt", "`nxt` is not a value the program computes"},
    {"a fallback of another shape", 13, "Constant output.weight is a matrix of n_vocab by n_embd, or blk.{L}.attn_norm.weight when absent.",
     "output.weight", "the fallback `blk.{L}.attn_norm.weight` is vector [n_embd]"},
    {"a name with a dot for a value", 20, "  Let q.x be h times blk.{L}.attn_q.weight.", "q.x", "`q.x` is not a plain name"},
    {"a step line with more sequences than rows", 2, "The step runs 2 rows of 4 sequences.", "4 seq",
     "a step runs at least one row of each of its sequences"},
    {"a loop over other layers than the caches'", 18, "For each layer L below n_head.", "n_head",
     "the loop runs over n_head layers, but the caches are for n_layer layers"},
    {"frequency factors that are not a vector", 26,
     "  Let q be q rotated at positions in neox order, with base rope_base, with frequency factors token_embd.weight.",
     "token_embd", "the frequency factors `token_embd.weight` must be a vector of one factor per rotated pair"},
    {"a nested loop", 20, "  For each layer M below n_layer.", "For", "loops do not nest"},
};

TEST(LangMistakes, EachFailsWithItsMessageAtItsLineAndColumn) {
  const std::vector<std::string> base = tiny_lines();
  std::string base_text;
  for (const std::string& l : base) base_text += l + "\n";
  CheckResult ok = check(parse_program(base_text, "tiny.lathe"));  // the unchanged program is valid
  EXPECT_EQ(ok.outputs.size(), 2u);
  for (const Mistake& m : kMistakes) {
    SCOPED_TRACE(m.what);
    std::vector<std::string> lines = base;
    ASSERT_LE(m.line, static_cast<int>(lines.size()));
    lines[m.line - 1] = m.text;
    std::string text;
    for (const std::string& l : lines) text += l + "\n";
    int col = m.anchor.empty() ? static_cast<int>(m.text.size()) + 1 : static_cast<int>(m.text.find(m.anchor)) + 1;
    ASSERT_GT(col, 0) << "anchor not in the text";
    try {
      check(parse_program(text, "tiny.lathe"));
      ADD_FAILURE() << "no error";
    } catch (const LangError& e) {
      EXPECT_NE(e.message.find(m.message), std::string::npos) << e.what();
      EXPECT_EQ(e.loc.line, m.line) << e.what();
      EXPECT_EQ(e.loc.col, col) << e.what();
      std::string what = e.what();
      std::string head = fmt::format("tiny.lathe:{}:{}: error: ", m.line, col);
      EXPECT_TRUE(what.starts_with(head)) << what;
      std::string caret = "\n    " + m.text + "\n    " + std::string(col - 1, ' ') + "^";
      EXPECT_NE(what.find(caret), std::string::npos) << what;
      if (!m.note.empty()) EXPECT_NE(what.find("\n  " + m.note), std::string::npos) << what;
    }
  }
}

TEST(LangMistakes, ProgramLevelMistakes) {
  auto error_of = [](const std::string& text) -> std::string {
    try {
      check(parse_program(text, "p.lathe"));
    } catch (const LangError& e) {
      return fmt::format("{}:{}: {}", e.loc.line, e.loc.col, e.message);
    }
    return "no error";
  };
  EXPECT_EQ(error_of("Let x be y.\n"), "1:1: a program begins with `Model NAME.`");
  EXPECT_EQ(error_of("Model m.\nUse parameters n_embd.\n"), "3:1: a program ends with `Return NAME, NAME and NAME.`");
  EXPECT_EQ(error_of("Model m.\nFor each layer L below 2.\nReturn x.\n"), "3:1: `Return` inside the loop over layer L");
  EXPECT_EQ(error_of("Model m.\nReturn x.\nReturn x.\n"), "3:1: `Return` is the last statement of a program");
  EXPECT_EQ(error_of("Model m.\nUse parameters n_embd and n_embd.\nReturn x.\n"),
            "2:27: parameter `n_embd` is declared twice");
  EXPECT_EQ(error_of("Model m.\nUse parameters n_ctx.\nInput p are the positions of the rows.\n"
                     "Carry key and value caches of n_ctx positions by 1 by 1 for each of 1 layers.\nReturn p.\n"),
            "4:1: a cache slot is a (sequence, position): declare `Input NAME are the sequence numbers of the rows.`");
  // A statement that continues on deeper-indented lines reports on the line of the token at fault.
  EXPECT_TRUE(error_of("Model m.\nUse parameters n_embd,\n  n_bogus.\nReturn x.\n")
                  .starts_with("3:3: unknown parameter `n_bogus`; the parameters are n_vocab, n_embd"));
  // A line that begins a sentence is not a continuation: the line before it lacks its period.
  EXPECT_EQ(error_of("Model m\n  Use parameters n_embd.\nReturn x.\n"), "1:8: missing period at the end of the statement");
}

}  // namespace

namespace {

// Damaged programs fail as LangErrors, never as crashes or internal errors: every model program with
// one line cut short at every column, and with one line dropped.
TEST(LangMistakes, DamagedProgramsFailCleanly) {
  for (const std::string name : {"qwen3moe", "llama"}) {
    std::ifstream in(std::string(LATHE_SOURCE_DIR) + "/models/" + name + ".lathe");
    std::ostringstream s;
    s << in.rdbuf();
    const std::vector<std::string> lines = split_lines(s.str());
    int errors = 0;
    auto attempt = [&](const std::vector<std::string>& damaged) {
      std::string text;
      for (const std::string& l : damaged) text += l + "\n";
      try {
        check(parse_program(text, "damaged.lathe"));
      } catch (const LangError& e) {
        ++errors;
        EXPECT_TRUE(std::string(e.what()).starts_with("damaged.lathe:")) << e.what();
      }
    };
    for (size_t i = 0; i < lines.size(); ++i) {
      std::vector<std::string> damaged = lines;
      damaged.erase(damaged.begin() + i);
      attempt(damaged);
      for (size_t n = 0; n < lines[i].size(); ++n) {
        damaged = lines;
        damaged[i] = lines[i].substr(0, n);
        attempt(damaged);
      }
    }
    EXPECT_GT(errors, 1000);
  }
}

}  // namespace
