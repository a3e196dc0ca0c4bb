// The matrix products of the GPU lane against the CPU reference (dequantize_row and f64 dot products):
// GEMV in three numerics contracts, its expert form, the activation quantizer, the row gather and the
// batched prefill product, over every format and a sweep of shapes; then GEMV timings as GB/s.
//
// Error: max|gpu - cpu| / scale, scale = max over outputs of max(|cpu|, sqrt(sum_i (w_i x_i)^2)), so a
// dot product whose terms cancel is judged by the size of its terms. Bounds per contract:

#include "gguf/block_format.h"
#include "kernels/decode_stream.h"
#include "kernels/gemv_launch.h"
#include "runtime/cuda_driver.h"
#include "test_product_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace lathe::kernels {
namespace {

using cuda::DeviceBuffer;
using namespace test;

constexpr double kBoundF32 = 1e-5;     // f32: rounding of f32 sums
constexpr double kBoundInt8 = 2e-2;    // int8: x to 8 bits per block of 32 (~0.5% noise per product)
constexpr double kBoundInt8x2 = 5e-4;  // int8x2: x to ~14 bits (~127x under int8)

const GgmlType kFormats[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K,
                             GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::F16,  GgmlType::BF16, GgmlType::F32};
const Activations kContracts[] = {Activations::f32, Activations::int8, Activations::int8x2};

double bound_of(Activations a) {
  return a == Activations::f32 ? kBoundF32 : a == Activations::int8 ? kBoundInt8 : kBoundInt8x2;
}

bool is_k_format(GgmlType t) { return block_format(t).block_size == 256; }

std::vector<float> dequantize(GgmlType t, const std::vector<uint8_t>& m, int64_t rows, int64_t k) {
  std::vector<float> out(static_cast<size_t>(rows * k));
  for (int64_t r = 0; r < rows; ++r) dequantize_row(t, m.data() + r * row_bytes(t, k), out.data() + r * k, k);
  return out;
}

// The CPU reference of y[r][o] = w[o] . x[r] in f64, and its scale (see the top of the file).
struct Reference {
  std::vector<double> y;
  double scale = 0;
};

void add_dot(Reference& ref, const float* w, const float* x, int64_t k, double weight = 1.0) {
  double s = 0, s2 = 0;
  for (int64_t i = 0; i < k; ++i) {
    const double p = static_cast<double>(w[i]) * static_cast<double>(x[i]);
    s += p;
    s2 += p * p;
  }
  ref.y.push_back(weight * s);
  ref.scale = std::max({ref.scale, std::abs(weight * s), std::abs(weight) * std::sqrt(s2)});
}

Reference reference(const std::vector<float>& w, const std::vector<float>& x, int64_t rows, int64_t n_out, int64_t k) {
  Reference ref;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < n_out; ++o) add_dot(ref, &w[o * k], &x[r * k], k);
  return ref;
}

double error_of(const std::vector<float>& gpu, const Reference& ref, size_t n) {
  double e = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = std::abs(static_cast<double>(gpu[i]) - ref.y[i]);
    e = std::isfinite(d) ? std::max(e, d) : INFINITY;  // a NaN fails
  }
  return ref.scale > 0 ? e / ref.scale : e;
}

// x for the contract: f32 as is, or quantized on the device.
DeviceBuffer activations(const DeviceBuffer& xf, int64_t rows, int64_t k, Activations a, const cuda::Stream& s) {
  if (a == Activations::f32) return DeviceBuffer();
  DeviceBuffer q(static_cast<size_t>(quantized_activation_bytes(rows, k, a)));
  quantize_activations(xf.ptr(), rows, k, a, q.ptr(), s.handle());
  return q;
}

std::vector<int64_t> k_sweep(GgmlType t) {
  if (is_k_format(t)) return {256, 1024, 4096, 11008};
  return {96, 256, 1024, 4096, 11008};
}

