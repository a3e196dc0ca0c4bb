// Shared by the CPU op tests: random tensors and matrices held in test-owned storage.
#pragma once

#include "gguf/block_format.h"
#include "interp/cpu_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace lathe::test {

inline Tensor random_tensor(std::vector<int64_t> shape, uint32_t seed, float scale = 1.0f) {
  Tensor t(std::move(shape));
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  for (float& v : t.data) v = dist(gen);
  return t;
}

// An f32 checkpoint matrix (or a stack of them) whose bytes live in `bytes`.
struct OwnedMatrix {
  std::vector<uint8_t> bytes;
  MatrixRef ref;
  std::vector<float> values;  // the f32 values, [n_stack][n_rows][n_cols]
};

inline OwnedMatrix f32_matrix(int64_t n_stack, int64_t n_rows, int64_t n_cols, uint32_t seed,
                              float scale = 1.0f) {
  OwnedMatrix m;
  m.values = random_tensor({n_stack, n_rows, n_cols}, seed, scale).data;
  m.bytes.resize(m.values.size() * sizeof(float));
  std::memcpy(m.bytes.data(), m.values.data(), m.bytes.size());
  m.ref = {GgmlType::F32, m.bytes.data(), n_cols, n_rows, n_stack};
  return m;
}

inline OwnedMatrix f32_matrix_of(const Tensor& t) {  // t [n_rows, n_cols] or [n_stack, n_rows, n_cols]
  OwnedMatrix m;
  m.values = t.data;
  m.bytes.resize(m.values.size() * sizeof(float));
  std::memcpy(m.bytes.data(), m.values.data(), m.bytes.size());
  bool stack = t.shape.size() == 3;
  m.ref = {GgmlType::F32, m.bytes.data(), t.dim(-1), t.dim(-2), stack ? t.dim(0) : 1};
  return m;
}

// max |a - b| <= tol * max(1, max |b|)
inline void expect_close(const Tensor& a, const Tensor& b, double tol, const std::string& what = "") {
  ASSERT_EQ(a.shape, b.shape) << what;
  double max_b = 1, max_err = 0;
  for (float v : b.data) max_b = std::max(max_b, double(std::fabs(v)));
  size_t worst = 0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    double err = std::fabs(double(a.data[i]) - double(b.data[i]));
    if (!(err <= max_err)) worst = i, max_err = err;
  }
  EXPECT_LE(max_err, tol * max_b) << what << " worst at " << worst << ": " << a.data[worst] << " vs "
                                  << b.data[worst];
}

}  // namespace lathe::test
