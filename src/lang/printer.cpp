// The canonical printer: one spelling and one layout per program. Sections (header, declarations,
// body, return) are separated by a blank line; a loop's body is indented two spaces and the loop has
// a blank line on each side inside the body; modifiers follow their op, the first after a space and
// the others after a comma, in the op table's order.
#include "base/digest.h"
#include "lang/op_table.h"
#include "lang/program.h"

#include <fmt/format.h>

namespace lathe::lang {

namespace {

std::string number_text(const Operand& op) {
  std::string out;
  for (size_t i = 0; i < op.factors.size(); ++i) {
    if (i > 0) out += '*';
    const Factor& f = op.factors[i];
    out += f.is_name ? f.name : fmt::format("{}", f.number);
  }
  return out;
}

std::string operand_text(const Operand& op) {
  if (op.kind == Operand::Kind::number) return number_text(op);
  return op.each_head ? "each head of " + op.name : op.name;
}

// Appends the pattern with its slots filled, a space before each word but a comma.
void print_pattern(std::string& out, std::string_view pattern, const std::vector<Operand>& args) {
  size_t slot = 0;
  for (std::string_view w : pattern_words(pattern)) {
    if (w == ",") {
      out += ',';
      continue;
    }
    if (!out.empty() && out.back() != ' ') out += ' ';
    if (w == "$v" || w == "$n") out += operand_text(args.at(slot++));
    else out += w;
  }
}

std::string op_text(const Op& op) {
  std::string out;
  print_pattern(out, op_info(op.kind).pattern, op.args);
  for (size_t i = 0; i < op.mods.size(); ++i) {
    out += i == 0 ? " " : ", ";
    std::string mod;
    print_pattern(mod, mod_info(op.mods[i].kind).pattern, op.mods[i].args);
    out += mod;
  }
  return out;
}

std::string list_text(const std::vector<Name>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
    out += names[i].name;
  }
  return out;
}

void print_body(std::string& out, const std::vector<Statement>& body, const std::string& indent) {
  for (size_t i = 0; i < body.size(); ++i) {
    const Statement& s = body[i];
    switch (s.kind) {
      case Statement::Kind::let:
        out += fmt::format("{}Let {} be {}.\n", indent, s.target, op_text(s.op));
        break;
      case Statement::Kind::effect:
        out += fmt::format("{}{}.\n", indent, op_text(s.op));
        break;
      case Statement::Kind::loop:
        if (i > 0) out += '\n';
        out += fmt::format("{}For each layer {} below {}.\n", indent, s.loop_var, number_text(s.loop_count));
        print_body(out, s.body, indent + "  ");
        out += fmt::format("{}End of layer {}.\n", indent, s.loop_var);
        if (i + 1 < body.size()) out += '\n';
        break;
    }
  }
}

constexpr std::string_view kInputPhrase[] = {"token ids", "positions", "sequence numbers"};

}  // namespace

std::string print_canonical(const Program& p) {
  std::string out = fmt::format("Model {}.\n", p.model);
  if (p.step)
    out += fmt::format("The step runs {} {} of {} {}.\n", p.step->rows, p.step->rows == 1 ? "row" : "rows",
                       p.step->sequences, p.step->sequences == 1 ? "sequence" : "sequences");
  std::string decls;
  if (!p.parameters.empty()) decls += fmt::format("Use parameters {}.\n", list_text(p.parameters));
  for (const InputDecl& in : p.inputs)
    decls += fmt::format("Input {} are the {} of the rows.\n", in.name, kInputPhrase[static_cast<int>(in.kind)]);
  for (const ConstantDecl& c : p.constants) {
    std::string shape;
    switch (c.kind) {
      case ConstantKind::vector: shape = "a vector of " + number_text(c.shape[0]); break;
      case ConstantKind::matrix:
        shape = fmt::format("a matrix of {} by {}", number_text(c.shape[0]), number_text(c.shape[1]));
        break;
      case ConstantKind::stack:
        shape = fmt::format("a stack of {} matrices of {} by {}", number_text(c.shape[0]),
                            number_text(c.shape[1]), number_text(c.shape[2]));
        break;
    }
    decls += fmt::format("Constant {} is {}{}.\n", c.name, shape,
                         c.optional            ? ", or none when absent"
                         : c.fallback.empty() ? ""
                                              : fmt::format(", or {} when absent", c.fallback));
  }
  if (p.caches)
    decls += fmt::format("Carry key and value caches of {} positions by {} by {} for each of {} layers.\n",
                         number_text(p.caches->positions), number_text(p.caches->heads),
                         number_text(p.caches->head_dim), number_text(p.caches->layers));
  if (!decls.empty()) out += "\n" + decls;
  if (!p.body.empty()) {
    out += '\n';
    print_body(out, p.body, "");
  }
  out += fmt::format("\nReturn {}.\n", list_text(p.outputs));
  return out;
}

std::string identity(const Program& program) { return sha256_hex(print_canonical(program)); }

}  // namespace lathe::lang
