// Shared by the f16 tensor-core GEMM tests (tests/test_gemm_f16_gpu.cpp, tests/test_gemm_wgmma_gpu.cpp):
// a fast generator for large random matrices, which outputs of a large product to check, and their
// f64 reference.
#pragma once

#include "gguf/block_format.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace lathe::kernels::f16_test {

// The bound on max|gpu - ref| / max|ref| per shape and row count; kBoundMany where >= 16k outputs are
// compared (gemm_f16_launch.h: two f16 roundings a term, adding up like the terms).
constexpr double kBound = 1e-3, kBoundMany = 5e-4;
inline const GgmlType kFormats[] = {GgmlType::F16,  GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K,
                                    GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

// splitmix64: random bytes for matrices of hundreds of MB in seconds.
struct FastRng {
  using result_type = uint64_t;
  uint64_t s;
  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return ~uint64_t{0}; }
  uint64_t operator()() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

inline std::string name_of(GgmlType t) { return std::string(ggml_type_name(t)); }

// All outputs of a small matrix; of a large one the first and last 64, both sides of every 128th
// (tile edges) and 96 random ones.
inline std::vector<int64_t> checked_outputs(int64_t n_out, int64_t k, FastRng& rng) {
  std::vector<int64_t> o;
  if (n_out * k <= (int64_t{1} << 20) || n_out <= 256) {
    for (int64_t i = 0; i < n_out; ++i) o.push_back(i);
    return o;
  }
  for (int64_t i = 0; i < 64; ++i) o.push_back(i), o.push_back(n_out - 1 - i);
  for (int64_t i = 128; i < n_out; i += 128) o.push_back(i - 1), o.push_back(i);
  for (int i = 0; i < 96; ++i) o.push_back(static_cast<int64_t>(rng() % n_out));
  std::sort(o.begin(), o.end());
  o.erase(std::unique(o.begin(), o.end()), o.end());
  return o;
}

// ref [rows][outs.size()] = x . dequantize_row(W)[outs]^T in f64, rows split over threads.
inline std::vector<double> reference(const std::vector<uint8_t>& m, GgmlType t, int64_t k, const std::vector<int64_t>& outs,
                              const std::vector<float>& x, int64_t rows) {
  const int64_t rb = row_bytes(t, k), n = static_cast<int64_t>(outs.size());
  std::vector<double> w(static_cast<size_t>(n * k));
  std::vector<float> row(static_cast<size_t>(k));
  for (int64_t i = 0; i < n; ++i) {
    dequantize_row(t, &m[static_cast<size_t>(outs[i] * rb)], row.data(), k);
    std::copy(row.begin(), row.end(), w.begin() + i * k);
  }
  std::vector<double> ref(static_cast<size_t>(rows * n));
  const int n_threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int p = 0; p < n_threads; ++p)
    pool.emplace_back([&, p] {
      std::vector<double> xr(static_cast<size_t>(k));
      for (int64_t r = p; r < rows; r += n_threads) {
        for (int64_t i = 0; i < k; ++i) xr[i] = x[r * k + i];
        for (int64_t o = 0; o < n; ++o) {
          const double* wo = &w[o * k];
          double s = 0;
          for (int64_t i = 0; i < k; ++i) s += xr[i] * wo[i];
          ref[r * n + o] = s;
        }
      }
    });
  for (std::thread& th : pool) th.join();
  return ref;
}

// max |y - ref| / max |ref| over the checked outputs `outs` of rows 0 .. rows - 1 of y [.][n_out],
// ref as reference() gives it ([rows][outs]); a non-finite difference gives infinity.
inline double checked_error(const std::vector<float>& y, int64_t n_out, const std::vector<double>& ref,
                            const std::vector<int64_t>& outs, int64_t rows) {
  double e = 0, scale = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < outs.size(); ++i) {
      const double c = ref[r * outs.size() + i], d = std::abs(double(y[r * n_out + outs[i]]) - c);
      e = std::isfinite(d) ? std::max(e, d) : INFINITY;
      scale = std::max(scale, std::abs(c));
    }
  return scale > 0 ? e / scale : e;
}

// y holds rows + 1 rows of n_out, all NaN bytes (0xFF) before the product: how many of the first
// rows' outputs it left unwritten (still not finite), and how many of the guard row it wrote.
struct GuardedOutput {
  size_t unwritten = 0, overwritten = 0;
};
inline GuardedOutput guarded_output(const std::vector<float>& y, int64_t rows, int64_t n_out) {
  GuardedOutput g;
  for (int64_t i = 0; i < rows * n_out; ++i) g.unwritten += !std::isfinite(y[static_cast<size_t>(i)]);
  for (int64_t i = rows * n_out; i < (rows + 1) * n_out; ++i) {
    uint32_t u;
    std::memcpy(&u, &y[static_cast<size_t>(i)], 4);
    g.overwritten += u != 0xFFFFFFFFu;
  }
  return g;
}

}  // namespace lathe::kernels::f16_test
