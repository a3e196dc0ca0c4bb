// lathe emit MODEL.gguf -o prog.cu [--prompt-tokens 1,2,3 | -p TEXT] [-n N] [--ctx N] [--max-chunk R]
//            [--activations C] [--hold RULE]
// Writes one standalone CUDA C++ file: the kernel library, the model's steps as planned for an H200
// (sm_90, 132 SMs) and recorded with no GPU, and a host program that loads the checkpoint, runs the
// prompt and generates greedily. `nvcc -arch=sm_90 prog.cu -o prog -lcuda` builds it.
#include "cli/commands.h"
#include "cli/engines.h"
#include "cli/prompt_ids.h"
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
  cmd->add_option("--merge-from", o->emit.long_from,
                  "the decode step in two forms, its attention's splits merged by a launch of their own from "
                  "this position (lathe run's engine: 128); 0: one form")
      ->capture_default_str();
  return [o] {
    o->emit.activations = parse_activations(o->activations);
    o->emit.held = {o->hold.begin(), o->hold.end()};
    const GgufFile file = GgufFile::open(o->model);
    if (!o->prompt.empty() && !o->prompt_tokens.empty()) fail("give the prompt as -p TEXT or as --prompt-tokens, not both");
    if (!o->prompt_tokens.empty()) o->emit.prompt_tokens = parse_token_list(o->prompt_tokens, "--prompt-tokens");
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
