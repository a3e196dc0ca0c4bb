// The mixture of a prefill chunk grouped by expert (kernels/moe_prefill_launch.h) against the host's
// grouping (moe_group_reference, byte for byte) and the interpreter (interp/cpu_ops.h), then its speed
// at the Qwen3-30B-A3B layer shape.
//
// Per chunk, after one moe_prefill call (router, grouping, gate/up/SwiGLU, h^, down, combine):
//   route     ids equal route_top_k of the GPU's own logits; weights within kBoundWeights.
//   grouping  offsets, pair_of, pos_of, tile count and tiles equal moe_group_reference(ids).
//   gate/up   h[p] against silu(gate_e . x^) * (up_e . x^) in f64, x^ rebuilt from the quantizer's
//             bytes: only f32 rounding is left (kBoundRebuilt, the scale of test_moe_gpu.cpp).
//   down      out[r] against sum_j w_j (down_e . h^[pos]) in f64, h^ rebuilt from the bytes the chunk
//             made (kBoundRebuilt).
//   mixture   out against lathe::mixture on f32 x (the contract's quantization of x and h included:
//             kBoundEndToEnd per contract), on rows whose routing the CPU's f32 logits choose alike;
//             a row chosen otherwise must be a near-tie (gap below 1e-4 of the logits' scale).
//   repeat    a second call gives bit-identical out.
// Large chunks check a sample of rows and pairs (the f64 references cost ~R K 3 n ff each).
// Longer than 300 lines: one harness, the sweeps and the timing share its helpers.

#include "gguf/block_format.h"
#include "interp/cpu_ops.h"
#include "kernels/moe_prefill_launch.h"
#include "kernels/route_launch.h"
#include "runtime/cuda_driver.h"

