// The prefill product on f16 tensor cores (kernels/gemm_f16_launch.h) against a CPU f64 reference:
// the product of x itself (f32, before its f16 rounding) and dequantize_row(W), summed in f64.
//   error = max|gpu - ref| / max|ref| over the checked outputs of the rows run.
// Bound: every term carries two f16 roundings (x and w, each <= 2^-11 relative, rms ~2.1e-4 for
// log-uniform mantissas), independent across terms, so the error of an output is a random walk of
// the same length as the output itself: error / output ~ 2.9e-4 rms, and the max over many outputs
// of |error| stays near that fraction of max|y|. Bound kBound = 1e-3 per shape and row count (few
// outputs: maxima of a handful of samples scatter; f16 weights carry one rounding only) and
// kBoundMany = 5e-4 where at least 16k outputs are compared. A wrong index or scale gives O(1).
// Every tile is forced in turn on every shape and row count: y must be bit-identical across tiles
// (the same chunks and mma steps in the same order per output); unwritten outputs show as NaN (y is
// filled with 0xFF bytes first) and the row past the last must stay untouched.
// Then TimingPrintsTflops: rows 512 and 4096 on Qwen3-8B's shapes, beside the int8x2 GEMM.

#include "gguf/block_format.h"
#include "kernels/gemm_f16_launch.h"
#include "kernels/gemm_launch.h"
#include "runtime/cuda_driver.h"

#include "test_gemm_f16_helpers.h"
#include "test_product_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace lathe::kernels {
namespace {

using cuda::DeviceBuffer;
using namespace test;

using namespace f16_test;

TEST(GemmF16Gpu, EveryFormatShapeRowCountAndTileMatchesF64) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  FastRng rng{23};
  const int64_t row_counts[] = {1, 7, 100, 512, 1000};
  const int64_t max_rows = 1000;
  const std::vector<GemmF16Tile> tiles = gemm_f16_candidate_tiles();
  std::printf("f16 GEMM normalized error max|gpu-ref|/max|ref| vs the f64 product of x and dequantize_row(W)"
              " (bound %.0e; %.0e from 16k outputs), per row count 1 7 100 512 1000 [outputs compared at 1000 rows];"
              " every tile bit-identical\n", kBound, kBoundMany);
  for (GgmlType t : kFormats) {
    std::vector<std::pair<int64_t, int64_t>> shapes = {{64, 256},  {200, 1024}, {64, 4096},
                                                       {4096, 512}, {200, 4096}, {4096, 4096},
                                                       {130, 12288}, {4096, 12288}};  // Qwen3-8B's down
    if (t == GgmlType::F16 || t == GgmlType::Q8_0) shapes.push_back({200, 800});  // k % 64 == 32
    for (auto [n_out, k] : shapes) {
      const std::vector<uint8_t> m = random_matrix(t, n_out, k, rng);
      const std::vector<int64_t> outs = checked_outputs(n_out, k, rng);
      const std::vector<float> x = random_values(max_rows * k, rng);
      const std::vector<double> ref = reference(m, t, k, outs, x, max_rows);
      DeviceBuffer wd = upload(m.data(), m.size()), xd = upload(x.data(), x.size() * 4);
      DeviceBuffer x16(static_cast<size_t>(max_rows * k * 2));
      convert_to_f16(xd.ptr(), max_rows * k, x16.ptr(), s.handle());
      s.synchronize();
      {  // the conversion is round-to-nearest-even, as the host's
        const std::vector<uint16_t> h = download<uint16_t>(x16, static_cast<size_t>(max_rows * k));
        size_t bad = 0;
        for (size_t i = 0; i < h.size(); ++i) bad += h[i] != f32_to_f16(x[i]);
        EXPECT_EQ(bad, 0u) << "convert_to_f16";
      }
      const size_t y_bytes = static_cast<size_t>((max_rows + 1) * n_out * 4);
      DeviceBuffer yd(y_bytes);
      const std::vector<uint8_t> nan_fill(y_bytes, 0xFF);
      std::printf("  %-4s n_out=%-5lld k=%-5lld", name_of(t).c_str(), (long long)n_out, (long long)k);
      for (int64_t rows : row_counts) {
        std::vector<float> y0;
        for (const GemmF16Tile& tile : tiles) {
          yd.upload(nan_fill.data(), y_bytes);
          settle(yd);
          set_gemm_f16_tile_override(tile);
          gemm_f16(WeightMatrix{t, wd.ptr(), n_out, k}, x16.ptr(), rows, yd.ptr(), s.handle());
          s.synchronize();
          set_gemm_f16_tile_override({});
          const std::vector<float> y = download(yd, static_cast<size_t>((rows + 1) * n_out));
          const std::string what = name_of(t) + " n_out=" + std::to_string(n_out) + " k=" + std::to_string(k) +
                                   " rows=" + std::to_string(rows) + " tile " + std::to_string(tile.bm) + "x" +
                                   std::to_string(tile.bn);
          const GuardedOutput guard = guarded_output(y, rows, n_out);
          EXPECT_EQ(guard.unwritten, 0u) << what;
          EXPECT_EQ(guard.overwritten, 0u) << what;
          if (y0.empty()) {
            y0 = y;
            const double e = checked_error(y, n_out, ref, outs, rows);
            const size_t compared = static_cast<size_t>(rows) * outs.size();
            EXPECT_LE(e, compared >= 16384 ? kBoundMany : kBound) << what;
            std::printf(" %.2e", e);
          } else {
            size_t differ = 0;
            for (size_t i = 0; i < static_cast<size_t>(rows * n_out); ++i) differ += !(y[i] == y0[i]);
            EXPECT_EQ(differ, 0u) << what << " differs from tile " << tiles[0].bm << "x" << tiles[0].bn;
          }
        }
      }
      std::printf(" [%zu]\n", static_cast<size_t>(max_rows) * outs.size());
    }
  }
}

