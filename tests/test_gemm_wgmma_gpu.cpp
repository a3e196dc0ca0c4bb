// The wgmma prefill product (kernels/gemm_wgmma_launch.h) on a compute capability 9.0 card, against
// the CPU f64 reference (x itself, f32, times dequantize_row(W), summed in f64) and against gemm_f16.
//   error = max|gpu - ref| / max|ref| over the checked outputs of the rows run.
// Bounds: to the f64 product, gemm_f16's (tests/test_gemm_f16_gpu.cpp: 1e-3 per shape and row
// count, 5e-4 where >= 16k outputs are compared: two f16 roundings per term, a random walk). To
// gemm_f16: the same f16 inputs and k in the same increasing 16-value steps into f32, only the
// tensor cores' order inside a step may differ, so bound-equal: max|wgmma - f16| <= 1e-5 max|y|
// (f32 rounding of a few partial sums); the fraction of bit-identical outputs is printed.
// Both tiles (128 and 256 rows) are forced on every shape and row count and must be bit-identical
// (the same k16 slices in the same order per output); unwritten outputs show as NaN (y filled with
// 0xFF bytes first), the row past the last must stay untouched.
// Hang guard: the kernel traps after 4 s in one mbarrier wait (LATHE_GWG_HANG_NS), and every
// synchronize here runs under a watchdog thread that ends the process after 60 s with a message,
// so a wrong barrier protocol fails the test instead of hanging the device run.
// Both kernels run where the rows allow the register-A one (gemm_wgmma_uses_rs), else the staged one.
// Then TimingPrintsTflops: 512 and 4096 rows on Qwen3-8B's shapes, beside gemm_f16.

#include "gguf/block_format.h"
#include "kernels/gemm_f16_launch.h"
#include "kernels/gemm_wgmma_launch.h"
#include "runtime/cuda_driver.h"

#include "test_gemm_f16_helpers.h"
#include "test_product_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace lathe::kernels {
namespace {

using cuda::DeviceBuffer;
using namespace test;

using namespace f16_test;
constexpr double kBoundToF16 = 1e-5;

// s.synchronize() under a watchdog: a launch that never finishes (a wrong mbarrier protocol with the
// in-kernel trap disabled or not reached) ends the process with a message naming it.
void synchronize_guarded(cuda::Stream& s, const std::string& what) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(60), [&] { return done; })) {
      std::fprintf(stderr, "HANG: %s did not finish in 60 s (mbarrier protocol?)\n", what.c_str());
      std::fflush(stderr);
      std::_Exit(3);
    }
  });
  auto stop = [&] {
    {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
    }
    cv.notify_one();
    watchdog.join();
  };
  try {
    s.synchronize();
  } catch (...) {  // a trap or fault: end the watchdog, then report it (a joinable thread would terminate)
    stop();
    throw;
  }
  stop();
}

