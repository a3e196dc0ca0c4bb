// Host launcher of sampling from a step's head on the device (sample_head.cuh): sampled decode steps
// chained in one graph (runtime/gpu_engine.h, run_sampled_steps).
#pragma once

#include "runtime/cuda_driver.h"

#include <cstdint>

namespace lathe::kernels {

// The f64 parameters lathe_sample_head_advance reads (params): top_p, min_p, temperature, then the
// uniform of each step of the chain.
constexpr int64_t kSampleParamsBefore = 3;

// The step at position p (int32 at positions): the token the host sampler would draw with uniform
// params[3 + p % slots] from the m best keys at `keys` (top_candidates' keys_out, best first; no
// repetition penalty, temperature > 0) becomes the one-row step's token (int32 at tokens), its position
// p + 1, and ids[p % slots]. The step after it must not begin before it ends, as after step_advance
// (argmax_launch.h). 1 <= m <= kMaxTopCandidates.
void sample_head_advance(CUdeviceptr keys, int64_t m, CUdeviceptr params, CUdeviceptr tokens, CUdeviceptr positions,
                         CUdeviceptr ids, int slots, CUstream stream);

}  // namespace lathe::kernels
