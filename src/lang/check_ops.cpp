// The checker's rule for every op: the kinds and shapes of its operands and modifiers, and the type
// of its result. Messages name the operand at fault and, for shapes, list the shapes involved.
#include "lang/checker_state.h"
#include "lang/op_table.h"

#include <fmt/format.h>

#include <cmath>

namespace lathe::lang {

namespace {

std::string factor_text(const Factor& f) { return f.is_name ? f.name : fmt::format("{}", f.number); }

}  // namespace

const Binding& Checker::lookup(const Operand& op) const {
  auto it = env_.find(op.name);
  if (it == env_.end()) {
    if (op.name == loop_var_ && !loop_var_.empty())
      error(op.loc, fmt::format("`{}` is the loop variable, a layer index; a value is needed here", op.name));
    if (op.name.find('.') != std::string::npos)
      error(op.loc, fmt::format("unknown constant `{}`; declare it with `Constant {} is ...`", op.name, op.name));
    if (find_parameter(op.name))
      error(op.loc, fmt::format("`{}` is a parameter, and not declared; a value is needed here anyway", op.name));
    error(op.loc, fmt::format("unknown name `{}`", op.name));
  }
  const Binding& b = it->second;
  if (b.origin == Binding::Origin::parameter)
    error(op.loc, fmt::format("`{}` is a parameter (a number); a value is needed here", op.name));
  if (!b.placeholder.empty()) {
    if (loop_var_.empty())
      error(op.loc, fmt::format("`{}` is used outside its loop over layer {}", op.name, b.placeholder));
    if (b.placeholder != loop_var_)
      error(op.loc, fmt::format("`{}` belongs to a loop over layer {}, but this loop is over layer {}", op.name,
                                b.placeholder, loop_var_));
  }
  return b;
}

ValueType Checker::activation(const Operand& op) const {
  ValueType t = value(op);
  if (t.kind != ValueKind::activation)
    error(op.loc, fmt::format("`{}` is {}; an activation is needed here", op.name, t.str()));
  return t;
}

Dim Checker::dim(const Operand& op, bool allow_zero) const {
  Dim out = Dim::number(1);
  for (const Factor& f : op.factors) {
    if (!f.is_name) {
      if (f.number != std::floor(f.number) || f.number < (allow_zero ? 0 : 1) || f.number > 1e15)
        error(op.loc, fmt::format("{} is not a count: a whole number of at least {} is needed here",
                                  factor_text(f), allow_zero ? 0 : 1));
      out = out * Dim::number(static_cast<int64_t>(f.number));
      continue;
    }
    const ParamInfo* info = find_parameter(f.name);
    auto it = env_.find(f.name);
    if (!info) {
      if (f.name == loop_var_ && !loop_var_.empty())
        error(op.loc, fmt::format("the loop variable `{}` is a layer index, not a count", f.name));
      error(op.loc, fmt::format("unknown parameter `{}`", f.name));
    }
    if (it == env_.end() || it->second.origin != Binding::Origin::parameter)
      error(op.loc, fmt::format("parameter `{}` is not declared; add it to `Use parameters`", f.name));
    if (!info->integer) error(op.loc, fmt::format("`{}` is a real number; a count is needed here", f.name));
    out = out * (bindings_ ? Dim::number(static_cast<int64_t>(bindings_->at(f.name))) : Dim::symbol(f.name));
  }
  return out;
}

std::optional<double> Checker::scalar(const Operand& op) const {
  double value = 1;
  bool known = true;
  for (const Factor& f : op.factors) {
    if (!f.is_name) {
      value *= f.number;
      continue;
    }
    if (!find_parameter(f.name)) error(op.loc, fmt::format("unknown parameter `{}`", f.name));
    auto it = env_.find(f.name);
    if (it == env_.end() || it->second.origin != Binding::Origin::parameter)
      error(op.loc, fmt::format("parameter `{}` is not declared; add it to `Use parameters`", f.name));
    if (bindings_) value *= bindings_->at(f.name);
    else known = false;
  }
  return known ? std::optional<double>(value) : std::nullopt;
}

std::string Checker::layer_key(const Operand& op) const {
  if (op.factors.size() == 1 && op.factors[0].is_name) {
    const std::string& name = op.factors[0].name;
    if (loop_var_.empty()) error(op.loc, fmt::format("`{}` names a layer only inside a loop over layers", name));
    if (name != loop_var_) error(op.loc, fmt::format("`{}` is not the loop variable; the loop is over layer {}", name, loop_var_));
    return name;
  }
  Dim d = dim(op, true);
  if (!d.is_number()) error(op.loc, "a layer is the loop variable or a layer number");
  const CacheShape& c = caches(op.loc);
  if (c.layers.is_number() && d.coeff >= c.layers.coeff)
    error(op.loc, fmt::format("layer {} is past the last of {} layers", d.coeff, c.layers.coeff));
  return d.str();
}

const Binding& Checker::positions(const Operand& op) const {
  const Binding& b = lookup(op);
  if (b.origin != Binding::Origin::input || b.input != InputKind::positions)
    error(op.loc, fmt::format("`{}` is {}; the positions of the rows (an input) are needed here", op.name,
                              b.type.str()));
  return b;
}

std::string Checker::note(const Operand& op) const {
  auto it = env_.find(op.name);
  return fmt::format("{}: {}", op.name, it == env_.end() ? "?" : it->second.type.str());
}

const CacheShape& Checker::caches(SourceLoc loc) const {
  if (!caches_) error(loc, "the program carries no caches; declare them with `Carry key and value caches of ...`");
  return *caches_;
}

ValueType Checker::check_op(const Op& op) {
  const std::vector<Operand>& a = op.args;
  const OpInfo& info = op_info(op.kind);
  for (const Operand& arg : a)
    if (arg.each_head && op.kind != OpKind::rms_norm && op.kind != OpKind::layer_norm)
      error(arg.loc, fmt::format("`each head of` applies to norms, not to the {}", info.name));
  // An optional constant may be missing: a modifier naming it can be dropped, an operand cannot.
  for (const Operand& arg : a)
    if (arg.kind == Operand::Kind::value && lookup(arg).optional)
      error(arg.loc, fmt::format("`{}` may be absent (`or none when absent`); only a modifier can name it",
                                 arg.name));
  auto mismatch = [&](const Operand& at, const std::string& message, std::vector<const Operand*> operands) {
    std::vector<std::string> notes;
    for (const Operand* o : operands) notes.push_back(note(*o));
    error(at.loc, message, notes);
  };
  // A vector operand of width n: a vector constant or a 1-wide activation.
  auto vector_of = [&](const Operand& v, const Dim& n, const Operand& x, std::string_view role) {
    ValueType t = value(v);
    if (t.kind != ValueKind::vector || t.shape[0] != n)
      mismatch(v, fmt::format("{} `{}` must be a vector of {} (the last dim of `{}`)", role, v.name, n.str(), x.name),
               {&x, &v});
  };
  switch (op.kind) {
    case OpKind::gather: {
      ValueType table = value(a[0]);
      if (table.kind != ValueKind::matrix)
        error(a[0].loc, fmt::format("`{}` is {}; rows are gathered from a checkpoint matrix", a[0].name, table.str()));
      ValueType ids = value(a[1]);
      if (ids.kind != ValueKind::token_ids)
        error(a[1].loc, fmt::format("`{}` is {}; rows are gathered at token ids", a[1].name, ids.str()));
      return ValueType{ValueKind::activation, {ids.shape[0], table.shape[1]}};
    }
    case OpKind::product: {
      ValueType x = activation(a[0]);
      ValueType w = value(a[1]);
      if (w.kind == ValueKind::activation)
        error(a[1].loc, fmt::format("`{}` is an activation; `times` takes a checkpoint matrix (for an elementwise "
                                    "product write `multiplied by`)", a[1].name));
      if (w.kind != ValueKind::matrix)
        error(a[1].loc, fmt::format("`{}` is {}; `times` takes a checkpoint matrix", a[1].name, w.str()));
      if (x.shape.back() != w.shape[1])
        mismatch(a[1], fmt::format("shape mismatch: `{}` has rows of {} values but `{}` takes rows of {}", a[0].name,
                                   x.shape.back().str(), a[1].name, w.shape[1].str()),
                 {&a[0], &a[1]});
      x.shape.back() = w.shape[0];
      return x;
    }
    case OpKind::add: case OpKind::subtract: case OpKind::multiply: case OpKind::divide: {
      ValueType x = activation(a[0]);
      ValueType y = value(a[1]);
      bool same = y.kind == ValueKind::activation && y.shape == x.shape;
      bool bias = (y.kind == ValueKind::vector || (y.kind == ValueKind::activation && y.shape.size() == 1)) &&
                  y.shape[0] == x.shape.back();
      if (!same && !bias)
        mismatch(a[1], fmt::format("shape mismatch: `{}` must have the shape of `{}` or be a vector of its last dim",
                                   a[1].name, a[0].name),
                 {&a[0], &a[1]});
      return x;
    }
    case OpKind::scale: case OpKind::soft_cap: {
      ValueType x = activation(a[0]);
      std::optional<double> s = scalar(a[1]);
      if (op.kind == OpKind::soft_cap && s && *s <= 0) error(a[1].loc, "a soft cap is a number above 0");
      return x;
    }
    case OpKind::silu: case OpKind::gelu: case OpKind::sigmoid: case OpKind::relu: case OpKind::softmax:
      return activation(a[0]);
    case OpKind::swiglu: {
      ValueType g = activation(a[0]);
      ValueType u = activation(a[1]);
      if (g.shape != u.shape)
        mismatch(a[1], fmt::format("shape mismatch: the SwiGLU's gate `{}` and up `{}` differ", a[0].name, a[1].name),
                 {&a[0], &a[1]});
      return g;
    }
    case OpKind::argmax: {
      ValueType x = activation(a[0]);
      if (x.shape.size() != 2) mismatch(a[0], "the argmax takes rows of values: [rows, n]", {&a[0]});
      return ValueType{ValueKind::token_ids, {x.shape[0]}};
    }
    case OpKind::transpose: {
      ValueType x = activation(a[0]);
      if (x.shape.size() != 2) mismatch(a[0], "the transpose takes a 2-D activation", {&a[0]});
      return ValueType{ValueKind::activation, {x.shape[1], x.shape[0]}};
    }
    case OpKind::rms_norm: case OpKind::layer_norm: {
      ValueType x = activation(a[0]);
      if (a[0].each_head && x.shape.size() != 3)
        mismatch(a[0], fmt::format("`each head of {}`: `{}` has no heads; split it into heads first", a[0].name,
                                   a[0].name), {&a[0]});
      if (!a[0].each_head && x.shape.size() == 3)
        mismatch(a[0], fmt::format("`{}` has heads; write `each head of {}` to normalize each head", a[0].name,
                                   a[0].name), {&a[0]});
      if (!a[0].each_head && x.shape.size() != 2) mismatch(a[0], "a norm takes rows of values: [rows, n]", {&a[0]});
      if (const Modifier* w = op.find(ModKind::weighted_by)) vector_of(w->args[0], x.shape.back(), a[0], "the weight");
      if (const Modifier* b = op.find(ModKind::shifted_by)) vector_of(b->args[0], x.shape.back(), a[0], "the bias");
      const Modifier* eps = op.find(ModKind::epsilon);
      if (!eps) error(op.loc, fmt::format("the {} needs `with epsilon E`", info.name));
      std::optional<double> e = scalar(eps->args[0]);
      if (e && *e <= 0) error(eps->args[0].loc, "an epsilon is a number above 0");
      return x;
    }
    case OpKind::rope: {
      ValueType x = activation(a[0]);
      if (x.shape.size() != 3)
        mismatch(a[0], fmt::format("rope rotates heads: split `{}` into heads first", a[0].name), {&a[0]});
      positions(a[1]);
      if (op.find(ModKind::neox_order) && op.find(ModKind::normal_order))
        error(op.find(ModKind::normal_order)->loc, "a rope is in neox order or in normal order, not both");
      if (op.find(ModKind::llama3_scaling) && op.find(ModKind::linear_scaling))
        error(op.find(ModKind::linear_scaling)->loc, "a rope has one frequency scaling");
      const Modifier* base = op.find(ModKind::base);
      if (!base) error(op.loc, "the rope needs `with base B`");
      if (std::optional<double> b = scalar(base->args[0]); b && *b <= 1)
        error(base->args[0].loc, "a rope base is a number above 1");
      if (const Modifier* r = op.find(ModKind::first_dims)) {
        Dim n = dim(r->args[0]);
        const Dim& d = x.shape[2];
        if (n.is_number() && n.coeff % 2 != 0) error(r->args[0].loc, "rope rotates pairs: the rotated dims are even");
        if (n.is_number() && d.is_number() && n.coeff > d.coeff)
          mismatch(r->args[0], fmt::format("rope rotates {} dims of heads of {}", n.str(), d.str()), {&a[0]});
      }
      if (const Modifier* s = op.find(ModKind::llama3_scaling)) {
        for (size_t i = 0; i < 3; ++i) scalar(s->args[i]);
        dim(s->args[3]);
      }
      if (const Modifier* s = op.find(ModKind::linear_scaling)) scalar(s->args[0]);
      // One divisor per rotated pair: theta_j = pos * freq_j / factor_j.
      if (const Modifier* f = op.find(ModKind::freq_factors)) {
        ValueType t = value(f->args[0]);
        const Modifier* r = op.find(ModKind::first_dims);
        Dim rotated = r ? dim(r->args[0]) : x.shape[2];
        if (t.kind != ValueKind::vector)
          mismatch(f->args[0], fmt::format("the frequency factors `{}` must be a vector of one factor per rotated "
                                           "pair, not {}", f->args[0].name, t.str()), {&f->args[0]});
        Dim twice = Dim::number(2) * t.shape[0];
        if (twice.is_number() && rotated.is_number() && twice != rotated)
          mismatch(f->args[0], fmt::format("the frequency factors `{}` must be a vector of {} (one per rotated pair "
                                           "of {} dims)", f->args[0].name, rotated.coeff / 2, rotated.str()),
                   {&a[0], &f->args[0]});
      }
      return x;
    }
    case OpKind::attention: {
      ValueType q = activation(a[0]);
      std::string layer = layer_key(a[1]);
      const CacheShape& c = caches(a[1].loc);
      if (q.shape.size() != 3)
        mismatch(a[0], fmt::format("attention takes heads: split `{}` into heads first", a[0].name), {&a[0]});
      std::vector<std::string> notes = {note(a[0]), fmt::format("caches: [{}, {}] per position", c.heads.str(),
                                                                c.head_dim.str())};
      if (q.shape[2] != c.head_dim)
        error(a[0].loc, fmt::format("shape mismatch: heads of `{}` are {} wide, the caches' are {}", a[0].name,
                                    q.shape[2].str(), c.head_dim.str()), notes);
      // Symbolically, n_head over n_head_kv is left to the numbers.
      bool numbers = q.shape[1].is_number() && c.heads.is_number();
      if (numbers && !q.shape[1].divide(c.heads))
        error(a[0].loc, fmt::format("grouped heads: the {} heads of `{}` are not a multiple of the caches' {}",
                                    q.shape[1].str(), a[0].name, c.heads.str()), notes);
      if (!appended_keys_.count(layer) || !appended_values_.count(layer))
        error(op.loc, fmt::format("the attention reads the caches of layer {} before this step's {} appended to them",
                                  layer, appended_keys_.count(layer) ? "values are" : "keys are"));
      if (const Modifier* m = op.find(ModKind::up_to)) positions(m->args[0]);
      if (const Modifier* m = op.find(ModKind::scaled_by)) scalar(m->args[0]);
      if (const Modifier* m = op.find(ModKind::window)) dim(m->args[0]);
      if (const Modifier* m = op.find(ModKind::capped_at))
        if (std::optional<double> cap = scalar(m->args[0]); cap && *cap <= 0)
          error(m->args[0].loc, "a soft cap is a number above 0");
      if (const Modifier* m = op.find(ModKind::sinks)) {
        ValueType s = value(m->args[0]);
        if (s.kind != ValueKind::vector || s.shape[0] != q.shape[1])
          mismatch(m->args[0], fmt::format("the sinks `{}` must be a vector of one logit per head of `{}`",
                                           m->args[0].name, a[0].name), {&a[0], &m->args[0]});
      }
      return q;
    }
    case OpKind::mixture: {
      Dim k = dim(a[0]);
      Dim n_expert = dim(a[1]);
      ValueType x = activation(a[2]);
      if (k.is_number() && n_expert.is_number() && k.coeff > n_expert.coeff)
        error(a[0].loc, fmt::format("the mixture uses {} of only {} experts", k.coeff, n_expert.coeff));
      if (x.shape.size() != 2) mismatch(a[2], "a mixture takes rows of values: [rows, n]", {&a[2]});
      const Modifier* router = op.find(ModKind::routed_by);
      const Modifier* experts = op.find(ModKind::experts);
      if (!router) error(op.loc, "the mixture needs `routed by R`");
      if (!experts) error(op.loc, "the mixture needs `with gates G, ups U and downs D`");
      const Dim& n = x.shape[1];
      ValueType r = value(router->args[0]);
      if (r.kind != ValueKind::matrix || r.shape != Shape{n_expert, n})
        mismatch(router->args[0], fmt::format("the router `{}` must be a matrix of {} by {}", router->args[0].name,
                                              n_expert.str(), n.str()), {&a[2], &router->args[0]});
      ValueType gate = value(experts->args[0]);
      if (gate.kind != ValueKind::stack || gate.shape[0] != n_expert || gate.shape[2] != n)
        mismatch(experts->args[0], fmt::format("the gates `{}` must be a stack of {} matrices of F by {}",
                                               experts->args[0].name, n_expert.str(), n.str()),
                 {&a[2], &experts->args[0]});
      Dim f = gate.shape[1];
      const Operand& up = experts->args[1];
      const Operand& down = experts->args[2];
      if (value(up) != gate)
        mismatch(up, fmt::format("the ups `{}` must have the shape of the gates", up.name), {&experts->args[0], &up});
      ValueType d = value(down);
      if (d.kind != ValueKind::stack || d.shape != Shape{n_expert, n, f})
        mismatch(down, fmt::format("the downs `{}` must be a stack of {} matrices of {} by {}", down.name,
                                   n_expert.str(), n.str(), f.str()), {&experts->args[0], &down});
      return x;
    }
    case OpKind::split_heads: {
      ValueType x = activation(a[0]);
      Dim h = dim(a[1]);
      if (x.shape.size() != 2) mismatch(a[0], fmt::format("`{}` is split already", a[0].name), {&a[0]});
      std::optional<Dim> d = x.shape[1].divide(h);
      if (!d)
        mismatch(a[1], fmt::format("cannot split rows of {} values into {} heads", x.shape[1].str(), h.str()), {&a[0]});
      return ValueType{ValueKind::activation, {x.shape[0], h, *d}};
    }
    case OpKind::join_heads: {
      ValueType x = activation(a[0]);
      if (x.shape.size() != 3) mismatch(a[0], fmt::format("`{}` has no heads to join", a[0].name), {&a[0]});
      return ValueType{ValueKind::activation, {x.shape[0], x.shape[1] * x.shape[2]}};
    }
    case OpKind::head_slice: {
      Dim count = dim(a[0]);
      ValueType x = activation(a[1]);
      Dim first = dim(a[2], true);
      if (x.shape.size() != 3) mismatch(a[1], fmt::format("`{}` has no heads", a[1].name), {&a[1]});
      const Dim& h = x.shape[1];
      if (count.is_number() && first.is_number() && h.is_number() && first.coeff + count.coeff > h.coeff)
        mismatch(a[2], fmt::format("heads {} to {} are past the {} heads of `{}`", first.coeff,
                                   first.coeff + count.coeff - 1, h.coeff, a[1].name), {&a[1]});
      return ValueType{ValueKind::activation, {x.shape[0], count, x.shape[2]}};
    }
    case OpKind::append_keys: case OpKind::append_values: {
      ValueType x = activation(a[0]);
      std::string layer = layer_key(a[1]);
      const CacheShape& c = caches(a[1].loc);
      if (x.shape.size() != 3 || x.shape[1] != c.heads || x.shape[2] != c.head_dim)
        error(a[0].loc, fmt::format("shape mismatch: the caches hold [{}, {}] per position", c.heads.str(),
                                    c.head_dim.str()), {note(a[0])});
      (op.kind == OpKind::append_keys ? appended_keys_ : appended_values_).insert(layer);
      return x;
    }
  }
  internal_fail("op kind {} has no rule in the checker", static_cast<int>(op.kind));
}

}  // namespace lathe::lang
