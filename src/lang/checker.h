// The shape and type checker. With no bindings, shapes are symbolic (dims are products of parameter
// names, the rows of a step are `rows` unless the program has a step line), so `lathe program FILE`
// checks a program with no checkpoint; with every declared parameter bound to a number, every dim is
// an integer and divisibility, head ranges and rotary widths are checked as numbers too.
//
// Rules beyond shapes: a name is bound by `Let` and may be bound again (a value first bound inside
// the loop lives only in that iteration; a value carried across layers keeps its type); parameters,
// inputs, constants and the loop variable cannot be rebound; a constant whose name has `{L}` is used
// only inside the loop over L; the caches of a layer are appended to before attention reads them.
#pragma once

#include "lang/ast.h"
#include "lang/dim.h"

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lathe::lang {

// The parameters a program may declare, bound from the model's spec by name.
struct ParamInfo {
  std::string_view name;
  bool integer;  // a count or a width (usable in shapes); else a real number (eps, rope_base)
  std::string_view meaning;
};
std::span<const ParamInfo> parameter_table();
const ParamInfo* find_parameter(std::string_view name);

enum class ValueKind { activation, token_ids, positions, sequences, vector, matrix, stack };
std::string_view value_kind_name(ValueKind kind);

struct ValueType {
  ValueKind kind = ValueKind::activation;
  Shape shape;  // activations and row inputs: the rows first
  bool operator==(const ValueType&) const = default;
  std::string str() const;  // "activation [rows, n_embd]"
};

using Bindings = std::map<std::string, double>;

struct CheckResult {
  std::vector<std::optional<ValueType>> types;  // by Statement::id: what a let binds; none for others
  std::vector<std::pair<std::string, ValueType>> outputs;  // in the order of `Return`
};

// Throws LangError naming the statement, the operand and the shapes involved.
CheckResult check(const Program& program, const Bindings* bindings = nullptr);

}  // namespace lathe::lang
