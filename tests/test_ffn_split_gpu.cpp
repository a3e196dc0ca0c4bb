// A decode row's feed-forward half in one launch, down split along its input (kernels/ffn_split_launch.h),
// against an f64 reference on the host from the same bytes: s = x + y (or the fixed-point s_in),
// h = s / rms(s) * w, a = silu(gate h) * (up h), s_out = s + down a. Over widths (the 0.6B's and
// the 30B's n_embd among them), both int8 contracts, with and without y, then chained (s_in the last
// launch's sum). Each case checks:
//   - s_out within the contract's bound of the reference, relative to the largest |down a| (the
//     levels of h and of a are the contract's: int8x2 ~14 bits, int8 ~8);
//   - the same bits in a second launch (the int64 adds do not depend on their order);
//   - the `zero` sum left zero.
// Then the timing at qwen3-0.6b's shapes: 30 layers in a graph, the lane's two launches (gate/up with
// the norm in its prologue, then down quantizing its row) against the one launch.
#include "kernels/ffn_split_launch.h"
#include "kernels/gemv_launch.h"
#include "kernels/gemv_multi_launch.h"
#include "runtime/cuda_driver.h"

#include "test_product_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace lathe::kernels {
namespace {

using cuda::DeviceBuffer;
using namespace test;

constexpr double kFix = 4294967296.0;

struct Reference {
  std::vector<double> out;  // s + down a
  double scale = 0.0;       // max |down a|
};

// The f64 reference from the host's bytes (gate, up [f][e], down [e][f]) and s.
Reference reference(const std::vector<uint8_t>& gate, const std::vector<uint8_t>& up, const std::vector<uint8_t>& down,
                    int64_t e, int64_t f, const std::vector<double>& s, const std::vector<float>& w, double eps) {
  double ss = 0.0;
  for (double v : s) ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(e) + eps);
  std::vector<double> h(static_cast<size_t>(e));
  for (int64_t i = 0; i < e; ++i) h[i] = s[i] * inv * w[i];
  const MatrixRef g{GgmlType::Q8_0, gate.data(), e, f}, u{GgmlType::Q8_0, up.data(), e, f},
      d{GgmlType::Q8_0, down.data(), f, e};
  std::vector<float> row(static_cast<size_t>(std::max(e, f)));
  std::vector<double> a(static_cast<size_t>(f));
  for (int64_t j = 0; j < f; ++j) {
    double gj = 0.0, uj = 0.0;
    g.row(j, row.data());
    for (int64_t i = 0; i < e; ++i) gj += double(row[i]) * h[i];
    u.row(j, row.data());
    for (int64_t i = 0; i < e; ++i) uj += double(row[i]) * h[i];
    a[j] = gj / (1.0 + std::exp(-gj)) * uj;
  }
  Reference r;
  r.out.resize(static_cast<size_t>(e));
  for (int64_t o = 0; o < e; ++o) {
    d.row(o, row.data());
    double p = 0.0;
    for (int64_t j = 0; j < f; ++j) p += double(row[j]) * a[j];
    r.out[o] = s[o] + p;
    r.scale = std::max(r.scale, std::fabs(p));
  }
  return r;
}

struct Case {
  int64_t e, f;
  Activations a;
  bool with_y;
  bool levels = false;  // gate, up and the slices in the levels layout (the _lv kernels)
};