#include "test_moe_chunk_helpers.h"
#include "test_product_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace lathe::kernels {
namespace {

using cuda::DeviceBuffer;
using namespace test;

constexpr double kBoundRebuilt = 1e-4;
constexpr double kBoundWeights = 4e-6;
constexpr double kBoundLogits = 1e-5;  // f32 router product vs the interpreter's, of max|logit|
double bound_end_to_end(Activations a) { return a == Activations::int8x2 ? 2e-3 : 3e-2; }  // ~max/64516, max/254 a value

struct Shape {
  int64_t n_embd, n_ff, n_expert, top_k;
};

struct Layer {
  GgmlType type;
  Shape sh;
  std::vector<uint8_t> router, gate, up, down;  // router f32
  DeviceBuffer d_router, d_gate, d_up, d_down;
  WeightMatrix w(const DeviceBuffer& b, GgmlType t, int64_t n_out, int64_t k, int64_t ne) const {
    return WeightMatrix{t, b.ptr(), n_out, k, ne};
  }
  WeightMatrix router_w() const { return w(d_router, GgmlType::F32, sh.n_expert, sh.n_embd, 1); }
  WeightMatrix gate_w() const { return w(d_gate, type, sh.n_ff, sh.n_embd, sh.n_expert); }
  WeightMatrix up_w() const { return w(d_up, type, sh.n_ff, sh.n_embd, sh.n_expert); }
  WeightMatrix down_w() const { return w(d_down, type, sh.n_embd, sh.n_ff, sh.n_expert); }
  MatrixRef ref(const std::vector<uint8_t>& b, GgmlType t, int64_t n_out, int64_t k, int64_t ne) const {
    return MatrixRef{t, b.data(), k, n_out, ne};
  }
};

// tie_pattern 0: random router; 1: every router row equal (all logits tie: experts 0..K-1);
// 2: rows equal in pairs (each pair's lower index first).
Layer make_layer(GgmlType t, const Shape& sh, int tie_pattern, std::mt19937& rng) {
  Layer l{t, sh, random_matrix(GgmlType::F32, sh.n_expert, sh.n_embd, rng),
          random_matrix(t, sh.n_expert * sh.n_ff, sh.n_embd, rng), random_matrix(t, sh.n_expert * sh.n_ff, sh.n_embd, rng),
          random_matrix(t, sh.n_expert * sh.n_embd, sh.n_ff, rng), {}, {}, {}, {}};
  const int64_t rb = sh.n_embd * 4;
  for (int64_t e = 0; tie_pattern != 0 && e < sh.n_expert; ++e) {
    const int64_t src = tie_pattern == 1 ? 0 : e & ~int64_t{1};
    std::memmove(l.router.data() + e * rb, l.router.data() + src * rb, static_cast<size_t>(rb));
  }
  l.d_router = upload(l.router);
  l.d_gate = upload(l.gate);
  l.d_up = upload(l.up);
  l.d_down = upload(l.down);
  return l;
}

using Chunk = MoeChunk;

Chunk make_chunk(const Shape& sh, int64_t rows, Activations a, const std::vector<float>& x) {
  return make_moe_chunk(rows, sh.n_embd, sh.n_ff, sh.n_expert, sh.top_k, a, x);
}

void run_chunk(const Layer& l, Activations a, int64_t rows, const Chunk& c, const cuda::Stream& s) {
  moe_prefill(l.router_w(), l.gate_w(), l.up_w(), l.down_w(), a, c.x.ptr(), rows, l.sh.top_k, true, c.out.ptr(),
              c.scratch(), s.handle());
  s.synchronize();
}

struct Errors {
  bool ids_ok = true, group_ok = true, mixture_ids_ok = true, repeat_ok = true;
  double weights = 0, logits = 0, gate_up = 0, down = 0, mixture = 0;
  int64_t tiles = 0, near_ties = 0;
};

Errors check_chunk(const Layer& l, Activations a, int64_t rows, std::mt19937& rng, const cuda::Stream& s) {
  const Shape& sh = l.sh;
  const int64_t kk = sh.top_k, ne = sh.n_expert, n = sh.n_embd, ff = sh.n_ff, pairs = rows * kk;
  const std::vector<float> x = random_values(rows * n, rng);
  const Chunk c = make_chunk(sh, rows, a, x);
  run_chunk(l, a, rows, c, s);
  const auto out = download<float>(c.out, rows * n);
  const auto logits = download<float>(c.logits, rows * ne);
  const auto ids = download<int32_t>(c.ids, pairs);
  const auto wts = download<float>(c.wts, pairs);
  const auto h = download<float>(c.h, pairs * ff);
  const std::vector<float> hh = rebuilt_x(download<uint8_t>(c.q, quantized_activation_bytes(pairs, ff, a)), pairs, ff, a);
  Errors e;
  // route: against the GPU's own logits
  const MixtureOptions opt{kk, true};
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int32_t> ci;
    std::vector<float> cw;
    lathe::route_top_k({logits.data() + r * ne, static_cast<size_t>(ne)}, opt, ci, cw);
    for (int64_t j = 0; j < kk; ++j) {
      e.ids_ok = e.ids_ok && ci[j] == ids[r * kk + j];
      e.weights = std::max(e.weights, std::abs(double(cw[j]) - wts[r * kk + j]));
    }
  }
  // grouping
  const int bm = moe_prefill_row_tile(rows, kk, ne);
  const MoeGrouping ref = moe_group_reference(ids, rows, kk, ne, bm);
  const MoeGroupView v = moe_group_view(c.group.ptr(), rows, kk, ne);
  std::vector<int32_t> got(static_cast<size_t>(moe_group_bytes(rows, kk, ne) / 4));
  c.group.download(got.data(), got.size() * 4);
  auto at = [&](CUdeviceptr p) { return got.begin() + static_cast<int64_t>((p - c.group.ptr()) / 4); };
  e.tiles = got[(v.n_tiles - c.group.ptr()) / 4];
  e.group_ok = std::equal(ref.offsets.begin(), ref.offsets.end(), at(v.offsets)) &&
               std::equal(ref.pair_of.begin(), ref.pair_of.end(), at(v.pair_of)) &&
               std::equal(ref.pos_of.begin(), ref.pos_of.end(), at(v.pos_of)) &&
               e.tiles == static_cast<int64_t>(ref.tiles.size() / 4) &&
               std::equal(ref.tiles.begin(), ref.tiles.end(), at(v.tiles));
  // x^ as the chunk's products read it (the quantizer's bytes, remade here: the chunk's q now holds h^)
  DeviceBuffer xq(static_cast<size_t>(quantized_activation_bytes(rows, n, a)));
  quantize_activations(c.x.ptr(), rows, n, a, xq.ptr(), s.handle());
  s.synchronize();
  const std::vector<float> xh = rebuilt_x(download<uint8_t>(xq, xq.bytes()), rows, n, a);
  // sampled rows: all of a small chunk, else 16 spread over it
  std::vector<int64_t> sample;
  for (int64_t r = 0; r < rows; r += std::max<int64_t>(1, rows / 16)) sample.push_back(r);
  const MatrixRef gate = l.ref(l.gate, l.type, ff, n, ne), up = l.ref(l.up, l.type, ff, n, ne);
  const MatrixRef down = l.ref(l.down, l.type, n, ff, ne);
  double gu_err = 0, gu_scale = 0, d_err = 0, d_scale = 0;
  for (int64_t r : sample)
    for (int64_t j = 0; j < kk; ++j) {
      const int32_t ex = ids[r * kk + j], p = ref.pos_of[r * kk + j];
      std::vector<double> g, gt, u, ut, y, yt;
      product_terms(gate.expert(ex), xh.data() + r * n, g, gt);
      product_terms(up.expert(ex), xh.data() + r * n, u, ut);
      for (int64_t o = 0; o < ff; ++o) {
        const double silu = g[o] / (1 + std::exp(-g[o])), val = silu * u[o];
        gu_err = std::max(gu_err, std::abs(val - h[p * ff + o]));
        gu_scale = std::max({gu_scale, std::abs(val), std::abs(u[o]) * std::max(std::abs(g[o]), gt[o]) +
                                                        std::abs(silu) * std::max(std::abs(u[o]), ut[o])});
      }
    }
  for (int64_t r : sample) {
    std::vector<double> acc(static_cast<size_t>(n), 0.0), sc(static_cast<size_t>(n), 0.0);
    for (int64_t j = 0; j < kk; ++j) {
      std::vector<double> y, t;
      product_terms(down.expert(ids[r * kk + j]), hh.data() + ref.pos_of[r * kk + j] * ff, y, t);
      for (int64_t o = 0; o < n; ++o) {
        acc[o] += double(wts[r * kk + j]) * y[o];
        sc[o] += std::abs(double(wts[r * kk + j])) * std::max(std::abs(y[o]), t[o]);
      }
    }
    for (int64_t o = 0; o < n; ++o) {
      d_err = std::max(d_err, std::abs(acc[o] - out[r * n + o]));
      d_scale = std::max(d_scale, sc[o]);
    }
  }
  e.gate_up = gu_err / gu_scale;
  e.down = d_err / d_scale;
  // the interpreter's mixture on the sampled rows of f32 x
  std::vector<float> xs;
  for (int64_t r : sample) xs.insert(xs.end(), x.begin() + r * n, x.begin() + (r + 1) * n);
  const int64_t ns = static_cast<int64_t>(sample.size());
  const Tensor xt({ns, n}, xs);
  const MatrixRef router = l.ref(l.router, GgmlType::F32, ne, n, 1);
  const Tensor mix = lathe::mixture(xt, router, gate, up, down, opt);
  const Tensor cl = lathe::product(xt, router);
  double m_err = 0, m_scale = 0, l_err = 0, l_scale = 0;
  for (int64_t i = 0; i < ns; ++i) {
    const int64_t r = sample[static_cast<size_t>(i)];
    std::vector<int32_t> ci;
    std::vector<float> cw;
    const float* lr = cl.row(i);
    for (int64_t j = 0; j < ne; ++j) {
      l_err = std::max(l_err, std::abs(double(lr[j]) - logits[r * ne + j]));
      l_scale = std::max(l_scale, std::abs(double(lr[j])));
    }
    lathe::route_top_k({lr, static_cast<size_t>(ne)}, opt, ci, cw);
    if (!std::equal(ci.begin(), ci.end(), ids.begin() + r * kk)) {
      std::vector<float> sorted(lr, lr + ne);
      std::sort(sorted.begin(), sorted.end(), std::greater<float>());
      double scale = 0;
      for (float v2 : sorted) scale = std::max(scale, std::abs(double(v2)));
      bool tie = false;
      for (int64_t j = 0; j < std::min(kk, ne - 1); ++j) tie = tie || sorted[j] - sorted[j + 1] <= 1e-4 * scale;
      e.mixture_ids_ok = e.mixture_ids_ok && tie;
      ++e.near_ties;
      continue;
    }
    for (int64_t o = 0; o < n; ++o) {
      m_err = std::max(m_err, std::abs(double(mix.row(i)[o]) - out[r * n + o]));
      m_scale = std::max(m_scale, std::abs(double(mix.row(i)[o])));
    }
  }
  e.mixture = m_scale > 0 ? m_err / m_scale : 0;
  e.logits = l_err / l_scale;
  run_chunk(l, a, rows, c, s);
  e.repeat_ok = download<float>(c.out, rows * n) == out;
  return e;
}

