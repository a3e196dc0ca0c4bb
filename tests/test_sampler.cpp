// The sampler: temperature 0 is argmax; top-k never picks outside the k; top-p and min-p keep the
// right sets; the penalty moves the right tokens; a fixed seed repeats; the draw follows the
// distribution (chi-square).
#include "runtime/sampler.h"

#include "base/error.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <span>

namespace lathe {
namespace {

std::vector<float> logits_of(std::initializer_list<float> v) { return std::vector<float>(v); }

TEST(Sampler, TemperatureZeroIsArgmax) {
  SamplerOptions o;
  o.temperature = 0;
  Sampler s(o);
  const std::vector<float> l = logits_of({0.1f, 3.0f, -1.0f, 3.0f, 2.9f});
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.sample(l, {}), 1);  // ties to the lower index
}

TEST(Sampler, TopKNeverPicksOutsideTheK) {
  SamplerOptions o;
  o.temperature = 5.0;  // nearly flat, so anything outside would show up
  o.top_k = 3;
  o.top_p = 1.0;
  o.min_p = 0;
  Sampler s(o);
  std::vector<float> l(100);
  for (int i = 0; i < 100; ++i) l[i] = static_cast<float>((i * 37) % 100) / 10.0f;
  // The three largest: i with (i*37)%100 = 99, 98, 97.
  std::set<int> allowed;
  for (int i = 0; i < 100; ++i)
    if ((i * 37) % 100 >= 97) allowed.insert(i);
  ASSERT_EQ(allowed.size(), 3u);
  std::set<int> seen;
  for (int i = 0; i < 2000; ++i) {
    const int t = s.sample(l, {});
    ASSERT_TRUE(allowed.count(t)) << t;
    seen.insert(t);
  }
  EXPECT_EQ(seen, allowed);
}

TEST(Sampler, TopPAndMinPKeepTheRightSets) {
  // Probabilities at temperature 1: softmax of log(p) gives p back.
  const std::vector<float> l = logits_of({std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)});
  SamplerOptions o;
  o.temperature = 1;
  o.top_k = 0;
  o.min_p = 0;
  o.top_p = 0.8;  // 0.5 + 0.3 reaches 0.8
  std::vector<double> p = Sampler(o).distribution(l, {});
  EXPECT_NEAR(p[0], 0.5 / 0.8, 1e-6);
  EXPECT_NEAR(p[1], 0.3 / 0.8, 1e-6);
  EXPECT_EQ(p[2], 0.0);
  o.top_p = 1.0;
  o.min_p = 0.25;  // keep p >= 0.125
  p = Sampler(o).distribution(l, {});
  EXPECT_GT(p[2], 0.0);
  EXPECT_EQ(p[3], 0.0);
  EXPECT_NEAR(p[0] + p[1] + p[2], 1.0, 1e-9);
}

TEST(Sampler, RepeatPenaltyLowersRecentTokens) {
  SamplerOptions o;
  o.temperature = 0;
  o.repeat_penalty = 2.0;
  Sampler s(o);
  const std::vector<float> l = logits_of({2.0f, 1.5f, -1.0f});
  EXPECT_EQ(s.sample(l, std::vector<int32_t>{0}), 1);  // 2.0 / 2 = 1.0 < 1.5
  EXPECT_EQ(s.sample(l, std::vector<int32_t>{1}), 0);
}

TEST(Sampler, FixedSeedRepeats) {
  SamplerOptions o;
  o.temperature = 1.0;
  o.top_k = 0;
  o.top_p = 1;
  o.min_p = 0;
  o.seed = 42;
  std::vector<float> l(50);
  for (int i = 0; i < 50; ++i) l[i] = std::sin(static_cast<float>(i));
  Sampler a(o), b(o);
  std::vector<int> xa, xb;
  for (int i = 0; i < 200; ++i) {
    xa.push_back(a.sample(l, {}));
    xb.push_back(b.sample(l, {}));
  }
  EXPECT_EQ(xa, xb);
  o.seed = 43;
  Sampler c(o);
  std::vector<int> xc;
  for (int i = 0; i < 200; ++i) xc.push_back(c.sample(l, {}));
  EXPECT_NE(xa, xc);
}

