// The abstract syntax of a Lathe program (grammar: docs/language.md).
//
// A Program is a header (model name, optional step line), four declaration lists (parameters, inputs,
// constants, caches), a body of statements and a list of outputs. The body is a flat list of
// Statements; one kind, `loop`, holds a nested body (the loop over layers; loops do not nest).
//
// Every computation is an Op: a kind from the op table (op_table.h), the operands in the order
// its sentence names them, and modifiers (each a kind from the modifier table with its own operands),
// kept in the op table's canonical order. Later stages (checker, interpreter, lifting, the GPU lane)
// switch on Op::kind and look modifiers up with Op::find.
//
//   Let q be q rotated at positions in neox order, with base rope_base.
//   -> Statement{let, target "q", Op{rope, [value q, value positions],
//                                     [Modifier{neox_order}, Modifier{base, [number rope_base]}]}}
//
// Operands are either values (a name: an activation, an input, a constant) or numbers (a product of
// factors, each a literal or a name: `n_head*head_dim`, `4096`, `eps`, the loop variable `L`).
//
// Source locations ride along for diagnostics only: they compare equal always, so two programs are
// equal when they mean the same, and parse(print(p)) == p holds although the layout differs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lathe::lang {

struct SourceLoc {
  int line = 0;  // 1-based; 0 for nodes made by code, not parsed
  int col = 0;   // 1-based
  friend bool operator==(const SourceLoc&, const SourceLoc&) { return true; }
};

// One factor of a number: a literal or a name (a parameter or the loop variable).
struct Factor {
  bool is_name = false;
  std::string name;
  double number = 0;
  bool operator==(const Factor&) const = default;
};

struct Operand {
  enum class Kind { value, number };
  Kind kind = Kind::value;
  std::string name;             // value: the name referred to
  bool each_head = false;       // value: written `each head of NAME` (norms over heads)
  std::vector<Factor> factors;  // number: the product of these
  SourceLoc loc;
  bool operator==(const Operand&) const = default;
};

enum class OpKind {
  gather, product, add, subtract, multiply, divide, scale, soft_cap,
  silu, gelu, sigmoid, relu, swiglu, softmax, argmax, transpose,
  rms_norm, layer_norm, rope, attention, mixture,
  split_heads, join_heads, head_slice,
  append_keys, append_values,  // statements with no result: the cache appends
};

enum class ModKind {
  weighted_by, shifted_by, epsilon,                                           // norms
  neox_order, normal_order, base, first_dims, llama3_scaling, linear_scaling, freq_factors,  // rope
  up_to, scaled_by, window, capped_at, sinks,                                  // attention
  routed_by, experts, renormalized,                                            // mixture
};

struct Modifier {
  ModKind kind{};
  std::vector<Operand> args;  // in the order the phrase names them
  SourceLoc loc;
  bool operator==(const Modifier&) const = default;
};

struct Op {
  OpKind kind{};
  std::vector<Operand> args;
  std::vector<Modifier> mods;  // canonical order (the op table's), no kind twice
  SourceLoc loc;
  const Modifier* find(ModKind kind) const;
  bool operator==(const Op&) const = default;
};

struct Statement {
  enum class Kind { let, effect, loop };
  Kind kind = Kind::let;
  int id = 0;          // 0, 1, 2... in reading order over the whole program (loop bodies included)
  std::string target;  // let: the name bound
  Op op;               // let, effect
  std::string loop_var;         // loop: `For each layer L below n_layer.`
  Operand loop_count;           // loop: a number
  std::vector<Statement> body;  // loop
  SourceLoc loc;
  bool operator==(const Statement&) const = default;
};

struct Name {
  std::string name;
  SourceLoc loc;
  bool operator==(const Name&) const = default;
};

enum class InputKind { token_ids, positions, sequences };
struct InputDecl {
  std::string name;
  InputKind kind{};
  SourceLoc loc;
  bool operator==(const InputDecl&) const = default;
};

// A checkpoint tensor by its own name; `{L}` in the name is the loop variable L.
enum class ConstantKind { vector, matrix, stack };
struct ConstantDecl {
  std::string name;
  ConstantKind kind{};
  std::vector<Operand> shape;  // numbers, outermost first: vector [n], matrix [rows, cols], stack [n, rows, cols]
  std::string fallback;        // `, or token_embd.weight when absent`; empty when none
  SourceLoc loc;
  // `, or none when absent`: the checkpoint may lack it; then every modifier naming it is dropped (the
  // op runs as if the phrase were not written). Only modifiers may name an optional constant.
  bool optional = false;
  bool operator==(const ConstantDecl&) const = default;
};

// One key cache and one value cache per layer; each holds, per sequence, `positions` slots of
// [heads, head_dim].
struct CacheDecl {
  Operand positions, heads, head_dim, layers;
  SourceLoc loc;
  bool operator==(const CacheDecl&) const = default;
};

// The rows a step runs: supplied by a cut (decode: 1 of 1; prefill:R: R of 1; batch:B: B of B).
struct Step {
  int64_t rows = 1;
  int64_t sequences = 1;
  SourceLoc loc;
  bool operator==(const Step&) const = default;
};

// Where the program came from; compares equal always (not part of the program's meaning).
struct SourceText {
  std::string file_name;
  std::vector<std::string> lines;
  friend bool operator==(const SourceText&, const SourceText&) { return true; }
};

struct Program {
  SourceText source;
  std::string model;
  SourceLoc model_loc;
  std::optional<Step> step;
  std::vector<Name> parameters;
  std::vector<InputDecl> inputs;
  std::vector<ConstantDecl> constants;
  std::optional<CacheDecl> caches;
  std::vector<Statement> body;
  std::vector<Name> outputs;
  SourceLoc outputs_loc;
  bool operator==(const Program&) const = default;
};

}  // namespace lathe::lang
