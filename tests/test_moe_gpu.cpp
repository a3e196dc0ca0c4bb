// The mixture's decode kernels (kernels/moe_launch.h) against the interpreter (interp/cpu_ops.h:
// product, swiglu, route_top_k, mixture) on dequantize_row'd weights, with the activations the kernels
// read (x^, h^) rebuilt on the host from the quantized bytes; then a timing at the qwen3-30b-a3b shape
// against the eight-launch path the planner used before (the launchers' fallbacks).
//
// Errors are normalized per op: max|gpu - cpu| / scale, scale = max over outputs of max(|ref|, the
// f32 rounding scale sqrt(sum_i (w_i x_i)^2)) (gate/up: the SwiGLU's first-order error |u| G +
// |silu(g)| U; down: sum_j |w_j| D_j). With x^ / h^ as the reference's input only f32 rounding is
// left: kBoundRebuilt. Router logits are f32 products of exact weights: kBoundLogits. Kernel vs
// fallback launches (same inputs, other summation order): kBoundFallback. End to end (f32 x into the
// interpreter's mixture, the int8x2 contract's quantization of x and h included): kBoundEndToEnd.
// This file is longer than 300 lines: one harness, the sweeps and the timing share its helpers.

#include "gguf/block_format.h"
#include "interp/cpu_ops.h"
#include "kernels/gemv_launch.h"
#include "kernels/moe_launch.h"
#include "kernels/norm_launch.h"
#include "runtime/cuda_driver.h"

#include "test_product_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace lathe::kernels {
namespace {

using cuda::DeviceBuffer;
using namespace test;

constexpr double kBoundRebuilt = 1e-4;
constexpr double kBoundLogits = 1e-5;
constexpr double kBoundWeights = 4e-6;  // absolute: f32 softmax (and renormalization) vs the f64 one
constexpr double kBoundFallback = 2e-5;
constexpr double kBoundEndToEnd = 2e-3;

struct MoeShape {
  int64_t n_embd, n_ff, n_expert, top_k;
};
// The last takes the down kernel's one-row-a-chunk path (q8_0 / q6_K rows of 2048 fill a slot); the
// others pack several experts' rows into a chunk.
const MoeShape kShapes[] = {{2048, 768, 128, 8}, {256, 128, 16, 4}, {512, 256, 64, 6}, {512, 2048, 16, 2}};
const int64_t kRows[] = {1, 3, 8};

// A stack [n_stack][n_out][k] on the host and the device.
struct Stack {
  GgmlType type;
  int64_t n_stack, n_out, k;
  std::vector<uint8_t> bytes;
  DeviceBuffer dev;
  WeightMatrix weights() const { return WeightMatrix{type, dev.ptr(), n_out, k, n_stack}; }
  MatrixRef ref() const { return MatrixRef{type, bytes.data(), k, n_out, n_stack}; }
};

Stack make_stack(GgmlType t, int64_t n_stack, int64_t n_out, int64_t k, std::mt19937& rng) {
  Stack s{t, n_stack, n_out, k, random_matrix(t, n_stack * n_out, k, rng), DeviceBuffer()};
  s.dev = upload(s.bytes);
  return s;
}

double max_diff_over(const std::vector<float>& a, const std::vector<double>& b, double scale) {
  double e = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(double(a[i]) - b[i]);
    e = std::isfinite(d) ? std::max(e, d) : INFINITY;  // a NaN fails
  }
  return e / scale;
}

// Distinct random experts per row and positive weights.
void random_routes(int64_t rows, const MoeShape& sh, std::mt19937& rng, std::vector<int32_t>& ids, std::vector<float>& w) {
  ids.clear();
  w.clear();
  std::uniform_real_distribution<float> u(0.05f, 1.0f);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int32_t> all(static_cast<size_t>(sh.n_expert));
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    for (int64_t j = 0; j < sh.top_k; ++j) {
      ids.push_back(all[j]);
      w.push_back(u(rng));
    }
  }
}

// Quantized form of [rows][k] f32 on the device, made by the quantizer kernel, with its bytes.
DeviceBuffer quantize_on_device(CUdeviceptr x, int64_t rows, int64_t k, Activations a, const cuda::Stream& s,
                                std::vector<uint8_t>& bytes) {
  DeviceBuffer q(static_cast<size_t>(quantized_activation_bytes(rows, k, a)));
  quantize_activations(x, rows, k, a, q.ptr(), s.handle());
  s.synchronize();
  bytes = download<uint8_t>(q, q.bytes());
  return q;
}

std::string contract(Activations a) { return std::string(activations_name(a)); }

// ---- the router
struct RouteErrors {
  double logits = 0;
  bool ids_match_gpu_logits = true, ids_match_cpu = true, quantized_x_identical = true, fallback_ids_match = true;
  bool options_identical = true;  // route flags 3 (prefetch, register top k) give the default's bytes
  double weights = 0;
};

RouteErrors check_route(const Stack& router, const std::vector<float>& x, int64_t rows, int64_t top_k, bool renorm,
                        Activations a, const cuda::Stream& s) {
  const int64_t ne = router.n_out, k = router.k;
  DeviceBuffer xd = upload(x), ids(static_cast<size_t>(rows * top_k * 4)), wts(static_cast<size_t>(rows * top_k * 4));
  DeviceBuffer logits(static_cast<size_t>(rows * ne * 4)), xq(static_cast<size_t>(quantized_activation_bytes(rows, k, a)));
  moe_route(router.weights(), xd.ptr(), rows, top_k, renorm, ids.ptr(), wts.ptr(), {xq.ptr(), a}, s.handle(), logits.ptr());
  s.synchronize();
  const auto gl = download<float>(logits, rows * ne);
  const auto gi = download<int32_t>(ids, rows * top_k);
  const auto gw = download<float>(wts, rows * top_k);
  RouteErrors e;
  std::vector<uint8_t> ref_q;
  quantize_on_device(xd.ptr(), rows, k, a, s, ref_q);
  e.quantized_x_identical = download<uint8_t>(xq, ref_q.size()) == ref_q;
  MixtureOptions opt{top_k, renorm};
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> y, terms;
    product_terms(router.ref(), x.data() + r * k, y, terms);
    double scale = 0;
    for (int64_t o = 0; o < ne; ++o) scale = std::max({scale, std::abs(y[o]), terms[o]});
    e.logits = std::max(e.logits, max_diff_over({gl.begin() + r * ne, gl.begin() + (r + 1) * ne}, y, scale));
    // The top k of the GPU's own logits must be exactly the kernel's choice.
    std::vector<int32_t> ci;
    std::vector<float> cw;
    lathe::route_top_k({gl.data() + r * ne, static_cast<size_t>(ne)}, opt, ci, cw);
    for (int64_t j = 0; j < top_k; ++j) {
      e.ids_match_gpu_logits = e.ids_match_gpu_logits && ci[j] == gi[r * top_k + j];
      e.weights = std::max(e.weights, std::abs(double(cw[j]) - gw[r * top_k + j]));
    }
    // Against the CPU's logits: where no two of the top k + 1 lie within the logits' error (exact
    // ties are exact on both sides: identical rows give identical sums).
    std::vector<float> yl(y.begin(), y.end());
    std::vector<int32_t> order(static_cast<size_t>(ne));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t p, int32_t q) { return yl[p] > yl[q] || (yl[p] == yl[q] && p < q); });
    bool clear = true;
    for (int64_t j = 0; j < std::min(top_k, ne - 1); ++j) {
      const double gap = yl[order[j]] - yl[order[j + 1]];
      clear = clear && (gap == 0 || gap > 1e-4 * scale);
    }
    if (clear) {
      lathe::route_top_k({yl.data(), static_cast<size_t>(ne)}, opt, ci, cw);
      for (int64_t j = 0; j < top_k; ++j) e.ids_match_cpu = e.ids_match_cpu && ci[j] == gi[r * top_k + j];
    }
  }
  set_moe_route_flags(3);
  moe_route(router.weights(), xd.ptr(), rows, top_k, renorm, ids.ptr(), wts.ptr(), {xq.ptr(), a}, s.handle(), logits.ptr());
  s.synchronize();
  set_moe_route_flags(0);
  e.options_identical = download<int32_t>(ids, rows * top_k) == gi && download<float>(wts, rows * top_k) == gw &&
                        download<float>(logits, rows * ne) == gl;
  set_moe_kernels_enabled(false);
  moe_route(router.weights(), xd.ptr(), rows, top_k, renorm, ids.ptr(), wts.ptr(), {xq.ptr(), a}, s.handle(), logits.ptr());
  s.synchronize();
  set_moe_kernels_enabled(true);
  e.fallback_ids_match = download<int32_t>(ids, rows * top_k) == gi;
  return e;
}

