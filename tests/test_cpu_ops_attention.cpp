// The CPU reference ops, part 2: rope, attention, the cache, and the mixture of experts, each against
// hand-computed values and the identities that define them.
#include "base/error.h"
#include "test_cpu_ops_helpers.h"

#include <cmath>
#include <numbers>

namespace lathe {
namespace {

using test::expect_close;
using test::random_tensor;

double dot(const float* a, const float* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(a[i]) * b[i];
  return s;
}

// ---- rope

TEST(CpuOpsRope, HandComputed) {
  // head_dim 4, n_rot 4, base 100: pair 0 turns by pos, pair 1 by pos / 10.
  Tensor x({1, 1, 4}, {1, 2, 3, 4});
  std::vector<int32_t> pos{2};
  Tensor normal = rope(x, pos, 4, 100, RopeOrder::normal);  // pairs (0, 1) and (2, 3)
  double c0 = std::cos(2.0), s0 = std::sin(2.0), c1 = std::cos(0.2), s1 = std::sin(0.2);
  EXPECT_FLOAT_EQ(normal.data[0], float(1 * c0 - 2 * s0));
  EXPECT_FLOAT_EQ(normal.data[1], float(1 * s0 + 2 * c0));
  EXPECT_FLOAT_EQ(normal.data[2], float(3 * c1 - 4 * s1));
  EXPECT_FLOAT_EQ(normal.data[3], float(3 * s1 + 4 * c1));
  Tensor neox = rope(x, pos, 4, 100, RopeOrder::neox);  // pairs (0, 2) and (1, 3)
  EXPECT_FLOAT_EQ(neox.data[0], float(1 * c0 - 3 * s0));
  EXPECT_FLOAT_EQ(neox.data[2], float(1 * s0 + 3 * c0));
  EXPECT_FLOAT_EQ(neox.data[1], float(2 * c1 - 4 * s1));
  EXPECT_FLOAT_EQ(neox.data[3], float(2 * s1 + 4 * c1));
}

TEST(CpuOpsRope, PositionZeroIsIdentityAndNormsArePreserved) {
  for (RopeOrder order : {RopeOrder::normal, RopeOrder::neox}) {
    Tensor x = random_tensor({3, 4, 64}, 40);
    std::vector<int32_t> zeros(3, 0), pos{1, 77, 40000};
    EXPECT_EQ(rope(x, zeros, 64, 10000, order).data, x.data);
    Tensor y = rope(x, pos, 64, 10000, order);
    for (int h = 0; h < 12; ++h) {
      const float* a = x.data.data() + h * 64;
      const float* b = y.data.data() + h * 64;
      EXPECT_NEAR(dot(b, b, 64), dot(a, a, 64), 1e-5 * dot(a, a, 64));
    }
  }
}

TEST(CpuOpsRope, DotProductDependsOnlyOnDistance) {
  RopeFreqScaling llama3{"llama3", 8, 1, 4, 8192, {}};
  for (RopeOrder order : {RopeOrder::normal, RopeOrder::neox})
    for (const RopeFreqScaling& scaling : {RopeFreqScaling{}, llama3}) {
      Tensor q = random_tensor({1, 1, 64}, 41), k = random_tensor({1, 1, 64}, 42);
      auto score = [&](int32_t m, int32_t n) {
        std::vector<int32_t> pm{m}, pn{n};
        Tensor a = rope(q, pm, 64, 500000, order, scaling), b = rope(k, pn, 64, 500000, order, scaling);
        return dot(a.data.data(), b.data.data(), 64);
      };
      double reference = score(10, 3);
      EXPECT_NEAR(score(1007, 1000), reference, 1e-4);
      EXPECT_NEAR(score(20007, 20000), reference, 1e-3);
      EXPECT_GT(std::fabs(score(12, 3) - reference), 1e-3);  // and the distance does matter
    }
}

TEST(CpuOpsRope, NeoxIsNormalOnPermutedDims) {
  // Send dims (j, j + half) of neox to (2j, 2j + 1) of normal: the two orders then agree.
  int64_t d = 16, half = 8;
  Tensor x = random_tensor({2, 3, d}, 43);
  Tensor permuted = x;
  for (int64_t h = 0; h < 6; ++h)
    for (int64_t j = 0; j < half; ++j) {
      permuted.data[h * d + 2 * j] = x.data[h * d + j];
      permuted.data[h * d + 2 * j + 1] = x.data[h * d + j + half];
    }
  std::vector<int32_t> pos{5, 300};
  Tensor neox = rope(x, pos, d, 10000, RopeOrder::neox);
  Tensor normal = rope(permuted, pos, d, 10000, RopeOrder::normal);
  for (int64_t h = 0; h < 6; ++h)
    for (int64_t j = 0; j < half; ++j) {
      EXPECT_EQ(neox.data[h * d + j], normal.data[h * d + 2 * j]);
      EXPECT_EQ(neox.data[h * d + j + half], normal.data[h * d + 2 * j + 1]);
    }
}

TEST(CpuOpsRope, PartialRotaryLeavesTheRestAlone) {
  Tensor x = random_tensor({2, 2, 24}, 44);
  std::vector<int32_t> pos{9, 1234};
  Tensor y = rope(x, pos, 16, 10000, RopeOrder::neox);
  Tensor head16({2, 2, 16});
  for (int h = 0; h < 4; ++h) std::copy_n(x.data.data() + h * 24, 16, head16.data.data() + h * 16);
  Tensor y16 = rope(head16, pos, 16, 10000, RopeOrder::neox);
  for (int h = 0; h < 4; ++h)
    for (int i = 0; i < 24; ++i)
      EXPECT_EQ(y.data[h * 24 + i], i < 16 ? y16.data[h * 16 + i] : x.data[h * 24 + i]);
  EXPECT_THROW(rope(x, pos, 26, 10000, RopeOrder::neox), UserError);
  EXPECT_THROW(rope(x, pos, 15, 10000, RopeOrder::neox), UserError);
}

TEST(CpuOpsRope, LinearScalingDividesPositions) {
  Tensor x = random_tensor({3, 1, 32}, 45);
  std::vector<int32_t> scaled{0, 40, 4000}, plain{0, 10, 1000};
  RopeFreqScaling linear{"linear", 4, 1, 4, 8192, {}};
  expect_close(rope(x, scaled, 32, 10000, RopeOrder::normal, linear),
               rope(x, plain, 32, 10000, RopeOrder::normal), 1e-6);
}

TEST(CpuOpsRope, Llama3ScalingPerBand) {
  // The angle each pair turns by at position 1, read back from a unit vector on that pair.
  int64_t d = 128;
  double base = 500000, factor = 8, context = 8192;
  RopeFreqScaling llama3{"llama3", factor, 1, 4, int64_t(context), {}};
  Tensor x({1, 1, d});
  for (int64_t j = 0; j < d / 2; ++j) x.data[2 * j] = 1;
  std::vector<int32_t> one{1};
  Tensor y = rope(x, one, d, base, RopeOrder::normal, llama3);
  int kept = 0, slowed = 0, smoothed = 0;
  for (int64_t j = 0; j < d / 2; ++j) {
    double freq = std::pow(base, -2.0 * j / d), wavelen = 2 * std::numbers::pi / freq;
    double angle = std::atan2(y.data[2 * j + 1], y.data[2 * j]);
    if (wavelen < context / 4) {
      EXPECT_NEAR(angle, freq, 1e-6) << j;
      ++kept;
    } else if (wavelen > context) {
      EXPECT_NEAR(angle, freq / factor, 1e-9) << j;
      ++slowed;
    } else {  // strictly between the two: a blend, slower than freq, faster than freq / factor
      EXPECT_LT(angle, freq) << j;
      EXPECT_GT(angle, freq / factor) << j;
      ++smoothed;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(slowed, 0);
  EXPECT_GT(smoothed, 0);
  EXPECT_THROW(rope(x, one, d, base, RopeOrder::normal, RopeFreqScaling{"yarn", 1, 1, 4, 8192, {}}), UserError);
}

TEST(CpuOpsRope, FrequencyFactorsDivideFrequencies) {
  // GGUF llama 3 stores the llama3 scaling as divisors per pair: freq_j / (scaled freq_j).
  int64_t d = 64;
  double base = 500000;
  RopeFreqScaling llama3{"llama3", 8, 1, 4, 8192, {}};
  Tensor unit({1, 1, d});
  for (int64_t j = 0; j < d / 2; ++j) unit.data[2 * j] = 1;
  std::vector<int32_t> one{1};
  Tensor turned = rope(unit, one, d, base, RopeOrder::normal, llama3);
  RopeFreqScaling factors;
  for (int64_t j = 0; j < d / 2; ++j) {
    double angle = std::atan2(turned.data[2 * j + 1], turned.data[2 * j]);
    factors.freq_factors.push_back(float(std::pow(base, -2.0 * j / d) / angle));
  }
  Tensor x = random_tensor({3, 2, d}, 46);
  std::vector<int32_t> pos{0, 3, 100};  // small: the factors read back from f32 are good to 1e-7
  expect_close(rope(x, pos, d, base, RopeOrder::normal, factors),
               rope(x, pos, d, base, RopeOrder::normal, llama3), 1e-5);
  factors.freq_factors.pop_back();
  EXPECT_THROW(rope(x, pos, d, base, RopeOrder::normal, factors), UserError);
}

// ---- attention

AttentionOptions attn(double scale = 0, int64_t window = 0, double cap = 0, std::vector<float> sinks = {}) {
  return {scale, window, cap, std::move(sinks)};
}

TEST(CpuOpsAttention, HandComputed) {
  // One head, d = 2, scale 1: scores 1 and 2 at slots 0 and 1.
  Tensor q({1, 1, 2}, {1, 0});
  Tensor k({2, 1, 2}, {1, 5, 2, -3});
  Tensor v({2, 1, 2}, {10, 0, 0, 10});
  std::vector<int32_t> pos{1};
  Tensor y = attention(q, k, v, pos, attn(1));
  double w0 = std::exp(1.0), w1 = std::exp(2.0);
  EXPECT_FLOAT_EQ(y.data[0], float(10 * w0 / (w0 + w1)));
  EXPECT_FLOAT_EQ(y.data[1], float(10 * w1 / (w0 + w1)));
  // With a sink of logit 0: the denominator gains exp(0).
  Tensor s = attention(q, k, v, pos, attn(1, 0, 0, {0}));
  EXPECT_FLOAT_EQ(s.data[0], float(10 * w0 / (w0 + w1 + 1)));
  EXPECT_FLOAT_EQ(s.data[1], float(10 * w1 / (w0 + w1 + 1)));
  // Capped at 1: scores tanh(1) and tanh(2).
  Tensor c = attention(q, k, v, pos, attn(1, 0, 1));
  double c0 = std::exp(std::tanh(1.0)), c1 = std::exp(std::tanh(2.0));
  EXPECT_FLOAT_EQ(c.data[0], float(10 * c0 / (c0 + c1)));
  // The default scale is 1 / sqrt(d).
  Tensor dflt = attention(q, k, v, pos, {});
  double d0 = std::exp(1 / std::sqrt(2.0)), d1 = std::exp(2 / std::sqrt(2.0));
  EXPECT_FLOAT_EQ(dflt.data[0], float(10 * d0 / (d0 + d1)));
}

TEST(CpuOpsAttention, TheCacheStoresF16ValuesWhereAskedTo) {
  // cache_append's f16 form (the lane's cache replayed, LaneRounding): each stored value is the f16
  // rounding of the row's; the plain form stores the row as it is.
  Tensor cache({4, 2, 8}), cache16({4, 2, 8});
  Tensor x({1, 2, 8});
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = 0.1f * static_cast<float>(i) + 1e-4f;
  const int32_t at[1] = {2};
  cache_append(cache, x, at);
  cache_append(cache16, x, at, true);
  int rounded = 0;
  for (int64_t i = 0; i < 16; ++i) {
    EXPECT_EQ(cache.row(2)[i], x.data[i]);
    EXPECT_EQ(cache16.row(2)[i], f16_rounded(x.data[i]));
    rounded += cache16.row(2)[i] != x.data[i];
  }
  EXPECT_GT(rounded, 8);
}

TEST(CpuOpsAttention, TheFlashRoundingsByHand) {
  // f16_flash (the lane's flash kernel replayed): q rounded to f16, each weight exp(s - max) rounded to
  // f16 where it multiplies v, the denominator over the unrounded weights. One head, three slots.
  Tensor q({1, 1, 2}, {0.3001f, -1.2345f});
  Tensor k({3, 1, 2}, {1.0f, 0.5f, -0.25f, 2.0f, 0.75f, 0.125f});
  Tensor v({3, 1, 2}, {1.5f, -2.0f, 0.333f, 4.0f, -0.7f, 0.9f});
  const int32_t pos[1] = {2};
  AttentionOptions o;
  o.scale = 0.7;
  o.f16_flash = true;
  const Tensor got = attention(q, k, v, pos, o);
  auto f16 = [](double x) { return static_cast<double>(f16_rounded(static_cast<float>(x))); };
  const double q0 = f16(0.3001f), q1 = f16(-1.2345f);
  double s[3], m = -INFINITY;
  for (int p = 0; p < 3; ++p) m = std::max(m, s[p] = 0.7 * (q0 * k.data[2 * p] + q1 * k.data[2 * p + 1]));
  double den = 0, num[2] = {0, 0};
  for (int p = 0; p < 3; ++p) {
    const double w = std::exp(s[p] - m);
    den += w;
    for (int i = 0; i < 2; ++i) num[i] += f16(w) * v.data[2 * p + i];
  }
  for (int i = 0; i < 2; ++i) EXPECT_FLOAT_EQ(got.data[i], static_cast<float>(num[i] / den));
  o.f16_flash = false;
  EXPECT_NE(attention(q, k, v, pos, o).data, got.data);  // the plain form does not round
}

TEST(CpuOpsAttention, OneVisibleSlotReturnsItsValue) {
  Tensor q = random_tensor({3, 4, 8}, 50), k = random_tensor({6, 2, 8}, 51), v = random_tensor({6, 2, 8}, 52);
  std::vector<int32_t> first{0, 0, 0}, later{2, 5, 3};
  Tensor at_zero = attention(q, k, v, first, {});
  Tensor window_one = attention(q, k, v, later, attn(0, 1));
  for (int r = 0; r < 3; ++r)
    for (int h = 0; h < 4; ++h)
      for (int i = 0; i < 8; ++i) {
        EXPECT_FLOAT_EQ(at_zero.data[(r * 4 + h) * 8 + i], v.data[(0 * 2 + h / 2) * 8 + i]);
        EXPECT_FLOAT_EQ(window_one.data[(r * 4 + h) * 8 + i], v.data[(later[r] * 2 + h / 2) * 8 + i]);
      }
}

TEST(CpuOpsAttention, GroupedHeadsEqualRepeatedKvHeads) {
  for (auto [n_head, n_head_kv] : {std::pair{8, 2}, {6, 3}, {4, 1}}) {
    int64_t n_ctx = 9, d = 16, group = n_head / n_head_kv;
    Tensor q = random_tensor({4, n_head, d}, 53), k = random_tensor({n_ctx, n_head_kv, d}, 54);
    Tensor v = random_tensor({n_ctx, n_head_kv, d}, 55);
    Tensor k_full({n_ctx, n_head, d}), v_full({n_ctx, n_head, d});
    for (int64_t p = 0; p < n_ctx; ++p)
      for (int64_t h = 0; h < n_head; ++h) {
        std::copy_n(k.data.data() + (p * n_head_kv + h / group) * d, d, k_full.data.data() + (p * n_head + h) * d);
        std::copy_n(v.data.data() + (p * n_head_kv + h / group) * d, d, v_full.data.data() + (p * n_head + h) * d);
      }
    std::vector<int32_t> pos{0, 3, 8, 5};
    EXPECT_EQ(attention(q, k, v, pos, {}).data, attention(q, k_full, v_full, pos, {}).data);
  }
}

TEST(CpuOpsAttention, CausalWindowAndSinkIdentities) {
  Tensor q = random_tensor({3, 4, 8}, 56), k = random_tensor({10, 2, 8}, 57), v = random_tensor({10, 2, 8}, 58);
  std::vector<int32_t> pos{4, 9, 6};
  Tensor base = attention(q, k, v, pos, {});
  // Slots after a row's position are never read: changing them changes nothing.
  Tensor k2 = k, v2 = v;
  for (int64_t p = 7; p < 10; ++p)
    for (int i = 0; i < 16; ++i) k2.data[p * 16 + i] = 99, v2.data[p * 16 + i] = -99;
  std::vector<int32_t> early{4, 6};
  Tensor q_early({2, 4, 8});
  std::copy_n(q.row(0), 32, q_early.row(0));
  std::copy_n(q.row(2), 32, q_early.row(1));
  EXPECT_EQ(attention(q_early, k, v, early, {}).data, attention(q_early, k2, v2, early, {}).data);
  // Sinks of -inf are no sinks; a window at least as long as the context is no window.
  std::vector<float> no_sinks(4, -INFINITY);
  EXPECT_EQ(attention(q, k, v, pos, attn(0, 0, 0, no_sinks)).data, base.data);
  EXPECT_EQ(attention(q, k, v, pos, attn(0, 10)).data, base.data);
  // A window of w equals attention over a cache holding only those w slots.
  int64_t w = 3;
  Tensor k_last({w, 2, 8}), v_last({w, 2, 8}), q1({1, 4, 8});
  std::copy_n(k.row(9 - w + 1), w * 16, k_last.data.data());
  std::copy_n(v.row(9 - w + 1), w * 16, v_last.data.data());
  std::copy_n(q.row(1), 32, q1.data.data());
  std::vector<int32_t> nine{9}, last{int32_t(w - 1)};
  EXPECT_EQ(attention(q1, k, v, nine, attn(0, w)).data, attention(q1, k_last, v_last, last, {}).data);
  // A very large cap is nearly no cap.
  expect_close(attention(q, k, v, pos, attn(0, 0, 1e6)), base, 1e-6);
}

TEST(CpuOpsAttention, ValueHeadSizeMayDiffer) {
  // v of 3 values per head reads as the first 3 columns of a v of 8.
  Tensor q = random_tensor({2, 4, 8}, 66), k = random_tensor({5, 2, 8}, 67), v8 = random_tensor({5, 2, 8}, 68);
  Tensor v3({5, 2, 3});
  for (int64_t s = 0; s < 10; ++s) std::copy_n(v8.data.data() + s * 8, 3, v3.data.data() + s * 3);
  std::vector<int32_t> pos{2, 4};
  Tensor y3 = attention(q, k, v3, pos, attn(0, 2));
  Tensor y8 = attention(q, k, v8, pos, attn(0, 2));
  ASSERT_EQ(y3.shape, (std::vector<int64_t>{2, 4, 3}));
  for (int64_t s = 0; s < 8; ++s)
    for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(y3.data[s * 3 + i], y8.data[s * 8 + i]);
}

TEST(CpuOpsAttention, Errors) {
  Tensor q({1, 4, 8}), k({5, 3, 8}), v({5, 3, 8}), k2({5, 2, 8}), v2({5, 2, 8});
  std::vector<int32_t> pos{1}, beyond{5};
  EXPECT_THROW(attention(q, k, v, pos, {}), UserError);  // 4 heads over 3 kv heads
  EXPECT_THROW(attention(q, k2, v2, beyond, {}), UserError);
  EXPECT_THROW(attention(q, k2, v2, pos, attn(0, 0, 0, {0, 0})), UserError);
}

TEST(CpuOpsAttention, CacheAppend) {
  Tensor cache({5, 2, 3});
  Tensor x = random_tensor({2, 2, 3}, 59);
  std::vector<int32_t> pos{3, 1};
  cache_append(cache, x, pos);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(cache.data[3 * 6 + i], x.data[i]);
    EXPECT_EQ(cache.data[1 * 6 + i], x.data[6 + i]);
    EXPECT_EQ(cache.data[0 * 6 + i], 0);
    EXPECT_EQ(cache.data[4 * 6 + i], 0);
  }
  std::vector<int32_t> beyond{5, 0};
  EXPECT_THROW(cache_append(cache, x, beyond), UserError);
}

// ---- mixture

TEST(CpuOpsMixture, RouteTopK) {
  std::vector<float> logits{1, 3, 3, 0};
  std::vector<int32_t> experts;
  std::vector<float> weights;
  route_top_k(logits, {.k = 2, .renormalize = true}, experts, weights);
  EXPECT_EQ(experts, (std::vector<int32_t>{1, 2}));  // equal logits: the lower index first
  EXPECT_EQ(weights, (std::vector<float>{0.5, 0.5}));
  route_top_k(logits, {.k = 3, .renormalize = false}, experts, weights);
  EXPECT_EQ(experts, (std::vector<int32_t>{1, 2, 0}));
  double z = std::exp(1.0) + 2 * std::exp(3.0) + 1;
  EXPECT_FLOAT_EQ(weights[0], float(std::exp(3.0) / z));
  EXPECT_FLOAT_EQ(weights[2], float(std::exp(1.0) / z));
  std::vector<float> ties{2, 2, 2, 2};
  route_top_k(ties, {.k = 2, .renormalize = true}, experts, weights);
  EXPECT_EQ(experts, (std::vector<int32_t>{0, 1}));
  EXPECT_THROW(route_top_k(logits, {.k = 5, .renormalize = true}, experts, weights), UserError);
}

struct Experts {
  test::OwnedMatrix router, gate, up, down;
};

Experts random_experts(int64_t n_expert, int64_t n, int64_t n_ff, uint32_t seed) {
  return {test::f32_matrix(1, n_expert, n, seed), test::f32_matrix(n_expert, n_ff, n, seed + 1),
          test::f32_matrix(n_expert, n_ff, n, seed + 2), test::f32_matrix(n_expert, n, n_ff, seed + 3)};
}

Tensor expert_output(const Experts& m, const Tensor& x, int64_t e) {  // down_e(silu(gate_e x) * up_e x)
  return product(swiglu(product(x, m.gate.ref.expert(e)), product(x, m.up.ref.expert(e))),
                 m.down.ref.expert(e));
}

// The routing margin: the smallest gap between the k-th and (k+1)-th logit over the calls since the
// reset, relative to the row's largest |logit|; ties give 0, keeping every expert gives none (1).
TEST(CpuOpsMixture, RoutingMarginIsTheClosestCall) {
  std::vector<int32_t> experts;
  std::vector<float> weights;
  reset_routing_margin();
  EXPECT_EQ(routing_margin(), 1.0);
  const std::vector<float> far = {4.0f, -1.0f, 2.0f, 0.0f};
  route_top_k(far, {.k = 2, .renormalize = true}, experts, weights);
  EXPECT_NEAR(routing_margin(), (2.0 - 0.0) / 4.0, 1e-7);
  const std::vector<float> near = {1.0f, 8.0f, 0.999f, 0.5f};
  route_top_k(near, {.k = 2, .renormalize = true}, experts, weights);
  EXPECT_NEAR(routing_margin(), (1.0 - 0.999) / 8.0, 1e-7);
  route_top_k(far, {.k = 2, .renormalize = true}, experts, weights);  // a wider call keeps the closest
  EXPECT_NEAR(routing_margin(), (1.0 - 0.999) / 8.0, 1e-7);
  route_top_k(far, {.k = 4, .renormalize = true}, experts, weights);  // all kept: no call to make
  EXPECT_NEAR(routing_margin(), (1.0 - 0.999) / 8.0, 1e-7);
  const std::vector<float> tie = {3.0f, 1.0f, 3.0f, 1.0f};
  route_top_k(tie, {.k = 1, .renormalize = true}, experts, weights);
  EXPECT_EQ(routing_margin(), 0.0);
  reset_routing_margin();
  EXPECT_EQ(routing_margin(), 1.0);
}

TEST(CpuOpsMixture, AllExpertsUnnormalizedIsTheDenseSum) {
  int64_t n_expert = 5, n = 16, n_ff = 24;
  Experts m = random_experts(n_expert, n, n_ff, 60);
  Tensor x = random_tensor({3, n}, 61);
  Tensor y = mixture(x, m.router.ref, m.gate.ref, m.up.ref, m.down.ref, {.k = n_expert, .renormalize = false});
  Tensor p = softmax(product(x, m.router.ref));
  std::vector<double> dense(3 * n, 0.0);
  for (int64_t e = 0; e < n_expert; ++e) {
    Tensor ye = expert_output(m, x, e);
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t c = 0; c < n; ++c) dense[r * n + c] += double(p.data[r * n_expert + e]) * ye.data[r * n + c];
  }
  Tensor expected({3, n});
  for (size_t i = 0; i < dense.size(); ++i) expected.data[i] = float(dense[i]);
  expect_close(y, expected, 1e-6);
}

TEST(CpuOpsMixture, TopOneRenormalizedIsTheBestExpert) {
  int64_t n_expert = 6, n = 8, n_ff = 12;
  Experts m = random_experts(n_expert, n, n_ff, 62);
  Tensor x = random_tensor({4, n}, 63);
  Tensor y = mixture(x, m.router.ref, m.gate.ref, m.up.ref, m.down.ref, {.k = 1, .renormalize = true});
  std::vector<int32_t> best = argmax(product(x, m.router.ref));
  for (int64_t r = 0; r < 4; ++r) {
    Tensor xr({1, n}, std::vector<float>(x.row(r), x.row(r) + n));
    Tensor expected = expert_output(m, xr, best[r]);
    for (int64_t c = 0; c < n; ++c) EXPECT_EQ(y.data[r * n + c], expected.data[c]) << r << " " << c;
  }
}

TEST(CpuOpsMixture, RowsAreIndependent) {
  int64_t n_expert = 8, n = 16, n_ff = 8;
  Experts m = random_experts(n_expert, n, n_ff, 64);
  Tensor x = random_tensor({7, n}, 65);
  MixtureOptions options{.k = 3, .renormalize = true};
  Tensor all = mixture(x, m.router.ref, m.gate.ref, m.up.ref, m.down.ref, options);
  for (int64_t r = 0; r < 7; ++r) {
    Tensor xr({1, n}, std::vector<float>(x.row(r), x.row(r) + n));
    Tensor yr = mixture(xr, m.router.ref, m.gate.ref, m.up.ref, m.down.ref, options);
    for (int64_t c = 0; c < n; ++c) EXPECT_EQ(all.data[r * n + c], yr.data[c]);
  }
  MatrixRef short_down = m.down.ref;
  short_down.n_stack = 7;
  EXPECT_THROW(mixture(x, m.router.ref, m.gate.ref, m.up.ref, short_down, options), UserError);
  EXPECT_THROW(mixture(x, m.router.ref, m.gate.ref, m.up.ref, m.down.ref, {.k = 9, .renormalize = true}), UserError);
}

}  // namespace
}  // namespace lathe
