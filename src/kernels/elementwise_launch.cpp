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

void elementwise_run(CUdeviceptr out, CUdeviceptr x, int64_t n, const std::vector<ElemStep>& steps, CUstream stream,
                     const QuantizedOut& quantized, int64_t k) {
  if (steps.empty() || steps.size() > kMaxElemSteps)
    fail("an elementwise run of {} ops (1 to {} run in one kernel)", steps.size(), kMaxElemSteps);
  if (n < 0) fail("elementwise: {} values", n);
  QuantizedPointers q;
  if (quantized.q != 0) {
    if (k <= 0 || n % k != 0) fail("elementwise run: {} values are not rows of {}", n, k);
    q = quantized_pointers(quantized, n / k, k);
  }
  if (n == 0) return;
  int n_steps = static_cast<int>(steps.size()), codes = 0;
  float param[kMaxElemSteps] = {};
  CUdeviceptr b[kMaxElemSteps] = {};
  long long period[kMaxElemSteps] = {1, 1, 1, 1};
  for (size_t s = 0; s < steps.size(); ++s) {
    const ElemStep& e = steps[s];
    if (!e.unary && (e.period <= 0 || n % e.period != 0))
      fail("elementwise: {} values do not repeat a second operand of {}", n, e.period);
    if (e.unary && e.code == static_cast<int>(ElemUnary::soft_cap) && !(e.param > 0))
      fail("soft cap must be positive, got {}", e.param);
    codes |= ((e.code & 15) | (e.unary ? 16 : 0) | (e.swap ? 32 : 0)) << (8 * s);
    param[s] = e.param;
    b[s] = e.unary ? 0 : e.b;
    period[s] = e.unary ? 1 : e.period;
  }
  long long nn = n;
  cuda::launch(kernel("lathe_elem_chain"), {blocks_for(n)}, {kThreads}, 0, stream,
               {&x, &out, &nn, &n_steps, &codes, &param[0], &param[1], &param[2], &param[3], &b[0], &b[1], &b[2],
                &b[3], &period[0], &period[1], &period[2], &period[3], &q.q1, &q.q2, &q.ds, &q.two_words},
               "elementwise run");
}

}  // namespace lathe::kernels
