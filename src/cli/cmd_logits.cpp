// lathe logits MODEL --tokens 1,2,3 -o OUT.npy [--device auto|cpu|gpu] [--activations ...]
// Runs the tokens from position 0 as one prompt and writes the logits of every position as a float32
// .npy array [n_tokens, n_vocab]; on the CPU these are the reference interpreter's.
#include "cli/commands.h"
#include "cli/engines.h"
#include "cli/npy_writer.h"
#include "cli/prompt_ids.h"
#include "model/model_spec.h"

#include <fmt/core.h>

#include <memory>

namespace lathe::cli {
namespace {

struct LogitsOptions {
  std::string model;
  std::string tokens;
  std::string out;
  EngineOptions engine;
};


}  // namespace

Action add_logits_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("logits", "write the logits of every position of a token list as a .npy array");
  auto o = std::make_shared<LogitsOptions>();
  cmd->add_option("model", o->model, "the GGUF checkpoint")->required();
  cmd->add_option("-t,--tokens", o->tokens, "the token ids, comma-separated (lathe tokenize --ids-only gives them)")
      ->required();
  cmd->add_option("-o,--out", o->out, "the float32 .npy file written, shape [n_tokens, n_vocab]")
      ->required();
  add_engine_options(cmd, o->engine);
  add_lane_rounding_option(cmd, o->engine);
  auto* ctx = cmd->get_option("--ctx");
  ctx->description("context length (default: the number of tokens)");
  return [o, ctx] {
    const std::vector<int32_t> ids = parse_token_list(o->tokens, "--tokens");
    EngineOptions engine_options = o->engine;
    if (ctx->count() == 0) engine_options.n_ctx = static_cast<int64_t>(ids.size());
    if (static_cast<int64_t>(ids.size()) > engine_options.n_ctx)
      fail("--tokens holds {} tokens, more than the context of {} (--ctx)", ids.size(), engine_options.n_ctx);
    // No tokenizer needed: the ids are given (the transformers test models carry none).
    const GgufFile file = GgufFile::open(o->model);
    const int64_t n_vocab = read_model_spec(file).n_vocab;
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] >= n_vocab)
        fail("--tokens: item {} is token id {}, out of range: {} has {} tokens (ids 0 to {})", i + 1, ids[i],
             o->model, n_vocab, n_vocab - 1);
    const std::unique_ptr<Engine> engine = make_engine(file, engine_options);
    const std::vector<float> logits = engine->run(ids, 0, true);
    const int64_t shape[2] = {static_cast<int64_t>(ids.size()), n_vocab};
    if (static_cast<int64_t>(logits.size()) != shape[0] * shape[1])
      internal_fail("the engine gave {} logits for {} rows of {}", logits.size(), shape[0], shape[1]);
    write_npy_f32(o->out, shape, logits);
    fmt::print(stderr, "[{}] {} positions x {} logits written to {}\n", engine->name(), shape[0], shape[1], o->out);
    return 0;
  };
}

}  // namespace lathe::cli