void check_and_print(const Layer& l, int64_t rows, const std::string& label, std::mt19937& rng, const cuda::Stream& s) {
  for (Activations a : {Activations::int8, Activations::int8x2}) {
    const Errors e = check_chunk(l, a, rows, rng, s);
    const std::string what = label + " " + std::string(ggml_type_name(l.type)) + " " + std::to_string(l.sh.n_embd) +
                             "/" + std::to_string(l.sh.n_ff) + " " + std::to_string(l.sh.top_k) + " of " +
                             std::to_string(l.sh.n_expert) + " R " + std::to_string(rows) + " " +
                             std::string(activations_name(a));
    EXPECT_TRUE(e.ids_ok) << what;
    EXPECT_LE(e.weights, kBoundWeights) << what;
    EXPECT_LE(e.logits, kBoundLogits) << what;
    EXPECT_TRUE(e.group_ok) << what;
    EXPECT_LE(e.gate_up, kBoundRebuilt) << what;
    EXPECT_LE(e.down, kBoundRebuilt) << what;
    EXPECT_LE(e.mixture, bound_end_to_end(a)) << what;
    EXPECT_TRUE(e.mixture_ids_ok) << what;
    EXPECT_TRUE(e.repeat_ok) << what;
    std::printf("  %-44s tiles %4lld group %s logits %.1e gate/up %.1e down %.1e mixture %.1e (bound %.0e) ties %lld %s\n",
                what.c_str(), static_cast<long long>(e.tiles), e.group_ok ? "ok" : "DIFFERS", e.logits, e.gate_up, e.down,
                e.mixture, bound_end_to_end(a), static_cast<long long>(e.near_ties),
                e.ids_ok && e.repeat_ok && e.mixture_ids_ok ? "ok" : "FAIL");
  }
}

