// The prefill product on int8 tensor cores (kernels/gemm_launch.h) against the CPU reference: the
// interpreter's product (interp/cpu_ops.h, f64 sums) of the dequantize_row'd weights and of x^, the
// values the quantizer's bytes stand for (rebuilt on the host from q1, q2 and ds), so the bound only
// has to cover f32 rounding of the per-block terms (the level sums themselves are exact int32):
//   error = max|gpu - cpu| / max|cpu| over the checked outputs, bound kBound.
// Large matrices check a sample of outputs (the first and last 64, tile edges, random ones) for
// every row. The warp-specialized tiles (GemmVariant::warp_specialized, forced one by one) are held to
// the same bound and must give y bit-identical to the rule's lockstep tile (the same order of terms).
// Then TimingPrintsTops: rows 512 on Qwen3-8B's shapes, beside the f32 matmul, every warp-specialized
// tile beside the rule's.

#include "emit/kernel_params.h"
#include "gguf/block_format.h"
#include "interp/cpu_ops.h"
#include "kernels/gemm_launch.h"
#include "kernels/library.h"
#include "kernels/tile_tuner.h"
#include "runtime/cuda_driver.h"

#include "test_product_helpers.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
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

constexpr double kBound = 1e-5;  // f32 rounding of ~k/32 scaled block terms; measured ~1e-7..1e-6
const GgmlType kFormats[] = {GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K};
const Activations kContracts[] = {Activations::int8, Activations::int8x2};

std::string name_of(GgmlType t) { return std::string(ggml_type_name(t)); }
std::string name_of(Activations a) { return std::string(activations_name(a)); }

// The warp-specialized tiles of a format and contract (forced in turn by the tests).
// Ends the process with a message when a launch and its synchronize take over `seconds`: a kernel
// whose barriers deadlock would otherwise hang the run until its time limit, printing nothing.
class HangGuard {
 public:
  HangGuard(std::string what, int seconds)
      : thread_([this, what, seconds] {
          std::unique_lock<std::mutex> lock(mu_);
          if (!cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) {
            std::printf("\nHANG: %s did not finish in %d s\n", what.c_str(), seconds);
            std::fflush(stdout);
            std::_Exit(3);
          }
        }) {}
  ~HangGuard() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;  // last: starts once the members it uses exist
};

// How many values of a and b differ bitwise-as-floats (a gtest EXPECT_EQ of two vectors would print
// millions of values on a failure).
size_t count_differing(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::max(a.size(), b.size());
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += !(a[i] == b[i]);
  return n;
}

std::string fmt_tile(GgmlType t, Activations a, GemmTile tile) {
  return tile.bm == 0 ? name_of(t) + " " + name_of(a) + " rule's tile" : gemm_kernel_name(t, a, tile);
}

std::vector<GemmTile> ws_tiles(GgmlType t, Activations a) {
  std::vector<GemmTile> out;
  for (const GemmTile& tile : gemm_candidate_tiles(t, a))
    if (tile.variant == GemmVariant::warp_specialized) out.push_back(tile);
  return out;
}

// x^ [rows][k] from the quantizer's bytes, as a tensor for cpu_ops.
Tensor rebuild_x(const std::vector<uint8_t>& q, int64_t rows, int64_t k, Activations a) {
  return Tensor({rows, k}, rebuilt_x(q, rows, k, a));
}

// The outputs checked: all of a small matrix; of a large one the first and last 64, both sides of
// every 1024th output and 96 random ones.
std::vector<int64_t> checked_outputs(int64_t n_out, int64_t k, std::mt19937_64& rng) {
  std::vector<int64_t> o;
  if (n_out * k <= (int64_t{1} << 22)) {
    for (int64_t i = 0; i < n_out; ++i) o.push_back(i);
    return o;
  }
  for (int64_t i = 0; i < 64; ++i) o.push_back(i), o.push_back(n_out - 1 - i);
  for (int64_t i = 1024; i < n_out; i += 1024) o.push_back(i - 1), o.push_back(i);
  for (int i = 0; i < 96; ++i) o.push_back(static_cast<int64_t>(rng() % n_out));
  std::sort(o.begin(), o.end());
  o.erase(std::unique(o.begin(), o.end()), o.end());
  return o;
}

