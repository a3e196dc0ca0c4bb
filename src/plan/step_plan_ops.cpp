// Each group of the fusion plan becomes its launches. The kernels' launchers (src/kernels/*_launch.h)
// check what they cover; here each op's operands become pointers and shapes. The products and the
// mixture are in step_plan_products.cpp.
#include "fuse/fusion.h"
#include "kernels/argmax_launch.h"
#include "kernels/attention_launch.h"
#include "kernels/attention_o_split_launch.h"
#include "kernels/attention_prefill_launch.h"
#include "kernels/cache_launch.h"
#include "kernels/elementwise_launch.h"
#include "kernels/gemv_launch.h"
#include "kernels/gemv_multi_launch.h"
#include "kernels/moe_launch.h"
#include "kernels/moe_prefill_launch.h"
#include "kernels/norm_launch.h"
#include "kernels/rope_launch.h"
#include "kernels/route_epilogue_launch.h"
#include "lang/op_table.h"
#include "plan/step_plan_ops.h"
#include "runtime/cuda_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>

namespace lathe::plan {
namespace {

using lang::ModKind;
using lang::OpKind;
namespace k = kernels;

double number(const graph::Node& n, ModKind kind, double fallback) {
  const graph::Attr* a = n.find(kind);
  return a ? a->args.at(0).number : fallback;
}

}  // namespace

// A prefill chunk's attention (one sequence, consecutive positions, several rows) on tensor cores,
// flash style, under the int8 contracts; the f32 contract keeps the per-row kernel, whose products
// keep f32 accuracy (the flash kernel's are f16).
bool StepPlan::Builder::flash_prefill(const graph::Node& attention) const {
  const graph::Tensor& q = g.tensor(attention.args[0].tensor);
  return g.sequences == 1 && q.shape[0] > 1 && o.activations != k::Activations::f32;
}

k::ElemStep StepPlan::Builder::elem_step(const graph::Node& e, int value) const {
  k::ElemStep st;
  switch (e.kind) {
    case OpKind::add: st.code = static_cast<int>(k::ElemBinary::add); break;
    case OpKind::subtract: st.code = static_cast<int>(k::ElemBinary::subtract); break;
    case OpKind::multiply: st.code = static_cast<int>(k::ElemBinary::multiply); break;
    case OpKind::divide: st.code = static_cast<int>(k::ElemBinary::divide); break;
    case OpKind::swiglu: st.code = static_cast<int>(k::ElemBinary::swiglu); break;
    default: st.unary = true;
  }
  if (st.unary) {
    st.code = static_cast<int>(e.kind == OpKind::scale ? k::ElemUnary::scale
                               : e.kind == OpKind::silu ? k::ElemUnary::silu
                               : e.kind == OpKind::gelu ? k::ElemUnary::gelu
                               : e.kind == OpKind::sigmoid ? k::ElemUnary::sigmoid
                               : e.kind == OpKind::relu ? k::ElemUnary::relu : k::ElemUnary::soft_cap);
    st.param = e.args.size() > 1 ? static_cast<float>(e.args[1].number) : 0.0f;
    return st;
  }
  // The run's value is one operand; the other is read from memory (the value second: swapped).
  st.swap = e.args[0].tensor != value;
  const graph::Tensor& b = g.tensor(e.args[st.swap ? 0 : 1].tensor);
  const int64_t count = numel(g.tensor(e.output));
  st.b = ptr(b.id);
  st.period = numel(b) == count ? count : b.shape.back();
  return st;
}

void StepPlan::Builder::add(std::string what, const graph::Node& n, std::function<void(CUstream)> run) {
  p.launches_.push_back({fmt::format("{}  (line {}{})", what, n.line, n.layer >= 0 ? fmt::format(", layer {}", n.layer) : ""),
                         std::move(run)});
}

void StepPlan::Builder::no_kernel(const graph::Node& n, const std::string& why) const {
  fail("the GPU lane cannot compute line {}{}: {}\n    {}", n.line,
       n.layer >= 0 ? fmt::format(" (layer {})", n.layer) : "", why, n.text);
}

k::WeightMatrix weight_of(const DeviceModel& m, const graph::Tensor& t) {
  const DeviceWeight& w = m.weight(t.checkpoint_name);
  k::WeightMatrix out;
  out.type = w.type;
  out.data = w.ptr;
  out.k = w.dims.at(0);
  out.n_out = w.dims.size() > 1 ? w.dims[1] : 1;
  out.n_expert = w.dims.size() > 2 ? w.dims[2] : 1;
  return out;
}

// LATHE_EPILOGUE_SKIP=attention,swiglu (a measuring knob): those producers leave quantize_epilogue's
// int8 form to the product that reads it, as when the rule is held back for them alone.
bool epilogue_skipped(std::string_view kind) {
  static const std::string skip = [] {
    std::string list = ",";
    if (const char* v = std::getenv("LATHE_EPILOGUE_SKIP")) list.append(v);
    return list.append(",");
  }();
  std::string word = ",";
  word.append(kind).append(",");
  return skip.find(word) != std::string::npos;
}

// Whether a group marked by quantize_epilogue writes the int8 form where it runs: the attention and
// the SwiGLU unless skipped for a measurement; gate/up's merged kernel for one row only where its rows
// dealt by 32-row blocks stay balanced (gemv_multi_launch.h): else the quantizer would run after it,
// and the down product quantizing its own row (k <= 8,192) is cheaper.
bool StepPlan::Builder::epilogue_writes(int gi) const {
  const fuse::Group& grp = p.fusion_.groups[static_cast<size_t>(gi)];
  const graph::Node& last = g.nodes[static_cast<size_t>(grp.nodes.back())];
  if (last.kind == OpKind::attention) return !epilogue_skipped("attention");
  if (last.kind != OpKind::swiglu) return true;
  if (epilogue_skipped("swiglu")) return false;
  const graph::Node& gate = g.nodes[static_cast<size_t>(grp.nodes[grp.nodes.size() - 3])];
  const graph::Node& up = g.nodes[static_cast<size_t>(grp.nodes[grp.nodes.size() - 2])];
  if (gate.kind != OpKind::product || up.kind != OpKind::product || numel(g.tensor(last.output)) != g.tensor(last.output).shape.back())
    return true;  // not one row of the merged kernel: the quantizer runs after the SwiGLU launch either way
  return k::gate_up_quantizes_in_epilogue(weight_of(m, g.tensor(gate.args[1].tensor)), weight_of(m, g.tensor(up.args[1].tensor)),
                                          o.activations);
}

std::vector<int> StepPlan::Builder::scratch_for(int gi) {
  std::vector<int> out = scratch_for_kernels(gi);
  // quantize_epilogue: this group writes its output's int8 form too; the products find it made. Its
  // slot comes after the kernels' own, whose indices the emitters name.
  const int last_out = fuse::epilogue_output(g, p.fusion_.groups[static_cast<size_t>(gi)]);
  if (last_out >= 0 && p.fusion_.quantized_by_producer.count(last_out) && epilogue_writes(gi)) {
    const graph::Tensor& x = g.tensor(last_out);
    bool read = false;
    for (int c : x.consumers) read = read || (g.nodes[static_cast<size_t>(c)].args[0].tensor == x.id &&
                                              reads_quantized(g.nodes[static_cast<size_t>(c)]));
    if (read) {
      const int64_t bytes = k::quantized_activation_bytes(x.shape[0], x.shape[1], o.activations);
      quantize_out[gi] = static_cast<int>(out.size());
      quantized.emplace(last_out, scratch(gi, bytes));
      out.push_back(quantized.at(last_out));
    }
  }
  return out;
}

std::vector<int> StepPlan::Builder::scratch_for_kernels(int gi) {
  const fuse::Group& grp = p.fusion_.groups[static_cast<size_t>(gi)];
  // A norm_prologue group ending in a mixture takes the mixture's scratch (its router forms x itself).
  const graph::Node& last_node = g.nodes[static_cast<size_t>(grp.nodes.back())];
  const bool norm_mixture = grp.rule == "norm_prologue" && last_node.kind == OpKind::mixture;
  // rope_attention takes the attention's scratch (its prologue needs none).
  const bool rope_attention = grp.rule == "rope_attention";
  const graph::Node& n = norm_mixture || rope_attention ? last_node : g.nodes[static_cast<size_t>(grp.nodes.front())];
  std::vector<int> out;
  if (grp.rule == "norm_prologue" && !norm_mixture) {
    // The fallback's int8 form of the norm's output (add_rms_norm writes it; the kernel's own path
    // quantizes in shared memory and leaves it unused).
    const graph::Tensor& h = g.tensor(g.nodes[static_cast<size_t>(grp.nodes[1])].output);
    out.push_back(scratch(gi, std::max<int64_t>(256, k::quantized_activation_bytes(h.shape[0], h.shape[1], o.activations))));
    return out;
  }
  const bool merged = grp.rule == "merged_products" || grp.rule == "gate_up_swiglu";
  if (!grp.rule.empty() && !merged && !norm_mixture && !rope_attention) return out;
  // A merged group's products read one x, but in a chunk each in the form its format takes: the f16
  // form where a tensor-core kernel reads the format, f32 where none does (a Q5_K q beside a Q6_K v).
  // The slot is the first product's that reads a form (emit_merged converts x there).
  const graph::Node* form_reader = &n;
  if (merged)
    for (int id : grp.nodes) {
      const graph::Node& pn = g.nodes[static_cast<size_t>(id)];
      if (pn.kind == OpKind::product && (reads_quantized(pn) || reads_half(pn))) {
        form_reader = &pn;
        break;
      }
    }
  const graph::Node& reader = *form_reader;
  if (reader.kind == OpKind::product && (reads_quantized(reader) || reads_half(reader))) {
    // The int8 form of an activation is made once, by its producer (quantize_epilogue) or the first
    // product that reads it, and kept for the others (q, k and v read one normed row; gate and up
    // another).
    const graph::Tensor& x = g.tensor(reader.args[0].tensor);
    const int64_t kk = x.shape.back(), rows = numel(x) / kk;
    auto it = quantized.find(x.id);
    if (it == quantized.end()) {
      const int64_t bytes = reads_half(reader) ? rows * kk * 2 : k::quantized_activation_bytes(rows, kk, o.activations);
      it = quantized.emplace(x.id, scratch(gi, bytes)).first;
      quantize_in[gi] = true;
    } else {
      scratch_requests[static_cast<size_t>(it->second)].last = gi;
      quantize_in[gi] = false;
    }
    out.push_back(it->second);
  } else if (n.kind == OpKind::attention) {
    const graph::Tensor& q = g.tensor(n.args[0].tensor);
    k::AttentionShape shape{q.shape[0], q.shape[1], m.cache_shape().n_head_kv, q.shape[2],
                            m.cache_shape().n_ctx, m.cache_shape().n_ctx};
    k::AttentionOptionsGpu opt;
    opt.window = static_cast<int64_t>(number(n, ModKind::window, 0));
    // The long form's splits may be more than the one form's (a shorter granule): room for either.
    const size_t bytes = flash_prefill(n) ? k::plan_prefill_split(shape, opt).workspace_bytes
                         : p.long_from_ > 0
                             ? std::max(k::plan_attention_split(shape, opt).workspace_bytes,
                                        k::plan_attention_split(shape, opt, 0, p.long_granule_).workspace_bytes)
                             : k::plan_attention_split(shape, opt).workspace_bytes;
    out.push_back(scratch(gi, static_cast<int64_t>(bytes)));
    // One set of tickets serves every layer: each launch leaves them zero, and the launches run in
    // order on one stream (a programmatic launch waits for the kernel before it).
    if (!flash_prefill(n) && k::attention_ticket_bytes(shape) > p.tickets_.bytes()) {
      p.tickets_ = cuda::DeviceBuffer(k::attention_ticket_bytes(shape), "attention tickets");
      p.tickets_.zero();
    }
  } else if (n.kind == OpKind::mixture) {
    const graph::Tensor& x = g.tensor(n.args[2].tensor);
    const graph::Attr* ex = n.find(ModKind::experts);
    const graph::Tensor& gate = g.tensor(ex->args[0].tensor);
    const int64_t rows = x.shape[0], kk = static_cast<int64_t>(n.args[0].number);
    const int64_t n_expert = gate.shape[0], ff = gate.shape[1], embd = x.shape[1];
    // A chunk under an int8 contract grouped by expert (emit_mixture asks the same question): up's slot
    // holds the down product's [rows * k][embd] output, then the x^ / h^ slot and the grouping.
    const bool grouped =
        rows > kGemvRows &&
        k::moe_prefill_applies(weight_of(m, gate), weight_of(m, g.tensor(ex->args[1].tensor)),
                               weight_of(m, g.tensor(ex->args[2].tensor)), o.activations, kk);
    out.push_back(scratch(gi, rows * n_expert * 4));            // router logits
    out.push_back(scratch(gi, rows * kk * 4));                  // expert ids
    out.push_back(scratch(gi, rows * kk * 4));                  // expert weights
    out.push_back(scratch(gi, rows * kk * ff * 4));             // gate (grouped: h)
    out.push_back(scratch(gi, rows * kk * (grouped ? std::max(ff, embd) : ff) * 4));  // up (grouped: down's y)
    if (grouped) {
      out.push_back(scratch(gi, k::moe_prefill_quantized_bytes(rows, kk, embd, ff, o.activations)));
      out.push_back(scratch(gi, k::moe_group_bytes(rows, kk, n_expert)));
    } else {
      out.push_back(scratch(gi, std::max(gemv_quantized_bytes(std::min(rows, kGemvRows), embd, o.activations),
                                         gemv_quantized_bytes(std::min(rows, kGemvRows) * kk, ff, o.activations))));
      // The router's part sums (the wide router's, or the one-launch mixture's), and the counters: the
      // one launch's two grid-barrier words, then the wide router's count. One set serves every layer
      // (each launch leaves them zero; the launches run in order).
      const k::WeightMatrix router = weight_of(m, g.tensor(n.find(ModKind::routed_by)->args[0].tensor));
      out.push_back(scratch(gi, std::max({k::moe_single_part_bytes(router),
                                          k::moe_route_part_bytes(router, std::min(rows, kGemvRows)),
                                          k::route_epilogue_part_bytes(router.n_out)})));
      if (p.moe_sync_.bytes() == 0) {
        p.moe_sync_ = cuda::DeviceBuffer(16, "mixture counters");  // + 12: router_epilogue's count
        p.moe_sync_.zero();
      }
      // gate/up's counts of h's 32-value blocks written (moe_gate_up_swiglu's h_q), shared the same way.
      const size_t counts = static_cast<size_t>(k::moe_h_count_bytes(std::min(rows, kGemvRows), kk, ff));
      if (p.moe_h_counts_.bytes() < counts) {
        p.moe_h_counts_ = cuda::DeviceBuffer(counts, "mixture h counts");
        p.moe_h_counts_.zero();
      }
      // experts_by_slot: the slots' parts of out (slot 7), and its counts, shared the same way.
      out.push_back(scratch(gi, kk * embd * 4));
      const size_t slot_counts = static_cast<size_t>(k::moe_experts_count_bytes(kk));
      if (p.moe_slot_counts_.bytes() < slot_counts) {
        p.moe_slot_counts_ = cuda::DeviceBuffer(slot_counts, "mixture slot counts");
        p.moe_slot_counts_.zero();
      }
    }
  } else if (n.kind == OpKind::argmax) {
    const graph::Tensor& x = g.tensor(n.args[0].tensor);
    size_t bytes = k::argmax_workspace_bytes(x.shape[0], x.shape.back());
    if (o.last_row_outputs)  // the argmax may run on the last row alone, which splits a row
      bytes = std::max(bytes, k::argmax_workspace_bytes(1, x.shape.back()));
    if (bytes > p.workspace_.bytes()) p.workspace_ = cuda::DeviceBuffer(bytes, "argmax workspace");
  }
  return out;
}

// An attention node's decode launch: its shape, options, operands, splits and scratch (slot 0).
StepPlan::Builder::AttentionLaunch StepPlan::Builder::attention_launch(const graph::Node& n, int gi) const {
  const graph::Tensor& q = g.tensor(n.args[0].tensor);
  AttentionLaunch at;
  at.shape = k::AttentionShape{q.shape[0], q.shape[1], m.cache_shape().n_head_kv, q.shape[2], m.cache_shape().n_ctx,
                               m.cache_shape().n_ctx};
  at.opt.scale = static_cast<float>(number(n, ModKind::scaled_by, 0));
  at.opt.window = static_cast<int64_t>(number(n, ModKind::window, 0));
  at.opt.cap = static_cast<float>(number(n, ModKind::capped_at, 0));
  if (const graph::Attr* a = n.find(ModKind::sinks)) at.opt.sinks = ptr(a->args[0].tensor);
  at.out = ptr(n.output);
  at.q = ptr(q.id);
  at.kc = ptr(n.state[0]);
  at.vc = ptr(n.state[1]);
  at.seqs = input_ptr(lang::ValueKind::sequences);
  at.pos = n.find(ModKind::up_to) ? ptr(n.find(ModKind::up_to)->args[0].tensor) : input_ptr(lang::ValueKind::positions);
  at.ws = scratch_ptr(gi, 0);
  if (!flash_prefill(n)) {
    at.split = at.split_short = at.split_long = k::plan_attention_split(at.shape, at.opt);
    if (p.long_from_ > 0) {
      k::AttentionShape s = at.shape;
      s.max_visible = std::min(p.long_from_, s.n_ctx);
      at.split_short = k::plan_attention_split(s, at.opt);
      at.split_long = k::plan_attention_split(at.shape, at.opt, 0, p.long_granule_);
    }
    at.tickets = p.tickets_.ptr();  // the splits merged by the last of them (the long form: by a launch)
  }
  return at;
}

// What a decode attention does in the plan's range forms, for its launch's description.
std::string StepPlan::Builder::forms_note(const AttentionLaunch& at) const {
  if (p.long_from_ <= 0) return "";
  return fmt::format(" (below position {}: {} splits; from it: {} splits of {}-slot granules, merged by a launch of "
                     "their own)",
                     p.long_from_, at.split_short.n_split, at.split_long.n_split, at.split_long.split_len);
}

StepPlan::Builder::RopeParts StepPlan::Builder::rope_parts(const fuse::Group& grp) const {
  std::vector<const graph::Node*> ropes, norms;
  RopeParts r;
  for (int id : grp.nodes) {
    const graph::Node& x = g.nodes[static_cast<size_t>(id)];
    if (x.kind == OpKind::rope) ropes.push_back(&x);
    if (x.kind == OpKind::rms_norm) norms.push_back(&x);
    if (x.kind == OpKind::append_keys) r.append_k = &x;
    if (x.kind == OpKind::append_values) r.append_v = &x;
  }
  if (ropes.size() != 2 || !r.append_k || !r.append_v) internal_fail("a rope group without two ropes and two appends");
  // The rope whose result the key append reads is k's; the other is q's.
  r.k_rope_second = ropes[1]->output == r.append_k->args[0].tensor;
  r.rq = ropes[r.k_rope_second ? 0 : 1];
  r.rk = ropes[r.k_rope_second ? 1 : 0];
  // A rope's operand: its norm's when normed (the norm feeding q's rope is the one q's rope reads).
  for (const graph::Node* nn : norms) {
    if (nn->output == r.rq->args[0].tensor) r.norm_q = nn;
    if (nn->output == r.rk->args[0].tensor) r.norm_k = nn;
  }
  r.q_in = r.norm_q ? r.norm_q->args[0].tensor : r.rq->args[0].tensor;
  r.k_in = r.norm_k ? r.norm_k->args[0].tensor : r.rk->args[0].tensor;
  r.v = r.append_v->args[0].tensor;
  return r;
}

void StepPlan::Builder::emit(int gi) {
  if (ffn_split_downs.count(gi)) return;  // ffn_split: the feed-forward launch before ran this product
  if (short_form_by_attention.count(gi) && !emitting_long_only) {  // the attention's launch runs it in the short form
    const size_t first = p.launches_.size();
    emitting_long_only = true;
    emit(gi);
    emitting_long_only = false;
    long_form_only(first);
    return;
  }
  const fuse::Group& grp = p.fusion_.groups[static_cast<size_t>(gi)];
  const graph::Node& n = g.nodes[static_cast<size_t>(grp.nodes.front())];
  const CUdeviceptr positions = input_ptr(lang::ValueKind::positions);
  auto copy = [](CUdeviceptr dst, CUdeviceptr src, int64_t bytes, CUstream s) {
    cuda::copy_async(dst, src, static_cast<size_t>(bytes), s, "copying on the GPU");
  };
  auto rope_table = [&](const graph::Node& r, int64_t d) -> const k::RopeTable& {
    const int64_t n_rot = static_cast<int64_t>(number(r, ModKind::first_dims, static_cast<double>(d)));
    RopeFreqScaling scaling;
    if (const graph::Attr* a = r.find(ModKind::llama3_scaling)) {
      scaling.kind = "llama3";
      scaling.factor = a->args[0].number;
      scaling.low_freq_factor = a->args[1].number;
      scaling.high_freq_factor = a->args[2].number;
      scaling.original_context = static_cast<int64_t>(a->args[3].number);
    }
    if (const graph::Attr* a = r.find(ModKind::linear_scaling)) {
      scaling.kind = "linear";
      scaling.factor = a->args[0].number;
    }
    // The factors are read on the host: the table is computed once, at plan time.
    if (const graph::Attr* a = r.find(ModKind::freq_factors))
      scaling.freq_factors = m.host_vector(g.tensor(a->args[0].tensor).checkpoint_name);
    p.rope_tables_.push_back(std::make_unique<k::RopeTable>(
        k::make_rope_table(n_rot, number(r, ModKind::base, 10000.0), scaling)));
    return *p.rope_tables_.back();
  };
  // The int8 form this group writes in its epilogue (quantize_epilogue), or none.
  k::QuantizedOut qout;
  if (auto it = quantize_out.find(gi); it != quantize_out.end()) qout = {scratch_ptr(gi, it->second), o.activations};
  auto order_of = [](const graph::Node& r) { return r.find(ModKind::neox_order) ? RopeOrder::neox : RopeOrder::normal; };
  auto weight_ptr = [&](const graph::Node& node, ModKind kind) -> CUdeviceptr {
    const graph::Attr* a = node.find(kind);
    return a ? ptr(a->args[0].tensor) : 0;
  };

  if (grp.rule == "add_norm") {
    const graph::Node& norm = g.nodes[static_cast<size_t>(grp.nodes[1])];
    const graph::Tensor& a = g.tensor(n.args[0].tensor);
    const int64_t cols = a.shape.back(), rows = numel(a) / cols;
    const CUdeviceptr res = ptr(n.args[0].tensor), sum = ptr(n.output), y = ptr(n.args[1].tensor);
    const CUdeviceptr h = ptr(norm.output), w = weight_ptr(norm, ModKind::weighted_by);
    const float eps = static_cast<float>(number(norm, ModKind::epsilon, 1e-6));
    const bool copy_in = copy_first[static_cast<size_t>(gi)];
    add(fmt::format("add_rms_norm{} [{} x {}]", qout.q ? " quantized" : "", rows, cols), n, [=](CUstream s) {
      if (copy_in) copy(sum, res, rows * cols * 4, s);
      k::add_rms_norm(sum, h, y, w, rows, cols, eps, s, qout);
    });
    return;
  }
  if (grp.rule == "qk_norm_rope") {
    const graph::Node& rope = g.nodes[static_cast<size_t>(grp.nodes[1])];
    const graph::Tensor& x = g.tensor(n.args[0].tensor);
    const int64_t rows = x.shape[0], heads = x.shape[1], d = x.shape[2];
    const CUdeviceptr in = ptr(n.args[0].tensor), out = ptr(rope.output), w = weight_ptr(n, ModKind::weighted_by);
    const CUdeviceptr pos = ptr(rope.args[1].tensor);
    const float eps = static_cast<float>(number(n, ModKind::epsilon, 1e-6));
    const k::RopeTable& table = rope_table(rope, d);
    const RopeOrder order = order_of(rope);
    const bool copy_in = copy_first[static_cast<size_t>(gi)];
    add(fmt::format("head_rms_norm_rope [{} x {} x {}]", rows, heads, d), n, [=, &table](CUstream s) {
      if (copy_in) copy(out, in, rows * heads * d * 4, s);
      k::head_rms_norm_rope(out, pos, w, eps, rows, heads, d, table, order, s);
    });
    return;
  }

  if (grp.rule == "norm_prologue") {
    emit_norm_prologue(gi);
    return;
  }
  if (grp.rule == "rope_append" || grp.rule == "rope_attention") {
    const RopeParts parts = rope_parts(grp);
    const graph::Node& rq = *parts.rq;
    const graph::Node& rk = *parts.rk;
    const int ki = parts.k_rope_second ? 1 : 0;
    const graph::Node* appends[2] = {parts.append_k, parts.append_v};
    const std::vector<bool>& copies = rope_copies.at(gi);
    const bool norm = parts.norm_q != nullptr;
    const graph::Tensor& qt = g.tensor(rq.output);
    const graph::Tensor& kt = g.tensor(rk.output);
    const int64_t rows = qt.shape[0], hq = qt.shape[1], hk = kt.shape[1], d = qt.shape[2];
    const CUdeviceptr q = ptr(rq.output), k = ptr(rk.output), v = ptr(appends[1]->args[0].tensor);
    const CUdeviceptr q_in = ptr(parts.q_in), k_in = ptr(parts.k_in);
    const bool copy_q = copies[ki == 1 ? 0 : 1], copy_k = copies[static_cast<size_t>(ki)];
    const CUdeviceptr qw = norm ? weight_ptr(*parts.norm_q, ModKind::weighted_by) : 0;
    const CUdeviceptr kw = norm ? weight_ptr(*parts.norm_k, ModKind::weighted_by) : 0;
    const float eps = norm ? static_cast<float>(number(*parts.norm_q, ModKind::epsilon, 1e-6)) : 0.0f;
    const k::RopeTable& table = rope_table(rq, d);
    const RopeOrder order = order_of(rq);
    const CUdeviceptr kc = ptr(appends[0]->state[0]), vc = ptr(appends[1]->state[0]);
    const CUdeviceptr seqs = input_ptr(lang::ValueKind::sequences), pos = ptr(rq.args[1].tensor);
    const int64_t n_ctx = m.cache_shape().n_ctx;
    if (grp.rule == "rope_attention") {
      // The attention rotates what the product wrote (q_in, k_in) in its blocks; q and k are not written.
      const graph::Node& an = g.nodes[static_cast<size_t>(grp.nodes.back())];
      const AttentionLaunch at = attention_launch(an, gi);
      const k::AttentionRope rope{k_in, v, &table, order, norm, qw, kw, eps};
      if (const auto ah = attention_half_of_attention.find(gi); ah != attention_half_of_attention.end()) {
        // attention_half: below long_from this launch also runs the q/k/v group before it and o after it.
        const AttentionHalfTaken& t = ah->second;
        const fuse::Group& qkv = p.fusion_.groups[static_cast<size_t>(t.qkv_group)];
        const graph::Node& qnorm = g.nodes[static_cast<size_t>(qkv.nodes[1])];
        const graph::Node& on = g.nodes[static_cast<size_t>(p.fusion_.groups[static_cast<size_t>(t.o_group)].nodes[0])];
        const k::WeightMatrix ow = weight_of(m, g.tensor(on.args[1].tensor));
        k::AttentionHalf f;
        f.wq = t.wq;
        f.wk = t.wk;
        f.wv = t.wv;
        f.s_in = ffn_sum(t.sum_in);
        f.norm_w = weight_ptr(qnorm, ModKind::weighted_by);
        f.norm_eps = static_cast<float>(number(qnorm, ModKind::epsilon, 1e-6));
        f.s_out = half_sum(t.index);
        f.zero = half_sum(t.index + 1);
        f.k_cache = at.kc;
        f.v_cache = at.vc;
        f.sequences = at.seqs;
        f.positions = at.pos;
        const k::Activations a = o.activations;
        add(fmt::format("attention half in one launch below position {}: the residual's norm, q/k/v [{} x {}], the "
                        "attention with rope{} and the cache append [{} x {} x {}] split over a cluster of 8 blocks a kv "
                        "head, o [{} x {}] split along its input, into a fixed-point sum of its own; from it the "
                        "attention alone in {} splits{}{}",
                        p.long_from_, f.wq.n_out + f.wk.n_out + f.wv.n_out, f.wq.k, norm ? ", head norms" : "",
                        at.shape.rows, at.shape.n_head, at.shape.d, ow.n_out, ow.k, at.split.n_split, forms_note(at),
                        qout.q ? ", quantized" : ""),
            an, [=, form = &p.form_](CUstream s) {
              if (*form == StepForm::short_positions) {
                k::attention_half(at.shape, at.opt, rope, ow, a, f, s);
                return;
              }
              k::decode_attention(at.out, q_in, at.kc, at.vc, at.seqs, at.pos, at.shape, at.opt, at.split_in(*form),
                                  at.ws, s, at.tickets_in(*form), qout, &rope);
            });
        return;
      }
      if (const auto os = o_split_of_attention.find(gi); os != o_split_of_attention.end()) {
        // o_split: below long_from this launch also runs o into the residual's fixed-point sum.
        const graph::Node& on = g.nodes[static_cast<size_t>(p.fusion_.groups[static_cast<size_t>(os->second.o_group)].nodes[0])];
        const k::WeightMatrix ow = weight_of(m, g.tensor(on.args[1].tensor));
        k::AttentionOSplit f;
        f.q = q_in;
        f.k_cache = at.kc;
        f.v_cache = at.vc;
        f.sequences = at.seqs;
        f.positions = at.pos;
        f.s_io = ffn_sum(os->second.sum);
        const k::Activations a = o.activations;
        const bool cluster = os->second.cluster;
        add(fmt::format("attention with rope{} and the cache append [{} x {} x {}] over {} slots, below position {} with "
                        "o [{} x {}] split along its input into the residual's fixed-point sum ({}); "
                        "from it in {} splits{}{}",
                        norm ? ", head norms" : "", at.shape.rows, at.shape.n_head, at.shape.d, at.shape.n_ctx,
                        p.long_from_, ow.n_out, ow.k,
                        cluster ? std::string("the attention split over a cluster of 8 blocks a kv head")
                                : fmt::format("{} blocks a kv head", k::o_split_blocks_per_head(at.shape, ow)),
                        at.split.n_split, forms_note(at), qout.q ? ", quantized" : ""),
            an, [=, form = &p.form_](CUstream s) {
              if (*form == StepForm::short_positions) {
                if (cluster)
                  k::attention_o_cluster(at.shape, at.opt, rope, ow, a, f, s);
                else
                  k::attention_o_split(at.shape, at.opt, rope, ow, a, f, s);
                return;
              }
              k::decode_attention(at.out, q_in, at.kc, at.vc, at.seqs, at.pos, at.shape, at.opt, at.split_in(*form),
                                  at.ws, s, at.tickets_in(*form), qout, &rope);
            });
        return;
      }
      add(fmt::format("attention with rope{} and the cache append [{} x {} x {}] over {} slots in {} splits{}{}",
                      norm ? ", head norms" : "", at.shape.rows, at.shape.n_head, at.shape.d, at.shape.n_ctx,
                      at.split.n_split, forms_note(at), qout.q ? ", quantized" : ""),
          an, [=, form = &p.form_](CUstream s) {
            k::decode_attention(at.out, q_in, at.kc, at.vc, at.seqs, at.pos, at.shape, at.opt, at.split_in(*form),
                                at.ws, s, at.tickets_in(*form), qout, &rope);
          });
      return;
    }
    add(fmt::format("rope{} and cache append [{} x {}+{} x {}]", norm ? " with head norms" : "", rows, hq, hk, d), rq,
        [=, &table](CUstream s) {
          if (copy_q) copy(q, q_in, rows * hq * d * 4, s);
          if (copy_k) copy(k, k_in, rows * hk * d * 4, s);
          k::rope_append(q, k, v, pos, seqs, rows, hq, hk, d, table, order, norm, qw, kw, eps, kc, vc, n_ctx, s);
        });
    return;
  }
  if (grp.rule == "merged_products" || grp.rule == "gate_up_swiglu") {
    emit_merged(gi);
    return;
  }
  if (grp.rule == "kv_append") {
    const graph::Node& v = g.nodes[static_cast<size_t>(grp.nodes[1])];
    const graph::Tensor& kx = g.tensor(n.args[0].tensor);
    const graph::Tensor& vx = g.tensor(v.args[0].tensor);
    const CUdeviceptr kc = ptr(n.state[0]), vc = ptr(v.state[0]), kp = ptr(kx.id), vp = ptr(vx.id);
    const CUdeviceptr seqs = input_ptr(lang::ValueKind::sequences);
    const int64_t rows = kx.shape[0], k_slot = numel(kx) / rows, v_slot = numel(vx) / rows;
    const int64_t n_ctx = m.cache_shape().n_ctx;
    add(fmt::format("cache_append keys and values [{} x {}]", rows, k_slot), n,
        [=](CUstream s) { k::cache_append(kc, vc, kp, vp, seqs, positions, rows, n_ctx, k_slot, v_slot, s); });
    return;
  }

  if (grp.rule == "elementwise_run" || (grp.rule.empty() && qout.q && fuse::is_elementwise(n.kind))) {
    // One kernel for the run (or for a single op whose output is quantized in its epilogue).
    const graph::Tensor& x = g.tensor(n.args[0].tensor);
    const graph::Tensor& result = g.tensor(g.nodes[static_cast<size_t>(grp.nodes.back())].output);
    const int64_t count = numel(x);
    std::vector<k::ElemStep> steps;
    int value = x.id;
    for (int id : grp.nodes) {
      const graph::Node& e = g.nodes[static_cast<size_t>(id)];
      steps.push_back(elem_step(e, value));
      value = e.output;
    }
    const CUdeviceptr xp = ptr(x.id), out = ptr(result.id);
    const int64_t row = result.shape.back();
    add(fmt::format("elementwise run of {}{} [{}]", steps.size(), qout.q ? " quantized" : "", count), n,
        [=](CUstream s) { k::elementwise_run(out, xp, count, steps, s, qout, row); });
    return;
  }

  switch (n.kind) {
    case OpKind::split_heads:
    case OpKind::join_heads:
      return;  // views: no kernel
    case OpKind::gather: {
      const k::WeightMatrix table = weight_of(m, g.tensor(n.args[0].tensor));
      const graph::Tensor& ids = g.tensor(n.args[1].tensor);
      const CUdeviceptr idp = ptr(ids.id), out = ptr(n.output);
      const int64_t count = numel(ids);
      add(fmt::format("gather {} [{} rows of {}]", ggml_type_name(table.type), count, table.k), n,
          [=](CUstream s) { k::gather_rows(table, idp, count, out, s); });
      return;
    }
    case OpKind::product:
      emit_product(n, gi, quantize_in.count(gi) && quantize_in.at(gi));
      return;
    case OpKind::add:
    case OpKind::subtract:
    case OpKind::multiply:
    case OpKind::divide:
    case OpKind::swiglu:
    case OpKind::scale:
    case OpKind::silu:
    case OpKind::gelu:
    case OpKind::sigmoid:
    case OpKind::relu:
    case OpKind::soft_cap: {
      // One op alone: the vectorized single-op kernels (a run, or an op whose output is quantized,
      // took elementwise_run above).
      const k::ElemStep st = elem_step(n, n.args[0].tensor);
      const graph::Tensor& x = g.tensor(n.args[0].tensor);
      const int64_t count = numel(x);
      const CUdeviceptr xp = ptr(x.id), out = ptr(n.output), bp = st.b;
      const int64_t period = st.period;
      add(fmt::format("{} [{}]", lang::op_info(n.kind).name, count), n, [=](CUstream s) {
        if (st.unary)
          k::elementwise_unary(static_cast<k::ElemUnary>(st.code), out, xp, count, st.param, s);
        else
          k::elementwise_binary(static_cast<k::ElemBinary>(st.code), out, xp, bp, count, period, s);
      });
      return;
    }
    case OpKind::rms_norm: {
      const graph::Tensor& x = g.tensor(n.args[0].tensor);
      const CUdeviceptr xp = ptr(x.id), h = ptr(n.output), w = weight_ptr(n, ModKind::weighted_by);
      const float eps = static_cast<float>(number(n, ModKind::epsilon, 1e-6));
      if (n.each_head) {
        const int64_t rows = x.shape[0], heads = x.shape[1], d = x.shape[2];
        add(fmt::format("head_rms_norm [{} x {} x {}]", rows, heads, d), n,
            [=](CUstream s) { k::head_rms_norm(h, xp, w, rows, heads, d, eps, s); });
      } else {
        const int64_t cols = x.shape.back(), rows = numel(x) / cols;
        add(fmt::format("rms_norm{} [{} x {}]", qout.q ? " quantized" : "", rows, cols), n,
            [=](CUstream s) { k::rms_norm(h, xp, w, rows, cols, eps, s, qout); });
      }
      return;
    }
    case OpKind::rope: {
      const graph::Tensor& x = g.tensor(n.args[0].tensor);
      const int64_t rows = x.shape[0], heads = x.shape[1], d = x.shape[2];
      const CUdeviceptr in = ptr(x.id), out = ptr(n.output), pos = ptr(n.args[1].tensor);
      const k::RopeTable& table = rope_table(n, d);
      const RopeOrder order = order_of(n);
      const bool copy_in = copy_first[static_cast<size_t>(gi)];
      add(fmt::format("rope [{} x {} x {}]", rows, heads, d), n, [=, &table](CUstream s) {
        if (copy_in) copy(out, in, rows * heads * d * 4, s);
        k::rope(out, pos, rows, heads, d, table, order, s);
      });
      return;
    }
    case OpKind::append_keys:
    case OpKind::append_values: {
      const graph::Tensor& x = g.tensor(n.args[0].tensor);
      const CUdeviceptr cache = ptr(n.state[0]), xp = ptr(x.id);
      const CUdeviceptr seqs = input_ptr(lang::ValueKind::sequences);
      const int64_t rows = x.shape[0], slot = numel(x) / rows, n_ctx = m.cache_shape().n_ctx;
      add(fmt::format("cache_append {} [{} x {}]", n.kind == OpKind::append_keys ? "keys" : "values", rows, slot), n,
          [=](CUstream s) { k::cache_append(cache, 0, xp, 0, seqs, positions, rows, n_ctx, slot, 0, s); });
      return;
    }
    case OpKind::attention: {
      const AttentionLaunch at = attention_launch(n, gi);
      if (flash_prefill(n)) {
        const k::PrefillSplit split = k::plan_prefill_split(at.shape, at.opt);
        add(fmt::format("prefill attention [{} x {} x {}] over {} slots in {} splits{}", at.shape.rows, at.shape.n_head,
                        at.shape.d, at.shape.n_ctx, split.n_split, qout.q ? ", then quantized" : ""), n,
            [=](CUstream s) {
              k::prefill_attention(at.out, at.q, at.kc, at.vc, at.seqs, at.pos, at.shape, at.opt, split, at.ws, s);
              if (qout.q) k::quantize_activations(at.out, at.shape.rows, at.shape.n_head * at.shape.d, qout.a, qout.q, s);
            });
        return;
      }
      add(fmt::format("attention [{} x {} x {}] over {} slots in {} splits{}{}", at.shape.rows, at.shape.n_head,
                      at.shape.d, at.shape.n_ctx, at.split.n_split, forms_note(at), qout.q ? ", quantized" : ""),
          n, [=, form = &p.form_](CUstream s) {
            k::decode_attention(at.out, at.q, at.kc, at.vc, at.seqs, at.pos, at.shape, at.opt, at.split_in(*form),
                                at.ws, s, at.tickets_in(*form), qout);
          });
      return;
    }
    case OpKind::argmax: {
      const graph::Tensor& x = g.tensor(n.args[0].tensor);
      const int64_t cols = x.shape.back(), rows = numel(x) / cols;
      const CUdeviceptr xp = ptr(x.id), out = ptr(n.output), ws = p.workspace_.ptr();
      if (o.last_row_outputs && rows > 1 && g.tensor(n.output).role == graph::Role::output) {
        const CUdeviceptr xl = xp + static_cast<CUdeviceptr>((rows - 1) * cols * 4), ol = out + static_cast<CUdeviceptr>((rows - 1) * 4);
        add(fmt::format("argmax of the last row [{} x {}]", rows, cols), n,
            [=](CUstream s) { k::argmax(ol, xl, 1, cols, ws, s); });
        return;
      }
      add(fmt::format("argmax [{} x {}]", rows, cols), n, [=](CUstream s) { k::argmax(out, xp, rows, cols, ws, s); });
      return;
    }
    case OpKind::mixture:
      emit_mixture(gi);
      return;
    default:
      no_kernel(n, fmt::format("the op '{}' has no kernel in the CUDA lane", lang::op_info(n.kind).name));
  }
}

}  // namespace lathe::plan