// TFLOP/s = 2 rows n_out k / time (CUDA events around one launch, median of 10 after a warm-up), the
// fraction of the H200's ~990 dense f16 TFLOP/s, and the int8x2 GEMM (gemm_quantized, its activation
// quantizer not counted) on the same shape beside it.
TEST(GemmF16Gpu, TimingPrintsTflops) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  FastRng rng{5};
  const double ceiling = 990;
  struct Shape {
    const char* name;
    int64_t n_out, k;
  };
  const Shape shapes[] = {{"q/o", 4096, 4096}, {"gate/up", 12288, 4096}, {"down", 4096, 12288},
                          {"output", 151936, 4096}};
  auto median = [&](auto&& launch) { return median_ms(s, 10, launch, [&] { s.synchronize(); }); };
  std::printf("f16 GEMM: ms, TFLOP/s, %% of %.0f (tile); int8x2 GEMM on the same shape: ms, TOPS; speed-up\n", ceiling);
  const int64_t max_rows = 4096;
  const std::vector<float> x = random_values(max_rows * 12288, rng);
  DeviceBuffer xd = upload(x.data(), x.size() * 4), x16(x.size() * 2);
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::F16, GgmlType::Q6_K}) {
    for (const Shape& sh : shapes) {
      if ((t == GgmlType::F16 || t == GgmlType::Q6_K) && sh.n_out != 4096) continue;
      const std::vector<uint8_t> m = random_matrix(t, sh.n_out, sh.k, rng);
      DeviceBuffer wd = upload(m.data(), m.size()), yd(static_cast<size_t>(max_rows * sh.n_out * 4));
      const WeightMatrix w{t, wd.ptr(), sh.n_out, sh.k};
      for (int64_t rows : {int64_t{512}, max_rows}) {
        const double ops = 2.0 * rows * sh.n_out * sh.k;
        convert_to_f16(xd.ptr(), rows * sh.k, x16.ptr(), s.handle());
        const double ms = median([&] { gemm_f16(w, x16.ptr(), rows, yd.ptr(), s.handle()); });
        const GemmF16Tile tile = gemm_f16_tile(rows, sh.n_out);
        std::printf("  %-4s %-7s %6lld x %-6lld rows %-5lld %8.3f ms %6.1f TFLOP/s %5.1f%% (%dx%d)", name_of(t).c_str(),
                    sh.name, (long long)sh.n_out, (long long)sh.k, (long long)rows, ms, ops / (ms * 1e9),
                    100 * ops / (ms * 1e9) / ceiling, tile.bm, tile.bn);
        if (gemm_supports(t)) {
          DeviceBuffer q(static_cast<size_t>(quantized_activation_bytes(rows, sh.k, Activations::int8x2)));
          quantize_activations(xd.ptr(), rows, sh.k, Activations::int8x2, q.ptr(), s.handle());
          const double mq =
              median([&] { gemm_quantized(w, Activations::int8x2, q.ptr(), rows, yd.ptr(), s.handle()); });
          std::printf(" | int8x2 %8.3f ms %6.1f TOPS | %.2fx", mq, ops / (mq * 1e9), mq / ms);
        }
        std::printf("\n");
        if (t == GgmlType::Q8_0 && sh.n_out == 4096 && sh.k == 4096) {
          for (const GemmF16Tile& ft : gemm_f16_candidate_tiles()) {
            set_gemm_f16_tile_override(ft);
            const double mt = median([&] { gemm_f16(w, x16.ptr(), rows, yd.ptr(), s.handle()); });
            set_gemm_f16_tile_override({});
            std::printf("      tile %dx%d: %.3f ms %.1f TFLOP/s\n", ft.bm, ft.bn, mt, ops / (mt * 1e9));
          }
          const double mc = median([&] { convert_to_f16(xd.ptr(), rows * sh.k, x16.ptr(), s.handle()); });
          std::printf("      convert_to_f16 %lld x %lld: %.3f ms\n", (long long)rows, (long long)sh.k, mc);
        }
      }
    }
  }
}

// Host only: the shapes and formats the launcher refuses, and every tile's shared memory fits a
// Hopper block (227 KB).
TEST(GemmF16Gpu, RefusesWhatItCannotReadAndTilesFit) {
  for (GgmlType t : kFormats) {
    EXPECT_TRUE(gemm_f16_supports(t)) << name_of(t);
    for (const GemmF16Tile& tile : gemm_f16_candidate_tiles())
      EXPECT_LE(gemm_f16_shared_bytes(t, tile), 232448u) << gemm_f16_kernel_name(t, tile);
  }
  EXPECT_EQ(gemm_f16_kernel_name(GgmlType::Q4_K, {128, 128}), "lathe_gemm_f16_q4_k_128x128");
  EXPECT_FALSE(gemm_f16_supports(GgmlType::Q5_0));
  EXPECT_FALSE(gemm_f16_supports(GgmlType::F32));
  EXPECT_THROW(gemm_f16(WeightMatrix{GgmlType::Q5_0, 0, 64, 256}, 0, 1, 0, nullptr), UserError);
  EXPECT_THROW(gemm_f16(WeightMatrix{GgmlType::Q4_K, 0, 64, 288}, 0, 1, 0, nullptr), UserError);
  EXPECT_THROW(gemm_f16(WeightMatrix{GgmlType::F16, 0, 64, 48}, 0, 1, 0, nullptr), UserError);
  EXPECT_THROW(gemm_f16(WeightMatrix{GgmlType::Q8_0, 0, 64, 256, 4}, 0, 1, 0, nullptr), UserError);
}

}  // namespace
}  // namespace lathe::kernels
