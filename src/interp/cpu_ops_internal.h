// Helpers shared by the cpu_ops_*.cpp files (not part of the ops' contract): the one dot product every
// op sums with, a parallel loop, and shape checks that fail with the user's shapes.
#pragma once

#include "base/error.h"
#include "interp/cpu_ops.h"

#include <cstdint>
#include <functional>
#include <string_view>

namespace lathe::cpu {

// sum_i a[i] * b[i] in f64. Each product of two f32 values is exact in f64; the sum runs in a fixed
// order (four interleaved partial sums, added at the end) so that every call gives the same bits.
inline double dot(const float* a, const float* b, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += double(a[i]) * double(b[i]);
    s1 += double(a[i + 1]) * double(b[i + 1]);
    s2 += double(a[i + 2]) * double(b[i + 2]);
    s3 += double(a[i + 3]) * double(b[i + 3]);
  }
  for (; i < n; ++i) s0 += double(a[i]) * double(b[i]);
  return (s0 + s1) + (s2 + s3);
}

// Calls body(begin, end) over [0, n) split into chunks, on up to hardware_concurrency threads when
// n * cost_per_item is large enough to pay for starting them. Chunks are disjoint; body must only
// write what its own range owns. Exceptions from body are rethrown on the caller's thread.
void parallel_for(int64_t n, double cost_per_item, const std::function<void(int64_t, int64_t)>& body);

// The number of rows of x when its last dimension is the vector length: numel / dim(-1).
int64_t rows_of(const Tensor& x);

// Fails unless x has exactly `rank` dimensions; `op` and `what` name the operand in the message.
void require_rank(const Tensor& x, size_t rank, std::string_view op, std::string_view what);

// Fails unless v is empty or a vector of n values.
void require_vector_or_empty(const Tensor& v, int64_t n, std::string_view op, std::string_view what,
                             const Tensor& x);

}  // namespace lathe::cpu