// The router with the norm in its prologue (fusion rule norm_prologue) against add_rms_norm and then
// the router: the sum, the ids, the weights, the logits and x's int8 form equal bit for bit.
TEST(MoeGpu, RouteWithTheNormInItsPrologueIsAddRmsNormThenTheRouter) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(73);
  for (const MoeShape& sh : kShapes)
    for (int64_t rows : kRows)
      for (Activations a : {Activations::int8, Activations::int8x2}) {
        const Stack router = make_stack(GgmlType::Q8_0, 1, sh.n_expert, sh.n_embd, rng);
        if (!moe_route_norm_applies(router.weights(), rows, sh.top_k)) continue;
        const int64_t n = rows * sh.n_embd, ne = sh.n_expert, kk = sh.top_k;
        const std::vector<float> x = random_values(n, rng), y = random_values(n, rng),
                                 w = random_values(sh.n_embd, rng);
        const float eps = 1e-6f;
        DeviceBuffer xd = upload(x), yd = upload(y), wd = upload(w);
        auto run = [&](bool fused, std::vector<float>& sum, std::vector<int32_t>& ids_out, std::vector<float>& wts_out,
                       std::vector<float>& logits_out, std::vector<uint8_t>& q_out) {
          DeviceBuffer sumd(static_cast<size_t>(n * 4)), h(static_cast<size_t>(n * 4));
          DeviceBuffer ids(static_cast<size_t>(rows * kk * 4)), wts(static_cast<size_t>(rows * kk * 4));
          DeviceBuffer logits(static_cast<size_t>(rows * ne * 4));
          DeviceBuffer xq(static_cast<size_t>(quantized_activation_bytes(rows, sh.n_embd, a)));
          if (fused) {
            const NormPrologue np{xd.ptr(), yd.ptr(), wd.ptr(), sumd.ptr(), eps};
            moe_route(router.weights(), h.ptr(), rows, kk, true, ids.ptr(), wts.ptr(), {xq.ptr(), a}, s.handle(),
                      logits.ptr(), &np);
          } else {
            cuda::copy_async(sumd.ptr(), xd.ptr(), static_cast<size_t>(n * 4), s.handle(), "copy");
            add_rms_norm(sumd.ptr(), h.ptr(), yd.ptr(), wd.ptr(), rows, sh.n_embd, eps, s.handle(), QuantizedOut{});
            moe_route(router.weights(), h.ptr(), rows, kk, true, ids.ptr(), wts.ptr(), {xq.ptr(), a}, s.handle(),
                      logits.ptr());
          }
          s.synchronize();
          sum = download<float>(sumd, n);
          ids_out = download<int32_t>(ids, rows * kk);
          wts_out = download<float>(wts, rows * kk);
          logits_out = download<float>(logits, rows * ne);
          q_out = download<uint8_t>(xq, xq.bytes());
        };
        std::vector<float> s0, s1, w0, w1, l0, l1;
        std::vector<int32_t> i0, i1;
        std::vector<uint8_t> q0, q1;
        run(false, s0, i0, w0, l0, q0);
        run(true, s1, i1, w1, l1, q1);
        const std::string what = std::to_string(ne) + "x" + std::to_string(sh.n_embd) + " rows " +
                                 std::to_string(rows) + " " + contract(a);
        EXPECT_EQ(std::memcmp(s0.data(), s1.data(), s0.size() * 4), 0) << what << ": the sum";
        EXPECT_EQ(i0, i1) << what;
        EXPECT_EQ(std::memcmp(w0.data(), w1.data(), w0.size() * 4), 0) << what << ": the weights";
        EXPECT_EQ(std::memcmp(l0.data(), l1.data(), l0.size() * 4), 0) << what << ": the logits";
        EXPECT_EQ(q0, q1) << what << ": x's int8 form";
      }
}

// The wide router (moe_route_wide.cuh) against the cluster kernel: with and without the norm in its
// prologue, every format family, shapes with one part a row and with several, each case launched
// three times (its count must come back to zero; the third with the sorted top k, route flag 8, which
// 256 experts and fewer take), and the cluster kernel in blocks of 8 warps: the ids, weights, logits,
// x's int8 form and the norm's sum equal bit for bit.
TEST(MoeGpu, WideRouterIsTheClusterRouter) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(79);
  const MoeShape shapes[] = {kShapes[0], kShapes[1], kShapes[2], {4096, 1536, 128, 8}, {2048, 768, 8, 2},
                             {1024, 512, 256, 8}};
  int cases = 0;
  for (const MoeShape& sh : shapes)
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_K})
      for (int64_t rows : kRows)
        for (bool norm : {false, true}) {
          if (sh.n_embd % block_format(t).block_size != 0) continue;
          const Stack router = make_stack(t, 1, sh.n_expert, sh.n_embd, rng);
          if (!moe_route_wide_applies(router.weights(), rows, sh.top_k, norm)) continue;
          const Activations a = (cases & 1) ? Activations::int8x2 : Activations::int8;
          const bool renorm = (cases & 2) != 0;
          const int64_t n = rows * sh.n_embd, ne = sh.n_expert, kk = sh.top_k;
          const std::vector<float> x = random_values(n, rng), y = random_values(n, rng), w = random_values(sh.n_embd, rng);
          DeviceBuffer xd = upload(x), yd = upload(y), wd = upload(w);
          DeviceBuffer parts(static_cast<size_t>(moe_route_part_bytes(router.weights(), rows))), count(4);
          count.zero();
          struct Out {
            std::vector<float> sum, wts, logits;
            std::vector<int32_t> ids;
            std::vector<uint8_t> q;
          };
          auto run = [&](bool wide) {
            DeviceBuffer sumd(static_cast<size_t>(n * 4)), ids(static_cast<size_t>(rows * kk * 4));
            DeviceBuffer wts(static_cast<size_t>(rows * kk * 4)), logits(static_cast<size_t>(rows * ne * 4));
            DeviceBuffer xq(static_cast<size_t>(quantized_activation_bytes(rows, sh.n_embd, a)));
            const NormPrologue np{xd.ptr(), yd.ptr(), wd.ptr(), sumd.ptr(), 1e-6f};
            const RouteScratch rs{parts.ptr(), count.ptr()};
            moe_route(router.weights(), xd.ptr(), rows, kk, renorm, ids.ptr(), wts.ptr(), {xq.ptr(), a}, s.handle(),
                      logits.ptr(), norm ? &np : nullptr, wide ? &rs : nullptr);
            s.synchronize();
            return Out{norm ? download<float>(sumd, n) : std::vector<float>{}, download<float>(wts, rows * kk),
                       download<float>(logits, rows * ne), download<int32_t>(ids, rows * kk),
                       download<uint8_t>(xq, xq.bytes())};
          };
          const Out c = run(false);
          for (int launch = 0; launch < 3; ++launch) {
            set_moe_route_flags(launch == 2 ? 8 : 0);  // the third launch with the sorted top k
            const Out o = run(true);
            set_moe_route_flags(0);
            const std::string what = std::string(ggml_type_name(t)) + " " + std::to_string(ne) + "x" +
                                     std::to_string(sh.n_embd) + " rows " + std::to_string(rows) +
                                     (norm ? " norm " : " ") + contract(a) + " launch " + std::to_string(launch);
            EXPECT_EQ(o.ids, c.ids) << what;
            EXPECT_EQ(std::memcmp(o.wts.data(), c.wts.data(), c.wts.size() * 4), 0) << what << ": the weights";
            EXPECT_EQ(std::memcmp(o.logits.data(), c.logits.data(), c.logits.size() * 4), 0) << what << ": the logits";
            EXPECT_EQ(o.q, c.q) << what << ": x's int8 form";
            EXPECT_EQ(o.sum.size(), c.sum.size());
            if (o.sum.size() == c.sum.size()) {
              EXPECT_EQ(std::memcmp(o.sum.data(), c.sum.data(), c.sum.size() * 4), 0) << what << ": the sum";
            }
          }
          EXPECT_EQ(download<uint32_t>(count, 1)[0], 0u) << "the count is left zero";
          set_moe_route_cluster_warps(8);  // the cluster kernel in blocks of 8 warps where it takes them
          const Out c8 = run(false);
          set_moe_route_cluster_warps(16);
          EXPECT_EQ(c8.ids, c.ids) << "8 warps a block";
          EXPECT_EQ(std::memcmp(c8.wts.data(), c.wts.data(), c.wts.size() * 4), 0) << "8 warps a block: the weights";
          EXPECT_EQ(std::memcmp(c8.logits.data(), c.logits.data(), c.logits.size() * 4), 0) << "8 warps: the logits";
          EXPECT_EQ(c8.q, c.q) << "8 warps a block: x's int8 form";
          if (c8.sum.size() == c.sum.size()) {
            EXPECT_EQ(std::memcmp(c8.sum.data(), c.sum.data(), c.sum.size() * 4), 0) << "8 warps a block: the sum";
          }
          ++cases;
        }
  std::printf("wide router and 8-warp cluster: %d cases bit-equal to the cluster kernel\n", cases);
  EXPECT_GE(cases, 60);
}

