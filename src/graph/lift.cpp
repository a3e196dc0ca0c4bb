// Lifting: walk the checked program, unroll the loop over layers, give every value a tensor and
// every statement a node. A statement that does not lift (a constant missing from the checkpoint,
// or of another shape) is refused with its line, its text and the reason.
#include "graph/graph.h"

#include "lang/program.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

namespace lathe::graph {
namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

class Lifter {
 public:
  Lifter(const lang::Program& p, const lang::Bindings& b, const ConstantLookup& lookup)
      : p_(p), bindings_(b), lookup_(lookup) {}

  Graph run() {
    if (!p_.step) internal_fail("lift needs a cut program (with a step line)");
    types_ = lang::check(p_, &bindings_);
    g_.program_identity = lang::identity(p_);
    g_.rows = p_.step->rows;
    g_.sequences = p_.step->sequences;
    for (const lang::InputDecl& in : p_.inputs) {
      const lang::ValueKind kind = in.kind == lang::InputKind::token_ids ? lang::ValueKind::token_ids
                                   : in.kind == lang::InputKind::positions ? lang::ValueKind::positions
                                                                           : lang::ValueKind::sequences;
      const int id = add_tensor(in.name, Role::input, kind, {g_.rows}, -1);
      env_[in.name] = id;
      g_.inputs.push_back(id);
    }
    walk(p_.body);
    for (const lang::Name& out : p_.outputs) {
      const int id = env_.at(out.name);
      Tensor& t = g_.tensors[static_cast<size_t>(id)];
      if (t.role == Role::temporary) t.role = Role::output;
      g_.outputs.push_back(id);
    }
    return std::move(g_);
  }

 private:
  const lang::Program& p_;
  const lang::Bindings& bindings_;
  const ConstantLookup& lookup_;
  lang::CheckResult types_;
  Graph g_;
  std::map<std::string, int> env_;              // values in scope: name -> tensor
  std::map<std::string, int> constants_;        // checkpoint name -> tensor
  std::map<std::pair<int64_t, bool>, int> caches_;  // (layer, values?) -> state tensor
  std::string loop_var_;
  int64_t layer_ = -1;

  std::string statement_text(const lang::SourceLoc& loc) const {
    const auto& lines = p_.source.lines;
    if (loc.line <= 0 || static_cast<size_t>(loc.line) > lines.size()) return "";
    std::string text;
    for (size_t k = static_cast<size_t>(loc.line) - 1; k < lines.size(); ++k) {
      text += (text.empty() ? "" : " ") + trim(lines[k]);
      if (!text.empty() && text.back() == '.') break;
    }
    return text;
  }

  [[noreturn]] void refuse(const lang::Statement& s, const std::string& why) const {
    throw LiftError(fmt::format("{}:{}: statement does not lift{}: {}\n    {}", p_.source.file_name,
                                s.loc.line, layer_ >= 0 ? fmt::format(" (layer {})", layer_) : "",
                                why, statement_text(s.loc)));
  }

  int add_tensor(std::string name, Role role, lang::ValueKind kind, std::vector<int64_t> shape,
                 int layer) {
    Tensor t;
    t.id = static_cast<int>(g_.tensors.size());
    t.name = std::move(name);
    t.role = role;
    t.kind = kind;
    t.shape = std::move(shape);
    t.layer = layer;
    g_.tensors.push_back(std::move(t));
    return g_.tensors.back().id;
  }

  double number(const lang::Operand& op, const lang::Statement& s) const {
    double v = 1;
    for (const lang::Factor& f : op.factors) {
      if (!f.is_name) {
        v *= f.number;
      } else if (f.name == loop_var_ && layer_ >= 0) {
        v *= static_cast<double>(layer_);
      } else if (auto it = bindings_.find(f.name); it != bindings_.end()) {
        v *= it->second;
      } else {
        refuse(s, fmt::format("the parameter '{}' has no value", f.name));
      }
    }
    return v;
  }

  std::vector<int64_t> numeric_shape(const lang::Shape& shape) const {
    std::vector<int64_t> out;
    for (const lang::Dim& d : shape) {
      if (!d.is_number()) internal_fail("dimension {} is still symbolic after binding", d.str());
      out.push_back(d.coeff);
    }
    return out;
  }