TEST(MoePrefillGpu, GroupingMatchesHost) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(81);
  int checked = 0;
  for (int64_t ne : {1, 10, 128, 1000})
    for (int64_t kk : {1, 3, 8})
      for (int64_t rows : {1, 9, 100, 512, 1024, 2000})  // 1024 of 128 experts: static + dynamic shared > 48 KB
        for (int skew : {0, 1}) {
          if (kk > ne) continue;
          std::vector<int32_t> ids;
          std::vector<int32_t> all(static_cast<size_t>(ne));
          for (int64_t r = 0; r < rows; ++r) {
            std::iota(all.begin(), all.end(), 0);
            if (skew == 0 || r % 5 == 0) std::shuffle(all.begin(), all.end(), rng);  // skew: most rows alike
            ids.insert(ids.end(), all.begin(), all.begin() + kk);
          }
          for (int bm : {32, 64}) {
            DeviceBuffer idd = upload(ids), group(static_cast<size_t>(moe_group_bytes(rows, kk, ne)));
            moe_group(idd.ptr(), rows, kk, ne, bm, group.ptr(), s.handle());
            s.synchronize();
            const MoeGrouping ref = moe_group_reference(ids, rows, kk, ne, bm);
            const MoeGroupView v = moe_group_view(group.ptr(), rows, kk, ne);
            std::vector<int32_t> got(static_cast<size_t>(moe_group_bytes(rows, kk, ne) / 4));
            group.download(got.data(), got.size() * 4);
            auto at = [&](CUdeviceptr p) { return got.begin() + static_cast<int64_t>((p - group.ptr()) / 4); };
            const std::string what = "experts " + std::to_string(ne) + " k " + std::to_string(kk) + " rows " +
                                     std::to_string(rows) + " skew " + std::to_string(skew) + " bm " + std::to_string(bm);
            EXPECT_TRUE(std::equal(ref.offsets.begin(), ref.offsets.end(), at(v.offsets))) << what;
            EXPECT_TRUE(std::equal(ref.pair_of.begin(), ref.pair_of.end(), at(v.pair_of))) << what;
            EXPECT_TRUE(std::equal(ref.pos_of.begin(), ref.pos_of.end(), at(v.pos_of))) << what;
            EXPECT_EQ(*at(v.n_tiles), static_cast<int32_t>(ref.tiles.size() / 4)) << what;
            EXPECT_TRUE(std::equal(ref.tiles.begin(), ref.tiles.end(), at(v.tiles))) << what;
            ++checked;
          }
        }
  std::printf("grouping: %d routings equal the host's\n", checked);
}

