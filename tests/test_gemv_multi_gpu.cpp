// The merged decode GEMVs (kernels/gemv_multi_launch.h) against the interpreter's product and
// swiglu (interp/cpu_ops.h) on the dequantized weights and the activation x^ rebuilt on the host from
// the quantized bytes the kernel reads, and against separate gemv calls; then timings, merged vs
// separate launches, at the decode shapes of qwen3-8b and qwen3-0.6b.
//
// Error: max|gpu - cpu| / scale per matrix, scale = max over outputs of max(|y|, sqrt(sum_i (w_i x_i)^2))
// (gate/up: of the SwiGLU's first-order error, |u| G + |silu(g)| U with G, U the gate and up scales).
// With x^ as the reference's input, only f32 rounding is left: kBoundRebuilt. Merged vs separate
// kernels differ only in the order of f32 sums: kBoundSeparate.

#include "gguf/block_format.h"
#include "interp/cpu_ops.h"
#include "kernels/decode_stream.h"
#include "kernels/gemv_launch.h"
#include "kernels/gemv_multi_launch.h"
#include "kernels/norm_launch.h"
#include "runtime/cuda_driver.h"

#include "test_product_helpers.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace lathe::kernels {
namespace {

using cuda::DeviceBuffer;
using namespace test;

constexpr double kBoundRebuilt = 1e-4;   // f32 products and sums of an exact int8 / int8x2 x^
constexpr double kBoundSeparate = 2e-5;  // the same products, summed in another order
constexpr double kBoundF32 = 1e-5;       // the fallback under the f32 contract (gemv's bound)

std::string type_name(GgmlType t) { return std::string(ggml_type_name(t)); }

// rows of x quantized on the device for contract a (f32: an empty buffer; x is read as is).
DeviceBuffer quantized(const DeviceBuffer& xf, int64_t rows, int64_t k, Activations a, const cuda::Stream& s) {
  if (a == Activations::f32) return DeviceBuffer();
  DeviceBuffer q(static_cast<size_t>(quantized_activation_bytes(rows, k, a)));
  quantize_activations(xf.ptr(), rows, k, a, q.ptr(), s.handle());
  s.synchronize();
  return q;
}

// x^ [rows][k] from the quantized bytes on the device (x itself under the f32 contract).
std::vector<float> rebuilt_x(const DeviceBuffer& q, const std::vector<float>& xf, int64_t rows, int64_t k, Activations a) {
  if (a == Activations::f32) return xf;
  std::vector<uint8_t> h(static_cast<size_t>(quantized_activation_bytes(rows, k, a)));
  q.download(h.data(), h.size());
  return test::rebuilt_x(h, rows, k, a);
}

// A matrix on the host and the device, with its interpreter product for the current x^.
struct Matrix {
  GgmlType type;
  int64_t n_out, k;
  std::vector<uint8_t> bytes;
  DeviceBuffer dev;
  std::vector<float> y;        // [rows][n_out], cpu_ops product
  std::vector<double> terms;   // [rows][n_out], sqrt(sum_i (w_i x_i)^2)
  WeightMatrix weights() const { return WeightMatrix{type, dev.ptr(), n_out, k}; }
  MatrixRef ref() const { return MatrixRef{type, bytes.data(), k, n_out}; }
};

Matrix make_matrix(GgmlType t, int64_t n_out, int64_t k, std::mt19937& rng) {
  Matrix m{t, n_out, k, random_matrix(t, n_out, k, rng), DeviceBuffer(), {}, {}};
  m.dev = upload(m.bytes);
  return m;
}

void compute_reference(Matrix& m, const std::vector<float>& x, int64_t rows) {
  m.y = product(Tensor({rows, m.k}, x), m.ref()).data;
  m.terms.assign(static_cast<size_t>(rows * m.n_out), 0.0);
  std::vector<float> w(static_cast<size_t>(m.k));
  for (int64_t o = 0; o < m.n_out; ++o) {
    m.ref().row(o, w.data());
    for (int64_t r = 0; r < rows; ++r) {
      double s2 = 0;
      for (int64_t i = 0; i < m.k; ++i) {
        const double p = double(w[i]) * x[r * m.k + i];
        s2 += p * p;
      }
      m.terms[r * m.n_out + o] = std::sqrt(s2);
    }
  }
}

double scale_of(const Matrix& m) {
  double s = 0;
  for (size_t i = 0; i < m.y.size(); ++i) s = std::max({s, std::abs(double(m.y[i])), m.terms[i]});
  return s;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double e = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(double(a[i]) - double(b[i]));
    e = std::isfinite(d) ? std::max(e, d) : INFINITY;  // a NaN fails
  }
  return e;
}

struct Errors {
  double cpu = 0, separate = 0;
};