  std::string substitute(const std::string& name) const {
    if (loop_var_.empty() || layer_ < 0) return name;
    const std::string hole = "{" + loop_var_ + "}";
    std::string out = name;
    for (size_t at; (at = out.find(hole)) != std::string::npos;)
      out.replace(at, hole.size(), std::to_string(layer_));
    return out;
  }

  const lang::ConstantDecl* find_constant(const std::string& name) const {
    for (const lang::ConstantDecl& c : p_.constants)
      if (c.name == name) return &c;
    return nullptr;
  }

  int constant(const lang::ConstantDecl& decl, const lang::Statement& s) {
    std::string name = substitute(decl.name);
    std::optional<CheckpointTensor> found = lookup_(name);
    if (!found && !decl.fallback.empty()) {
      name = substitute(decl.fallback);
      found = lookup_(name);
    }
    if (auto it = constants_.find(name); it != constants_.end()) return it->second;
    if (!found)
      refuse(s, decl.fallback.empty()
                    ? fmt::format("the checkpoint has no tensor '{}'", name)
                    : fmt::format("the checkpoint has neither '{}' nor '{}'", substitute(decl.name), name));
    std::vector<int64_t> want;
    for (const lang::Operand& d : decl.shape) want.push_back(static_cast<int64_t>(number(d, s)));
    const std::vector<int64_t> have(found->dims.rbegin(), found->dims.rend());
    if (have != want)
      refuse(s, fmt::format("tensor '{}' is [{}] in the checkpoint; the program declares [{}]", name,
                            fmt::join(have, ", "), fmt::join(want, ", ")));
    const lang::ValueKind kind = decl.kind == lang::ConstantKind::vector ? lang::ValueKind::vector
                                 : decl.kind == lang::ConstantKind::matrix ? lang::ValueKind::matrix
                                                                           : lang::ValueKind::stack;
    const bool per_layer = decl.name.find('{') != std::string::npos;
    const int id = add_tensor(name, Role::constant, kind, want, per_layer ? static_cast<int>(layer_) : -1);
    g_.tensors[static_cast<size_t>(id)].format = found->type;
    g_.tensors[static_cast<size_t>(id)].checkpoint_name = name;
    constants_[name] = id;
    return id;
  }

  int cache(int64_t layer, bool values, const lang::Statement& s) {
    if (!p_.caches) refuse(s, "the program declares no caches");
    if (auto it = caches_.find({layer, values}); it != caches_.end()) return it->second;
    const lang::CacheDecl& c = *p_.caches;
    const int64_t n_layers = static_cast<int64_t>(number(c.layers, s));
    if (layer < 0 || layer >= n_layers)
      refuse(s, fmt::format("layer {} has no caches (the program carries {} layers)", layer, n_layers));
    const std::vector<int64_t> shape = {g_.sequences, static_cast<int64_t>(number(c.positions, s)),
                                        static_cast<int64_t>(number(c.heads, s)),
                                        static_cast<int64_t>(number(c.head_dim, s))};
    const int id = add_tensor(fmt::format("cache.{}.{}", values ? "values" : "keys", layer), Role::state,
                              lang::ValueKind::activation, shape, static_cast<int>(layer));
    caches_[{layer, values}] = id;
    return id;
  }

  // A value naming a constant declared `or none when absent` that the checkpoint lacks: the modifier
  // naming it is dropped, so the node has no such attr.
  bool absent(const lang::Operand& op) const {
    if (op.kind != lang::Operand::Kind::value || env_.count(op.name)) return false;
    const lang::ConstantDecl* decl = find_constant(op.name);
    return decl && decl->optional && !lookup_(substitute(decl->name));
  }

  Arg operand(const lang::Operand& op, const lang::Statement& s, Node& node) {
    Arg a;
    if (op.kind == lang::Operand::Kind::number) {
      a.number = number(op, s);
      return a;
    }
    node.each_head = node.each_head || op.each_head;
    if (auto it = env_.find(op.name); it != env_.end()) {
      a.tensor = it->second;
    } else if (const lang::ConstantDecl* decl = find_constant(op.name)) {
      a.tensor = constant(*decl, s);
    } else {
      internal_fail("'{}' passed the checker but is not in scope", op.name);
    }
    return a;
  }

