// lathe perplexity MODEL -f FILE [--ctx N] [--device auto|cpu|gpu] [--activations ...]
// Perplexity over a text file, scored the way llama-perplexity scores it, so the figures compare:
//   - the whole file is tokenized as a prompt (prompt_ids.h: BOS first when the model adds one);
//   - the ids are cut into windows of N tokens (a tail shorter than N is dropped); when the model adds
//     BOS, each window's first token is replaced by BOS;
//   - each window runs alone from position 0; the logits of positions N/2 .. N-2 score the tokens that
//     follow them (N - 1 - N/2 predictions a window, each with the context of at least N/2 tokens);
//   - PPL = exp(mean NLL) over all scored tokens, its standard error ppl * sqrt(var / (n - 1)), var
//     the variance of the per-token NLLs.
// Progress (stderr): the perplexity so far after each window, [1]12.3456,[2]11.9876,...
// Result (stdout): one line, PPL = X +/- Y.
#include "cli/commands.h"
#include "cli/engines.h"
#include "cli/prompt_ids.h"

#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

namespace lathe::cli {
namespace {

struct PerplexityOptions {
  std::string model;
  std::string file;
  EngineOptions engine;
};

// -log p(target) from one row of logits, in f64 (the log of the softmax's sum, less the target's).
double token_nll(std::span<const float> logits, int32_t target) {
  float max = logits[0];
  for (float l : logits) max = std::max(max, l);
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - max);
  return std::log(sum) - (static_cast<double>(logits[static_cast<size_t>(target)]) - max);
}

// Running sums of the NLLs and their squares, as llama-perplexity keeps them.
struct NllSums {
  double nll = 0, nll2 = 0;
  int64_t count = 0;
  void add(double x) { nll += x, nll2 += x * x, ++count; }
  double ppl() const { return std::exp(nll / static_cast<double>(count)); }
  double ppl_error() const {
    if (count < 2) return 0;
    const double mean = nll / static_cast<double>(count);
    const double var = nll2 / static_cast<double>(count) - mean * mean;
    return var > 0 ? ppl() * std::sqrt(var / static_cast<double>(count - 1)) : 0;
  }
};

int run_perplexity(const PerplexityOptions& o) {
  const int64_t n_window = o.engine.n_ctx;
  if (n_window < 3) fail("--ctx {} leaves no token to score: a window needs at least 3 tokens", n_window);
  const std::string text = read_text_file(o.file);
  LoadedModel m = load_model(o.model, o.engine);
  const Tokenizer& tok = *m.tokenizer;
  const bool bos = adds_bos(tok, BosRule::model);
  const std::vector<int32_t> ids = prompt_ids(tok, text, BosRule::model);
  const int64_t n_tokens = static_cast<int64_t>(ids.size());
  const int64_t n_windows = n_tokens / n_window;
  if (n_windows == 0)
    fail("{} is {} tokens long{}, too short for one window of {} tokens (--ctx): give a longer text or a "
         "smaller --ctx", o.file, n_tokens, bos ? " with BOS" : "", n_window);
  const int64_t first = n_window / 2;  // positions before this are context only
  fmt::print(stderr, "[{}] {}: {} tokens, {} windows of {}{}, scoring {} tokens a window\n", m.engine->name(),
             o.file, n_tokens, n_windows, n_window, bos ? " (BOS first)" : "", n_window - 1 - first);
  const int64_t n_vocab = m.engine->n_vocab();
  NllSums sums;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t w = 0; w < n_windows; ++w) {
    std::vector<int32_t> window(ids.begin() + w * n_window, ids.begin() + (w + 1) * n_window);
    if (bos) window[0] = tok.bos();
    const std::vector<float> logits = m.engine->run(window, 0, true);
    LATHE_CHECK(static_cast<int64_t>(logits.size()) == n_window * n_vocab);
    for (int64_t j = first; j < n_window - 1; ++j) {
      const std::span<const float> row(logits.data() + j * n_vocab, static_cast<size_t>(n_vocab));
      sums.add(token_nll(row, window[static_cast<size_t>(j + 1)]));
    }
    fmt::print(stderr, "{}[{}]{:.4f}", w > 0 ? "," : "", w + 1, sums.ppl());
    std::fflush(stderr);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print(stderr, "\n{} tokens scored, {:.2f} s a window\n", sums.count, seconds / static_cast<double>(n_windows));
  fmt::print("PPL = {:.4f} +/- {:.5f}\n", sums.ppl(), sums.ppl_error());
  return 0;
}

}  // namespace

Action add_perplexity_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("perplexity", "perplexity over a text file, in windows as llama-perplexity scores");
  auto o = std::make_shared<PerplexityOptions>();
  o->engine.n_ctx = 512;
  cmd->add_option("model", o->model, "the GGUF checkpoint")->required();
  cmd->add_option("-f,--file", o->file, "the text to score")->required();
  add_engine_options(cmd, o->engine);
  cmd->get_option("--ctx")->description("tokens a window holds (the second half of each is scored)");
  return [o] { return run_perplexity(*o); };
}

}  // namespace lathe::cli