TEST(GemmGpu, EveryFormatShapeAndContractMatchesCpu) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937_64 rng(17);
  const int64_t row_counts[] = {1, 7, 16, 100, 128, 333, 512};
  const int64_t max_rows = 512;
  std::vector<std::pair<int64_t, int64_t>> shapes = {{128, 256},   {1000, 512},  {4096, 4096},
                                                     {1024, 4096}, {12288, 4096}, {4096, 12288}};
  std::printf("int8 GEMM normalized error max|gpu-cpu|/max|cpu| vs the product of x^ (bound %.0e), worst over rows"
              " 1 7 16 100 128 333 512: the rule's tile, then each warp-specialized tile (ws BMxBN; '=' when"
              " bit-identical to the rule's y at every row count)\n", kBound);
  for (GgmlType t : kFormats) {
    auto fmt_shapes = shapes;
    if (t == GgmlType::Q8_0) fmt_shapes.push_back({77, 800});  // k % 256 != 0: rows at any even byte
    for (auto [n_out, k] : fmt_shapes) {
      const std::vector<uint8_t> m = random_matrix(t, n_out, k, rng);
      const std::vector<int64_t> outs = checked_outputs(n_out, k, rng);
      const int64_t rb = row_bytes(t, k);
      std::vector<uint8_t> picked(outs.size() * rb);  // the checked rows, still in their format
      for (size_t i = 0; i < outs.size(); ++i) std::memcpy(&picked[i * rb], &m[outs[i] * rb], rb);
      const MatrixRef ref_w{t, picked.data(), k, static_cast<int64_t>(outs.size())};
      const std::vector<float> x = random_values(max_rows * k, rng);
      DeviceBuffer wd = upload(m.data(), m.size()), xd = upload(x.data(), x.size() * 4);
      DeviceBuffer yd(max_rows * n_out * sizeof(float));
      std::printf("  %-5s n_out=%-6lld k=%-6lld (%zu outputs checked)", name_of(t).c_str(), (long long)n_out,
                  (long long)k, outs.size());
      for (Activations a : kContracts) {
        DeviceBuffer q(static_cast<size_t>(quantized_activation_bytes(max_rows, k, a)));
        quantize_activations(xd.ptr(), max_rows, k, a, q.ptr(), s.handle());
        s.synchronize();
        std::vector<uint8_t> qh(static_cast<size_t>(quantized_activation_bytes(max_rows, k, a)));
        q.download(qh.data(), qh.size());
        const Tensor ref = product(rebuild_x(qh, max_rows, k, a), ref_w);  // [512][outs]
        // Normalized error of y [rows][n_out] over the checked outputs.
        auto error_of = [&](const std::vector<float>& y, int64_t rows) {
          double e = 0, scale = 0;
          for (int64_t r = 0; r < rows; ++r)
            for (size_t i = 0; i < outs.size(); ++i) {
              const double c = ref.data[r * outs.size() + i], d = std::abs(double(y[r * n_out + outs[i]]) - c);
              e = std::isfinite(d) ? std::max(e, d) : INFINITY;
              scale = std::max(scale, std::abs(c));
            }
          return scale > 0 ? e / scale : e;
        };
        const std::vector<GemmTile> ws = ws_tiles(t, a);
        double worst = 0;
        std::vector<double> ws_worst(ws.size(), 0.0);
        std::vector<bool> ws_same(ws.size(), true);
        for (int64_t rows : row_counts) {
          DeviceBuffer qr(static_cast<size_t>(quantized_activation_bytes(rows, k, a)));
          quantize_activations(xd.ptr(), rows, k, a, qr.ptr(), s.handle());  // rows quantize alone
          auto run = [&](GemmTile tile) {
            set_gemm_tile_override(tile);
            yd.zero();  // an output the kernel fails to write reads 0, not the last tile's value
            {
              HangGuard guard(fmt_tile(t, a, tile) + " n_out=" + std::to_string(n_out) + " k=" + std::to_string(k) +
                                  " rows=" + std::to_string(rows), 30);
              gemm_quantized(WeightMatrix{t, wd.ptr(), n_out, k}, a, qr.ptr(), rows, yd.ptr(), s.handle());
              s.synchronize();
            }
            set_gemm_tile_override({});
            std::vector<float> y(static_cast<size_t>(rows * n_out));
            yd.download(y.data(), y.size() * 4);
            return y;
          };
          const std::vector<float> y_rule = run({});
          const double e = error_of(y_rule, rows);
          EXPECT_LE(e, kBound) << name_of(t) << " n_out=" << n_out << " k=" << k << " rows=" << rows << " "
                               << name_of(a);
          worst = std::max(worst, e);
          for (size_t i = 0; i < ws.size(); ++i) {
            const std::vector<float> y = run(ws[i]);
            const double ew = error_of(y, rows);
            EXPECT_LE(ew, kBound) << name_of(t) << " n_out=" << n_out << " k=" << k << " rows=" << rows << " "
                                  << name_of(a) << " ws " << ws[i].bm << "x" << ws[i].bn;
            const size_t differ = count_differing(y, y_rule);
            EXPECT_EQ(differ, 0u) << "ws " << ws[i].bm << "x" << ws[i].bn << " is not bit-identical to the rule's tile: "
                                 << name_of(t) << " n_out=" << n_out << " k=" << k << " rows=" << rows << " "
                                 << name_of(a);
            ws_worst[i] = std::max(ws_worst[i], ew);
            ws_same[i] = ws_same[i] && differ == 0;
          }
        }
        std::printf("  %s %.2e", name_of(a).c_str(), worst);
        for (size_t i = 0; i < ws.size(); ++i)
          std::printf(" ws%dx%d %.2e%s", ws[i].bm, ws[i].bn, ws_worst[i], ws_same[i] ? "=" : "!");
      }
      std::printf("\n");
    }
  }
}

