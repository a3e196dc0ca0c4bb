#include "emit/record.h"

#include "emit/kernel_params.h"
#include "kernels/gemv_launch.h"
#include "kernels/library.h"
#include "kernels/tensor_map.h"
#include "lang/program.h"
#include "model/model_program.h"
#include "plan/device_model.h"
#include "plan/step_plan.h"
#include "runtime/cpu_engine.h"
#include "runtime/gpu_engine.h"
#include "runtime/tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

namespace lathe::emit {
namespace {

BufferRef locate(const cuda::Recorder& r, CUdeviceptr p) {
  BufferRef ref;
  size_t b = 0, o = 0;
  if (!r.locate(p, &b, &o)) internal_fail("a pointer {:#x} the recording did not give out", p);
  ref.buffer = static_cast<int>(b);
  ref.offset = o;
  return ref;
}

EmitOp convert(const cuda::Recorder& r, const cuda::RecordedOp& op, const std::string& what) {
  EmitOp out;
  out.what = what;
  if (op.kind == cuda::RecordedOp::Kind::copy) {
    out.copy = true;
    out.dst = locate(r, op.dst);
    out.src = locate(r, op.src);
    out.bytes = op.bytes;
    return out;
  }
  out.kernel = op.kernel;
  out.grid = op.grid;
  out.block = op.block;
  out.shared_bytes = op.shared_bytes;
  for (const std::vector<unsigned char>& bytes : op.args) {
    EmitArg a;
    a.bytes = static_cast<uint32_t>(bytes.size());
    if (kernels::TensorMapArgs m; kernels::recorded_tensor_map(bytes.data(), bytes.size(), &m)) {
      a.tensor_map = true;
      a.pointer = locate(r, m.base);
      a.map = {m.type, m.inner, m.outer, m.stride, m.box_inner, m.box_outer, m.swizzle_128b, m.promotion};
      out.args.push_back(a);
      continue;
    }
    if (bytes.size() > 16) internal_fail("{}: a parameter of {} bytes", op.kernel, bytes.size());
    std::memcpy(a.literal, bytes.data(), bytes.size());
    if (bytes.size() == 8 && cuda::Recorder::is_virtual(a.literal[0])) {
      if (size_t b = 0, o = 0; !r.locate(a.literal[0], &b, &o))
        internal_fail("{} ({}): parameter {} is a pointer {:#x} the recording did not give out", op.kernel, what,
                      out.args.size(), a.literal[0]);
      a.pointer = locate(r, a.literal[0]);
      a.literal[0] = 0;
    }
    out.args.push_back(a);
  }
  return out;
}

}  // namespace

std::vector<int64_t> step_rows(const EmitOptions& options) {
  std::set<int64_t> rows = {1};
  if (options.max_chunk < 1) fail("--max-chunk must be at least 1");
  if (!options.prompt_tokens.empty()) {
    for (int64_t c : prompt_chunks(static_cast<int64_t>(options.prompt_tokens.size()), options.max_chunk)) rows.insert(c);
  } else {
    for (int64_t c = 2; c <= options.max_chunk; c *= 2) rows.insert(c);
  }
  return {rows.begin(), rows.end()};
}

RecordedModel record_model(const GgufFile& file, const EmitOptions& options) {
  if (options.n_ctx <= 0) fail("--ctx must be positive");
  const ModelSpec spec = read_model_spec(file);
  const ModelProgram mp = model_program(file, spec, options.n_ctx);
  fuse::check_rule_names(options.held);
  for (int32_t t : options.prompt_tokens)
    if (t < 0 || t >= spec.n_vocab) fail("prompt token {} is outside the vocabulary of {} tokens", t, spec.n_vocab);
  if (static_cast<int64_t>(options.prompt_tokens.size()) > options.n_ctx)
    fail("the prompt is {} tokens, longer than the context of {} (--ctx)", options.prompt_tokens.size(), options.n_ctx);

  RecordedModel out;
  out.architecture = file.find_string("general.architecture").value_or("");
  out.program_identity = lang::identity(mp.program);
  out.n_vocab = spec.n_vocab;
  try {
    const Tokenizer tok = Tokenizer::from_gguf(file);
    for (int32_t id = 0; id < tok.n_vocab(); ++id)
      if (tok.is_end_of_generation(id)) out.end_tokens.push_back(id);
  } catch (const UserError&) {
    // No usable tokenizer: the program generates its full count.
  }

  const std::map<std::string, std::vector<KernelParam>> params = kernel_params(kernels::library_source());
  cuda::DeviceInfo device;
  device.name = "virtual";
  device.cc_major = options.cc_major;
  device.cc_minor = options.cc_minor;
  device.sm_count = options.sm_count;
  device.shared_optin_bytes = options.shared_optin_bytes;
  device.total_memory = device.free_memory = size_t{1} << 50;
  cuda::Recorder rec(device, [&params](const std::string& kernel) {
    auto it = params.find(kernel);
    if (it == params.end()) internal_fail("the plan launches '{}', which is not in the kernel library", kernel);
    std::vector<size_t> sizes;
    for (const KernelParam& p : it->second) sizes.push_back(p.bytes);
    return sizes;
  });

  const graph::Graph decode = lift_cut(file, mp, 1);
  std::set<std::string> constants;
  for (const graph::Tensor& t : decode.tensors)
    if (t.role == graph::Role::constant) constants.insert(t.checkpoint_name);
  const plan::CacheShape caches{spec.n_layer, 1, options.n_ctx, spec.n_head_kv, spec.head_dim};
  plan::DeviceModel model(file, constants, caches, 0);
  std::vector<std::unique_ptr<plan::StepPlan>> plans;  // alive until the buffers are read
  plan::PlanOptions po;
  po.activations = options.activations;
  po.held = options.held;
  if (options.long_from < 0) fail("--merge-from must be at least 0, not {}", options.long_from);
  for (int64_t rows : step_rows(options)) {
    const graph::Graph g = rows == 1 ? decode : lift_cut(file, mp, rows);
    // The program reads a chunk's last row of logits only: the prompt variant, as `lathe run` takes.
    po.last_row_outputs = rows > 1;
    po.long_from = rows == 1 ? options.long_from : 0;
    plans.push_back(std::make_unique<plan::StepPlan>(g, model, po));
    plan::StepPlan& p = *plans.back();
    // The decode step in its forms by position where the plan has them (the same buffers, other launches).
    const bool two = rows == 1 && p.form_for(options.long_from) == plan::StepForm::long_positions;
    for (const plan::StepForm form : two ? std::vector<plan::StepForm>{plan::StepForm::short_positions,
                                                                       plan::StepForm::long_positions}
                                         : std::vector<plan::StepForm>{plan::StepForm::any_position}) {
      if (two) p.set_form(form);
      EmitStep step;
      step.rows = rows;
      step.identity = g.program_identity;
      step.from = form == plan::StepForm::long_positions ? options.long_from : 0;
      step.tokens = locate(rec, p.tokens_ptr());
      step.positions = locate(rec, p.positions_ptr());
      step.sequences = locate(rec, p.sequences_ptr());
      step.logits = locate(rec, p.output_ptr("logits"));
      step.next = locate(rec, p.output_ptr("next"));
      for (const plan::Launch& l : p.launches()) {
        rec.clear_ops();
        l.run(nullptr);
        for (const cuda::RecordedOp& op : rec.ops()) step.ops.push_back(convert(rec, op, l.what));
      }
      out.steps.push_back(std::move(step));
    }
  }

  for (const cuda::RecordedBuffer& b : rec.buffers()) {
    EmitBuffer eb;
    eb.bytes = b.bytes;
    eb.what = b.what;
    out.buffers.push_back(std::move(eb));
  }
  // The re-laid constants (ffn_split's): formed by the program at its load from the checkpoint's bytes.
  for (const auto& p : plans)
    for (const plan::Relay& r : p->relays()) {
      const BufferRef ref = locate(rec, r.ptr);
      if (ref.offset != 0) internal_fail("the re-laid '{}' does not start its buffer", r.weight);
      EmitBuffer& b = out.buffers[static_cast<size_t>(ref.buffer)];
      b.relaid = true;
      b.relay_weight = r.weight;
      b.relay_experts = r.n_expert;
      b.relay_e = r.e;
      b.relay_f = r.f;
      b.relay_group = r.group;
    }
  for (const std::string& name : constants) {
    const plan::DeviceWeight& w = model.weight(name);
    if (w.pinned_host) internal_fail("'{}' left the virtual device", name);
    const BufferRef ref = locate(rec, w.ptr);
    if (ref.offset != 0) internal_fail("'{}' does not start its buffer", name);
    EmitBuffer& b = out.buffers[static_cast<size_t>(ref.buffer)];
    b.weight = name;
    b.as_f32 = w.dims.size() == 1;
    const GgmlType t = file.tensor(name).type;
    if (b.as_f32 && t != GgmlType::F32 && t != GgmlType::F16 && t != GgmlType::BF16)
      fail("the vector '{}' is stored as {}; the standalone program converts only F32, F16 and BF16 vectors",
           name, ggml_type_name(t));
  }
  for (const cuda::RecordedWrite& w : rec.writes()) {
    EmitBuffer& b = out.buffers.at(w.buffer);
    // weights come from the file, re-laid constants from its bytes; every other buffer starts zeroed
    if (!b.weight.empty() || b.relaid || w.zero) continue;
    if (!w.kept) internal_fail("an upload of {} bytes to '{}' was not kept", w.bytes, b.what);
    auto it = std::find(out.blobs.begin(), out.blobs.end(), w.data);
    if (it == out.blobs.end()) it = out.blobs.insert(out.blobs.end(), w.data);
    b.fills.push_back({w.offset, static_cast<int>(it - out.blobs.begin())});
  }
  return out;
}

}  // namespace lathe::emit
