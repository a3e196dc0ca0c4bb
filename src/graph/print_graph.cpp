// The graph as text, for `lathe program --graph` and for tests: the tensors by role, then one line
// an op with its operands' shapes.
#include "graph/graph.h"

#include "lang/op_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace lathe::graph {
namespace {

std::string tensor_ref(const Graph& g, int id) {
  const Tensor& t = g.tensor(id);
  return fmt::format("{}[{}]", t.name, fmt::join(t.shape, ","));
}

std::string arg_str(const Graph& g, const Arg& a) {
  return a.is_tensor() ? tensor_ref(g, a.tensor) : fmt::format("{}", a.number);
}

}  // namespace

std::string print_graph(const Graph& g) {
  std::string out = fmt::format("graph of program {} ({} rows of {} sequences): {} tensors, {} ops\n",
                                g.program_identity.substr(0, 16), g.rows, g.sequences,
                                g.tensors.size(), g.nodes.size());
  for (const Tensor& t : g.tensors) {
    if (t.role == Role::temporary) continue;
    out += fmt::format("  {:9} {} {}{}\n", role_name(t.role), tensor_ref(g, t.id),
                       lang::value_kind_name(t.kind),
                       t.format ? fmt::format(" {}", ggml_type_name(*t.format)) : "");
  }
  for (const Node& n : g.nodes) {
    std::vector<std::string> args;
    for (const Arg& a : n.args) args.push_back(arg_str(g, a));
    for (const Attr& attr : n.attrs) {
      std::vector<std::string> xs;
      for (const Arg& a : attr.args) xs.push_back(arg_str(g, a));
      args.push_back(fmt::format("{}({})", lang::mod_info(attr.kind).name, fmt::join(xs, ", ")));
    }
    for (int s : n.state) args.push_back("state " + tensor_ref(g, s));
    out += fmt::format("  %{:<4} {} = {}({})\n", n.id, n.output >= 0 ? tensor_ref(g, n.output) : "-",
                       lang::op_info(n.kind).name, fmt::join(args, ", "));
  }
  return out;
}

}  // namespace lathe::graph
