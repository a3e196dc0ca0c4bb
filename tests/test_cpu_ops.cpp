// The CPU reference ops, part 1: Tensor, MatrixRef, gather and products, elementwise ops, norms,
// softmax, layout. Each against hand-computed values, a naive loop, or an identity.
#include "base/error.h"
#include "test_cpu_ops_helpers.h"

#include <chrono>
#include <cmath>
#include <numeric>

namespace lathe {
namespace {

using test::expect_close;
using test::random_tensor;

TEST(CpuOpsTensor, ShapeRowsAndErrors) {
  Tensor t({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.dim(-1), 3);
  EXPECT_EQ(t.row(1)[0], 4);
  EXPECT_EQ(t.shape_string(), "[2, 3]");
  EXPECT_EQ(Tensor({4, 0, 2}).numel(), 0);
  EXPECT_THROW(Tensor({2, 3}, {1, 2}), UserError);
  EXPECT_THROW(Tensor({-1, 3}), UserError);
}

TEST(CpuOpsMatrix, F32RowsAndExperts) {
  auto m = test::f32_matrix(3, 4, 5, 1);
  std::vector<float> row(5);
  m.ref.expert(2).row(3, row.data());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(row[i], m.values[(2 * 4 + 3) * 5 + i]);
  EXPECT_THROW(m.ref.expert(3), UserError);
  EXPECT_THROW(m.ref.row(4, row.data()), UserError);
}

TEST(CpuOpsMatrix, F16Rows) {
  // Values k/8 are exact in f16, so a row must come back bit for bit.
  int64_t rows = 3, cols = 8;
  std::vector<uint16_t> halves(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) halves[i] = f32_to_f16(float(i - 7) / 8.0f);
  MatrixRef m{GgmlType::F16, reinterpret_cast<const uint8_t*>(halves.data()), cols, rows, 1};
  std::vector<float> row(cols);
  for (int64_t r = 0; r < rows; ++r) {
    m.row(r, row.data());
    for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(row[c], float(r * cols + c - 7) / 8.0f);
  }
}

TEST(CpuOpsMatrix, Q8_0RowsAndExperts) {
  // Q8_0: per 32 values an f16 scale d and 32 int8 q; value = d * q. Built by hand here.
  int64_t n_stack = 2, rows = 2, cols = 64, blocks = cols / 32;
  std::vector<uint8_t> bytes(n_stack * rows * blocks * 34);
  auto value = [](int64_t e, int64_t r, int64_t c) {
    return float(0.25 * (e * 2 + r + 1)) * float(int(c % 32) - 16);
  };
  for (int64_t e = 0; e < n_stack; ++e)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < blocks; ++b) {
        uint8_t* block = bytes.data() + ((e * rows + r) * blocks + b) * 34;
        uint16_t d = f32_to_f16(float(0.25 * (e * 2 + r + 1)));
        std::memcpy(block, &d, 2);
        for (int i = 0; i < 32; ++i) block[2 + i] = static_cast<uint8_t>(int8_t(i - 16));
      }
  MatrixRef m{GgmlType::Q8_0, bytes.data(), cols, rows, n_stack};
  std::vector<float> row(cols);
  for (int64_t e = 0; e < n_stack; ++e)
    for (int64_t r = 0; r < rows; ++r) {
      m.expert(e).row(r, row.data());
      for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(row[c], value(e, r, c)) << e << " " << r << " " << c;
    }
  MatrixRef bad{GgmlType::Q8_0, bytes.data(), 48, 1, 1};  // 48 is not a whole number of blocks
  EXPECT_THROW(bad.row(0, row.data()), UserError);
}

TEST(CpuOpsProduct, HandComputed) {
  Tensor x({2, 3}, {1, 2, 3, -1, 0, 2});
  Tensor w({2, 3}, {1, 0, 1, 2, 1, 0.5});
  auto m = test::f32_matrix_of(w);
  Tensor y = product(x, m.ref);
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(y.data, (std::vector<float>{4, 5.5, 1, -1}));
  EXPECT_THROW(product(Tensor({2, 4}), m.ref), UserError);
}

TEST(CpuOpsProduct, SweepAgainstNaiveLoop) {
  for (auto [rows, k, n] : {std::tuple{1, 7, 3}, {3, 64, 33}, {5, 128, 300}, {17, 96, 1000}}) {
    Tensor x = random_tensor({rows, k}, rows * 31 + k);
    auto w = test::f32_matrix(1, n, k, n);
    Tensor y = product(x, w.ref);
    Tensor expected({rows, n});
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int i = 0; i < k; ++i) s += double(x.data[r * k + i]) * w.values[j * k + i];
        expected.data[r * n + j] = float(s);
      }
    expect_close(y, expected, 1e-6, "product");
  }
  // Leading dimensions are kept: [2, 3, k] times w is [2, 3, n].
  Tensor x3 = random_tensor({2, 3, 16}, 5);
  auto w = test::f32_matrix(1, 4, 16, 6);
  Tensor y3 = product(x3, w.ref);
  EXPECT_EQ(y3.shape, (std::vector<int64_t>{2, 3, 4}));
  expect_close(Tensor({6, 4}, y3.data), product(Tensor({6, 16}, x3.data), w.ref), 0);
}

