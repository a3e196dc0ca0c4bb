// Tensor (row-major f32) and MatrixRef (a checkpoint matrix in its own block format).
#include "base/error.h"
#include "gguf/block_format.h"
#include "interp/cpu_ops.h"

#include <fmt/format.h>

#include <utility>

namespace lathe {
namespace {

int64_t count_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail("tensor shape [{}] has a negative dimension", fmt::join(shape, ", "));
    n *= d;
  }
  return n;
}

}  // namespace

Tensor::Tensor(std::vector<int64_t> shape_) : shape(std::move(shape_)) {
  data.assign(static_cast<size_t>(count_of(shape)), 0.0f);
}

Tensor::Tensor(std::vector<int64_t> shape_, std::vector<float> data_)
    : shape(std::move(shape_)), data(std::move(data_)) {
  int64_t n = count_of(shape);
  if (n != static_cast<int64_t>(data.size()))
    fail("tensor of shape {} needs {} values, got {}", shape_string(), n, data.size());
}

int64_t Tensor::numel() const { return count_of(shape); }

float* Tensor::row(int64_t r) {
  return const_cast<float*>(std::as_const(*this).row(r));
}

const float* Tensor::row(int64_t r) const {
  LATHE_CHECK(!shape.empty() && r >= 0 && r < shape[0]);
  int64_t stride = shape[0] == 0 ? 0 : numel() / shape[0];
  return data.data() + r * stride;
}

std::string Tensor::shape_string() const { return fmt::format("[{}]", fmt::join(shape, ", ")); }

MatrixRef MatrixRef::expert(int64_t e) const {
  if (e < 0 || e >= n_stack)
    fail("expert {} is out of range: the stack holds {} matrices", e, n_stack);
  MatrixRef m = *this;
  m.n_stack = 1;
  m.data = data + e * n_rows * row_bytes(type, n_cols);
  return m;
}

void MatrixRef::row(int64_t r, float* dst) const {
  if (r < 0 || r >= n_rows) fail("row {} is out of range: the matrix has {} rows", r, n_rows);
  if (data == nullptr) fail("matrix of {} x {} has no data", n_rows, n_cols);
  int64_t stride = row_bytes(type, n_cols);  // fails when n_cols is not a whole number of blocks
  dequantize_row(type, data + r * stride, dst, n_cols);
}

}  // namespace lathe
