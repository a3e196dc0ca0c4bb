// The parser: one statement per line, each matched against the patterns of the op, modifier and
// declaration tables. Errors name the furthest token any pattern reached and what it expected there.
#include "lang/diagnostic.h"
#include "lang/lexer.h"
#include "lang/op_table.h"
#include "lang/program.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace lathe::lang {

namespace {

// What a sentence may begin with, for the message when one does not.
constexpr std::string_view kSentenceStarts =
    "`Model`, `The step runs`, `Use parameters`, `Input`, `Constant`, `Carry`, `For each layer`, "
    "`End of layer`, `Let`, `Append` or `Return`";

bool begins_sentence(const Token& t) {
  static const std::vector<std::string_view> starts = {"Model", "The", "Use", "Input", "Constant", "Carry",
                                                       "For", "End", "Let", "Append", "Return"};
  return t.kind == Token::Kind::word && std::find(starts.begin(), starts.end(), t.text) != starts.end();
}

struct Match {
  bool ok = false;
  size_t end = 0;                 // ok: the token after the match
  std::vector<Operand> args;      // ok: the slots, in order
  size_t fail = 0;                // !ok: the token that did not fit
  std::string expected;           // !ok: what the pattern wanted there
};

std::string join_expected(std::vector<std::string> items) {
  std::sort(items.begin(), items.end());
  items.erase(std::unique(items.begin(), items.end()), items.end());
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " or " : ", ";
    out += items[i];
  }
  return out;
}

class LineParser {
 public:
  LineParser(const SourceText& source, std::vector<Token> tokens, int line_no, int line_len)
      : source_(source), toks_(std::move(tokens)), line_no_(line_no), line_len_(line_len) {}

  const Token* at(size_t i) const { return i < toks_.size() ? &toks_[i] : nullptr; }
  size_t size() const { return toks_.size(); }
  SourceLoc loc(size_t i) const {
    if (i < toks_.size()) return toks_[i].loc;
    return SourceLoc{line_no_, line_len_ + 1};
  }
  bool is_word(size_t i, std::string_view w) const {
    const Token* t = at(i);
    return t && t->kind == Token::Kind::word && t->text == w;
  }
  bool is_period(size_t i) const { const Token* t = at(i); return t && t->kind == Token::Kind::period; }

  [[noreturn]] void error(size_t i, const std::string& message) const { fail_at(source_, loc(i), message); }

  std::string describe(size_t i) const {
    const Token* t = at(i);
    if (!t) return "the end of the line";
    if (t->kind == Token::Kind::period) return "the period";
    return fmt::format("`{}`", t->text);
  }

  // A number: factor {'*' factor}; a factor is a literal or a name.
  bool match_number(size_t& i, Operand& out) const {
    out = Operand{Operand::Kind::number, "", false, {}, loc(i)};
    for (;;) {
      const Token* t = at(i);
      if (!t) return false;
      if (t->kind == Token::Kind::number) {
        out.factors.push_back(Factor{false, "", t->number});
      } else if (t->kind == Token::Kind::word) {
        out.factors.push_back(Factor{true, t->text, 0});
      } else {
        return false;
      }
      ++i;
      if (!(at(i) && at(i)->kind == Token::Kind::star)) return true;
      ++i;
    }
  }

  // A value: NAME, or `each head of NAME`.
  bool match_value(size_t& i, Operand& out) const {
    out = Operand{Operand::Kind::value, "", false, {}, loc(i)};
    if (is_word(i, "each") && is_word(i + 1, "head") && is_word(i + 2, "of")) {
      out.each_head = true;
      i += 3;
    }
    const Token* t = at(i);
    if (!t || t->kind != Token::Kind::word) return false;
    out.name = t->text;
    ++i;
    return true;
  }

