// The checker's state, shared by the walk over statements (checker.cpp) and the rules of each op
// (check_ops.cpp). Internal to lang/.
#pragma once

#include "lang/checker.h"
#include "lang/diagnostic.h"

#include <set>

namespace lathe::lang {

struct Binding {
  enum class Origin { parameter, input, constant, let };
  Origin origin = Origin::let;
  ValueType type;
  int depth = 0;            // 0: the top level; 1: first bound inside the loop
  std::string placeholder;  // constants: the loop variable their name holds (`{L}`), or empty
  InputKind input = InputKind::token_ids;
  bool optional = false;    // constants: `, or none when absent` (only modifiers may name it)
};

struct CacheShape {
  Dim positions, heads, head_dim, layers;
};

class Checker {
 public:
  Checker(const Program& program, const Bindings* bindings) : p_(program), bindings_(bindings) {}
  CheckResult run();

  // ---- for the op rules
  [[noreturn]] void error(SourceLoc loc, const std::string& message,
                          const std::vector<std::string>& notes = {}) const {
    fail_at(p_.source, loc, message, notes);
  }
  const Binding& lookup(const Operand& op) const;  // a value operand: scoping rules enforced
  ValueType value(const Operand& op) const { return lookup(op).type; }
  ValueType activation(const Operand& op) const;  // a value that must be an activation
  Dim dim(const Operand& op, bool allow_zero = false) const;  // an integer number
  std::optional<double> scalar(const Operand& op) const;     // a real number; its value when known
  std::string layer_key(const Operand& op) const;             // `of layer L`: the loop var or an index
  const Binding& positions(const Operand& op) const;          // an input of positions
  std::string note(const Operand& op) const;                  // "h: activation [rows, n_embd]"
  const CacheShape& caches(SourceLoc loc) const;

  ValueType check_op(const Op& op);  // check_ops.cpp

  const Program& p_;
  const Bindings* bindings_;
  std::map<std::string, Binding> env_;
  std::string loop_var_;  // empty outside the loop
  Dim rows_;
  std::optional<CacheShape> caches_;
  std::set<std::string> appended_keys_, appended_values_;  // layer keys appended in this iteration

 private:
  void declare_parameters();
  void declare_inputs();
  void declare_constants();
  void walk(const std::vector<Statement>& body, int depth, CheckResult& result);
  void bind(const Statement& s, const ValueType& type, int depth);
};

}  // namespace lathe::lang
