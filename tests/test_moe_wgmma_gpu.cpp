// The mixture's grouped products on wgmma (kernels/moe_wgmma_launch.h) against f64 references, and
// moe_prefill's wgmma engine against its int8 engine and the interpreter, then the speed of both at
// the Qwen3-30B-A3B layer shape.
//
//   gather   x16s[p] equals f16(x[pair_of[p] / K]) bit for bit.
//   gate/up  h16[p] against silu(g) u in f64, g and u the f64 products of f16(x) and the f16-rounded
//            dequantized weights (gemm_f16's values): only f32 accumulation and h's own f16 rounding
//            are left: (|gpu - ref| - 2^-11 |ref|) / max|ref| <= kBoundProduct.
//   down     y[p] against down_e . h16[p] in f64 (h16 as the chunk made it): kBoundProduct.
//   routing  skewed routings give experts 0, 1, 33 and many pairs, and ragged tiles; random ones too.
//   mixture  moe_prefill (wgmma) against moe_prefill (int8x2) and against lathe::mixture on f32 x, on
//            rows the CPU's logits route alike: kBoundMixture (the int8x2 contract's 2e-3).
// Longer than 300 lines: one harness for the products, the whole mixture and the timing.

#include "gguf/block_format.h"
#include "interp/cpu_ops.h"
#include "kernels/gemm_wgmma_launch.h"
#include "kernels/moe_prefill_launch.h"
#include "kernels/moe_wgmma_launch.h"
#include "kernels/route_launch.h"
#include "runtime/cuda_driver.h"

#include "test_moe_chunk_helpers.h"
#include "test_product_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace lathe::kernels {
namespace {

using cuda::DeviceBuffer;
using namespace test;

constexpr double kBoundProduct = 1e-4;
constexpr double kBoundMixture = 2e-3;

struct Shape {
  GgmlType type;
  int64_t n_embd, n_ff, n_expert, top_k;
};

struct Stack {  // gate, up, down of one shape on host and device
  Shape sh;
  std::vector<uint8_t> gate, up, down;
  DeviceBuffer d_gate, d_up, d_down;
  WeightMatrix gate_w() const { return {sh.type, d_gate.ptr(), sh.n_ff, sh.n_embd, sh.n_expert}; }
  WeightMatrix up_w() const { return {sh.type, d_up.ptr(), sh.n_ff, sh.n_embd, sh.n_expert}; }
  WeightMatrix down_w() const { return {sh.type, d_down.ptr(), sh.n_embd, sh.n_ff, sh.n_expert}; }
  MatrixRef ref(const std::vector<uint8_t>& b, int64_t n_out, int64_t k) const {
    return MatrixRef{sh.type, b.data(), k, n_out, sh.n_expert};
  }
};

// random_matrix's q6_K weights reach 0.02 * 127 * 32 = 81: over k = 2048 silu(g) u then passes f16's
// 65504 (h16 becomes inf; real models' h is orders of magnitude smaller): their d is set to 5e-4.
std::vector<uint8_t> moderate(GgmlType t, std::vector<uint8_t> m) {
  if (t == GgmlType::Q6_K)
    for (size_t b = 0; b + 210 <= m.size(); b += 210) put_f16(&m[b + 208], 5e-4f);
  return m;
}

Stack make_stack(const Shape& sh, std::mt19937& rng) {
  Stack s{sh, moderate(sh.type, random_matrix(sh.type, sh.n_expert * sh.n_ff, sh.n_embd, rng)),
          moderate(sh.type, random_matrix(sh.type, sh.n_expert * sh.n_ff, sh.n_embd, rng)),
          moderate(sh.type, random_matrix(sh.type, sh.n_expert * sh.n_embd, sh.n_ff, rng)), {}, {}, {}};
  s.d_gate = upload(s.gate);
  s.d_up = upload(s.up);
  s.d_down = upload(s.down);
  return s;
}

// ids [rows][K]. skewed: every row takes expert 0, rows 0..32 expert 1, row 0 expert 2, nobody expert 3,
// the other slots random among 4..E-1 (needs E >= K + 4, K >= 3); slots shuffled. Else random.
std::vector<int32_t> make_ids(int64_t rows, int64_t kk, int64_t ne, bool skewed, std::mt19937& rng) {
  std::vector<int32_t> ids, all;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int32_t> row;
    if (skewed) {
      row.push_back(0);
      if (r < 33) row.push_back(1);
      if (r == 0) row.push_back(2);
      all.resize(static_cast<size_t>(ne - 4));
      std::iota(all.begin(), all.end(), 4);
    } else {
      all.resize(static_cast<size_t>(ne));
      std::iota(all.begin(), all.end(), 0);
    }
    std::shuffle(all.begin(), all.end(), rng);
    for (size_t i = 0; static_cast<int64_t>(row.size()) < kk; ++i) row.push_back(all[i]);
    std::shuffle(row.begin(), row.end(), rng);
    ids.insert(ids.end(), row.begin(), row.end());
  }
  return ids;
}

