#include "kernels/elementwise_launch.h"

#include "kernels/library.h"

#include <algorithm>

namespace lathe::kernels {
namespace {

constexpr unsigned kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;  // grid-stride beyond this

unsigned blocks_for(int64_t items) {
  return static_cast<unsigned>(std::clamp<int64_t>((items + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

bool aligned16(CUdeviceptr p) { return p % 16 == 0; }

}  // namespace

void elementwise_binary(ElemBinary op, CUdeviceptr out, CUdeviceptr a, CUdeviceptr b, int64_t n,
                        int64_t period, CUstream stream) {
  if (n < 0 || period <= 0 || n % period != 0)
    fail("elementwise: {} values do not repeat a second operand of {}", n, period);
  if (n == 0) return;
  int code = static_cast<int>(op);
  long long nn = n, pp = period;
  int vec4 = n % 4 == 0 && period % 4 == 0 && aligned16(out) && aligned16(a) && aligned16(b) ? 1 : 0;
  cuda::launch(kernel("lathe_elem_binary"), {blocks_for(vec4 ? n / 4 : n)}, {kThreads}, 0, stream,
               {&code, &a, &b, &out, &nn, &pp, &vec4}, "elementwise");
}

void elementwise_unary(ElemUnary op, CUdeviceptr out, CUdeviceptr x, int64_t n, float param,
                       CUstream stream) {
  if (n < 0) fail("elementwise: {} values", n);
  if (op == ElemUnary::soft_cap && !(param > 0)) fail("soft cap must be positive, got {}", param);
  if (n == 0) return;
  int code = static_cast<int>(op);
  long long nn = n;
  int vec4 = n % 4 == 0 && aligned16(out) && aligned16(x) ? 1 : 0;
  cuda::launch(kernel("lathe_elem_unary"), {blocks_for(vec4 ? n / 4 : n)}, {kThreads}, 0, stream,
               {&code, &x, &out, &nn, &param, &vec4}, "elementwise");
}

}  // namespace lathe::kernels