TEST(FfnSplitGpu, MatchesTheReferenceAndRepeatsItsBits) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(34);
  const Case cases[] = {
      {1024, 3072, Activations::int8x2, true},   // qwen3-0.6b
      {1024, 3072, Activations::int8, true},
      {2048, 768, Activations::int8x2, true},    // qwen3-30b-a3b's n_embd, one expert's width
      {256, 96, Activations::int8x2, false},     // three blocks
      {512, 1024, Activations::int8, false},
      {1024, 3072, Activations::int8x2, true, true},  // the levels layout (LATHE_FFN_SPLIT_LEVELS=1)
      {2048, 768, Activations::int8, true, true},
      {256, 96, Activations::int8x2, false, true},
  };
  std::printf("ffn_split: |s_out - reference| / max |down a| (bound int8x2 %.0e, int8 %.0e)\n", 2e-4, 3e-2);
  for (const Case& c : cases) {
    const int64_t e = c.e, f = c.f;
    const std::vector<uint8_t> gate = random_matrix(GgmlType::Q8_0, f, e, rng), up = random_matrix(GgmlType::Q8_0, f, e, rng),
                               down = random_matrix(GgmlType::Q8_0, e, f, rng);
    const std::vector<uint8_t> slices = relay_down_by_slices(down.data(), down.size(), e, f);
    const int64_t group = 32 * (e / 32);  // a 32-row group of gate or up, in blocks
    const DeviceBuffer gd = upload(c.levels ? relay_q8_0_levels(gate.data(), gate.size(), group) : gate),
                       ud = upload(c.levels ? relay_q8_0_levels(up.data(), up.size(), group) : up),
                       sd = upload(c.levels ? relay_q8_0_levels(slices.data(), slices.size(), e) : slices);
    const WeightMatrix gw{GgmlType::Q8_0, gd.ptr(), f, e}, uw{GgmlType::Q8_0, ud.ptr(), f, e},
        dw{GgmlType::Q8_0, 0, e, f};
    ASSERT_TRUE(ffn_split_applies(gw, uw, dw, c.a)) << e << " x " << f;
    const std::vector<float> x = random_values(e, rng), y = random_values(e, rng), w = random_values(e, rng);
    const DeviceBuffer xd = upload(x), yd = upload(y), wd = upload(w);
    DeviceBuffer sums(static_cast<size_t>(3 * e * 8));
    const CUdeviceptr sum0 = sums.ptr(), sum1 = sum0 + 8 * e, sum2 = sum1 + 8 * e;
    std::vector<long long> first, again;
    for (int rep = 0; rep < 2; ++rep) {
      sums.zero();
      std::vector<long long> junk(static_cast<size_t>(e), 0x5a5a5a5a5a5aLL);
      sums.upload(junk.data(), junk.size() * 8, static_cast<size_t>(16 * e));  // the sum to be zeroed
      settle(sums);
      FfnSplit fs;
      fs.x = xd.ptr();
      fs.y = c.with_y ? yd.ptr() : 0;
      fs.norm_w = wd.ptr();
      fs.s_out = sum1;
      fs.zero = sum2;
      fs.levels = c.levels;
      ffn_split(gw, uw, sd.ptr(), c.a, fs, s.handle());
      s.synchronize();
      const std::vector<long long> all = download<long long>(sums, static_cast<size_t>(3 * e));
      for (int64_t i = 0; i < e; ++i) ASSERT_EQ(all[2 * e + i], 0) << "the zeroed sum at " << i;
      (rep == 0 ? first : again).assign(all.begin() + e, all.begin() + 2 * e);
    }
    EXPECT_EQ(first, again) << "a second launch gave other bits";
    std::vector<double> sv(static_cast<size_t>(e));
    for (int64_t i = 0; i < e; ++i) sv[i] = double(x[i]) + (c.with_y ? double(y[i]) : 0.0);
    // (the kernel forms s in f32: x + y rounded once, within the bound below)
    const Reference r = reference(gate, up, down, e, f, sv, w, 1e-6);
    double worst = 0.0;
    for (int64_t i = 0; i < e; ++i) worst = std::max(worst, std::fabs(first[i] / kFix - r.out[i]));
    const double bound = c.a == Activations::int8x2 ? 2e-4 : 3e-2;
    std::printf("  %5lld x %5lld %-7s %s%s  %.2e\n", static_cast<long long>(e), static_cast<long long>(f),
                activations_name(c.a).data(), c.with_y ? "x + y " : "x     ", c.levels ? " levels" : "", worst / r.scale);
    EXPECT_LE(worst, bound * r.scale) << e << " x " << f;

    // Chained: s_in the sum just made, into the next sum; the one after it zeroed.
    FfnSplit next;
    next.s_in = sum1;
    next.norm_w = wd.ptr();
    next.s_out = sum2;
    next.zero = sum0;
    next.levels = c.levels;
    ffn_split(gw, uw, sd.ptr(), c.a, next, s.handle());
    s.synchronize();
    const std::vector<long long> all = download<long long>(sums, static_cast<size_t>(3 * e));
    std::vector<double> s2(static_cast<size_t>(e));
    for (int64_t i = 0; i < e; ++i) {
      ASSERT_EQ(all[i], 0) << "the zeroed sum at " << i;
      s2[i] = static_cast<double>(first[i]) / kFix;
    }
    const Reference r2 = reference(gate, up, down, e, f, s2, w, 1e-6);
    double worst2 = 0.0;
    for (int64_t i = 0; i < e; ++i) worst2 = std::max(worst2, std::fabs(all[2 * e + i] / kFix - r2.out[i]));
    EXPECT_LE(worst2, bound * r2.scale) << e << " x " << f << ", chained";
  }
}

