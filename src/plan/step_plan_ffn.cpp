// A layer's feed-forward half and the next residual sum in one launch (fusion rule ffn_split): whether
// the lane takes a marked down product, the launch that then runs the feed-forward group and the down
// product (kernels/ffn_split_launch.h), and the fixed-point sums it adds into. The next norm group's
// merged products read that sum in their prologue (emit_norm_prologue, NormPrologue::x_fixed).
//
// The sums: one int64 [n_embd] a taken launch, zero before it. Launch i of the step adds into sum i and
// zeroes sum i + 1 (mod their count), whose one reader (the group after launch i + 1: in the step
// before, or for the last launch, sum 0's reader earlier in this step) has run; so every sum is zero
// again before its launch, step after step, where a step takes at least two launches (with one, the
// launch would zero its own sum): the plan takes none otherwise.
#include "kernels/ffn_split_launch.h"
#include "kernels/gemv_multi_launch.h"
#include "kernels/moe_launch.h"
#include "plan/step_plan_ops.h"
#include "runtime/cuda_driver.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string>

namespace lathe::plan {
namespace {

using lang::ModKind;
using lang::OpKind;
namespace k = kernels;

bool on_device(const DeviceModel& m, const graph::Tensor& t) { return !m.weight(t.checkpoint_name).pinned_host; }

// The dense launches read gate, up and down's slices in the levels layout (ffn_split_launch.h; a copy
// of gate and up beside the row-major ones) where the spare bytes hold it: qwen3-0.6b Q8_0 tg128 +1.5%
// against the packed form (docs/perf.md, thirty-sixth session). LATHE_FFN_SPLIT_LEVELS=0 takes the
// packed form (down's slices only).
bool levels_layout() {
  const char* v = std::getenv("LATHE_FFN_SPLIT_LEVELS");
  return !(v && std::string(v) == "0");
}

}  // namespace

// Where the launch takes the shapes and formats, its matrices live on the device (it asks for them with
// cp.async; the re-laid copies must also fit in the model's spare bytes: assign_ffn_splits), the
// feed-forward norm has a weight and no shift, and the next group's merged kernel runs with the norm
// in its prologue reading the fixed-point sum (merged_fixed_applies: emit_norm_prologue's choice).
// Not where the plan takes no re-laid constants (PlanOptions::relaid_constants: `lathe emit`).
// gd < 0: the feed-forward group is a mixture's [add, norm, mixture], which
// takes the split launch only under LATHE_MOE_SPLIT=1 (slower so far: qwen3-30b-a3b Q8_0 tg128 442
// against 491 held back, docs/perf.md, thirty-fifth session) or, its one-wave form, =ring (not yet run), where its router runs in its own kernel
// or the product's epilogue and the mixture's other measuring knobs (one launch, by slot) are off.
bool StepPlan::Builder::takes_ffn_split(int gf, int gd, int gn) const {
  const k::Activations a = o.activations;
  if (!o.relaid_constants || g.rows != 1 || a == k::Activations::f32) return false;
  const fuse::Group& ffn = p.fusion_.groups[static_cast<size_t>(gf)];
  const fuse::Group& next = p.fusion_.groups[static_cast<size_t>(gn)];
  const graph::Node& norm = g.nodes[static_cast<size_t>(ffn.nodes[1])];
  const graph::Node& next_norm = g.nodes[static_cast<size_t>(next.nodes[1])];
  if (!norm.find(ModKind::weighted_by) || norm.find(ModKind::shifted_by) || next_norm.find(ModKind::shifted_by))
    return false;
  const std::vector<k::WeightMatrix> ws = norm_group_matrices(next);
  if (!k::merged_fixed_applies(ws.data(), static_cast<int>(ws.size()), a)) return false;
  if (gd < 0) {
    const graph::Node& mix = g.nodes[static_cast<size_t>(ffn.nodes[2])];
    const graph::Attr* ex = mix.find(ModKind::experts);
    std::vector<const graph::Tensor*> ts;
    for (int i = 0; i < 3; ++i) ts.push_back(&g.tensor(ex->args[static_cast<size_t>(i)].tensor));
    for (const graph::Tensor* t : ts)
      if (!on_device(m, *t)) return false;
    const k::WeightMatrix router = weight_of(m, g.tensor(mix.find(ModKind::routed_by)->args[0].tensor));
    const int64_t top_k = static_cast<int64_t>(mix.args[0].number);
    if (!moe_split_enabled() || !moe_kernels_enabled() || moe_by_slot_enabled() ||
        (moe_one_launch_enabled() && p.fusion_.one_launch_mixtures.count(mix.id)))
      return false;
    if (!router_epi_of_mixture.count(gf) && !k::moe_route_norm_applies(router, 1, top_k)) return false;
    const k::WeightMatrix gw = weight_of(m, *ts[0]), uw = weight_of(m, *ts[1]), dw = weight_of(m, *ts[2]);
    // (the three kernels' conditions too: emit_mixture's path that runs the router, then the split)
    if (!k::moe_route_applies(router, 1, top_k) || !k::moe_gate_up_applies(gw, uw, a, top_k) ||
        !k::moe_down_applies(dw, a, top_k))
      return false;
    // (the one-wave form where LATHE_MOE_SPLIT=ring asks for it and it takes the shapes, else the 32-value form)
    return ((moe_split_ring() && k::moe_split_ring_applies(gw, uw, dw, a, top_k)) ||
            k::moe_split_applies(gw, uw, dw, a, top_k)) &&
           ws[0].k == dw.n_out;
  }
  const graph::Node& down = g.nodes[static_cast<size_t>(p.fusion_.groups[static_cast<size_t>(gd)].nodes[0])];
  for (int n : {ffn.nodes[2], ffn.nodes[3], down.id})
    if (!on_device(m, g.tensor(g.nodes[static_cast<size_t>(n)].args[1].tensor))) return false;
  const std::vector<k::WeightMatrix> gu = norm_group_matrices(ffn);
  const k::WeightMatrix dw = weight_of(m, g.tensor(down.args[1].tensor));
  if (gu.size() != 2 || !k::ffn_split_applies(gu[0], gu[1], dw, a)) return false;
  return ws[0].k == dw.n_out;
}

// The bytes of the feed-forward group's gate matrix (up's are as many).
size_t StepPlan::Builder::relaid_bytes_of(int gf) const {
  const fuse::Group& ffn = p.fusion_.groups[static_cast<size_t>(gf)];
  return m.host_bytes(g.tensor(g.nodes[static_cast<size_t>(ffn.nodes[2])].args[1].tensor).checkpoint_name).size();
}

// The down matrix (or stack) a taken launch reads re-laid.
const graph::Tensor& StepPlan::Builder::ffn_split_down(int gf, int gd) const {
  if (gd >= 0)
    return g.tensor(g.nodes[static_cast<size_t>(p.fusion_.groups[static_cast<size_t>(gd)].nodes[0])].args[1].tensor);
  const graph::Node& mix = g.nodes[static_cast<size_t>(p.fusion_.groups[static_cast<size_t>(gf)].nodes[2])];
  return g.tensor(mix.find(ModKind::experts)->args[2].tensor);
}

void StepPlan::Builder::assign_ffn_splits() {
  struct Found {
    int gf, gd, gn;
  };
  std::vector<Found> found;
  for (const auto& [last, add] : p.fusion_.ffn_splits) {  // in graph order
    const int gl = p.fusion_.group_of[static_cast<size_t>(last)], gn = p.fusion_.group_of[static_cast<size_t>(add)];
    const bool mixture = g.nodes[static_cast<size_t>(last)].kind == OpKind::mixture;
    const Found f = mixture ? Found{gl, -1, gn} : Found{gl - 1, gl, gn};
    if (takes_ffn_split(f.gf, f.gd, f.gn)) found.push_back(f);
  }
  if (found.size() < 2) return;  // one launch a step would zero its own sum (above)
  // The re-laid copies only from the model's spare bytes (never pushing a weight to host memory): the
  // levels layout's gate and up copies where they fit beside the slices, else the slices alone.
  size_t slices_bytes = 0, gate_up_bytes = 0;
  for (const Found& f : found) {
    slices_bytes += m.host_bytes(ffn_split_down(f.gf, f.gd).checkpoint_name).size() + 16;
    if (f.gd >= 0) gate_up_bytes += 2 * (relaid_bytes_of(f.gf) + 16);
  }
  if (slices_bytes > m.spare_bytes()) return;
  const bool levels = levels_layout() && slices_bytes + gate_up_bytes <= m.spare_bytes();
  ffn_split_embd = weight_of(m, ffn_split_down(found[0].gf, found[0].gd)).n_out;
  p.ffn_sums_ = cuda::DeviceBuffer(found.size() * static_cast<size_t>(ffn_split_embd) * 8, "feed-forward sums");
  p.ffn_sums_.zero();
  for (size_t i = 0; i < found.size(); ++i) {
    const Found& f = found[i];
    const graph::Tensor& dt = ffn_split_down(f.gf, f.gd);
    const k::WeightMatrix dw = weight_of(m, dt);
    if (dw.n_out != ffn_split_embd) internal_fail("ffn_split: down matrices of {} and {} rows", ffn_split_embd, dw.n_out);
    const std::span<const uint8_t> bytes = m.host_bytes(dt.checkpoint_name);
    std::vector<uint8_t> slices =
        f.gd >= 0 ? k::relay_down_by_slices(bytes.data(), bytes.size(), dw.n_out, dw.k)
                  : k::relay_down_stack_by_slices(bytes.data(), bytes.size(), dw.n_expert, dw.n_out, dw.k);
    Relay down_relay{0, dt.checkpoint_name, dw.n_expert, dw.n_out, dw.k, 0};
    if (levels && f.gd >= 0) {
      slices = k::relay_q8_0_levels(slices.data(), slices.size(), dw.n_out);  // a slice: E blocks
      down_relay.group = dw.n_out;
      const fuse::Group& ffn = p.fusion_.groups[static_cast<size_t>(f.gf)];
      for (int n : {ffn.nodes[2], ffn.nodes[3]}) {  // gate, up: by 32-row groups
        const graph::Tensor& t = g.tensor(g.nodes[static_cast<size_t>(n)].args[1].tensor);
        const std::span<const uint8_t> rows = m.host_bytes(t.checkpoint_name);
        const int64_t group = 32 * (weight_of(m, t).k / 32);
        const std::vector<uint8_t> lv = k::relay_q8_0_levels(rows.data(), rows.size(), group);
        p.ffn_gate_up_.emplace_back(lv.size() + 16, "gate or up in the levels layout");
        p.ffn_gate_up_.back().upload(lv.data(), lv.size());
        p.relays_.push_back({p.ffn_gate_up_.back().ptr(), t.checkpoint_name, 1, 0, 0, group});
      }
      gate_up_levels[f.gf] = {p.ffn_gate_up_[p.ffn_gate_up_.size() - 2].ptr(), p.ffn_gate_up_.back().ptr()};
    }
    p.ffn_down_slices_.emplace_back(slices.size() + 16, "down matrix by slices");
    p.ffn_down_slices_.back().upload(slices.data(), slices.size());
    down_relay.ptr = p.ffn_down_slices_.back().ptr();
    p.relays_.push_back(down_relay);
    ffn_split_of_ffn[f.gf] = {f.gd, static_cast<int>(i)};
    ffn_sum_of_norm[f.gn] = static_cast<int>(i);
    if (f.gd >= 0) ffn_split_downs.insert(f.gd);
  }
}

// Where sum i of the taken launches lies, and the one launch i zeroes.
CUdeviceptr StepPlan::Builder::ffn_sum(int i) const {
  const int64_t n = static_cast<int64_t>(p.ffn_down_slices_.size());
  return p.ffn_sums_.ptr() + static_cast<CUdeviceptr>(8 * ffn_split_embd * (i % n));
}

// The feed-forward group's launch: its sum (the residual and the attention's output), norm, gate/up and
// SwiGLU, and the down product of the group after it, into sum i; sum i + 1 zeroed.
void StepPlan::Builder::emit_ffn_split(int gf) {
  const FfnSplitTaken& t = ffn_split_of_ffn.at(gf);
  const fuse::Group& grp = p.fusion_.groups[static_cast<size_t>(gf)];
  const graph::Node& sum_node = g.nodes[static_cast<size_t>(grp.nodes[0])];
  const graph::Node& norm = g.nodes[static_cast<size_t>(grp.nodes[1])];
  const graph::Node& down = g.nodes[static_cast<size_t>(p.fusion_.groups[static_cast<size_t>(t.down_group)].nodes[0])];
  const std::vector<k::WeightMatrix> gu = norm_group_matrices(grp);
  const k::WeightMatrix dw = weight_of(m, g.tensor(down.args[1].tensor));
  const graph::Attr* ea = norm.find(ModKind::epsilon);
  const CUdeviceptr slices = p.ffn_down_slices_.at(static_cast<size_t>(t.sum)).ptr();
  k::FfnSplit f;
  f.x = ptr(sum_node.args[0].tensor);
  f.y = ptr(sum_node.args[1].tensor);
  f.norm_w = ptr(norm.find(ModKind::weighted_by)->args[0].tensor);
  f.eps = static_cast<float>(ea ? ea->args.at(0).number : 1e-6);
  f.s_out = ffn_sum(t.sum);
  f.zero = ffn_sum(t.sum + 1);
  std::vector<k::WeightMatrix> w = gu;
  if (const auto lv = gate_up_levels.find(gf); lv != gate_up_levels.end()) {  // LATHE_FFN_SPLIT_LEVELS=1
    f.levels = true;
    w[0].data = lv->second.first;
    w[1].data = lv->second.second;
  }
  const k::Activations a = o.activations;
  // o_split, attention_half: below long_from the attention's launch added o's output into the
  // residual's sum (or a sum of its own), which this launch then reads (s_in) in place of the residual
  // and o's output.
  const auto os = o_split_of_ffn.find(gf);
  const CUdeviceptr s_short = os != o_split_of_ffn.end() ? os->second : 0;
  add(fmt::format("feed-forward in one launch {} gate, up [{} x {}] and down [{} x {}] by slices{} {}, the next sum "
                  "in fixed point{}",
                  ggml_type_name(gu[0].type), gu[0].n_out, gu[0].k, dw.n_out, dw.k,
                  f.levels ? " (the levels layout)" : "", k::activations_name(a),
                  s_short ? fmt::format(" (below position {}: the sum read is the residual with o's output added)",
                                        p.long_from_)
                          : ""),
      sum_node, [=, form = &p.form_](CUstream s) {
        k::FfnSplit fs = f;
        if (s_short && *form == StepForm::short_positions) {
          fs.s_in = s_short;
          fs.y = 0;
        }
        k::ffn_split(w[0], w[1], slices, a, fs, s);
      });
}

}  // namespace lathe::plan