// Speed at rows 512 on Qwen3-8B's shapes: TOPS = 2 rows n_out k / time (CUDA events around 5 launches,
// median of 5), the fraction of the H200's 1,979 dense int8 TOPS, and the f32 matmul (q8_0) beside it.
// Then every tile on two shapes, for the tile rule.
TEST(GemmGpu, TimingPrintsTops) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937_64 rng(3);
  const double ceiling = 1979;
  const int64_t rows = 512;
  struct Shape {
    const char* name;
    int64_t n_out, k;
  };
  const Shape shapes[] = {{"q/o", 4096, 4096}, {"k/v", 1024, 4096}, {"gate/up", 12288, 4096},
                          {"down", 4096, 12288}, {"output", 151936, 4096}};
  auto median_ms = [&](auto&& launch) {
    launch();
    std::vector<float> ms;
    for (int rep = 0; rep < 5; ++rep) {
      cuda::EventTimer timer;
      timer.start(s);
      for (int i = 0; i < 5; ++i) launch();
      ms.push_back(timer.stop(s) / 5);
    }
    std::sort(ms.begin(), ms.end());
    return static_cast<double>(ms[2]);
  };
  std::printf("int8 GEMM, rows %lld: ms, TOPS, %% of %.0f TOPS (tile rows x outputs); below each, the warp-specialized"
              " tiles\n", (long long)rows, ceiling);
  for (GgmlType t : kFormats) {
    for (const Shape& sh : shapes) {
      const std::vector<uint8_t> m = random_matrix(t, sh.n_out, sh.k, rng);
      const std::vector<float> x = random_values(rows * sh.k, rng);
      DeviceBuffer wd = upload(m.data(), m.size()), xd = upload(x.data(), x.size() * 4);
      DeviceBuffer yd(rows * sh.n_out * sizeof(float));
      const WeightMatrix w{t, wd.ptr(), sh.n_out, sh.k};
      const double ops = 2.0 * rows * sh.n_out * sh.k;
      for (Activations a : kContracts) {
        DeviceBuffer q(static_cast<size_t>(quantized_activation_bytes(rows, sh.k, a)));
        quantize_activations(xd.ptr(), rows, sh.k, a, q.ptr(), s.handle());
        const double ms = median_ms([&] { gemm_quantized(w, a, q.ptr(), rows, yd.ptr(), s.handle()); });
        const GemmTile tile = gemm_tile(a, rows, sh.n_out);
        std::printf("  %-5s %-7s %6lld x %-6lld %-6s %8.3f ms %6.1f TOPS %5.1f%% (%dx%d)\n", name_of(t).c_str(), sh.name,
                    (long long)sh.n_out, (long long)sh.k, name_of(a).c_str(), ms, ops / (ms * 1e9),
                    100 * ops / (ms * 1e9) / ceiling, tile.bm, tile.bn);
        for (const GemmTile& ws : ws_tiles(t, a)) {
          set_gemm_tile_override(ws);
          const double mw = median_ms([&] { gemm_quantized(w, a, q.ptr(), rows, yd.ptr(), s.handle()); });
          set_gemm_tile_override({});
          std::printf("      ws %dx%d: %8.3f ms %6.1f TOPS %5.1f%% (%.2fx the rule's)\n", ws.bm, ws.bn, mw,
                      ops / (mw * 1e9), 100 * ops / (mw * 1e9) / ceiling, ms / mw);
        }
        if (t == GgmlType::Q8_0 && (sh.n_out == 4096 || sh.n_out == 1024) && sh.k == 4096) {
          for (int bm : {64, 128})
            for (int bn : {64, 128}) {
              if (a == Activations::int8x2 && bm == 128) continue;
              set_gemm_tile_override({bm, bn});
              const double mt = median_ms([&] { gemm_quantized(w, a, q.ptr(), rows, yd.ptr(), s.handle()); });
              set_gemm_tile_override({0, 0});
              std::printf("      tile %dx%d: %.3f ms %.1f TOPS\n", bm, bn, mt, ops / (mt * 1e9));
            }
        }
      }
      if (t == GgmlType::Q8_0) {
        const double ms = median_ms([&] { matmul(w, xd.ptr(), rows, yd.ptr(), s.handle()); });
        std::printf("  %-5s %-7s %6lld x %-6lld f32 matmul %8.3f ms %6.1f TFLOP/s\n", name_of(t).c_str(), sh.name,
                    (long long)sh.n_out, (long long)sh.k, ms, ops / (ms * 1e9));
      }
      if (t == GgmlType::Q8_0 && sh.n_out == 4096 && sh.k == 4096) {
        DeviceBuffer q(static_cast<size_t>(quantized_activation_bytes(rows, sh.k, Activations::int8x2)));
        const double ms = median_ms(
            [&] { quantize_activations(xd.ptr(), rows, sh.k, Activations::int8x2, q.ptr(), s.handle()); });
        std::printf("  quantize int8x2 %lld x %lld: %.3f ms\n", (long long)rows, (long long)sh.k, ms);
      }
    }
  }
}