// One matrix of format t against 8 rows of x, for rows 1, 2, 5, 8 and every contract; prints a line
// of the worst error per contract and folds it into worst[].
void check_gemv(GgmlType t, int64_t k, int64_t n_out, std::mt19937& rng, const cuda::Stream& s, double* worst) {
  const std::vector<uint8_t> m = random_matrix(t, n_out, k, rng);
  const std::vector<float> wf = dequantize(t, m, n_out, k);
  const std::vector<float> x = random_values(8 * k, rng);
  const Reference ref = reference(wf, x, 8, n_out, k);
  DeviceBuffer wd = upload(m), xd = upload(x), yd(8 * n_out * sizeof(float));
  const WeightMatrix w{t, wd.ptr(), n_out, k};
  std::printf("  %-5s k=%-6lld n_out=%-5lld", std::string(ggml_type_name(t)).c_str(), static_cast<long long>(k),
              static_cast<long long>(n_out));
  for (int c = 0; c < 3; ++c) {
    double e_max = 0;
    for (int64_t rows : {1, 2, 5, 8}) {
      DeviceBuffer q = activations(xd, rows, k, kContracts[c], s);
      yd.zero();
      settle(yd);
      gemv(w, kContracts[c], kContracts[c] == Activations::f32 ? xd.ptr() : q.ptr(), rows, yd.ptr(), s.handle());
      s.synchronize();
      const double e = error_of(download(yd, rows * n_out), ref, rows * n_out);
      EXPECT_LE(e, bound_of(kContracts[c])) << ggml_type_name(t) << " k=" << k << " n_out=" << n_out << " rows=" << rows
                                             << " " << activations_name(kContracts[c]);
      e_max = std::max(e_max, e);
    }
    worst[c] = std::max(worst[c], e_max);
    std::printf("  %s %.2e", std::string(activations_name(kContracts[c])).c_str(), e_max);
  }
  std::printf("\n");
}

TEST(GemvGpu, EveryFormatAndContractMatchesCpu) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(7);
  std::printf("GEMV normalized error, worst over rows 1, 2, 5, 8 (bounds f32 %.0e, int8 %.0e, int8x2 %.0e)\n",
              kBoundF32, kBoundInt8, kBoundInt8x2);
  for (GgmlType t : kFormats) {
    double worst[3] = {0, 0, 0};
    for (int64_t k : k_sweep(t))
      for (int64_t n_out : {1, 7, 1000}) check_gemv(t, k, n_out, rng, s, worst);
    std::printf("  %-5s worst: f32 %.2e  int8 %.2e  int8x2 %.2e\n", std::string(ggml_type_name(t)).c_str(), worst[0],
                worst[1], worst[2]);
  }
}

// Matrices of more rows than the GPU holds warps take the streaming path (rows dealt to warps, the
// next chunk loaded while the current one is computed); 11008 values a row make several chunks, and
// the K formats take Qwen3-8B's down too (4096 rows of 12288: the general product's decode of Q2_K,
// Q3_K and Q5_K there).
TEST(GemvGpu, StreamingRowsMatchCpu) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(8);
  std::printf("GEMV, streaming rows\n");
  for (GgmlType t : kFormats) {
    double worst[3] = {0, 0, 0};
    for (int64_t k : {int64_t{256}, int64_t{11008}}) check_gemv(t, k, 4500, rng, s, worst);
    if (is_k_format(t)) check_gemv(t, 12288, 4096, rng, s, worst);
  }
}

