// Shared by the GPU tests of the products (test_gemv_gpu, test_gemm_gpu, test_gemv_multi_gpu,
// test_moe_gpu, test_moe_prefill_gpu): random matrices in a block format, random activations, device
// buffers that are readable past their end as the kernels need, x^ rebuilt on the host from the
// quantizer's bytes, and f64 products with their rounding scale.
#pragma once

#include "gguf/block_format.h"
#include "interp/cpu_ops.h"
#include "kernels/activations.h"
#include "runtime/cuda_driver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace lathe::kernels::test {

#define LATHE_NEED_GPU()                                       \
  std::string why;                                             \
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;

// And Hopper's wgmma (the sm_90a module); the including test includes kernels/gemm_wgmma_launch.h.
#define LATHE_NEED_WGMMA()                                     \
  LATHE_NEED_GPU();                                            \
  if (!gemm_wgmma_available(&why)) GTEST_SKIP() << why;

// The median time in ms of `launch` on s over `reps` timed launches (odd: the middle one; even: the
// mean of the middle two), after one warm-up launch and settle() (a synchronize, or a guarded one).
template <class Launch, class Settle>
double median_ms(cuda::Stream& s, int reps, Launch&& launch, Settle&& settle) {
  launch();
  settle();
  std::vector<float> ms;
  for (int rep = 0; rep < reps; ++rep) {
    cuda::EventTimer timer;
    timer.start(s);
    launch();
    ms.push_back(timer.stop(s));
  }
  std::sort(ms.begin(), ms.end());
  return reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
}

// Microseconds a launch sequence takes inside a CUDA graph: record(0) once outside it (warm-up, and
// any scratch the launchers make outside a capture), then record(0) .. record(copies - 1) captured
// into one graph, replayed once to warm and 7 times timed: the median replay over `copies`.
// record(i) enqueues on s.
template <class Record>
double graph_median_us(cuda::Stream& s, int copies, Record&& record) {
  record(0);
  s.synchronize();
  cuda::CapturedGraph g;
  g.begin(s);
  for (int i = 0; i < copies; ++i) record(i);
  g.end(s);
  g.replay(s);
  std::vector<float> ms;
  for (int rep = 0; rep < 7; ++rep) {
    cuda::EventTimer timer;
    timer.start(s);
    g.replay(s);
    ms.push_back(timer.stop(s));
  }
  std::sort(ms.begin(), ms.end());
  return 1e3 * ms[3] / copies;
}

inline void put_f16(uint8_t* p, float v) {
  const uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

// A rows x k matrix in format t: the float formats from uniform values; the quantized ones as random
// bytes (every level, scale and bit pattern) with their f16 scales set to finite, moderate values.
template <class Rng>
std::vector<uint8_t> random_matrix(GgmlType t, int64_t rows, int64_t k, Rng& rng) {
  const BlockFormat& f = block_format(t);
  const int64_t rb = row_bytes(t, k);
  std::vector<uint8_t> m(static_cast<size_t>(rows * rb));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f), scale(0.002f, 0.02f);
  if (!f.quantized) {
    std::vector<float> v(static_cast<size_t>(k));
    for (int64_t r = 0; r < rows; ++r) {
      for (float& x : v) x = u(rng);
      quantize_row(t, v.data(), m.data() + r * rb, k);
    }
    return m;
  }
  for (uint8_t& b : m) b = static_cast<uint8_t>(rng());
  std::vector<int> d_at, m_at;  // offsets of the f16 scales (d) and mins (m) in a block
  switch (t) {
    case GgmlType::Q4_1: case GgmlType::Q5_1: d_at = {0}; m_at = {2}; break;
    case GgmlType::Q2_K: d_at = {80}; m_at = {82}; break;
    case GgmlType::Q3_K: d_at = {108}; break;
    case GgmlType::Q4_K: case GgmlType::Q5_K: d_at = {0, 2}; break;
    case GgmlType::Q6_K: d_at = {208}; break;
    default: d_at = {0}; break;
  }
  for (size_t b = 0; b < m.size(); b += static_cast<size_t>(f.block_bytes)) {
    for (int o : d_at) put_f16(&m[b + o], scale(rng));
    for (int o : m_at) put_f16(&m[b + o], 0.05f * u(rng));
  }
  return m;
}

template <class Rng>
std::vector<float> random_values(int64_t n, Rng& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

// DeviceBuffer's upload and zero run on the legacy stream, which our non-blocking streams do not wait
// for (an upload from pageable memory may return before its data lands): a synchronous read-back of
// one byte on the legacy stream waits until they are done.
inline void settle(const cuda::DeviceBuffer& b) {
  uint8_t probe;
  b.download(&probe, 1);
}

inline cuda::DeviceBuffer upload(const void* data, size_t bytes) {
  cuda::DeviceBuffer b(bytes + 16);  // weights are read up to the next 16-byte line
  b.zero();
  b.upload(data, bytes);
  settle(b);
  return b;
}

template <class T>
cuda::DeviceBuffer upload(const std::vector<T>& v) { return upload(v.data(), v.size() * sizeof(T)); }

template <class T = float>
std::vector<T> download(const cuda::DeviceBuffer& b, size_t n) {
  std::vector<T> v(n);
  b.download(v.data(), n * sizeof(T));
  return v;
}

// x^ [rows][k] from the quantizer's bytes (activations.h's layout): d1 q1 + d2 q2 per value.
inline std::vector<float> rebuilt_x(const std::vector<uint8_t>& q, int64_t rows, int64_t k, Activations a) {
  const int8_t* q1 = reinterpret_cast<const int8_t*>(q.data());
  const int8_t* q2 = a == Activations::int8x2 ? q1 + rows * k : nullptr;
  const float* ds = reinterpret_cast<const float*>(q.data() + rows * k * (q2 ? 2 : 1));
  std::vector<float> x(static_cast<size_t>(rows * k));
  for (int64_t i = 0; i < rows * k; ++i)
    x[i] = static_cast<float>(double(ds[4 * (i / 32)]) * q1[i] + (q2 ? double(ds[4 * (i / 32) + 1]) * q2[i] : 0.0));
  return x;
}

// y = W x for one row in f64, with the f32 rounding scale sqrt(sum (w_i x_i)^2) per output.
inline void product_terms(const MatrixRef& w, const float* x, std::vector<double>& y, std::vector<double>& terms) {
  y.assign(static_cast<size_t>(w.n_rows), 0.0);
  terms.assign(static_cast<size_t>(w.n_rows), 0.0);
  std::vector<float> row(static_cast<size_t>(w.n_cols));
  for (int64_t o = 0; o < w.n_rows; ++o) {
    w.row(o, row.data());
    double sum = 0, s2 = 0;
    for (int64_t i = 0; i < w.n_cols; ++i) {
      const double p = double(row[i]) * x[i];
      sum += p;
      s2 += p * p;
    }
    y[o] = sum;
    terms[o] = std::sqrt(s2);
  }
}

}  // namespace lathe::kernels::test
