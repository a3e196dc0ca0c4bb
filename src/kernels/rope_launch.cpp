#include "kernels/rope_launch.h"

#include "kernels/library.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace lathe::kernels {

// The interpreter's frequencies (interp/cpu_ops_rope.cpp), computed here to be uploaded; a test holds
// the two equal through the kernels' results.
std::vector<double> rope_frequencies(int64_t n_rot, double base, const RopeFreqScaling& scaling) {
  if (n_rot <= 0 || n_rot % 2 != 0) fail("rope: n_rot {} must be even and positive", n_rot);
  if (!(base > 0)) fail("rope: base must be positive, got {}", base);
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
      if (wavelen < context / high) continue;
      if (wavelen > context / low) {
        f /= factor;
      } else {
        double smooth = (context / wavelen - low) / (high - low);
        f = (1 - smooth) * f / factor + smooth * f;
      }
    }
  } else if (scaling.kind == "linear") {
    if (!(scaling.factor > 0)) fail("rope linear scaling needs factor > 0, got {}", scaling.factor);
  } else if (scaling.kind != "none") {
    fail("rope frequency scaling '{}' is not known (none, linear, llama3)", scaling.kind);
  }
  if (!scaling.freq_factors.empty()) {
    if (static_cast<int64_t>(scaling.freq_factors.size()) != n_rot / 2)
      fail("rope: {} frequency factors for {} rotated pairs", scaling.freq_factors.size(), n_rot / 2);
    for (int64_t j = 0; j < n_rot / 2; ++j) freq[j] /= double(scaling.freq_factors[j]);
  }
  return freq;
}

RopeTable make_rope_table(int64_t n_rot, double base, const RopeFreqScaling& scaling) {
  RopeTable t;
  t.n_rot = n_rot;
  t.position_scale = scaling.kind == "linear" ? 1.0 / scaling.factor : 1.0;
  std::vector<double> freq = rope_frequencies(n_rot, base, scaling);
  t.freq = cuda::DeviceBuffer(freq.size() * sizeof(double), "rope frequencies");
  t.freq.upload(freq.data(), freq.size() * sizeof(double));
  return t;
}

namespace {

void launch_rope_norm(CUdeviceptr x, CUdeviceptr positions, CUdeviceptr weight, float eps, bool norm,
                      int64_t rows, int64_t heads, int64_t d, int64_t n_rot, CUdeviceptr freq,
                      double position_scale, RopeOrder order, CUstream stream) {
  if (n_rot < 0 || n_rot % 2 != 0 || n_rot > d)
    fail("rope: n_rot {} must be even and at most the head size {}", n_rot, d);
  if (heads <= 0 || d <= 0 || d > 4096) fail("rope: {} heads of {} values are not supported", heads, d);
  if (rows == 0) return;
  const unsigned warps = static_cast<unsigned>(std::min<int64_t>(heads, 8));
  const unsigned shared = static_cast<unsigned>((n_rot + warps * d) * sizeof(float));
  int h = static_cast<int>(heads), dd = static_cast<int>(d), nr = static_cast<int>(n_rot);
  int neox = order == RopeOrder::neox ? 1 : 0, do_norm = norm ? 1 : 0;
  cuda::launch(kernel("lathe_rope_norm"), {static_cast<unsigned>(rows)}, {32 * warps}, shared, stream,
               {&x, &positions, &h, &dd, &nr, &freq, &position_scale, &neox, &weight, &do_norm, &eps},
               norm ? "rms norm and rope" : "rope");
}

}  // namespace

void rope(CUdeviceptr x, CUdeviceptr positions, int64_t rows, int64_t heads, int64_t d,
          const RopeTable& table, RopeOrder order, CUstream stream) {
  launch_rope_norm(x, positions, 0, 0.0f, false, rows, heads, d, table.n_rot, table.freq.ptr(),
                   table.position_scale, order, stream);
}

void head_rms_norm_rope(CUdeviceptr x, CUdeviceptr positions, CUdeviceptr norm_weight, float eps,
                        int64_t rows, int64_t heads, int64_t d, const RopeTable& table,
                        RopeOrder order, CUstream stream) {
  launch_rope_norm(x, positions, norm_weight, eps, true, rows, heads, d, table.n_rot, table.freq.ptr(),
                   table.position_scale, order, stream);
}

}  // namespace lathe::kernels
