#include "model/model_spec.h"

#include "gguf/block_format.h"

#include <fmt/ranges.h>

namespace lathe {
namespace {

class SpecReader {
 public:
  SpecReader(const GgufFile& file, std::string arch) : file_(file), arch_(std::move(arch)) {}

  [[noreturn]] void error(const std::string& what) const {
    fail("{}: {} checkpoint: {}", file_.path(), arch_, what);
  }

  std::string key(const std::string& suffix) const { return arch_ + "." + suffix; }

  int64_t positive(const std::string& suffix) const {
    const std::string k = key(suffix);
    if (!file_.has(k)) error(fmt::format("missing metadata key '{}'", k));
    const int64_t v = file_.get_int(k);
    if (v <= 0) error(fmt::format("metadata '{}' = {} must be positive", k, v));
    return v;
  }

  int64_t positive_or(const std::string& suffix, int64_t fallback) const {
    return file_.has(key(suffix)) ? positive(suffix) : fallback;
  }

  double number_or(const std::string& suffix, double fallback) const {
    const std::string k = key(suffix);
    return file_.has(k) ? file_.get_float(k) : fallback;
  }

  // The tensor must exist with exactly these dims (ggml order).
  void expect(const std::string& name, std::vector<int64_t> dims) const {
    const GgufTensor* t = file_.find_tensor(name);
    if (!t) error(fmt::format("missing tensor '{}' (expected shape [{}])", name, fmt::join(dims, ", ")));
    if (t->dims != dims)
      error(fmt::format("tensor '{}' has shape {}, expected [{}]", name, t->shape_string(),
                        fmt::join(dims, ", ")));
  }

  bool present(const std::string& name) const { return file_.find_tensor(name) != nullptr; }

