#include "model/synth.h"

#include "base/error.h"
#include "gguf/block_format.h"
#include "gguf/gguf_writer.h"
#include "model/synth_blocks.h"

#include <cmath>
#include <fmt/format.h>

namespace lathe {
namespace {

// llama.cpp's rule for which layers of a Q4_K_M file get more bits in attn_v and ffn_down.
bool use_more_bits(int64_t layer, int64_t n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

// A K-quant needs rows of whole 256-value blocks; like llama.cpp, fall back to a 32-value format
// (for Q2_K and Q3_K llama.cpp takes IQ4_NL, which Lathe does not read: Q4_0, the nearest).
GgmlType fit_row(GgmlType type, int64_t row_length) {
  if (row_length % block_format(type).block_size == 0) return type;
  switch (type) {
    case GgmlType::Q2_K: case GgmlType::Q3_K: return GgmlType::Q4_0;
    case GgmlType::Q4_K: return GgmlType::Q5_0;
    case GgmlType::Q5_K: return GgmlType::Q5_1;
    case GgmlType::Q6_K: return GgmlType::Q8_0;
    default: return GgmlType::F16;
  }
}

enum class Fill { ones, small, matrix };

struct PlannedTensor {
  std::string name;
  std::vector<int64_t> dims;
  GgmlType type;
  Fill fill;
};

int file_type_code(const std::string& type) {
  if (type == "f32") return 0;
  if (type == "f16") return 1;
  if (type == "q4_0") return 2;
  if (type == "q8_0") return 7;
  if (type == "q2_k") return 10;
  if (type == "q3_k_m") return 12;
  if (type == "q4_k_m") return 15;
  if (type == "q5_k_m") return 17;
  if (type == "bf16") return 32;
  fail("unknown checkpoint type '{}' (known: f32, f16, bf16, q8_0, q4_0, q2_k, q3_k_m, q4_k_m, q5_k_m)", type);
}

std::vector<PlannedTensor> plan_tensors(const ModelSpec& s, const std::string& type) {
  std::vector<PlannedTensor> out;
  const int64_t qw = s.n_head * s.head_dim, kvw = s.n_head_kv * s.head_dim;
  auto matrix = [&](const std::string& name, std::vector<int64_t> dims, int64_t layer) {
    const GgmlType t = synth_tensor_type(type, name, layer, s.n_layer, dims[0], s.tied_output, s.n_head / s.n_head_kv);
    out.push_back({name, std::move(dims), t, Fill::matrix});
  };
  auto vector = [&](const std::string& name, int64_t n, Fill fill) {
    out.push_back({name, {n}, GgmlType::F32, fill});
  };
  matrix("token_embd.weight", {s.n_embd, s.n_vocab}, -1);
  for (int64_t l = 0; l < s.n_layer; ++l) {
    const std::string b = fmt::format("blk.{}.", l);
    vector(b + "attn_norm.weight", s.n_embd, Fill::ones);
    matrix(b + "attn_q.weight", {s.n_embd, qw}, l);
    matrix(b + "attn_k.weight", {s.n_embd, kvw}, l);
    matrix(b + "attn_v.weight", {s.n_embd, kvw}, l);
    if (s.qkv_bias) {
      vector(b + "attn_q.bias", qw, Fill::small);
      vector(b + "attn_k.bias", kvw, Fill::small);
      vector(b + "attn_v.bias", kvw, Fill::small);
    }
    if (s.qk_norm) {
      vector(b + "attn_q_norm.weight", s.head_dim, Fill::ones);
      vector(b + "attn_k_norm.weight", s.head_dim, Fill::ones);
    }
    matrix(b + "attn_output.weight", {qw, s.n_embd}, l);
    vector(b + "ffn_norm.weight", s.n_embd, Fill::ones);
    if (s.n_expert > 0) {
      // The router stays f32, as llama.cpp's quantizer leaves it.
      out.push_back({b + "ffn_gate_inp.weight", {s.n_embd, s.n_expert}, GgmlType::F32, Fill::matrix});
      matrix(b + "ffn_gate_exps.weight", {s.n_embd, s.n_ff_expert, s.n_expert}, l);
      matrix(b + "ffn_up_exps.weight", {s.n_embd, s.n_ff_expert, s.n_expert}, l);
      matrix(b + "ffn_down_exps.weight", {s.n_ff_expert, s.n_embd, s.n_expert}, l);
    } else {
      matrix(b + "ffn_gate.weight", {s.n_embd, s.n_ff}, l);
      matrix(b + "ffn_up.weight", {s.n_embd, s.n_ff}, l);
      matrix(b + "ffn_down.weight", {s.n_ff, s.n_embd}, l);
    }
  }
  vector("output_norm.weight", s.n_embd, Fill::ones);
  if (!s.tied_output) matrix("output.weight", {s.n_embd, s.n_vocab}, -1);
  return out;
}

void set_metadata(GgufWriter& w, const ModelSpec& s, const ModelShape& shape, const std::string& type) {
  const std::string a = s.arch_name;
  auto u32 = [](int64_t v) { return GgufValue::of_u32(static_cast<uint32_t>(v)); };
  w.set("general.architecture", GgufValue::of_string(a));
  w.set("general.name", GgufValue::of_string("synthetic " + shape.real_name));
  w.set("general.file_type", u32(file_type_code(type)));
  w.set("general.quantization_version", u32(2));
  w.set(a + ".context_length", u32(s.n_ctx_train));
  w.set(a + ".embedding_length", u32(s.n_embd));
  w.set(a + ".block_count", u32(s.n_layer));
  w.set(a + ".feed_forward_length", u32(s.n_ff));
  w.set(a + ".attention.head_count", u32(s.n_head));
  w.set(a + ".attention.head_count_kv", u32(s.n_head_kv));
  w.set(a + ".attention.key_length", u32(s.head_dim));
  w.set(a + ".attention.value_length", u32(s.head_dim));
  w.set(a + ".rope.dimension_count", u32(s.n_rot));
  w.set(a + ".rope.freq_base", GgufValue::of_f32(static_cast<float>(s.rope_base)));
  w.set(a + ".attention.layer_norm_rms_epsilon", GgufValue::of_f32(static_cast<float>(s.norm_eps)));
  w.set(a + ".vocab_size", u32(s.n_vocab));
  if (s.n_expert > 0) {
    w.set(a + ".expert_count", u32(s.n_expert));
    w.set(a + ".expert_used_count", u32(s.n_expert_used));
    w.set(a + ".expert_feed_forward_length", u32(s.n_ff_expert));
  }
  const SynthVocab v = make_synthetic_vocab(s.arch, s.n_vocab);
  w.set("tokenizer.ggml.model", GgufValue::of_string("gpt2"));
  w.set("tokenizer.ggml.pre", GgufValue::of_string(v.pre));
  w.set("tokenizer.ggml.tokens", GgufValue::of_strings(v.tokens));
  w.set("tokenizer.ggml.token_type", GgufValue::of_i32s(v.token_types));
  w.set("tokenizer.ggml.merges", GgufValue::of_strings(v.merges));
  w.set("tokenizer.ggml.bos_token_id", u32(v.bos));
  w.set("tokenizer.ggml.eos_token_id", u32(v.eos));
  w.set("tokenizer.ggml.eot_token_id", u32(v.eot));
  w.set("tokenizer.ggml.add_bos_token", GgufValue::of_bool(v.add_bos));
  w.set("tokenizer.chat_template", GgufValue::of_string(v.chat_template));
}

}  // namespace

GgmlType synth_tensor_type(const std::string& file_type, const std::string& name, int64_t layer,
                           int64_t n_layer, int64_t row_length, bool tied_output, int64_t n_gqa) {
  const bool is_output = name == "output.weight" || (tied_output && name == "token_embd.weight");
  const bool is_v = name.find("attn_v.") != std::string::npos, is_down = name.find("ffn_down") != std::string::npos;
  const bool is_o = name.find("attn_output.") != std::string::npos;
  GgmlType t;
  if (file_type == "f32") t = GgmlType::F32;
  else if (file_type == "f16") t = GgmlType::F16;
  else if (file_type == "bf16") t = GgmlType::BF16;
  else if (file_type == "q8_0") t = GgmlType::Q8_0;
  else if (file_type == "q4_0") t = GgmlType::Q4_0;
  else if (file_type == "q4_k_m" || file_type == "q5_k_m") {
    const bool more_bits = (is_v || is_down) && use_more_bits(layer, n_layer);
    t = is_output || more_bits ? GgmlType::Q6_K : file_type == "q4_k_m" ? GgmlType::Q4_K : GgmlType::Q5_K;
  } else if (file_type == "q3_k_m") {
    if (is_output) t = GgmlType::Q6_K;
    else if (is_v) t = layer < 2 ? GgmlType::Q5_K : GgmlType::Q4_K;
    else if (is_down) t = layer < n_layer / 16 ? GgmlType::Q5_K : GgmlType::Q4_K;
    else if (is_o) t = GgmlType::Q4_K;
    else t = GgmlType::Q3_K;
  } else if (file_type == "q2_k") {
    if (is_output) t = GgmlType::Q6_K;
    else if (is_v) t = n_gqa >= 4 ? GgmlType::Q4_K : GgmlType::Q3_K;
    else if (is_down || is_o) t = GgmlType::Q3_K;
    else t = GgmlType::Q2_K;
  } else {
    file_type_code(file_type);  // throws the message listing the known types
    t = GgmlType::F32;
  }
  return fit_row(t, row_length);
}

ModelSpec write_synthetic_checkpoint(const SynthOptions& options, const std::string& path,
                                     uint64_t* bytes_written) {
  const ModelShape& shape = find_model_shape(options.shape);
  ModelSpec s = shape.spec;
  if (options.layers < 0) fail("--layers must be positive");
  if (options.layers > 0) s.n_layer = options.layers;
  file_type_code(options.type);

  GgufWriter w;
  set_metadata(w, s, shape, options.type);
  const std::vector<PlannedTensor> plan = plan_tensors(s, options.type);
  for (size_t index = 0; index < plan.size(); ++index) {
    const PlannedTensor& p = plan[index];
    const int64_t n = p.dims[0];
    const double bound = p.fill == Fill::small ? 0.02 : 1.0 / std::sqrt(static_cast<double>(n));
    const uint64_t seed = options.seed * 0x100000001B3ull + index;
    const GgmlType type = p.type;
    const Fill fill = p.fill;
    w.add_tensor(p.name, p.dims, type, [=](uint8_t* dst, int64_t r0, int64_t r1) {
      const int64_t bytes = row_bytes(type, n);
      std::vector<float> row;
      for (int64_t r = r0; r < r1; ++r) {
        SynthRng rng{seed ^ (static_cast<uint64_t>(r) * 0xD1B54A32D192ED03ull)};
        uint8_t* out = dst + (r - r0) * bytes;
        if (fill == Fill::matrix && write_random_blocks(type, rng, bound, out, n)) continue;
        row.resize(static_cast<size_t>(n));
        for (int64_t k = 0; k < n; ++k)
          row[k] = fill == Fill::ones ? 1.0f : static_cast<float>((2.0 * rng.uniform() - 1.0) * bound);
        quantize_row(type, row.data(), out, n);
      }
    });
  }
  const uint64_t size = w.write(path, options.threads, options.zero_data);
  if (bytes_written) *bytes_written = size;
  return s;
}

}  // namespace lathe
