// Attention over a KV cache, and appending to the cache. One (row, head) at a time:
//   score_p = cap * tanh(scale * q.k_p / cap)   (or scale * q.k_p without a cap)
//   out     = sum_p exp(score_p) v_p / (sum_p exp(score_p) + exp(sink))
// over the visible slots p: max(0, pos - window + 1) .. pos. Scores, weights and sums are f64.
// Query head h reads kv head h / (n_head / n_head_kv). v's head size may differ from q's and k's
// (the output takes v's).
#include "interp/cpu_ops_internal.h"

#include "gguf/block_format.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lathe {
namespace {

void check_attention_shapes(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                            std::span<const int32_t> positions, const AttentionOptions& options) {
  cpu::require_rank(q, 3, "attention", "q");
  cpu::require_rank(k_cache, 3, "attention", "the k cache");
  cpu::require_rank(v_cache, 3, "attention", "the v cache");
  int64_t n_head = q.dim(1), n_ctx = k_cache.dim(0), n_head_kv = k_cache.dim(1);
  if (k_cache.dim(2) != q.dim(2))
    fail("attention: q {} and the k cache {} have different head sizes", q.shape_string(),
         k_cache.shape_string());
  if (v_cache.dim(0) != n_ctx || v_cache.dim(1) != n_head_kv)
    fail("attention: the k cache {} and the v cache {} differ in slots or heads", k_cache.shape_string(),
         v_cache.shape_string());
  if (n_head_kv == 0 || n_head % n_head_kv != 0)
    fail("attention: q's {} heads are not a multiple of the caches' {} heads ({} and {})", n_head,
         n_head_kv, q.shape_string(), k_cache.shape_string());
  if (static_cast<int64_t>(positions.size()) != q.dim(0))
    fail("attention: {} positions for q of shape {} (one per row)", positions.size(), q.shape_string());
  for (int32_t pos : positions)
    if (pos < 0 || pos >= n_ctx) fail("attention: position {} is outside the cache's {} slots", pos, n_ctx);
  if (options.window < 0) fail("attention: window must be positive, got {}", options.window);
  if (options.cap < 0) fail("attention: cap must be positive, got {}", options.cap);
  if (!options.sinks.empty() && static_cast<int64_t>(options.sinks.size()) != n_head)
    fail("attention: {} sinks for {} heads", options.sinks.size(), n_head);
}

}  // namespace

Tensor attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                 std::span<const int32_t> positions, const AttentionOptions& options) {
  check_attention_shapes(q, k_cache, v_cache, positions, options);
  int64_t rows = q.dim(0), n_head = q.dim(1), d = q.dim(2);
  int64_t n_head_kv = k_cache.dim(1), dv = v_cache.dim(2);
  int64_t group = n_head / n_head_kv;
  double scale = options.scale != 0 ? options.scale : 1.0 / std::sqrt(double(d));
  Tensor out({rows, n_head, dv});

  auto one_head = [&](int64_t r, int64_t h, std::vector<double>& score, std::vector<double>& acc) {
    int64_t kv = h / group;
    int64_t last = positions[r];
    int64_t first = options.window > 0 ? std::max<int64_t>(0, last - options.window + 1) : 0;
    const float* qh = q.data.data() + (r * n_head + h) * d;
    std::vector<float> q16;
    if (options.f16_flash) {
      q16.assign(qh, qh + d);
      for (float& v : q16) v = f16_rounded(v);
      qh = q16.data();
    }
    score.assign(last - first + 1, 0.0);
    double max = options.sinks.empty() ? -std::numeric_limits<double>::infinity() : options.sinks[h];
    for (int64_t p = first; p <= last; ++p) {
      double s = cpu::dot(qh, k_cache.data.data() + (p * n_head_kv + kv) * d, d) * scale;
      if (options.cap > 0) s = options.cap * std::tanh(s / options.cap);
      score[p - first] = s;
      max = std::max(max, s);
    }
    double denominator = options.sinks.empty() ? 0.0 : std::exp(double(options.sinks[h]) - max);
    acc.assign(dv, 0.0);
    for (int64_t p = first; p <= last; ++p) {
      double w = std::exp(score[p - first] - max);
      denominator += w;
      if (options.f16_flash) w = f16_rounded(static_cast<float>(w));
      const float* vp = v_cache.data.data() + (p * n_head_kv + kv) * dv;
      for (int64_t i = 0; i < dv; ++i) acc[i] += w * vp[i];
    }
    float* dst = out.data.data() + (r * n_head + h) * dv;
    for (int64_t i = 0; i < dv; ++i) dst[i] = static_cast<float>(acc[i] / denominator);
  };

  double average_slots = 1;
  for (int32_t pos : positions) average_slots += double(pos) / double(std::max<int64_t>(rows, 1));
  cpu::parallel_for(rows * n_head, average_slots * double(d + dv), [&](int64_t begin, int64_t end) {
    std::vector<double> score, acc;
    for (int64_t i = begin; i < end; ++i) one_head(i / n_head, i % n_head, score, acc);
  });
  return out;
}

void cache_append(Tensor& cache, const Tensor& x, std::span<const int32_t> positions, bool f16) {
  cpu::require_rank(cache, 3, "cache append", "the cache");
  cpu::require_rank(x, 3, "cache append", "x");
  if (x.dim(1) != cache.dim(1) || x.dim(2) != cache.dim(2))
    fail("cache append: rows of {} do not fit the cache {}", x.shape_string(), cache.shape_string());
  if (static_cast<int64_t>(positions.size()) != x.dim(0))
    fail("cache append: {} positions for x of shape {} (one per row)", positions.size(),
         x.shape_string());
  int64_t slot_size = x.dim(1) * x.dim(2);
  for (size_t r = 0; r < positions.size(); ++r) {
    if (positions[r] < 0 || positions[r] >= cache.dim(0))
      fail("cache append: position {} is outside the cache's {} slots", positions[r], cache.dim(0));
    float* slot = cache.row(positions[r]);
    std::copy_n(x.row(r), slot_size, slot);
    if (f16)
      for (int64_t i = 0; i < slot_size; ++i) slot[i] = f16_rounded(slot[i]);
  }
}

}  // namespace lathe
