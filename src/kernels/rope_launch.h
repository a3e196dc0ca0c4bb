// Host launchers of rope and of the per-head RMS norm followed by rope (rope.cuh). The per-pair
// frequencies are made once on the host (RopeTable, the same formula as the interpreter's: base,
// llama3 or linear scaling, frequency factors) and kept on the device as n_rot / 2 doubles.
#pragma once

#include "interp/cpu_ops.h"
#include "runtime/cuda_driver.h"

#include <cstdint>
#include <vector>

namespace lathe::kernels {

// freq_j = base^(-2j / n_rot), then llama3 scaling, then divided by the frequency factors; refuses
// what the interpreter refuses (odd n_rot, unknown scaling, bad factors).
std::vector<double> rope_frequencies(int64_t n_rot, double base, const RopeFreqScaling& scaling);

struct RopeTable {
  int64_t n_rot = 0;
  double position_scale = 1.0;   // 1 / factor for linear scaling, else 1
  cuda::DeviceBuffer freq;       // n_rot / 2 doubles
};
RopeTable make_rope_table(int64_t n_rot, double base, const RopeFreqScaling& scaling = {});

// In place on x [rows, heads, d] f32 at positions [rows] int32 (device): dims < table.n_rot rotate
// (pairs by `order`), the rest pass through. n_rot <= d.
void rope(CUdeviceptr x, CUdeviceptr positions, int64_t rows, int64_t heads, int64_t d,
          const RopeTable& table, RopeOrder order, CUstream stream);

// QK norm and rope in one kernel: each head of x normed (weight [d] or 0, eps), then rotated, in place.
void head_rms_norm_rope(CUdeviceptr x, CUdeviceptr positions, CUdeviceptr norm_weight, float eps,
                        int64_t rows, int64_t heads, int64_t d, const RopeTable& table,
                        RopeOrder order, CUstream stream);

// rope_append (fusion rule rope_append): q [rows, hq, d] and k [rows, hk, d] f32 each RMS-normed per
// head (norm: weights q_weight, k_weight, either 0 for 1) and rotated in place, as head_rms_norm_rope
// / rope; then the rotated k and v [rows, hk, d] f32 written into the f16 caches
// [sequences, n_ctx, hk, d] at slot (sequences[r], positions[r]), as cache_append. Bit-identical to
// those three launches. q, k, v, caches 4-byte aligned; positions and sequences int32 on the device.
void rope_append(CUdeviceptr q, CUdeviceptr k, CUdeviceptr v, CUdeviceptr positions, CUdeviceptr sequences,
                 int64_t rows, int64_t hq, int64_t hk, int64_t d, const RopeTable& table, RopeOrder order, bool norm,
                 CUdeviceptr q_weight, CUdeviceptr k_weight, float eps, CUdeviceptr k_cache, CUdeviceptr v_cache,
                 int64_t n_ctx, CUstream stream);

}  // namespace lathe::kernels