TEST(MoeGpu, RouteMatchesInterpreter) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(71);
  std::printf("moe_route: logits error (bound %.0e), |weights - route_top_k(gpu logits)|, ids checks\n", kBoundLogits);
  for (const MoeShape& sh : kShapes)
    for (GgmlType t : {GgmlType::F32, GgmlType::Q8_0})
      for (int64_t rows : kRows) {
        const Stack router = make_stack(t, 1, sh.n_expert, sh.n_embd, rng);
        const std::vector<float> x = random_values(rows * sh.n_embd, rng);
        for (Activations a : {Activations::int8, Activations::int8x2}) {
          const bool renorm = a == Activations::int8x2;  // both settings over the sweep
          const RouteErrors e = check_route(router, x, rows, sh.top_k, renorm, a, s);
          const std::string what = std::string(ggml_type_name(t)) + " " + std::to_string(sh.n_expert) + "x" +
                                   std::to_string(sh.n_embd) + " rows " + std::to_string(rows) + " " + contract(a);
          EXPECT_LE(e.logits, kBoundLogits) << what;
          EXPECT_LE(e.weights, kBoundWeights) << what;
          EXPECT_TRUE(e.ids_match_gpu_logits) << what;
          EXPECT_TRUE(e.ids_match_cpu) << what;
          EXPECT_TRUE(e.quantized_x_identical) << what;
          EXPECT_TRUE(e.fallback_ids_match) << what;
          EXPECT_TRUE(e.options_identical) << what;
          std::printf("  %-36s %s logits %.1e weights %.1e ids %s\n", what.c_str(),
                      moe_route_applies(router.weights(), rows, sh.top_k) ? "kernel  " : "fallback", e.logits,
                      e.weights, e.ids_match_gpu_logits && e.ids_match_cpu ? "ok" : "DIFFER");
        }
      }
}

// Equal logits: the lower expert index wins. All rows equal (every logit ties: ids 0..k-1), and
// pairs of equal rows (each pair's lower index first).
TEST(MoeGpu, RouteTiesGoToTheLowerIndex) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(72);
  for (const MoeShape& sh : kShapes) {
    for (int pattern = 0; pattern < 2; ++pattern) {
      Stack router = make_stack(GgmlType::F32, 1, sh.n_expert, sh.n_embd, rng);
      const int64_t rb = row_bytes(GgmlType::F32, sh.n_embd);
      for (int64_t e = 0; e < sh.n_expert; ++e) {
        const int64_t src = pattern == 0 ? 0 : e & ~int64_t{1};
        std::memcpy(router.bytes.data() + e * rb, router.bytes.data() + src * rb, static_cast<size_t>(rb));
      }
      router.dev = upload(router.bytes);
      for (int64_t rows : kRows) {
        const std::vector<float> x = random_values(rows * sh.n_embd, rng);
        const RouteErrors e = check_route(router, x, rows, sh.top_k, true, Activations::int8x2, s);
        EXPECT_TRUE(e.ids_match_gpu_logits && e.ids_match_cpu && e.fallback_ids_match && e.options_identical)
            << "ties pattern " << pattern << " experts " << sh.n_expert << " rows " << rows;
      }
    }
  }
}

// ---- gate/up and down
struct ExpertErrors {
  double gate_up = 0, gate_up_fallback = 0, down = 0, down_fallback = 0;
  bool deterministic = true, quantized_h_identical = true;
  bool h_form_identical = true;  // gate/up's own int8 form of h (h_q) is the quantizer's bytes, twice
};

