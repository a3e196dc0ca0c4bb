// The interpreter's walk: binding constants to the checkpoint, checking a step's rows, running the
// statements in order (the loop once per layer), and the carried caches. The ops are interp_ops.cpp.
#include "interp/interp_state.h"

#include "gguf/block_format.h"
#include "lang/program.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <optional>

namespace lathe {
namespace {

double eval_number(const lang::Operand& operand, const lang::Bindings& bindings,
                   const std::map<std::string, int64_t>& loop) {
  double value = 1;
  for (const lang::Factor& f : operand.factors) {
    if (!f.is_name) {
      value *= f.number;
    } else if (auto l = loop.find(f.name); l != loop.end()) {
      value *= static_cast<double>(l->second);
    } else if (auto b = bindings.find(f.name); b != bindings.end()) {
      value *= b->second;
    } else {
      internal_fail("`{}` has no value although the program checked", f.name);
    }
  }
  return value;
}

// The placeholder of a constant's name: `blk.{L}.attn_q.weight` -> "L" (the checker allows one).
std::string placeholder_of(const std::string& name) {
  size_t open = name.find('{');
  if (open == std::string::npos) return "";
  return name.substr(open + 1, name.find('}', open) - open - 1);
}

std::string substitute(const std::string& name, const std::string& var, int64_t layer) {
  if (var.empty()) return name;
  std::string out = name, token = "{" + var + "}";
  for (size_t i = out.find(token); i != std::string::npos; i = out.find(token, i))
    out.replace(i, token.size(), std::to_string(layer));
  return out;
}

// The checkpoint dims (ggml order, row length first) of a declared shape, outermost first.
std::vector<int64_t> ggml_dims(const std::vector<int64_t>& declared) {
  return std::vector<int64_t>(declared.rbegin(), declared.rend());
}

std::string_view kind_name(lang::ConstantKind kind) {
  switch (kind) {
    case lang::ConstantKind::vector: return "a vector";
    case lang::ConstantKind::matrix: return "a matrix";
    case lang::ConstantKind::stack: return "a stack of matrices";
  }
  return "?";
}

}  // namespace

// ---- KvState

KvState::KvState(int64_t n_layer, int64_t n_ctx, int64_t heads, int64_t head_dim)
    : n_layer_(n_layer), n_ctx_(n_ctx), heads_(heads), head_dim_(head_dim) {}

int64_t KvState::filled(int32_t number) const {
  auto it = sequences_.find(number);
  return it == sequences_.end() ? 0 : it->second.filled;
}

KvState::Sequence& KvState::sequence(int32_t number) {
  auto it = sequences_.find(number);
  if (it != sequences_.end()) return it->second;
  Sequence s;
  for (int64_t l = 0; l < n_layer_; ++l) {
    s.keys.emplace_back(std::vector<int64_t>{n_ctx_, heads_, head_dim_});
    s.values.emplace_back(std::vector<int64_t>{n_ctx_, heads_, head_dim_});
  }
  return sequences_.emplace(number, std::move(s)).first->second;
}

Tensor& KvState::keys(int32_t number, int64_t layer) {
  LATHE_CHECK(layer >= 0 && layer < n_layer_);
  return sequence(number).keys[layer];
}

Tensor& KvState::values(int32_t number, int64_t layer) {
  LATHE_CHECK(layer >= 0 && layer < n_layer_);
  return sequence(number).values[layer];
}

void KvState::set_filled(int32_t number, int64_t positions) { sequence(number).filled = positions; }

const InterpValue& StepOutput::at(const std::string& name) const {
  for (const auto& [n, v] : values)
    if (n == name) return v;
  fail("the program returns no value `{}`", name);
}

// ---- binding

std::string Interpreter::Impl::where(const lang::SourceLoc& loc) const {
  return fmt::format("{}:{}", program.source.file_name, loc.line);
}

std::string Interpreter::Impl::line_text(const lang::SourceLoc& loc) const {
  const auto& lines = program.source.lines;
  if (loc.line < 1 || loc.line > static_cast<int>(lines.size())) return "";
  std::string text = lines[loc.line - 1];
  size_t first = text.find_first_not_of(" \t");
  return first == std::string::npos ? "" : text.substr(first);
}

namespace {

// Nullopt for an optional constant the checkpoint lacks (its modifiers are then skipped).
std::optional<BoundConstant> bind_constant(const Interpreter::Impl& impl, const lang::ConstantDecl& decl,
                                           int64_t layer) {
  const GgufFile& file = *impl.file;
  const std::string var = impl.placeholders.at(decl.name);
  BoundConstant out;
  out.kind = decl.kind;
  out.tensor_name = substitute(decl.name, var, layer);
  const GgufTensor* t = file.find_tensor(out.tensor_name);
  if (!t && decl.optional) return std::nullopt;
  if (!t && !decl.fallback.empty()) {
    std::string fallback = substitute(decl.fallback, var, layer);
    t = file.find_tensor(fallback);
    if (!t)
      fail("{}: the checkpoint has neither tensor '{}' nor its fallback '{}' (constant declared at {})",
           file.path(), out.tensor_name, fallback, impl.where(decl.loc));
    out.tensor_name = fallback;
  }
  if (!t)
    fail("{}: the checkpoint has no tensor '{}' (constant declared at {})", file.path(), out.tensor_name,
         impl.where(decl.loc));
  std::vector<int64_t> declared;
  for (const lang::Operand& d : decl.shape) declared.push_back(static_cast<int64_t>(eval_number(d, impl.bindings, {})));
  if (t->dims != ggml_dims(declared))
    fail("{}: tensor '{}' has shape {} (ggml order, row length first), but the program declares {} of {} "
         "({}), which is [{}]",
         file.path(), out.tensor_name, t->shape_string(), kind_name(decl.kind), fmt::join(declared, " by "),
         impl.where(decl.loc), fmt::join(ggml_dims(declared), ", "));
  row_bytes(t->type, t->dims[0]);  // fails when a row is not a whole number of blocks
  MatrixRef m{t->type, t->data, t->dims[0], 1, 1};
  if (decl.kind != lang::ConstantKind::vector) m.n_rows = t->dims[1];
  if (decl.kind == lang::ConstantKind::stack) m.n_stack = t->dims[2];
  if (decl.kind == lang::ConstantKind::vector) {
    out.vector = Tensor({t->dims[0]});
    m.row(0, out.vector.data.data());
  } else {
    out.matrix = m;
  }
  return out;
}

// The layers a constant with a placeholder is bound for: those of the loop over its variable.
int64_t layers_of(const Interpreter::Impl& impl, const lang::ConstantDecl& decl, const std::string& var) {
  for (const lang::Statement& s : impl.program.body)
    if (s.kind == lang::Statement::Kind::loop && s.loop_var == var)
      return static_cast<int64_t>(eval_number(s.loop_count, impl.bindings, {}));
  fail("{}: constant `{}` names the loop variable {}, but no loop runs over {}", impl.where(decl.loc), decl.name,
       var, var);
}

}  // namespace

Interpreter::Interpreter(lang::Program program, lang::Bindings bindings, const GgufFile& file)
    : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  impl.program = std::move(program);
  impl.bindings = std::move(bindings);
  impl.file = &file;
  lang::check(impl.program, &impl.bindings);
  if (const auto& c = impl.program.caches) {
    impl.has_caches = true;
    impl.cache_positions = static_cast<int64_t>(eval_number(c->positions, impl.bindings, {}));
    impl.cache_heads = static_cast<int64_t>(eval_number(c->heads, impl.bindings, {}));
    impl.cache_head_dim = static_cast<int64_t>(eval_number(c->head_dim, impl.bindings, {}));
    impl.cache_layers = static_cast<int64_t>(eval_number(c->layers, impl.bindings, {}));
  }
  for (const lang::ConstantDecl& decl : impl.program.constants) impl.placeholders[decl.name] = placeholder_of(decl.name);
  for (const lang::ConstantDecl& decl : impl.program.constants) {
    const std::string& var = impl.placeholders[decl.name];
    if (var.empty()) {
      if (auto c = bind_constant(impl, decl, -1)) impl.constants[{decl.name, -1}] = std::move(*c);
      continue;
    }
    for (int64_t l = 0, n = layers_of(impl, decl, var); l < n; ++l)
      if (auto c = bind_constant(impl, decl, l)) impl.constants[{decl.name, l}] = std::move(*c);
  }
}