TEST(Sampler, DrawsFollowTheDistribution) {
  SamplerOptions o;
  o.temperature = 0.7;
  o.top_k = 0;
  o.top_p = 1;
  o.min_p = 0;
  Sampler s(o);
  const std::vector<float> l = logits_of({1.0f, 0.5f, 0.0f, -0.5f, -2.0f});
  const std::vector<double> p = s.distribution(l, {});
  const int n = 20000;
  std::map<int, int> count;
  for (int i = 0; i < n; ++i) ++count[s.sample(l, {})];
  double chi2 = 0;
  for (int i = 0; i < 5; ++i) {
    const double e = p[i] * n;
    chi2 += (count[i] - e) * (count[i] - e) / e;
  }
  EXPECT_LT(chi2, 18.47);  // chi-square, 4 degrees of freedom, p = 0.001
}

// The filters as first written: every candidate sorted (stable, by logit), then top-k, top-p, min-p
// and the softmax at the temperature over the sorted head. The sampler sorts only the head that can
// survive; this is what it must equal.
std::vector<double> full_sort_distribution(const SamplerOptions& o, std::span<const float> logits,
                                           std::span<const int32_t> recent) {
  const size_t n = logits.size();
  std::vector<double> z(logits.begin(), logits.end());
  if (o.repeat_penalty != 1.0) {
    const size_t from = recent.size() > static_cast<size_t>(o.repeat_last_n) ? recent.size() - o.repeat_last_n : 0;
    std::set<int32_t> seen(recent.begin() + static_cast<long>(from), recent.end());
    for (int32_t t : seen) z[t] = z[t] > 0 ? z[t] / o.repeat_penalty : z[t] * o.repeat_penalty;
  }
  std::vector<double> p(n, 0.0);
  if (o.temperature == 0) {
    p[static_cast<size_t>(std::max_element(z.begin(), z.end()) - z.begin())] = 1.0;
    return p;
  }
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return z[a] > z[b]; });
  size_t keep = o.top_k > 0 ? std::min(n, static_cast<size_t>(o.top_k)) : n;
  auto softmax = [&](double t) {
    std::vector<double> q(keep);
    double sum = 0;
    for (size_t i = 0; i < keep; ++i) sum += q[i] = std::exp((z[order[i]] - z[order[0]]) / t);
    for (double& v : q) v /= sum;
    return q;
  };
  if (o.top_p < 1.0) {
    const std::vector<double> q = softmax(1.0);
    double cum = 0;
    for (size_t i = 0; i < keep; ++i)
      if ((cum += q[i]) >= o.top_p) {
        keep = i + 1;
        break;
      }
  }
  if (o.min_p > 0) {
    const std::vector<double> q = softmax(1.0);
    size_t k = 1;
    while (k < keep && q[k] >= o.min_p * q[0]) ++k;
    keep = k;
  }
  const std::vector<double> q = softmax(o.temperature);
  for (size_t i = 0; i < keep; ++i) p[order[i]] = q[i];
  return p;
}

// Logits of a vocabulary: normal of a given spread, every third one rounded to a quarter (ties), a
// few at -infinity (masked tokens).
std::vector<float> vocabulary_logits(size_t n, float spread, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<float> l(n);
  for (size_t i = 0; i < n; ++i) {
    l[i] = normal(rng);
    if (i % 3 == 0) l[i] = std::round(l[i] * 4) / 4;
    if (i % 97 == 50) l[i] = -INFINITY;
  }
  return l;
}

TEST(Sampler, EqualsTheFullSortOverASweepOfOptions) {
  int cases = 0;
  for (const size_t n : {size_t{1}, size_t{7}, size_t{300}, size_t{5000}}) {
    for (const float spread : {0.5f, 3.0f}) {
      const std::vector<float> l = vocabulary_logits(n, spread, static_cast<uint32_t>(n * 10 + spread));
      std::vector<int32_t> recent;
      for (size_t i = 0; i < 80 && n > 1; ++i) recent.push_back(static_cast<int32_t>((i * 131) % n));
      for (const double temperature : {0.0, 0.4, 1.0, 1.8})
        for (const int top_k : {0, 1, 40, 1000})
          for (const double top_p : {1.0, 0.9, 0.3})
            for (const double min_p : {0.0, 0.05, 0.4})
              for (const double penalty : {1.0, 1.3}) {
                SamplerOptions o;
                o.temperature = temperature;
                o.top_k = top_k;
                o.top_p = top_p;
                o.min_p = min_p;
                o.repeat_penalty = penalty;
                const std::vector<double> want = full_sort_distribution(o, l, recent);
                const std::vector<double> got = Sampler(o).distribution(l, recent);
                const std::string what = fmt::format("n {} spread {} t {} k {} p {} min-p {} penalty {}", n, spread,
                                                     temperature, top_k, top_p, min_p, penalty);
                ASSERT_EQ(got.size(), want.size()) << what;
                if (top_k > 0 || temperature == 0) {
                  ASSERT_EQ(got, want) << what;  // the same sums in the same order: the same bits
                } else {
                  // Without top-k the sums over the whole vocabulary run in another order: rounding.
                  for (size_t i = 0; i < n; ++i) {
                    ASSERT_EQ(got[i] == 0, want[i] == 0) << what << ": token " << i;
                    ASSERT_NEAR(got[i], want[i], 1e-12) << what << ": token " << i;
                  }
                }
                ++cases;
              }
    }
  }
  EXPECT_EQ(cases, 4 * 2 * 4 * 4 * 3 * 3 * 2);
}