ExpertErrors check_experts(const Stack& gate, const Stack& up, const Stack& down, int64_t rows, const MoeShape& sh,
                           Activations a, std::mt19937& rng, const cuda::Stream& s) {
  const int64_t n = sh.n_embd, ff = sh.n_ff, kk = sh.top_k, slots = rows * kk;
  std::vector<int32_t> ids;
  std::vector<float> rw;
  random_routes(rows, sh, rng, ids, rw);
  DeviceBuffer idd = upload(ids), rwd = upload(rw), xd = upload(random_values(rows * n, rng));
  std::vector<uint8_t> xbytes;
  DeviceBuffer xq = quantize_on_device(xd.ptr(), rows, n, a, s, xbytes);
  const std::vector<float> xh = rebuilt_x(xbytes, rows, n, a);
  ExpertErrors e;

  DeviceBuffer h(static_cast<size_t>(slots * ff * 4)), h2(static_cast<size_t>(slots * ff * 4));
  moe_gate_up_swiglu(gate.weights(), up.weights(), a, xq.ptr(), rows, idd.ptr(), kk, h.ptr(), s.handle());
  moe_gate_up_swiglu(gate.weights(), up.weights(), a, xq.ptr(), rows, idd.ptr(), kk, h2.ptr(), s.handle());
  s.synchronize();
  const auto hg = download<float>(h, slots * ff);
  e.deterministic = download<float>(h2, slots * ff) == hg;
  std::vector<double> ref(static_cast<size_t>(slots * ff));
  double scale = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < kk; ++j) {
      const int32_t ex = ids[r * kk + j];
      std::vector<double> g, gt, u, ut;
      product_terms(gate.ref().expert(ex), xh.data() + r * n, g, gt);
      product_terms(up.ref().expert(ex), xh.data() + r * n, u, ut);
      for (int64_t o = 0; o < ff; ++o) {
        const double silu = g[o] / (1 + std::exp(-g[o])), v = silu * u[o];
        ref[(r * kk + j) * ff + o] = v;
        scale = std::max({scale, std::abs(v), std::abs(u[o]) * std::max(std::abs(g[o]), gt[o]) +
                                                   std::abs(silu) * std::max(std::abs(u[o]), ut[o])});
      }
    }
  e.gate_up = max_diff_over(hg, ref, scale);
  set_moe_kernels_enabled(false);
  moe_gate_up_swiglu(gate.weights(), up.weights(), a, xq.ptr(), rows, idd.ptr(), kk, h2.ptr(), s.handle());
  s.synchronize();
  set_moe_kernels_enabled(true);
  const auto hf = download<float>(h2, slots * ff);
  e.gate_up_fallback = max_diff_over(hf, std::vector<double>(hg.begin(), hg.end()), scale);

  // down: h^ is the quantizer's form of the kernel's h (what the down kernel makes in shared memory).
  std::vector<uint8_t> hbytes;
  DeviceBuffer hq = quantize_on_device(h.ptr(), slots, ff, a, s, hbytes);
  const std::vector<float> hh = rebuilt_x(hbytes, slots, ff, a);
  {
    DeviceBuffer hq2(hbytes.size()), counts(static_cast<size_t>(moe_h_count_bytes(rows, kk, ff)));
    counts.zero();
    settle(counts);
    for (int launch = 0; launch < 2; ++launch) {  // the counts come back to zero: the second is the same
      DeviceBuffer h3(static_cast<size_t>(slots * ff * 4));
      moe_gate_up_swiglu(gate.weights(), up.weights(), a, xq.ptr(), rows, idd.ptr(), kk, h3.ptr(), s.handle(),
                         QuantizedOut{hq2.ptr(), a}, counts.ptr());
      s.synchronize();
      e.h_form_identical = e.h_form_identical && download<uint8_t>(hq2, hbytes.size()) == hbytes &&
                           download<float>(h3, slots * ff) == hg;
    }
    const std::vector<uint32_t> left = download<uint32_t>(counts, static_cast<size_t>(rows * kk * ff / 32));
    e.h_form_identical = e.h_form_identical && std::all_of(left.begin(), left.end(), [](uint32_t c) { return c == 0; });
  }
  std::vector<double> out_ref(static_cast<size_t>(rows * n), 0.0), out_scale(static_cast<size_t>(rows * n), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < kk; ++j) {
      std::vector<double> y, t;
      product_terms(down.ref().expert(ids[r * kk + j]), hh.data() + (r * kk + j) * ff, y, t);
      for (int64_t o = 0; o < n; ++o) {
        out_ref[r * n + o] += double(rw[r * kk + j]) * y[o];
        out_scale[r * n + o] += std::abs(double(rw[r * kk + j])) * std::max(std::abs(y[o]), t[o]);
      }
    }
  const double dscale = *std::max_element(out_scale.begin(), out_scale.end());
  DeviceBuffer out(static_cast<size_t>(rows * n * 4)), out2(static_cast<size_t>(rows * n * 4));
  moe_down_combine(down.weights(), a, h.ptr(), false, rows, idd.ptr(), rwd.ptr(), kk, out.ptr(), s.handle(), false);
  moe_down_combine(down.weights(), a, hq.ptr(), true, rows, idd.ptr(), rwd.ptr(), kk, out2.ptr(), s.handle(), true);
  s.synchronize();
  const auto og = download<float>(out, rows * n);
  e.quantized_h_identical = download<float>(out2, rows * n) == og;  // same staged bytes, same order
  e.down = max_diff_over(og, out_ref, dscale);
  set_moe_kernels_enabled(false);
  moe_down_combine(down.weights(), a, h.ptr(), false, rows, idd.ptr(), rwd.ptr(), kk, out2.ptr(), s.handle(), false);
  s.synchronize();
  set_moe_kernels_enabled(true);
  const auto of = download<float>(out2, rows * n);
  e.down_fallback = max_diff_over(of, std::vector<double>(og.begin(), og.end()), dscale);
  return e;
}

TEST(MoeGpu, ExpertsMatchInterpreter) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(73);
  std::printf("moe gate/up/swiglu and down/combine: error vs interpreter on x^, h^ (bound %.0e) / vs fallback "
              "launches (bound %.0e)\n", kBoundRebuilt, kBoundFallback);
  for (const MoeShape& sh : kShapes)
    for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
      const int64_t block = block_format(t).block_size;
      if (sh.n_embd % block != 0 || sh.n_ff % block != 0) continue;  // K formats need 256 | n_ff
      const Stack gate = make_stack(t, sh.n_expert, sh.n_ff, sh.n_embd, rng);
      const Stack up = make_stack(t, sh.n_expert, sh.n_ff, sh.n_embd, rng);
      const Stack down = make_stack(t, sh.n_expert, sh.n_embd, sh.n_ff, rng);
      for (int64_t rows : kRows)
        for (Activations a : {Activations::int8, Activations::int8x2}) {
          const ExpertErrors e = check_experts(gate, up, down, rows, sh, a, rng, s);
          const std::string what = std::string(ggml_type_name(t)) + " " + std::to_string(sh.n_embd) + "/" +
                                   std::to_string(sh.n_ff) + " " + std::to_string(sh.top_k) + " of " +
                                   std::to_string(sh.n_expert) + " rows " + std::to_string(rows) + " " + contract(a);
          EXPECT_LE(e.gate_up, kBoundRebuilt) << what;
          EXPECT_LE(e.gate_up_fallback, kBoundFallback) << what;
          EXPECT_LE(e.down, kBoundRebuilt) << what;
          EXPECT_LE(e.down_fallback, kBoundFallback) << what;
          EXPECT_TRUE(e.deterministic) << what;
          EXPECT_TRUE(e.quantized_h_identical) << what;
          EXPECT_TRUE(e.h_form_identical) << what << ": gate/up's int8 form of h";
          std::printf("  %-40s %s gate/up %.1e / %.1e  %s down %.1e / %.1e\n", what.c_str(),
                      moe_gate_up_applies(gate.weights(), up.weights(), a, sh.top_k) ? "kernel" : "fallbk",
                      e.gate_up, e.gate_up_fallback, moe_down_applies(down.weights(), a, sh.top_k) ? "kernel" : "fallbk",
                      e.down, e.down_fallback);
        }
    }
}

// The three launches in a row (router with x's int8x2 form, gate/up, down with ids settled) against
// the interpreter's mixture on f32 x: the contract's quantization of x and h is inside the bound.
TEST(MoeGpu, ThreeLaunchesMatchInterpreterMixture) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(74);
  const Activations a = Activations::int8x2;
  for (const MoeShape& sh : kShapes) {
    const Stack router = make_stack(GgmlType::F32, 1, sh.n_expert, sh.n_embd, rng);
    const Stack gate = make_stack(GgmlType::Q8_0, sh.n_expert, sh.n_ff, sh.n_embd, rng);
    const Stack up = make_stack(GgmlType::Q8_0, sh.n_expert, sh.n_ff, sh.n_embd, rng);
    const Stack down = make_stack(GgmlType::Q8_0, sh.n_expert, sh.n_embd, sh.n_ff, rng);
    for (int64_t rows : kRows) {
      const std::vector<float> x = random_values(rows * sh.n_embd, rng);
      DeviceBuffer xd = upload(x), xq(static_cast<size_t>(quantized_activation_bytes(rows, sh.n_embd, a)));
      DeviceBuffer ids(static_cast<size_t>(rows * sh.top_k * 4)), wts(static_cast<size_t>(rows * sh.top_k * 4));
      DeviceBuffer h(static_cast<size_t>(rows * sh.top_k * sh.n_ff * 4)), out(static_cast<size_t>(rows * sh.n_embd * 4));
      moe_route(router.weights(), xd.ptr(), rows, sh.top_k, true, ids.ptr(), wts.ptr(), {xq.ptr(), a}, s.handle());
      moe_gate_up_swiglu(gate.weights(), up.weights(), a, xq.ptr(), rows, ids.ptr(), sh.top_k, h.ptr(), s.handle());
      moe_down_combine(down.weights(), a, h.ptr(), false, rows, ids.ptr(), wts.ptr(), sh.top_k, out.ptr(), s.handle(), true);
      s.synchronize();
      const Tensor ref = lathe::mixture(Tensor({rows, sh.n_embd}, x), router.ref(), gate.ref(), up.ref(), down.ref(),
                                 MixtureOptions{sh.top_k, true});
      const auto og = download<float>(out, rows * sh.n_embd);
      double scale = 0, err = 0;
      for (size_t i = 0; i < og.size(); ++i) {
        scale = std::max(scale, std::abs(double(ref.data[i])));
        err = std::max(err, std::abs(double(og[i]) - ref.data[i]));
      }
      EXPECT_LE(err / scale, kBoundEndToEnd) << sh.n_embd << " rows " << rows;
      std::printf("  three launches %5lld/%4lld %3lld of %3lld rows %lld: error vs mixture %.1e (bound %.0e)\n",
                  static_cast<long long>(sh.n_embd), static_cast<long long>(sh.n_ff), static_cast<long long>(sh.top_k),
                  static_cast<long long>(sh.n_expert), static_cast<long long>(rows), err / scale, kBoundEndToEnd);
    }
  }
}