  void lift_statement(const lang::Statement& s) {
    Node node;
    node.id = static_cast<int>(g_.nodes.size());
    node.kind = s.op.kind;
    node.layer = static_cast<int>(layer_);
    node.statement = s.id;
    node.line = s.loc.line;
    node.text = statement_text(s.loc);
    for (const lang::Operand& op : s.op.args) node.args.push_back(operand(op, s, node));
    for (const lang::Modifier& m : s.op.mods) {
      if (std::any_of(m.args.begin(), m.args.end(), [&](const lang::Operand& op) { return absent(op); })) continue;
      Attr attr{m.kind, {}};
      for (const lang::Operand& op : m.args) attr.args.push_back(operand(op, s, node));
      node.attrs.push_back(std::move(attr));
    }
    using lang::OpKind;
    if (s.op.kind == OpKind::attention) {
      const int64_t layer = static_cast<int64_t>(node.args.at(1).number);
      node.state = {cache(layer, false, s), cache(layer, true, s)};
    } else if (s.op.kind == OpKind::append_keys || s.op.kind == OpKind::append_values) {
      node.state = {cache(static_cast<int64_t>(node.args.at(1).number),
                          s.op.kind == OpKind::append_values, s)};
    }
    if (s.kind == lang::Statement::Kind::let) {
      const std::optional<lang::ValueType>& type = types_.types.at(static_cast<size_t>(s.id));
      if (!type) internal_fail("no type for statement {}", s.id);
      const std::string name = layer_ >= 0 ? fmt::format("{}#{}.L{}", s.target, s.id, layer_)
                                           : fmt::format("{}#{}", s.target, s.id);
      node.output = add_tensor(name, Role::temporary, type->kind, numeric_shape(type->shape),
                               static_cast<int>(layer_));
      g_.tensors[static_cast<size_t>(node.output)].producer = node.id;
      env_[s.target] = node.output;
    }
    for (int t : node.tensor_inputs()) g_.tensors[static_cast<size_t>(t)].consumers.push_back(node.id);
    g_.nodes.push_back(std::move(node));
  }

  void walk(const std::vector<lang::Statement>& body) {
    for (const lang::Statement& s : body) {
      if (s.kind != lang::Statement::Kind::loop) {
        lift_statement(s);
        continue;
      }
      const int64_t n = static_cast<int64_t>(number(s.loop_count, s));
      std::set<std::string> outer;
      for (const auto& [name, id] : env_) outer.insert(name);
      loop_var_ = s.loop_var;
      for (layer_ = 0; layer_ < n; ++layer_) {
        walk(s.body);
        for (auto it = env_.begin(); it != env_.end();)  // values first bound in the body die here
          it = outer.count(it->first) ? std::next(it) : env_.erase(it);
      }
      loop_var_.clear();
      layer_ = -1;
    }
  }
};

}  // namespace

std::string_view role_name(Role role) {
  switch (role) {
    case Role::input: return "input";
    case Role::constant: return "constant";
    case Role::state: return "state";
    case Role::temporary: return "temporary";
    case Role::output: return "output";
  }
  return "?";
}

const Attr* Node::find(lang::ModKind kind) const {
  for (const Attr& a : attrs)
    if (a.kind == kind) return &a;
  return nullptr;
}

std::vector<int> Node::tensor_inputs() const {
  std::vector<int> out;
  for (const Arg& a : args)
    if (a.is_tensor()) out.push_back(a.tensor);
  for (const Attr& attr : attrs)
    for (const Arg& a : attr.args)
      if (a.is_tensor()) out.push_back(a.tensor);
  out.insert(out.end(), state.begin(), state.end());
  return out;
}

Graph lift(const lang::Program& cut, const lang::Bindings& bindings, const ConstantLookup& lookup) {
  return Lifter(cut, bindings, lookup).run();
}

}  // namespace lathe::graph
