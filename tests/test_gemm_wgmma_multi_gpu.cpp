// The wgmma product's two launch forms (kernels/gemm_wgmma_launch.h: gemm_wgmma_multi,
// gemm_wgmma_swiglu) on a compute capability 9.0 card, against the single-matrix path they promise
// to equal BIT FOR BIT (the same main loop per output):
//   multi:  y[m] == gemm_wgmma(w[m]) for every output of every matrix;
//   swiglu: h == elementwise_binary(swiglu, gemm_wgmma(gate), gemm_wgmma(up)), and h16 ==
//           convert_to_f16 of that (compared as f16 bits).
// Outputs start as NaN (0xFF bytes): an unwritten one differs; the row past the last must stay
// 0xFF. Both forced tiles (128, 256 rows) on every case. The fallback (q8_0 with k % 256 != 0: no
// tensor map of its rows) runs the same comparisons. The error test was never compared to f64 here:
// gemm_wgmma itself is (tests/test_gemm_wgmma_gpu.cpp).
// Then TimingPrintsTflops: qkv (4096 + 1024 + 1024 outputs) and gate/up + SwiGLU (2 x 12288) of
// Qwen3-8B at 512 and 4096 rows, the separate launches beside the one launch.

#include "kernels/elementwise_launch.h"
#include "kernels/gemm_f16_launch.h"
#include "kernels/gemm_wgmma_launch.h"
#include "kernels/tile_tuner.h"
#include "runtime/cuda_driver.h"

