// A decode product with the sum and the norm's weighting in its epilogue, and the merged products that
// then copy their x (kernels/norm_epilogue_launch.h, fusion rule norm_epilogue), against the form they
// replace: the decode GEMV, then the merged products with the add and the norm in their prologue
// (gemv_multi_launch.h's NormPrologue). Over formats, contracts, widths and the two kinds of merged
// products (q/k/v; gate/up with the SwiGLU), each case launched twice (the same bytes both times):
//   - the sum s: the same bits where the plain product takes one row an item (the fused one always
//     does); else within kBoundPairedSum of max |s| (its rows' sums split over warps another way);
//   - h = s * w's int8 form: the quantizer's bytes for h formed on the host from the fused s;
//   - the parts: their sum within 1e-5 of sum s^2 (f64);
//   - the merged products' outputs: within kBoundOutputs of the held-back form's, relative to their
//     largest (x's levels quantized before the norm's factor, and the squares summed in another
//     order: a level moves where that rounding crosses a half step, as between the norm prologue and
//     add_rms_norm).
// Each case in both forms: the rows by 32-row blocks (LATHE_NORM_EPILOGUE=force) and dealt one by one
// (=dealt: each 32-row block quantized by its last writer, whose counts must be left zero). Then which
// shapes the launcher takes unforced, and the timing at qwen3-8b's shapes: o then gate/up, and down
// then q/k/v, each pair in a graph.
#include "kernels/decode_stream.h"
#include "kernels/gemv_launch.h"
#include "kernels/gemv_multi_launch.h"
#include "kernels/norm_epilogue_launch.h"
#include "runtime/cuda_driver.h"

