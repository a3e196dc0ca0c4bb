// The interpreter's state, shared by the walk (interpreter.cpp) and the ops (interp_ops.cpp).
// Internal to interp/.
#pragma once

#include "interp/interpreter.h"

#include <map>
#include <string>
#include <vector>

namespace lathe {

// A constant bound to a checkpoint tensor: one per declared name and layer.
struct BoundConstant {
  std::string tensor_name;  // the checkpoint's name, `{L}` replaced and the fallback taken
  lang::ConstantKind kind{};
  MatrixRef matrix;         // matrices and stacks, in their own format
  Tensor vector;            // vectors, dequantized to f32 ([n])
};

struct Interpreter::Impl {
  lang::Program program;
  lang::Bindings bindings;
  const GgufFile* file = nullptr;
  // By (declared name, layer); layer -1 for constants without `{L}`.
  std::map<std::pair<std::string, int64_t>, BoundConstant> constants;
  std::map<std::string, std::string> placeholders;  // declared name -> its loop variable, or ""
  bool has_caches = false;
  LaneRounding rounding;
  int64_t cache_layers = 0, cache_positions = 0, cache_heads = 0, cache_head_dim = 0;

  std::string where(const lang::SourceLoc& loc) const;  // "models/qwen3.lathe:12"
  std::string line_text(const lang::SourceLoc& loc) const;
};

// One step's values, made fresh by each step.
struct Frame {
  const Interpreter::Impl& impl;
  KvState& state;
  std::map<std::string, InterpValue> env;       // inputs and `Let` values
  std::map<std::string, int64_t> loop;          // the loop variable -> the layer being run
  std::vector<int32_t> positions, sequences;    // the rows'
  std::map<int32_t, std::vector<int64_t>> rows_of_sequence;  // sequence -> its rows, in order

  // A number operand: literals, parameters and the loop variable multiplied.
  double number(const lang::Operand& operand) const;
  int64_t count(const lang::Operand& operand) const;
  // A value operand: an activation (or a vector constant), integers, or a matrix constant.
  const Tensor& tensor(const lang::Operand& operand) const;
  const std::vector<int32_t>& ids(const lang::Operand& operand) const;
  const MatrixRef& matrix(const lang::Operand& operand) const;
  const BoundConstant* constant(const lang::Operand& operand) const;  // null when not a constant
};

// Computes one op; effects (the cache appends) return an empty value.
InterpValue run_op(Frame& frame, const lang::Statement& statement);

}  // namespace lathe
