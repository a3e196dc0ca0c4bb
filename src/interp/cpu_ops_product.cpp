// Products with checkpoint matrices, and embedding lookups. A matrix row is dequantized once and
// dotted with every row of x; threads take disjoint ranges of the matrix's rows (output columns).
#include "interp/cpu_ops_internal.h"

#include "gguf/block_format.h"

#include <vector>

namespace lathe {
namespace {

void require_single(const MatrixRef& w, std::string_view op) {
  if (w.n_stack != 1)
    fail("{}: the matrix is a stack of {} experts of {} x {}; one expert is needed", op, w.n_stack,
         w.n_rows, w.n_cols);
}

// x times w^T; with `f16`, x's values and each dequantized weight rounded to f16 first.
Tensor product_rounded(const Tensor& x, const MatrixRef& w, bool f16) {
  require_single(w, "product");
  if (x.shape.empty() || x.dim(-1) != w.n_cols)
    fail("product: x {} does not fit a matrix of {} rows of {} values (x's last dimension must be {})",
         x.shape_string(), w.n_rows, w.n_cols, w.n_cols);
  int64_t k = w.n_cols, n = w.n_rows, rows = cpu::rows_of(x);
  std::vector<int64_t> shape = x.shape;
  shape.back() = n;
  Tensor out(shape);
  std::vector<float> x16;
  if (f16) {
    x16 = x.data;
    for (float& v : x16) v = f16_rounded(v);
  }
  const float* xd = f16 ? x16.data() : x.data.data();
  cpu::parallel_for(n, double(rows + 1) * double(k), [&](int64_t begin, int64_t end) {
    std::vector<float> w_row(k);
    for (int64_t j = begin; j < end; ++j) {
      w.row(j, w_row.data());
      if (f16)
        for (float& v : w_row) v = f16_rounded(v);
      for (int64_t r = 0; r < rows; ++r) out.data[r * n + j] = static_cast<float>(cpu::dot(xd + r * k, w_row.data(), k));
    }
  });
  return out;
}

}  // namespace

Tensor gather_rows(const MatrixRef& table, std::span<const int32_t> ids) {
  require_single(table, "gather rows");
  int64_t n = static_cast<int64_t>(ids.size());
  Tensor out({n, table.n_cols});
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= table.n_rows)
      fail("gather rows: id {} is outside the table's {} rows", ids[i], table.n_rows);
    table.row(ids[i], out.row(i));
  }
  return out;
}

Tensor product(const Tensor& x, const MatrixRef& w) { return product_rounded(x, w, false); }
Tensor product_f16(const Tensor& x, const MatrixRef& w) { return product_rounded(x, w, true); }

}  // namespace lathe