TEST(CpuOpsProduct, F16MatrixEqualsItsF32Values) {
  int64_t n = 40, k = 64;
  auto w32 = test::f32_matrix(1, n, k, 9);
  std::vector<uint16_t> halves(n * k);
  for (int64_t i = 0; i < n * k; ++i) {
    halves[i] = f32_to_f16(w32.values[i]);
    w32.values[i] = f16_to_f32(halves[i]);  // the f32 matrix now holds exactly the f16 values
  }
  std::memcpy(w32.bytes.data(), w32.values.data(), w32.bytes.size());
  MatrixRef w16{GgmlType::F16, reinterpret_cast<const uint8_t*>(halves.data()), k, n, 1};
  Tensor x = random_tensor({3, k}, 10);
  expect_close(product(x, w16), product(x, w32.ref), 0);
}

TEST(CpuOpsProduct, QuantizedMatrixEqualsItsDequantizedValues) {
  // A quantized matrix is read through dequantize_row: its products and rows must be exactly those
  // of the f32 matrix holding the dequantized values. Row strides are the format's row bytes.
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
    int64_t n_stack = 2, n = 6, k = 512;
    auto source = test::f32_matrix(n_stack, n, k, 14);
    int64_t stride = row_bytes(type, k);
    std::vector<uint8_t> bytes(n_stack * n * stride);
    for (int64_t r = 0; r < n_stack * n; ++r)
      quantize_row(type, source.values.data() + r * k, bytes.data() + r * stride, k);
    MatrixRef quantized{type, bytes.data(), k, n, n_stack};
    auto dequantized = source;
    for (int64_t r = 0; r < n_stack * n; ++r)
      dequantize_row(type, bytes.data() + r * stride, dequantized.values.data() + r * k, k);
    std::memcpy(dequantized.bytes.data(), dequantized.values.data(), dequantized.bytes.size());
    dequantized.ref.data = dequantized.bytes.data();  // the copy's own bytes
    Tensor x = random_tensor({3, k}, 15);
    std::string name(block_format(type).name);
    for (int64_t e = 0; e < n_stack; ++e) {
      expect_close(product(x, quantized.expert(e)), product(x, dequantized.ref.expert(e)), 0, name);
      // and the values are near the source's (a broken stride or block would not be)
      expect_close(product(x, quantized.expert(e)), product(x, source.ref.expert(e)), 0.3, name);
    }
    std::vector<int32_t> ids{5, 0};
    Tensor g = gather_rows(quantized.expert(1), ids);
    for (int64_t c = 0; c < k; ++c) EXPECT_EQ(g.data[c], dequantized.values[(n + 5) * k + c]) << name;
  }
}