// The mixture in one launch (fusion rule mixture_one_launch) against its held-back form, the three
// launches (the router with or without its norm prologue, gate/up, down with f32 h): ids, weights,
// logits, h, out and the norm's sum equal bit for bit; the launch run twice gives the same bytes (its
// barrier counters are left zero). Shapes: qwen3-30b-a3b's (one slot a chunk of gate and up, three
// experts' down rows a chunk), k = 4,096 with gate/up two chunks a row and groups of 2 warps, and four
// experts' down rows a chunk.
TEST(MoeGpu, OneLaunchIsTheThreeLaunches) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(76);
  const MoeShape shapes[] = {{2048, 768, 128, 8}, {4096, 1536, 8, 2}, {2048, 512, 16, 6}};
  struct Formats { GgmlType gu, down; };
  const Formats formats[] = {{GgmlType::Q8_0, GgmlType::Q8_0}, {GgmlType::Q4_K, GgmlType::Q6_K}};
  int ran = 0;
  for (const MoeShape& sh : shapes)
    for (const Formats& f : formats) {
      const Stack router = make_stack(GgmlType::F32, 1, sh.n_expert, sh.n_embd, rng);
      const Stack gate = make_stack(f.gu, sh.n_expert, sh.n_ff, sh.n_embd, rng);
      const Stack up = make_stack(f.gu, sh.n_expert, sh.n_ff, sh.n_embd, rng);
      const Stack down = make_stack(f.down, sh.n_expert, sh.n_embd, sh.n_ff, rng);
      const int64_t e = sh.n_embd, kk = sh.top_k, ne = sh.n_expert, nh = kk * sh.n_ff;
      const std::vector<float> x = random_values(e, rng), y = random_values(e, rng), w = random_values(e, rng);
      DeviceBuffer xd = upload(x), yd = upload(y), wd = upload(w);
      for (Activations a : {Activations::int8, Activations::int8x2})
        for (bool norm : {false, true}) {
          const std::string what = std::to_string(e) + "/" + std::to_string(sh.n_ff) + " " + std::to_string(kk) +
                                   " of " + std::to_string(ne) + " " + std::string(ggml_type_name(f.gu)) + "/" +
                                   std::string(ggml_type_name(f.down)) + " " + contract(a) + (norm ? " with the norm" : "");
          if (!moe_single_launch_applies(router.weights(), gate.weights(), up.weights(), down.weights(), a, 1, kk, norm)) {
            std::printf("  one launch %s: takes the three launches\n", what.c_str());
            continue;
          }
          ++ran;
          struct Out { std::vector<float> sum, weights, logits, h, out; std::vector<int32_t> ids; };
          auto run = [&](bool single, int times) {
            DeviceBuffer sumd(static_cast<size_t>(e * 4)), xn(static_cast<size_t>(e * 4));
            DeviceBuffer ids(static_cast<size_t>(kk * 4)), wts(static_cast<size_t>(kk * 4)), logits(static_cast<size_t>(ne * 4));
            DeviceBuffer xq(static_cast<size_t>(quantized_activation_bytes(1, e, a))), h(static_cast<size_t>(nh * 4));
            DeviceBuffer out(static_cast<size_t>(e * 4)), parts(static_cast<size_t>(moe_single_part_bytes(router.weights())));
            DeviceBuffer sync(8);
            sync.zero();
            const NormPrologue np{xd.ptr(), yd.ptr(), wd.ptr(), sumd.ptr(), 1e-6f};
            for (int t = 0; t < times; ++t) {
              if (single) {
                moe_single_launch(router.weights(), gate.weights(), up.weights(), down.weights(), a, xd.ptr(), kk, true,
                                  ids.ptr(), wts.ptr(), logits.ptr(), h.ptr(), out.ptr(), parts.ptr(), sync.ptr(),
                                  s.handle(), norm ? &np : nullptr);
              } else {
                moe_route(router.weights(), xd.ptr(), 1, kk, true, ids.ptr(), wts.ptr(), {xq.ptr(), a}, s.handle(),
                          logits.ptr(), norm ? &np : nullptr);
                moe_gate_up_swiglu(gate.weights(), up.weights(), a, xq.ptr(), 1, ids.ptr(), kk, h.ptr(), s.handle());
                moe_down_combine(down.weights(), a, h.ptr(), false, 1, ids.ptr(), wts.ptr(), kk, out.ptr(), s.handle(),
                                 true);
              }
            }
            s.synchronize();
            Out o{norm ? download<float>(sumd, e) : std::vector<float>(), download<float>(wts, kk),
                  download<float>(logits, ne), download<float>(h, nh), download<float>(out, e), download<int32_t>(ids, kk)};
            EXPECT_EQ(download<uint32_t>(sync, 2), (std::vector<uint32_t>{0u, 0u})) << what << ": the counters";
            return o;
          };
          auto same = [](const std::vector<float>& p, const std::vector<float>& q) {
            return p.size() == q.size() && std::memcmp(p.data(), q.data(), p.size() * 4) == 0;
          };
          const Out three = run(false, 1), one = run(true, 1), twice = run(true, 2);
          EXPECT_EQ(three.ids, one.ids) << what;
          EXPECT_TRUE(same(three.weights, one.weights)) << what << ": the route weights";
          EXPECT_TRUE(same(three.logits, one.logits)) << what << ": the logits";
          EXPECT_TRUE(same(three.sum, one.sum)) << what << ": the norm's sum";
          EXPECT_TRUE(same(three.h, one.h)) << what << ": h";
          EXPECT_TRUE(same(three.out, one.out)) << what << ": out";
          EXPECT_TRUE(same(one.out, twice.out) && one.ids == twice.ids) << what << ": run twice";
          std::printf("  one launch %s: the three launches' bytes\n", what.c_str());
        }
    }
  EXPECT_GE(ran, 4);  // the qwen3-30b-a3b shape takes it, under both contracts, with and without the norm
}

std::string fmt_after_o(double us) {
  char b[64];
  std::snprintf(b, sizeof b, "  (the mixture %.2f us of it)", us);
  return b;
}

