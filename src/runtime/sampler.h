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

class Sampler {
 public:
  explicit Sampler(SamplerOptions options);
  // Picks a token from logits (n_vocab values); `recent` is the history the penalty reads.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> recent);
  // The probabilities the draw uses after every filter (zeros for the filtered), for tests.
  std::vector<double> distribution(std::span<const float> logits, std::span<const int32_t> recent) const;
  const SamplerOptions& options() const { return options_; }
  // Greedy without a penalty: sample() is the argmax of the logits alone.
  bool argmax_only() const { return options_.temperature == 0 && options_.repeat_penalty == 1.0; }

 private:
  // The tokens a draw can pick after every filter, best first, with their probabilities.
  std::vector<std::pair<int32_t, double>> kept(std::span<const float> logits, std::span<const int32_t> recent) const;

  SamplerOptions options_;
  std::mt19937_64 rng_;
};

// Ties go to the lower index, as in the interpreter's argmax.
int32_t argmax(std::span<const float> logits);

}  // namespace lathe