TEST(CpuOpsProduct, TheF16ProductIsTheProductOfTheRoundedValues) {
  // product_f16 (the lane's f16 GEMM replayed, LaneRounding): x and each dequantized weight rounded to
  // f16, then the interpreter's f32 product: exactly the product of an f16 matrix of those weights and
  // an x holding the rounded values; and not the plain product (the rounding is there).
  int64_t n = 24, k = 256;
  auto source = test::f32_matrix(1, n, k, 31);
  std::vector<uint8_t> bytes(static_cast<size_t>(n * row_bytes(GgmlType::Q4_K, k)));
  for (int64_t r = 0; r < n; ++r)
    quantize_row(GgmlType::Q4_K, source.values.data() + r * k, bytes.data() + r * row_bytes(GgmlType::Q4_K, k), k);
  MatrixRef q4{GgmlType::Q4_K, bytes.data(), k, n, 1};
  std::vector<uint16_t> halves(static_cast<size_t>(n * k));
  std::vector<float> row(static_cast<size_t>(k));
  for (int64_t r = 0; r < n; ++r) {
    q4.row(r, row.data());
    for (int64_t c = 0; c < k; ++c) halves[static_cast<size_t>(r * k + c)] = f32_to_f16(row[static_cast<size_t>(c)]);
  }
  MatrixRef w16{GgmlType::F16, reinterpret_cast<const uint8_t*>(halves.data()), k, n, 1};
  Tensor x = random_tensor({12, k}, 32), x16 = x;
  for (float& v : x16.data) v = f16_rounded(v);
  expect_close(product_f16(x, q4), product(x16, w16), 0);
  const Tensor plain = product(x, q4), rounded = product_f16(x, q4);
  double diff = 0;
  for (size_t i = 0; i < plain.data.size(); ++i) diff = std::max(diff, std::abs(double(plain.data[i]) - rounded.data[i]));
  EXPECT_GT(diff, 0.0);
}

TEST(CpuOpsProduct, GatherRows) {
  auto table = test::f32_matrix(1, 10, 6, 11);
  std::vector<int32_t> ids{3, 0, 9, 3};
  Tensor g = gather_rows(table.ref, ids);
  ASSERT_EQ(g.shape, (std::vector<int64_t>{4, 6}));
  for (int i = 0; i < 4; ++i)
    for (int c = 0; c < 6; ++c) EXPECT_EQ(g.data[i * 6 + c], table.values[ids[i] * 6 + c]);
  std::vector<int32_t> bad{10};
  EXPECT_THROW(gather_rows(table.ref, bad), UserError);
}

// A qwen3-0.6b-shaped output projection: one row of 1024 times 151936 x 1024 (600 MB of f32, and
// the same in q8_0).
// Run with --gtest_also_run_disabled_tests; it prints the time.
TEST(CpuOpsProduct, DISABLED_SpeedOfVocabularyProjection) {
  int64_t n = 151936, k = 1024;
  auto w = test::f32_matrix(1, n, k, 12, 0.02f);
  std::vector<uint8_t> q8(n * row_bytes(GgmlType::Q8_0, k));
  for (int64_t r = 0; r < n; ++r)
    quantize_row(GgmlType::Q8_0, w.values.data() + r * k, q8.data() + r * row_bytes(GgmlType::Q8_0, k), k);
  Tensor x = random_tensor({1, k}, 13);
  for (MatrixRef m : {w.ref, MatrixRef{GgmlType::Q8_0, q8.data(), k, n, 1}}) {
    auto start = std::chrono::steady_clock::now();
    Tensor y = product(x, m);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("product 1x1024 by %s 151936x1024: %.3f s\n", std::string(block_format(m.type).name).c_str(), seconds);
    EXPECT_EQ(y.dim(1), n);
  }
}