// Decode speed at qwen3-30b-a3b (2048, ff 768, 8 of 128, q8_0, f32 router), one row. 16 "layers"
// share one stack set, each routed by its own router to 8 experts no other layer uses, so the 16
// layers read 640 MB (past the 60 MB L2) per replay. GB/s counts the expert weights a layer reads:
// 8 experts x 3 matrices (40.1 MB). Columns: the eight-launch path (the launchers' fallbacks: router
// gemv, route_top_k, quantizer, gemv_experts x2, swiglu, quantizer, gemv_experts), the three launches,
// then each new kernel alone (down with and without the early weight requests), the router's options,
// and the one launch (mixture_one_launch).
TEST(MoeGpu, Timing) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(75);
  const MoeShape sh{2048, 768, 128, 8};
  const int layers = 16;
  const double limit_gbs = 4630;
  const GgmlType t = GgmlType::Q8_0;
  const Stack gate = make_stack(t, sh.n_expert, sh.n_ff, sh.n_embd, rng);
  const Stack up = make_stack(t, sh.n_expert, sh.n_ff, sh.n_embd, rng);
  const Stack down = make_stack(t, sh.n_expert, sh.n_embd, sh.n_ff, rng);
  const std::vector<float> x = random_values(sh.n_embd, rng);
  std::vector<DeviceBuffer> routers;
  for (int l = 0; l < layers; ++l) {  // router row e = s_e x: layer l's experts 8l..8l+7 lead
    std::vector<float> r(static_cast<size_t>(sh.n_expert * sh.n_embd));
    for (int64_t e = 0; e < sh.n_expert; ++e) {
      const float se = e / sh.top_k == l ? 1.0f + 0.01f * static_cast<float>(e % sh.top_k) : -1.0f;
      for (int64_t i = 0; i < sh.n_embd; ++i) r[e * sh.n_embd + i] = se * x[i];
    }
    routers.push_back(upload(r));
  }
  const int64_t expert_bytes = sh.top_k * 3 * sh.n_ff * row_bytes(t, sh.n_embd);
  DeviceBuffer xd = upload(x), ids(sh.top_k * 4 * layers), wts(sh.top_k * 4 * layers);
  DeviceBuffer h(static_cast<size_t>(sh.top_k * sh.n_ff * 4)), out(static_cast<size_t>(sh.n_embd * 4));
  DeviceBuffer parts(static_cast<size_t>(moe_single_part_bytes({GgmlType::F32, routers[0].ptr(), sh.n_expert, sh.n_embd, 1})));
  DeviceBuffer sync(16);
  sync.zero();
  DeviceBuffer route_parts(static_cast<size_t>(moe_route_part_bytes({GgmlType::F32, routers[0].ptr(), sh.n_expert, sh.n_embd, 1}, 1)));
  // An attention output product before the mixture, as in the decode step (qwen3-30b-a3b's o: 4,096 ->
  // 2,048, q8_0, its row quantized in each block), one matrix a layer; and the norm prologue's inputs:
  // nx = x, ny = 0, weights 1 (so the normed row is a positive multiple of x: the same experts lead).
  std::vector<DeviceBuffer> o_mats;
  for (int l = 0; l < layers; ++l) o_mats.push_back(upload(random_matrix(t, sh.n_embd, 4096, rng)));
  DeviceBuffer o_in = upload(random_values(4096, rng)), o_out(static_cast<size_t>(sh.n_embd * 4));
  DeviceBuffer zeros = upload(std::vector<float>(static_cast<size_t>(sh.n_embd), 0.0f));
  DeviceBuffer ones = upload(std::vector<float>(static_cast<size_t>(sh.n_embd), 1.0f));
  DeviceBuffer nsum(static_cast<size_t>(sh.n_embd * 4));
  const NormPrologue np{xd.ptr(), zeros.ptr(), ones.ptr(), nsum.ptr(), 1e-6f};
  std::printf("mixture decode, qwen3-30b-a3b shape, 1 row: us per layer, GB/s of expert weights (%.1f MB), %% of %.0f\n",
              expert_bytes / 1e6, limit_gbs);
  for (Activations a : {Activations::int8, Activations::int8x2}) {
    DeviceBuffer xq(static_cast<size_t>(quantized_activation_bytes(1, sh.n_embd, a)));
    auto layer = [&](int l, int variant) {
      const WeightMatrix router{GgmlType::F32, routers[l].ptr(), sh.n_expert, sh.n_embd, 1};
      const CUdeviceptr il = ids.ptr() + l * sh.top_k * 4, wl = wts.ptr() + l * sh.top_k * 4;
      if (variant <= 2)
        moe_route(router, xd.ptr(), 1, sh.top_k, true, il, wl, {xq.ptr(), a}, s.handle());
      if (variant <= 1 || variant == 3)
        moe_gate_up_swiglu(gate.weights(), up.weights(), a, xq.ptr(), 1, il, sh.top_k, h.ptr(), s.handle());
      if (variant <= 1 || variant == 4 || variant == 5)
        moe_down_combine(down.weights(), a, h.ptr(), false, 1, il, wl, sh.top_k, out.ptr(), s.handle(), variant != 5);
      if (variant == 9)
        moe_single_launch(router, gate.weights(), up.weights(), down.weights(), a, xd.ptr(), sh.top_k, true, il, wl, 0,
                          h.ptr(), out.ptr(), parts.ptr(), sync.ptr(), s.handle());
      // 10 o alone; then o (or not), the three launches or the one, with the norm (or not):
      // 11 o 3 norm, 12 o 1 norm, 13 3 norm, 14 1 norm, 15 o 3, 16 o 1.
      const bool with_o = variant == 10 || variant == 11 || variant == 12 || variant == 15 || variant == 16;
      const bool norm = variant >= 11 && variant <= 14, three = variant == 11 || variant == 13 || variant == 15;
      if (with_o) {
        const WeightMatrix o{t, o_mats[l].ptr(), sh.n_embd, 4096, 1};
        ASSERT_TRUE(gemv_quantizing_row(o, a, o_in.ptr(), o_out.ptr(), s.handle()));
      }
      if (variant >= 11 && three) {
        moe_route(router, xd.ptr(), 1, sh.top_k, true, il, wl, {xq.ptr(), a}, s.handle(), 0, norm ? &np : nullptr);
        moe_gate_up_swiglu(gate.weights(), up.weights(), a, xq.ptr(), 1, il, sh.top_k, h.ptr(), s.handle());
        moe_down_combine(down.weights(), a, h.ptr(), false, 1, il, wl, sh.top_k, out.ptr(), s.handle(), true);
      } else if (variant >= 11 && variant <= 16) {
        moe_single_launch(router, gate.weights(), up.weights(), down.weights(), a, xd.ptr(), sh.top_k, true, il, wl, 0,
                          h.ptr(), out.ptr(), parts.ptr(), sync.ptr(), s.handle(), norm ? &np : nullptr);
      }
      // 17 the wide router alone; 18 o and the cluster router with the norm, 19 o and the wide router
      // with the norm (o's 16 matrices stream through L2 between the routers, as in the step); 20 o
      // and the three launches with the wide router and the norm.
      if (variant >= 17) {
        if (variant >= 18) {
          const WeightMatrix o{t, o_mats[l].ptr(), sh.n_embd, 4096, 1};
          ASSERT_TRUE(gemv_quantizing_row(o, a, o_in.ptr(), o_out.ptr(), s.handle()));
        }
        const RouteScratch rs{route_parts.ptr(), sync.ptr() + 8};
        moe_route(router, xd.ptr(), 1, sh.top_k, true, il, wl, {xq.ptr(), a}, s.handle(), 0,
                  variant >= 18 ? &np : nullptr, variant == 18 ? nullptr : &rs);
        if (variant == 20) {  // o and the three launches with the wide router, with the norm
          moe_gate_up_swiglu(gate.weights(), up.weights(), a, xq.ptr(), 1, il, sh.top_k, h.ptr(), s.handle());
          moe_down_combine(down.weights(), a, h.ptr(), false, 1, il, wl, sh.top_k, out.ptr(), s.handle(), true);
        }
      }
    };
    // "route fN": the router with route flags N (moe_launch.h; "route" is the default, 0).
    const char* names[] = {"8 launches", "3 launches", "route", "gate/up", "down", "down late",
                           "route f1", "route f2", "route f3", "1 launch", "o alone", "o, 3, norm", "o, 1, norm",
                           "3, norm", "1, norm", "o, 3", "o, 1", "route wide", "o, route, norm", "o, wide, norm",
                           "o, 3 wide, norm"};
    const int64_t route_bytes = sh.n_expert * sh.n_embd * 4;
    const int64_t bytes[] = {expert_bytes, expert_bytes, route_bytes, expert_bytes * 2 / 3,
                             expert_bytes / 3, expert_bytes / 3, route_bytes, route_bytes, route_bytes, expert_bytes,
                             0, expert_bytes, expert_bytes, expert_bytes, expert_bytes, expert_bytes, expert_bytes,
                             route_bytes, route_bytes, route_bytes, expert_bytes};
    for (int l = 0; l < layers; ++l) layer(l, 1);  // the ids every variant reads
    s.synchronize();
    double o_alone = 0;
    for (int v = 0; v < 21; ++v) {
      set_moe_kernels_enabled(v != 0);
      set_moe_route_flags(v >= 6 && v <= 8 ? v - 5 : 0);
      const int what = v >= 6 && v <= 8 ? 2 : v;
      // Warm-up (and the fallbacks' scratch, made outside the capture) by layer 0, then every layer.
      const double us = graph_median_us(s, static_cast<int>(layers), [&](int l) { layer(l, what); });
      if (v == 10) o_alone = us;
      // After o: the mixture's share, the sequence's time less o's alone.
      const bool after_o = v == 11 || v == 12 || v == 15 || v == 16 || v >= 18;
      const double mix_us = after_o ? us - o_alone : us;
      const double gbs = static_cast<double>(bytes[v]) / (mix_us * 1e3);
      std::printf("  %-6s %-10s %7.2f us  %6.0f GB/s  %5.1f%%%s\n", contract(a).c_str(), names[v], us, gbs,
                  100 * gbs / limit_gbs, after_o ? fmt_after_o(mix_us).c_str() : "");
    }
    set_moe_kernels_enabled(true);
    set_moe_route_flags(0);
    for (bool after_o : {false, true}) {  // The one launch's phases (its trace) in layer 8 of 16 launched back
                                          // to back, alone or after o with its norm
      const int64_t sm = cuda::Context::get().info().sm_count;
      DeviceBuffer trace(static_cast<size_t>(kMoeSingleStamps * sm * 8));
      for (int l = 0; l < layers; ++l) {
        const WeightMatrix router{GgmlType::F32, routers[l].ptr(), sh.n_expert, sh.n_embd, 1};
        if (after_o) {
          const WeightMatrix o{t, o_mats[l].ptr(), sh.n_embd, 4096, 1};
          ASSERT_TRUE(gemv_quantizing_row(o, a, o_in.ptr(), o_out.ptr(), s.handle()));
        }
        moe_single_launch(router, gate.weights(), up.weights(), down.weights(), a, xd.ptr(), sh.top_k, true,
                          ids.ptr() + l * sh.top_k * 4, wts.ptr() + l * sh.top_k * 4, 0, h.ptr(), out.ptr(),
                          parts.ptr(), sync.ptr(), s.handle(), after_o ? &np : nullptr,
                          l == layers / 2 ? trace.ptr() : 0);
      }
      s.synchronize();
      const auto t = download<uint64_t>(trace, kMoeSingleStamps * sm);
      const uint64_t t0 = *std::min_element(t.begin(), t.begin() + sm);
      const char* edges[] = {"entry", "waited", "router done", "barrier 1", "top k", "gate/up done", "barrier 2",
                             "h quantized", "end"};
      std::printf("  %-6s one launch's phases%s (us from the first block's entry: median, last block):",
                  contract(a).c_str(), after_o ? " after o" : "");
      for (int i = 0; i < kMoeSingleStamps; ++i) {
        std::vector<double> v;
        for (int64_t b = 0; b < sm; ++b) v.push_back((static_cast<double>(t[i * sm + b]) - static_cast<double>(t0)) / 1e3);
        std::sort(v.begin(), v.end());
        std::printf(" %s %.2f/%.2f;", edges[i], v[v.size() / 2], v.back());
      }
      std::printf("\n");
    }
    for (bool after_o : {false, true}) {  // the wide router's phases in layer 8 of 16, alone or after o with the norm
      const int64_t blocks = (sh.n_expert + 3) / 4;
      DeviceBuffer trace(static_cast<size_t>(kMoeWideStamps * blocks * 8));
      for (int l = 0; l < layers; ++l) {
        const WeightMatrix router{GgmlType::F32, routers[l].ptr(), sh.n_expert, sh.n_embd, 1};
        if (after_o) {
          const WeightMatrix o{t, o_mats[l].ptr(), sh.n_embd, 4096, 1};
          ASSERT_TRUE(gemv_quantizing_row(o, a, o_in.ptr(), o_out.ptr(), s.handle()));
        }
        const RouteScratch rs{route_parts.ptr(), sync.ptr() + 8, l == layers / 2 ? trace.ptr() : 0};
        moe_route(router, xd.ptr(), 1, sh.top_k, true, ids.ptr() + l * sh.top_k * 4, wts.ptr() + l * sh.top_k * 4,
                  {xq.ptr(), a}, s.handle(), 0, after_o ? &np : nullptr, &rs);
      }
      s.synchronize();
      const auto t = download<uint64_t>(trace, kMoeWideStamps * blocks);
      const uint64_t t0 = *std::min_element(t.begin(), t.begin() + blocks);
      const char* edges[] = {"entry", "waited", "x formed", "x quantized, unit landed", "sums written", "counted",
                             "top k"};
      std::printf("  %-6s wide router's phases%s (us from the first block's entry: median, last block):",
                  contract(a).c_str(), after_o ? " after o" : "");
      for (int i = 0; i < kMoeWideStamps; ++i) {
        std::vector<double> v;
        for (int64_t b = 0; b < blocks; ++b)
          if (t[i * blocks + b] != 0) v.push_back((static_cast<double>(t[i * blocks + b]) - static_cast<double>(t0)) / 1e3);
        std::sort(v.begin(), v.end());
        if (!v.empty()) std::printf(" %s %.2f/%.2f;", edges[i], v[v.size() / 2], v.back());
      }
      std::printf("\n");
    }
    const auto got = download<int32_t>(ids, sh.top_k * layers);
    for (int l = 0; l < layers; ++l)
      for (int64_t j = 0; j < sh.top_k; ++j)  // falling logits: 8l + 7 first
        EXPECT_EQ(got[l * sh.top_k + j], l * sh.top_k + (sh.top_k - 1 - j)) << "layer " << l;
  }
}

