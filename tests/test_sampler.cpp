// The sampler: temperature 0 is argmax; top-k never picks outside the k; top-p and min-p keep the
// right sets; the penalty moves the right tokens; a fixed seed repeats; the draw follows the
// distribution (chi-square).
#include "runtime/sampler.h"

#include "base/error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

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
