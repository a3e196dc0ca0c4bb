// Norms and softmax over the last dimension. Each row alone: means and sums in f64, one rounding to
// f32 per value. A norm of x [.., heads, head_dim] with a weight of head_dim values is per head.
#include "interp/cpu_ops_internal.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lathe {

Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps) {
  if (x.shape.empty()) fail("rms norm: x must have at least one dimension");
  int64_t n = x.dim(-1);
  cpu::require_vector_or_empty(weight, n, "rms norm", "weight", x);
  Tensor out(x.shape);
  for (int64_t r = 0; r < cpu::rows_of(x); ++r) {
    const float* xr = x.data.data() + r * n;
    float* yr = out.data.data() + r * n;
    double mean_square = cpu::dot(xr, xr, n) / double(n);
    double inv = 1.0 / std::sqrt(mean_square + eps);
    for (int64_t i = 0; i < n; ++i) {
      double w = weight.data.empty() ? 1.0 : double(weight.data[i]);
      yr[i] = static_cast<float>(double(xr[i]) * inv * w);
    }
  }
  return out;
}

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  if (x.shape.empty()) fail("layer norm: x must have at least one dimension");
  int64_t n = x.dim(-1);
  cpu::require_vector_or_empty(weight, n, "layer norm", "weight", x);
  cpu::require_vector_or_empty(bias, n, "layer norm", "bias", x);
  Tensor out(x.shape);
  for (int64_t r = 0; r < cpu::rows_of(x); ++r) {
    const float* xr = x.data.data() + r * n;
    float* yr = out.data.data() + r * n;
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += xr[i];
    double mean = sum / double(n);
    double square_sum = 0;  // the variance from centred values, not E[x^2] - mean^2 (no cancellation)
    for (int64_t i = 0; i < n; ++i) square_sum += (xr[i] - mean) * (xr[i] - mean);
    double inv = 1.0 / std::sqrt(square_sum / double(n) + eps);
    for (int64_t i = 0; i < n; ++i) {
      double w = weight.data.empty() ? 1.0 : double(weight.data[i]);
      double b = bias.data.empty() ? 0.0 : double(bias.data[i]);
      yr[i] = static_cast<float>((xr[i] - mean) * inv * w + b);
    }
  }
  return out;
}

// exp(x - max) / sum exp(x - max). A row of only -inf has no distribution and comes out NaN.
Tensor softmax(const Tensor& x) {
  if (x.shape.empty()) fail("softmax: x must have at least one dimension");
  int64_t n = x.dim(-1);
  Tensor out(x.shape);
  std::vector<double> e(n);
  for (int64_t r = 0; r < cpu::rows_of(x); ++r) {
    const float* xr = x.data.data() + r * n;
    float* yr = out.data.data() + r * n;
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < n; ++i) max = std::max(max, double(xr[i]));
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += e[i] = std::exp(double(xr[i]) - max);
    for (int64_t i = 0; i < n; ++i) yr[i] = static_cast<float>(e[i] / sum);
  }
  return out;
}

}  // namespace lathe