// The merged call and the separate gemvs for one contract and row count; errors of the merged
// result against the interpreter and against the separate gemvs (worst matrix).
Errors check_multi(std::vector<Matrix>& ms, const DeviceBuffer& xd, const std::vector<float>& xf, int64_t rows,
                   Activations a, const cuda::Stream& s) {
  const int64_t k = ms[0].k;
  DeviceBuffer q = quantized(xd, rows, k, a, s);
  const std::vector<float> xh = rebuilt_x(q, xf, rows, k, a);
  const CUdeviceptr xin = a == Activations::f32 ? xd.ptr() : q.ptr();
  std::vector<WeightMatrix> w;
  std::vector<DeviceBuffer> yd;
  std::vector<CUdeviceptr> yp;
  for (Matrix& m : ms) {
    compute_reference(m, xh, rows);
    w.push_back(m.weights());
    yd.emplace_back(static_cast<size_t>(rows * m.n_out) * sizeof(float));
    yd.back().zero();
    yp.push_back(yd.back().ptr());
  }
  DeviceBuffer probe_sync(16);
  uint8_t probe;
  probe_sync.download(&probe, 1);  // the zeroing above has landed
  gemv_multi(w.data(), static_cast<int>(w.size()), a, xin, yp.data(), s.handle(), rows);
  s.synchronize();
  std::vector<std::vector<float>> merged;
  for (size_t m = 0; m < ms.size(); ++m) merged.push_back(download(yd[m], rows * ms[m].n_out));
  // Deterministic: a second run gives the same bits.
  gemv_multi(w.data(), static_cast<int>(w.size()), a, xin, yp.data(), s.handle(), rows);
  s.synchronize();
  for (size_t m = 0; m < ms.size(); ++m)
    EXPECT_EQ(std::memcmp(download(yd[m], rows * ms[m].n_out).data(), merged[m].data(), merged[m].size() * 4), 0)
        << "matrix " << m << " differs between two runs";
  Errors e;
  for (size_t m = 0; m < ms.size(); ++m) {
    gemv(w[m], a, xin, rows, yp[m], s.handle());
    s.synchronize();
    const double scale = scale_of(ms[m]);
    e.cpu = std::max(e.cpu, max_diff(merged[m], ms[m].y) / scale);
    e.separate = std::max(e.separate, max_diff(merged[m], download(yd[m], rows * ms[m].n_out)) / scale);
  }
  return e;
}

Errors check_gate_up(Matrix& gate, Matrix& up, const DeviceBuffer& xd, const std::vector<float>& xf, int64_t rows,
                     Activations a, const cuda::Stream& s) {
  const int64_t k = gate.k, n = rows * gate.n_out;
  DeviceBuffer q = quantized(xd, rows, k, a, s);
  const std::vector<float> xh = rebuilt_x(q, xf, rows, k, a);
  const CUdeviceptr xin = a == Activations::f32 ? xd.ptr() : q.ptr();
  compute_reference(gate, xh, rows);
  compute_reference(up, xh, rows);
  const std::vector<float> ref = swiglu(Tensor({n}, gate.y), Tensor({n}, up.y)).data;
  double scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate.y[i], u = up.y[i], silu = g / (1 + std::exp(-g));
    scale = std::max({scale, std::abs(double(ref[i])),
                      std::abs(u) * std::max(std::abs(g), gate.terms[i]) + std::abs(silu) * std::max(std::abs(u), up.terms[i])});
  }
  DeviceBuffer yd(static_cast<size_t>(n) * sizeof(float)), ys(static_cast<size_t>(n) * sizeof(float));
  gemv_gate_up_swiglu(gate.weights(), up.weights(), a, xin, yd.ptr(), s.handle(), rows);
  s.synchronize();
  const std::vector<float> merged = download(yd, n);
  set_merged_gemv_enabled(false);
  gemv_gate_up_swiglu(gate.weights(), up.weights(), a, xin, ys.ptr(), s.handle(), rows);
  s.synchronize();
  set_merged_gemv_enabled(true);
  return Errors{max_diff(merged, ref) / scale, max_diff(merged, download(ys, n)) / scale};
}

struct FormatSet {
  const char* name;
  GgmlType qkv[3];
  GgmlType gate, up;
};