TEST(CpuOpsElementwise, SameShapeAndBroadcast) {
  Tensor a({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b({2, 3}, {6, 5, 4, 3, 2, 1});
  Tensor v({3}, {1, 2, 4});
  EXPECT_EQ(add(a, b).data, (std::vector<float>(6, 7)));
  EXPECT_EQ(subtract(a, v).data, (std::vector<float>{0, 0, -1, 3, 3, 2}));
  EXPECT_EQ(multiply(a, v).data, (std::vector<float>{1, 4, 12, 4, 10, 24}));
  EXPECT_EQ(divide(a, v).data, (std::vector<float>{1, 1, 0.75, 4, 2.5, 1.5}));
  EXPECT_EQ(scale(a, -0.5).data, (std::vector<float>{-0.5, -1, -1.5, -2, -2.5, -3}));
}

TEST(CpuOpsElementwise, MismatchNamesBothShapes) {
  Tensor a({2, 3}), b({2}), c({3, 2});
  for (const Tensor* other : {&b, &c}) {
    try {
      add(a, *other);
      FAIL() << "no error";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(other->shape_string()), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(swiglu(a, Tensor({3})), UserError);
}

TEST(CpuOpsElementwise, Activations) {
  Tensor x({5}, {-2, -0.5, 0, 1, 3});
  for (int i = 0; i < 5; ++i) {
    double v = x.data[i], s = 1 / (1 + std::exp(-v));
    EXPECT_FLOAT_EQ(sigmoid(x).data[i], float(s));
    EXPECT_FLOAT_EQ(silu(x).data[i], float(v * s));
    EXPECT_FLOAT_EQ(relu(x).data[i], float(std::max(v, 0.0)));
  }
  // Known values of the tanh-approximated gelu (not erf's 0.8413447 at 1).
  EXPECT_NEAR(gelu(Tensor({1}, {1})).data[0], 0.8411920, 1e-7);
  EXPECT_NEAR(gelu(Tensor({1}, {-3})).data[0], -0.0036373, 1e-7);
  EXPECT_EQ(gelu(Tensor({1}, {0})).data[0], 0);
  Tensor g = random_tensor({4, 8}, 3), u = random_tensor({4, 8}, 4);
  expect_close(swiglu(g, u), multiply(silu(g), u), 1e-7);
  Tensor big({3}, {-1000, 0.1f, 1000});
  Tensor capped = soft_cap(big, 30);
  EXPECT_FLOAT_EQ(capped.data[0], -30);
  EXPECT_FLOAT_EQ(capped.data[1], float(30 * std::tanh(double(0.1f) / 30)));  // 0.1 - 3.7e-7
  EXPECT_FLOAT_EQ(capped.data[2], 30);
}

TEST(CpuOpsNorm, RmsNormHandComputed) {
  Tensor x({2, 2}, {3, 4, 1, 1});
  Tensor w({2}, {1, 2});
  Tensor y = rms_norm(x, w, 0);
  double inv = 1 / std::sqrt(12.5);
  EXPECT_FLOAT_EQ(y.data[0], float(3 * inv));
  EXPECT_FLOAT_EQ(y.data[1], float(8 * inv));
  EXPECT_FLOAT_EQ(y.data[2], 1);
  EXPECT_FLOAT_EQ(y.data[3], 2);
  Tensor no_weight = rms_norm(x, Tensor(), 1e-6);
  EXPECT_NEAR(no_weight.data[1], 4 / std::sqrt(12.5 + 1e-6), 1e-7);
  EXPECT_THROW(rms_norm(x, Tensor({3}), 1e-6), UserError);
}

TEST(CpuOpsNorm, RmsNormPerHeadEqualsPerRowOfHeads) {
  Tensor x = random_tensor({3, 4, 16}, 21, 2.0f), w = random_tensor({16}, 22);
  Tensor per_head = rms_norm(x, w, 1e-6);
  Tensor flat = rms_norm(Tensor({12, 16}, x.data), w, 1e-6);
  EXPECT_EQ(per_head.data, flat.data);
  // Each head of the unweighted norm has mean square 1.
  Tensor unit = rms_norm(x, Tensor(), 0);
  for (int h = 0; h < 12; ++h) {
    double s = 0;
    for (int i = 0; i < 16; ++i) s += double(unit.data[h * 16 + i]) * unit.data[h * 16 + i];
    EXPECT_NEAR(s / 16, 1.0, 1e-6);
  }
}

TEST(CpuOpsNorm, LayerNorm) {
  Tensor x({1, 4}, {1, 2, 3, 6});  // mean 3, variance (4 + 1 + 0 + 9) / 4 = 3.5
  Tensor y = layer_norm(x, Tensor({4}, {1, 1, 2, 1}), Tensor({4}, {0, 1, 0, 0}), 0);
  double inv = 1 / std::sqrt(3.5);
  EXPECT_FLOAT_EQ(y.data[0], float(-2 * inv));
  EXPECT_FLOAT_EQ(y.data[1], float(-1 * inv + 1));
  EXPECT_FLOAT_EQ(y.data[2], 0);
  EXPECT_FLOAT_EQ(y.data[3], float(3 * inv));
}

TEST(CpuOpsNorm, Softmax) {
  Tensor x({1, 2}, {0, float(std::log(2.0))});
  Tensor y = softmax(x);
  EXPECT_FLOAT_EQ(y.data[0], 1.0f / 3);
  EXPECT_FLOAT_EQ(y.data[1], 2.0f / 3);
  for (auto [rows, n] : {std::pair{1, 1}, {3, 7}, {4, 1000}}) {
    Tensor r = random_tensor({rows, n}, n, 10.0f);
    Tensor p = softmax(r);
    for (int i = 0; i < rows; ++i) {
      double s = 0;
      for (int j = 0; j < n; ++j) s += p.data[i * n + j];
      EXPECT_NEAR(s, 1.0, 1e-6);
    }
    expect_close(softmax(add(r, Tensor({int64_t(n)}, std::vector<float>(n, 50.0f)))), p, 1e-5,
                 "softmax is shift invariant");
  }
  Tensor masked({3}, {-INFINITY, 1, -INFINITY});
  EXPECT_EQ(softmax(masked).data, (std::vector<float>{0, 1, 0}));
}

TEST(CpuOpsLayout, ArgmaxTransposeHeads) {
  Tensor x({3, 4}, {1, 5, 5, 2, -1, -3, -1, -2, 0, NAN, 7, 7});
  EXPECT_EQ(argmax(x), (std::vector<int32_t>{1, 0, 2}));
  Tensor t = transpose(Tensor({2, 3}, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(t.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(t.data, (std::vector<float>{1, 4, 2, 5, 3, 6}));
  Tensor r = random_tensor({2, 12}, 7);
  Tensor heads = split_heads(r, 3);
  EXPECT_EQ(heads.shape, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(heads.data[1 * 12 + 2 * 4 + 1], r.data[1 * 12 + 9]);
  EXPECT_EQ(join_heads(heads).data, r.data);
  EXPECT_EQ(join_heads(heads).shape, r.shape);
  Tensor slice = head_slice(heads, 1, 2);
  EXPECT_EQ(slice.shape, (std::vector<int64_t>{2, 2, 4}));
  for (int row = 0; row < 2; ++row)
    for (int i = 0; i < 8; ++i) EXPECT_EQ(slice.data[row * 8 + i], r.data[row * 12 + 4 + i]);
  EXPECT_THROW(split_heads(r, 5), UserError);
  EXPECT_THROW(head_slice(heads, 2, 2), UserError);
}

}  // namespace
}  // namespace lathe