#include "test_gemm_f16_helpers.h"
#include "test_product_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace lathe::kernels {
namespace {

using cuda::DeviceBuffer;
using namespace test;
using namespace f16_test;

const int64_t kRowCounts[] = {1, 37, 512, 1000};
constexpr int64_t kMaxRows = 1000;

// A device output of n 4-byte values plus one row of `row` values past it, all 0xFF.
struct Out {
  DeviceBuffer b;
  size_t n, row;
  Out(size_t n_, size_t row_) : b((n_ + row_) * 4 + 16), n(n_), row(row_) {
    const std::vector<uint8_t> ff(b.bytes(), 0xFF);
    b.upload(ff.data(), ff.size());
    settle(b);
  }
};

// Counts the values of `got` (n of them, 4 or 2 bytes each) whose bits differ from `want`, and the
// guard values past them that are no longer 0xFF.
template <class T>
void compare_bits(const Out& got, const DeviceBuffer& want, size_t n, size_t guard, size_t& differ, size_t& touched) {
  const std::vector<T> g = download<T>(got.b, n + guard), w = download<T>(want, n);
  for (size_t i = 0; i < n; ++i) differ += std::memcmp(&g[i], &w[i], sizeof(T)) != 0;
  for (size_t i = n; i < n + guard; ++i) {
    T ff;
    std::memset(&ff, 0xFF, sizeof(T));
    touched += std::memcmp(&g[i], &ff, sizeof(T)) != 0;
  }
}

TEST(GemmWgmmaMultiGpu, MultiIsBitEqualToEachMatrixAlone) {
  LATHE_NEED_WGMMA();
  cuda::Stream s;
  FastRng rng{41};
  struct Case {
    GgmlType t;
    std::vector<int64_t> n_outs;
    int64_t k;
  };
  std::vector<Case> cases;
  for (GgmlType t : kFormats) {
    // q6_K rows are 16-byte multiples (a tensor map) from k = 2048 on.
    const int64_t k_small = t == GgmlType::Q6_K ? 2048 : 512;
    cases.push_back({t, {4096, 1024, 1024}, 4096});   // Qwen3-8B q, k, v: 6144 merged
    cases.push_back({t, {130, 200, 1000}, k_small});  // ragged tiles in every matrix
    cases.push_back({t, {200, 130}, 2 * k_small});
  }
  cases.push_back({GgmlType::Q8_0, {130, 200, 1000}, 800});  // fallback: no tensor map of 850-byte rows
  std::printf("gemm_wgmma_multi: outputs differing from gemm_wgmma per matrix alone (bits), rows 1 37 512 1000,"
              " tiles 128 | 256\n");
  for (const Case& c : cases) {
    const int nm = static_cast<int>(c.n_outs.size());
    const std::vector<float> x = random_values(kMaxRows * c.k, rng);
    DeviceBuffer xd = upload(x.data(), x.size() * 4), x16(x.size() * 2);
    convert_to_f16(xd.ptr(), kMaxRows * c.k, x16.ptr(), s.handle());
    std::vector<DeviceBuffer> wd;
    std::vector<WeightMatrix> w;
    for (int64_t n : c.n_outs) {
      const std::vector<uint8_t> m = random_matrix(c.t, n, c.k, rng);
      wd.push_back(upload(m.data(), m.size()));
      w.push_back({c.t, wd.back().ptr(), n, c.k});
    }
    std::string shape;
    for (int64_t n : c.n_outs) {
      if (!shape.empty()) shape += '+';
      shape += std::to_string(n);
    }
    std::printf("  %-4s %-15s k=%-5lld %-8s", name_of(c.t).c_str(), shape.c_str(), (long long)c.k,
                gemm_wgmma_uses_rs(c.t, c.k) ? "one" : "fallback");
    for (int64_t rows : kRowCounts) {
      std::vector<DeviceBuffer> ref;
      for (int m = 0; m < nm; ++m) {
        ref.emplace_back(static_cast<size_t>(rows * c.n_outs[m] * 4 + 16));
        gemm_wgmma(w[m], x16.ptr(), rows, ref.back().ptr(), s.handle());
      }
      s.synchronize();
      for (int bm : {128, 256}) {
        std::vector<Out> outs;
        std::vector<CUdeviceptr> ys;
        for (int m = 0; m < nm; ++m) {
          outs.emplace_back(static_cast<size_t>(rows * c.n_outs[m]), static_cast<size_t>(c.n_outs[m]));
          ys.push_back(outs.back().b.ptr());
        }
        set_gemm_wgmma_tile_override(bm);
        gemm_wgmma_multi(w.data(), nm, x16.ptr(), rows, ys.data(), s.handle());
        set_gemm_wgmma_tile_override(0);
        s.synchronize();
        size_t differ = 0, touched = 0;
        for (int m = 0; m < nm; ++m) compare_bits<float>(outs[m], ref[m], outs[m].n, outs[m].row, differ, touched);
        const std::string what = name_of(c.t) + " " + shape + " k=" + std::to_string(c.k) +
                                 " rows=" + std::to_string(rows) + " tile " + std::to_string(bm);
        EXPECT_EQ(differ, 0u) << what;
        EXPECT_EQ(touched, 0u) << what << ": wrote past the last row";
        std::printf(" %zu%s", differ, bm == 128 ? "|" : "");
      }
    }
    std::printf("\n");
    std::fflush(stdout);
  }
}

TEST(GemmWgmmaMultiGpu, SwigluIsBitEqualToGateUpThenElementwise) {
  LATHE_NEED_WGMMA();
  cuda::Stream s;
  FastRng rng{43};
  struct Case {
    GgmlType t;
    int64_t n_ff, k;
  };
  std::vector<Case> cases;
  for (GgmlType t : kFormats) {
    const int64_t k_small = t == GgmlType::Q6_K ? 2048 : 512;  // as above
    cases.push_back({t, 12288, 4096});  // Qwen3-8B gate/up
    cases.push_back({t, 130, k_small});
    cases.push_back({t, 200, 2 * k_small});
    cases.push_back({t, 1000, k_small});
  }
  cases.push_back({GgmlType::Q8_0, 200, 800});  // fallback
  std::printf("gemm_wgmma_swiglu: h (f32) | h16 outputs differing from gate, up, elementwise swiglu (| convert_to_f16),"
              " rows 1 37 512 1000, tiles 128 / 256 (each pointer alone: tile 128)\n");
  for (const Case& c : cases) {
    const std::vector<float> x = random_values(kMaxRows * c.k, rng);
    DeviceBuffer xd = upload(x.data(), x.size() * 4), x16(x.size() * 2);
    convert_to_f16(xd.ptr(), kMaxRows * c.k, x16.ptr(), s.handle());
    const std::vector<uint8_t> mg = random_matrix(c.t, c.n_ff, c.k, rng), mu = random_matrix(c.t, c.n_ff, c.k, rng);
    DeviceBuffer gd = upload(mg.data(), mg.size()), ud = upload(mu.data(), mu.size());
    const WeightMatrix gate{c.t, gd.ptr(), c.n_ff, c.k}, up{c.t, ud.ptr(), c.n_ff, c.k};
    std::printf("  %-4s n_ff=%-5lld k=%-5lld %-8s", name_of(c.t).c_str(), (long long)c.n_ff, (long long)c.k,
                gemm_wgmma_uses_rs(c.t, c.k) ? "one" : "fallback");
    for (int64_t rows : kRowCounts) {
      const size_t n = static_cast<size_t>(rows * c.n_ff), row = static_cast<size_t>(c.n_ff);
      DeviceBuffer g(n * 4 + 16), u(n * 4 + 16), ref(n * 4 + 16), ref16(n * 2 + 16);
      gemm_wgmma(gate, x16.ptr(), rows, g.ptr(), s.handle());
      gemm_wgmma(up, x16.ptr(), rows, u.ptr(), s.handle());
      elementwise_binary(ElemBinary::swiglu, ref.ptr(), g.ptr(), u.ptr(), rows * c.n_ff, rows * c.n_ff, s.handle());
      convert_to_f16(ref.ptr(), rows * c.n_ff, ref16.ptr(), s.handle());
      s.synchronize();
      for (int bm : {128, 256}) {
        // h and h16 together, then each alone (the other pointer 0).
        for (int form = 0; form < (bm == 128 ? 3 : 1); ++form) {
          Out h(n, row), h16((n + 1) / 2, (row + 1) / 2);  // f16: n values in n / 2 4-byte slots
          set_gemm_wgmma_tile_override(bm);
          gemm_wgmma_swiglu(gate, up, x16.ptr(), rows, form == 2 ? 0 : h.b.ptr(), s.handle(),
                            form == 1 ? 0 : h16.b.ptr());
          set_gemm_wgmma_tile_override(0);
          s.synchronize();
          const std::string what = name_of(c.t) + " n_ff=" + std::to_string(c.n_ff) + " k=" + std::to_string(c.k) +
                                   " rows=" + std::to_string(rows) + " tile " + std::to_string(bm) + " form " +
                                   std::to_string(form);
          size_t differ = 0, touched = 0, differ16 = 0, touched16 = 0;
          if (form != 2) compare_bits<float>(h, ref, n, row, differ, touched);
          if (form != 1) compare_bits<uint16_t>(h16, ref16, n, row, differ16, touched16);
          EXPECT_EQ(differ, 0u) << what;
          EXPECT_EQ(differ16, 0u) << what << " (h16)";
          EXPECT_EQ(touched + touched16, 0u) << what << ": wrote past the last row";
          if (form == 0) std::printf(" %zu|%zu%s", differ, differ16, bm == 128 ? "/" : "");
        }
      }
    }
    std::printf("\n");
    std::fflush(stdout);
  }
}

// ms (CUDA events around the launches, median of 10 after a warm-up) and TFLOP/s = 2 rows n k / time
// of the separate launches and of the one launch on Qwen3-8B's shapes.
// LATHE_TUNE=1: tune_gemm_wgmma times both tiles of a form and shape once and remembers the faster
// in the card's tile file; the launches after it take that tile, and the product is the same (both
// tiles give the same bits).
TEST(GemmWgmmaMultiGpu, TunedTileIsRememberedAndGivesTheSameProduct) {
  LATHE_NEED_WGMMA();
  ::setenv("LATHE_TUNE", "1", 1);
  cuda::Stream s;
  std::mt19937_64 rng(17);
  const int64_t rows = 300, k = 1024;
  const std::vector<float> x = random_values(rows * k, rng);
  DeviceBuffer xd = upload(x.data(), x.size() * 4), x16(x.size() * 2);
  convert_to_f16(xd.ptr(), rows * k, x16.ptr(), s.handle());
  const std::vector<uint8_t> mq = random_matrix(GgmlType::Q8_0, 1024, k, rng), mk = random_matrix(GgmlType::Q8_0, 256, k, rng);
  DeviceBuffer qd = upload(mq.data(), mq.size()), kd = upload(mk.data(), mk.size());
  const WeightMatrix w[2] = {{GgmlType::Q8_0, qd.ptr(), 1024, k}, {GgmlType::Q8_0, kd.ptr(), 256, k}};
  DeviceBuffer y_rule[2] = {DeviceBuffer(rows * 1024 * 4), DeviceBuffer(rows * 256 * 4)};
  DeviceBuffer y_tuned[2] = {DeviceBuffer(rows * 1024 * 4), DeviceBuffer(rows * 256 * 4)};
  const CUdeviceptr yr[2] = {y_rule[0].ptr(), y_rule[1].ptr()}, yt[2] = {y_tuned[0].ptr(), y_tuned[1].ptr()};
  const int rule = gemm_wgmma_tile_rows(rows, 1280);
  set_gemm_wgmma_tile_override(rule);
  gemm_wgmma_multi(w, 2, x16.ptr(), rows, yr, s.handle());
  set_gemm_wgmma_tile_override(0);
  int launches = 0;
  tune_gemm_wgmma(GemmWgmmaForm::multi, GgmlType::Q8_0, k, rows, 1280, [&](CUstream st) {
    ++launches;
    gemm_wgmma_multi(w, 2, x16.ptr(), rows, yt, st);
  });
  const int chosen = gemm_wgmma_chosen_tile(GemmWgmmaForm::multi, GgmlType::Q8_0, k, rows, 1280);
  gemm_wgmma_multi(w, 2, x16.ptr(), rows, yt, s.handle());
  s.synchronize();
  for (int m = 0; m < 2; ++m) {
    const size_t n = static_cast<size_t>(rows * w[m].n_out);
    std::vector<float> a(n), b(n);
    y_rule[m].download(a.data(), n * 4);
    y_tuned[m].download(b.data(), n * 4);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), n * 4), 0) << "matrix " << m;
  }
  std::printf("  tuned multi q8_0 1024+256 x %lld, %lld rows: rule %d, chosen %d, %d timed launches, file %s\n",
              (long long)k, (long long)rows, rule, chosen, launches, card_tuner().file().c_str());
  EXPECT_TRUE(chosen == 128 || chosen == 256);
  EXPECT_TRUE(launches == 0 || launches == 8);  // remembered from an earlier run, or 2 tiles x (1 + 3)
  EXPECT_TRUE(std::filesystem::exists(card_tuner().file()));
  ::unsetenv("LATHE_TUNE");
}