#include "test_product_helpers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace lathe::kernels {
namespace {

using cuda::DeviceBuffer;
using namespace test;

constexpr double kBoundPairedSum = 1e-6;
constexpr double kBoundOutputs = 1e-4;

// The small widths below leave blocks idle when dealt by 32-row blocks; the launcher takes them only
// when forced.
const bool forced = [] { return setenv("LATHE_NORM_EPILOGUE", "force", 1) == 0; }();

struct Case {
  GgmlType producer, consumer;
  int64_t n_embd, k;  // the product before is n_embd x k
  bool swiglu;        // gate/up (n_ff = 3 n_embd) or q/k/v (n_embd, n_embd / 4, n_embd / 4)
};

struct Buffers {
  std::vector<DeviceBuffer> outs;
  std::vector<CUdeviceptr> ptrs;
};

Buffers outputs(const std::vector<WeightMatrix>& ws, bool swiglu) {
  Buffers b;
  for (size_t i = 0; i < (swiglu ? 1 : ws.size()); ++i) {
    b.outs.emplace_back(static_cast<size_t>(ws[i].n_out * 4));
    b.ptrs.push_back(b.outs.back().ptr());
  }
  return b;
}

void merged(const std::vector<WeightMatrix>& ws, bool swiglu, Activations a, const NormPrologue& np, const Buffers& b,
            CUstream s) {
  if (swiglu)
    gemv_gate_up_swiglu_norm(ws[0], ws[1], a, np, b.ptrs[0], s);
  else
    gemv_multi_norm(ws.data(), static_cast<int>(ws.size()), a, np, b.ptrs.data(), s);
}

// The fused pair: the product pw with the norm epilogue (residual, sum, weight, h's form, parts, the
// dealt form's counts), then the merged products copying h's form and multiplying by the norm's factor.
void fused_pair(const WeightMatrix& pw, const std::vector<WeightMatrix>& ws, bool swiglu, Activations a, CUdeviceptr xq,
                CUdeviceptr resid, CUdeviceptr sum, CUdeviceptr w, CUdeviceptr hq, CUdeviceptr parts, const Buffers& b,
                CUstream s, CUdeviceptr count = 0) {
  NormEpilogue e;
  e.count = count;
  e.resid = resid;
  e.sum = sum;
  e.norm_w = w;
  e.x_q = QuantizedOut{hq, a};
  e.parts = parts;
  gemv_norm_epilogue(pw, a, xq, e, s);
  NormPrologue made;
  made.sum = sum;
  made.xq = hq;
  made.parts = parts;
  made.n_parts = norm_epilogue_blocks(pw, a);
  merged(ws, swiglu, a, made, b, s);
}

// Sets the decode tiles (gemv_launch.h) for a scope.
struct TilesSetting {
  DecodeTiles before;
  explicit TilesSetting(bool on) : before(set_decode_tiles(on ? DecodeTiles::all : DecodeTiles::off)) {}
  ~TilesSetting() { set_decode_tiles(before); }
};

void matches_the_held_back_form(const char* form) {
  ASSERT_EQ(setenv("LATHE_NORM_EPILOGUE", form, 1), 0);
  const bool dealt = std::string(form) == "dealt";
  cuda::Stream s;
  std::mt19937 rng(71);
  const Case cases[] = {
      {GgmlType::Q8_0, GgmlType::Q8_0, 4096, 4096, true},    // qwen3-8b: o, then gate/up
      {GgmlType::Q8_0, GgmlType::Q8_0, 4096, 12288, false},  // down, then q/k/v
      {GgmlType::Q4_K, GgmlType::Q4_K, 4096, 4096, true},    // Q4_K_M's o and gate/up
      {GgmlType::Q6_K, GgmlType::Q4_K, 4096, 12288, false},  // Q4_K_M's down (some layers), q/k/v
      {GgmlType::Q8_0, GgmlType::Q8_0, 1024, 2048, true},    // qwen3-0.6b's o (8 of 132 SMs: forced)
      {GgmlType::Q8_0, GgmlType::Q6_K, 768, 256, false},     // 24 blocks of 32 rows, a block owning 1
      {GgmlType::Q4_K, GgmlType::Q8_0, 8192, 4096, true},    // blocks owning two 32-row blocks
      {GgmlType::Q4_K, GgmlType::Q4_K, 4096, 14336, false},  // llama3-8b Q4_K_M's down (56 units: rows, tiles or not)
      {GgmlType::Q5_K, GgmlType::Q5_K, 4096, 4096, true},    // Q5_K_M's o and gate/up
      {GgmlType::Q5_K, GgmlType::Q6_K, 4096, 12288, false},  // Q5_K_M's down, q/k/v
      {GgmlType::Q3_K, GgmlType::Q3_K, 4096, 4096, true},    // Q3_K_M's gate/up
      {GgmlType::Q2_K, GgmlType::Q2_K, 4096, 4096, true},    // a Q2_K o then gate/up
  };
  std::printf("norm epilogue (%s): merged outputs' normalized difference from the held-back form (bound %.0e)\n",
              dealt ? "rows dealt" : "by 32-row blocks", kBoundOutputs);
  for (const Case& c : cases) {
    const int64_t n = c.n_embd;
    if (!decode_format(c.producer) || !decode_format(c.consumer)) {  // Q2_K, Q3_K, Q5_K: not under LATHE_DECODE_K35=0
      std::printf("  %s then %s: not on the row walk here (LATHE_DECODE_K35=0)\n",
                  std::string(ggml_type_name(c.producer)).c_str(), std::string(ggml_type_name(c.consumer)).c_str());
      continue;
    }
    const std::vector<uint8_t> pb = random_matrix(c.producer, n, c.k, rng);
    const DeviceBuffer pd = upload(pb);
    const WeightMatrix pw{c.producer, pd.ptr(), n, c.k};
    std::vector<std::vector<uint8_t>> cb;
    std::vector<DeviceBuffer> cd;
    std::vector<WeightMatrix> ws;
    const std::vector<int64_t> outs = c.swiglu ? std::vector<int64_t>{3 * n, 3 * n} : std::vector<int64_t>{n, n / 4, n / 4};
    for (int64_t o : outs) {
      cb.push_back(random_matrix(c.consumer, o, n, rng));
      cd.push_back(upload(cb.back()));
      ws.push_back(WeightMatrix{c.consumer, cd.back().ptr(), o, n});
    }
    const std::vector<float> xp = random_values(c.k, rng), resid = random_values(n, rng), w = random_values(n, rng);
    const DeviceBuffer xpd = upload(xp), rd = upload(resid), wd = upload(w);
    // K-format producers also with the tiles (gemv_decode_tiles.cuh) on: held back and fused both
    // take them.
    const bool tile_format = c.producer == GgmlType::Q2_K || c.producer == GgmlType::Q3_K || c.producer == GgmlType::Q4_K ||
                             c.producer == GgmlType::Q5_K || c.producer == GgmlType::Q6_K;
    // (The dealt form walks rows: where the tiles take the product it is not taken.)
    for (int tiles = 0; tiles <= (tile_format && !dealt ? 1 : 0); ++tiles)
    for (Activations a : {Activations::int8, Activations::int8x2}) {
      const TilesSetting tiles_on(tiles == 1);
      ASSERT_TRUE(norm_epilogue_applies(pw, a)) << ggml_type_name(c.producer) << " " << n << " x " << c.k;
      ASSERT_TRUE(merged_norm_applies(ws.data(), static_cast<int>(ws.size()), a));
      DeviceBuffer xq(static_cast<size_t>(quantized_activation_bytes(1, c.k, a)));
      quantize_activations(xpd.ptr(), 1, c.k, a, xq.ptr(), s.handle());
      // Held back: the product, then the merged products with the add and norm in their prologue.
      DeviceBuffer y(static_cast<size_t>(n * 4)), sum2(static_cast<size_t>(n * 4));
      gemv(pw, a, xq.ptr(), 1, y.ptr(), s.handle());
      NormPrologue held;
      held.x = rd.ptr();
      held.y = y.ptr();
      held.w = wd.ptr();
      held.sum = sum2.ptr();
      const Buffers b2 = outputs(ws, c.swiglu);
      merged(ws, c.swiglu, a, held, b2, s.handle());
      // Fused, twice.
      const int64_t blocks = norm_epilogue_blocks(pw, a);
      std::vector<std::vector<float>> got[2];
      std::vector<float> sums[2];
      std::vector<uint8_t> forms[2];
      for (int rep = 0; rep < 2; ++rep) {
        DeviceBuffer sum1(static_cast<size_t>(n * 4)), hq(static_cast<size_t>(quantized_activation_bytes(1, n, a))),
            parts(static_cast<size_t>(blocks * 4));
        const int64_t count_bytes = norm_epilogue_count_bytes(pw, a);
        ASSERT_EQ(count_bytes, dealt ? 4 * (n / 32) : 0);
        DeviceBuffer count(static_cast<size_t>(std::max<int64_t>(count_bytes, 4)));
        count.zero();
        const Buffers b1 = outputs(ws, c.swiglu);
        fused_pair(pw, ws, c.swiglu, a, xq.ptr(), rd.ptr(), sum1.ptr(), wd.ptr(), hq.ptr(), parts.ptr(), b1, s.handle(),
                   dealt ? count.ptr() : 0);
        s.synchronize();
        if (dealt) {
          const std::vector<uint32_t> left = download<uint32_t>(count, static_cast<size_t>(n / 32));
          EXPECT_EQ(left, std::vector<uint32_t>(left.size(), 0u)) << "the counts, left zero for the next launch";
        }
        sums[rep] = download(sum1, static_cast<size_t>(n));
        forms[rep] = download<uint8_t>(hq, static_cast<size_t>(quantized_activation_bytes(1, n, a)));
        for (size_t i = 0; i < b1.outs.size(); ++i) got[rep].push_back(download(b1.outs[i], static_cast<size_t>(outs[i])));
        if (rep == 0) {
          // The parts: s's squares.
          const std::vector<float> pv = download(parts, static_cast<size_t>(blocks));
          double total = 0, want = 0;
          for (float v : pv) total += v;
          for (float v : sums[0]) want += double(v) * v;
          EXPECT_NEAR(total, want, 1e-5 * want) << "the parts";
        }
      }
      EXPECT_EQ(sums[0], sums[1]) << "the sum, launched again";
      EXPECT_EQ(forms[0], forms[1]) << "h's int8 form, launched again";
      EXPECT_EQ(got[0], got[1]) << "the merged outputs, launched again";
      // The sum against the held-back form's.
      const std::vector<float> s2 = download(sum2, static_cast<size_t>(n));
      DecodeGemvLaunch l;
      ASSERT_TRUE(decode_gemv_launch(pw, a, l));
      if (!l.pairs) {
        EXPECT_EQ(std::memcmp(sums[0].data(), s2.data(), s2.size() * 4), 0) << "the sum";
      } else {
        double worst = 0, scale = 0;
        for (int64_t i = 0; i < n; ++i) {
          worst = std::max(worst, std::abs(double(sums[0][i]) - s2[i]));
          scale = std::max(scale, std::abs(double(s2[i])));
        }
        EXPECT_LE(worst, kBoundPairedSum * scale) << "the sum (paired held-back product)";
      }
      // h's int8 form: the quantizer's bytes for s * w (f32 products, as the epilogue's).
      std::vector<float> h(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) h[i] = sums[0][i] * w[i];
      const DeviceBuffer hd = upload(h);
      DeviceBuffer ref(static_cast<size_t>(quantized_activation_bytes(1, n, a)));
      quantize_activations(hd.ptr(), 1, n, a, ref.ptr(), s.handle());
      s.synchronize();
      EXPECT_EQ(forms[0], download<uint8_t>(ref, forms[0].size())) << "h's int8 form is the quantizer's";
      // The merged products' outputs.
      double worst = 0;
      for (size_t i = 0; i < b2.outs.size(); ++i) {
        const std::vector<float> r2 = download(b2.outs[i], static_cast<size_t>(outs[i]));
        double diff = 0, scale = 0;
        for (size_t j = 0; j < r2.size(); ++j) {
          diff = std::max(diff, std::abs(double(got[0][i][j]) - r2[j]));
          scale = std::max(scale, std::abs(double(r2[j])));
        }
        worst = std::max(worst, diff / std::max(scale, 1e-30));
      }
      std::printf("  %-5s %5lld x %5lld -> %-5s %s %-6s (%lld parts)%s: %.2e\n",
                  std::string(ggml_type_name(c.producer)).c_str(), static_cast<long long>(n), static_cast<long long>(c.k),
                  std::string(ggml_type_name(c.consumer)).c_str(), c.swiglu ? "gate/up" : "q/k/v  ",
                  std::string(activations_name(a)).c_str(), static_cast<long long>(blocks), tiles ? " tiles" : "", worst);
      EXPECT_LE(worst, kBoundOutputs) << ggml_type_name(c.producer) << " " << n << " x " << c.k;
    }
  }
  ASSERT_EQ(setenv("LATHE_NORM_EPILOGUE", "force", 1), 0);  // as the other tests run
}

TEST(NormEpilogueGpu, MatchesTheProductThenTheNormPrologue) {
  LATHE_NEED_GPU();
  ASSERT_TRUE(forced);
  matches_the_held_back_form("force");
}

TEST(NormEpilogueGpu, DealtMatchesTheProductThenTheNormPrologue) {
  LATHE_NEED_GPU();
  matches_the_held_back_form("dealt");
}

// Which shapes the launcher takes without forcing: those whose rows dealt by 32-row blocks load no
// block more than dealing them one by one (the 8B's 4,096 rows: 128 blocks of 32, against 32 dealt);
// not qwen3-0.6b's 1,024 (32 blocks of 32 rows for the whole card), nor a width that is not whole
// 32-row blocks, nor the f32 contract. LATHE_NORM_EPILOGUE=dealt takes the 0.6B's rows dealt one by
// one (unless the tiles take the product), =0 no shape at all.
TEST(NormEpilogueGpu, TakesTheBalancedShapes) {
  LATHE_NEED_GPU();
  ASSERT_EQ(setenv("LATHE_NORM_EPILOGUE", "1", 1), 0);
  const CUdeviceptr any = 256;  // never read: only the shapes are asked about
  const Activations a = Activations::int8x2;
  EXPECT_TRUE(norm_epilogue_applies(WeightMatrix{GgmlType::Q8_0, any, 4096, 4096}, a));   // qwen3-8b's o
  EXPECT_TRUE(norm_epilogue_applies(WeightMatrix{GgmlType::Q8_0, any, 4096, 12288}, a));  // its down
  EXPECT_TRUE(norm_epilogue_applies(WeightMatrix{GgmlType::Q6_K, any, 4096, 14336}, a));  // llama3-8b's down
  EXPECT_EQ(norm_epilogue_count_bytes(WeightMatrix{GgmlType::Q8_0, any, 4096, 4096}, a), 0);  // by 32-row blocks
  EXPECT_FALSE(norm_epilogue_applies(WeightMatrix{GgmlType::Q8_0, any, 1024, 2048}, a));  // qwen3-0.6b's o
  EXPECT_FALSE(norm_epilogue_applies(WeightMatrix{GgmlType::Q8_0, any, 4080, 4096}, a));  // not whole 32-row blocks
  EXPECT_FALSE(norm_epilogue_applies(WeightMatrix{GgmlType::Q8_0, any, 4096, 4096}, Activations::f32));
  ASSERT_EQ(setenv("LATHE_NORM_EPILOGUE", "dealt", 1), 0);
  EXPECT_TRUE(norm_epilogue_applies(WeightMatrix{GgmlType::Q8_0, any, 1024, 2048}, a));  // qwen3-0.6b's o, dealt
  EXPECT_EQ(norm_epilogue_count_bytes(WeightMatrix{GgmlType::Q8_0, any, 1024, 2048}, a), 4 * 32);
  EXPECT_EQ(norm_epilogue_blocks(WeightMatrix{GgmlType::Q8_0, any, 1024, 2048}, a), 32);
  {
    const TilesSetting tiles_on(true);
    EXPECT_FALSE(norm_epilogue_applies(WeightMatrix{GgmlType::Q4_K, any, 1024, 4096}, a));  // the tiles take it
  }
  ASSERT_EQ(setenv("LATHE_NORM_EPILOGUE", "0", 1), 0);
  EXPECT_FALSE(norm_epilogue_applies(WeightMatrix{GgmlType::Q8_0, any, 4096, 4096}, a));
  ASSERT_EQ(setenv("LATHE_NORM_EPILOGUE", "force", 1), 0);  // as the other tests run
  EXPECT_TRUE(norm_epilogue_applies(WeightMatrix{GgmlType::Q8_0, any, 1024, 2048}, a));
}

// Microseconds of a product and the merged products after it at qwen3-8b's Q8_0 shapes, in a graph
// of programmatic launches (the weights cycled past L2 over copies): held back and fused.
TEST(NormEpilogueGpu, TimingAtQwen3_8bShapes) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(5);
  const Activations a = Activations::int8x2;
  struct Pair {
    const char* what;
    int64_t k;
    bool swiglu;
  };
  for (const Pair& pr : {Pair{"o 4096 x 4096, then gate/up 2 x 12288 x 4096", 4096, true},
                         Pair{"down 4096 x 12288, then q/k/v 4096/1024/1024 x 4096", 12288, false}}) {
    constexpr int copies = 4;  // ~ 4 x 160 MB: past the 60 MB L2
    const int64_t n = 4096;
    struct Set {
      DeviceBuffer p;
      std::vector<DeviceBuffer> c;
      WeightMatrix pw;
      std::vector<WeightMatrix> ws;
    };
    std::vector<Set> sets(copies);
    for (Set& st : sets) {
      st.p = upload(random_matrix(GgmlType::Q8_0, n, pr.k, rng));
      st.pw = WeightMatrix{GgmlType::Q8_0, st.p.ptr(), n, pr.k};
      const std::vector<int64_t> outs = pr.swiglu ? std::vector<int64_t>{12288, 12288} : std::vector<int64_t>{4096, 1024, 1024};
      for (int64_t o : outs) {
        st.c.push_back(upload(random_matrix(GgmlType::Q8_0, o, n, rng)));
        st.ws.push_back(WeightMatrix{GgmlType::Q8_0, st.c.back().ptr(), o, n});
      }
    }
    const DeviceBuffer xpd = upload(random_values(pr.k, rng)), rd = upload(random_values(n, rng)),
                       wd = upload(random_values(n, rng));
    DeviceBuffer xq(static_cast<size_t>(quantized_activation_bytes(1, pr.k, a)));
    quantize_activations(xpd.ptr(), 1, pr.k, a, xq.ptr(), s.handle());
    DeviceBuffer y(n * 4), sum(n * 4), hq(static_cast<size_t>(quantized_activation_bytes(1, n, a))), parts(static_cast<size_t>(4 * norm_epilogue_blocks(sets[0].pw, a)));
    const Buffers out = outputs(sets[0].ws, pr.swiglu);
    const double held = graph_median_us(s, copies, [&](int i) {
      gemv(sets[i].pw, a, xq.ptr(), 1, y.ptr(), s.handle());
      NormPrologue np;
      np.x = rd.ptr();
      np.y = y.ptr();
      np.w = wd.ptr();
      np.sum = sum.ptr();
      merged(sets[i].ws, pr.swiglu, a, np, out, s.handle());
    });
    const double fused = graph_median_us(s, copies, [&](int i) {
      fused_pair(sets[i].pw, sets[i].ws, pr.swiglu, a, xq.ptr(), rd.ptr(), sum.ptr(), wd.ptr(), hq.ptr(), parts.ptr(), out,
                 s.handle());
    });
    std::printf("  %-52s held back %7.2f us, norm epilogue %7.2f us\n", pr.what, held, fused);
  }
}

}  // namespace
}  // namespace lathe::kernels
