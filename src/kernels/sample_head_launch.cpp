#include "kernels/sample_head_launch.h"

#include "base/error.h"
#include "kernels/library.h"
#include "kernels/top_candidates_launch.h"

namespace lathe::kernels {

void sample_head_advance(CUdeviceptr keys, int64_t m, CUdeviceptr params, CUdeviceptr tokens, CUdeviceptr positions,
                         CUdeviceptr ids, int slots, CUstream stream) {
  if (m < 1 || m > kMaxTopCandidates) fail("sampling from a head of {} (1 to {})", m, kMaxTopCandidates);
  LATHE_CHECK(slots >= 1);
  int mm = static_cast<int>(m);
  cuda::launch(kernel("lathe_sample_head_advance"), {1}, {256}, 0, stream,
               {&keys, &mm, &params, &tokens, &positions, &ids, &slots}, "sample head and advance");
}

}  // namespace lathe::kernels