// Shapes the launcher refuses, with a message.
// The tuner: tune_gemm measures every tile for a shape once and remembers the fastest in the kernel
// cache directory's file for this card; the product with the tuned tile equals the rule's (the
// tile only changes which block computes an output, not its sum's order).
TEST(GemmGpu, TunedTileIsRememberedAndGivesTheSameProduct) {
  LATHE_NEED_GPU();
  ::setenv("LATHE_TUNE", "1", 1);
  cuda::Stream s;
  std::mt19937_64 rng(5);
  const int64_t rows = 333, n_out = 1000, k = 512;
  const std::vector<uint8_t> m = random_matrix(GgmlType::Q8_0, n_out, k, rng);
  const std::vector<float> x = random_values(rows * k, rng);
  DeviceBuffer wd = upload(m.data(), m.size()), xd = upload(x.data(), x.size() * 4);
  DeviceBuffer y_rule(rows * n_out * sizeof(float)), y_tuned(rows * n_out * sizeof(float));
  const WeightMatrix w{GgmlType::Q8_0, wd.ptr(), n_out, k};
  for (Activations a : kContracts) {
    DeviceBuffer q(static_cast<size_t>(quantized_activation_bytes(rows, k, a)));
    quantize_activations(xd.ptr(), rows, k, a, q.ptr(), s.handle());
    const GemmTile rule = gemm_tile(a, rows, n_out);
    set_gemm_tile_override(rule);
    gemm_quantized(w, a, q.ptr(), rows, y_rule.ptr(), s.handle());
    set_gemm_tile_override({});
    s.synchronize();
    tune_gemm(w, a, q.ptr(), rows, y_tuned.ptr());  // measures (or finds) the fastest
    gemm_quantized(w, a, q.ptr(), rows, y_tuned.ptr(), s.handle());
    s.synchronize();
    std::vector<float> yr(static_cast<size_t>(rows * n_out)), yt(yr.size());
    y_rule.download(yr.data(), yr.size() * 4);
    y_tuned.download(yt.data(), yt.size() * 4);
    EXPECT_EQ(count_differing(yr, yt), 0u) << name_of(a);
    const TileTuner& tuner = card_tuner();
    std::printf("  tuned %s: rule %dx%d, file %s\n", name_of(a).c_str(), rule.bm, rule.bn, tuner.file().c_str());
    EXPECT_TRUE(std::filesystem::exists(tuner.file()));
  }
  ::unsetenv("LATHE_TUNE");
}

