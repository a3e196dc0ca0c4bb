// Shared by the GPU op tests (test_gpu_*_gpu.cpp): device arrays from host vectors, random tensors,
// the normalized error against the interpreter, and a compact table of results per shape.
#pragma once

#include "interp/cpu_ops.h"
#include "kernels/library.h"
#include "runtime/cuda_driver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace lathe::test {

#define REQUIRE_GPU()                                        \
  do {                                                       \
    std::string why;                                         \
    if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;     \
  } while (0)

template <typename T>
cuda::DeviceBuffer to_device(const std::vector<T>& v) {
  cuda::DeviceBuffer b(std::max<size_t>(v.size() * sizeof(T), 16), "test array");
  if (!v.empty()) b.upload(v.data(), v.size() * sizeof(T));
  return b;
}

template <typename T>
std::vector<T> from_device(const cuda::DeviceBuffer& b, size_t n) {
  std::vector<T> v(n);
  if (n) b.download(v.data(), n * sizeof(T));
  return v;
}

inline std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// max |gpu - cpu| / max |cpu| (0 when both are all zero).
inline double normalized_error(const std::vector<float>& gpu, const std::vector<float>& cpu) {
  EXPECT_EQ(gpu.size(), cpu.size());
  double max_ref = 0, max_err = 0;
  for (size_t i = 0; i < cpu.size() && i < gpu.size(); ++i) {
    max_ref = std::max(max_ref, double(std::fabs(cpu[i])));
    double e = std::fabs(double(gpu[i]) - double(cpu[i]));
    if (!(e <= max_err)) max_err = e;  // NaN sticks
  }
  return max_ref > 0 ? max_err / max_ref : max_err;
}

// One line per case: what it was and its error against the bound; fails the test past the bound.
inline void report(const std::string& op, const std::string& shape, double err, double bound) {
  std::printf("  %-22s %-58s err %.2e  (bound %.0e)%s\n", op.c_str(), shape.c_str(), err, bound,
              err <= bound ? "" : "  FAIL");
  EXPECT_LE(err, bound) << op << " " << shape;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace lathe::test