// The decode kernel (one row, int8 contracts, q8_0 / q4_K / q6_K) at the shapes of an 8B model's
// decode, a ragged k and a few rows, against the CPU and beside the general kernel's error.
TEST(GemvGpu, DecodeKernelMatchesCpu) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(12);
  std::printf("decode GEMV (1 row) normalized error: decode kernel / general kernel\n");
  const std::pair<int64_t, int64_t> shapes[] = {{1024, 4096}, {4096, 12288}, {3, 11008}, {2500, 2816}};  // (n_out, k)
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    for (auto [n_out, k] : shapes) {
      const std::vector<uint8_t> m = random_matrix(t, n_out, k, rng);
      const std::vector<float> wf = dequantize(t, m, n_out, k);
      const std::vector<float> x = random_values(k, rng);
      const Reference ref = reference(wf, x, 1, n_out, k);
      DeviceBuffer wd = upload(m), xd = upload(x), yd(n_out * sizeof(float));
      std::printf("  %-5s n_out=%-5lld k=%-6lld", std::string(ggml_type_name(t)).c_str(), static_cast<long long>(n_out),
                  static_cast<long long>(k));
      for (Activations a : {Activations::int8, Activations::int8x2}) {
        DeviceBuffer q = activations(xd, 1, k, a, s);
        double e[2];
        std::vector<float> by_decode;
        for (int general = 0; general < 2; ++general) {
          set_decode_gemv_enabled(general == 0);
          yd.zero();
          settle(yd);
          gemv(WeightMatrix{t, wd.ptr(), n_out, k}, a, q.ptr(), 1, yd.ptr(), s.handle());
          s.synchronize();
          if (general == 0) by_decode = download(yd, n_out);
          e[general] = error_of(download(yd, n_out), ref, n_out);
        }
        set_decode_gemv_enabled(true);
        // The weights streamed evict-first (where the format takes it): what L2 keeps changes, not a bit.
        set_weights_evict_first(true);
        yd.zero();
        settle(yd);
        gemv(WeightMatrix{t, wd.ptr(), n_out, k}, a, q.ptr(), 1, yd.ptr(), s.handle());
        s.synchronize();
        set_weights_evict_first(false);
        EXPECT_EQ(download(yd, n_out), by_decode) << "evict-first " << ggml_type_name(t) << " n_out=" << n_out;
        EXPECT_LE(e[0], bound_of(a)) << ggml_type_name(t) << " n_out=" << n_out << " k=" << k << " "
                                     << activations_name(a);
        std::printf("  %s %.2e / %.2e", std::string(activations_name(a)).c_str(), e[0], e[1]);
      }
      std::printf("\n");
    }
  }
}

// Q2_K's to Q6_K's decode products on tensor cores (gemv_decode_tiles.cuh) against the CPU and against
// the row walk they replace: the same integer sums and terms (Q6_K's two x words' terms not fused),
// added in another order, so within a few f32 ulps of the row's scale of the row walk's result. Shapes: a tile for every SM and several, 16 to 48 units a row (one to
// three a warp), both contracts, x quantized before the launch and by each block
// (gemv_quantizing_row); and widths the tiles do not take (k = 2,048, 14,336, 4,352: not whole
// multiples of 16 units), which stay on the row walk.
TEST(GemvGpu, DecodeTilesMatchRowsAndCpu) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(21);
  const int64_t sm_count = cuda::Context::get().info().sm_count;
  const int64_t min_rows = 16 * sm_count;
  std::printf("Q2_K to Q6_K decode tiles: normalized error against the CPU, and against the row walk (Q2_K: the"
              " general product) (Q2_K's, Q3_K's and Q5_K's unless LATHE_DECODE_K35=0; then the rows they keep)\n");
  const std::pair<int64_t, int64_t> shapes[] = {{min_rows, 4096}, {min_rows + 48, 8192}, {4096, 4096},
                                                {4096, 12288},    {12288, 4096},         {min_rows, 2048},
                                                {4096, 14336},    {min_rows, 4352}};
  for (const GgmlType t : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    const bool has_tiles = decode_tile_format(t) != nullptr;  // Q2_K, Q3_K and Q5_K: not under LATHE_DECODE_K35=0
    for (auto [n_out, k] : shapes) {
      const std::vector<uint8_t> m = random_matrix(t, n_out, k, rng);
      const std::vector<float> wf = dequantize(t, m, n_out, k);
      const std::vector<float> x = random_values(k, rng);
      const Reference ref = reference(wf, x, 1, n_out, k);
      DeviceBuffer wd = upload(m), xd = upload(x), yd(n_out * sizeof(float));
      const WeightMatrix w{t, wd.ptr(), n_out, k};
      std::printf("  %s n_out=%-6lld k=%-6lld", std::string(ggml_type_name(t)).c_str(), static_cast<long long>(n_out),
                  static_cast<long long>(k));
      for (Activations a : {Activations::int8, Activations::int8x2}) {
        DeviceBuffer q = activations(xd, 1, k, a, s);
        std::vector<float> y[2];
        for (int tiles = 0; tiles < 2; ++tiles) {
          const DecodeTiles before = set_decode_tiles(tiles == 1 ? DecodeTiles::all : DecodeTiles::off);
          if (tiles == 1) {
            EXPECT_EQ(decode_tiles_group(w, a, TileProduct::plain) > 0, has_tiles && k % 4096 == 0)
                << ggml_type_name(t) << " n_out=" << n_out << " k=" << k;
          }
          yd.zero();
          settle(yd);
          gemv(w, a, q.ptr(), 1, yd.ptr(), s.handle());
          s.synchronize();
          y[tiles] = download(yd, n_out);
          if (tiles == 1 && decode_format(t) && k % 128 == 0 && k <= 8192) {  // x quantized by each block: the same bits
            yd.zero();
            settle(yd);
            ASSERT_TRUE(gemv_quantizing_row(w, a, xd.ptr(), yd.ptr(), s.handle()));
            s.synchronize();
            EXPECT_EQ(download(yd, n_out), y[1]) << "quantizing row n_out=" << n_out << " k=" << k;
          }
          set_decode_tiles(before);
        }
        const double e = error_of(y[1], ref, n_out);
        double d = 0;
        for (int64_t o = 0; o < n_out; ++o) d = std::max(d, std::abs(static_cast<double>(y[1][o]) - y[0][o]));
        d /= ref.scale;
        EXPECT_LE(e, bound_of(a)) << "n_out=" << n_out << " k=" << k << " " << activations_name(a);
        EXPECT_LE(d, 1e-5) << "against the row walk: n_out=" << n_out << " k=" << k << " " << activations_name(a);
        std::printf("  %s %.2e (rows %.2e)", std::string(activations_name(a)).c_str(), e, d);
      }
      std::printf("\n");
    }
  }
}

