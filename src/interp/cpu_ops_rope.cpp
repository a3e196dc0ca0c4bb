// Rotary position embedding. Pair j of a head (j < n_rot / 2) turns by the angle
//   theta_j = position * freq_j,   freq_j = base^(-2j / n_rot)
// with freq_j adjusted by the frequency scaling and divided by the frequency factors. The pair is (2j, 2j + 1) in normal order (ggml's
// default, GGUF llama) and (j, j + n_rot / 2) in neox order (GGUF qwen2, qwen3; HF's rotate_half).
// Dims n_rot and above pass through (partial rotary). Angles, sines and cosines are f64.
#include "interp/cpu_ops_internal.h"

#include <cmath>
#include <numbers>

namespace lathe {

// The frequency of each pair after scaling (HF's _compute_llama3_parameters for "llama3").
std::vector<double> rope_frequencies(int64_t n_rot, double base, const RopeFreqScaling& scaling) {
  std::vector<double> freq(n_rot / 2);
  for (int64_t j = 0; j < n_rot / 2; ++j) freq[j] = std::pow(base, -2.0 * double(j) / double(n_rot));
  if (scaling.kind == "llama3") {
    double factor = scaling.factor, low = scaling.low_freq_factor, high = scaling.high_freq_factor;
    double context = double(scaling.original_context);
    if (!(factor > 0) || !(high > low) || !(context > 0))
      fail("rope llama3 scaling needs factor > 0, high_freq_factor > low_freq_factor and an original "
           "context > 0; got factor {}, low {}, high {}, context {}",
           factor, low, high, scaling.original_context);
    for (double& f : freq) {
      double wavelen = 2 * std::numbers::pi / f;
      if (wavelen < context / high) continue;  // high frequencies are kept
      if (wavelen > context / low) {
        f /= factor;  // low frequencies are slowed by the factor
      } else {
        double smooth = (context / wavelen - low) / (high - low);
        f = (1 - smooth) * f / factor + smooth * f;
      }
    }
  } else if (scaling.kind != "none" && scaling.kind != "linear") {
    fail("rope frequency scaling '{}' is not known (none, linear, llama3)", scaling.kind);
  }
  if (!scaling.freq_factors.empty()) {
    if (static_cast<int64_t>(scaling.freq_factors.size()) != n_rot / 2)
      fail("rope: {} frequency factors for {} rotated pairs", scaling.freq_factors.size(), n_rot / 2);
    for (int64_t j = 0; j < n_rot / 2; ++j) freq[j] /= double(scaling.freq_factors[j]);
  }
  return freq;
}

namespace {


}  // namespace

Tensor rope(const Tensor& x, std::span<const int32_t> positions, int64_t n_rot, double base,
            RopeOrder order, const RopeFreqScaling& scaling) {
  cpu::require_rank(x, 3, "rope", "x");
  int64_t rows = x.dim(0), heads = x.dim(1), d = x.dim(2);
  if (static_cast<int64_t>(positions.size()) != rows)
    fail("rope: {} positions for x of shape {} (one per row)", positions.size(), x.shape_string());
  if (n_rot <= 0 || n_rot % 2 != 0 || n_rot > d)
    fail("rope: n_rot {} must be even, positive and at most the head size {}", n_rot, d);
  if (!(base > 0)) fail("rope: base must be positive, got {}", base);
  double position_scale = 1.0;
  if (scaling.kind == "linear") {
    if (!(scaling.factor > 0)) fail("rope linear scaling needs factor > 0, got {}", scaling.factor);
    position_scale = 1.0 / scaling.factor;
  }
  std::vector<double> freq = rope_frequencies(n_rot, base, scaling);

  Tensor out = x;  // dims >= n_rot stay as they are
  int64_t half = n_rot / 2;
  for (int64_t r = 0; r < rows; ++r) {
    double position = double(positions[r]) * position_scale;
    for (int64_t h = 0; h < heads; ++h) {
      const float* src = x.data.data() + (r * heads + h) * d;
      float* dst = out.data.data() + (r * heads + h) * d;
      for (int64_t j = 0; j < half; ++j) {
        int64_t i0 = order == RopeOrder::normal ? 2 * j : j;
        int64_t i1 = order == RopeOrder::normal ? 2 * j + 1 : j + half;
        double theta = position * freq[j];
        double c = std::cos(theta), s = std::sin(theta);
        double a = src[i0], b = src[i1];
        dst[i0] = static_cast<float>(a * c - b * s);
        dst[i1] = static_cast<float>(a * s + b * c);
      }
    }
  }
  return out;
}

}  // namespace lathe