// Q4_K_M mixes q4_K with q6_K (v and some ffn matrices); gate q4_K with up q6_K takes the mixed kernel.
const FormatSet kFormatSets[] = {
    {"q8_0", {GgmlType::Q8_0, GgmlType::Q8_0, GgmlType::Q8_0}, GgmlType::Q8_0, GgmlType::Q8_0},
    {"q4_K_M", {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K}, GgmlType::Q4_K, GgmlType::Q6_K},
    {"q6_K", {GgmlType::Q6_K, GgmlType::Q6_K, GgmlType::Q6_K}, GgmlType::Q6_K, GgmlType::Q6_K},
    {"q4_K", {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q4_K}, GgmlType::Q4_K, GgmlType::Q4_K},
    {"q5_K_M", {GgmlType::Q5_K, GgmlType::Q5_K, GgmlType::Q6_K}, GgmlType::Q5_K, GgmlType::Q6_K},
    {"q5_K", {GgmlType::Q5_K, GgmlType::Q5_K, GgmlType::Q5_K}, GgmlType::Q5_K, GgmlType::Q5_K},
    {"q3_K", {GgmlType::Q3_K, GgmlType::Q3_K, GgmlType::Q3_K}, GgmlType::Q3_K, GgmlType::Q3_K},
    {"q2_K", {GgmlType::Q2_K, GgmlType::Q2_K, GgmlType::Q2_K}, GgmlType::Q2_K, GgmlType::Q2_K},
};

struct MultiShape {
  std::vector<int64_t> n_out;
  int64_t k;
};

TEST(GemvMultiGpu, MergedQkvMatchesCpuAndSeparate) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(21);
  // 8B and 0.6B attention, 8B-wide square, ragged rows and k (11008: chunks of 24 / 11 / 7 units
  // at the ends), two matrices, one (routed to gemv), and a few rows over several warps a row (group 4).
  const MultiShape shapes[] = {{{4096, 1024, 1024}, 4096}, {{2048, 512, 512}, 1024}, {{4096, 4096, 4096}, 4096},
                               {{1000, 7, 300}, 2816},     {{1000, 333}, 11008},    {{5}, 256},
                               {{7, 3}, 11008}};
  std::printf("merged q/k/v normalized error: vs interpreter on x^ (bound %.0e) / vs separate gemv (bound %.0e)\n",
              kBoundRebuilt, kBoundSeparate);
  for (const FormatSet& f : kFormatSets) {
    for (const MultiShape& sh : shapes) {
      // (q4_K's big shapes take its tiles: gemv_decode_tiles.cuh; each is checked with them and without.)
      const bool big = sh.n_out[0] * sh.k > 4096 * 1024;
      if (big && std::string(f.name) == "q6_K") continue;
      std::vector<Matrix> ms;
      for (size_t m = 0; m < sh.n_out.size(); ++m) ms.push_back(make_matrix(f.qkv[m], sh.n_out[m], sh.k, rng));
      const std::vector<float> x = random_values(sh.k, rng);
      DeviceBuffer xd = upload(x);
      std::string shape;
      for (int64_t n : sh.n_out) {
        if (!shape.empty()) shape += ',';
        shape += std::to_string(n);
      }
      std::vector<WeightMatrix> w;
      for (const Matrix& m : ms) w.push_back(m.weights());
      std::printf("  %-6s (%s) x %-5lld %-6s", f.name, shape.c_str(), static_cast<long long>(sh.k),
                  merged_gemv_applies(w.data(), static_cast<int>(w.size()), Activations::int8) ? "merged" : "split");
      for (int tiles = 1; tiles >= (std::string(f.name) == "q4_K" ? 0 : 1); --tiles) {
        const DecodeTiles before = set_decode_tiles(tiles == 1 ? DecodeTiles::all : DecodeTiles::off);
        for (Activations a : {Activations::int8, Activations::int8x2}) {
          const Errors e = check_multi(ms, xd, x, 1, a, s);
          EXPECT_LE(e.cpu, kBoundRebuilt) << f.name << " (" << shape << ") x " << sh.k << " " << activations_name(a)
                                          << " tiles " << tiles;
          EXPECT_LE(e.separate, kBoundSeparate) << f.name << " (" << shape << ") x " << sh.k << " "
                                                << activations_name(a) << " tiles " << tiles;
          std::printf("  %s %.1e / %.1e", std::string(activations_name(a)).c_str(), e.cpu, e.separate);
        }
        set_decode_tiles(before);
        if (tiles == 1 && std::string(f.name) == "q4_K") std::printf("  | rows:");
      }
      std::printf("\n");
    }
  }
}