TEST(FfnSplitGpu, RefusesWhatItDoesNotTake) {
  LATHE_NEED_GPU();
  const WeightMatrix g{GgmlType::Q8_0, 0, 3072, 1024}, d{GgmlType::Q8_0, 0, 1024, 3072};
  EXPECT_TRUE(ffn_split_applies(g, g, d, Activations::int8x2));
  EXPECT_FALSE(ffn_split_applies(g, g, d, Activations::f32));
  EXPECT_FALSE(ffn_split_applies(WeightMatrix{GgmlType::Q4_K, 0, 3072, 1024}, g, d, Activations::int8x2));
  EXPECT_FALSE(ffn_split_applies(WeightMatrix{GgmlType::Q8_0, 0, 12288, 4096}, WeightMatrix{GgmlType::Q8_0, 0, 12288, 4096},
                                 WeightMatrix{GgmlType::Q8_0, 0, 4096, 12288}, Activations::int8x2))
      << "qwen3-8b's rows and slice do not fit in shared memory";
  EXPECT_FALSE(ffn_split_applies(WeightMatrix{GgmlType::Q8_0, 0, 3072, 1000}, WeightMatrix{GgmlType::Q8_0, 0, 3072, 1000},
                                 WeightMatrix{GgmlType::Q8_0, 0, 1000, 3072}, Activations::int8x2));
}