// The decode kernel quantizing its f32 row in each block (gemv_quantizing_row) gives the same bits
// as the quantizer followed by the decode kernel; at every k the kernel takes, also past the width
// where the default path quantizes in a launch of its own instead.
TEST(GemvGpu, QuantizingRowIsBitIdenticalToQuantizerThenGemv) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  EXPECT_FALSE(gemv_quantizing_row(WeightMatrix{GgmlType::Q8_0, 0, 64, 12288}, Activations::int8x2, 0, 0, s.handle()));
  struct Restore {
    int64_t k;
    ~Restore() { set_quantizing_row_max_k(k); }
  } restore{set_quantizing_row_max_k(int64_t{1} << 30)};
  std::mt19937 rng(31);
  const std::pair<int64_t, int64_t> shapes[] = {{4096, 4096}, {1024, 12288}, {3, 2816}, {151, 256}};  // (n_out, k)
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    for (auto [n_out, k] : shapes) {
      const std::vector<uint8_t> m = random_matrix(t, n_out, k, rng);
      const std::vector<float> x = random_values(k, rng);
      DeviceBuffer wd = upload(m), xd = upload(x), y1(n_out * sizeof(float)), y2(n_out * sizeof(float));
      const WeightMatrix w{t, wd.ptr(), n_out, k};
      for (Activations a : {Activations::int8, Activations::int8x2}) {
        if (!decode_format(t)) {  // Q2_K, Q3_K, Q5_K off the row walk (LATHE_DECODE_K35=0): no quantizing row
          EXPECT_FALSE(gemv_quantizing_row(w, a, xd.ptr(), y2.ptr(), s.handle())) << ggml_type_name(t);
          continue;
        }
        DeviceBuffer q = activations(xd, 1, k, a, s);
        y1.zero();
        y2.zero();
        settle(y2);
        gemv(w, a, q.ptr(), 1, y1.ptr(), s.handle());
        ASSERT_TRUE(gemv_quantizing_row(w, a, xd.ptr(), y2.ptr(), s.handle()))
            << ggml_type_name(t) << " n_out=" << n_out << " k=" << k;
        s.synchronize();
        const std::vector<float> a1 = download(y1, n_out), a2 = download(y2, n_out);
        EXPECT_EQ(std::memcmp(a1.data(), a2.data(), a1.size() * sizeof(float)), 0)
            << ggml_type_name(t) << " n_out=" << n_out << " k=" << k << " " << activations_name(a);
      }
    }
  }
  EXPECT_FALSE(gemv_quantizing_row(WeightMatrix{GgmlType::F16, 0, 64, 64}, Activations::int8x2, 0, 0, s.handle()));
}

