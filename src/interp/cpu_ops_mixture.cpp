// Mixture of experts. Each row picks its experts alone (route_top_k); the rows that picked an expert
// are then run through it together, so each expert's matrices are dequantized once per call.
#include "interp/cpu_ops_internal.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>

namespace lathe {
namespace {

void check_mixture_shapes(const Tensor& x, const MatrixRef& router, const MatrixRef& gate,
                          const MatrixRef& up, const MatrixRef& down, const MixtureOptions& options) {
  if (x.shape.empty() || x.dim(-1) != router.n_cols)
    fail("mixture: x {} does not fit the router of {} experts x {} values", x.shape_string(),
         router.n_rows, router.n_cols);
  int64_t n_expert = router.n_rows, n = router.n_cols, n_ff = gate.n_rows;
  auto check = [&](const MatrixRef& m, std::string_view name, int64_t rows, int64_t cols) {
    if (m.n_stack != n_expert || m.n_rows != rows || m.n_cols != cols)
      fail("mixture: {} is {} x {} x {}; with {} experts of {} values and {} hidden it must be "
           "{} x {} x {}",
           name, m.n_stack, m.n_rows, m.n_cols, n_expert, n, n_ff, n_expert, rows, cols);
  };
  check(gate, "gate", n_ff, n);
  check(up, "up", n_ff, n);
  check(down, "down", n, n_ff);
  if (options.k < 1 || options.k > n_expert)
    fail("mixture: k = {} experts of {}: k must be between 1 and {}", options.k, n_expert, n_expert);
}

std::atomic<double> g_routing_margin{1.0};

void note_routing_margin(double margin) {
  double seen = g_routing_margin.load();
  while (margin < seen && !g_routing_margin.compare_exchange_weak(seen, margin)) {
  }
}

}  // namespace

double routing_margin() { return g_routing_margin.load(); }
void reset_routing_margin() { g_routing_margin.store(1.0); }

void route_top_k(std::span<const float> logits, const MixtureOptions& options,
                 std::vector<int32_t>& experts, std::vector<float>& weights) {
  int64_t n = static_cast<int64_t>(logits.size());
  if (options.k < 1 || options.k > n)
    fail("route: k = {} experts of {}: k must be between 1 and {}", options.k, n, n);
  for (int64_t e = 0; e < n; ++e)
    if (std::isnan(logits[e])) fail("route: the router's logit for expert {} is NaN", e);

  // Softmax over all experts (before the top k: Qwen3-MoE's and Mixtral's order).
  double max = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(n);
  double sum = 0;
  for (int64_t e = 0; e < n; ++e) sum += p[e] = std::exp(double(logits[e]) - max);
  for (double& v : p) v /= sum;

  // The top k by logit (softmax keeps the order); equal logits go to the lower index.
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + options.k, order.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  experts.assign(order.begin(), order.begin() + options.k);
  if (options.k < n) {
    float next = logits[order[options.k]], scale = 0.0f;
    for (int64_t i = options.k; i < n; ++i) next = std::max(next, logits[order[i]]);
    for (float v : logits) scale = std::max(scale, std::abs(v));
    if (scale > 0) note_routing_margin((double(logits[order[options.k - 1]]) - next) / scale);
  }

  double kept = 0;
  for (int32_t e : experts) kept += p[e];
  double divisor = options.renormalize ? kept : 1.0;
  weights.resize(options.k);
  for (int64_t i = 0; i < options.k; ++i) weights[i] = static_cast<float>(p[experts[i]] / divisor);
}

Tensor mixture(const Tensor& x, const MatrixRef& router, const MatrixRef& gate, const MatrixRef& up,
               const MatrixRef& down, const MixtureOptions& options) {
  check_mixture_shapes(x, router, gate, up, down, options);
  int64_t n_expert = router.n_rows, n = x.dim(-1), rows = cpu::rows_of(x);
  Tensor flat({rows, n}, x.data);
  Tensor logits = product(flat, router);

  // chosen[e]: the rows that picked expert e, with their weights.
  std::vector<std::vector<int64_t>> chosen_rows(n_expert);
  std::vector<std::vector<float>> chosen_weights(n_expert);
  std::vector<int32_t> experts;
  std::vector<float> weights;
  for (int64_t r = 0; r < rows; ++r) {
    route_top_k({logits.row(r), static_cast<size_t>(n_expert)}, options, experts, weights);
    for (int64_t i = 0; i < options.k; ++i) {
      chosen_rows[experts[i]].push_back(r);
      chosen_weights[experts[i]].push_back(weights[i]);
    }
  }

  // The weighted sum over experts, in f64, experts in index order.
  std::vector<double> sum(rows * n, 0.0);
  for (int64_t e = 0; e < n_expert; ++e) {
    int64_t m = static_cast<int64_t>(chosen_rows[e].size());
    if (m == 0) continue;
    Tensor xe({m, n});
    for (int64_t i = 0; i < m; ++i) std::copy_n(flat.row(chosen_rows[e][i]), n, xe.row(i));
    auto expert_product = options.f16_products ? product_f16 : product;
    Tensor h = swiglu(expert_product(xe, gate.expert(e)), expert_product(xe, up.expert(e)));
    Tensor ye = expert_product(h, down.expert(e));
    for (int64_t i = 0; i < m; ++i) {
      double w = chosen_weights[e][i];
      double* dst = sum.data() + chosen_rows[e][i] * n;
      const float* src = ye.row(i);
      for (int64_t c = 0; c < n; ++c) dst[c] += w * src[c];
    }
  }
  Tensor out(x.shape);
  for (size_t i = 0; i < sum.size(); ++i) out.data[i] = static_cast<float>(sum[i]);
  return out;
}

}  // namespace lathe
