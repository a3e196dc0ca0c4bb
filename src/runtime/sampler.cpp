#include "runtime/sampler.h"

#include "base/error.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <utility>

namespace lathe {
namespace {

// The tokens the repetition penalty changes: the last repeat_last_n of `recent` inside the vocabulary,
// each once, in token order (none without a penalty).
std::vector<int32_t> penalized_tokens(std::span<const int32_t> recent, int64_t n_vocab, const SamplerOptions& o) {
  if (o.repeat_penalty == 1.0) return {};
  const size_t from = recent.size() > static_cast<size_t>(o.repeat_last_n)
                          ? recent.size() - static_cast<size_t>(o.repeat_last_n) : 0;
  std::vector<int32_t> out;
  for (size_t i = from; i < recent.size(); ++i)
    if (recent[i] >= 0 && recent[i] < n_vocab) out.push_back(recent[i]);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// A logit after the penalty (divided where positive, multiplied where not).
double penalize(double z, const SamplerOptions& o) { return z > 0 ? z / o.repeat_penalty : z * o.repeat_penalty; }

// A token and its logit after the penalty.
struct Candidate {
  double z;
  int32_t token;
};

// The order the filters read: largest logit first, ties to the lower token (a stable sort's order).
bool before(const Candidate& a, const Candidate& b) { return a.z > b.z || (a.z == b.z && a.token < b.token); }

// The logits after the repetition penalty: the few tokens it touched kept aside (by token, each once),
// every other logit read in place, so a pass over the vocabulary copies nothing.
class Penalized {
 public:
  Penalized(std::span<const float> logits, std::span<const int32_t> recent, const SamplerOptions& o) : logits_(logits) {
    for (int32_t t : penalized_tokens(recent, static_cast<int64_t>(logits.size()), o))
      touched_.push_back({penalize(logits[static_cast<size_t>(t)], o), t});
  }
  size_t size() const { return logits_.size(); }
  // f(token, z) for every token, in token order.
  template <class F>
  void for_each(F&& f) const {
    size_t next = 0;
    const size_t n = logits_.size();
    for (size_t i = 0; i < n; ++i) {
      if (next < touched_.size() && static_cast<size_t>(touched_[next].token) == i) {
        f(static_cast<int32_t>(i), touched_[next++].z);
        continue;
      }
      f(static_cast<int32_t>(i), static_cast<double>(logits_[i]));
    }
  }

 private:
  std::span<const float> logits_;
  std::vector<Candidate> touched_;
};

// The first m candidates of the order `before`, in that order: one pass keeping the m best in a heap
// whose front is the worst kept (a later token ties below an earlier one, so only a larger logit
// displaces it), then the heap sorted. The same m candidates, in the same order, as a full sort's.
std::vector<Candidate> best_of(const Penalized& z, size_t m) {
  std::vector<Candidate> heap;
  heap.reserve(m);
  z.for_each([&](int32_t t, double v) {
    if (heap.size() < m) {
      heap.push_back({v, t});
      std::push_heap(heap.begin(), heap.end(), before);
    } else if (v > heap.front().z) {
      std::pop_heap(heap.begin(), heap.end(), before);
      heap.back() = {v, t};
      std::push_heap(heap.begin(), heap.end(), before);
    }
  });
  std::sort_heap(heap.begin(), heap.end(), before);
  return heap;
}

// Candidates given in token order, put in the order `before`. Many (a flat row without top-k: up to
// the whole vocabulary) by a stable radix sort of their logits' bits, largest first, so equal logits
// keep token order as `before` has them, -0 keyed as +0 (they compare equal); 16 bits a pass, a pass
// skipped where every key has the same digit (a float's widened mantissa ends in 29 zero bits).
void sort_token_ordered(std::vector<Candidate>& c) {
  if (c.size() < 4096) {
    std::sort(c.begin(), c.end(), before);
    return;
  }
  const size_t n = c.size();
  std::vector<uint64_t> key(n), key2(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t b = std::bit_cast<uint64_t>(c[i].z == 0 ? 0.0 : c[i].z);
    key[i] = ~((b >> 63) ? ~b : b | (uint64_t{1} << 63));  // ascending key: descending logit
  }
  std::vector<Candidate> c2(n);
  std::vector<uint32_t> count(65537);
  for (int shift = 0; shift < 64; shift += 16) {
    std::fill(count.begin(), count.end(), 0u);
    for (uint64_t k : key) ++count[((k >> shift) & 0xFFFF) + 1];
    if (count[((key[0] >> shift) & 0xFFFF) + 1] == n) continue;  // one digit for all: nothing moves
    for (size_t d = 1; d < count.size(); ++d) count[d] += count[d - 1];
    for (size_t i = 0; i < n; ++i) {
      const size_t at = count[(key[i] >> shift) & 0xFFFF]++;
      key2[at] = key[i];
      c2[at] = c[i];
    }
    key.swap(key2);
    c.swap(c2);
  }
}

// Every candidate in the order `before` (what top-p alone needs when the 256 best do not reach it).
std::vector<Candidate> all_sorted(const Penalized& z) {
  std::vector<Candidate> all;
  all.reserve(z.size());
  z.for_each([&](int32_t t, double v) { all.push_back({v, t}); });
  sort_token_ordered(all);
  return all;
}

// Every candidate whose logit is at least `floor`, in the order `before`: the head of the full order.
std::vector<Candidate> at_least(const Penalized& z, double floor) {
  std::vector<Candidate> head;
  z.for_each([&](int32_t t, double v) {
    if (v >= floor) head.push_back({v, t});
  });
  sort_token_ordered(head);
  return head;
}

}  // namespace

int32_t argmax(std::span<const float> logits) {
  LATHE_CHECK(!logits.empty());
  int32_t best = 0;
  float value = logits[0];
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > value) {
      value = logits[i];
      best = static_cast<int32_t>(i);
    }
  return best;
}

Sampler::Sampler(SamplerOptions options) : options_(options), rng_(options.seed) {
  if (options_.temperature < 0) fail("temperature must be at least 0, not {}", options_.temperature);
  if (options_.top_k < 0) fail("top-k must be at least 0, not {}", options_.top_k);
  if (!(options_.top_p > 0 && options_.top_p <= 1)) fail("top-p must be in (0, 1], not {}", options_.top_p);
  if (!(options_.min_p >= 0 && options_.min_p < 1)) fail("min-p must be in [0, 1), not {}", options_.min_p);
  if (!(options_.repeat_penalty > 0)) fail("repeat penalty must be positive, not {}", options_.repeat_penalty);
}

namespace {

// The filters after the head is found (kept()'s and kept_from_head()'s common end): top-p over the
// head (the shortest prefix whose probabilities at temperature 1 reach top_p), then min-p (the prefix
// whose probabilities are at least min_p times the first's), then the kept ones' softmax at the
// temperature. head: best first, its first `keep` still kept; top: the largest logit; while `whole`,
// the set is still the whole vocabulary and probabilities at temperature 1 are normalized by total.
std::vector<std::pair<int32_t, double>> filter_head(const SamplerOptions& o, const std::vector<Candidate>& head,
                                                    size_t keep, double top, bool whole, double total) {
  auto softmax = [&](size_t count, double t) {
    std::vector<double> q(count);
    double sum = 0;
    for (size_t i = 0; i < count; ++i) sum += q[i] = std::exp((head[i].z - top) / t);
    if (whole && t == 1.0) sum = total;
    for (double& v : q) v /= sum;
    return q;
  };
  if (o.min_p > 0) {
    const std::vector<double> q = softmax(keep, 1.0);
    size_t k = 1;
    while (k < keep && q[k] >= o.min_p * q[0]) ++k;
    keep = k;
  }
  whole = false;
  const std::vector<double> q = softmax(keep, o.temperature);
  std::vector<std::pair<int32_t, double>> out(keep);
  for (size_t i = 0; i < keep; ++i) out[i] = {head[i].token, q[i]};
  return out;
}

// Top-p over the head: the length of its shortest prefix whose probabilities at temperature 1 reach
// top_p, or 0 where the whole head does not.
size_t top_p_prefix(const SamplerOptions& o, const std::vector<Candidate>& head, double top, bool whole,
                    double total) {
  double sum = 0;
  std::vector<double> q(head.size());
  for (size_t i = 0; i < head.size(); ++i) sum += q[i] = std::exp(head[i].z - top);
  if (whole) sum = total;
  double cum = 0;
  for (size_t i = 0; i < q.size(); ++i)
    if ((cum += q[i] / sum) >= o.top_p) return i + 1;
  return 0;
}

}  // namespace

// The filters in llama.cpp's order over the candidates sorted by logit: top-k, then top-p, then
// min-p, then the temperature (filter_head). Only a head that can survive is ever sorted: the top k;
// without top-k, the candidates min-p can keep (logit within log(min_p) of the largest, a margin
// wider), or for top-p alone the 256 best, else the head whose mass reaches top_p; with temperature
// alone, nothing. With top-k (the default) every sum runs over the head in its order, so the
// probabilities are a full sort's to the bit; without it, a probability over the whole vocabulary is
// normalized by the sum in token order (a full sort's up to rounding). Best first, but in token order
// for temperature alone.
std::vector<std::pair<int32_t, double>> Sampler::kept(std::span<const float> logits,
                                                      std::span<const int32_t> recent) const {
  LATHE_CHECK(!logits.empty());
  const Penalized z(logits, recent, options_);
  const size_t n = z.size();
  double top = -INFINITY;
  int32_t best = 0;
  z.for_each([&](int32_t t, double v) {
    if (v > top || t == 0) {
      top = v;
      best = t;
    }
  });
  if (options_.temperature == 0) return {{best, 1.0}};
  if (options_.top_k == 0 && options_.top_p == 1.0 && options_.min_p == 0) {
    // Temperature alone: every token kept, so no order is needed.
    std::vector<std::pair<int32_t, double>> out(n);
    double sum = 0;
    z.for_each([&](int32_t t, double v) {
      sum += out[static_cast<size_t>(t)].second = std::exp((v - top) / options_.temperature);
      out[static_cast<size_t>(t)].first = t;
    });
    for (auto& o : out) o.second /= sum;
    return out;
  }
  // Without top-k, the filters' probabilities at temperature 1 are over the whole vocabulary.
  double total = 0;
  if (options_.top_k == 0) z.for_each([&](int32_t, double v) { total += std::exp(v - top); });

  std::vector<Candidate> head;
  size_t keep = 0;
  bool whole = options_.top_k == 0;  // the kept set is still the whole vocabulary (normalized by total)
  // Top-p over the head: true, and keep cut, when its probabilities reach top_p.
  auto reach_top_p = [&] {
    const size_t k = top_p_prefix(options_, head, top, whole, total);
    if (k == 0) return false;
    keep = k;
    whole = false;
    return true;
  };
  if (options_.top_k > 0) {
    head = best_of(z, std::min(n, static_cast<size_t>(options_.top_k)));
    keep = head.size();
    if (options_.top_p < 1.0) reach_top_p();
  } else if (options_.min_p > 0) {
    // Past this head every candidate fails min-p: its logit is below the floor by the margin.
    head = at_least(z, top + std::log(options_.min_p) - 1e-6);
    keep = head.size();
    if (options_.top_p < 1.0) reach_top_p();
  } else {
    head = best_of(z, std::min<size_t>(n, 256));
    keep = head.size();
    if (!reach_top_p() && head.size() < n) {
      // A flat distribution: the head top-p needs, found by the mass in bins of 1/64 below the top
      // logit (the bins up to the one that reaches top_p, a hair more for rounding), then sorted.
      constexpr size_t kBins = 64 * 64;
      std::vector<double> mass(kBins + 1, 0.0);
      z.for_each([&](int32_t, double v) {
        const double d = top - v;
        mass[d < 64.0 ? static_cast<size_t>(d * 64.0) : kBins] += std::exp(-d);
      });
      double cum = 0;
      size_t b = 0;
      while (b < kBins && (cum += mass[b]) < options_.top_p * total * (1 + 1e-9)) ++b;
      head = b < kBins ? at_least(z, top - static_cast<double>(b + 1) / 64.0) : all_sorted(z);
      keep = head.size();
      if (!reach_top_p() && head.size() < n) {
        head = all_sorted(z);
        keep = n;
        reach_top_p();
      }
    }
  }
  return filter_head(options_, head, keep, top, whole, total);
}

int64_t Sampler::head_size() const {
  if (options_.temperature == 0) return 1;
  return options_.top_k;  // 0: top-p and min-p alone normalize over the whole vocabulary
}

std::vector<int32_t> Sampler::penalized(std::span<const int32_t> recent, int64_t n_vocab) const {
  return penalized_tokens(recent, n_vocab, options_);
}

// The same filters from the head: the head_size() best after the penalty are among the row's
// head_size() + |penalized| best before it with the penalized tokens themselves (a token the penalty
// leaves alone and that ends among the best has fewer than head_size() tokens above it after the
// penalty, so at most that many unpenalized ones and every penalized one above it before).
std::vector<std::pair<int32_t, double>> Sampler::kept_from_head(const LogitHead& h) const {
  const size_t want = static_cast<size_t>(head_size());
  LATHE_CHECK(want > 0 && h.values.size() == h.tokens.size() && h.penalized.size() == h.penalized_values.size());
  LATHE_CHECK(h.values.size() >= std::min(static_cast<size_t>(h.n_vocab), want + h.penalized.size()));
  std::vector<Candidate> all;
  all.reserve(h.values.size() + h.penalized.size());
  for (size_t i = 0; i < h.values.size(); ++i) {
    const bool touched = std::binary_search(h.penalized.begin(), h.penalized.end(), h.tokens[i]);
    if (!touched) all.push_back({static_cast<double>(h.values[i]), h.tokens[i]});
  }
  for (size_t i = 0; i < h.penalized.size(); ++i)
    all.push_back({penalize(static_cast<double>(h.penalized_values[i]), options_), h.penalized[i]});
  const size_t k = std::min(want, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end(), before);
  all.resize(k);
  const double top = all.front().z;
  if (options_.temperature == 0) return {{all.front().token, 1.0}};
  size_t keep = all.size();
  if (options_.top_p < 1.0)
    if (const size_t p = top_p_prefix(options_, all, top, false, 0.0)) keep = p;
  return filter_head(options_, all, keep, top, false, 0.0);
}

void best_logits(std::span<const float> logits, size_t m, std::vector<float>& values, std::vector<int32_t>& tokens) {
  const Penalized z(logits, {}, SamplerOptions{});
  const std::vector<Candidate> head = best_of(z, std::min(m, logits.size()));
  values.resize(head.size());
  tokens.resize(head.size());
  for (size_t i = 0; i < head.size(); ++i) {
    values[i] = static_cast<float>(head[i].z);
    tokens[i] = head[i].token;
  }
}

std::vector<double> Sampler::distribution(std::span<const float> logits, std::span<const int32_t> recent) const {
  std::vector<double> p(logits.size(), 0.0);
  for (const auto& [token, prob] : kept(logits, recent)) p[static_cast<size_t>(token)] = prob;
  return p;
}

double Sampler::uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }

