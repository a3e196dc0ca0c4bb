// Elementwise ops. Each value is computed in f64 from f32 operands and rounded once to f32 (for + - * /
// that is the correctly rounded f32 result).
#include "interp/cpu_ops_internal.h"

#include <cmath>
#include <numbers>

namespace lathe {
namespace {

// b has a's shape, or is a vector of a's last dimension repeated over every row of a.
template <typename F>
Tensor binary(const Tensor& a, const Tensor& b, std::string_view op, F f) {
  bool same = a.shape == b.shape;
  bool vector = !a.shape.empty() && b.shape.size() == 1 && b.dim(0) == a.dim(-1);
  if (!same && !vector)
    fail("{}: shapes {} and {} do not match (the second must have the first's shape or be a vector "
         "of its last dimension)",
         op, a.shape_string(), b.shape_string());
  Tensor out(a.shape);
  int64_t n = static_cast<int64_t>(a.data.size());
  int64_t period = same ? n : b.dim(0);
  for (int64_t i = 0; i < n; ++i)
    out.data[i] = static_cast<float>(f(double(a.data[i]), double(b.data[period ? i % period : 0])));
  return out;
}

template <typename F>
Tensor unary(const Tensor& x, F f) {
  Tensor out(x.shape);
  for (size_t i = 0; i < x.data.size(); ++i) out.data[i] = static_cast<float>(f(double(x.data[i])));
  return out;
}

double sigmoid_of(double v) { return 1.0 / (1.0 + std::exp(-v)); }
double silu_of(double v) { return v * sigmoid_of(v); }

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  return binary(a, b, "add", [](double x, double y) { return x + y; });
}
Tensor subtract(const Tensor& a, const Tensor& b) {
  return binary(a, b, "subtract", [](double x, double y) { return x - y; });
}
Tensor multiply(const Tensor& a, const Tensor& b) {
  return binary(a, b, "multiply", [](double x, double y) { return x * y; });
}
Tensor divide(const Tensor& a, const Tensor& b) {
  return binary(a, b, "divide", [](double x, double y) { return x / y; });
}

Tensor scale(const Tensor& x, double s) {
  return unary(x, [s](double v) { return v * s; });
}

Tensor silu(const Tensor& x) { return unary(x, silu_of); }

Tensor gelu(const Tensor& x) {
  const double c = std::sqrt(2.0 / std::numbers::pi);
  return unary(x, [c](double v) { return 0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v))); });
}

Tensor sigmoid(const Tensor& x) { return unary(x, sigmoid_of); }

Tensor relu(const Tensor& x) {
  return unary(x, [](double v) { return v > 0 ? v : 0.0; });
}

// silu(gate) * up, the two rounded once together (gate and up must have one shape: no broadcast).
Tensor swiglu(const Tensor& gate, const Tensor& up) {
  if (gate.shape != up.shape)
    fail("swiglu: gate {} and up {} must have the same shape", gate.shape_string(), up.shape_string());
  return binary(gate, up, "swiglu", [](double g, double u) { return silu_of(g) * u; });
}

Tensor soft_cap(const Tensor& x, double cap) {
  if (!(cap > 0)) fail("soft cap must be positive, got {}", cap);
  return unary(x, [cap](double v) { return cap * std::tanh(v / cap); });
}

}  // namespace lathe
