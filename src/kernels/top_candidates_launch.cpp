#include "kernels/top_candidates_launch.h"

#include "base/error.h"
#include "kernels/library.h"

#include <bit>

namespace lathe::kernels {
namespace {

constexpr int64_t kChunk = 4096;  // TOPC_CHUNK in top_candidates.cuh

int64_t chunks_for(int64_t n) { return (n + kChunk - 1) / kChunk; }

}  // namespace

size_t top_candidates_workspace_bytes(int64_t n, int64_t m) {
  return 16 + static_cast<size_t>(chunks_for(n) * m) * 8;
}

void top_candidates(CUdeviceptr keys_out, CUdeviceptr x, int64_t n, int64_t m, CUdeviceptr also, int64_t n_also,
                    CUdeviceptr also_out, CUdeviceptr workspace, CUstream stream, CUdeviceptr done, uint32_t seq) {
  if (n <= 0 || n >= INT32_MAX) fail("top candidates: a row of {} values", n);
  if (m < 1 || m > n || m > kMaxTopCandidates)
    fail("top candidates: {} of a row of {} values (at most {} at once)", m, n, kMaxTopCandidates);
  if (n_also < 0 || n_also > INT32_MAX) fail("top candidates: {} extra values", n_also);
  LATHE_CHECK(workspace != 0 && (n_also == 0 || (also != 0 && also_out != 0)));
  const int64_t chunks = chunks_for(n);
  // The counter first, where every m finds it (a workspace sized for the largest m serves any smaller
  // one; a counter placed past the partials would move with m onto a word an earlier launch's partials
  // wrote).
  CUdeviceptr counter = workspace;
  CUdeviceptr partial = workspace + 16;
  int nn = static_cast<int>(n), mm = static_cast<int>(m), na = static_cast<int>(n_also);
  cuda::launch(kernel("lathe_top_candidates"), {static_cast<unsigned>(chunks)}, {512}, 0, stream,
               {&x, &nn, &mm, &partial, &counter, &keys_out, &also, &na, &also_out, &done, &seq}, "top candidates");
}

float top_candidate_value(uint64_t key) {
  const uint32_t ordered = static_cast<uint32_t>(key >> 32);
  const uint32_t u = (ordered & 0x80000000u) ? (ordered & 0x7fffffffu) : ~ordered;
  return std::bit_cast<float>(u);
}

int32_t top_candidate_index(uint64_t key) { return static_cast<int32_t>(~static_cast<uint32_t>(key)); }

}  // namespace lathe::kernels
