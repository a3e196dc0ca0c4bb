// Planning a cut for the device, in two passes over the fusion plan's groups: first every tensor gets
// storage (a view of another's where an op may work in place or only reshapes) and every group its
// scratch, with lifetimes; the arena places them; then each group becomes its launches, closures
// over the final device pointers.
#include "plan/step_plan.h"

#include "plan/arena.h"
#include "kernels/attention_launch.h"
#include "kernels/attention_prefill_launch.h"
#include "kernels/norm_epilogue_launch.h"
#include "plan/step_plan_ops.h"
#include "runtime/cuda_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>

namespace lathe::plan {

int64_t numel(const graph::Tensor& t) {
  return std::accumulate(t.shape.begin(), t.shape.end(), int64_t{1}, std::multiplies<>());
}

std::string base_name(const std::string& ssa) { return ssa.substr(0, ssa.find('#')); }

StepPlan::Builder::Builder(const graph::Graph& graph, const DeviceModel& model, const PlanOptions& options,
                           StepPlan& plan)
    : g(graph), m(model), o(options), p(plan) {
  root.assign(g.tensors.size(), -1);
  last_consumer.assign(g.tensors.size(), -1);
  // A consumer reads where its group runs: at the group's last node (fuse::fuse's order).
  for (const graph::Tensor& t : g.tensors)
    for (int c : t.consumers) {
      const int at = p.fusion_.groups[static_cast<size_t>(p.fusion_.group_of[static_cast<size_t>(c)])].nodes.back();
      last_consumer[static_cast<size_t>(t.id)] = std::max(last_consumer[static_cast<size_t>(t.id)], at);
    }
}

void StepPlan::Builder::own(int tensor, int group) {
  Store s;
  s.bytes = numel(g.tensor(tensor)) * 4;
  s.first = s.last = group;
  s.persistent = g.tensor(tensor).role == graph::Role::output;
  stores[tensor] = s;
  root[static_cast<size_t>(tensor)] = tensor;
}

bool StepPlan::Builder::may_overwrite(int tensor, int node) const {
  const int r = root[static_cast<size_t>(tensor)];
  if (r < 0 || stores.at(r).persistent) return false;
  for (size_t t = 0; t < g.tensors.size(); ++t)
    if (root[t] == r && last_consumer[t] > node) return false;
  return true;
}

void StepPlan::Builder::view(int tensor, int of) {
  root[static_cast<size_t>(tensor)] = root[static_cast<size_t>(of)];
}

void StepPlan::Builder::in_place(const graph::Node& n, int group) {
  // Readers of the operand inside the group run in its kernel: only readers after the group count.
  if (may_overwrite(n.args[0].tensor, p.fusion_.groups[static_cast<size_t>(group)].nodes.back())) {
    view(n.output, n.args[0].tensor);
    copy_first.push_back(false);
  } else {
    own(n.output, group);
    copy_first.push_back(true);
  }
}

int StepPlan::Builder::scratch(int group, int64_t bytes) {
  scratch_requests.push_back({bytes, group, group});
  return static_cast<int>(scratch_requests.size()) - 1;
}

// Pass 1: storage, views, scratch and lifetimes.
void StepPlan::Builder::assign_storage() {
  for (int gi = 0; gi < static_cast<int>(p.fusion_.groups.size()); ++gi) {
    const fuse::Group& grp = p.fusion_.groups[static_cast<size_t>(gi)];
    const graph::Node& first = g.nodes[static_cast<size_t>(grp.nodes.front())];
    for (int n : grp.nodes)
      for (int t : g.nodes[static_cast<size_t>(n)].tensor_inputs())
        if (root[static_cast<size_t>(t)] >= 0) stores.at(root[static_cast<size_t>(t)]).last = gi;
    if (grp.rule == "add_norm") {
      in_place(first, gi);
      own(g.nodes[static_cast<size_t>(grp.nodes[1])].output, gi);
    } else if (grp.rule == "qk_norm_rope") {
      in_place(first, gi);
      view(g.nodes[static_cast<size_t>(grp.nodes[1])].output, first.output);
    } else if (grp.rule == "norm_prologue") {
      copy_first.push_back(false);
      // The sum gets its own storage: the kernel's blocks read the residual while block 0 writes the
      // sum. Every node's output is kept (the fallback launches write them all).
      for (int n : grp.nodes) own(g.nodes[static_cast<size_t>(n)].output, gi);
    } else if (grp.rule == "rope_append" || grp.rule == "rope_attention") {
      copy_first.push_back(false);
      // rope_attention: the attention's output its own; q and k as rope_append's (its kernel writes
      // neither, but the storage stays the same either way).
      if (grp.rule == "rope_attention") own(g.nodes[static_cast<size_t>(grp.nodes.back())].output, gi);
      // q's and k's paths (norm, rope) each work in place on their operand where nothing after the
      // group reads it; else on their own storage with the operand copied in first.
      const int last = grp.nodes.back();
      std::vector<int> ropes;
      for (int id : grp.nodes)
        if (g.nodes[static_cast<size_t>(id)].kind == lang::OpKind::rope) ropes.push_back(id);
      std::vector<bool> copies;
      for (int r : ropes) {
        const graph::Node& rope = g.nodes[static_cast<size_t>(r)];
        const int np = g.tensor(rope.args[0].tensor).producer;
        const bool normed = np >= 0 && std::find(grp.nodes.begin(), grp.nodes.end(), np) != grp.nodes.end();
        const graph::Node& f = normed ? g.nodes[static_cast<size_t>(np)] : rope;
        const bool copy = !may_overwrite(f.args[0].tensor, last);
        if (copy)
          own(f.output, gi);
        else
          view(f.output, f.args[0].tensor);
        if (normed) view(rope.output, f.output);
        copies.push_back(copy);
      }
      rope_copies[gi] = copies;
    } else if (grp.rule == "merged_products" || grp.rule == "gate_up_swiglu") {
      copy_first.push_back(false);
      for (int n : grp.nodes) own(g.nodes[static_cast<size_t>(n)].output, gi);  // all kept: another path may need them
    } else if (grp.rule == "elementwise_run") {
      copy_first.push_back(false);
      own(g.nodes[static_cast<size_t>(grp.nodes.back())].output, gi);  // the values between stay in registers
    } else {
      const graph::Node& n = first;
      copy_first.push_back(false);
      if (n.kind == lang::OpKind::split_heads || n.kind == lang::OpKind::join_heads) {
        view(n.output, n.args[0].tensor);
      } else if (n.kind == lang::OpKind::rope && may_overwrite(n.args[0].tensor, n.id)) {
        view(n.output, n.args[0].tensor);
      } else if (n.output >= 0) {
        own(n.output, gi);
        if (n.kind == lang::OpKind::rope) copy_first.back() = true;
      }
    }
    group_scratch.push_back(scratch_for(gi));
    for (int n : grp.nodes) {
      const int out = g.nodes[static_cast<size_t>(n)].output;
      const int r = out >= 0 ? root[static_cast<size_t>(out)] : -1;
      if (r >= 0) stores.at(r).last = std::max(stores.at(r).last, gi);
    }
  }
  // router_epilogue: the product's launch writes the mixture group's sum and scratch (ids, weights, x's
  // int8 form), so they live from the product's group on.
  for (const auto& [product, mixture] : p.fusion_.router_epilogues) {
    const int go = p.fusion_.group_of[static_cast<size_t>(product)], gm = p.fusion_.group_of[static_cast<size_t>(mixture)];
    if (!takes_router_epilogue(go, gm)) continue;
    router_epi_of_mixture[gm] = go;
    router_epi_of_product[go] = gm;
    for (int r : group_scratch[static_cast<size_t>(gm)])
      scratch_requests[static_cast<size_t>(r)].first = std::min(scratch_requests[static_cast<size_t>(r)].first, go);
    for (int n : p.fusion_.groups[static_cast<size_t>(gm)].nodes) {
      const int out = g.nodes[static_cast<size_t>(n)].output;
      const int r = out >= 0 ? root[static_cast<size_t>(out)] : -1;
      if (r >= 0) stores.at(r).first = std::min(stores.at(r).first, go);
    }
  }
  assign_ffn_splits();
  assign_attention_halves();
  assign_o_splits();
  assign_norm_epilogues();
}

// norm_epilogue: the product's launch writes the norm group's sum, x's int8 form (the group's slot 0,
// its fallback's form) and the parts (a slot of its own, after the others), so they live from the
// product's group on.
void StepPlan::Builder::assign_norm_epilogues() {
  for (const auto& [product, add] : p.fusion_.norm_epilogues) {
    const int go = p.fusion_.group_of[static_cast<size_t>(product)], gn = p.fusion_.group_of[static_cast<size_t>(add)];
    if (!takes_norm_epilogue(go, gn)) continue;
    norm_epi_of_norm[gn] = go;
    norm_epi_of_product[go] = gn;
    const kernels::WeightMatrix w = weight_of(m, g.tensor(g.nodes[static_cast<size_t>(product)].args[1].tensor));
    std::vector<int>& slots = group_scratch[static_cast<size_t>(gn)];
    norm_epi_parts[gn] = static_cast<int>(slots.size());
    slots.push_back(scratch(gn, 4 * kernels::norm_epilogue_blocks(w, o.activations)));
    // The dealt form's counts: one set for every such launch (each leaves it zero; they run in order),
    // sized before any launch is emitted (the launches capture its address).
    const size_t counts = static_cast<size_t>(kernels::norm_epilogue_count_bytes(w, o.activations));
    if (p.norm_counts_.bytes() < counts) {
      p.norm_counts_ = cuda::DeviceBuffer(counts, "norm epilogue counts");
      p.norm_counts_.zero();
    }
    for (int r : {slots.front(), slots.back()})
      scratch_requests[static_cast<size_t>(r)].first = std::min(scratch_requests[static_cast<size_t>(r)].first, go);
    const int out = g.nodes[static_cast<size_t>(add)].output;
    const int r = root[static_cast<size_t>(out)];
    if (r >= 0) stores.at(r).first = std::min(stores.at(r).first, go);
  }
}

void StepPlan::Builder::place() {
  std::vector<ArenaRequest> requests;
  std::vector<int> request_root;
  int64_t persistent_bytes = 0;
  for (auto& [r, s] : stores) {
    if (s.persistent) {
      s.offset = persistent_bytes;
      persistent_bytes += (s.bytes + 255) / 256 * 256;
      continue;
    }
    s.request = static_cast<int>(requests.size());
    requests.push_back({s.bytes, s.first, s.last});
  }
  const size_t first_scratch = requests.size();
  requests.insert(requests.end(), scratch_requests.begin(), scratch_requests.end());
  const ArenaLayout layout = place_in_arena(requests);
  p.arena_ = cuda::DeviceBuffer(static_cast<size_t>(std::max<int64_t>(layout.size, 256)), "step arena");
  // Inputs (tokens, positions, sequences) and the returned values live outside the arena.
  const int64_t io_inputs = 3 * ((p.rows_ * 4 + 255) / 256 * 256);
  p.io_ = cuda::DeviceBuffer(static_cast<size_t>(io_inputs + persistent_bytes), "step inputs and outputs");
  p.io_.zero();
  const int64_t slot = (p.rows_ * 4 + 255) / 256 * 256;
  p.tokens_ = p.io_.ptr();
  p.positions_ = p.io_.ptr() + static_cast<CUdeviceptr>(slot);
  p.sequences_ = p.io_.ptr() + static_cast<CUdeviceptr>(2 * slot);
  for (auto& [r, s] : stores)
    s.ptr = s.persistent ? p.io_.ptr() + static_cast<CUdeviceptr>(io_inputs + s.offset)
                         : p.arena_.ptr() + static_cast<CUdeviceptr>(layout.offsets[static_cast<size_t>(s.request)]);
  for (size_t i = 0; i < scratch_requests.size(); ++i)
    scratch_ptrs.push_back(p.arena_.ptr() + static_cast<CUdeviceptr>(layout.offsets[first_scratch + i]));
}

CUdeviceptr StepPlan::Builder::ptr(int tensor) const {
  const graph::Tensor& t = g.tensor(tensor);
  switch (t.role) {
    case graph::Role::input:
      if (t.kind == lang::ValueKind::token_ids) return p.tokens_;
      if (t.kind == lang::ValueKind::positions) return p.positions_;
      return p.sequences_;
    case graph::Role::constant: return m.weight(t.checkpoint_name).ptr;
    case graph::Role::state: {
      const bool values = t.name.find("values") != std::string::npos;
      return values ? m.values(t.layer) : m.keys(t.layer);
    }
    default: break;
  }
  const int r = root[static_cast<size_t>(tensor)];
  if (r < 0) internal_fail("tensor {} has no storage", t.name);
  return stores.at(r).ptr;
}

CUdeviceptr StepPlan::Builder::input_ptr(lang::ValueKind kind) const {
  for (int id : g.inputs)
    if (g.tensor(id).kind == kind) return ptr(id);
  internal_fail("the program declares no {} input", lang::value_kind_name(kind));
}

StepPlan::StepPlan(const graph::Graph& g, const DeviceModel& model, const PlanOptions& options)
    : rows_(g.rows) {
  if (g.sequences > model.cache_shape().n_seq)
    fail("the step runs {} sequences; the caches hold {}", g.sequences, model.cache_shape().n_seq);
  fusion_ = fuse::fuse(g, options.held);
  // The range forms only for a decode step that has an attention (the one op whose launch they change).
  const bool attends = std::any_of(g.nodes.begin(), g.nodes.end(),
                                   [](const graph::Node& n) { return n.kind == lang::OpKind::attention; });
  long_from_ = g.rows == 1 && attends ? std::max<int64_t>(0, options.long_from) : 0;
  long_granule_ = options.long_granule;
  Builder b(g, model, options, *this);
  b.assign_storage();
  b.place();
  for (int gi = 0; gi < static_cast<int>(fusion_.groups.size()); ++gi) b.emit(gi);
  for (int id : g.outputs) {
    const graph::Tensor& t = g.tensor(id);
    outputs_.push_back({base_name(t.name), {b.ptr(id), numel(t)}});
  }
  for (const graph::Node& n : g.nodes)
    if (n.kind == lang::OpKind::argmax && workspace_.bytes() > 0) workspace_.zero();
  staging_.resize(static_cast<size_t>(3 * rows_));
}

void StepPlan::set_inputs(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions,
                          const std::vector<int32_t>& sequences, CUstream stream) {
  if (static_cast<int64_t>(tokens.size()) != rows_ || positions.size() != tokens.size() ||
      sequences.size() != tokens.size())
    internal_fail("a step of {} rows got {} tokens", rows_, tokens.size());
  // Stream-ordered copies: the step's kernels see them; the staging vector is not touched again
  // before the stream has read it (the engine synchronizes before the next set_inputs).
  staging_.assign(tokens.begin(), tokens.end());
  staging_.insert(staging_.end(), positions.begin(), positions.end());
  staging_.insert(staging_.end(), sequences.begin(), sequences.end());
  const size_t n = tokens.size() * 4;
  const cuda::DriverApi& d = cuda::driver();
  cuda::check(d.cuMemcpyHtoDAsync(tokens_, staging_.data(), n, stream), "copying the step's tokens");
  cuda::check(d.cuMemcpyHtoDAsync(positions_, staging_.data() + tokens.size(), n, stream), "copying the step's positions");
  cuda::check(d.cuMemcpyHtoDAsync(sequences_, staging_.data() + 2 * tokens.size(), n, stream), "copying the step's sequences");
}

StepForm StepPlan::form_for(int64_t position) const {
  if (long_from_ <= 0) return StepForm::any_position;
  return position < long_from_ ? StepForm::short_positions : StepForm::long_positions;
}

void StepPlan::set_form(StepForm f) {
  if (f != StepForm::any_position && long_from_ <= 0) internal_fail("a step without range forms was asked for one");
  form_ = f;
}

void StepPlan::run(CUstream stream) const {
  // LATHE_PROFILE_TWICE=TEXT (a measuring knob): every launch whose description contains TEXT runs
  // twice, so a kind's cost inside the captured step, overlaps included, is the step's time with it
  // minus without. The values it leaves are wrong where the launch is not idempotent (rope in place).
  static const std::string twice = [] {
    const char* v = std::getenv("LATHE_PROFILE_TWICE");
    return std::string(v ? v : "");
  }();
  for (const Launch& l : launches_) {
    if (!twice.empty() && l.what.find(twice) != std::string::npos) l.run(stream);
    l.run(stream);
  }
}

CUdeviceptr StepPlan::output_ptr(const std::string& name) const {
  for (const auto& [n, pv] : outputs_)
    if (n == name) return pv.first;
  fail("the program returns no value named '{}'", name);
}

bool StepPlan::has_output(const std::string& name) const {
  for (const auto& [n, pv] : outputs_)
    if (n == name) return true;
  return false;
}

namespace {
template <typename T>
std::vector<T> read_output(const std::vector<std::pair<std::string, std::pair<CUdeviceptr, int64_t>>>& outputs,
                           const std::string& name, CUstream stream, int64_t last_values = -1) {
  for (const auto& [n, pv] : outputs) {
    if (n != name) continue;
    const int64_t count = last_values >= 0 ? std::min(last_values, pv.second) : pv.second;
    std::vector<T> out(static_cast<size_t>(count));
    const CUdeviceptr from = pv.first + static_cast<CUdeviceptr>((pv.second - count) * static_cast<int64_t>(sizeof(T)));
    cuda::check(cuda::driver().cuStreamSynchronize(stream), "running the step");
    cuda::check(cuda::driver().cuMemcpyDtoH(out.data(), from, out.size() * sizeof(T)), "reading the step's output");
    return out;
  }
  fail("the program returns no value named '{}'", name);
}
}  // namespace

std::vector<float> StepPlan::read_f32(const std::string& name, CUstream stream, int64_t last_values) const {
  return read_output<float>(outputs_, name, stream, last_values);
}

std::vector<int32_t> StepPlan::read_ids(const std::string& name, CUstream stream) const {
  return read_output<int32_t>(outputs_, name, stream);
}

std::string StepPlan::describe() const {
  std::string out = fmt::format("{} launches, arena {:.2f} MB\n", launches_.size(), arena_.bytes() / 1e6);
  for (const Launch& l : launches_) out += "  " + l.what + "\n";
  return out;
}

size_t StepPlan::estimate_bytes(const graph::Graph& g, const CacheShape& caches) {
  // Each temporary lives from its producer to its last consumer and is placed by that lifetime, as the
  // plan's arena places it; twice its f32 size covers its int8 forms (at most 2.5 bytes a value) and
  // the groups' small scratch. Attention and mixture scratch are bounded per node. (ffn_split's
  // re-laid down matrices are not counted: the plan takes them only from the model's spare bytes.)
  std::vector<ArenaRequest> requests;
  int64_t persistent = 0;
  for (const graph::Tensor& t : g.tensors) {
    if (t.role == graph::Role::output) persistent += numel(t) * 4;
    if (t.role != graph::Role::temporary || t.producer < 0) continue;
    int last = t.producer;
    for (int c : t.consumers) last = std::max(last, c);
    requests.push_back({numel(t) * 4 * 2, t.producer, last});
  }
  for (const graph::Node& n : g.nodes) {
    int64_t bytes = 0;
    if (n.kind == lang::OpKind::attention) {
      const graph::Tensor& q = g.tensor(n.args[0].tensor);
      const kernels::AttentionShape shape{q.shape[0], q.shape[1], caches.n_head_kv, q.shape[2], caches.n_ctx, caches.n_ctx};
      const int64_t blocks = 512;  // more than twice the SMs of any card the kernels size for
      // The finest granule (one chunk: a long form's may be that fine) splits the most.
      const int64_t finest = kernels::attention_chunk_slots();
      bytes = static_cast<int64_t>(std::max(kernels::plan_attention_split(shape, {}, blocks).workspace_bytes,
                                            kernels::plan_attention_split(shape, {}, blocks, finest).workspace_bytes));
      if (shape.rows <= caches.n_ctx)  // the flash prefill takes a chunk that fits the cache
        bytes = std::max(bytes, static_cast<int64_t>(kernels::plan_prefill_split(shape, {}, blocks).workspace_bytes));
    } else if (n.kind == lang::OpKind::mixture) {
      const graph::Tensor& x = g.tensor(n.args[2].tensor);
      const graph::Tensor& gate = g.tensor(n.find(lang::ModKind::experts)->args[0].tensor);
      const int64_t rows = x.shape[0], kk = static_cast<int64_t>(n.args[0].number);
      bytes = rows * (gate.shape[0] * 4 * 2 + kk * 16 + kk * gate.shape[1] * 4 * 3 + kk * x.shape[1] * 4 * 2);
    }
    if (bytes > 0) requests.push_back({bytes, n.id, n.id});
  }
  return static_cast<size_t>(place_in_arena(requests).size + persistent) + (64ull << 20);
}

}  // namespace lathe::plan