// f64 product of f16-rounded weights of row o of matrix m with x (already f16 values).
double dot16(const MatrixRef& m, int64_t o, const float* x, std::vector<float>& row) {
  m.row(o, row.data());
  double s = 0;
  for (int64_t i = 0; i < m.n_cols; ++i) s += double(f16_rounded(row[i])) * x[i];
  return s;
}

struct ProductErrors {
  bool gather_ok = true;
  double gate_up = 0, down = 0;
  int64_t tiles = 0, max_rows = 0, min_rows = 1 << 30;
};

ProductErrors check_products(const Stack& st, int64_t rows, bool skewed, int bn, std::mt19937& rng,
                             const cuda::Stream& s) {
  const Shape& sh = st.sh;
  const int64_t kk = sh.top_k, ne = sh.n_expert, n = sh.n_embd, ff = sh.n_ff, pairs = rows * kk;
  const std::vector<int32_t> ids = make_ids(rows, kk, ne, skewed, rng);
  const std::vector<float> x = random_values(rows * n, rng);
  DeviceBuffer d_ids = upload(ids), d_x = upload(x), group(static_cast<size_t>(moe_group_bytes(rows, kk, ne)));
  DeviceBuffer x16(static_cast<size_t>(pairs * n * 2 + 16)), h16(static_cast<size_t>(pairs * ff * 2 + 16)),
      y(static_cast<size_t>(pairs * n * 4 + 16));
  moe_group(d_ids.ptr(), rows, kk, ne, bn, group.ptr(), s.handle());
  moe_gather_f16(d_x.ptr(), rows, n, kk, ne, group.ptr(), x16.ptr(), s.handle());
  moe_wgmma_gate_up(st.gate_w(), st.up_w(), x16.ptr(), rows, kk, bn, group.ptr(), h16.ptr(), s.handle());
  moe_wgmma_down(st.down_w(), h16.ptr(), rows, kk, bn, group.ptr(), y.ptr(), s.handle());
  s.synchronize();
  const MoeGrouping g = moe_group_reference(ids, rows, kk, ne, bn);
  ProductErrors e;
  e.tiles = static_cast<int64_t>(g.tiles.size() / 4);
  for (size_t i = 0; i < g.tiles.size(); i += 4) {
    e.max_rows = std::max<int64_t>(e.max_rows, g.tiles[i + 2]);
    e.min_rows = std::min<int64_t>(e.min_rows, g.tiles[i + 2]);
  }
  const auto xs = download<uint16_t>(x16, static_cast<size_t>(pairs * n));
  const auto hs = download<uint16_t>(h16, static_cast<size_t>(pairs * ff));
  const auto ys = download<float>(y, static_cast<size_t>(pairs * n));
  for (int64_t p = 0; p < pairs; ++p)
    for (int64_t c = 0; c < n; ++c)
      e.gather_ok = e.gather_ok && xs[p * n + c] == f32_to_f16(x[(g.pair_of[p] / kk) * n + c]);
  // Checked positions: every pair of a small chunk, else 48 spread over it plus every tile's first and
  // last row (ragged tile edges).
  std::vector<int64_t> ps;
  if (pairs <= 96) {
    for (int64_t p = 0; p < pairs; ++p) ps.push_back(p);
  } else {
    for (int64_t p = 0; p < pairs; p += pairs / 48) ps.push_back(p);
    for (size_t i = 0; i < g.tiles.size() && ps.size() < 80; i += 4) {
      ps.push_back(g.tiles[i + 1]);
      ps.push_back(g.tiles[i + 1] + g.tiles[i + 2] - 1);
    }
  }
  const MatrixRef gate = st.ref(st.gate, ff, n), up = st.ref(st.up, ff, n), down = st.ref(st.down, n, ff);
  std::vector<float> row(static_cast<size_t>(std::max(n, ff))), xf(static_cast<size_t>(n)), hf(static_cast<size_t>(ff));
  double gu_err = 0, gu_scale = 0, d_err = 0, d_scale = 0;
  for (int64_t p : ps) {
    const int32_t pair = g.pair_of[p], ex = ids[pair];
    for (int64_t c = 0; c < n; ++c) xf[c] = f16_rounded(x[(pair / kk) * n + c]);
    for (int64_t c = 0; c < ff; ++c) hf[c] = f16_to_f32(hs[p * ff + c]);
    const MatrixRef ge = gate.expert(ex), ue = up.expert(ex), de = down.expert(ex);
    for (int64_t o = 0; o < ff; ++o) {
      const double gv = dot16(ge, o, xf.data(), row), uv = dot16(ue, o, xf.data(), row);
      const double ref = gv / (1 + std::exp(-gv)) * uv;
      gu_err = std::max(gu_err, std::abs(ref - hf[o]) - std::ldexp(std::abs(ref), -11));
      gu_scale = std::max(gu_scale, std::abs(ref));
    }
    for (int64_t o = 0; o < n; ++o) {
      const double ref = dot16(de, o, hf.data(), row);
      d_err = std::max(d_err, std::abs(ref - ys[p * n + o]));
      d_scale = std::max(d_scale, std::abs(ref));
    }
  }
  e.gate_up = std::max(0.0, gu_err) / gu_scale;
  e.down = d_err / d_scale;
  return e;
}