TEST(GemmWgmmaMultiGpu, TimingPrintsTflops) {
  LATHE_NEED_WGMMA();
  cuda::Stream s;
  FastRng rng{7};
  auto median = [&](auto&& launch) { return median_ms(s, 10, launch, [&] { s.synchronize(); }); };
  const int64_t k = 4096, max_rows = 4096, n_ff = 12288;
  const std::vector<float> x = random_values(max_rows * k, rng);
  DeviceBuffer xd = upload(x.data(), x.size() * 4), x16(x.size() * 2);
  convert_to_f16(xd.ptr(), max_rows * k, x16.ptr(), s.handle());
  DeviceBuffer y0(max_rows * 4096 * 4), y1(max_rows * 1024 * 4), y2(max_rows * 1024 * 4);
  DeviceBuffer g(max_rows * n_ff * 4), u(max_rows * n_ff * 4), h(max_rows * n_ff * 4), h16(max_rows * n_ff * 2);
  std::printf("wgmma launch forms: separate launches ms TFLOP/s | one launch ms TFLOP/s | speed-up\n");
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::F16, GgmlType::Q6_K}) {
    const std::vector<uint8_t> mq = random_matrix(t, 4096, k, rng), mk = random_matrix(t, 1024, k, rng),
                               mv = random_matrix(t, 1024, k, rng), mg = random_matrix(t, n_ff, k, rng),
                               mu = random_matrix(t, n_ff, k, rng);
    DeviceBuffer qd = upload(mq.data(), mq.size()), kd = upload(mk.data(), mk.size()),
                 vd = upload(mv.data(), mv.size()), gd = upload(mg.data(), mg.size()),
                 ud = upload(mu.data(), mu.size());
    const WeightMatrix qkv[3] = {{t, qd.ptr(), 4096, k}, {t, kd.ptr(), 1024, k}, {t, vd.ptr(), 1024, k}};
    const WeightMatrix gate{t, gd.ptr(), n_ff, k}, up{t, ud.ptr(), n_ff, k};
    const CUdeviceptr ys[3] = {y0.ptr(), y1.ptr(), y2.ptr()};
    for (int64_t rows : {int64_t{512}, max_rows}) {
      auto line = [&](const char* name, double ops, double sep, double one, double one16) {
        std::printf("  %-4s %-13s rows %-5lld %7.3f ms %6.1f | %7.3f ms %6.1f | %.2fx", name_of(t).c_str(), name,
                    (long long)rows, sep, ops / (sep * 1e9), one, ops / (one * 1e9), sep / one);
        if (one16 > 0) std::printf(" | h16 %7.3f ms %6.1f", one16, ops / (one16 * 1e9));
        std::printf("\n");
        std::fflush(stdout);
      };
      const double qkv_ops = 2.0 * rows * 6144 * k;
      const double sep = median([&] {
        for (int m = 0; m < 3; ++m) gemm_wgmma(qkv[m], x16.ptr(), rows, ys[m], s.handle());
      });
      const double one = median([&] { gemm_wgmma_multi(qkv, 3, x16.ptr(), rows, ys, s.handle()); });
      line("q+k+v", qkv_ops, sep, one, 0);
      const double gu_ops = 2.0 * rows * 2 * n_ff * k;
      const double sep2 = median([&] {
        gemm_wgmma(gate, x16.ptr(), rows, g.ptr(), s.handle());
        gemm_wgmma(up, x16.ptr(), rows, u.ptr(), s.handle());
        elementwise_binary(ElemBinary::swiglu, h.ptr(), g.ptr(), u.ptr(), rows * n_ff, rows * n_ff, s.handle());
      });
      const double one2 = median([&] { gemm_wgmma_swiglu(gate, up, x16.ptr(), rows, h.ptr(), s.handle()); });
      const double one16 = median([&] { gemm_wgmma_swiglu(gate, up, x16.ptr(), rows, 0, s.handle(), h16.ptr()); });
      line("gate+up+swiglu", gu_ops, sep2, one2, one16);
    }
  }
}