// Mixtures: expert e = ids[r][j] of a stack, without and with the weighted combine.
TEST(GemvGpu, ExpertsMatchCpu) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(11);
  const int64_t n_expert = 4, n_out = 300, k = 1024, rows = 3, top_k = 2;
  std::vector<int32_t> ids(rows * top_k);
  for (int32_t& e : ids) e = static_cast<int32_t>(rng() % n_expert);
  ids[0] = ids[1] = 3;  // a row may pick the last expert, and the same one twice
  const std::vector<float> route_w = random_values(rows * top_k, rng);
  DeviceBuffer ids_d = upload(ids), rw_d = upload(route_w);
  std::printf("expert GEMV normalized error (gate/up: x per row; down: x per slot, weighted combine)\n");
  for (GgmlType t : kFormats) {
    const std::vector<uint8_t> m = random_matrix(t, n_expert * n_out, k, rng);
    const std::vector<float> wf = dequantize(t, m, n_expert * n_out, k);
    const std::vector<float> x = random_values(rows * top_k * k, rng);
    Reference gate_up, down;
    for (int64_t slot = 0; slot < rows * top_k; ++slot)
      for (int64_t o = 0; o < n_out; ++o) add_dot(gate_up, &wf[(ids[slot] * n_out + o) * k], &x[(slot / top_k) * k], k);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t o = 0; o < n_out; ++o) {
        Reference one;
        for (int64_t j = 0; j < top_k; ++j) {
          const int64_t slot = r * top_k + j;
          add_dot(one, &wf[(ids[slot] * n_out + o) * k], &x[slot * k], k, route_w[slot]);
        }
        down.y.push_back(one.y[0] + one.y[1]);
        down.scale = std::max({down.scale, std::abs(down.y.back()), one.scale});
      }
    }
    DeviceBuffer wd = upload(m), xd = upload(x), yd(rows * top_k * n_out * sizeof(float));
    const WeightMatrix w{t, wd.ptr(), n_out, k, n_expert};
    std::printf("  %-5s", std::string(ggml_type_name(t)).c_str());
    for (Activations a : kContracts) {
      for (bool combine : {false, true}) {
        const int64_t x_rows = combine ? rows * top_k : rows;
        DeviceBuffer q = activations(xd, x_rows, k, a, s);
        const ExpertRouting routing{ids_d.ptr(), top_k, combine ? rw_d.ptr() : 0, combine, combine};
        yd.zero();
        settle(yd);
        gemv_experts(w, a, a == Activations::f32 ? xd.ptr() : q.ptr(), rows, routing, yd.ptr(), s.handle());
        s.synchronize();
        const size_t n = static_cast<size_t>((combine ? rows : rows * top_k) * n_out);
        const double e = error_of(download(yd, n), combine ? down : gate_up, n);
        EXPECT_LE(e, bound_of(a)) << ggml_type_name(t) << " " << activations_name(a) << (combine ? " down" : " gate/up");
        std::printf("  %s %s %.2e", std::string(activations_name(a)).c_str(), combine ? "down" : "up", e);
      }
    }
    std::printf("\n");
  }
}

