// The reference interpreter: runs a checked program on the CPU, statement by statement, with the
// functions of cpu_ops.h (f32 values, f64 sums). It is the definition of what a program means, so it
// is plain on purpose: no fusion, no reordering, every value materialized.
//
//   Interpreter decode(make_cut(p, parse_cut("decode")), bindings, file);
//   Interpreter chunk(make_cut(p, parse_cut("prefill:16")), bindings, file);
//   KvState state = decode.new_state();       // one state serves every cut of a program
//   chunk.step({prompt, {0..15}, {0 x16}}, state);
//   StepOutput out = decode.step({{next}, {16}, {0}}, state);
//   out.at("logits").tensor                    // [1, n_vocab]
//
// Constants are bound to the checkpoint's tensors by name when the interpreter is made (`{L}` replaced
// by each layer's number; `or X when absent` read when the tensor is missing): matrices are read in their
// own block format through MatrixRef, vectors are dequantized to f32 once.
#pragma once

#include "gguf/gguf_file.h"
#include "interp/cpu_ops.h"
#include "lang/ast.h"
#include "lang/checker.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace lathe {

// The rows of one step: each row a token, its position in its sequence and the sequence's number.
struct StepInput {
  std::vector<int32_t> tokens;
  std::vector<int32_t> positions;
  std::vector<int32_t> sequences;
};

// A value of the program: an activation (f32 tensor) or integers (token ids, positions, sequences).
struct InterpValue {
  bool is_ids = false;
  Tensor tensor;              // activations
  std::vector<int32_t> ids;   // token ids: one per row
};

struct StepOutput {
  std::vector<std::pair<std::string, InterpValue>> values;  // the program's `Return`, in its order
  const InterpValue& at(const std::string& name) const;     // UserError when not returned
};

// The carried state: every layer's key and value cache, per sequence, each [n_ctx, heads, head_dim].
// A sequence's caches are made (zeroed) on its first step. `filled` is how many positions of it the
// steps so far have written: a step continues a sequence at most there (a lower position rewinds it).
class KvState {
 public:
  KvState() = default;
  KvState(int64_t n_layer, int64_t n_ctx, int64_t heads, int64_t head_dim);

  int64_t n_ctx() const { return n_ctx_; }
  bool has(int32_t sequence) const { return sequences_.count(sequence) != 0; }
  int64_t filled(int32_t sequence) const;  // 0 for a sequence not seen
  void drop(int32_t sequence) { sequences_.erase(sequence); }

  // The caches of a sequence (made on first use); layer in [0, n_layer).
  Tensor& keys(int32_t sequence, int64_t layer);
  Tensor& values(int32_t sequence, int64_t layer);
  void set_filled(int32_t sequence, int64_t positions);

 private:
  struct Sequence {
    std::vector<Tensor> keys, values;  // by layer
    int64_t filled = 0;
  };
  Sequence& sequence(int32_t number);
  int64_t n_layer_ = 0, n_ctx_ = 0, heads_ = 0, head_dim_ = 0;
  std::map<int32_t, Sequence> sequences_;
};

// Roundings the GPU lane makes where the interpreter computes in f32, replayed on request so that a
// difference between the two can be told apart from rounding (`lathe check --lane-rounding`,
// docs/numerics.md): the KV cache's keys and values stored as f16 (every contract); a chunk's products
// (more than 8 rows) of a format the f16 tensor-core GEMM reads with x and each dequantized weight
// rounded to f16, and a chunk's attention (more than one row of one sequence) with the flash kernel's
// f16 q and weights (AttentionOptions::f16_flash), and a chunk's mixture whose expert products the lane
// runs on wgmma with x, h and each weight rounded to f16 (MixtureOptions::f16_products) (the int8
// contracts' prefill). Not replayed: the int8 forms of decode rows and of the mixture's int8 engine.
struct LaneRounding {
  bool f16_cache = false;
  // The formats whose chunk products the lane runs on the f16 GEMM (the kernels' rule:
  // kernels::gemm_f16_supports); null: no product rounds.
  bool (*f16_chunk_products)(GgmlType) = nullptr;
  bool f16_flash_attention = false;
  // The expert stacks whose chunk mixture (more than 8 rows) the lane runs on f16 tensor cores (the
  // kernels' rule: kernels::moe_prefill_rounds_f16); null: no mixture rounds.
  bool (*f16_mixture_products)(const MatrixRef& gate, const MatrixRef& up, const MatrixRef& down) = nullptr;
};

class Interpreter {
 public:
  // Checks `program` with `bindings` (a value for every parameter it declares) and binds its constants
  // to `file`'s tensors, which must outlive the interpreter. A program with a step line (a cut) takes
  // exactly its rows and sequences each step; one without takes any number of rows. A constant missing
  // from the checkpoint, or of another shape than declared, is a UserError naming the tensor.
  Interpreter(lang::Program program, lang::Bindings bindings, const GgufFile& file);
  ~Interpreter();
  Interpreter(Interpreter&&) noexcept;
  Interpreter& operator=(Interpreter&&) noexcept;

  const lang::Program& program() const;
  const lang::Bindings& bindings() const;

  // Empty caches of the shape the program's `Carry` declares (an empty state when it carries none).
  KvState new_state() const;

  // The lane's roundings replayed from the next step on (none by default).
  void set_rounding(const LaneRounding& rounding);

  // Runs one step: every statement once, the caches of the rows' sequences read and written in place.
  // Malformed rows (counts, positions past the cache or out of order, unknown tokens) are UserErrors.
  StepOutput step(const StepInput& input, KvState& state) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace lathe
