// lathe emit MODEL.gguf -o prog.cu [--prompt-tokens 1,2,3 | -p TEXT] [-n N] [--ctx N] [--max-chunk R]
//            [--activations C] [--hold RULE]
// Writes one standalone CUDA C++ file: the kernel library, the model's steps as planned for an H200
// (sm_90, 132 SMs) and recorded with no GPU, and a host program that loads the checkpoint, runs the
// prompt and generates greedily. `nvcc -arch=sm_90 prog.cu -o prog -lcuda` builds it.
#include "cli/commands.h"
#include "emit/emit_program.h"
#include "runtime/tokenizer.h"

#include <fmt/core.h>

#include <fstream>
#include <memory>

namespace lathe::cli {
namespace {

struct EmitCliOptions {
  std::string model, out, prompt, prompt_tokens, activations = "int8x2";
  std::vector<std::string> hold;
  emit::EmitOptions emit;
};

std::vector<int32_t> parse_token_list(const std::string& text) {
  std::vector<int32_t> ids;
  std::string cur;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ',';
    if (c == ',' || c == ' ') {
      if (!cur.empty()) ids.push_back(static_cast<int32_t>(std::stol(cur)));
      cur.clear();
    } else if (c >= '0' && c <= '9' && cur.size() < 9) {
      cur += c;
    } else {
      fail("--prompt-tokens takes token ids separated by commas (\"1,2,3\"), not \"{}\"", text);
    }
  }
  if (ids.empty()) fail("--prompt-tokens names no token");
  return ids;
}

}  // namespace

Action add_emit_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("emit", "write a standalone CUDA program (one .cu file) for a checkpoint");
  auto o = std::make_shared<EmitCliOptions>();
  cmd->add_option("model", o->model, "the GGUF checkpoint")->required();
  cmd->add_option("-o,--output", o->out, "the .cu file to write")->required();
  cmd->add_option("--prompt-tokens", o->prompt_tokens, "a prompt baked into the program, as token ids: 1,2,3");
  cmd->add_option("-p,--prompt", o->prompt, "a prompt baked into the program, as text (the model's tokenizer)");
  cmd->add_option("-n,--n-predict", o->emit.n_predict, "tokens the program generates by default")->capture_default_str();
  cmd->add_option("--ctx", o->emit.n_ctx, "positions the KV caches hold")->capture_default_str();
  cmd->add_option("--max-chunk", o->emit.max_chunk, "the largest prefill chunk")->capture_default_str();
  cmd->add_option("--activations", o->activations, "numerics contract: f32, int8, int8x2")->capture_default_str();
  cmd->add_option("--hold", o->hold, "fusion rules held back");
  return [o] {
    if (o->activations != "f32" && o->activations != "int8" && o->activations != "int8x2")
      fail("--activations is f32, int8 or int8x2, not '{}'", o->activations);
    o->emit.activations = o->activations == "f32" ? kernels::Activations::f32
                          : o->activations == "int8" ? kernels::Activations::int8 : kernels::Activations::int8x2;
    o->emit.held = {o->hold.begin(), o->hold.end()};
    const GgufFile file = GgufFile::open(o->model);
    if (!o->prompt.empty() && !o->prompt_tokens.empty()) fail("give the prompt as -p TEXT or as --prompt-tokens, not both");
    if (!o->prompt_tokens.empty()) o->emit.prompt_tokens = parse_token_list(o->prompt_tokens);
    if (!o->prompt.empty()) {
      const Tokenizer tok = Tokenizer::from_gguf(file);
      o->emit.prompt_tokens = tok.encode(o->prompt, false, false);
      if (tok.add_bos() && tok.bos() >= 0) o->emit.prompt_tokens.insert(o->emit.prompt_tokens.begin(), tok.bos());
    }
    const std::string text = emit::emit_program(file, o->emit);
    std::ofstream out(o->out, std::ios::binary);
    if (!out || !out.write(text.data(), static_cast<std::streamsize>(text.size())) || !out.flush())
      fail("cannot write {}", o->out);
    fmt::print("wrote {} ({} bytes): nvcc -arch=sm_90 {} -o prog -lcuda\n", o->out, text.size(), o->out);
    return 0;
  };
}

}  // namespace lathe::cli
