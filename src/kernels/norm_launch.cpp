#include "kernels/norm_launch.h"

#include "kernels/library.h"

#include <algorithm>

namespace lathe::kernels {
namespace {

// Rows of n <= this go one warp per row (a head's d); longer ones one block per row.
constexpr int64_t kWarpRowLimit = 512;


}  // namespace

unsigned block_threads(int64_t n) {
  // About 8 values a thread, a multiple of 32, between 128 and 1024.
  int64_t t = (n / 8 + 31) / 32 * 32;
  return static_cast<unsigned>(std::clamp<int64_t>(t, 128, 1024));
}

namespace {

void check_shape(int64_t rows, int64_t n, const char* what) {
  if (rows < 0 || n <= 0 || n > INT32_MAX) fail("{}: rows {} of {} values cannot be normed", what, rows, n);
}

}  // namespace

void rms_norm(CUdeviceptr h, CUdeviceptr x, CUdeviceptr weight, int64_t rows, int64_t n, float eps,
              CUstream stream, const QuantizedOut& quantized) {
  check_shape(rows, n, "rms norm");
  if (rows == 0) return;
  int nn = static_cast<int>(n);
  QuantizedPointers q = quantized_pointers(quantized, rows, n);
  if (n <= kWarpRowLimit) {
    long long rr = rows;
    const unsigned warps = 8;
    unsigned blocks = static_cast<unsigned>((rows + warps - 1) / warps);
    cuda::launch(kernel("lathe_rms_norm_warp"), {blocks}, {32 * warps}, 0, stream,
                 {&x, &weight, &h, &rr, &nn, &eps, &q.q1, &q.q2, &q.ds, &q.two_words}, "rms norm");
  } else {
    // With the quantized epilogue every warp quantizes whole 32-value blocks in turn: more warps, fewer turns.
    cuda::launch(kernel("lathe_rms_norm"), {static_cast<unsigned>(rows)}, {q.q1 ? 1024u : block_threads(n)}, 0, stream,
                 {&x, &weight, &h, &nn, &eps, &q.q1, &q.q2, &q.ds, &q.two_words}, "rms norm");
  }
}

void add_rms_norm(CUdeviceptr x, CUdeviceptr h, CUdeviceptr y, CUdeviceptr weight, int64_t rows,
                  int64_t n, float eps, CUstream stream, const QuantizedOut& quantized) {
  check_shape(rows, n, "add and rms norm");
  if (rows == 0) return;
  int nn = static_cast<int>(n);
  QuantizedPointers q = quantized_pointers(quantized, rows, n);
  cuda::launch(kernel("lathe_add_rms_norm"), {static_cast<unsigned>(rows)}, {q.q1 ? 1024u : block_threads(n)}, 0, stream,
               {&x, &y, &weight, &h, &nn, &eps, &q.q1, &q.q2, &q.ds, &q.two_words}, "add and rms norm");
}

void head_rms_norm(CUdeviceptr h, CUdeviceptr x, CUdeviceptr weight, int64_t rows, int64_t heads,
                   int64_t d, float eps, CUstream stream) {
  rms_norm(h, x, weight, rows * heads, d, eps, stream);
}

}  // namespace lathe::kernels
