#include "model/shapes.h"

#include "base/error.h"

namespace lathe {
namespace {

ModelSpec dense(Arch arch, int64_t vocab, int64_t embd, int64_t layers, int64_t heads, int64_t kv,
                int64_t head_dim, int64_t ff, int64_t ctx, double rope_base, double eps, bool tied) {
  ModelSpec s;
  s.arch = arch;
  s.arch_name = std::string(arch_name(arch));
  s.n_vocab = vocab;
  s.n_embd = embd;
  s.n_layer = layers;
  s.n_head = heads;
  s.n_head_kv = kv;
  s.head_dim = head_dim;
  s.n_rot = head_dim;
  s.n_ff = ff;
  s.n_ctx_train = ctx;
  s.rope_base = rope_base;
  s.norm_eps = eps;
  s.tied_output = tied;
  s.rope_style = arch == Arch::llama ? RopeStyle::normal : RopeStyle::neox;
  s.qk_norm = arch == Arch::qwen3 || arch == Arch::qwen3moe;
  s.qkv_bias = arch == Arch::qwen2;
  return s;
}

ModelSpec mixture(ModelSpec s, int64_t experts, int64_t used, int64_t ff_expert) {
  s.n_expert = experts;
  s.n_expert_used = used;
  s.n_ff_expert = ff_expert;
  return s;
}

std::vector<ModelShape> make_shapes() {
  // Numbers from the models' published configs (hidden size, layers, heads, kv heads, head dim,
  // intermediate size, vocabulary, rope theta, rms eps, tie_word_embeddings).
  return {
      {"qwen3-tiny", "tiny Qwen3 (tests)",
       dense(Arch::qwen3, 2048, 256, 2, 4, 2, 64, 512, 4096, 1e6, 1e-6, true)},
      {"qwen3moe-tiny", "tiny Qwen3-MoE (tests)",
       mixture(dense(Arch::qwen3moe, 2048, 256, 2, 4, 2, 64, 768, 4096, 1e6, 1e-6, false), 8, 2, 128)},
      {"qwen2-tiny", "tiny Qwen2 (tests)",
       dense(Arch::qwen2, 2048, 256, 2, 4, 2, 64, 512, 4096, 1e6, 1e-6, false)},
      {"qwen3-mqa-tiny", "tiny Qwen3 with 16 query heads on one kv head (tests)",
       dense(Arch::qwen3, 2048, 256, 2, 16, 1, 64, 512, 4096, 1e6, 1e-6, true)},
      {"llama-tiny", "tiny Llama 3 (tests)",
       dense(Arch::llama, 2048, 256, 2, 4, 2, 64, 512, 4096, 5e5, 1e-5, false)},
      {"qwen3-0.6b", "Qwen3-0.6B",
       dense(Arch::qwen3, 151936, 1024, 28, 16, 8, 128, 3072, 40960, 1e6, 1e-6, true)},
      {"qwen3-8b", "Qwen3-8B",
       dense(Arch::qwen3, 151936, 4096, 36, 32, 8, 128, 12288, 40960, 1e6, 1e-6, false)},
      {"qwen3-30b-a3b", "Qwen3-30B-A3B",
       mixture(dense(Arch::qwen3moe, 151936, 2048, 48, 32, 4, 128, 6144, 40960, 1e6, 1e-6, false),
               128, 8, 768)},
      {"llama3-8b", "Meta-Llama-3-8B",
       dense(Arch::llama, 128256, 4096, 32, 32, 8, 128, 14336, 8192, 5e5, 1e-5, false)},
  };
}

}  // namespace

const std::vector<ModelShape>& model_shapes() {
  static const std::vector<ModelShape> shapes = make_shapes();
  return shapes;
}

const ModelShape& find_model_shape(const std::string& name) {
  std::string known;
  for (const ModelShape& s : model_shapes()) {
    if (s.name == name) return s;
    known += (known.empty() ? "" : ", ") + s.name;
  }
  fail("unknown shape '{}' (known: {})", name, known);
}

}  // namespace lathe
