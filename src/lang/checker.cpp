// The checker's walk: declarations, scopes, the loop, outputs. The rules of each op are in
// check_ops.cpp.
#include "lang/checker_state.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>

namespace lathe::lang {

namespace {

const std::vector<ParamInfo>& params() {
  static const std::vector<ParamInfo> table = {
      {"n_vocab", true, "tokens in the vocabulary"},
      {"n_embd", true, "width of the residual stream"},
      {"n_layer", true, "layers"},
      {"n_head", true, "query heads"},
      {"n_head_kv", true, "key and value heads"},
      {"head_dim", true, "width of a head"},
      {"n_ff", true, "width of the dense feed-forward"},
      {"n_expert", true, "experts of a mixture"},
      {"n_expert_used", true, "experts each row uses"},
      {"n_ff_expert", true, "width of an expert's feed-forward"},
      {"n_rot", true, "rotated dims of a head"},
      {"n_rot_pairs", true, "rotated pairs of a head (n_rot / 2): one rope frequency each"},
      {"n_ctx", true, "positions a cache holds"},
      {"eps", false, "epsilon of the norms"},
      {"rope_base", false, "base of the rope frequencies"},
      {"rope_scale_factor", false, "frequency scaling: factor"},
      {"rope_low_freq_factor", false, "Llama 3 frequency scaling: low frequency factor"},
      {"rope_high_freq_factor", false, "Llama 3 frequency scaling: high frequency factor"},
      {"rope_original_context", true, "Llama 3 frequency scaling: original context length"},
  };
  return table;
}

constexpr std::string_view kInputNames[] = {"token ids", "positions", "sequence numbers"};

}  // namespace

std::span<const ParamInfo> parameter_table() { return params(); }

const ParamInfo* find_parameter(std::string_view name) {
  for (const ParamInfo& p : params())
    if (p.name == name) return &p;
  return nullptr;
}

std::string_view value_kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::activation: return "activation";
    case ValueKind::token_ids: return "token ids";
    case ValueKind::positions: return "positions";
    case ValueKind::sequences: return "sequence numbers";
    case ValueKind::vector: return "vector";
    case ValueKind::matrix: return "matrix";
    case ValueKind::stack: return "stack of matrices";
  }
  return "?";
}

std::string ValueType::str() const { return fmt::format("{} {}", value_kind_name(kind), shape_str(shape)); }

void Checker::declare_parameters() {
  for (const Name& n : p_.parameters) {
    const ParamInfo* info = find_parameter(n.name);
    if (!info) {
      std::string known;
      for (const ParamInfo& p : params()) known += (known.empty() ? "" : ", ") + std::string(p.name);
      error(n.loc, fmt::format("unknown parameter `{}`; the parameters are {}", n.name, known));
    }
    if (env_.count(n.name)) error(n.loc, fmt::format("parameter `{}` is declared twice", n.name));
    if (bindings_) {
      auto it = bindings_->find(n.name);
      if (it == bindings_->end()) error(n.loc, fmt::format("parameter `{}` has no value", n.name));
      if (info->integer && (it->second < 1 || it->second != std::floor(it->second)))
        error(n.loc, fmt::format("parameter `{}` is {}; it counts, so it is a whole number of at least 1",
                                 n.name, it->second));
    }
    Binding b;
    b.origin = Binding::Origin::parameter;
    env_[n.name] = b;
  }
}

void Checker::declare_inputs() {
  std::set<InputKind> kinds;
  for (const InputDecl& in : p_.inputs) {
    if (env_.count(in.name)) error(in.loc, fmt::format("`{}` is declared twice", in.name));
    if (!kinds.insert(in.kind).second)
      error(in.loc, fmt::format("the {} of the rows are declared twice", kInputNames[static_cast<int>(in.kind)]));
    Binding b;
    b.origin = Binding::Origin::input;
    b.input = in.kind;
    b.type = ValueType{in.kind == InputKind::token_ids   ? ValueKind::token_ids
                       : in.kind == InputKind::positions ? ValueKind::positions
                                                         : ValueKind::sequences,
                       {rows_}};
    env_[in.name] = b;
  }
}

