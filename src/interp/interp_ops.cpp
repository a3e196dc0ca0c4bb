// Each op of the language computed by its cpu_ops function. The checker has already held every
// operand to its kind and shape, so this file only reads operands and modifiers and calls; the caches
// are the one place where rows part ways: each row reads and writes the caches of its own sequence.
#include "interp/interp_state.h"

#include "lang/op_table.h"

#include <algorithm>

namespace lathe {
namespace {

using lang::ModKind;
using lang::OpKind;

InterpValue activation(Tensor t) {
  InterpValue v;
  v.tensor = std::move(t);
  return v;
}

InterpValue token_ids(std::vector<int32_t> ids) {
  InterpValue v;
  v.is_ids = true;
  v.ids = std::move(ids);
  return v;
}

// The rows `rows` of x (the first dimension), in that order.
Tensor take_rows(const Tensor& x, const std::vector<int64_t>& rows) {
  std::vector<int64_t> shape = x.shape;
  shape[0] = static_cast<int64_t>(rows.size());
  Tensor out(shape);
  const int64_t width = x.shape[0] == 0 ? 0 : x.numel() / x.shape[0];
  for (size_t i = 0; i < rows.size(); ++i) std::copy_n(x.row(rows[i]), width, out.row(static_cast<int64_t>(i)));
  return out;
}

std::vector<int32_t> take(const std::vector<int32_t>& values, const std::vector<int64_t>& rows) {
  std::vector<int32_t> out;
  for (int64_t r : rows) out.push_back(values[r]);
  return out;
}

// Appends x [rows, heads, d] to the key or value caches of `layer`: each row at its position in the
// caches of its sequence.
void append(Frame& f, const Tensor& x, int64_t layer, bool keys) {
  for (const auto& [seq, rows] : f.rows_of_sequence) {
    Tensor& cache = keys ? f.state.keys(seq, layer) : f.state.values(seq, layer);
    cache_append(cache, take_rows(x, rows), take(f.positions, rows), f.impl.rounding.f16_cache);
  }
}

// Whether the lane runs x's rows as a prefill chunk on tensor cores: more than 8 rows (the decode
// GEMVs take up to 8).
bool lane_chunk(const Tensor& x) {
  const int64_t rows = x.shape.empty() || x.shape.back() == 0 ? 0 : x.numel() / x.shape.back();
  return rows > 8;
}

// A product as the interpreter computes it, or with the f16 GEMM's roundings where the lane's are
// replayed (LaneRounding) and the GPU would run it there: a chunk of a format that GEMM reads.
Tensor product_as_lane(const Frame& f, const Tensor& x, const MatrixRef& w) {
  const auto gemm_f16 = f.impl.rounding.f16_chunk_products;
  return gemm_f16 && lane_chunk(x) && gemm_f16(w.type) ? product_f16(x, w) : product(x, w);
}

Tensor attend(Frame& f, const lang::Op& op) {
  const Tensor& q = f.tensor(op.args[0]);
  const int64_t layer = f.count(op.args[1]);
  const lang::Modifier* up_to = op.find(ModKind::up_to);
  const std::vector<int32_t>& last = up_to ? f.ids(up_to->args[0]) : f.positions;
  AttentionOptions options;
  if (const lang::Modifier* m = op.find(ModKind::scaled_by)) options.scale = f.number(m->args[0]);
  if (const lang::Modifier* m = op.find(ModKind::window)) options.window = f.count(m->args[0]);
  if (const lang::Modifier* m = op.find(ModKind::capped_at)) options.cap = f.number(m->args[0]);
  if (const lang::Modifier* m = op.find(ModKind::sinks)) options.sinks = f.tensor(m->args[0]).data;
  // The lane runs a chunk of one sequence on the flash kernel (its roundings replayed on request).
  options.f16_flash = f.impl.rounding.f16_flash_attention && q.dim(0) > 1 && f.rows_of_sequence.size() == 1;
  Tensor out;
  for (const auto& [seq, rows] : f.rows_of_sequence) {
    Tensor part = attention(take_rows(q, rows), f.state.keys(seq, layer), f.state.values(seq, layer),
                            take(last, rows), options);
    if (out.shape.empty()) {
      out = Tensor({q.dim(0), part.dim(1), part.dim(2)});
    }
    for (size_t i = 0; i < rows.size(); ++i)
      std::copy_n(part.row(static_cast<int64_t>(i)), part.dim(1) * part.dim(2), out.row(rows[i]));
  }
  return out;
}

// The values of a vector constant declared `or none when absent`; null when the checkpoint lacks it.
const Tensor* optional_vector(const Frame& f, const lang::Operand& operand) {
  const std::string& var = f.impl.placeholders.at(operand.name);
  auto it = f.impl.constants.find({operand.name, var.empty() ? -1 : f.loop.at(var)});
  return it == f.impl.constants.end() ? nullptr : &it->second.vector;
}

Tensor rotate(Frame& f, const lang::Op& op) {
  const Tensor& x = f.tensor(op.args[0]);
  const std::vector<int32_t>& positions = f.ids(op.args[1]);
  const lang::Modifier* dims = op.find(ModKind::first_dims);
  const int64_t n_rot = dims ? f.count(dims->args[0]) : x.dim(2);
  const RopeOrder order = op.find(ModKind::neox_order) ? RopeOrder::neox : RopeOrder::normal;
  RopeFreqScaling scaling;
  if (const lang::Modifier* m = op.find(ModKind::llama3_scaling)) {
    scaling.kind = "llama3";
    scaling.factor = f.number(m->args[0]);
    scaling.low_freq_factor = f.number(m->args[1]);
    scaling.high_freq_factor = f.number(m->args[2]);
    scaling.original_context = f.count(m->args[3]);
  }
  if (const lang::Modifier* m = op.find(ModKind::linear_scaling)) {
    scaling.kind = "linear";
    scaling.factor = f.number(m->args[0]);
  }
  if (const lang::Modifier* m = op.find(ModKind::freq_factors))
    if (const Tensor* v = optional_vector(f, m->args[0])) scaling.freq_factors = v->data;
  return rope(x, positions, n_rot, f.number(op.find(ModKind::base)->args[0]), order, scaling);
}

Tensor mix(Frame& f, const lang::Op& op) {
  const lang::Modifier* experts = op.find(ModKind::experts);
  MixtureOptions options;
  options.k = f.count(op.args[0]);
  options.renormalize = op.find(ModKind::renormalized) != nullptr;
  const Tensor& x = f.tensor(op.args[2]);
  const MatrixRef gate = f.matrix(experts->args[0]), up = f.matrix(experts->args[1]), down = f.matrix(experts->args[2]);
  // The lane's chunk on wgmma (its roundings replayed on request).
  const auto rounds = f.impl.rounding.f16_mixture_products;
  options.f16_products = rounds && lane_chunk(x) && rounds(gate, up, down);
  return mixture(x, f.matrix(op.find(ModKind::routed_by)->args[0]), gate, up, down, options);
}

// A norm's weight or bias: the vector a modifier names, or none.
Tensor optional_vector(Frame& f, const lang::Op& op, ModKind kind) {
  const lang::Modifier* m = op.find(kind);
  return m ? f.tensor(m->args[0]) : Tensor();
}

}  // namespace

InterpValue run_op(Frame& f, const lang::Statement& s) {
  const lang::Op& op = s.op;
  const std::vector<lang::Operand>& a = op.args;
  switch (op.kind) {
    case OpKind::gather: return activation(gather_rows(f.matrix(a[0]), f.ids(a[1])));
    case OpKind::product: return activation(product_as_lane(f, f.tensor(a[0]), f.matrix(a[1])));
    case OpKind::add: return activation(add(f.tensor(a[0]), f.tensor(a[1])));
    case OpKind::subtract: return activation(subtract(f.tensor(a[0]), f.tensor(a[1])));
    case OpKind::multiply: return activation(multiply(f.tensor(a[0]), f.tensor(a[1])));
    case OpKind::divide: return activation(divide(f.tensor(a[0]), f.tensor(a[1])));
    case OpKind::scale: return activation(scale(f.tensor(a[0]), f.number(a[1])));
    case OpKind::soft_cap: return activation(soft_cap(f.tensor(a[0]), f.number(a[1])));
    case OpKind::silu: return activation(silu(f.tensor(a[0])));
    case OpKind::gelu: return activation(gelu(f.tensor(a[0])));
    case OpKind::sigmoid: return activation(sigmoid(f.tensor(a[0])));
    case OpKind::relu: return activation(relu(f.tensor(a[0])));
    case OpKind::swiglu: return activation(swiglu(f.tensor(a[0]), f.tensor(a[1])));
    case OpKind::softmax: return activation(softmax(f.tensor(a[0])));
    case OpKind::argmax: return token_ids(argmax(f.tensor(a[0])));
    case OpKind::transpose: return activation(transpose(f.tensor(a[0])));
    case OpKind::rms_norm:
      return activation(rms_norm(f.tensor(a[0]), optional_vector(f, op, ModKind::weighted_by),
                                 f.number(op.find(ModKind::epsilon)->args[0])));
    case OpKind::layer_norm:
      return activation(layer_norm(f.tensor(a[0]), optional_vector(f, op, ModKind::weighted_by),
                                   optional_vector(f, op, ModKind::shifted_by),
                                   f.number(op.find(ModKind::epsilon)->args[0])));
    case OpKind::rope: return activation(rotate(f, op));
    case OpKind::attention: return activation(attend(f, op));
    case OpKind::mixture: return activation(mix(f, op));
    case OpKind::split_heads: return activation(split_heads(f.tensor(a[0]), f.count(a[1])));
    case OpKind::join_heads: return activation(join_heads(f.tensor(a[0])));
    case OpKind::head_slice: return activation(head_slice(f.tensor(a[1]), f.count(a[2]), f.count(a[0])));
    case OpKind::append_keys: append(f, f.tensor(a[0]), f.count(a[1]), true); return {};
    case OpKind::append_values: append(f, f.tensor(a[0]), f.count(a[1]), false); return {};
  }
  // A new op kind the interpreter has not learned: refused with its statement, never skipped.
  fail("{}: the interpreter cannot compute the {} of `{}`", f.impl.where(s.loc), lang::op_info(op.kind).name,
       f.impl.line_text(s.loc));
}

}  // namespace lathe