  Match match(std::string_view pattern, size_t start) const {
    Match m;
    size_t i = start;
    for (std::string_view w : pattern_words(pattern)) {
      if (w == "$v" || w == "$n") {
        Operand op;
        bool ok = w == "$v" ? match_value(i, op) : match_number(i, op);
        if (!ok) {
          m.fail = i;
          m.expected = w == "$v" ? "a name" : "a number";
          return m;
        }
        m.args.push_back(std::move(op));
        continue;
      }
      const Token* t = at(i);
      bool ok = t && (w == "," ? t->kind == Token::Kind::comma
                               : t->kind != Token::Kind::comma && t->kind != Token::Kind::period &&
                                     t->text == w);
      if (!ok) {
        m.fail = i;
        m.expected = fmt::format("`{}`", w);
        return m;
      }
      ++i;
    }
    m.ok = true;
    m.end = i;
    return m;
  }

  // Matches every candidate; returns the index of the longest match, or fails with what the
  // candidates that got furthest expected.
  size_t best_match(const std::vector<std::string_view>& patterns, size_t start, Match& out,
                    const std::string& context) const {
    size_t best = patterns.size();
    size_t furthest = 0;
    std::vector<std::string> expected;
    for (size_t k = 0; k < patterns.size(); ++k) {
      Match m = match(patterns[k], start);
      if (m.ok) {
        if (best == patterns.size() || m.end > out.end) {
          best = k;
          out = m;
        }
        continue;
      }
      if (m.fail > furthest) {
        furthest = m.fail;
        expected.clear();
      }
      if (m.fail == furthest) expected.push_back(m.expected);
    }
    if (best != patterns.size()) return best;
    if (furthest == start && !context.empty())
      error(furthest, fmt::format("{} {}; expected {}", describe(furthest), context,
                                  join_expected(expected)));
    error(furthest, fmt::format("expected {} here, not {}", join_expected(expected), describe(furthest)));
  }

  void expect_end(size_t i) const {
    if (!is_period(i)) error(i, fmt::format("expected the period ending the statement, not {}", describe(i)));
  }

  std::string plain_name(const Operand& op, std::string_view what) const {
    if (op.each_head || op.name.find_first_of(".{}") != std::string::npos)
      fail_at(source_, op.loc, fmt::format("`{}` is not a plain name for {} (letters, digits and _)",
                                           op.name, what));
    return op.name;
  }

  // NAME {, NAME} [[,] and NAME] up to the period.
  std::vector<Name> name_list(size_t i) const {
    std::vector<Name> names;
    for (;;) {
      const Token* t = at(i);
      if (!t || t->kind != Token::Kind::word)
        error(i, fmt::format("expected a name here, not {}", describe(i)));
      names.push_back(Name{t->text, t->loc});
      ++i;
      if (is_period(i)) return names;
      if (at(i) && at(i)->kind == Token::Kind::comma) ++i;
      else if (!is_word(i, "and")) error(i, fmt::format("expected `,`, `and` or the period, not {}", describe(i)));
      if (is_word(i, "and")) ++i;
    }
  }

  // The op phrase after `Let NAME be`, with its modifiers, up to the period.
  Op parse_expression(size_t i) const {
    std::vector<std::string_view> patterns;
    std::vector<const OpInfo*> infos;
    for (const OpInfo& info : op_table()) {
      if (info.pattern.starts_with("$") || info.pattern.starts_with("the ")) {
        patterns.push_back(info.pattern);
        infos.push_back(&info);
      }
    }
    Match m;
    const OpInfo& info = *infos[best_match(patterns, i, m, "does not begin an op phrase")];
    Op op{info.kind, std::move(m.args), {}, loc(i)};
    parse_modifiers(op, info, m.end);
    return op;
  }

