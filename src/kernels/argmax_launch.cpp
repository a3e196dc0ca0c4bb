#include "kernels/argmax_launch.h"

#include "kernels/library.h"

#include <algorithm>

namespace lathe::kernels {
namespace {

constexpr int64_t kTargetBlocks = 256;  // about two blocks a multiprocessor at one row
constexpr int64_t kMinChunk = 2048;

int64_t chunks_for(int64_t rows, int64_t n) {
  const int64_t by_blocks = (kTargetBlocks + rows - 1) / std::max<int64_t>(rows, 1);
  const int64_t by_size = (n + kMinChunk - 1) / kMinChunk;
  return std::max<int64_t>(1, std::min(by_blocks, by_size));
}

}  // namespace

size_t argmax_workspace_bytes(int64_t rows, int64_t n) {
  const int64_t chunks = chunks_for(rows, n);
  if (chunks == 1) return 0;
  return static_cast<size_t>(rows * chunks) * 8 + static_cast<size_t>(rows) * 4;
}

void argmax(CUdeviceptr out, CUdeviceptr x, int64_t rows, int64_t n, CUdeviceptr workspace,
            CUstream stream) {
  if (n <= 0 || n > INT32_MAX) fail("argmax: rows of {} values", n);
  if (rows > 65535) fail("argmax: {} rows at once; at most 65535", rows);
  if (rows == 0) return;
  const int64_t chunks = chunks_for(rows, n);
  LATHE_CHECK(chunks == 1 || workspace != 0);
  int chunk = static_cast<int>((n + chunks - 1) / chunks);
  long long nn = n;
  CUdeviceptr partial = workspace;
  CUdeviceptr counters = chunks == 1 ? 0 : workspace + static_cast<CUdeviceptr>(rows * chunks) * 8;
  cuda::launch(kernel("lathe_argmax"), {static_cast<unsigned>(chunks), static_cast<unsigned>(rows)}, {256}, 0,
               stream, {&x, &nn, &chunk, &partial, &counters, &out}, "argmax");
}

void step_advance(CUdeviceptr next, CUdeviceptr tokens, CUdeviceptr positions, CUdeviceptr ids, int slots,
                  CUstream stream) {
  LATHE_CHECK(slots >= 1);
  cuda::launch(kernel("lathe_step_advance"), {1}, {1}, 0, stream, {&next, &tokens, &positions, &ids, &slots},
               "step advance");
}

}  // namespace lathe::kernels