TEST(GemmWgmmaGpu, EveryFormatShapeRowCountAndTileMatchesF64AndGemmF16) {
  LATHE_NEED_WGMMA();
  cuda::Stream s;
  FastRng rng{29};
  const int64_t row_counts[] = {1, 7, 100, 129, 512, 1000};
  const int64_t max_rows = 1000;
  std::printf("wgmma GEMM: error vs f64 (bound %.0e; %.0e from 16k outputs) / max|wgmma-f16|/max|y| (bound %.0e)"
              " / %% bit-identical to gemm_f16, per row count 1 7 100 129 512 1000; both tiles bit-identical\n",
              kBound, kBoundMany, kBoundToF16);
  for (GgmlType t : kFormats) {
    std::vector<std::pair<int64_t, int64_t>> shapes = {{64, 256},    {200, 1024},  {130, 4096}, {4096, 512},
                                                       {200, 4096}, {4096, 4096}, {131, 512},   // 131: odd n_out
                                                       {130, 12288}, {4096, 12288}};           // Qwen3-8B's down
    if (t == GgmlType::F16 || t == GgmlType::Q8_0) shapes.push_back({200, 800});  // k % 64 == 32
    if (t == GgmlType::F16 || t == GgmlType::Q8_0) shapes.push_back({72, 32});    // one half chunk
    for (auto [n_out, k] : shapes) {
      const std::vector<uint8_t> m = random_matrix(t, n_out, k, rng);
      const std::vector<int64_t> outs = checked_outputs(n_out, k, rng);
      const std::vector<float> x = random_values(max_rows * k, rng);
      const std::vector<double> ref = reference(m, t, k, outs, x, max_rows);
      DeviceBuffer wd = upload(m.data(), m.size()), xd = upload(x.data(), x.size() * 4);
      DeviceBuffer x16(static_cast<size_t>(max_rows * k * 2));
      convert_to_f16(xd.ptr(), max_rows * k, x16.ptr(), s.handle());
      const size_t y_bytes = static_cast<size_t>((max_rows + 1) * n_out * 4);
      DeviceBuffer yd(y_bytes), yf(y_bytes);
      const std::vector<uint8_t> nan_fill(y_bytes, 0xFF);
      const WeightMatrix w{t, wd.ptr(), n_out, k};
      // The register-A kernel where the rows allow a tensor map, and the staged kernel always (the
      // fallback for the other shapes).
      std::vector<GemmWgmmaEngine> engines = {GemmWgmmaEngine::staged};
      if (gemm_wgmma_uses_rs(t, k)) engines.insert(engines.begin(), GemmWgmmaEngine::automatic);
      for (GemmWgmmaEngine engine : engines) {
        const bool rs = engine == GemmWgmmaEngine::automatic;
        set_gemm_wgmma_engine_override(engine);
        std::printf("  %-4s n_out=%-5lld k=%-5lld %-6s", name_of(t).c_str(), (long long)n_out, (long long)k,
                    rs ? "reg-A" : "staged");
        for (int64_t rows : row_counts) {
          gemm_f16(w, x16.ptr(), rows, yf.ptr(), s.handle());
          synchronize_guarded(s, "gemm_f16");
          const std::vector<float> y16 = download(yf, static_cast<size_t>(rows * n_out));
          std::vector<float> y0;
          for (int bm : {128, 256}) {
            const std::string what = name_of(t) + " n_out=" + std::to_string(n_out) + " k=" + std::to_string(k) +
                                     " rows=" + std::to_string(rows) + " tile " + std::to_string(bm) + "x128" +
                                     (rs ? " register-A" : " staged");
            yd.upload(nan_fill.data(), y_bytes);
            settle(yd);
            set_gemm_wgmma_tile_override(bm);
            gemm_wgmma(w, x16.ptr(), rows, yd.ptr(), s.handle());
            set_gemm_wgmma_tile_override(0);
            synchronize_guarded(s, what);
            const std::vector<float> y = download(yd, static_cast<size_t>((rows + 1) * n_out));
            const GuardedOutput guard = guarded_output(y, rows, n_out);
            EXPECT_EQ(guard.unwritten, 0u) << what;
            EXPECT_EQ(guard.overwritten, 0u) << what;
            if (!y0.empty()) {
              size_t differ = 0;
              for (size_t i = 0; i < static_cast<size_t>(rows * n_out); ++i) differ += !(y[i] == y0[i]);
              EXPECT_EQ(differ, 0u) << what << " differs from tile 128x128";
              continue;
            }
            y0 = y;
            const double e = checked_error(y, n_out, ref, outs, rows);
            const size_t compared = static_cast<size_t>(rows) * outs.size();
            EXPECT_LE(e, compared >= 16384 ? kBoundMany : kBound) << what;
            double ef = 0, yscale = 0;
            size_t same = 0;
            for (size_t i = 0; i < static_cast<size_t>(rows * n_out); ++i) {
              const double d = std::abs(double(y[i]) - double(y16[i]));
              ef = std::isfinite(d) ? std::max(ef, d) : INFINITY;
              yscale = std::max(yscale, std::abs(double(y16[i])));
              same += y[i] == y16[i];
            }
            ef = yscale > 0 ? ef / yscale : ef;
            EXPECT_LE(ef, kBoundToF16) << what << " against gemm_f16";
            std::printf(" %.1e/%.0e/%.0f%%", e, ef, 100.0 * same / static_cast<double>(rows * n_out));
          }
        }
        std::printf(" [%zu]\n", static_cast<size_t>(max_rows) * outs.size());
        std::fflush(stdout);
      }
      set_gemm_wgmma_engine_override(GemmWgmmaEngine::automatic);
    }
  }
}