TEST(MoeWgmmaGpu, GroupedProductsMatchF64) {
  LATHE_NEED_WGMMA();
  cuda::Stream s;
  std::mt19937 rng(91);
  std::printf("moe wgmma grouped products vs f64 of f16 operands (bound %.0e)\n", kBoundProduct);
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{GgmlType::Q8_0, 512, 256, 16, 4}, {1, 37, 300}},
      {{GgmlType::Q4_K, 512, 256, 12, 3}, {50, 200}},
      {{GgmlType::Q6_K, 2048, 2048, 6, 3}, {8}},
      {{GgmlType::Q8_0, 2048, 768, 128, 8}, {512}},
  };
  for (const auto& [sh, row_counts] : cases) {
    const Stack st = make_stack(sh, rng);
    for (int64_t rows : row_counts)
      for (bool skewed : {true, false})
        for (int bn : {64, 128}) {
          if (skewed && (sh.n_expert < sh.top_k + 4 || sh.top_k < 3)) continue;
          const ProductErrors e = check_products(st, rows, skewed, bn, rng, s);
          const std::string what = std::string(ggml_type_name(sh.type)) + " " + std::to_string(sh.n_embd) + "/" +
                                   std::to_string(sh.n_ff) + " " + std::to_string(sh.top_k) + " of " +
                                   std::to_string(sh.n_expert) + " R " + std::to_string(rows) +
                                   (skewed ? " skewed" : " random") + " bn " + std::to_string(bn);
          EXPECT_TRUE(e.gather_ok) << what;
          EXPECT_LE(e.gate_up, kBoundProduct) << what;
          EXPECT_LE(e.down, kBoundProduct) << what;
          std::printf("  %-46s tiles %4lld rows %lld..%lld gather %s gate/up %.1e down %.1e\n", what.c_str(),
                      static_cast<long long>(e.tiles), static_cast<long long>(e.min_rows),
                      static_cast<long long>(e.max_rows), e.gather_ok ? "ok" : "DIFFERS", e.gate_up, e.down);
        }
  }
}

// ---- the whole mixture: wgmma engine vs int8x2 engine vs the interpreter
struct Layer {
  Stack st;
  std::vector<uint8_t> router;
  DeviceBuffer d_router;
  WeightMatrix router_w() const { return {GgmlType::F32, d_router.ptr(), st.sh.n_expert, st.sh.n_embd, 1}; }
};

Layer make_layer(const Shape& sh, std::mt19937& rng) {
  Layer l{make_stack(sh, rng), random_matrix(GgmlType::F32, sh.n_expert, sh.n_embd, rng), {}};
  l.d_router = upload(l.router);
  return l;
}

using Chunk = MoeChunk;

Chunk make_chunk(const Shape& sh, int64_t rows, const std::vector<float>& x) {
  return make_moe_chunk(rows, sh.n_embd, sh.n_ff, sh.n_expert, sh.top_k, Activations::int8x2, x);
}

