// Host launcher of a row's best logits (top_candidates.cuh): what sampled generation copies back
// instead of the row.
#pragma once

#include "runtime/cuda_driver.h"

#include <cstdint>

namespace lathe::kernels {

// The most candidates one launch gives (the kernel sorts them in one block's shared memory).
constexpr int64_t kMaxTopCandidates = 1024;

// Device memory a launch over n values with m candidates needs: the chunks' partial results and a
// counter. Zero it once (DeviceBuffer::zero) before the first use; each launch leaves it zero again,
// so one workspace sized for the largest m serves every launch of smaller m after it.
size_t top_candidates_workspace_bytes(int64_t n, int64_t m);

// keys_out [m] u64 = the m largest keys of x [n] f32, largest first: the sampler's order (larger value
// first, of equal values the lower index; -0 as +0, NaN below every number), each key the value's
// orderable bits over ~index (top_candidate_value / top_candidate_index read them back). Also
// also_out[j] = x[also[j]] for j < n_also (also: int32 indices < n). 1 <= m <= min(n,
// kMaxTopCandidates), n < 2^31. Then *done = seq (unless done is 0), after the rest is visible. Any
// pointer may be mapped page-locked host memory.
void top_candidates(CUdeviceptr keys_out, CUdeviceptr x, int64_t n, int64_t m, CUdeviceptr also, int64_t n_also,
                    CUdeviceptr also_out, CUdeviceptr workspace, CUstream stream, CUdeviceptr done = 0,
                    uint32_t seq = 0);

// A key's value (with -0 read as +0) and index.
float top_candidate_value(uint64_t key);
int32_t top_candidate_index(uint64_t key);

}  // namespace lathe::kernels
