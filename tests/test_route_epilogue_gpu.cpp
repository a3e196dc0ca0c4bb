// The o product with the mixture's router in its epilogue (kernels/route_epilogue_launch.h, fusion rule
// router_epilogue) against the form it replaces: the decode GEMV, then the router kernel with the norm in
// its prologue (moe_route). Over formats, contracts, widths, expert counts and k, each case launched
// twice (the count must come back to zero; the second launch gives the same bytes):
//   - the sum s: the same bits where the plain product takes one row an item as the fused one does
//     (else its rows' sums are split over warps another way: within kBoundPairedSum of max |s|);
//   - each logit: within kBoundLogit of the held-back logit, relative to sum_i |router[e][i] x_i| (the
//     same f32 terms added in another order, plus router * w rounded once);
//   - the ids: the same, or a swap between logits that close (a near-tie);
//   - the weights: within kBoundWeight (absolute), where the ids are the same;
//   - x's int8 form: rebuilt, within one level of its block's finest scale of the held-back form's.
#include "kernels/decode_stream.h"
#include "kernels/gemv_launch.h"
#include "kernels/moe_launch.h"
#include "kernels/route_epilogue_launch.h"
#include "runtime/cuda_driver.h"

#include "test_product_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace lathe::kernels {
namespace {

using cuda::DeviceBuffer;
using namespace test;

constexpr double kBoundLogit = 1e-5;
constexpr double kBoundWeight = 1e-6;  // plus twice the largest logit difference
constexpr double kBoundPairedSum = 1e-5;

struct Case {
  GgmlType type;
  int64_t n_embd, k, n_expert, top_k;
};

struct Result {
  std::vector<float> sum, weights, logits;
  std::vector<int32_t> ids;
  std::vector<uint8_t> xq;
};

TEST(RouteEpilogueGpu, IsTheProductThenTheRouterWithItsNorm) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(91);
  const Case cases[] = {
      {GgmlType::Q8_0, 2048, 4096, 128, 8},  // qwen3-30b-a3b's o and router
      {GgmlType::Q8_0, 256, 512, 8, 2},      // qwen3moe-tiny-like
      {GgmlType::Q8_0, 1024, 2048, 64, 6},
      {GgmlType::Q8_0, 2048, 2048, 256, 8},  // the most experts a lane's sums hold
      {GgmlType::Q8_0, 4096, 4096, 128, 8},
      {GgmlType::Q8_0, 512, 1024, 32, 1},
      {GgmlType::Q4_K, 2048, 4096, 128, 8},
      {GgmlType::Q5_K, 2048, 4096, 128, 8},
      {GgmlType::Q3_K, 2048, 4096, 128, 8},
      {GgmlType::Q2_K, 2048, 4096, 128, 8},
      {GgmlType::Q6_K, 1024, 2048, 60, 4},
      {GgmlType::Q8_0, 2048, 4096, 16, 16},  // k = n_expert
  };
  int checked = 0, near_ties = 0, expected = 0;  // expected: the cases on the row walk here
  for (const Case& c : cases)
    for (Activations a : {Activations::int8, Activations::int8x2})
      for (bool renorm : {true, false}) {
        const std::vector<uint8_t> wb = random_matrix(c.type, c.n_embd, c.k, rng);
        DeviceBuffer wd = upload(wb);
        const WeightMatrix w{c.type, wd.ptr(), c.n_embd, c.k, 1};
        expected += decode_format(c.type) != nullptr;
        if (!route_epilogue_applies(w, a, c.n_expert, c.top_k)) {
          // (Q2_K's, Q3_K's and Q5_K's row walk not under LATHE_DECODE_K35=0)
          if (decode_format(c.type)) ADD_FAILURE() << "the router epilogue does not take case " << c.n_embd << " x " << c.k;
          continue;
        }
        const std::vector<float> router = random_values(c.n_expert * c.n_embd, rng);
        std::vector<float> norm_w = random_values(c.n_embd, rng);
        for (float& v : norm_w) v = 0.5f + std::fabs(v);
        const std::vector<float> x = random_values(c.k, rng), resid = random_values(c.n_embd, rng);
        const std::vector<float> cols = router_columns(router.data(), norm_w.data(), c.n_expert, c.n_embd);
        DeviceBuffer routerd = upload(router), nwd = upload(norm_w), xd = upload(x), residd = upload(resid),
                     colsd = upload(cols);
        const WeightMatrix rw{GgmlType::F32, routerd.ptr(), c.n_expert, c.n_embd, 1};
        DeviceBuffer xq(static_cast<size_t>(quantized_activation_bytes(1, c.k, a)));
        quantize_activations(xd.ptr(), 1, c.k, a, xq.ptr(), s.handle());
        DeviceBuffer parts(static_cast<size_t>(route_epilogue_part_bytes(c.n_expert))), count(16);
        count.zero();
        settle(count);
        DecodeGemvLaunch plain;
        const bool same_walk = decode_gemv_launch(w, a, plain) && !plain.pairs;
        auto run = [&](bool fused) {
          const int64_t n = c.n_embd, ne = c.n_expert, kk = c.top_k;
          DeviceBuffer y(static_cast<size_t>(n * 4)), sumd(static_cast<size_t>(n * 4)), h(static_cast<size_t>(n * 4));
          DeviceBuffer ids(static_cast<size_t>(kk * 4)), wts(static_cast<size_t>(kk * 4)), lg(static_cast<size_t>(ne * 4));
          DeviceBuffer q(static_cast<size_t>(quantized_activation_bytes(1, n, a)));
          if (fused) {
            RouteEpilogue r;
            r.resid = residd.ptr();
            r.sum = sumd.ptr();
            r.cols = colsd.ptr();
            r.norm_w = nwd.ptr();
            r.n_expert = ne;
            r.top_k = kk;
            r.renormalize = renorm;
            r.ids = ids.ptr();
            r.weights = wts.ptr();
            r.logits = lg.ptr();
            r.x_q = {q.ptr(), a};
            r.parts = parts.ptr();
            r.count = count.ptr();
            gemv_route_epilogue(w, a, xq.ptr(), r, s.handle());
          } else {
            gemv(w, a, xq.ptr(), 1, y.ptr(), s.handle());
            const NormPrologue np{residd.ptr(), y.ptr(), nwd.ptr(), sumd.ptr(), 1e-6f};
            moe_route(rw, h.ptr(), 1, kk, renorm, ids.ptr(), wts.ptr(), {q.ptr(), a}, s.handle(), lg.ptr(), &np);
          }
          s.synchronize();
          return Result{download<float>(sumd, n), download<float>(wts, kk), download<float>(lg, ne),
                        download<int32_t>(ids, kk), download<uint8_t>(q, q.bytes())};
        };
        const Result held = run(false), fused = run(true), again = run(true);
        const std::string what = std::string(ggml_type_name(c.type)) + " " + std::to_string(c.n_embd) + " x " +
                                 std::to_string(c.k) + ", " + std::to_string(c.n_expert) + " experts, top " +
                                 std::to_string(c.top_k) + " " + std::string(activations_name(a)) + (renorm ? " renormalized" : "");
        if (same_walk) {
          EXPECT_EQ(std::memcmp(held.sum.data(), fused.sum.data(), held.sum.size() * 4), 0) << what << ": the sum";
        } else {
          double m = 0;
          for (float v : held.sum) m = std::max(m, double(std::fabs(v)));
          for (size_t i = 0; i < held.sum.size(); ++i)
            EXPECT_LE(std::fabs(double(fused.sum[i]) - held.sum[i]), kBoundPairedSum * m) << what << ": s " << i;
        }
        // The second launch (the count back at zero) repeats the first's bytes.
        EXPECT_EQ(std::memcmp(fused.logits.data(), again.logits.data(), fused.logits.size() * 4), 0) << what;
        EXPECT_EQ(fused.ids, again.ids) << what;
        EXPECT_EQ(fused.xq, again.xq) << what;
        EXPECT_EQ(std::memcmp(fused.weights.data(), again.weights.data(), fused.weights.size() * 4), 0) << what;
        // Logits against each expert's sum of magnitudes, from the held-back x (f64).
        const std::vector<float> hx = rebuilt_x(held.xq, 1, c.n_embd, a);
        double inv = 0;
        for (float v : held.sum) inv += double(v) * v;
        inv = 1.0 / std::sqrt(inv / double(c.n_embd) + 1e-6);
        std::vector<double> scale(static_cast<size_t>(c.n_expert));
        double max_dl = 0;
        for (int64_t e = 0; e < c.n_expert; ++e) {
          double m = 0;
          for (int64_t i = 0; i < c.n_embd; ++i)
            m += std::fabs(double(router[e * c.n_embd + i]) * held.sum[i] * inv * norm_w[i]);
          scale[e] = m;
          EXPECT_LE(std::fabs(double(fused.logits[e]) - held.logits[e]), kBoundLogit * m) << what << ": logit " << e;
          max_dl = std::max(max_dl, std::fabs(double(fused.logits[e]) - held.logits[e]));
        }
        if (fused.ids == held.ids) {
          for (int64_t j = 0; j < c.top_k; ++j)
            EXPECT_NEAR(fused.weights[j], held.weights[j], kBoundWeight + 2 * max_dl) << what << ": weight " << j;
        } else {
          // A near-tie: every expert picked by one and not the other has a logit within the bound of
          // the held-back k-th.
          ++near_ties;
          std::vector<float> sorted = held.logits;
          std::sort(sorted.begin(), sorted.end(), std::greater<>());
          const double kth = sorted[static_cast<size_t>(c.top_k - 1)];
          for (int32_t e : fused.ids) {
            if (std::find(held.ids.begin(), held.ids.end(), e) == held.ids.end()) {
              EXPECT_LE(std::fabs(held.logits[e] - kth), 2 * kBoundLogit * scale[e]) << what << ": pick " << e;
            }
          }
        }
        // x's int8 form: the same values to within a level of each block's finest scale.
        const std::vector<float> fx = rebuilt_x(fused.xq, 1, c.n_embd, a);
        const float* ds = reinterpret_cast<const float*>(held.xq.data() + c.n_embd * (a == Activations::int8x2 ? 2 : 1));
        for (int64_t i = 0; i < c.n_embd; ++i) {
          const double step = a == Activations::int8x2 ? ds[4 * (i / 32) + 1] : ds[4 * (i / 32)];
          EXPECT_LE(std::fabs(double(fx[i]) - hx[i]), 1.01 * step + 1e-6 * std::fabs(hx[i])) << what << ": x " << i;
        }
        ++checked;
      }
  std::printf("router epilogue: %d cases within the bounds of the held-back form (%d near-ties)\n", checked,
              near_ties);
  EXPECT_EQ(checked, expected);  // 48, or 36 with Q2_K, Q3_K and Q5_K off the row walk
  EXPECT_GE(checked, 36);
}

}  // namespace
}  // namespace lathe::kernels