TEST(Sampler, ManyTiedLogitsKeepTheFullSortsOrder) {
  // A flat row without top-k (the sampler then orders thousands of candidates by their bits): long runs
  // of equal logits, -0 beside +0 (equal, so token order decides), and top-p cutting inside a run, so a
  // tie put out of token order would keep another set of tokens.
  const size_t n = 20000;
  std::vector<float> l(n);
  for (size_t i = 0; i < n; ++i) {
    const size_t r = (i * 7919) % 5;
    l[i] = r == 0 ? 0.0f : r == 1 ? -0.0f : r == 2 ? 0.25f : r == 3 ? -0.25f : 0.5f;
  }
  std::vector<int32_t> recent{3, 8, 19999, 12345};
  for (const double top_p : {0.3, 0.5, 0.77})
    for (const double penalty : {1.0, 1.5}) {
      SamplerOptions o;
      o.temperature = 1.0;
      o.top_k = 0;
      o.top_p = top_p;
      o.min_p = 0;
      o.repeat_penalty = penalty;
      const std::vector<double> want = full_sort_distribution(o, l, recent), got = Sampler(o).distribution(l, recent);
      size_t kept = 0;
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(got[i] == 0, want[i] == 0) << "top-p " << top_p << " penalty " << penalty << ": token " << i;
        ASSERT_NEAR(got[i], want[i], 1e-12);
        kept += got[i] != 0;
      }
      EXPECT_GT(kept, 4096u);  // the many-candidate path
      EXPECT_LT(kept, n);
    }
}

TEST(Sampler, DrawsWhatTheFullSortDrawsOnAQwenVocabulary) {
  // 151,936 logits (Qwen's vocabulary), the defaults and two common variations; the draws of a
  // seeded sampler against draws from the full sort's distribution with the same generator.
  const std::vector<float> l = vocabulary_logits(151936, 2.5f, 11);
  const std::vector<int32_t> recent{5, 17, 99, 151935, 40000};
  SamplerOptions defaults;
  SamplerOptions min_p_alone;
  min_p_alone.top_k = 0;
  min_p_alone.top_p = 1;
  min_p_alone.min_p = 0.1;
  SamplerOptions penalized;
  penalized.repeat_penalty = 1.2;
  penalized.top_p = 0.5;
  for (const SamplerOptions& o : {defaults, min_p_alone, penalized}) {
    const std::vector<double> want = full_sort_distribution(o, l, recent);
    Sampler s(o);
    std::mt19937_64 rng(o.seed);
    for (int i = 0; i < 20; ++i) {
      const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
      double cum = 0;
      int32_t expect = -1;
      for (size_t t = 0; t < want.size() && expect < 0; ++t)
        if (want[t] != 0 && u < (cum += want[t])) expect = static_cast<int32_t>(t);
      EXPECT_EQ(s.sample(l, recent), expect) << "draw " << i << " top-k " << o.top_k << " min-p " << o.min_p;
    }
  }
}