std::vector<float> run_mixture(const Layer& l, MoePrefillEngine engine, int64_t rows, const Chunk& c,
                               const cuda::Stream& s) {
  set_moe_prefill_engine(engine);
  moe_prefill(l.router_w(), l.st.gate_w(), l.st.up_w(), l.st.down_w(), Activations::int8x2, c.x.ptr(), rows,
              l.st.sh.top_k, true, c.out.ptr(), c.scratch(), s.handle());
  s.synchronize();
  set_moe_prefill_engine(MoePrefillEngine::automatic);
  return download<float>(c.out, static_cast<size_t>(rows * l.st.sh.n_embd));
}

TEST(MoeWgmmaGpu, MixtureMatchesInt8AndInterpreter) {
  LATHE_NEED_WGMMA();
  cuda::Stream s;
  std::mt19937 rng(92);
  std::printf("moe prefill wgmma engine: vs int8x2 engine and vs the interpreter (bound %.0e)\n", kBoundMixture);
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{GgmlType::Q8_0, 2048, 768, 128, 8}, {16, 512}},
      {{GgmlType::Q4_K, 512, 256, 16, 4}, {9, 77}},
  };
  for (const auto& [sh, row_counts] : cases) {
    const Layer l = make_layer(sh, rng);
    EXPECT_EQ(moe_prefill_engine(l.st.gate_w(), l.st.up_w(), l.st.down_w()), MoePrefillEngine::wgmma);
    for (int64_t rows : row_counts) {
      const int64_t n = sh.n_embd, ne = sh.n_expert, kk = sh.top_k;
      const std::vector<float> x = random_values(rows * n, rng);
      const Chunk c = make_chunk(sh, rows, x);
      const std::vector<float> out8 = run_mixture(l, MoePrefillEngine::int8, rows, c, s);
      const std::vector<float> outw = run_mixture(l, MoePrefillEngine::wgmma, rows, c, s);
      const std::vector<float> again = run_mixture(l, MoePrefillEngine::wgmma, rows, c, s);
      double d8 = 0, s8 = 0;
      for (size_t i = 0; i < out8.size(); ++i) {
        d8 = std::max(d8, std::abs(double(out8[i]) - outw[i]));
        s8 = std::max(s8, std::abs(double(out8[i])));
      }
      // the interpreter on sampled rows whose f32 routing agrees with the GPU's ids
      const auto ids = download<int32_t>(c.ids, static_cast<size_t>(rows * kk));
      std::vector<int64_t> sample;
      for (int64_t r = 0; r < rows; r += std::max<int64_t>(1, rows / 16)) sample.push_back(r);
      std::vector<float> xs;
      for (int64_t r : sample) xs.insert(xs.end(), x.begin() + r * n, x.begin() + (r + 1) * n);
      const int64_t ns = static_cast<int64_t>(sample.size());
      const Tensor xt({ns, n}, xs);
      const MatrixRef router{GgmlType::F32, l.router.data(), n, ne, 1};
      const MatrixRef gate = l.st.ref(l.st.gate, sh.n_ff, n), up = l.st.ref(l.st.up, sh.n_ff, n),
                      down = l.st.ref(l.st.down, n, sh.n_ff);
      const MixtureOptions opt{kk, true};
      const Tensor mix = lathe::mixture(xt, router, gate, up, down, opt);
      const Tensor cl = lathe::product(xt, router);
      double m_err = 0, m_scale = 0;
      int64_t differ = 0;
      for (int64_t i = 0; i < ns; ++i) {
        const int64_t r = sample[static_cast<size_t>(i)];
        std::vector<int32_t> ci;
        std::vector<float> cw;
        lathe::route_top_k({cl.row(i), static_cast<size_t>(ne)}, opt, ci, cw);
        if (!std::equal(ci.begin(), ci.end(), ids.begin() + r * kk)) {
          ++differ;
          continue;
        }
        for (int64_t o = 0; o < n; ++o) {
          m_err = std::max(m_err, std::abs(double(mix.row(i)[o]) - outw[r * n + o]));
          m_scale = std::max(m_scale, std::abs(double(mix.row(i)[o])));
        }
      }
      const std::string what = std::string(ggml_type_name(sh.type)) + " " + std::to_string(n) + "/" +
                               std::to_string(sh.n_ff) + " " + std::to_string(kk) + " of " + std::to_string(ne) +
                               " R " + std::to_string(rows);
      EXPECT_LE(d8 / s8, kBoundMixture) << what;
      EXPECT_LE(m_scale > 0 ? m_err / m_scale : 0, kBoundMixture) << what;
      EXPECT_LE(differ, ns / 4) << what << ": routing differs from the CPU's on many rows";
      EXPECT_TRUE(again == outw) << what << ": not deterministic";
      std::printf("  %-30s vs int8x2 %.1e vs interpreter %.1e (routing differs on %lld of %lld) repeat %s\n",
                  what.c_str(), d8 / s8, m_scale > 0 ? m_err / m_scale : 0.0, static_cast<long long>(differ),
                  static_cast<long long>(ns), again == outw ? "ok" : "DIFFERS");
    }
  }
}

