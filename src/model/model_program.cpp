// Binding a checkpoint to its architecture's program: the built-in program text, the parameters from
// the spec, and the refusals for what a checkpoint needs but the program does not say.
#include "model/model_program.h"

#include "base/error.h"
#include "lang/program.h"
#include "model/embedded_programs.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>

namespace lathe {
namespace {

// Calls visit on every op of the program, loop bodies included.
void for_each_op(const std::vector<lang::Statement>& body, const std::function<void(const lang::Op&)>& visit) {
  for (const lang::Statement& s : body) {
    if (s.kind == lang::Statement::Kind::loop) for_each_op(s.body, visit);
    else visit(s.op);
  }
}

// The checkpoint tensors the program's constants name, `{L}` replaced by every layer of its loop.
std::set<std::string> tensors_read(const lang::Program& p, const lang::Bindings& bindings) {
  std::map<std::string, int64_t> loop_counts;
  for (const lang::Statement& s : p.body) {
    if (s.kind != lang::Statement::Kind::loop) continue;
    double n = 1;
    for (const lang::Factor& f : s.loop_count.factors) n *= f.is_name ? bindings.at(f.name) : f.number;
    loop_counts[s.loop_var] = static_cast<int64_t>(n);
  }
  std::set<std::string> names;
  auto add = [&](const std::string& name) {
    size_t open = name.find('{'), close = name.find('}');
    if (open == std::string::npos) {
      names.insert(name);
      return;
    }
    std::string var = name.substr(open + 1, close - open - 1);
    for (int64_t l = 0; l < loop_counts[var]; ++l)
      names.insert(name.substr(0, open) + std::to_string(l) + name.substr(close + 1));
  };
  for (const lang::ConstantDecl& c : p.constants) {
    add(c.name);
    if (!c.fallback.empty()) add(c.fallback);
  }
  return names;
}

void check_program_fits(const GgufFile& file, const ModelSpec& spec, const lang::Program& p,
                        const lang::Bindings& bindings) {
  const std::string what = fmt::format("{}: the {} program (models/{}.lathe)", file.path(), spec.arch_name,
                                       spec.arch_name);
  bool declares_n_rot = false;
  for (const lang::Name& n : p.parameters) declares_n_rot |= n.name == "n_rot";
  if (spec.n_rot != spec.head_dim && !declares_n_rot)
    fail("{} rotates whole heads, but the checkpoint rotates {} of {} dims (rope.dimension_count)", what,
         spec.n_rot, spec.head_dim);
  for_each_op(p.body, [&](const lang::Op& op) {
    if (op.kind == lang::OpKind::rope) {
      bool neox = op.find(lang::ModKind::neox_order) != nullptr;
      if (neox != (spec.rope_style == RopeStyle::neox))
        fail("{} rotates in {} order, but {} checkpoints rotate in {} order", what, neox ? "neox" : "normal",
             spec.arch_name, neox ? "normal" : "neox");
      if (spec.rope_scaling.kind == "llama3" && !op.find(lang::ModKind::llama3_scaling))
        fail("{} has no Llama 3 frequency scaling, which the checkpoint asks for (rope.scaling.type)", what);
      if (spec.rope_scaling.kind == "linear" && !op.find(lang::ModKind::linear_scaling))
        fail("{} has no linear frequency scaling, which the checkpoint asks for (rope.scaling.type)", what);
    }
    if (op.kind == lang::OpKind::mixture) {
      bool renormalized = op.find(lang::ModKind::renormalized) != nullptr;
      if (renormalized != spec.expert_norm_topk)
        fail("{} {} the experts' weights, but the checkpoint says expert_weights_norm = {}", what,
             renormalized ? "renormalizes" : "does not renormalize", spec.expert_norm_topk);
    }
  });
  // Llama 3 scaling twice (once from metadata, once baked into the factors) would rotate wrongly.
  if (file.find_tensor("rope_freqs.weight") && spec.rope_scaling.kind != "none")
    fail("{}: the checkpoint has both rope frequency factors (rope_freqs.weight) and {} frequency scaling "
         "(rope.scaling.type); Lathe will not apply the scaling twice", file.path(), spec.rope_scaling.kind);
  // A tensor the program does not read is a part of the model it would leave out (a bias, or rope
  // frequency factors for a program with no `with frequency factors`): refused rather than ignored.
  std::set<std::string> read = tensors_read(p, bindings);
  for (const GgufTensor& t : file.tensors())
    if (!read.count(t.name)) fail("{} does not read the checkpoint's tensor '{}'", what, t.name);
}

}  // namespace

lang::Program program_for_architecture(std::string_view arch_name) {
  std::string known;
  for (const EmbeddedProgram& e : embedded_programs()) {
    if (e.name == arch_name) return lang::parse_program(e.text, std::string(e.file_name));
    known += (known.empty() ? "" : ", ") + std::string(e.name);
  }
  fail("Lathe has no program for architecture '{}' (it has programs for {})", arch_name, known);
}

lang::Bindings spec_bindings(const ModelSpec& spec, int64_t n_ctx) {
  lang::Bindings b = {
      {"n_vocab", spec.n_vocab}, {"n_embd", spec.n_embd},       {"n_layer", spec.n_layer},
      {"n_head", spec.n_head},   {"n_head_kv", spec.n_head_kv}, {"head_dim", spec.head_dim},
      {"n_rot", spec.n_rot},     {"n_rot_pairs", spec.n_rot / 2}, {"n_ctx", n_ctx},  {"eps", spec.norm_eps},
      {"rope_base", spec.rope_base},
  };
  auto count = [&](const char* name, int64_t v) {
    if (v > 0) b[name] = static_cast<double>(v);
  };
  count("n_ff", spec.n_ff);
  count("n_expert", spec.n_expert);
  count("n_expert_used", spec.n_expert_used);
  count("n_ff_expert", spec.n_ff_expert);
  // With no scaling the factor is 1, which makes Llama 3 scaling the identity.
  const RopeScaling& s = spec.rope_scaling;
  const bool scaled = s.kind != "none";
  b["rope_scale_factor"] = scaled ? s.factor : 1.0;
  b["rope_low_freq_factor"] = s.low_freq_factor;
  b["rope_high_freq_factor"] = s.high_freq_factor;
  b["rope_original_context"] = static_cast<double>(scaled ? s.original_context : std::max<int64_t>(spec.n_ctx_train, 1));
  return b;
}

ModelProgram model_program(const GgufFile& file, const ModelSpec& spec, int64_t n_ctx,
                           const std::string& program_file) {
  if (n_ctx < 1) fail("the context length is {}; it is at least 1", n_ctx);
  ModelProgram out{program_file.empty() ? program_for_architecture(spec.arch_name) : lang::parse_program_file(program_file),
                   spec_bindings(spec, n_ctx)};
  lang::check(out.program, &out.bindings);
  check_program_fits(file, spec, out.program, out.bindings);
  return out;
}

}  // namespace lathe