TEST(GemvMultiGpu, GateUpSwigluMatchesCpuAndSeparate) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(22);
  const std::pair<int64_t, int64_t> shapes[] = {{12288, 4096}, {3072, 1024}, {1000, 11008}, {1001, 4096}, {7, 256}};  // (n_out, k)
  std::printf("gate/up + SwiGLU normalized error: vs interpreter on x^ (bound %.0e) / vs gemv, gemv, swiglu (bound %.0e)\n",
              kBoundRebuilt, kBoundSeparate);
  for (const FormatSet& f : kFormatSets) {
    for (auto [n_out, k] : shapes) {
      if (n_out * k > 4096 * 1024 && std::string(f.name) == "q6_K") continue;
      Matrix gate = make_matrix(f.gate, n_out, k, rng), up = make_matrix(f.up, n_out, k, rng);
      const std::vector<float> x = random_values(k, rng);
      DeviceBuffer xd = upload(x);
      std::printf("  %-6s %5lld x %-5lld", f.name, static_cast<long long>(n_out), static_cast<long long>(k));
      for (int tiles = 1; tiles >= (std::string(f.name) == "q4_K" ? 0 : 1); --tiles) {
        const DecodeTiles before = set_decode_tiles(tiles == 1 ? DecodeTiles::all : DecodeTiles::off);
        for (Activations a : {Activations::int8, Activations::int8x2}) {
          const Errors e = check_gate_up(gate, up, xd, x, 1, a, s);
          EXPECT_LE(e.cpu, kBoundRebuilt) << f.name << " " << n_out << " x " << k << " " << activations_name(a)
                                          << " tiles " << tiles;
          EXPECT_LE(e.separate, kBoundSeparate) << f.name << " " << n_out << " x " << k << " " << activations_name(a)
                                                << " tiles " << tiles;
          std::printf("  %s %.1e / %.1e", std::string(activations_name(a)).c_str(), e.cpu, e.separate);
        }
        set_decode_tiles(before);
        if (tiles == 1 && std::string(f.name) == "q4_K") std::printf("  | rows:");
      }
      std::printf("\n");
    }
  }
}

