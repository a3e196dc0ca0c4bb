// lathe inspect MODEL.gguf: the architecture, its spec, the tensors' formats and what a decode step
// must read per token.
#include "cli/commands.h"
#include "gguf/block_format.h"
#include "model/model_spec.h"

#include <fmt/core.h>

#include <map>
#include <memory>

namespace lathe::cli {
namespace {

// The streaming read rate of the H200 (../shared/anchors.md), for the decode limit line.
constexpr double kReferenceReadGBs = 4630.0;

std::string gb(uint64_t bytes) { return fmt::format("{:.3f} GB", static_cast<double>(bytes) / 1e9); }

void print_spec(const ModelSpec& s) {
  fmt::print("architecture     {}{}\n", s.arch_name, s.name.empty() ? "" : "  (" + s.name + ")");
  fmt::print("vocabulary       {}\n", s.n_vocab);
  fmt::print("embedding width  {}\n", s.n_embd);
  fmt::print("layers           {}\n", s.n_layer);
  fmt::print("heads            {} query, {} key/value, width {}\n", s.n_head, s.n_head_kv, s.head_dim);
  if (s.n_expert > 0)
    fmt::print("experts          {} used of {}, feed-forward width {}\n", s.n_expert_used, s.n_expert,
               s.n_ff_expert);
  else
    fmt::print("feed-forward     {}\n", s.n_ff);
  fmt::print("rope             {} order, base {}, {} of {} dims{}\n",
             s.rope_style == RopeStyle::neox ? "neox" : "normal", s.rope_base, s.n_rot, s.head_dim,
             s.rope_scaling.kind == "none" ? "" : ", " + s.rope_scaling.kind + " scaling");
  fmt::print("norm epsilon     {}\n", s.norm_eps);
  fmt::print("output           {}\n", s.tied_output ? "tied to the token embedding" : "its own matrix");
  fmt::print("context (train)  {}\n", s.n_ctx_train);
}

}  // namespace

Action add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "describe a GGUF checkpoint");
  auto path = std::make_shared<std::string>();
  auto ctx = std::make_shared<int64_t>(4096);
  cmd->add_option("model", *path, "the GGUF file")->required();
  cmd->add_option("--ctx", *ctx, "context length for the KV-cache bytes")->capture_default_str();
  return [path, ctx] {
    const GgufFile file = GgufFile::open(*path);
    const ModelSpec s = read_model_spec(file);
    fmt::print("file             {} (GGUF v{}, {})\n", *path, file.version(), gb(file.file_size()));
    print_spec(s);
    std::map<std::string, std::pair<int, uint64_t>> mix;
    for (const GgufTensor& t : file.tensors()) {
      auto& [count, bytes] = mix[std::string(ggml_type_name(t.type))];
      ++count;
      bytes += t.n_bytes;
    }
    fmt::print("tensors          {}:", file.tensors().size());
    for (const auto& [name, cb] : mix) fmt::print("  {} x{} ({})", name, cb.first, gb(cb.second));
    fmt::print("\n");
    const DecodeBytes d0 = decode_bytes_per_token(file, s, 0);
    const DecodeBytes dc = decode_bytes_per_token(file, s, *ctx);
    fmt::print("decode reads     {} a token (weights {}, embedding row {} bytes)\n", gb(d0.total()),
               gb(d0.weights), d0.embedding_row);
    fmt::print("                 {} a token at {} tokens of context (KV cache f16 {})\n",
               gb(dc.total()), *ctx, gb(dc.kv_cache));
    fmt::print("decode limit     {:.0f} tok/s at {:.0f} GB/s (H200 streaming read)\n",
               kReferenceReadGBs * 1e9 / static_cast<double>(d0.total()), kReferenceReadGBs);
    return 0;
  };
}

}  // namespace lathe::cli
