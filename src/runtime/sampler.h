// Choosing the next token from a row of logits: greedy, or temperature with top-k, top-p and min-p
// filters, after a repetition penalty over the recent tokens; a seed makes runs repeatable.
// The order of the steps is llama.cpp's: penalty, top-k, top-p, min-p, temperature, draw.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace lathe {

struct SamplerOptions {
  double temperature = 0.8;       // 0: greedy (argmax)
  int top_k = 40;                 // 0: off
  double top_p = 0.95;            // 1: off
  double min_p = 0.05;            // 0: off; keep tokens with p >= min_p * p_max
  double repeat_penalty = 1.0;    // 1: off; >1 divides positive logits (multiplies negative ones)
  int repeat_last_n = 64;         // how many recent tokens the penalty looks at
  uint64_t seed = 0xC0FFEE;
};

// The part of a row of logits that sampling with top-k (or greedy with a penalty) reads: the row's
// best `values` (best first: larger, of equal values the lower token; `tokens` beside them), and the
// logits of the tokens the penalty changes (`penalized`: Sampler::penalized's list). An engine can
// form it where the logits are (Engine::run_head) and copy back this instead of the row.
struct LogitHead {
  std::span<const float> values;
  std::span<const int32_t> tokens;
  std::span<const int32_t> penalized;
  std::span<const float> penalized_values;
  int64_t n_vocab = 0;
};

class Sampler {
 public:
  explicit Sampler(SamplerOptions options);
  // Picks a token from logits (n_vocab values); `recent` is the history the penalty reads.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> recent);
  // The probabilities the draw uses after every filter (zeros for the filtered), for tests.
  std::vector<double> distribution(std::span<const float> logits, std::span<const int32_t> recent) const;
  // How many of a row's best logits sample_head needs besides the penalized tokens: 1 for greedy,
  // top_k with top-k; 0 where it needs the whole row (without top-k, top-p and min-p are over the
  // whole vocabulary).
  int64_t head_size() const;
  // The tokens the repetition penalty changes given `recent` (sorted, each once; none without a penalty).
  std::vector<int32_t> penalized(std::span<const int32_t> recent, int64_t n_vocab) const;
  // sample() from the head (head_size() > 0, head.values at least min(n_vocab, head_size() +
  // |penalized|) long): the same token as sample() over the whole row with the same history, from the
  // same probabilities to the bit.
  int32_t sample_head(const LogitHead& head);
  std::vector<double> distribution_from_head(const LogitHead& head) const;
  // sample_head's token where its draw's uniform is u (in [0, 1)); draws nothing.
  int32_t sample_head_at(const LogitHead& head, double u) const;
  // The uniforms of the next n draws, drawing nothing (for draws made elsewhere: sampled steps chained
  // on the device), and skip_draws(n) to move past n of them as n draws would.
  std::vector<double> next_uniforms(int64_t n) const;
  void skip_draws(int64_t n);
  const SamplerOptions& options() const { return options_; }
  // Greedy without a penalty: sample() is the argmax of the logits alone.
  bool argmax_only() const { return options_.temperature == 0 && options_.repeat_penalty == 1.0; }

 private:
  // The tokens a draw can pick after every filter, best first, with their probabilities.
  std::vector<std::pair<int32_t, double>> kept(std::span<const float> logits, std::span<const int32_t> recent) const;
  std::vector<std::pair<int32_t, double>> kept_from_head(const LogitHead& head) const;
  int32_t draw(std::vector<std::pair<int32_t, double>> kept);  // one token by the kept probabilities
  // The draw's walk for uniform u.
  static int32_t draw_at(std::vector<std::pair<int32_t, double>> kept, double u);
  double uniform();  // the next draw's uniform

  SamplerOptions options_;
  std::mt19937_64 rng_;
};

// Ties go to the lower index, as in the interpreter's argmax.
int32_t argmax(std::span<const float> logits);

// The m best of a row of logits in LogitHead's order (an engine without a device of its own forms the
// head with this).
void best_logits(std::span<const float> logits, size_t m, std::vector<float>& values, std::vector<int32_t>& tokens);

}  // namespace lathe