// The head an engine forms (best_logits, the GPU's top_candidates kernel) and the penalized tokens'
// logits: sampling from it is sampling from the row, to the bit, wherever head_size() says a head
// suffices (top-k, or greedy with a penalty); -0 and +0 logits tie as the row's order ties them.
TEST(Sampler, TheHeadGivesTheRowsDistribution) {
  int cases = 0;
  for (const size_t n : {size_t{1}, size_t{7}, size_t{300}, size_t{5000}}) {
    for (const float spread : {0.5f, 3.0f}) {
      std::vector<float> l = vocabulary_logits(n, spread, static_cast<uint32_t>(n * 7 + spread));
      for (size_t i = 1; i < n; i += 11) l[i] = (i / 11) % 2 ? -0.0f : 0.0f;
      std::vector<int32_t> recent;
      for (size_t i = 0; i < 80 && n > 1; ++i) recent.push_back(static_cast<int32_t>((i * 131) % n));
      for (const double temperature : {0.0, 0.4, 1.0})
        for (const int top_k : {1, 40, 1000})
          for (const double top_p : {1.0, 0.9, 0.3})
            for (const double min_p : {0.0, 0.05, 0.4})
              for (const double penalty : {1.0, 1.3, 0.7}) {
                SamplerOptions o;
                o.temperature = temperature;
                o.top_k = top_k;
                o.top_p = top_p;
                o.min_p = min_p;
                o.repeat_penalty = penalty;
                Sampler row(o), from_head(o);
                ASSERT_GT(from_head.head_size(), 0);
                const std::vector<int32_t> pen = from_head.penalized(recent, static_cast<int64_t>(n));
                EXPECT_EQ(pen.empty(), penalty == 1.0 || n == 1);  // n 1: no history
                const size_t m = std::min(n, static_cast<size_t>(from_head.head_size()) + pen.size());
                std::vector<float> values;
                std::vector<int32_t> tokens;
                best_logits(l, m, values, tokens);
                std::vector<float> pen_values;
                for (int32_t t : pen) pen_values.push_back(l[static_cast<size_t>(t)]);
                const LogitHead head{values, tokens, pen, pen_values, static_cast<int64_t>(n)};
                const std::string what = fmt::format("n {} spread {} t {} k {} p {} min-p {} penalty {}", n, spread,
                                                     temperature, top_k, top_p, min_p, penalty);
                ASSERT_EQ(from_head.distribution_from_head(head), row.distribution(l, recent)) << what;
                for (int d = 0; d < 3; ++d) ASSERT_EQ(from_head.sample_head(head), row.sample(l, recent)) << what;
                ++cases;
              }
    }
  }
  EXPECT_EQ(cases, 4 * 2 * 3 * 3 * 3 * 3 * 3);
}

// best_logits: the first m of the row in the head's order (larger first, ties to the lower token).
TEST(Sampler, BestLogitsAreTheStableSortsHead) {
  const std::vector<float> l = vocabulary_logits(3000, 1.0f, 5);
  std::vector<int32_t> order(l.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[a] > l[b]; });
  for (const size_t m : {size_t{1}, size_t{2}, size_t{64}, size_t{1024}, size_t{3000}}) {
    std::vector<float> values;
    std::vector<int32_t> tokens;
    best_logits(l, m, values, tokens);
    ASSERT_EQ(tokens.size(), m);
    for (size_t i = 0; i < m; ++i) {
      ASSERT_EQ(tokens[i], order[i]) << "m " << m << " rank " << i;
      ASSERT_EQ(values[i], l[static_cast<size_t>(order[i])]);
    }
  }
}

TEST(Sampler, TheHeadsSizeAndPenalizedTokens) {
  SamplerOptions o;
  EXPECT_EQ(Sampler(o).head_size(), 40);
  EXPECT_TRUE(Sampler(o).penalized(std::vector<int32_t>{3, 4}, 10).empty());  // no penalty
  o.top_k = 0;
  EXPECT_EQ(Sampler(o).head_size(), 0);  // top-p / min-p over the whole vocabulary need the row
  o.temperature = 0;
  EXPECT_EQ(Sampler(o).head_size(), 1);
  o.repeat_penalty = 1.1;
  o.repeat_last_n = 4;
  EXPECT_EQ(Sampler(o).penalized(std::vector<int32_t>{9, 1, 7, 3, 7, 12, -1}, 10),
            (std::vector<int32_t>{3, 7}));  // the last 4, each once, inside the vocabulary, sorted
}

TEST(Sampler, RefusesBadOptions) {
  SamplerOptions o;
  o.top_p = 0;
  EXPECT_THROW(Sampler{o}, UserError);
  o = {};
  o.temperature = -1;
  EXPECT_THROW(Sampler{o}, UserError);
}

}  // namespace
}  // namespace lathe