TEST(MoePrefillGpu, MatchesInterpreter) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(82);
  std::printf("moe prefill grouped: gate/up and down vs f64 on x^, h^ (bound %.0e); mixture vs interpreter\n",
              kBoundRebuilt);
  set_moe_prefill_engine(MoePrefillEngine::int8);  // the int8 engine's h and h^; wgmma: test_moe_wgmma_gpu.cpp
  {
    const Layer big = make_layer(GgmlType::Q8_0, {2048, 768, 128, 8}, 0, rng);
    for (int64_t rows : {16, 100, 512}) check_and_print(big, rows, "", rng, s);
    set_moe_prefill_stages(2);  // the rule's is one stage at 32-row tiles
    check_and_print(big, 512, "2 stages", rng, s);
    set_moe_prefill_stages(0);
  }
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
    const Layer l = make_layer(t, {512, 256, 64, 6}, 0, rng);
    for (int64_t rows : {9, 77}) check_and_print(l, rows, "", rng, s);
  }
  const Layer ragged = make_layer(GgmlType::Q8_0, {160, 96, 10, 3}, 0, rng);  // partial k-tiles and n-tiles
  for (int bm : {32, 64, 1}) {  // 1: 32 rows, one stage
    set_moe_prefill_row_tile(bm == 1 ? 32 : bm);
    set_moe_prefill_stages(bm == 1 ? 1 : 2);
    for (int64_t rows : {9, 37, 200})
      check_and_print(ragged, rows, bm == 1 ? "1 stage" : "bm " + std::to_string(bm) + " 2 st", rng, s);
  }
  set_moe_prefill_row_tile(0);
  set_moe_prefill_stages(0);
  for (int pattern : {1, 2}) {
    const Layer l = make_layer(GgmlType::Q8_0, {256, 128, 16, 4}, pattern, rng);
    check_and_print(l, 100, "ties " + std::to_string(pattern), rng, s);
  }
  set_moe_prefill_engine(MoePrefillEngine::automatic);
}

