// Reductions and layout: argmax, transpose, and the head views of a row.
#include "interp/cpu_ops_internal.h"

#include <algorithm>

namespace lathe {

// One index per row; the first of equal maxima wins. NaN never wins over a number.
std::vector<int32_t> argmax(const Tensor& x) {
  if (x.shape.empty() || x.dim(-1) == 0)
    fail("argmax: x {} has no values to choose from", x.shape_string());
  int64_t n = x.dim(-1), rows = cpu::rows_of(x);
  std::vector<int32_t> out(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data.data() + r * n;
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i)
      if (xr[i] > xr[best] || (xr[best] != xr[best] && xr[i] == xr[i])) best = i;
    out[r] = static_cast<int32_t>(best);
  }
  return out;
}

Tensor transpose(const Tensor& x) {
  cpu::require_rank(x, 2, "transpose", "x");
  int64_t a = x.dim(0), b = x.dim(1);
  Tensor out({b, a});
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j) out.data[j * a + i] = x.data[i * b + j];
  return out;
}

// The data do not move: [rows, n] and [rows, heads, n / heads] are one row-major layout.
Tensor split_heads(const Tensor& x, int64_t n_heads) {
  cpu::require_rank(x, 2, "split heads", "x");
  if (n_heads <= 0 || x.dim(1) % n_heads != 0)
    fail("split heads: {} values of x {} do not split into {} heads", x.dim(1), x.shape_string(),
         n_heads);
  return Tensor({x.dim(0), n_heads, x.dim(1) / n_heads}, x.data);
}

Tensor join_heads(const Tensor& x) {
  cpu::require_rank(x, 3, "join heads", "x");
  return Tensor({x.dim(0), x.dim(1) * x.dim(2)}, x.data);
}

Tensor head_slice(const Tensor& x, int64_t first, int64_t count) {
  cpu::require_rank(x, 3, "head slice", "x");
  int64_t rows = x.dim(0), heads = x.dim(1), d = x.dim(2);
  if (first < 0 || count < 0 || first + count > heads)
    fail("head slice: heads {}..{} are outside the {} heads of x {}", first, first + count, heads,
         x.shape_string());
  Tensor out({rows, count, d});
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(x.row(r) + first * d, count * d, out.row(r));
  return out;
}

}  // namespace lathe