// One Qwen3-30B-A3B layer (2048, ff 768, 8 of 128, q8_0, f32 router), 512 rows routed at random: us per
// layer of each stage of the wgmma engine and of the whole chunk under both engines.
TEST(MoeWgmmaGpu, Timing) {
  LATHE_NEED_WGMMA();
  cuda::Stream s;
  std::mt19937 rng(93);
  const Shape sh{GgmlType::Q8_0, 2048, 768, 128, 8};
  const int64_t rows = 512, pairs = rows * sh.top_k;
  const Layer l = make_layer(sh, rng);
  const double ops = 2.0 * static_cast<double>(pairs) * 3 * sh.n_ff * sh.n_embd;
  const Chunk c = make_chunk(sh, rows, random_values(rows * sh.n_embd, rng));
  const MoePrefillScratch sc = c.scratch();
  const Activations a = Activations::int8x2;
  auto time_us = [&](const std::function<void(CUstream)>& fn) {
    return graph_median_us(s, 4, [&](int) { fn(s.handle()); });
  };
  std::printf("mixture prefill, qwen3-30b-a3b layer, 512 rows, q8_0: us (TOPS of the expert products)\n");
  for (MoePrefillEngine eng : {MoePrefillEngine::int8, MoePrefillEngine::wgmma}) {
    set_moe_prefill_engine(eng);
    const double us = time_us([&](CUstream st) {
      moe_prefill(l.router_w(), l.st.gate_w(), l.st.up_w(), l.st.down_w(), a, c.x.ptr(), rows, sh.top_k, true,
                  c.out.ptr(), sc, st);
    });
    std::printf("  whole %s: %.1f us (%.0f TOPS)\n", eng == MoePrefillEngine::int8 ? "int8x2" : "wgmma ", us,
                ops / (us * 1e6));
  }
  set_moe_prefill_engine(MoePrefillEngine::automatic);
  const double router = time_us([&](CUstream st) { moe_router_logits(l.router_w(), c.x.ptr(), rows, sc.logits, st); });
  const double topk = time_us([&](CUstream st) {
    route_top_k(sc.ids, sc.weights, sc.logits, rows, sh.n_expert, sh.top_k, true, st);
  });
  for (int bn : {64, 128}) {
    const double group = time_us([&](CUstream st) { moe_group(sc.ids, rows, sh.top_k, sh.n_expert, bn, sc.group, st); });
    const double gather = time_us([&](CUstream st) {
      moe_gather_f16(c.x.ptr(), rows, sh.n_embd, sh.top_k, sh.n_expert, sc.group, sc.y, st);
    });
    const double gu = time_us([&](CUstream st) {
      moe_wgmma_gate_up(l.st.gate_w(), l.st.up_w(), sc.y, rows, sh.top_k, bn, sc.group, sc.h, st);
    });
    const double dn = time_us([&](CUstream st) {
      moe_wgmma_down(l.st.down_w(), sc.h, rows, sh.top_k, bn, sc.group, sc.y, st);
    });
    const double comb = time_us([&](CUstream st) {
      moe_combine(sc.y, rows, sh.top_k, sh.n_expert, sh.n_embd, sc.group, sc.weights, c.out.ptr(), st);
    });
    std::printf("  wgmma bn %3d: router %.1f top-k %.1f group %.1f gather %.1f gate/up %.1f (%.0f TOPS) down %.1f "
                "(%.0f TOPS) combine %.1f; sum %.1f us\n",
                bn, router, topk, group, gather, gu, ops * 2 / 3 / (gu * 1e6), dn, ops / 3 / (dn * 1e6), comb,
                router + topk + group + gather + gu + dn + comb);
  }
}

}  // namespace
}  // namespace lathe::kernels