// The fused SwiGLU's tile by row count (q8_0, q4_K): ms of gate alone, of gate + up + swiglu, and
// of the fused launch with each forced tile, so the tile rule can be set from measurements.
TEST(GemmWgmmaMultiGpu, SwigluTileSweep) {
  LATHE_NEED_WGMMA();
  cuda::Stream s;
  FastRng rng{11};
  auto median = [&](auto&& launch) { return median_ms(s, 7, launch, [&] { s.synchronize(); }); };
  const int64_t k = 4096, max_rows = 4096, n_ff = 12288;
  const std::vector<float> x = random_values(max_rows * k, rng);
  DeviceBuffer xd = upload(x.data(), x.size() * 4), x16(x.size() * 2);
  convert_to_f16(xd.ptr(), max_rows * k, x16.ptr(), s.handle());
  DeviceBuffer g(max_rows * n_ff * 4), u(max_rows * n_ff * 4), h(max_rows * n_ff * 4);
  std::printf("fused SwiGLU tile sweep: ms of gate alone | gate+up+swiglu | swiglu kernel | fused tile 128 | 256\n");
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_K}) {
    const std::vector<uint8_t> mg = random_matrix(t, n_ff, k, rng), mu = random_matrix(t, n_ff, k, rng);
    DeviceBuffer gd = upload(mg.data(), mg.size()), ud = upload(mu.data(), mu.size());
    const WeightMatrix gate{t, gd.ptr(), n_ff, k}, up{t, ud.ptr(), n_ff, k};
    for (int64_t rows : {int64_t{256}, int64_t{512}, int64_t{1024}, int64_t{2048}, max_rows}) {
      const double one = median([&] { gemm_wgmma(gate, x16.ptr(), rows, g.ptr(), s.handle()); });
      const double sw = median([&] {
        elementwise_binary(ElemBinary::swiglu, h.ptr(), g.ptr(), u.ptr(), rows * n_ff, rows * n_ff, s.handle());
      });
      const double sep = median([&] {
        gemm_wgmma(gate, x16.ptr(), rows, g.ptr(), s.handle());
        gemm_wgmma(up, x16.ptr(), rows, u.ptr(), s.handle());
        elementwise_binary(ElemBinary::swiglu, h.ptr(), g.ptr(), u.ptr(), rows * n_ff, rows * n_ff, s.handle());
      });
      double fused[2];
      for (int i = 0; i < 2; ++i) {
        set_gemm_wgmma_tile_override(128 << i);
        fused[i] = median([&] { gemm_wgmma_swiglu(gate, up, x16.ptr(), rows, h.ptr(), s.handle()); });
        set_gemm_wgmma_tile_override(0);
      }
      // gate and up as one multi launch (128-row boxes, no SwiGLU epilogue): what the fused form's
      // half-tile boxes and exchange cost beyond merging the launches.
      const WeightMatrix gu[2] = {gate, up};
      const CUdeviceptr gy[2] = {g.ptr(), u.ptr()};
      const double multi = median([&] { gemm_wgmma_multi(gu, 2, x16.ptr(), rows, gy, s.handle()); });
      std::printf("  %-4s rows %-5lld %7.3f | %7.3f | %7.3f | %7.3f | %7.3f | multi(gate, up) %7.3f\n",
                  name_of(t).c_str(), (long long)rows, one, sep, sw, fused[0], fused[1], multi);
      std::fflush(stdout);
    }
  }
}

}  // namespace
}  // namespace lathe::kernels
