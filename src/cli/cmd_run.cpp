// lathe run [MODEL] -p PROMPT [-n N] [--chat] [--device auto|cpu|gpu] [sampling options]
// Streams the completion (or a conversation with --chat) and prints load time and speeds at the end.
#include "cli/commands.h"
#include "cli/engines.h"
#include "cli/prompt_ids.h"
#include "runtime/chat.h"
#include "runtime/generate.h"

#include <fmt/core.h>

#include <chrono>
#include <iostream>
#include <memory>

namespace lathe::cli {
namespace {

struct RunOptions {
  std::string model;
  std::string prompt;
  int64_t n_predict = 128;
  bool chat = false;
  std::string chat_template;  // empty: from the checkpoint
  std::string system;
  EngineOptions engine;
  SamplerOptions sampler;
  bool bos = false, no_bos = false;
};

void print_stats(const GenerateStats& s, double load_seconds, const std::string& engine) {
  auto rate = [](int64_t n, double t) { return t > 0 ? n / t : 0.0; };
  fmt::print(stderr, "\n[{}] load {:.2f} s | prompt {} tokens, {:.1f} tok/s | generated {} tokens, {:.1f} tok/s{}\n",
             engine, load_seconds, s.prompt_tokens, rate(s.prompt_tokens, s.prompt_seconds), s.generated,
             rate(s.generated, s.generate_seconds), s.hit_context_end ? " | stopped at the end of the context" : "");
}

int run_completion(const RunOptions& o, Engine& engine, const Tokenizer& tok, double load) {
  if (o.prompt.empty()) fail("no prompt: give one with -p TEXT (or use --chat)");
  const std::vector<int32_t> ids = prompt_ids(tok, o.prompt, bos_rule(o.bos, o.no_bos));
  if (static_cast<int64_t>(ids.size()) > engine.n_ctx())
    fail("the prompt is {} tokens, longer than the context of {} tokens (raise --ctx)", ids.size(),
         engine.n_ctx());
  Sampler sampler(o.sampler);
  GenerateOptions g;
  g.max_tokens = o.n_predict;
  fmt::print("{}", o.prompt);
  std::fflush(stdout);
  const GenerateStats s = generate(engine, tok, ids, 0, g, sampler, [](std::string_view text) {
    fmt::print("{}", text);
    std::fflush(stdout);
  });
  fmt::print("\n");
  print_stats(s, load, engine.name());
  return 0;
}

int run_chat(const RunOptions& o, Engine& engine, const Tokenizer& tok, double load) {
  ChatFormat format;
  if (!o.chat_template.empty()) {
    format = chat_format_from_name(o.chat_template);
  } else if (auto f = detect_chat_format(tok.chat_template())) {
    format = *f;
  } else {
    fail("the checkpoint's chat template is {}; name one with --chat-template chatml|llama3",
         tok.chat_template().empty() ? "missing" : "not one Lathe knows");
  }
  const std::string bos = tok.bos() >= 0 ? tok.token_text(tok.bos()) : "";
  std::vector<ChatMessage> messages;
  if (!o.system.empty()) messages.push_back({"system", o.system});
  std::string fed;                // the conversation's text the engine has seen
  std::vector<int32_t> history;   // and its tokens
  Sampler sampler(o.sampler);
  fmt::print(stderr, "[{}] chat ({}); an empty line or end of input ends it\n", engine.name(),
             chat_format_name(format));
  std::string line;
  bool first = true;
  while (true) {
    if (first && !o.prompt.empty()) {
      line = o.prompt;
    } else {
      fmt::print("> ");
      std::fflush(stdout);
      if (!std::getline(std::cin, line) || line.empty()) break;
    }
    first = false;
    messages.push_back({"user", line});
    const std::string text = render_chat(format, messages, true, bos);
    if (text.compare(0, fed.size(), fed) != 0) internal_fail("the chat template is not incremental");
    const std::vector<int32_t> ids = tok.encode(std::string_view(text).substr(fed.size()), false, true);
    std::string reply;
    GenerateOptions g;
    g.max_tokens = o.n_predict;
    const GenerateStats s = generate(engine, tok, ids, static_cast<int64_t>(history.size()), g, sampler,
                                     [&](std::string_view t) {
                                       reply += t;
                                       fmt::print("{}", t);
                                       std::fflush(stdout);
                                     }, &history);
    fmt::print("\n");
    print_stats(s, load, engine.name());
    load = 0;
    messages.push_back({"assistant", reply});
    // What the engine has seen now: the prompt and the reply, closed as the template closes a turn.
    fed = render_chat(format, messages, false, bos);
    const std::vector<int32_t> seen_ids = tok.encode(fed, false, true);
    if (seen_ids.size() != history.size() || !s.hit_end_token) {
      // The reply was cut (budget) or re-tokenizes differently: rerun the conversation from its text.
      history = seen_ids;
      engine.run(history, 0, false);
    }
  }
  return 0;
}

}  // namespace

Action add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "generate text from a model (the small default model if none)");
  auto o = std::make_shared<RunOptions>();
  cmd->add_option("model", o->model, "the GGUF checkpoint (default: the model that ships with Lathe)");
  cmd->add_option("-p,--prompt", o->prompt, "the prompt (with --chat: the first message)");
  cmd->add_option("-n,--n-predict", o->n_predict, "tokens to generate at most")->capture_default_str();
  cmd->add_flag("--chat", o->chat, "an interactive conversation in the model's chat template");
  cmd->add_option("--chat-template", o->chat_template, "chatml or llama3 (default: from the checkpoint)");
  cmd->add_option("--system", o->system, "a system message for --chat");
  add_engine_options(cmd, o->engine);
  cmd->add_option("--temp", o->sampler.temperature, "temperature (0: greedy)")->capture_default_str();
  cmd->add_option("--top-k", o->sampler.top_k, "top-k (0: off)")->capture_default_str();
  cmd->add_option("--top-p", o->sampler.top_p, "top-p (1: off)")->capture_default_str();
  cmd->add_option("--min-p", o->sampler.min_p, "min-p (0: off)")->capture_default_str();
  cmd->add_option("--repeat-penalty", o->sampler.repeat_penalty, "repetition penalty (1: off)")->capture_default_str();
  cmd->add_option("--repeat-last-n", o->sampler.repeat_last_n, "tokens the penalty looks back at")->capture_default_str();
  cmd->add_option("--seed", o->sampler.seed, "random seed")->capture_default_str();
  cmd->add_flag("--bos", o->bos, "add the BOS token even if the model does not ask for it");
  cmd->add_flag("--no-bos", o->no_bos, "never add the BOS token");
  return [o] {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string path = o->model.empty() ? default_model_path() : o->model;
    LoadedModel m = load_model(path, o->engine);
    const double load = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return o->chat ? run_chat(*o, *m.engine, *m.tokenizer, load)
                   : run_completion(*o, *m.engine, *m.tokenizer, load);
  };
}

}  // namespace lathe::cli