// The quantizer's contract, block by block: d1 = max|x| / 127, |x - x^| within half a step of the
// last word, the block sum the sum of x^; all-zero blocks stay zero.
TEST(GemvGpu, ActivationQuantizerKeepsItsBounds) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(5);
  const int64_t rows = 3, k = 4096;
  std::vector<float> x = random_values(rows * k, rng);
  for (int64_t b = 0; b < rows * k / 32; ++b) {
    const float mag = std::ldexp(1.0f, static_cast<int>(b % 21) - 10);  // blocks from 2^-10 to 2^10
    for (int i = 0; i < 32; ++i) x[b * 32 + i] *= (b % 17 == 5) ? 0.0f : mag;
  }
  DeviceBuffer xd = upload(x);
  for (Activations a : {Activations::int8, Activations::int8x2}) {
    DeviceBuffer q = activations(xd, rows, k, a, s);
    s.synchronize();
    std::vector<uint8_t> h(static_cast<size_t>(quantized_activation_bytes(rows, k, a)));
    q.download(h.data(), h.size());
    const int8_t* q1 = reinterpret_cast<const int8_t*>(h.data());
    const int8_t* q2 = a == Activations::int8x2 ? q1 + rows * k : nullptr;
    const float* ds = reinterpret_cast<const float*>(h.data() + rows * k * (q2 ? 2 : 1));
    int bad = 0;
    double worst = 0;
    for (int64_t b = 0; b < rows * k / 32; ++b) {
      float amax = 0;
      for (int i = 0; i < 32; ++i) amax = std::max(amax, std::abs(x[b * 32 + i]));
      const float d1 = ds[4 * b], d2 = ds[4 * b + 1], sum = ds[4 * b + 2];
      bad += d1 != amax / 127.0f;
      double rebuilt_sum = 0, err = 0;
      for (int i = 0; i < 32; ++i) {
        const double xh = double(d1) * q1[b * 32 + i] + (q2 ? double(d2) * q2[b * 32 + i] : 0.0);
        rebuilt_sum += xh;
        err = std::max(err, std::abs(xh - x[b * 32 + i]));
      }
      const double step = q2 ? d2 : d1;
      bad += err > step * (0.5 + 2e-5);
      bad += std::abs(rebuilt_sum - sum) > 1e-5 * 32 * amax;
      if (amax > 0) worst = std::max(worst, err / amax);
    }
    EXPECT_EQ(bad, 0) << activations_name(a);
    std::printf("quantize %s: worst |x - x^| / max|block| = %.2e\n", std::string(activations_name(a)).c_str(), worst);
  }
}

// Embedding rows come out exactly as dequantize_row gives them.
TEST(GemvGpu, GatherIsExact) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(3);
  const int64_t n_rows = 50;
  std::vector<int32_t> ids = {0, 49, 7, 7, 13, 0, 31, 48, 2};
  DeviceBuffer ids_d = upload(ids);
  for (GgmlType t : kFormats) {
    for (int64_t k : k_sweep(t)) {
      const std::vector<uint8_t> m = random_matrix(t, n_rows, k, rng);
      const std::vector<float> wf = dequantize(t, m, n_rows, k);
      DeviceBuffer md = upload(m), out(ids.size() * k * sizeof(float));
      gather_rows(WeightMatrix{t, md.ptr(), n_rows, k}, ids_d.ptr(), static_cast<int64_t>(ids.size()), out.ptr(),
                  s.handle());
      s.synchronize();
      const std::vector<float> got = download(out, ids.size() * k);
      int64_t differ = 0;
      for (size_t r = 0; r < ids.size(); ++r)
        differ += std::memcmp(&got[r * k], &wf[ids[r] * k], k * sizeof(float)) != 0;
      EXPECT_EQ(differ, 0) << ggml_type_name(t) << " k=" << k;
    }
  }
}

