#include "runtime/engine.h"

#include "base/error.h"
#include "runtime/sampler.h"

#include <algorithm>

namespace lathe {

int32_t Engine::run_argmax(int32_t token, int64_t position) {
  const int32_t one[1] = {token};
  return argmax(run(one, position, false));
}

std::vector<int32_t> Engine::run_argmax_steps(int32_t token, int64_t position, int64_t n) {
  if (n < 1) fail("a chain of {} greedy steps", n);
  return {run_argmax(token, position)};
}

std::span<const float> Engine::run_one(int32_t token, int64_t position) {
  const int32_t one[1] = {token};
  last_logits_ = run(one, position, false);
  return last_logits_;
}

LogitHead Engine::run_head(int32_t token, int64_t position, int64_t m, std::span<const int32_t> penalized) {
  const std::span<const float> logits = run_one(token, position);
  best_logits(logits, static_cast<size_t>(m), head_values_, head_tokens_);
  head_penalized_.resize(penalized.size());
  for (size_t i = 0; i < penalized.size(); ++i) head_penalized_[i] = logits[static_cast<size_t>(penalized[i])];
  return {head_values_, head_tokens_, penalized, head_penalized_, static_cast<int64_t>(logits.size())};
}

std::vector<int64_t> prompt_chunks(int64_t n, int64_t max_chunk) {
  std::vector<int64_t> out;
  while (n > 0) {
    int64_t c = 1;
    while (c * 2 <= std::min(n, max_chunk)) c *= 2;
    out.push_back(c);
    n -= c;
  }
  return out;
}

std::vector<float> run_in_chunks(std::span<const int32_t> tokens, int64_t start, bool all_logits,
                                 int64_t n_ctx, int64_t max_chunk, int64_t n_vocab, const ChunkStep& step) {
  if (tokens.empty()) fail("no tokens to run");
  if (start < 0 || start + static_cast<int64_t>(tokens.size()) > n_ctx)
    fail("{} tokens at position {} do not fit in the context of {} tokens (--ctx)", tokens.size(), start, n_ctx);
  std::vector<float> logits;
  int64_t done = 0;
  for (int64_t rows : prompt_chunks(static_cast<int64_t>(tokens.size()), max_chunk)) {
    const bool last = done + rows == static_cast<int64_t>(tokens.size());
    const std::vector<float> l = step(tokens.subspan(static_cast<size_t>(done), static_cast<size_t>(rows)), start + done,
                                      all_logits ? rows : last ? 1 : 0);
    if (all_logits) logits.insert(logits.end(), l.begin(), l.end());
    else if (last) logits.assign(l.end() - n_vocab, l.end());
    done += rows;
  }
  return logits;
}

}  // namespace lathe