 private:
  const GgufFile& file_;
  std::string arch_;
};

void check_tensors(const SpecReader& r, const ModelSpec& s) {
  const int64_t q_width = s.n_head * s.head_dim, kv_width = s.n_head_kv * s.head_dim;
  r.expect("token_embd.weight", {s.n_embd, s.n_vocab});
  r.expect("output_norm.weight", {s.n_embd});
  if (!s.tied_output) r.expect("output.weight", {s.n_embd, s.n_vocab});
  for (int64_t l = 0; l < s.n_layer; ++l) {
    const std::string b = fmt::format("blk.{}.", l);
    r.expect(b + "attn_norm.weight", {s.n_embd});
    r.expect(b + "attn_q.weight", {s.n_embd, q_width});
    r.expect(b + "attn_k.weight", {s.n_embd, kv_width});
    r.expect(b + "attn_v.weight", {s.n_embd, kv_width});
    r.expect(b + "attn_output.weight", {q_width, s.n_embd});
    if (s.qkv_bias) {
      r.expect(b + "attn_q.bias", {q_width});
      r.expect(b + "attn_k.bias", {kv_width});
      r.expect(b + "attn_v.bias", {kv_width});
    }
    if (s.qk_norm) {
      r.expect(b + "attn_q_norm.weight", {s.head_dim});
      r.expect(b + "attn_k_norm.weight", {s.head_dim});
    }
    r.expect(b + "ffn_norm.weight", {s.n_embd});
    if (s.n_expert > 0) {
      r.expect(b + "ffn_gate_inp.weight", {s.n_embd, s.n_expert});
      r.expect(b + "ffn_gate_exps.weight", {s.n_embd, s.n_ff_expert, s.n_expert});
      r.expect(b + "ffn_up_exps.weight", {s.n_embd, s.n_ff_expert, s.n_expert});
      r.expect(b + "ffn_down_exps.weight", {s.n_ff_expert, s.n_embd, s.n_expert});
    } else {
      r.expect(b + "ffn_gate.weight", {s.n_embd, s.n_ff});
      r.expect(b + "ffn_up.weight", {s.n_embd, s.n_ff});
      r.expect(b + "ffn_down.weight", {s.n_ff, s.n_embd});
    }
  }
}

}  // namespace

std::string_view arch_name(Arch arch) {
  switch (arch) {
    case Arch::llama: return "llama";
    case Arch::qwen2: return "qwen2";
    case Arch::qwen3: return "qwen3";
    case Arch::qwen3moe: return "qwen3moe";
  }
  return "?";
}

ModelSpec read_model_spec(const GgufFile& file) {
  if (!file.has("general.architecture"))
    fail("{}: missing metadata key 'general.architecture'", file.path());
  ModelSpec s;
  s.arch_name = file.get_string("general.architecture");
  if (s.arch_name == "llama") s.arch = Arch::llama;
  else if (s.arch_name == "qwen2") s.arch = Arch::qwen2;
  else if (s.arch_name == "qwen3") s.arch = Arch::qwen3;
  else if (s.arch_name == "qwen3moe") s.arch = Arch::qwen3moe;
  else
    fail("{}: unknown architecture '{}' (Lathe reads llama, qwen2, qwen3, qwen3moe)", file.path(),
         s.arch_name);
  SpecReader r(file, s.arch_name);
  s.name = file.find_string("general.name").value_or("");
  s.n_embd = r.positive("embedding_length");
  s.n_layer = r.positive("block_count");
  s.n_head = r.positive("attention.head_count");
  s.n_head_kv = r.positive_or("attention.head_count_kv", s.n_head);
  s.n_ctx_train = r.positive("context_length");
  if (s.n_head % s.n_head_kv != 0)
    r.error(fmt::format("attention.head_count {} is not a multiple of attention.head_count_kv {}",
                        s.n_head, s.n_head_kv));
  if (!file.has(r.key("attention.key_length")) && s.n_embd % s.n_head != 0)
    r.error(fmt::format("embedding_length {} is not a multiple of attention.head_count {}", s.n_embd,
                        s.n_head));
  s.head_dim = r.positive_or("attention.key_length", s.n_embd / s.n_head);
  const int64_t v_len = r.positive_or("attention.value_length", s.head_dim);
  if (v_len != s.head_dim)
    r.error(fmt::format("attention.value_length {} differs from attention.key_length {}", v_len,
                        s.head_dim));
  s.n_rot = r.positive_or("rope.dimension_count", s.head_dim);
  if (s.n_rot > s.head_dim || s.n_rot % 2 != 0)
    r.error(fmt::format("rope.dimension_count {} must be even and at most the head width {}", s.n_rot,
                        s.head_dim));
  s.rope_base = r.number_or("rope.freq_base", 10000.0);
  s.norm_eps = r.number_or("attention.layer_norm_rms_epsilon", 1e-5);
  if (!(s.rope_base > 0)) r.error(fmt::format("rope.freq_base {} must be positive", s.rope_base));
  if (!(s.norm_eps > 0)) r.error("attention.layer_norm_rms_epsilon must be positive");
  s.rope_style = s.arch == Arch::llama ? RopeStyle::normal : RopeStyle::neox;
  s.qk_norm = s.arch == Arch::qwen3 || s.arch == Arch::qwen3moe;
  s.qkv_bias = s.arch == Arch::qwen2;

  if (const auto kind = file.find_string(r.key("rope.scaling.type")); kind && *kind != "none") {
    if (*kind != "linear" && *kind != "llama3")
      r.error(fmt::format("rope.scaling.type '{}' is not supported (none, linear, llama3)", *kind));
    s.rope_scaling.kind = *kind;
    s.rope_scaling.factor = r.number_or("rope.scaling.factor", 1.0);
    s.rope_scaling.low_freq_factor = r.number_or("rope.scaling.low_freq_factor", 1.0);
    s.rope_scaling.high_freq_factor = r.number_or("rope.scaling.high_freq_factor", 4.0);
    s.rope_scaling.original_context =
        r.positive_or("rope.scaling.original_context_length", s.n_ctx_train);
    if (!(s.rope_scaling.factor > 0)) r.error("rope.scaling.factor must be positive");
  }

  if (s.arch == Arch::qwen3moe) {
    s.n_expert = r.positive("expert_count");
    s.n_expert_used = r.positive("expert_used_count");
    s.n_ff_expert = r.positive("expert_feed_forward_length");
    if (s.n_expert_used > s.n_expert)
      r.error(fmt::format("expert_used_count {} exceeds expert_count {}", s.n_expert_used, s.n_expert));
    s.n_ff = file.has(r.key("feed_forward_length")) ? r.positive("feed_forward_length") : 0;
    s.expert_norm_topk = file.find_bool(r.key("expert_weights_norm")).value_or(true);
  } else {
    s.n_ff = r.positive("feed_forward_length");
  }

  const GgufTensor* embd = file.find_tensor("token_embd.weight");
  if (!embd) r.error("missing tensor 'token_embd.weight'");
  if (embd->dims.size() != 2) r.error(fmt::format("tensor 'token_embd.weight' has shape {}, expected 2-D", embd->shape_string()));
  s.n_vocab = embd->dims[1];
  if (file.has(r.key("vocab_size")) && r.positive("vocab_size") != s.n_vocab)
    r.error(fmt::format("vocab_size {} differs from token_embd.weight's {} rows",
                        r.positive("vocab_size"), s.n_vocab));
  s.tied_output = file.find_tensor("output.weight") == nullptr;
  check_tensors(r, s);
  return s;
}

DecodeBytes decode_bytes_per_token(const GgufFile& file, const ModelSpec& spec, int64_t n_ctx) {
  DecodeBytes out;
  for (const GgufTensor& t : file.tensors()) {
    if (t.name == "token_embd.weight") {
      out.embedding_row = t.n_bytes / static_cast<uint64_t>(t.n_rows());
      if (spec.tied_output) out.weights += t.n_bytes;  // the output product reads all of it
      continue;
    }
    const bool expert_stack = t.name.find("_exps.") != std::string::npos && spec.n_expert > 0;
    out.weights += expert_stack ? t.n_bytes / spec.n_expert * spec.n_expert_used : t.n_bytes;
  }
  out.kv_cache = 2ull * spec.n_layer * n_ctx * spec.n_head_kv * spec.head_dim * 2;
  return out;
}

double prompt_flops_per_token(const GgufFile& file, const ModelSpec& spec, double mean_context) {
  double products = 0;
  for (const GgufTensor& t : file.tensors()) {
    if (t.dims.size() < 2) continue;  // norms, biases
    if (t.name == "token_embd.weight" && !spec.tied_output) continue;  // gathered, not multiplied
    const bool expert_stack = t.name.find("_exps.") != std::string::npos && spec.n_expert > 0;
    const double n = static_cast<double>(t.n_elements());
    products += expert_stack ? n / static_cast<double>(spec.n_expert) * static_cast<double>(spec.n_expert_used) : n;
  }
  const double attention = 2.0 * static_cast<double>(spec.n_layer * spec.n_head * spec.head_dim) * mean_context;
  return 2.0 * (products + attention);
}

}  // namespace lathe
