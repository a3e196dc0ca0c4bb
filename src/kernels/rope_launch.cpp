#include "kernels/rope_launch.h"

#include "interp/cpu_ops.h"
#include "kernels/library.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace lathe::kernels {

// The interpreter's frequencies (interp/cpu_ops.h), with the checks the upload needs.
std::vector<double> rope_frequencies(int64_t n_rot, double base, const RopeFreqScaling& scaling) {
  if (n_rot <= 0 || n_rot % 2 != 0) fail("rope: n_rot {} must be even and positive", n_rot);
  if (!(base > 0)) fail("rope: base must be positive, got {}", base);
  if (scaling.kind == "linear" && !(scaling.factor > 0))
    fail("rope linear scaling needs factor > 0, got {}", scaling.factor);
  return lathe::rope_frequencies(n_rot, base, scaling);
}

RopeTable make_rope_table(int64_t n_rot, double base, const RopeFreqScaling& scaling) {
  RopeTable t;
  t.n_rot = n_rot;
  t.position_scale = scaling.kind == "linear" ? 1.0 / scaling.factor : 1.0;
  std::vector<double> freq = kernels::rope_frequencies(n_rot, base, scaling);
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
  const unsigned warps = static_cast<unsigned>(std::min<int64_t>(heads, 4));
  const unsigned head_blocks = static_cast<unsigned>((heads + warps - 1) / warps);
  const unsigned shared = static_cast<unsigned>((n_rot + warps * d) * sizeof(float));
  int h = static_cast<int>(heads), dd = static_cast<int>(d), nr = static_cast<int>(n_rot);
  int neox = order == RopeOrder::neox ? 1 : 0, do_norm = norm ? 1 : 0;
  cuda::launch(kernel("lathe_rope_norm"), {static_cast<unsigned>(rows), head_blocks, 1}, {32 * warps}, shared, stream,
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

void rope_append(CUdeviceptr q, CUdeviceptr k, CUdeviceptr v, CUdeviceptr positions, CUdeviceptr sequences,
                 int64_t rows, int64_t hq, int64_t hk, int64_t d, const RopeTable& table, RopeOrder order, bool norm,
                 CUdeviceptr q_weight, CUdeviceptr k_weight, float eps, CUdeviceptr k_cache, CUdeviceptr v_cache,
                 int64_t n_ctx, CUstream stream) {
  const int64_t n_rot = table.n_rot;
  if (n_rot < 0 || n_rot % 2 != 0 || n_rot > d)
    fail("rope: n_rot {} must be even and at most the head size {}", n_rot, d);
  if (hq <= 0 || hk <= 0 || d <= 0 || d > 4096) fail("rope: {} and {} heads of {} values are not supported", hq, hk, d);
  if (rows == 0) return;
  const int64_t units = hq + 2 * hk;
  const unsigned warps = static_cast<unsigned>(std::min<int64_t>(units, 4));
  const unsigned unit_blocks = static_cast<unsigned>((units + warps - 1) / warps);
  const unsigned shared = static_cast<unsigned>((n_rot + warps * d) * sizeof(float));
  CUdeviceptr freq = table.freq.ptr();
  double position_scale = table.position_scale;
  int h_q = static_cast<int>(hq), h_k = static_cast<int>(hk), dd = static_cast<int>(d), nr = static_cast<int>(n_rot);
  int neox = order == RopeOrder::neox ? 1 : 0, do_norm = norm ? 1 : 0, ctx = static_cast<int>(n_ctx);
  cuda::launch(kernel("lathe_rope_append"), {static_cast<unsigned>(rows), unit_blocks, 1}, {32 * warps}, shared, stream,
               {&q, &k, &v, &positions, &sequences, &h_q, &h_k, &dd, &nr, &freq, &position_scale, &neox, &q_weight,
                &k_weight, &do_norm, &eps, &k_cache, &v_cache, &ctx},
               "rope and cache append");
}

}  // namespace lathe::kernels