void Checker::declare_constants() {
  for (const ConstantDecl& c : p_.constants) {
    if (env_.count(c.name)) error(c.loc, fmt::format("`{}` is declared twice", c.name));
    Binding b;
    b.origin = Binding::Origin::constant;
    b.optional = c.optional;
    b.type.kind = c.kind == ConstantKind::vector ? ValueKind::vector
                  : c.kind == ConstantKind::matrix ? ValueKind::matrix
                                                   : ValueKind::stack;
    for (const Operand& d : c.shape) b.type.shape.push_back(dim(d));
    // `{X}` placeholders: at most one name, the loop variable the constant belongs to.
    for (size_t i = c.name.find('{'); i != std::string::npos; i = c.name.find('{', i + 1)) {
      size_t j = c.name.find('}', i);
      std::string var = j == std::string::npos ? "" : c.name.substr(i + 1, j - i - 1);
      if (var.empty() || var.find_first_of("{.") != std::string::npos)
        error(c.loc, fmt::format("`{}`: a placeholder is a loop variable in braces, like blk.{{L}}.attn_q.weight",
                                 c.name));
      if (!b.placeholder.empty() && var != b.placeholder)
        error(c.loc, fmt::format("`{}` names two loop variables, {} and {}", c.name, b.placeholder, var));
      b.placeholder = var;
    }
    if (c.name.find('}') != std::string::npos && b.placeholder.empty())
      error(c.loc, fmt::format("`{}` has a `}}` with no `{{`", c.name));
    env_[c.name] = b;
  }
  for (const ConstantDecl& c : p_.constants) {
    if (c.fallback.empty()) continue;
    auto it = env_.find(c.fallback);
    if (it == env_.end() || it->second.origin != Binding::Origin::constant)
      error(c.loc, fmt::format("the fallback `{}` of `{}` is not a declared constant", c.fallback, c.name));
    if (it->second.optional)
      error(c.loc, fmt::format("the fallback `{}` of `{}` may be absent itself", c.fallback, c.name));
    const Binding& own = env_.at(c.name);
    if (it->second.type != own.type || it->second.placeholder != own.placeholder)
      error(c.loc, fmt::format("the fallback `{}` is {}, but `{}` is {}", c.fallback, it->second.type.str(),
                               c.name, own.type.str()));
  }
}

CheckResult Checker::run() {
  rows_ = p_.step ? Dim::number(p_.step->rows) : Dim::symbol("rows");
  declare_parameters();
  declare_inputs();
  declare_constants();
  if (p_.caches) {
    const CacheDecl& c = *p_.caches;
    caches_ = CacheShape{dim(c.positions), dim(c.heads), dim(c.head_dim), dim(c.layers)};
    bool has_positions = false, has_sequences = false;
    for (const InputDecl& in : p_.inputs) {
      has_positions |= in.kind == InputKind::positions;
      has_sequences |= in.kind == InputKind::sequences;
    }
    if (!has_positions || !has_sequences)
      error(c.loc, fmt::format("a cache slot is a (sequence, position): declare `Input NAME are the {} of the rows.`",
                               has_positions ? "sequence numbers" : "positions"));
  }
  CheckResult result;
  int n_statements = 0;
  std::function<void(const std::vector<Statement>&)> count = [&](const std::vector<Statement>& body) {
    for (const Statement& s : body) {
      ++n_statements;
      count(s.body);
    }
  };
  count(p_.body);
  result.types.resize(n_statements);
  walk(p_.body, 0, result);
  std::set<std::string> seen;
  for (const Name& out : p_.outputs) {
    auto it = env_.find(out.name);
    if (it == env_.end() || it->second.origin != Binding::Origin::let)
      error(out.loc, fmt::format("`{}` is not a value the program computes", out.name));
    if (!seen.insert(out.name).second) error(out.loc, fmt::format("`{}` is returned twice", out.name));
    result.outputs.emplace_back(out.name, it->second.type);
  }
  return result;
}

void Checker::bind(const Statement& s, const ValueType& type, int depth) {
  auto it = env_.find(s.target);
  if (it == env_.end()) {
    Binding b;
    b.type = type;
    b.depth = depth;
    env_[s.target] = b;
    return;
  }
  Binding& b = it->second;
  if (b.origin != Binding::Origin::let) {
    std::string_view what = b.origin == Binding::Origin::parameter ? "a parameter"
                            : b.origin == Binding::Origin::input   ? "an input"
                                                                   : "a constant";
    error(s.loc, fmt::format("`{}` is {}; `Let` cannot bind it", s.target, what));
  }
  if (b.depth < depth && b.type != type)
    error(s.loc,
          fmt::format("`{}` is carried from layer to layer, so it keeps its type; it was {} before the loop", s.target,
                      b.type.str()),
          {fmt::format("here it would become {}", type.str())});
  b.type = type;
}

void Checker::walk(const std::vector<Statement>& body, int depth, CheckResult& result) {
  for (const Statement& s : body) {
    switch (s.kind) {
      case Statement::Kind::let: {
        if (s.target == loop_var_) error(s.loc, fmt::format("`{}` is the loop variable; `Let` cannot bind it", s.target));
        ValueType type = check_op(s.op);
        result.types[s.id] = type;
        bind(s, type, depth);
        break;
      }
      case Statement::Kind::effect:
        check_op(s.op);
        break;
      case Statement::Kind::loop: {
        if (env_.count(s.loop_var))
          error(s.loc, fmt::format("the loop variable `{}` is already a name of the program", s.loop_var));
        Dim n = dim(s.loop_count);
        if (caches_ && n != caches_->layers)
          error(s.loop_count.loc, fmt::format("the loop runs over {} layers, but the caches are for {} layers",
                                              n.str(), caches_->layers.str()));
        loop_var_ = s.loop_var;
        appended_keys_.clear();
        appended_values_.clear();
        walk(s.body, depth + 1, result);
        loop_var_.clear();
        appended_keys_.clear();
        appended_values_.clear();
        for (auto it = env_.begin(); it != env_.end();)  // values of one iteration end with it
          it = it->second.origin == Binding::Origin::let && it->second.depth > depth ? env_.erase(it) : std::next(it);
        break;
      }
    }
  }
}

CheckResult check(const Program& program, const Bindings* bindings) {
  return Checker(program, bindings).run();
}

}  // namespace lathe::lang