// The prefill product over ragged row counts and shapes, in f32.
TEST(GemvGpu, BatchedProductMatchesCpu) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(9);
  std::printf("batched product normalized error (bound %.0e)\n", kBoundF32);
  for (GgmlType t : kFormats) {
    std::printf("  %-5s", std::string(ggml_type_name(t)).c_str());
    const std::pair<int64_t, int64_t> shapes[] = {{256, 7}, {1024, 1000}, {4352, 130}};  // (k, n_out)
    for (auto [k, n_out] : shapes) {
      const std::vector<uint8_t> m = random_matrix(t, n_out, k, rng);
      const std::vector<float> wf = dequantize(t, m, n_out, k);
      const std::vector<float> x = random_values(200 * k, rng);
      const Reference ref = reference(wf, x, 200, n_out, k);
      DeviceBuffer wd = upload(m), xd = upload(x), yd(200 * n_out * sizeof(float));
      for (int64_t rows : {1, 17, 64, 200}) {
        yd.zero();
        settle(yd);
        matmul(WeightMatrix{t, wd.ptr(), n_out, k}, xd.ptr(), rows, yd.ptr(), s.handle());
        s.synchronize();
        const double e = error_of(download(yd, rows * n_out), ref, rows * n_out);
        EXPECT_LE(e, kBoundF32) << ggml_type_name(t) << " k=" << k << " n_out=" << n_out << " rows=" << rows;
        if (rows == 200) std::printf("  k=%lld n=%lld %.2e", static_cast<long long>(k), static_cast<long long>(n_out), e);
      }
    }
    std::printf("\n");
  }
}