// The kept experts dealt by slot in one launch (fusion rule experts_by_slot) against its held-back
// form, the gate/up kernel and the down kernel (f32 h, ids settled): h the same bits (the gate/up
// kernel's sums for the same group), out within kBoundFallback of the largest output (the slots' parts
// are added in another order than the down kernel's lanes), the launch run twice the same bytes and its
// counts left zero. Shapes: qwen3-30b-a3b's (three down rows a ring chunk) and rows of 1,536 (one
// down row a chunk); the small ones, whose gate/up takes the paired products, and one slot of 768
// (paired too) must say they take the two kernels.
TEST(MoeGpu, BySlotIsTheTwoKernels) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(77);
  const MoeShape shapes[] = {{2048, 768, 128, 8}, {256, 128, 16, 4}, {512, 256, 64, 6}, {4096, 1536, 8, 2},
                             {512, 2048, 16, 2}, {2048, 768, 128, 1}};
  int ran = 0;
  for (const MoeShape& sh : shapes) {
    const GgmlType t = GgmlType::Q8_0;
    const Stack gate = make_stack(t, sh.n_expert, sh.n_ff, sh.n_embd, rng);
    const Stack up = make_stack(t, sh.n_expert, sh.n_ff, sh.n_embd, rng);
    const Stack down = make_stack(t, sh.n_expert, sh.n_embd, sh.n_ff, rng);
    const int64_t e = sh.n_embd, kk = sh.top_k, nh = kk * sh.n_ff;
    std::vector<int32_t> ids_h;
    std::vector<float> w_h;
    random_routes(1, sh, rng, ids_h, w_h);
    DeviceBuffer ids = upload(ids_h), wts = upload(w_h), xd = upload(random_values(e, rng));
    for (Activations a : {Activations::int8, Activations::int8x2}) {
      const std::string what = std::to_string(e) + "/" + std::to_string(sh.n_ff) + " " + std::to_string(kk) + " of " +
                               std::to_string(sh.n_expert) + " " + contract(a);
      if (!moe_experts_by_slot_applies(gate.weights(), up.weights(), down.weights(), a, 1, kk)) {
        std::printf("  by slot %s: takes the two kernels\n", what.c_str());
        continue;
      }
      ++ran;
      std::vector<uint8_t> xq_bytes;
      DeviceBuffer xq = quantize_on_device(xd.ptr(), 1, e, a, s, xq_bytes);
      DeviceBuffer counts(static_cast<size_t>(moe_experts_count_bytes(kk)));
      counts.zero();
      auto run = [&](bool by_slot, int times, std::vector<float>& h_out) {
        DeviceBuffer h(static_cast<size_t>(nh * 4)), out(static_cast<size_t>(e * 4));
        DeviceBuffer parts(static_cast<size_t>(moe_experts_part_bytes(down.weights(), kk)));
        for (int i = 0; i < times; ++i) {
          if (by_slot) {
            moe_experts_by_slot(gate.weights(), up.weights(), down.weights(), a, xq.ptr(), ids.ptr(), wts.ptr(), kk,
                                h.ptr(), parts.ptr(), counts.ptr(), out.ptr(), s.handle());
          } else {
            moe_gate_up_swiglu(gate.weights(), up.weights(), a, xq.ptr(), 1, ids.ptr(), kk, h.ptr(), s.handle());
            moe_down_combine(down.weights(), a, h.ptr(), false, 1, ids.ptr(), wts.ptr(), kk, out.ptr(), s.handle(),
                             true);
          }
        }
        s.synchronize();
        h_out = download<float>(h, nh);
        return download<float>(out, e);
      };
      std::vector<float> h2, h1, h1b;
      const std::vector<float> two = run(false, 1, h2), one = run(true, 1, h1), twice = run(true, 2, h1b);
      EXPECT_TRUE(std::memcmp(h2.data(), h1.data(), h2.size() * 4) == 0) << what << ": h";
      EXPECT_TRUE(std::memcmp(one.data(), twice.data(), one.size() * 4) == 0) << what << ": run twice";
      const auto c = download<uint32_t>(counts, moe_experts_count_bytes(kk) / 4);
      EXPECT_TRUE(std::all_of(c.begin(), c.end(), [](uint32_t v) { return v == 0; })) << what << ": the counts";
      double scale = 0, err = 0;
      for (int64_t i = 0; i < e; ++i) {
        scale = std::max(scale, std::abs(double(two[i])));
        const double d = std::abs(double(one[i]) - double(two[i]));
        err = std::isfinite(d) ? std::max(err, d) : INFINITY;
      }
      ASSERT_GT(scale, 0) << what;
      EXPECT_LE(err / scale, kBoundFallback) << what;
      std::printf("  by slot %s: h the two kernels' bits, out within %.2e of theirs\n", what.c_str(), err / scale);
    }
  }
  EXPECT_GE(ran, 4);  // the 30B's shape and 4096/1536 under both contracts (the others take the paired gate/up)
}