Interpreter::~Interpreter() = default;
Interpreter::Interpreter(Interpreter&&) noexcept = default;
Interpreter& Interpreter::operator=(Interpreter&&) noexcept = default;

const lang::Program& Interpreter::program() const { return impl_->program; }
const lang::Bindings& Interpreter::bindings() const { return impl_->bindings; }

void Interpreter::set_rounding(const LaneRounding& rounding) { impl_->rounding = rounding; }

KvState Interpreter::new_state() const {
  const Impl& i = *impl_;
  if (!i.has_caches) return KvState();
  return KvState(i.cache_layers, i.cache_positions, i.cache_heads, i.cache_head_dim);
}

// ---- the frame's look-ups

double Frame::number(const lang::Operand& operand) const { return eval_number(operand, impl.bindings, loop); }

int64_t Frame::count(const lang::Operand& operand) const {
  double n = number(operand);
  LATHE_CHECK(n == std::floor(n));
  return static_cast<int64_t>(n);
}

const BoundConstant* Frame::constant(const lang::Operand& operand) const {
  auto p = impl.placeholders.find(operand.name);
  if (p == impl.placeholders.end()) return nullptr;
  int64_t layer = p->second.empty() ? -1 : loop.at(p->second);
  return &impl.constants.at({operand.name, layer});
}