// The mixture's form (moe_split): n_expert experts, top_k kept with their weights, x's form made by the
// quantizer from h (as the router writes it), against the f64 reference sum s + sum_k w_k down_e a_e
// of the same bytes; the same bits in a second launch; the zeroed sum zero. The 30B's shapes (2048,
// 768, 8 kept) among them. Both forms: 32 values a block, and the one-wave form (MoeSplit::ring: 64 a
// block, gate/up streamed) where F % 64 == 0.
TEST(FfnSplitGpu, MixtureMatchesTheReference) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(35);
  struct MoeCase {
    int64_t e, f, n_expert, top_k;
    Activations a;
  };
  const MoeCase cases[] = {
      {2048, 768, 12, 8, Activations::int8x2},  // qwen3-30b-a3b's n_embd, expert width, kept count
      {2048, 768, 12, 8, Activations::int8},
      {256, 128, 8, 2, Activations::int8x2},    // qwen3moe-tiny
      {512, 96, 5, 3, Activations::int8},
  };
  std::printf("moe_split: |s_out - reference| / max |sum_k w_k down_k a_k| (bound int8x2 %.0e, int8 %.0e)\n", 2e-4,
              3e-2);
  for (const MoeCase& c : cases) {
    const int64_t e = c.e, f = c.f, n = c.n_expert, k = c.top_k;
    std::vector<uint8_t> gate, up, down;
    for (int64_t x = 0; x < n; ++x) {
      const std::vector<uint8_t> g1 = random_matrix(GgmlType::Q8_0, f, e, rng), u1 = random_matrix(GgmlType::Q8_0, f, e, rng),
                                 d1 = random_matrix(GgmlType::Q8_0, e, f, rng);
      gate.insert(gate.end(), g1.begin(), g1.end());
      up.insert(up.end(), u1.begin(), u1.end());
      down.insert(down.end(), d1.begin(), d1.end());
    }
    const DeviceBuffer gd = upload(gate), ud = upload(up),
                       sd = upload(relay_down_stack_by_slices(down.data(), down.size(), n, e, f));
    const WeightMatrix gw{GgmlType::Q8_0, gd.ptr(), f, e, n}, uw{GgmlType::Q8_0, ud.ptr(), f, e, n},
        dw{GgmlType::Q8_0, 0, e, f, n};
    ASSERT_TRUE(moe_split_applies(gw, uw, dw, c.a, k)) << e << " x " << f;
    // Kept experts: a permutation's first k, weights in (0, 1).
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (int64_t x = 0; x < n; ++x) ids[x] = static_cast<int32_t>((x * 7 + 3) % n);
    ids.resize(static_cast<size_t>(k));
    std::vector<float> wts(static_cast<size_t>(k));
    std::uniform_real_distribution<float> unit(0.05f, 1.0f);
    for (float& w : wts) w = unit(rng);
    const std::vector<float> h = random_values(e, rng), sv = random_values(e, rng);
    const DeviceBuffer hd = upload(h), svd = upload(sv), idd = upload(ids.data(), ids.size() * 4),
                       wtd = upload(wts.data(), wts.size() * 4);
    DeviceBuffer xq(static_cast<size_t>(quantized_activation_bytes(1, e, c.a)) + 16);
    quantize_activations(hd.ptr(), 1, e, c.a, xq.ptr(), s.handle());
    DeviceBuffer sums(static_cast<size_t>(2 * e * 8));
    for (const bool ring : {false, true}) {
    if (ring && f % 64 != 0) continue;  // the one-wave form takes 64 values a block
    if (ring) {
      ASSERT_TRUE(moe_split_ring_applies(gw, uw, dw, c.a, k)) << e << " x " << f;  // never skipped quietly
    }
    std::vector<long long> first, again;
    for (int rep = 0; rep < 2; ++rep) {
      s.synchronize();
      sums.zero();
      std::vector<long long> junk(static_cast<size_t>(e), 0x3c3c3c3c3cLL);
      sums.upload(junk.data(), junk.size() * 8, static_cast<size_t>(8 * e));
      settle(sums);
      MoeSplit m;
      m.x_q = xq.ptr();
      m.ids = idd.ptr();
      m.wts = wtd.ptr();
      m.s = svd.ptr();
      m.s_out = sums.ptr();
      m.zero = sums.ptr() + 8 * e;
      m.ring = ring;
      moe_split(gw, uw, sd.ptr(), c.a, k, m, s.handle());
      s.synchronize();
      const std::vector<long long> all = download<long long>(sums, static_cast<size_t>(2 * e));
      for (int64_t i = 0; i < e; ++i) ASSERT_EQ(all[e + i], 0) << "the zeroed sum at " << i;
      (rep == 0 ? first : again).assign(all.begin(), all.begin() + e);
    }
    EXPECT_EQ(first, again) << "a second launch gave other bits";
    // The reference: each kept expert's half from h (f64), weighted, plus s. reference() norms its s
    // and weights it: given s = h and the weight rms(h) (eps 0), its normed input is h itself, and its
    // output less s is down a.
    const size_t one = static_cast<size_t>(f * (e / 32) * 34);
    const std::vector<double> hv(h.begin(), h.end());
    double hs = 0.0;
    for (double v : hv) hs += v * v;
    const std::vector<float> w_rms(static_cast<size_t>(e), static_cast<float>(std::sqrt(hs / static_cast<double>(e))));
    std::vector<double> out(static_cast<size_t>(e), 0.0);
    for (int64_t j = 0; j < k; ++j) {
      const size_t at = static_cast<size_t>(ids[j]) * one;
      const std::vector<uint8_t> g1(gate.begin() + at, gate.begin() + at + one), u1(up.begin() + at, up.begin() + at + one),
          d1(down.begin() + at, down.begin() + at + one);
      const Reference r = reference(g1, u1, d1, e, f, hv, w_rms, 0.0);
      for (int64_t i = 0; i < e; ++i) out[i] += wts[j] * (r.out[i] - hv[i]);
    }
    double scale = 0.0, worst = 0.0;
    for (int64_t i = 0; i < e; ++i) {
      scale = std::max(scale, std::fabs(out[i]));
      worst = std::max(worst, std::fabs(first[i] / kFix - (sv[i] + out[i])));
    }
    const double bound = c.a == Activations::int8x2 ? 2e-4 : 3e-2;
    std::printf("  %5lld x %4lld, %lld of %lld %-7s %-9s %.2e\n", static_cast<long long>(e), static_cast<long long>(f),
                static_cast<long long>(k), static_cast<long long>(n), activations_name(c.a).data(),
                ring ? "one wave" : "", worst / scale);
    EXPECT_LE(worst, bound * scale) << e << " x " << f << (ring ? " one wave" : "");
    }
  }
}

