// The tensor graph: a cut, bound program lifted to ops over shaped tensors, the layer loop unrolled.
// Every tensor has a role (input, constant, carried state, temporary, output); every op keeps the
// statement it came from (line and text) so later stages can refuse it by name. Fusion passes,
// the planner and the GPU lane read this; the interpreter runs the program itself.
//
//   Graph g = lift(cut_program, bindings, lookup);   // throws LiftError naming line and statement
//   fmt::print("{}", print_graph(g));               // one line a tensor and an op
#pragma once

#include "base/error.h"
#include "gguf/ggml_type.h"
#include "lang/ast.h"
#include "lang/checker.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace lathe::graph {

class LiftError : public UserError {
 public:
  using UserError::UserError;
};

enum class Role { input, constant, state, temporary, output };
std::string_view role_name(Role role);

struct Tensor {
  int id = 0;
  std::string name;           // SSA: "q#12" for a let (name#statement id, layer unrolled: "q#12.L3")
  Role role = Role::temporary;
  lang::ValueKind kind = lang::ValueKind::activation;
  std::vector<int64_t> shape;  // outermost first; activations: rows first; matrices: [rows, cols]
  std::optional<GgmlType> format;  // constants: the checkpoint's block format; else f32
  std::string checkpoint_name;     // constants: the checkpoint tensor read
  int producer = -1;               // the op that writes it; -1 for inputs, constants and state
  std::vector<int> consumers;      // ops that read it, in order
  int layer = -1;                  // the layer it belongs to (-1: none)
};

// One operand of an op or modifier: a tensor, or a number (already evaluated: parameters bound, the
// loop variable substituted).
struct Arg {
  int tensor = -1;
  double number = 0;
  bool is_tensor() const { return tensor >= 0; }
};

struct Attr {
  lang::ModKind kind{};
  std::vector<Arg> args;
};

struct Node {
  int id = 0;
  lang::OpKind kind{};
  std::vector<Arg> args;    // in the statement's order
  std::vector<Attr> attrs;  // modifiers, in canonical order
  bool each_head = false;   // norms written `each head of X`
  std::vector<int> state;   // the caches it reads or writes: attention [keys, values]; appends [cache]
  int output = -1;          // the tensor it defines (-1 for the appends, which write `state`)
  int layer = -1;
  int statement = 0;        // lang::Statement::id
  int line = 0;
  std::string text;         // the statement's source line, trimmed

  const Attr* find(lang::ModKind kind) const;
  std::vector<int> tensor_inputs() const;  // args' and attrs' tensors, then state
};

struct Graph {
  std::string program_identity;
  int64_t rows = 1, sequences = 1;
  std::vector<Tensor> tensors;
  std::vector<Node> nodes;  // in execution order
  std::vector<int> outputs; // the returned tensors, in order
  std::vector<int> inputs;  // token ids, positions, sequence numbers (those declared)

  const Tensor& tensor(int id) const { return tensors.at(static_cast<size_t>(id)); }
};

// A checkpoint tensor as the lifter needs it: its format and ggml dims (dims[0] fastest).
struct CheckpointTensor {
  GgmlType type;
  std::vector<int64_t> dims;
};
using ConstantLookup = std::function<std::optional<CheckpointTensor>(const std::string& name)>;

// Lifts a cut program (it must have a step line) with every parameter bound. Checks it first
// (lang::check with the bindings), then binds constants to the checkpoint: a missing tensor (and no
// fallback), or one whose dims differ from the declaration, is refused naming the statement.
Graph lift(const lang::Program& cut, const lang::Bindings& bindings, const ConstantLookup& lookup);

std::string print_graph(const Graph& graph);

}  // namespace lathe::graph