// Decode speed of the kept experts at qwen3-30b-a3b (2048, ff 768, 8 of 128, q8_0), one row: the two
// kernels (gate/up, down) against the launch dealt by slot, alone and each after an attention output
// product (4,096 -> 2,048, q8_0, its row quantized in each block) as in the decode step. 16 layers, each
// its own 8 experts (ids written once), so a replay reads 640 MB of experts. us a layer; GB/s counts
// the experts' 40.1 MB.
TEST(MoeGpu, TimingBySlot) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(78);
  const MoeShape sh{2048, 768, 128, 8};
  const int layers = 16;
  const GgmlType t = GgmlType::Q8_0;
  const Stack gate = make_stack(t, sh.n_expert, sh.n_ff, sh.n_embd, rng);
  const Stack up = make_stack(t, sh.n_expert, sh.n_ff, sh.n_embd, rng);
  const Stack down = make_stack(t, sh.n_expert, sh.n_embd, sh.n_ff, rng);
  std::vector<int32_t> ids_h;
  for (int l = 0; l < layers; ++l)
    for (int64_t j = 0; j < sh.top_k; ++j) ids_h.push_back(static_cast<int32_t>(l * sh.top_k + j));
  DeviceBuffer ids = upload(ids_h), wts = upload(std::vector<float>(static_cast<size_t>(layers * sh.top_k), 0.125f));
  DeviceBuffer xd = upload(random_values(sh.n_embd, rng));
  DeviceBuffer h(static_cast<size_t>(sh.top_k * sh.n_ff * 4)), out(static_cast<size_t>(sh.n_embd * 4));
  DeviceBuffer parts(static_cast<size_t>(moe_experts_part_bytes(down.weights(), sh.top_k)));
  DeviceBuffer counts(static_cast<size_t>(moe_experts_count_bytes(sh.top_k)));
  counts.zero();
  std::vector<DeviceBuffer> o_mats;
  for (int l = 0; l < layers; ++l) o_mats.push_back(upload(random_matrix(t, sh.n_embd, 4096, rng)));
  DeviceBuffer o_in = upload(random_values(4096, rng)), o_out(static_cast<size_t>(sh.n_embd * 4));
  const double expert_bytes = static_cast<double>(sh.top_k * 3 * sh.n_ff * row_bytes(t, sh.n_embd));
  std::printf("the kept experts by slot, qwen3-30b-a3b shape, 1 row: us a layer, GB/s of expert weights (%.1f MB)\n",
              expert_bytes / 1e6);
  for (Activations a : {Activations::int8, Activations::int8x2}) {
    std::vector<uint8_t> xq_bytes;
    DeviceBuffer xq = quantize_on_device(xd.ptr(), 1, sh.n_embd, a, s, xq_bytes);
    auto layer = [&](int l, int variant) {  // 0 two kernels, 1 by slot, 2 o alone, 3 o + two, 4 o + by slot
      const CUdeviceptr il = ids.ptr() + l * sh.top_k * 4, wl = wts.ptr() + l * sh.top_k * 4;
      if (variant >= 2) {
        const WeightMatrix o{t, o_mats[l].ptr(), sh.n_embd, 4096, 1};
        ASSERT_TRUE(gemv_quantizing_row(o, a, o_in.ptr(), o_out.ptr(), s.handle()));
      }
      if (variant == 0 || variant == 3) {
        moe_gate_up_swiglu(gate.weights(), up.weights(), a, xq.ptr(), 1, il, sh.top_k, h.ptr(), s.handle());
        moe_down_combine(down.weights(), a, h.ptr(), false, 1, il, wl, sh.top_k, out.ptr(), s.handle(), true);
      } else if (variant == 1 || variant == 4) {
        moe_experts_by_slot(gate.weights(), up.weights(), down.weights(), a, xq.ptr(), il, wl, sh.top_k, h.ptr(),
                            parts.ptr(), counts.ptr(), out.ptr(), s.handle());
      }
    };
    const char* names[] = {"two kernels", "by slot", "o alone", "o, two kernels", "o, by slot"};
    double o_alone = 0;
    for (int v = 0; v < 5; ++v) {
      const double us = graph_median_us(s, layers, [&](int l) { layer(l, v); });
      if (v == 2) o_alone = us;
      const double mix = v >= 3 ? us - o_alone : us;
      std::printf("  %-6s %-15s %7.2f us%s  %6.0f GB/s\n", contract(a).c_str(), names[v], us,
                  v >= 3 ? fmt_after_o(mix).c_str() : "", v == 2 ? 0.0 : expert_bytes / (mix * 1e3));
    }
  }
  EXPECT_EQ(download<uint32_t>(counts, 1)[0], 0u);
}

}  // namespace
}  // namespace lathe::kernels