  void parse_modifiers(Op& op, const OpInfo& info, size_t i) const {
    std::vector<std::string_view> patterns;
    for (const ModInfo& mod : mod_table()) patterns.push_back(mod.pattern);
    while (!is_period(i)) {
      if (at(i) && at(i)->kind == Token::Kind::comma) ++i;
      if (!at(i) || is_period(i))
        error(i, "expected a modifier after the comma");
      Match m;
      const ModInfo& mod = mod_table()[best_match(
          patterns, i, m,
          fmt::format("is not a modifier{}", info.mods.empty() ? "" : fmt::format(" of the {}", info.name)))];
      if (std::find(info.mods.begin(), info.mods.end(), mod.kind) == info.mods.end()) {
        std::vector<std::string> allowed;
        for (ModKind k : info.mods) allowed.push_back(fmt::format("`{}`", mod_phrase(k)));
        error(i, fmt::format("`{}` does not apply to the {}; {}", mod_phrase(mod.kind), info.name,
                             allowed.empty() ? "it takes no modifiers"
                                             : "it takes " + join_expected(allowed)));
      }
      if (op.find(mod.kind)) error(i, fmt::format("`{}` is given twice", mod_phrase(mod.kind)));
      op.mods.push_back(Modifier{mod.kind, std::move(m.args), loc(i)});
      i = m.end;
    }
    auto rank = [&](ModKind k) { return std::find(info.mods.begin(), info.mods.end(), k) - info.mods.begin(); };
    std::stable_sort(op.mods.begin(), op.mods.end(),
                     [&](const Modifier& a, const Modifier& b) { return rank(a.kind) < rank(b.kind); });
  }

  const SourceText& source_;
  std::vector<Token> toks_;
  int line_no_;
  int line_len_;
};

enum class Section { header, declarations, body, returned };

class ProgramParser {
 public:
  explicit ProgramParser(Program& p) : p_(p) {}

  // One statement: the tokens of its first line and of its continuation lines; `last_line` is the
  // line it ends on (where a missing period is reported).
  void parse_statement(std::vector<Token> toks, int last_line) {
    const std::string& text = p_.source.lines[last_line - 1];
    std::string code = text.substr(0, text.find('#'));
    int len = static_cast<int>(code.find_last_not_of(" \t") + 1);
    LineParser lp(p_.source, std::move(toks), last_line, len);
    for (size_t i = 0; i + 1 < lp.size(); ++i)
      if (lp.is_period(i))
        lp.error(i + 1, "one statement per line: this follows the period that ended the statement");
    if (!lp.is_period(lp.size() - 1)) lp.error(lp.size(), "missing period at the end of the statement");
    statement(lp);
  }

  void finish(int n_lines) {
    if (p_.model.empty())
      fail_at(p_.source, SourceLoc{1, 1}, "a program begins with `Model NAME.`");
    if (!loop_stack_.empty())
      fail_at(p_.source, loop_stack_.back()->loc,
              fmt::format("the loop over layer {} has no `End of layer {}.`", loop_stack_.back()->loop_var,
                          loop_stack_.back()->loop_var));
    if (section_ != Section::returned)
      fail_at(p_.source, SourceLoc{n_lines + 1, 1}, "a program ends with `Return NAME, NAME and NAME.`");
  }

 private:
  void enter(const LineParser& lp, Section s) {
    if (section_ == Section::returned)
      lp.error(0, "`Return` is the last statement of a program");
    if (s == Section::declarations && section_ == Section::body)
      lp.error(0, "declarations come before the first statement");
    if (section_ == Section::header && s != Section::header && p_.model.empty())
      lp.error(0, "a program begins with `Model NAME.`");
    section_ = std::max(section_, s);
  }

  std::vector<Statement>& body() { return loop_stack_.empty() ? p_.body : loop_stack_.back()->body; }