// One layer of Qwen3-30B-A3B (2048, ff 768, 8 of 128, q8_0, f32 router), 512 rows routed at random:
// us per layer of the whole chunk (8 launches, one graph) and of each stage, TOPS of the expert
// products (2 P 3 ff n per layer, P = 4096 pairs).
TEST(MoePrefillGpu, Timing) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(83);
  const Shape sh{2048, 768, 128, 8};
  const int64_t rows = 512, pairs = rows * sh.top_k;
  const Layer l = make_layer(GgmlType::Q8_0, sh, 0, rng);
  const double ops = 2.0 * static_cast<double>(pairs) * 3 * sh.n_ff * sh.n_embd;
  std::printf("mixture prefill, qwen3-30b-a3b layer, %lld rows, q8_0: us (TOPS of the expert products)\n",
              static_cast<long long>(rows));
  set_moe_prefill_engine(MoePrefillEngine::int8);  // the wgmma engine: MoeWgmmaGpu.Timing
  for (Activations a : {Activations::int8, Activations::int8x2})
    for (int variant : {32, 64, 1}) {  // 1: 32 rows, one stage
      const int bm = variant == 1 ? 32 : variant;
      set_moe_prefill_row_tile(bm);
      set_moe_prefill_stages(variant == 1 ? 1 : 2);
      const Chunk c = make_chunk(sh, rows, a, random_values(rows * sh.n_embd, rng));
      const MoePrefillScratch sc = c.scratch();
      std::vector<std::pair<std::string, std::function<void(CUstream)>>> stages = {
          {"whole", [&](CUstream st) {
             moe_prefill(l.router_w(), l.gate_w(), l.up_w(), l.down_w(), a, c.x.ptr(), rows, sh.top_k, true,
                         c.out.ptr(), sc, st);
           }},
          {"router (matmul)", [&](CUstream st) {
             matmul(l.router_w(), c.x.ptr(), rows, sc.logits, st);
             route_top_k(sc.ids, sc.weights, sc.logits, rows, sh.n_expert, sh.top_k, true, st);
           }},
          {"router", [&](CUstream st) {
             moe_router_logits(l.router_w(), c.x.ptr(), rows, sc.logits, st);
             route_top_k(sc.ids, sc.weights, sc.logits, rows, sh.n_expert, sh.top_k, true, st);
           }},
          {"group", [&](CUstream st) { moe_group(sc.ids, rows, sh.top_k, sh.n_expert, bm, sc.group, st); }},
          {"gate/up", [&](CUstream st) {
             quantize_activations(c.x.ptr(), rows, sh.n_embd, a, sc.q, st);
             moe_grouped_gate_up(l.gate_w(), l.up_w(), a, sc.q, rows, sh.top_k, bm, sc.group, sc.h, st);
           }},
          {"quantize h", [&](CUstream st) { quantize_activations(sc.h, pairs, sh.n_ff, a, sc.q, st); }},
          {"down", [&](CUstream st) { moe_grouped_down(l.down_w(), a, sc.q, rows, sh.top_k, bm, sc.group, sc.y, st); }},
          {"combine", [&](CUstream st) {
             moe_combine(sc.y, rows, sh.top_k, sh.n_expert, sh.n_embd, sc.group, sc.weights, c.out.ptr(), st);
           }}};
      std::string line;
      for (auto& [name, fn] : stages) {
        const double us = graph_median_us(s, 4, [&](int) { fn(s.handle()); });
        char buf[96];
        const double tops = name == "whole" ? ops / (us * 1e6) : name == "down" ? ops / 3 / (us * 1e6)
                            : name == "gate/up" ? ops * 2 / 3 / (us * 1e6) : 0.0;
        std::snprintf(buf, sizeof buf, " %s %.1f us%s", name.c_str(), us,
                      tops > 0 ? (" (" + std::to_string(tops).substr(0, 5) + ")").c_str() : "");
        line += buf;
      }
      const auto tiles = download<int32_t>(c.group, static_cast<size_t>(moe_group_bytes(rows, sh.top_k, sh.n_expert) / 4));
      std::printf("  %-6s bm %d %s:%s; tiles %d\n", std::string(activations_name(a)).c_str(), bm,
                  variant == 1 ? "1 stage" : "2 stages", line.c_str(),
                  tiles[(moe_group_view(c.group.ptr(), rows, sh.top_k, sh.n_expert).n_tiles - c.group.ptr()) / 4]);
    }
  set_moe_prefill_row_tile(0);
  set_moe_prefill_stages(0);
  set_moe_prefill_engine(MoePrefillEngine::automatic);
}

}  // namespace
}  // namespace lathe::kernels
