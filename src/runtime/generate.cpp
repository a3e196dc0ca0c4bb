#include "runtime/generate.h"

#include "base/error.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

namespace lathe {
namespace {
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

GenerateStats generate(Engine& engine, const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                       int64_t start, const GenerateOptions& options, Sampler& sampler,
                       const std::function<void(std::string_view)>& on_text,
                       std::vector<int32_t>* history) {
  GenerateStats stats;
  if (prompt.empty()) fail("the prompt is empty (no tokens to run)");
  const int64_t end = start + static_cast<int64_t>(prompt.size());
  if (end > engine.n_ctx())
    fail("the prompt is {} tokens{}, longer than the context of {} tokens (raise --ctx)", prompt.size(),
         start > 0 ? fmt::format(" after {} earlier ones", start) : "", engine.n_ctx());
  std::vector<int32_t> local;
  std::vector<int32_t>& seen = history ? *history : local;
  seen.insert(seen.end(), prompt.begin(), prompt.end());
  stats.prompt_tokens = static_cast<int64_t>(prompt.size());

  auto t0 = std::chrono::steady_clock::now();
  const std::vector<float> prompt_logits = engine.run(prompt, start, false);
  std::span<const float> logits = prompt_logits;
  stats.prompt_seconds = seconds_since(t0);

  StreamingDecoder decoder(tokenizer, /*skip_control=*/true);
  auto t1 = std::chrono::steady_clock::now();
  int64_t pos = end;
  // Greedy without a penalty needs only each step's argmax, which the engine can form itself (the
  // GPU's on the device, copying back one id instead of the vocabulary's logits).
  const bool argmax_only = sampler.argmax_only();
  int32_t next = -1;
  // Greedy's tokens ahead of the loop: the engine may chain several steps on the device
  // (Engine::run_argmax_steps). Past an end token they are dropped (the cache's slots after it are
  // written again by whatever runs there next).
  std::vector<int32_t> ahead;
  size_t ahead_at = 0;
  // Sampling without a penalty from a head the engine forms can be chained too (run_sampled_steps:
  // the engine draws with the sampler's next uniforms, which the loop then moves past one a token
  // taken), where the engine samples on the device; once it says it does not, a step at a time.
  bool sampled_chain = !argmax_only && sampler.head_size() > 0 && sampler.options().repeat_penalty == 1.0 &&
                       std::min<int64_t>(engine.n_vocab(), sampler.head_size()) <= engine.max_head();
  while (stats.generated < options.max_tokens) {
    if (next < 0) next = sampler.sample(logits, seen);
    if (options.stop_at_end && tokenizer.is_end_of_generation(next)) {
      stats.hit_end_token = true;
      seen.push_back(next);  // the turn's end belongs to the history (chat continues after it)
      break;
    }
    seen.push_back(next);
    ++stats.generated;
    on_text(decoder.push(next));
    if (pos >= engine.n_ctx()) {
      stats.hit_context_end = true;
      break;
    }
    if (stats.generated == options.max_tokens) break;
    if ((sampled_chain || argmax_only) && ahead_at == ahead.size()) {
      // (at most 1,024 steps a call: no engine chains more than that)
      const int64_t left = std::min({options.max_tokens - stats.generated, engine.n_ctx() - pos, int64_t{1024}});
      ahead = sampled_chain ? engine.run_sampled_steps(next, pos, left, sampler.options(), sampler.next_uniforms(left))
                            : engine.run_argmax_steps(next, pos, left);
      ahead_at = 0;
      sampled_chain = sampled_chain && !ahead.empty();
    }
    if (sampled_chain || argmax_only) {
      next = ahead[ahead_at++];
      ++pos;
      if (sampled_chain) sampler.skip_draws(1);
    } else if (sampler.head_size() > 0) {
      // Top-k (or greedy with a penalty) reads only the row's best and the penalized tokens: the
      // engine forms them where the logits are (the GPU's on the device) unless there are too many.
      const std::vector<int32_t> penalized = sampler.penalized(seen, engine.n_vocab());
      const int64_t m = std::min<int64_t>(engine.n_vocab(), sampler.head_size() + static_cast<int64_t>(penalized.size()));
      if (m <= engine.max_head()) {
        next = sampler.sample_head(engine.run_head(next, pos++, m, penalized));
      } else {
        logits = engine.run_one(next, pos++);
        next = -1;
      }
    } else {
      logits = engine.run_one(next, pos++);  // a view into the engine's buffer, until its next call
      next = -1;
    }
  }
  on_text(decoder.flush());
  stats.generate_seconds = seconds_since(t1);
  return stats;
}

std::string default_model_path() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("LATHE_DEFAULT_MODEL")) return env;
  const fs::path rel = "models/default/lathe-kjv-qwen3.gguf";
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path())
      if (fs::exists(dir / rel)) return (dir / rel).string();
  }
  const fs::path source = fs::path(LATHE_SOURCE_DIR) / rel;
  if (fs::exists(source)) return source.string();
  fail("the default model ({}) is not beside the executable or in {}; name a model or set "
       "LATHE_DEFAULT_MODEL", rel.string(), LATHE_SOURCE_DIR);
}

}  // namespace lathe