// quantize_epilogue on gate/up: the SwiGLU's output quantized by the merged kernel's epilogue (each
// block its own 32-row blocks, the rows dealt to it whole) is quantize_activations' bytes of the y it
// writes, and that y is the dealt form's, bit for bit: with the norm in the prologue or without, the
// paired products (3072 x 1024) and the chunked ones, 384 32-row blocks over the SMs and 96, every
// format, Q4_K's tiles (by block against dealt), and the fallback (4 rows: gemv, gemv, swiglu, then
// the quantizer).
TEST(GemvMultiGpu, GateUpQuantizedOutputIsTheQuantizersBytes) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(23);
  struct Case {
    const char* name;
    GgmlType gate, up;
    int64_t n_out, k, rows;
    bool norm;
    bool tiles = false;  // Q4_K's tiles (gemv_decode_tiles.cuh): dealt and by block both take them
  };
  const Case cases[] = {{"q4_K tiles", GgmlType::Q4_K, GgmlType::Q4_K, 12288, 4096, 1, false, true},
                        {"q4_K tiles", GgmlType::Q4_K, GgmlType::Q4_K, 12288, 4096, 1, true, true},
                        {"q8_0", GgmlType::Q8_0, GgmlType::Q8_0, 12288, 4096, 1, false},
                        {"q8_0", GgmlType::Q8_0, GgmlType::Q8_0, 12288, 4096, 1, true},
                        {"q8_0", GgmlType::Q8_0, GgmlType::Q8_0, 3072, 1024, 1, false},
                        {"q8_0", GgmlType::Q8_0, GgmlType::Q8_0, 3072, 1024, 1, true},
                        {"q8_0", GgmlType::Q8_0, GgmlType::Q8_0, 96, 1024, 1, false},
                        {"q4_K_M", GgmlType::Q4_K, GgmlType::Q6_K, 12288, 4096, 1, true},
                        {"q4_K", GgmlType::Q4_K, GgmlType::Q4_K, 4224, 2048, 1, false},
                        {"q6_K", GgmlType::Q6_K, GgmlType::Q6_K, 3072, 1024, 1, true},
                        {"q5_K tiles", GgmlType::Q5_K, GgmlType::Q5_K, 12288, 4096, 1, false, true},
                        {"q5_K tiles", GgmlType::Q5_K, GgmlType::Q5_K, 12288, 4096, 1, true, true},
                        {"q5_K", GgmlType::Q5_K, GgmlType::Q5_K, 12288, 4096, 1, false},
                        {"q5_K", GgmlType::Q5_K, GgmlType::Q5_K, 12288, 4096, 1, true},
                        {"q5_K_M", GgmlType::Q5_K, GgmlType::Q6_K, 3072, 1024, 1, true},
                        {"q3_K tiles", GgmlType::Q3_K, GgmlType::Q3_K, 12288, 4096, 1, false, true},
                        {"q3_K tiles", GgmlType::Q3_K, GgmlType::Q3_K, 12288, 4096, 1, true, true},
                        {"q3_K", GgmlType::Q3_K, GgmlType::Q3_K, 12288, 4096, 1, true},
                        {"q2_K tiles", GgmlType::Q2_K, GgmlType::Q2_K, 12288, 4096, 1, false, true},
                        {"q2_K tiles", GgmlType::Q2_K, GgmlType::Q2_K, 12288, 4096, 1, true, true},
                        {"q2_K", GgmlType::Q2_K, GgmlType::Q2_K, 12288, 4096, 1, true},
                        {"q8_0", GgmlType::Q8_0, GgmlType::Q8_0, 1024, 512, 4, false}};
  for (const Case& c : cases) {
    const DecodeTiles tiles_before = set_decode_tiles(c.tiles ? DecodeTiles::all : DecodeTiles::off);
    Matrix gate = make_matrix(c.gate, c.n_out, c.k, rng), up = make_matrix(c.up, c.n_out, c.k, rng);
    const WeightMatrix ws[2] = {gate.weights(), up.weights()};
    if (c.tiles && decode_tile_format(c.gate)) {  // Q2_K's, Q3_K's and Q5_K's: not under LATHE_DECODE_K35=0
      EXPECT_GT(decode_tiles_group(ws[0], Activations::int8x2, TileProduct::merged), 0) << c.name;
    }
    const int64_t n = c.rows * c.n_out;
    const std::vector<float> x = random_values(c.rows * c.k, rng), r = random_values(c.k, rng), nw = random_values(c.k, rng);
    DeviceBuffer xd = upload(x), rd = upload(r), wd = upload(nw), sum(c.k * 4);
    for (Activations a : {Activations::int8, Activations::int8x2}) {
      DeviceBuffer q = quantized(xd, c.rows, c.k, a, s);
      DeviceBuffer y_plain(static_cast<size_t>(n) * 4), y_fused(static_cast<size_t>(n) * 4);
      DeviceBuffer q_fused(static_cast<size_t>(quantized_activation_bytes(c.rows, c.n_out, a)));
      DeviceBuffer q_ref(static_cast<size_t>(quantized_activation_bytes(c.rows, c.n_out, a)));
      NormPrologue np;
      np.x = xd.ptr();
      np.y = rd.ptr();
      np.w = wd.ptr();
      np.sum = sum.ptr();
      auto run = [&](CUdeviceptr y, const QuantizedOut& qo) {
        if (c.norm)
          gemv_gate_up_swiglu_norm(ws[0], ws[1], a, np, y, s.handle(), qo);
        else
          gemv_gate_up_swiglu(ws[0], ws[1], a, q.ptr(), y, s.handle(), c.rows, qo);
      };
      if (c.norm && !decode_format(c.gate)) {  // Q2_K, Q3_K, Q5_K off the row walk (LATHE_DECODE_K35=0)
        EXPECT_FALSE(merged_norm_applies(ws, 2, a)) << c.name;
        continue;
      }
      if (c.norm) {
        ASSERT_TRUE(merged_norm_applies(ws, 2, a));
      }
      run(y_plain.ptr(), QuantizedOut{});
      run(y_fused.ptr(), QuantizedOut{q_fused.ptr(), a});
      quantize_activations(y_fused.ptr(), c.rows, c.n_out, a, q_ref.ptr(), s.handle());
      s.synchronize();
      const std::vector<float> yp = download(y_plain, n), yf = download(y_fused, n);
      std::vector<uint8_t> qf(q_fused.bytes()), qr(q_ref.bytes());
      q_fused.download(qf.data(), qf.size());
      q_ref.download(qr.data(), qr.size());
      const std::string what = fmt::format("{} {} x {} ({} rows{}) {}", c.name, c.n_out, c.k, c.rows,
                                           c.norm ? ", norm prologue" : "", activations_name(a));
      EXPECT_EQ(std::memcmp(yp.data(), yf.data(), yp.size() * 4), 0) << what << ": y differs from the dealt form's";
      EXPECT_EQ(qf, qr) << what << ": the epilogue's int8 form is not the quantizer's";
      std::printf("  %s (%s): y and its int8 form the same bits\n", what.c_str(),
                  c.rows == 1 && gate_up_quantizes_in_epilogue(ws[0], ws[1], a) ? "the epilogue" : "the quantizer after");
    }
    set_decode_tiles(tiles_before);
  }
}

