#include "runtime/sampler.h"

#include "base/error.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_set>

namespace lathe {

int32_t argmax(std::span<const float> logits) {
  LATHE_CHECK(!logits.empty());
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
  return best;
}

Sampler::Sampler(SamplerOptions options) : options_(options), rng_(options.seed) {
  if (options_.temperature < 0) fail("temperature must be at least 0, not {}", options_.temperature);
  if (options_.top_k < 0) fail("top-k must be at least 0, not {}", options_.top_k);
  if (!(options_.top_p > 0 && options_.top_p <= 1)) fail("top-p must be in (0, 1], not {}", options_.top_p);
  if (!(options_.min_p >= 0 && options_.min_p < 1)) fail("min-p must be in [0, 1), not {}", options_.min_p);
  if (!(options_.repeat_penalty > 0)) fail("repeat penalty must be positive, not {}", options_.repeat_penalty);
}

std::vector<double> Sampler::distribution(std::span<const float> logits,
                                          std::span<const int32_t> recent) const {
  const size_t n = logits.size();
  std::vector<double> z(logits.begin(), logits.end());
  if (options_.repeat_penalty != 1.0) {
    const size_t from = recent.size() > static_cast<size_t>(options_.repeat_last_n)
                            ? recent.size() - static_cast<size_t>(options_.repeat_last_n) : 0;
    std::unordered_set<int32_t> seen(recent.begin() + static_cast<long>(from), recent.end());
    for (int32_t t : seen) {
      if (t < 0 || static_cast<size_t>(t) >= n) continue;
      z[static_cast<size_t>(t)] = z[static_cast<size_t>(t)] > 0 ? z[static_cast<size_t>(t)] / options_.repeat_penalty
                                                               : z[static_cast<size_t>(t)] * options_.repeat_penalty;
    }
  }
  std::vector<double> p(n, 0.0);
  if (options_.temperature == 0) {
    p[static_cast<size_t>(std::max_element(z.begin(), z.end()) - z.begin())] = 1.0;
    return p;
  }
  // Candidates sorted by logit (ties to the lower index), then filtered.
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return z[a] > z[b]; });
  size_t keep = n;
  if (options_.top_k > 0) keep = std::min(keep, static_cast<size_t>(options_.top_k));
  auto softmax_of_kept = [&](double temperature) {
    std::vector<double> q(keep);
    const double top = z[static_cast<size_t>(order[0])];
    double sum = 0;
    for (size_t i = 0; i < keep; ++i) sum += q[i] = std::exp((z[static_cast<size_t>(order[i])] - top) / temperature);
    for (double& v : q) v /= sum;
    return q;
  };
  if (options_.top_p < 1.0) {
    const std::vector<double> q = softmax_of_kept(1.0);
    double cum = 0;
    for (size_t i = 0; i < keep; ++i) {
      cum += q[i];
      if (cum >= options_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  if (options_.min_p > 0) {
    const std::vector<double> q = softmax_of_kept(1.0);
    size_t k = 1;
    while (k < keep && q[k] >= options_.min_p * q[0]) ++k;
    keep = k;
  }
  const std::vector<double> q = softmax_of_kept(options_.temperature);
  for (size_t i = 0; i < keep; ++i) p[static_cast<size_t>(order[i])] = q[i];
  return p;
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> recent) {
  if (options_.temperature == 0 && options_.repeat_penalty == 1.0) return argmax(logits);
  const std::vector<double> p = distribution(logits, recent);
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  double cum = 0;
  int32_t last = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) continue;
    last = static_cast<int32_t>(i);
    cum += p[i];
    if (u < cum) return last;
  }
  return last;  // rounding left u past the sum
}

}  // namespace lathe
