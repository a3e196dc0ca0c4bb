// A model's shape and hyperparameters, read from GGUF metadata and checked against the tensors.
#pragma once

#include "gguf/gguf_file.h"

#include <cstdint>
#include <string>

namespace lathe {

enum class Arch { llama, qwen2, qwen3, qwen3moe };
enum class RopeStyle { normal, neox };  // normal: pairs (2i, 2i+1); neox: pairs (i, i + d/2)

struct RopeScaling {        // Llama 3 frequency scaling; kind "none" when absent
  std::string kind = "none";  // "none" | "llama3" | "linear"
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_context = 8192;
};

struct ModelSpec {
  Arch arch = Arch::llama;
  std::string arch_name;       // the GGUF architecture string
  std::string name;            // general.name, if any
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;        // key/value width per head
  int64_t n_ff = 0;            // dense feed-forward width (0 for a mixture model)
  int64_t n_expert = 0;        // 0 for dense models
  int64_t n_expert_used = 0;
  int64_t n_ff_expert = 0;
  int64_t n_ctx_train = 0;
  int64_t n_rot = 0;           // rotated dims per head (== head_dim unless partial)
  double rope_base = 10000.0;
  RopeStyle rope_style = RopeStyle::normal;
  RopeScaling rope_scaling;
  double norm_eps = 1e-6;
  bool tied_output = false;    // no output.weight: logits read token_embd
  bool qk_norm = false;        // qwen3, qwen3moe
  bool qkv_bias = false;       // qwen2
  bool expert_norm_topk = true;  // renormalize the kept router weights
};

std::string_view arch_name(Arch arch);

// Reads and checks the spec: unknown architecture, missing or inconsistent keys, tensors of the
// wrong shape or missing: each a UserError naming the key or tensor.
ModelSpec read_model_spec(const GgufFile& file);

// Bytes one decode step must read at context length n_ctx: every matrix once (for a mixture, only
// n_expert_used of the experts), one embedding row, and the KV cache (f16) up to n_ctx.
struct DecodeBytes {
  uint64_t weights = 0;
  uint64_t embedding_row = 0;
  uint64_t kv_cache = 0;
  uint64_t total() const { return weights + embedding_row + kv_cache; }
};
DecodeBytes decode_bytes_per_token(const GgufFile& file, const ModelSpec& spec, int64_t n_ctx);

// The arithmetic of a prompt token (multiply-adds count 2): every matrix product once (experts:
// n_expert_used of n_expert; the embedding only as a tied output), and causal attention's two
// products over `mean_context` positions on average (a p-token prompt from empty: (p + 1) / 2).
double prompt_flops_per_token(const GgufFile& file, const ModelSpec& spec, double mean_context);

}  // namespace lathe