// Decode speed: weight bytes read per second, the matrix rotated through enough copies that none is
// in the 50 MB L2 when read; the launches replayed as one graph; median of 5 replays. One row: the
// decode kernel ("decode") beside the general one ("general"); the shapes of Qwen3-8B's decode.
TEST(GemvGpu, TimingPrintsBandwidth) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(1);
  const double limit_gbs = 4630;
  struct Case {
    GgmlType t;
    int64_t n_out, k;
  };
  const Case cases[] = {{GgmlType::Q8_0, 4096, 4096},  {GgmlType::Q8_0, 1024, 4096},  {GgmlType::Q8_0, 12288, 4096},
                        {GgmlType::Q8_0, 4096, 12288}, {GgmlType::Q8_0, 151936, 4096}, {GgmlType::Q4_K, 4096, 4096},
                        {GgmlType::Q4_K, 12288, 4096}, {GgmlType::Q4_K, 4096, 12288}, {GgmlType::Q6_K, 4096, 4096},
                        {GgmlType::Q6_K, 12288, 4096}, {GgmlType::Q6_K, 4096, 12288}, {GgmlType::Q6_K, 151936, 4096},
                        {GgmlType::Q5_K, 12288, 4096}, {GgmlType::Q5_K, 4096, 12288}, {GgmlType::Q3_K, 12288, 4096},
                        {GgmlType::Q3_K, 4096, 12288}, {GgmlType::F16, 4096, 4096}};
  std::printf("GEMV timing: us per product, GB/s of weights read, fraction of %.0f GB/s\n", limit_gbs);
  auto time_graph = [&](const std::vector<DeviceBuffer>& w, const Case& c, Activations a, CUdeviceptr xin, int64_t rows,
                        CUdeviceptr y) {
    gemv(WeightMatrix{c.t, w[0].ptr(), c.n_out, c.k}, a, xin, rows, y, s.handle());  // warm up
    cuda::CapturedGraph g;
    g.begin(s);
    for (const DeviceBuffer& wi : w) gemv(WeightMatrix{c.t, wi.ptr(), c.n_out, c.k}, a, xin, rows, y, s.handle());
    g.end(s);
    g.replay(s);
    std::vector<float> ms;
    for (int rep = 0; rep < 5; ++rep) {
      cuda::EventTimer timer;
      timer.start(s);
      g.replay(s);
      ms.push_back(timer.stop(s));
    }
    std::sort(ms.begin(), ms.end());
    return 1e3 * ms[2] / static_cast<double>(w.size());
  };
  // LATHE_GEMV_TIMING_CASE="q4_K 12288 4096" times that case alone (for a profiler's one launch); a
  // prefix ("q4_K") the cases it begins.
  const char* only = std::getenv("LATHE_GEMV_TIMING_CASE");
  for (const Case& c : cases) {
    const std::string name = std::string(ggml_type_name(c.t)) + " " + std::to_string(c.n_out) + " " + std::to_string(c.k);
    if (only && name.rfind(only, 0) != 0) continue;
    const int64_t bytes = c.n_out * row_bytes(c.t, c.k);
    const int copies = static_cast<int>(std::max<int64_t>(2, (256ll << 20) / bytes));
    const std::vector<uint8_t> m = random_matrix(c.t, c.n_out, c.k, rng);
    std::vector<DeviceBuffer> w;
    for (int i = 0; i < copies; ++i) w.push_back(upload(m));
    const std::vector<float> x = random_values(8 * c.k, rng);
    DeviceBuffer xd = upload(x), yd(8 * c.n_out * sizeof(float));
    for (Activations a : kContracts) {
      for (int64_t rows : {1, 8}) {
        if ((c.t != GgmlType::Q8_0 || c.n_out != 4096 || c.k != 4096) && rows == 8) continue;
        DeviceBuffer q = activations(xd, rows, c.k, a, s);
        const CUdeviceptr xin = a == Activations::f32 ? xd.ptr() : q.ptr();
        // Modes: the decode kernel (Q4_K, Q6_K: its tiles where they apply), the general kernel, and
        // for Q4_K and Q6_K the decode kernel's row walk (tiles off).
        for (int mode = 0; mode < 3; ++mode) {
          const bool decode = rows == 1 && a != Activations::f32 && c.t != GgmlType::F16;
          if (mode != 1 && !decode) continue;
          if (mode == 2 && c.t != GgmlType::Q4_K && c.t != GgmlType::Q5_K && c.t != GgmlType::Q6_K) continue;
          set_decode_gemv_enabled(mode != 1);
          const DecodeTiles tiles_before = set_decode_tiles(mode != 2 ? DecodeTiles::all : DecodeTiles::off);
          const double us = time_graph(w, c, a, xin, rows, yd.ptr()), gbs = static_cast<double>(bytes) / (us * 1e3);
          set_decode_gemv_enabled(true);
          set_decode_tiles(tiles_before);
          std::printf("  %-5s n_out=%-6lld k=%-6lld rows=%lld %-6s %-7s %8.2f us %7.0f GB/s %5.1f%%\n",
                      std::string(ggml_type_name(c.t)).c_str(), static_cast<long long>(c.n_out),
                      static_cast<long long>(c.k), static_cast<long long>(rows), std::string(activations_name(a)).c_str(),
                      mode == 1 ? "general" : mode == 2 ? "rows" : "decode", us, gbs, 100 * gbs / limit_gbs);
        }
      }
    }
  }
  // The quantizer and the prefill product, for the record.
  {
    const int64_t k = 4096, rows = 512, n_out = 4096;
    const std::vector<float> x = random_values(rows * k, rng);
    DeviceBuffer xd = upload(x), q(static_cast<size_t>(quantized_activation_bytes(rows, k, Activations::int8x2)));
    const std::vector<uint8_t> m = random_matrix(GgmlType::Q8_0, n_out, k, rng);
    DeviceBuffer wd = upload(m), yd(rows * n_out * sizeof(float));
    cuda::EventTimer timer;
    quantize_activations(xd.ptr(), 1, k, Activations::int8x2, q.ptr(), s.handle());
    timer.start(s);
    for (int i = 0; i < 20; ++i) quantize_activations(xd.ptr(), 1, k, Activations::int8x2, q.ptr(), s.handle());
    std::printf("  quantize int8x2 1 x %lld: %.2f us\n", static_cast<long long>(k), 1e3 * timer.stop(s) / 20);
    matmul(WeightMatrix{GgmlType::Q8_0, wd.ptr(), n_out, k}, xd.ptr(), rows, yd.ptr(), s.handle());
    timer.start(s);
    for (int i = 0; i < 5; ++i) matmul(WeightMatrix{GgmlType::Q8_0, wd.ptr(), n_out, k}, xd.ptr(), rows, yd.ptr(), s.handle());
    const double ms = timer.stop(s) / 5;
    std::printf("  matmul q8_0 %lld x %lld x %lld: %.3f ms, %.1f TFLOP/s\n", static_cast<long long>(rows),
                static_cast<long long>(n_out), static_cast<long long>(k), ms, 2.0 * rows * n_out * k / (ms * 1e9));
  }
}

}  // namespace
}  // namespace lathe::kernels