std::vector<double> Sampler::next_uniforms(int64_t n) const {
  Sampler copy = *this;
  std::vector<double> out(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (double& u : out) u = copy.uniform();
  return out;
}

void Sampler::skip_draws(int64_t n) {
  for (int64_t i = 0; i < n; ++i) (void)uniform();
}

int32_t Sampler::sample_head_at(const LogitHead& head, double u) const {
  std::vector<std::pair<int32_t, double>> k = kept_from_head(head);
  if (options_.temperature == 0) return k.front().first;
  return draw_at(std::move(k), u);
}

int32_t Sampler::draw(std::vector<std::pair<int32_t, double>> k) { return draw_at(std::move(k), uniform()); }

int32_t Sampler::draw_at(std::vector<std::pair<int32_t, double>> k, double u) {
  // The draw walks the kept tokens (each once) in token order: many are laid out by token instead of
  // sorted (a kept probability of 0 is passed over either way, as an absent token is). (The device's
  // walk for chained steps, kernels/sample_head.cuh, is this one for heads below 4,096.)
  double cum = 0;
  if (k.size() >= 4096) {
    int32_t lo = k.front().first, hi = lo;
    for (const auto& [token, prob] : k) lo = std::min(lo, token), hi = std::max(hi, token);
    std::vector<double> by_token(static_cast<size_t>(hi - lo) + 1, 0.0);
    for (const auto& [token, prob] : k) by_token[static_cast<size_t>(token - lo)] = prob;
    int32_t last = lo;
    for (size_t i = 0; i < by_token.size(); ++i) {
      if (by_token[i] == 0) continue;
      last = lo + static_cast<int32_t>(i);
      cum += by_token[i];
      if (u < cum) return last;
    }
    return last;  // rounding left u past the sum
  }
  std::sort(k.begin(), k.end());
  int32_t last = k.front().first;
  for (const auto& [token, prob] : k) {
    if (prob == 0) continue;
    last = token;
    cum += prob;
    if (u < cum) return token;
  }
  return last;  // rounding left u past the sum
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> recent) {
  if (argmax_only()) return argmax(logits);
  return draw(kept(logits, recent));
}

int32_t Sampler::sample_head(const LogitHead& head) {
  std::vector<std::pair<int32_t, double>> k = kept_from_head(head);
  if (options_.temperature == 0) return k.front().first;
  return draw(std::move(k));
}

std::vector<double> Sampler::distribution_from_head(const LogitHead& head) const {
  std::vector<double> p(static_cast<size_t>(head.n_vocab), 0.0);
  for (const auto& [token, prob] : kept_from_head(head)) p[static_cast<size_t>(token)] = prob;
  return p;
}

}  // namespace lathe