// Host only: every candidate tile names a kernel of the library whose parameters emit's reader parses
// (the launcher passes 9), fits a Hopper block's shared memory, and the warp-specialized tiles are
// candidates for every format and contract.
TEST(GemmGpu, EveryCandidateTileHasAKernelThatFits) {
  const auto params = emit::kernel_params(library_source());
  for (GgmlType t : kFormats)
    for (Activations a : kContracts) {
      const std::vector<GemmTile> tiles = gemm_candidate_tiles(t, a);
      EXPECT_EQ(ws_tiles(t, a).size(), 2u) << name_of(t) << " " << name_of(a);
      for (const GemmTile& tile : tiles) {
        const std::string name = gemm_kernel_name(t, a, tile);
        ASSERT_TRUE(params.count(name)) << name;
        EXPECT_EQ(params.at(name).size(), 9u) << name;
        EXPECT_LE(gemm_shared_bytes(t, a, tile), 232448u) << name;
      }
    }
  EXPECT_TRUE(gemm_candidate_tiles(GgmlType::Q5_K, Activations::int8).empty());
  EXPECT_EQ(gemm_kernel_name(GgmlType::Q8_0, Activations::int8, {128, 64, GemmVariant::warp_specialized}),
            "lathe_gemm_ws_q8_0_int8_128x64");
}

TEST(GemmGpu, RefusesWhatItCannotRead) {
  EXPECT_TRUE(gemm_supports(GgmlType::Q8_0));
  EXPECT_TRUE(gemm_supports(GgmlType::Q4_K));
  EXPECT_TRUE(gemm_supports(GgmlType::Q6_K));
  EXPECT_FALSE(gemm_supports(GgmlType::F32));
  EXPECT_FALSE(gemm_supports(GgmlType::Q5_K));
  EXPECT_THROW(gemm_quantized(WeightMatrix{GgmlType::Q5_K, 0, 64, 256}, Activations::int8, 0, 1, 0, nullptr),
               UserError);
  EXPECT_THROW(gemm_quantized(WeightMatrix{GgmlType::Q4_K, 0, 64, 288}, Activations::int8, 0, 1, 0, nullptr),
               UserError);
  EXPECT_THROW(gemm_quantized(WeightMatrix{GgmlType::Q8_0, 0, 64, 256}, Activations::f32, 0, 1, 0, nullptr),
               UserError);
}

}  // namespace
}  // namespace lathe::kernels