// The norm in the merged kernel's prologue (gemv_multi_norm, gemv_gate_up_swiglu_norm) against the
// launches it replaces: add_rms_norm writing the int8 form, then the merged kernel. The sum is the
// same bits (x + y rounded once); the prologue quantizes s w and scales the rows' sums by the norm's
// factor, so the outputs differ only where that rounding (or the norm's sum of squares, added in
// another order) moves a quantized level or the sums' last bits: bound 1e-4 of max|y|. Its _early form
// (two first fills before the wait: NormPrologue::early_fills) gives the same bits as the other.
TEST(GemvMultiGpu, NormPrologueMatchesNormThenMerged) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(41);
  struct Case {
    GgmlType t;
    bool swiglu;
    int64_t n0, n1, n2, k;
  };
  const Case cases[] = {{GgmlType::Q8_0, false, 2048, 512, 512, 2048}, {GgmlType::Q8_0, true, 3072, 3072, 0, 1024},
                        {GgmlType::Q4_K, false, 4096, 1024, 1024, 4096}, {GgmlType::Q6_K, true, 1536, 1536, 0, 8192},
                        {GgmlType::Q8_0, false, 640, 128, 0, 128}};
  std::printf("norm in the prologue: normalized difference from add_rms_norm + merged (bound 1e-4)\n");
  for (const Case& c : cases) {
    const int n = c.swiglu ? 2 : (c.n2 > 0 ? 3 : 2);
    std::vector<Matrix> ms;
    const int64_t outs[3] = {c.n0, c.n1, c.n2};
    for (int i = 0; i < n; ++i) ms.push_back(make_matrix(c.t, outs[i], c.k, rng));
    std::vector<WeightMatrix> ws;
    for (const Matrix& m : ms) ws.push_back(m.weights());
    const std::vector<float> x = random_values(c.k, rng), y = random_values(c.k, rng), w = random_values(c.k, rng);
    DeviceBuffer xd = upload(x), yd = upload(y), wd = upload(w), sum1(c.k * 4), sum2(c.k * 4), h(c.k * 4);
    for (Activations a : {Activations::int8, Activations::int8x2}) {
      ASSERT_TRUE(merged_norm_applies(ws.data(), n, a));
      std::vector<DeviceBuffer> out1, out2;
      std::vector<CUdeviceptr> p1, p2;
      for (int i = 0; i < (c.swiglu ? 1 : n); ++i) {
        out1.emplace_back(static_cast<size_t>(outs[i] * 4));
        out2.emplace_back(static_cast<size_t>(outs[i] * 4));
        p1.push_back(out1.back().ptr());
        p2.push_back(out2.back().ptr());
      }
      DeviceBuffer q(static_cast<size_t>(quantized_activation_bytes(1, c.k, a)));
      // Reference: the launches the prologue replaces.
      sum2.upload(x.data(), x.size() * 4);
      add_rms_norm(sum2.ptr(), h.ptr(), yd.ptr(), wd.ptr(), 1, c.k, 1e-6f, s.handle(), QuantizedOut{q.ptr(), a});
      if (c.swiglu)
        gemv_gate_up_swiglu(ws[0], ws[1], a, q.ptr(), p2[0], s.handle());
      else
        gemv_multi(ws.data(), n, a, q.ptr(), p2.data(), s.handle());
      NormPrologue np;
      np.x = xd.ptr();
      np.y = yd.ptr();
      np.w = wd.ptr();
      np.sum = sum1.ptr();
      np.eps = 1e-6f;
      auto fused = [&](const std::vector<CUdeviceptr>& ys) {
        if (c.swiglu)
          gemv_gate_up_swiglu_norm(ws[0], ws[1], a, np, ys[0], s.handle());
        else
          gemv_multi_norm(ws.data(), n, a, np, ys.data(), s.handle());
      };
      // The _early form (two first fills before the wait, early_fills = 2) into out2's buffers first:
      // the same sums, bit for bit, as the one-fill form run after it into out1's (both compared below).
      std::vector<DeviceBuffer> out3;
      std::vector<CUdeviceptr> p3;
      for (int i = 0; i < (c.swiglu ? 1 : n); ++i) {
        out3.emplace_back(static_cast<size_t>(outs[i] * 4));
        p3.push_back(out3.back().ptr());
      }
      np.early_fills = 2;
      fused(p3);
      np.early_fills = 1;
      fused(p1);
      s.synchronize();
      for (size_t i = 0; i < p1.size(); ++i) {
        const std::vector<float> r1 = download(out1[i], outs[i]), r3 = download(out3[i], outs[i]);
        EXPECT_EQ(std::memcmp(r1.data(), r3.data(), r1.size() * 4), 0) << "the _early form's sums differ";
      }
      const std::vector<float> s1 = download(sum1, c.k), s2 = download(sum2, c.k);
      EXPECT_EQ(std::memcmp(s1.data(), s2.data(), s1.size() * 4), 0) << "the sum";
      double worst = 0;
      for (size_t i = 0; i < p1.size(); ++i) {
        const std::vector<float> r1 = download(out1[i], outs[i]), r2 = download(out2[i], outs[i]);
        double scale = 0;
        for (float v : r2) scale = std::max(scale, std::abs(double(v)));
        worst = std::max(worst, max_diff(r1, r2) / std::max(scale, 1e-30));
      }
      std::printf("  %-5s %s %lld/%lld/%lld x %lld %s: %.2e\n", std::string(ggml_type_name(c.t)).c_str(),
                  c.swiglu ? "gate/up" : "merged ", static_cast<long long>(c.n0), static_cast<long long>(c.n1),
                  static_cast<long long>(c.n2), static_cast<long long>(c.k), std::string(activations_name(a)).c_str(), worst);
      EXPECT_LE(worst, 1e-4) << ggml_type_name(c.t) << " k " << c.k << " " << activations_name(a);
    }
  }
  const WeightMatrix odd[2] = {WeightMatrix{GgmlType::Q8_0, 0, 64, 96}, WeightMatrix{GgmlType::Q8_0, 0, 64, 96}};
  EXPECT_FALSE(merged_norm_applies(odd, 2, Activations::int8x2));  // k % 128 != 0
}