  void statement(LineParser& lp) {
    const Token& first = *lp.at(0);
    std::string_view w = first.kind == Token::Kind::word ? std::string_view(first.text) : "";
    Match m;
    if (w == "Model") {
      if (!p_.model.empty()) lp.error(0, "a program has one `Model` line");
      enter(lp, Section::header);
      m = expect(lp, "Model $v");
      p_.model = lp.plain_name(m.args[0], "a model");
      p_.model_loc = first.loc;
    } else if (w == "The") {
      enter(lp, Section::header);
      if (p_.step) lp.error(0, "a program has one step line");
      if (p_.model.empty()) lp.error(0, "a program begins with `Model NAME.`");
      static const std::vector<std::string_view> pats = {
          "The step runs $n row of $n sequence", "The step runs $n rows of $n sequence",
          "The step runs $n row of $n sequences", "The step runs $n rows of $n sequences"};
      lp.best_match(pats, 0, m, "");
      lp.expect_end(m.end);
      Step step{count(lp, m.args[0]), count(lp, m.args[1]), first.loc};
      if (step.sequences > step.rows)
        fail_at(p_.source, m.args[1].loc, "a step runs at least one row of each of its sequences");
      p_.step = step;
    } else if (w == "Use") {
      enter(lp, Section::declarations);
      m = lp.match("Use parameters", 0);
      if (!m.ok) lp.error(m.fail, fmt::format("expected {} here", m.expected));
      for (Name& n : lp.name_list(m.end)) p_.parameters.push_back(std::move(n));
    } else if (w == "Input") {
      enter(lp, Section::declarations);
      static const std::vector<std::string_view> pats = {"Input $v are the token ids of the rows",
                                                         "Input $v are the positions of the rows",
                                                         "Input $v are the sequence numbers of the rows"};
      size_t k = lp.best_match(pats, 0, m, "");
      lp.expect_end(m.end);
      p_.inputs.push_back(InputDecl{lp.plain_name(m.args[0], "an input"), static_cast<InputKind>(k),
                                    m.args[0].loc});
    } else if (w == "Constant") {
      enter(lp, Section::declarations);
      static const std::vector<std::string_view> pats = {
          "Constant $v is a vector of $n", "Constant $v is a matrix of $n by $n",
          "Constant $v is a stack of $n matrices of $n by $n"};
      size_t k = lp.best_match(pats, 0, m, "");
      ConstantDecl decl{m.args[0].name, static_cast<ConstantKind>(k), {}, "", m.args[0].loc};
      if (m.args[0].each_head) lp.error(1, "a constant is named by its checkpoint name alone");
      decl.shape.assign(m.args.begin() + 1, m.args.end());
      size_t end = m.end;
      if (!lp.is_period(end)) {
        Match alt = lp.match(", or $v when absent", end);
        if (!alt.ok) lp.error(alt.fail, fmt::format("expected {} here, not {}", alt.expected, lp.describe(alt.fail)));
        // `none` is no tensor name a checkpoint uses: it marks the constant optional.
        if (alt.args[0].name == "none") decl.optional = true;
        else decl.fallback = alt.args[0].name;
        end = alt.end;
      }
      lp.expect_end(end);
      p_.constants.push_back(std::move(decl));
    } else if (w == "Carry") {
      enter(lp, Section::declarations);
      if (p_.caches) lp.error(0, "a program has one `Carry` line");
      m = expect(lp, "Carry key and value caches of $n positions by $n by $n for each of $n layers");
      p_.caches = CacheDecl{m.args[0], m.args[1], m.args[2], m.args[3], first.loc};
    } else if (w == "For") {
      enter(lp, Section::body);
      if (!loop_stack_.empty()) lp.error(0, "loops do not nest: this loop is inside the loop over layer " +
                                                loop_stack_.back()->loop_var);
      m = expect(lp, "For each layer $v below $n");
      Statement s;
      s.kind = Statement::Kind::loop;
      s.loop_var = lp.plain_name(m.args[0], "a loop variable");
      s.loop_count = m.args[1];
      s.loc = first.loc;
      body().push_back(std::move(s));
      loop_stack_.push_back(&body().back());
    } else if (w == "End") {
      enter(lp, Section::body);
      m = expect(lp, "End of layer $v");
      if (loop_stack_.empty()) lp.error(0, "`End of layer` with no loop open");
      if (m.args[0].name != loop_stack_.back()->loop_var)
        fail_at(p_.source, m.args[0].loc,
                fmt::format("the open loop is over layer {}, not {}", loop_stack_.back()->loop_var, m.args[0].name));
      loop_stack_.pop_back();
    } else if (w == "Let") {
      enter(lp, Section::body);
      m = lp.match("Let $v be", 0);
      if (!m.ok) lp.error(m.fail, fmt::format("expected {} here, not {}", m.expected, lp.describe(m.fail)));
      Statement s;
      s.kind = Statement::Kind::let;
      s.target = lp.plain_name(m.args[0], "a value");
      s.loc = first.loc;
      s.op = lp.parse_expression(m.end);
      body().push_back(std::move(s));
    } else if (w == "Return") {
      enter(lp, Section::body);
      if (!loop_stack_.empty()) lp.error(0, "`Return` inside the loop over layer " + loop_stack_.back()->loop_var);
      p_.outputs = lp.name_list(1);
      p_.outputs_loc = first.loc;
      section_ = Section::returned;
    } else {
      std::vector<std::string_view> pats;
      std::vector<const OpInfo*> infos;
      for (const OpInfo& info : op_table()) {
        if (!info.pattern.starts_with("$") && !info.pattern.starts_with("the ") && pattern_words(info.pattern)[0] == w) {
          pats.push_back(info.pattern);
          infos.push_back(&info);
        }
      }
      if (pats.empty())
        lp.error(0, fmt::format("this sentence is not in the grammar; a sentence begins with {}", kSentenceStarts));
      enter(lp, Section::body);
      const OpInfo& info = *infos[lp.best_match(pats, 0, m, "")];
      Statement s;
      s.kind = Statement::Kind::effect;
      s.loc = first.loc;
      s.op = Op{info.kind, std::move(m.args), {}, first.loc};
      lp.parse_modifiers(s.op, info, m.end);
      body().push_back(std::move(s));
    }
  }