// TFLOP/s = 2 rows n_out k / time (CUDA events around one launch, median of 10 after a warm-up),
// the fraction of the H200's ~990 dense f16 TFLOP/s, each forced tile's TFLOP/s, the staged kernel
// (with LATHE_WGMMA_TIME_STAGED set) and gemm_f16 on the same shape beside it.
TEST(GemmWgmmaGpu, TimingPrintsTflops) {
  LATHE_NEED_WGMMA();
  cuda::Stream s;
  FastRng rng{5};
  const double ceiling = 990;
  struct Shape {
    const char* name;
    int64_t n_out, k;
  };
  const Shape shapes[] = {{"q/o", 4096, 4096},        {"k/v", 1024, 4096},   {"qkv", 6144, 4096},
                          {"gate/up", 12288, 4096},   {"gu-merged", 24576, 4096}, {"down", 4096, 12288}};
  auto median = [&](auto&& launch) {
    return median_ms(s, 10, launch, [&] { synchronize_guarded(s, "timing warm-up"); });
  };
  std::printf("wgmma GEMM: ms, TFLOP/s, %% of %.0f (tile rows, engine) | staged wgmma kernel: ms, TFLOP/s | gemm_f16:"
              " ms, TFLOP/s | speed-up over gemm_f16\n",
              ceiling);
  const int64_t max_rows = 4096;
  const std::vector<float> x = random_values(max_rows * 12288, rng);
  DeviceBuffer xd = upload(x.data(), x.size() * 4), x16(x.size() * 2);
  convert_to_f16(xd.ptr(), max_rows * 12288, x16.ptr(), s.handle());
  // LATHE_WGMMA_TIME_STAGED=1: the staged kernel's column too (else 0).
  const bool staged = std::getenv("LATHE_WGMMA_TIME_STAGED") != nullptr;
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::F16, GgmlType::Q6_K}) {
    for (const Shape& sh : shapes) {
      if ((t == GgmlType::F16 || t == GgmlType::Q6_K) && !(sh.n_out == 4096)) continue;
      const std::vector<uint8_t> m = random_matrix(t, sh.n_out, sh.k, rng);
      DeviceBuffer wd = upload(m.data(), m.size()), yd(static_cast<size_t>(max_rows * sh.n_out * 4));
      const WeightMatrix w{t, wd.ptr(), sh.n_out, sh.k};
      for (int64_t rows : {int64_t{512}, max_rows}) {
        const double ops = 2.0 * rows * sh.n_out * sh.k;
        const double ms = median([&] { gemm_wgmma(w, x16.ptr(), rows, yd.ptr(), s.handle()); });
        double tile_ms[2];
        for (int i = 0; i < 2; ++i) {
          set_gemm_wgmma_tile_override(128 << i);
          tile_ms[i] = median([&] { gemm_wgmma(w, x16.ptr(), rows, yd.ptr(), s.handle()); });
          set_gemm_wgmma_tile_override(0);
        }
        double mst = 0;
        if (staged) {
          set_gemm_wgmma_engine_override(GemmWgmmaEngine::staged);
          mst = median([&] { gemm_wgmma(w, x16.ptr(), rows, yd.ptr(), s.handle()); });
          set_gemm_wgmma_engine_override(GemmWgmmaEngine::automatic);
        }
        const double mf = median([&] { gemm_f16(w, x16.ptr(), rows, yd.ptr(), s.handle()); });
        std::printf("  %-4s %-9s %6lld x %-6lld rows %-5lld %7.3f ms %6.1f TFLOP/s %5.1f%% (%d %s; 128: %.1f, 256: %.1f)"
                    " | staged %7.3f ms %6.1f | f16 %7.3f ms %6.1f | %.2fx\n",
                    name_of(t).c_str(), sh.name, (long long)sh.n_out, (long long)sh.k, (long long)rows, ms,
                    ops / (ms * 1e9), 100 * ops / (ms * 1e9) / ceiling, gemm_wgmma_tile_rows(rows, sh.n_out),
                    gemm_wgmma_uses_rs(t, sh.k) ? "reg-A" : "staged", ops / (tile_ms[0] * 1e9),
                    ops / (tile_ms[1] * 1e9), mst, staged ? ops / (mst * 1e9) : 0.0, mf, ops / (mf * 1e9), mf / ms);
        std::fflush(stdout);
      }
    }
  }
}

}  // namespace
}  // namespace lathe::kernels