// What the merged kernel does not take goes through the fallback and is still right: several rows,
// the f32 contract, a format without a decode kernel (q5_K), a mix other than q4_K with q6_K.
TEST(GemvMultiGpu, FallbackMatchesCpu) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(23);
  struct Case {
    GgmlType types[3];
    int64_t rows;
    Activations a;
  };
  const Case cases[] = {{{GgmlType::Q8_0, GgmlType::Q8_0, GgmlType::Q8_0}, 2, Activations::int8},
                        {{GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K}, 5, Activations::int8x2},
                        {{GgmlType::Q8_0, GgmlType::Q8_0, GgmlType::Q8_0}, 8, Activations::int8x2},
                        {{GgmlType::Q8_0, GgmlType::Q8_0, GgmlType::Q8_0}, 1, Activations::f32},
                        {{GgmlType::Q5_K, GgmlType::Q5_K, GgmlType::Q6_K}, 1, Activations::int8},
                        {{GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q8_0}, 1, Activations::int8x2}};
  const int64_t k = 2048, n_out[3] = {300, 64, 100};
  std::printf("fallback normalized error vs interpreter on x^\n");
  for (const Case& c : cases) {
    std::vector<Matrix> ms;
    for (int m = 0; m < 3; ++m) ms.push_back(make_matrix(c.types[m], n_out[m], k, rng));
    const std::vector<float> x = random_values(c.rows * k, rng);
    DeviceBuffer xd = upload(x);
    const double bound = c.a == Activations::f32 ? kBoundF32 : kBoundRebuilt;
    const Errors e = check_multi(ms, xd, x, c.rows, c.a, s);
    EXPECT_LE(e.cpu, bound) << type_name(c.types[0]) << " rows=" << c.rows;
    Matrix up = make_matrix(c.types[2], n_out[0], k, rng);
    const Errors g = check_gate_up(ms[0], up, xd, x, c.rows, c.a, s);
    EXPECT_LE(g.cpu, bound) << "gate/up " << type_name(c.types[0]) << " rows=" << c.rows;
    std::printf("  %s,%s,%s rows=%lld %-6s q/k/v %.1e  gate/up %.1e\n", type_name(c.types[0]).c_str(),
                type_name(c.types[1]).c_str(), type_name(c.types[2]).c_str(), static_cast<long long>(c.rows),
                std::string(activations_name(c.a)).c_str(), e.cpu, g.cpu);
  }
}