  Match expect(const LineParser& lp, std::string_view pattern) {
    Match m = lp.match(pattern, 0);
    if (!m.ok) lp.error(m.fail, fmt::format("expected {} here, not {}", m.expected, lp.describe(m.fail)));
    lp.expect_end(m.end);
    return m;
  }

  int64_t count(const LineParser& lp, const Operand& op) {
    if (op.factors.size() != 1 || op.factors[0].is_name || op.factors[0].number < 1 ||
        op.factors[0].number != static_cast<double>(static_cast<int64_t>(op.factors[0].number)))
      fail_at(p_.source, op.loc, "a step's rows and sequences are whole numbers of at least 1");
    return static_cast<int64_t>(op.factors[0].number);
  }

  Program& p_;
  Section section_ = Section::header;
  std::vector<Statement*> loop_stack_;  // at most one: loops do not nest
};

void number_body(std::vector<Statement>& body, int& next) {
  for (Statement& s : body) {
    s.id = next++;
    if (s.kind == Statement::Kind::loop) number_body(s.body, next);
  }
}

}  // namespace

void number_statements(Program& program) {
  int next = 0;
  number_body(program.body, next);
}

Program parse_program(std::string_view text, const std::string& file_name) {
  Program p;
  p.source.file_name = file_name;
  p.source.lines = split_lines(text);
  ProgramParser parser(p);
  // A statement continues on the following lines while it has no period yet and they are indented
  // deeper than its first line and do not begin a sentence.
  std::vector<Token> pending;
  int last_line = 0, indent = 0;
  auto flush = [&] {
    if (!pending.empty()) parser.parse_statement(std::move(pending), last_line);
    pending.clear();
  };
  for (size_t i = 0; i < p.source.lines.size(); ++i) {
    int line_no = static_cast<int>(i) + 1;
    std::vector<Token> toks = tokenize_line(p.source.lines[i], line_no, p.source);
    if (toks.empty()) {
      flush();
      continue;
    }
    bool continues = !pending.empty() && pending.back().kind != Token::Kind::period &&
                     toks[0].loc.col > indent && !begins_sentence(toks[0]);
    if (!continues) {
      flush();
      indent = toks[0].loc.col;
    }
    pending.insert(pending.end(), toks.begin(), toks.end());
    last_line = line_no;
  }
  flush();
  parser.finish(static_cast<int>(p.source.lines.size()));
  number_statements(p);
  return p;
}

Program parse_program_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read the program file {}", path);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_program(text.str(), path);
}

}  // namespace lathe::lang