TEST(FfnSplitGpu, TimingAtQwen3_0_6bShapes) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(6);
  const Activations a = Activations::int8x2;
  constexpr int64_t e = 1024, f = 3072;
  constexpr int copies = 30;  // ~300 MB of weights, past the 60 MB L2; a multiple of the 3 sums
  struct Layer {
    DeviceBuffer g, u, d, ds, gl, ul, dsl;  // gl, ul, dsl: the levels layout
    WeightMatrix gw, uw, dw;
  };
  std::vector<Layer> layers(copies);
  for (Layer& l : layers) {
    const std::vector<uint8_t> down = random_matrix(GgmlType::Q8_0, e, f, rng);
    l.g = upload(random_matrix(GgmlType::Q8_0, f, e, rng));
    l.u = upload(random_matrix(GgmlType::Q8_0, f, e, rng));
    l.d = upload(down);
    const std::vector<uint8_t> slices = relay_down_by_slices(down.data(), down.size(), e, f);
    l.ds = upload(slices);
    l.dsl = upload(relay_q8_0_levels(slices.data(), slices.size(), e));
    l.gw = WeightMatrix{GgmlType::Q8_0, l.g.ptr(), f, e};
    l.uw = WeightMatrix{GgmlType::Q8_0, l.u.ptr(), f, e};
    l.dw = WeightMatrix{GgmlType::Q8_0, l.d.ptr(), e, f};
    std::vector<uint8_t> host(static_cast<size_t>(f * (e / 32) * 34));
    for (auto [from, to] : {std::pair{&l.g, &l.gl}, std::pair{&l.u, &l.ul}}) {
      from->download(host.data(), host.size());
      *to = upload(relay_q8_0_levels(host.data(), host.size(), 32 * (e / 32)));
    }
  }
  const DeviceBuffer wd = upload(random_values(e, rng));
  DeviceBuffer r0 = upload(random_values(e, rng)), r1(e * 4), yo = upload(random_values(e, rng)), act(f * 4),
               dout(e * 4), sums(3 * e * 8);
  sums.zero();
  settle(sums);
  // The lane's: gate/up with the norm of x + y in its prologue (writing the sum), then down quantizing
  // the SwiGLU row in every block; x and the sum ping-pong.
  const double lane = graph_median_us(s, copies, [&](int i) {
    NormPrologue np;
    np.x = i % 2 ? r1.ptr() : r0.ptr();
    np.y = i == 0 ? yo.ptr() : dout.ptr();
    np.w = wd.ptr();
    np.sum = i % 2 ? r0.ptr() : r1.ptr();
    gemv_gate_up_swiglu_norm(layers[i].gw, layers[i].uw, a, np, act.ptr(), s.handle());
    ASSERT_TRUE(gemv_quantizing_row(layers[i].dw, a, act.ptr(), dout.ptr(), s.handle()));
  });
  // Layer i of the split chain: the first from x + y, the others from the sum before; three sums rotate.
  auto split_layer = [&](int i, CUdeviceptr stamps, bool levels = false) {
    FfnSplit fs;
    fs.levels = levels;
    if (i == 0) {
      fs.x = r0.ptr();
      fs.y = yo.ptr();
    } else {
      fs.s_in = sums.ptr() + 8 * e * (i % 3);
    }
    fs.norm_w = wd.ptr();
    fs.s_out = sums.ptr() + 8 * e * ((i + 1) % 3);
    fs.zero = sums.ptr() + 8 * e * ((i + 2) % 3);
    fs.stamps = stamps;
    WeightMatrix gw = layers[i].gw, uw = layers[i].uw;
    if (levels) {
      gw.data = layers[i].gl.ptr();
      uw.data = layers[i].ul.ptr();
    }
    ffn_split(gw, uw, levels ? layers[i].dsl.ptr() : layers[i].ds.ptr(), a, fs, s.handle());
  };
  const double split = graph_median_us(s, copies, [&](int i) { split_layer(i, 0); });
  const double split_lv = graph_median_us(s, copies, [&](int i) { split_layer(i, 0, true); });
  std::printf("qwen3-0.6b feed-forward half (%lld x %lld, int8x2), a layer in a graph of %d: two launches %.2f us, "
              "one launch split %.2f us, in the levels layout %.2f us\n",
              static_cast<long long>(e), static_cast<long long>(f), copies, lane, split, split_lv);

  // The split launch's phases (its stamps, the last replay of a graph like the one above): medians
  // over layers 1.. and their blocks, us.
  const int64_t blocks = f / 32;
  DeviceBuffer stamps(static_cast<size_t>(copies * blocks * 8 * 8));
  const double stamped = graph_median_us(
      s, copies, [&](int i) { split_layer(i, stamps.ptr() + static_cast<CUdeviceptr>(i * blocks * 64)); });
  const std::vector<unsigned long long> t = download<unsigned long long>(stamps, static_cast<size_t>(copies * blocks * 8));
  auto at = [&](int i, int64_t b, int p) { return static_cast<double>(t[static_cast<size_t>((i * blocks + b) * 8 + p)]); };
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2] / 1e3;
  };
  std::vector<double> phase[7], release, tail, period;
  for (int i = 1; i < copies; ++i) {
    double prev_end = 0.0, end = 0.0, first_wait = 1e300;
    std::vector<double> ends;
    for (int64_t b = 0; b < blocks; ++b) {
      prev_end = std::max(prev_end, at(i - 1, b, 7));
      end = std::max(end, at(i, b, 7));
      first_wait = std::min(first_wait, at(i, b, 2));
      ends.push_back(at(i, b, 7));
      for (int p = 0; p < 7; ++p) phase[p].push_back(at(i, b, p + 1) - at(i, b, p));
    }
    std::sort(ends.begin(), ends.end());
    release.push_back(first_wait - prev_end);
    tail.push_back(end - ends[ends.size() / 2]);
    period.push_back(end - prev_end);
  }
  std::printf("  stamped %.2f us a layer; medians, us: ask %.2f, to the wait %.2f | release %.2f | s and norm %.2f, "
              "h and weights landed %.2f, gate/up %.2f, a %.2f, down and adds %.2f | tail %.2f, period %.2f\n",
              stamped, median(phase[0]), median(phase[1]), median(release), median(phase[2]), median(phase[3]),
              median(phase[4]), median(phase[5]), median(phase[6]), median(tail), median(period));
}

}  // namespace
}  // namespace lathe::kernels