// Decode speed: weight bytes read per second, each set of matrices rotated through enough copies
// that none is in the 60 MB L2 when read; the launches replayed as one graph; median of 5 replays.
// "products": the launches alone, back to back; "+quantize": each set preceded by the activation
// quantizer, as in a decode step. Columns: separate gemv launches (gate/up: gemv, gemv, swiglu), the
// merged kernel waiting for its predecessor first, and the merged kernel requesting its first weight
// chunks before that wait (the default: it overlaps a small predecessor such as the quantizer).
TEST(GemvMultiGpu, TimingMergedVsSeparate) {
  LATHE_NEED_GPU();
  cuda::Stream s;
  std::mt19937 rng(24);
  const double limit_gbs = 4630;
  struct Case {
    const char* label;
    std::vector<GgmlType> types;
    std::vector<int64_t> n_out;
    int64_t k;
    bool gate_up;
    bool tiles = true;  // Q4_K's tiles where they apply (gemv_decode_tiles.cuh); false: its row walk
  };
  const Case cases[] = {
      {"qwen3-8b q8_0 q/k/v", {GgmlType::Q8_0, GgmlType::Q8_0, GgmlType::Q8_0}, {4096, 1024, 1024}, 4096, false},
      {"qwen3-8b q8_0 gate/up", {GgmlType::Q8_0, GgmlType::Q8_0}, {12288, 12288}, 4096, true},
      {"qwen3-0.6b q8_0 q/k/v", {GgmlType::Q8_0, GgmlType::Q8_0, GgmlType::Q8_0}, {2048, 1024, 1024}, 1024, false},
      {"qwen3-0.6b q8_0 gate/up", {GgmlType::Q8_0, GgmlType::Q8_0}, {3072, 3072}, 1024, true},
      {"qwen3-8b q4_K_M q/k/v", {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K}, {4096, 1024, 1024}, 4096, false},
      {"qwen3-8b q4_K_M gate/up", {GgmlType::Q4_K, GgmlType::Q4_K}, {12288, 12288}, 4096, true},
      {"qwen3-8b q4_K_M g/u rows", {GgmlType::Q4_K, GgmlType::Q4_K}, {12288, 12288}, 4096, true, false},
      {"qwen3-8b q4_K q/k/v", {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q4_K}, {4096, 1024, 1024}, 4096, false},
      {"qwen3-8b q4_K q/k/v rows", {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q4_K}, {4096, 1024, 1024}, 4096, false,
       false},
  };
  std::printf("merged vs separate decode GEMVs: us per set, GB/s of weights, %% of %.0f GB/s\n", limit_gbs);
  for (const Case& c : cases) {
    const DecodeTiles tiles_before = set_decode_tiles(c.tiles ? DecodeTiles::all : DecodeTiles::off);
    int64_t set_bytes = 0;
    for (size_t m = 0; m < c.types.size(); ++m) set_bytes += c.n_out[m] * row_bytes(c.types[m], c.k);
    const int copies = static_cast<int>(std::max<int64_t>(2, (256ll << 20) / set_bytes));
    std::vector<std::vector<uint8_t>> host;
    for (size_t m = 0; m < c.types.size(); ++m) host.push_back(random_matrix(c.types[m], c.n_out[m], c.k, rng));
    std::vector<std::vector<DeviceBuffer>> dev(copies);
    std::vector<std::vector<WeightMatrix>> w(copies);
    for (int i = 0; i < copies; ++i)
      for (size_t m = 0; m < c.types.size(); ++m) {
        dev[i].push_back(upload(host[m]));
        w[i].push_back(WeightMatrix{c.types[m], dev[i].back().ptr(), c.n_out[m], c.k});
      }
    const std::vector<float> x = random_values(c.k, rng);
    DeviceBuffer xd = upload(x);
    std::vector<DeviceBuffer> yd;
    std::vector<CUdeviceptr> yp;
    for (int64_t n : c.n_out) {
      yd.emplace_back(static_cast<size_t>(n) * sizeof(float));
      yp.push_back(yd.back().ptr());
    }
    for (Activations a : {Activations::int8, Activations::int8x2}) {
      DeviceBuffer q(static_cast<size_t>(quantized_activation_bytes(1, c.k, a)));
      quantize_activations(xd.ptr(), 1, c.k, a, q.ptr(), s.handle());
      auto set = [&](int i, bool with_quantizer) {
        if (with_quantizer) quantize_activations(xd.ptr(), 1, c.k, a, q.ptr(), s.handle());
        if (c.gate_up) gemv_gate_up_swiglu(w[i][0], w[i][1], a, q.ptr(), yp[0], s.handle());
        else gemv_multi(w[i].data(), static_cast<int>(w[i].size()), a, q.ptr(), yp.data(), s.handle());
      };
      // [with quantizer][separate, merged waiting first, merged with early weight requests]
      double us[2][3];
      for (int wq = 0; wq < 2; ++wq) {
        for (int v = 0; v < 3; ++v) {
          set_merged_gemv_enabled(v > 0);
          set_merged_gemv_early_weights(v == 2);
          set(0, wq == 1);  // warm up (and the fallback's scratch, made outside the capture)
          cuda::CapturedGraph g;
          g.begin(s);
          for (int i = 0; i < copies; ++i) set(i, wq == 1);
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
          us[wq][v] = 1e3 * ms[2] / copies;
        }
      }
      set_merged_gemv_enabled(true);
      set_merged_gemv_early_weights(true);
      for (int wq = 0; wq < 2; ++wq) {
        std::printf("  %-23s %-6s %-10s", c.label, std::string(activations_name(a)).c_str(), wq ? "+quantize" : "products");
        for (int v = 0; v < 3; ++v) {
          const double gbs = static_cast<double>(set_bytes) / (us[wq][v] * 1e3);
          std::printf("  %s %6.2f us %4.0f GB/s %4.1f%%", v == 0 ? "sep" : v == 1 ? "merged" : "early", us[wq][v], gbs,
                      100 * gbs / limit_gbs);
        }
        std::printf("  x%.2f\n", us[wq][0] / us[wq][2]);
      }
    }
    set_decode_tiles(tiles_before);
  }
}

}  // namespace
}  // namespace lathe::kernels