const Tensor& Frame::tensor(const lang::Operand& operand) const {
  if (const BoundConstant* c = constant(operand)) {
    LATHE_CHECK(c->kind == lang::ConstantKind::vector);
    return c->vector;
  }
  const InterpValue& v = env.at(operand.name);
  LATHE_CHECK(!v.is_ids);
  return v.tensor;
}

const std::vector<int32_t>& Frame::ids(const lang::Operand& operand) const {
  const InterpValue& v = env.at(operand.name);
  LATHE_CHECK(v.is_ids);
  return v.ids;
}

const MatrixRef& Frame::matrix(const lang::Operand& operand) const {
  const BoundConstant* c = constant(operand);
  LATHE_CHECK(c && c->kind != lang::ConstantKind::vector);
  return c->matrix;
}

// ---- a step

namespace {

void walk(Frame& frame, const std::vector<lang::Statement>& body) {
  for (const lang::Statement& s : body) {
    if (s.kind == lang::Statement::Kind::loop) {
      int64_t n = frame.count(s.loop_count);
      for (int64_t l = 0; l < n; ++l) {
        frame.loop[s.loop_var] = l;
        walk(frame, s.body);
      }
      frame.loop.erase(s.loop_var);
      continue;
    }
    InterpValue v = run_op(frame, s);
    if (s.kind == lang::Statement::Kind::let) frame.env[s.target] = std::move(v);
  }
}

// Checks the rows against the cut and the caches and groups them by sequence.
void check_rows(const Interpreter::Impl& impl, const StepInput& in, const KvState& state, Frame& frame) {
  const size_t rows = in.tokens.size();
  if (rows == 0) fail("a step runs at least one row");
  if (in.positions.size() != rows || in.sequences.size() != rows)
    fail("a step's rows each have a token, a position and a sequence: got {} tokens, {} positions, {} sequences",
         rows, in.positions.size(), in.sequences.size());
  for (size_t r = 0; r < rows; ++r) {
    if (in.sequences[r] < 0) fail("row {}: sequence number {} is negative", r, in.sequences[r]);
    if (in.positions[r] < 0) fail("row {}: position {} is negative", r, in.positions[r]);
    if (impl.has_caches && in.positions[r] >= impl.cache_positions)
      fail("row {}: position {} is past the caches' {} positions (n_ctx)", r, in.positions[r], impl.cache_positions);
    frame.rows_of_sequence[in.sequences[r]].push_back(static_cast<int64_t>(r));
  }
  if (const auto& step = impl.program.step) {
    if (static_cast<int64_t>(rows) != step->rows ||
        static_cast<int64_t>(frame.rows_of_sequence.size()) != step->sequences)
      fail("this step runs {} rows of {} sequences; got {} rows of {}", step->rows, step->sequences, rows,
           frame.rows_of_sequence.size());
  }
  if (!impl.has_caches) return;
  if (state.n_ctx() != impl.cache_positions)
    fail("the carried state holds {} positions, the program's caches {}", state.n_ctx(), impl.cache_positions);
  // A sequence's rows are consecutive positions that continue what its caches hold (or rewind it).
  for (const auto& [seq, seq_rows] : frame.rows_of_sequence) {
    int32_t first = in.positions[seq_rows[0]];
    for (size_t i = 1; i < seq_rows.size(); ++i)
      if (in.positions[seq_rows[i]] != first + static_cast<int32_t>(i))
        fail("sequence {}: the rows of a step are at consecutive positions; row {} is at {} after {}", seq,
             seq_rows[i], in.positions[seq_rows[i]], in.positions[seq_rows[i - 1]]);
    if (first > state.filled(seq))
      fail("sequence {}: position {} leaves a gap; its caches hold positions 0 to {}", seq, first,
           state.filled(seq) - 1);
  }
}

}  // namespace

StepOutput Interpreter::step(const StepInput& input, KvState& state) const {
  const Impl& impl = *impl_;
  Frame frame{impl, state, {}, {}, input.positions, input.sequences, {}};
  check_rows(impl, input, state, frame);
  for (const lang::InputDecl& in : impl.program.inputs) {
    InterpValue v;
    v.is_ids = true;
    v.ids = in.kind == lang::InputKind::token_ids ? input.tokens
            : in.kind == lang::InputKind::positions ? input.positions
                                                    : input.sequences;
    frame.env[in.name] = std::move(v);
  }
  walk(frame, impl.program.body);
  if (impl.has_caches)
    for (const auto& [seq, seq_rows] : frame.rows_of_sequence)
      state.set_filled(seq, input.positions[seq_rows.back()] + 1);
  StepOutput out;
  for (const lang::Name& name : impl.program.outputs) out.values.emplace_back(name.name, frame.env.at(name.name));
  return out;
}

}  // namespace lathe
