// Rule elementwise_run: a run of elementwise statements, each the only reader of the one before,
//   Let g be the SiLU of g.  Let f be g times u.  Let f be f scaled by 0.5.
// carried in registers in one kernel: one read of the run's input and of each other operand, one
// write of its result; the values between never reach memory. Applies when each link's value has
// the next op as its only consumer (so nothing else needs it stored), is not returned, and keeps the
// run's element count (a broadcast operand may be a vector, the value itself may not be). Runs are
// cut at kMaxRun ops (the kernel's limit) and must have at least two ops.
#include "fuse/fusion.h"

namespace lathe::fuse {
namespace {

constexpr size_t kMaxRun = 4;  // kernels::kMaxElemSteps

int64_t count(const graph::Tensor& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  return n;
}

}  // namespace

bool is_elementwise(lang::OpKind kind) {
  using lang::OpKind;
  switch (kind) {
    case OpKind::add: case OpKind::subtract: case OpKind::multiply: case OpKind::divide:
    case OpKind::swiglu: case OpKind::scale: case OpKind::silu: case OpKind::gelu:
    case OpKind::sigmoid: case OpKind::relu: case OpKind::soft_cap:
      return true;
    default:
      return false;
  }
}

void elementwise_run_pass(const graph::Graph& g, std::vector<bool>& claimed, std::vector<Group>& groups) {
  for (const graph::Node& first : g.nodes) {
    if (claimed[static_cast<size_t>(first.id)] || !is_elementwise(first.kind)) continue;
    std::vector<int> run = {first.id};
    const graph::Node* cur = &first;
    while (run.size() < kMaxRun) {
      const graph::Tensor& value = g.tensor(cur->output);
      if (value.role != graph::Role::temporary) break;
      const int next_id = only_consumer(g, value.id);
      if (next_id < 0 || claimed[static_cast<size_t>(next_id)]) break;
      const graph::Node& next = g.nodes[static_cast<size_t>(next_id)];
      if (!is_elementwise(next.kind) || count(g.tensor(next.output)) != count(value)) break;
      int reads = 0;  // the value read once, as one operand (x times x stays two kernels' worth)
      for (const graph::Arg& a : next.args) reads += a.tensor == value.id;
      if (reads != 1) break;
      run.push_back(next_id);
      cur = &next;
    }
    if (run.size() < 2) continue;
    for (int n : run) claimed[static_cast<size_t>(n)] = true;
    groups.push_back({"elementwise_run", run});
  }
}

}  // namespace lathe::fuse
