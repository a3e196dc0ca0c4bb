// RMS norms (per row, sum-then-norm, per head), rope and the fused per-head norm + rope on the GPU,
// against the interpreter (interp/cpu_ops.h) over a sweep of shapes. Bounds (max |gpu - cpu| / max |cpu|):
// norms 1e-5 (f32 sums against f64), rope 1e-5 (f64 angles on both sides, f32 rotation).
#include "kernels/norm_launch.h"
#include "kernels/rope_launch.h"
#include "test_gpu_ops_helpers.h"

#include <fmt/format.h>

namespace lathe::test {
namespace {

constexpr double kNormBound = 1e-5;
constexpr double kRopeBound = 1e-5;

TEST(GpuNorm, RmsNormPerRowAndPerHead) {
  REQUIRE_GPU();
  cuda::Stream s;
  struct Case { int64_t rows, n; bool weight; };
  const Case cases[] = {{1, 64, true}, {3, 128, false}, {16, 896, true}, {1, 4096, true},
                        {7, 5120, true}, {16, 1000, true}, {2, 151, true}, {5, 17000, false}};
  uint32_t seed = 1;
  for (const Case& c : cases) {
    std::vector<float> x = random_values(c.rows * c.n, seed++, 3.0f);
    std::vector<float> w = c.weight ? random_values(c.n, seed++) : std::vector<float>{};
    Tensor want = rms_norm(Tensor({c.rows, c.n}, x), c.weight ? Tensor({c.n}, w) : Tensor(), 1e-6);
    auto dx = to_device(x), dw = to_device(w), dh = to_device(std::vector<float>(x.size()));
    kernels::rms_norm(dh.ptr(), dx.ptr(), c.weight ? dw.ptr() : 0, c.rows, c.n, 1e-6f, s.handle());
    s.synchronize();
    report("rms_norm", fmt::format("rows {} n {}{}", c.rows, c.n, c.weight ? " w" : ""),
           normalized_error(from_device<float>(dh, x.size()), want.data), kNormBound);
    // In place (h == x).
    kernels::rms_norm(dx.ptr(), dx.ptr(), c.weight ? dw.ptr() : 0, c.rows, c.n, 1e-6f, s.handle());
    s.synchronize();
    report("rms_norm in place", fmt::format("rows {} n {}", c.rows, c.n),
           normalized_error(from_device<float>(dx, x.size()), want.data), kNormBound);
  }
  // Per head: [rows, heads, d] with a weight of d.
  struct HeadCase { int64_t rows, heads, d; };
  for (const HeadCase& c : {HeadCase{1, 4, 64}, HeadCase{16, 32, 128}, HeadCase{5, 8, 128}, HeadCase{3, 2, 256}}) {
    std::vector<float> x = random_values(c.rows * c.heads * c.d, seed++, 2.0f);
    std::vector<float> w = random_values(c.d, seed++);
    Tensor want = rms_norm(Tensor({c.rows, c.heads, c.d}, x), Tensor({c.d}, w), 1e-6);
    auto dx = to_device(x), dw = to_device(w), dh = to_device(std::vector<float>(x.size()));
    kernels::head_rms_norm(dh.ptr(), dx.ptr(), dw.ptr(), c.rows, c.heads, c.d, 1e-6f, s.handle());
    s.synchronize();
    report("head_rms_norm", fmt::format("rows {} heads {} d {}", c.rows, c.heads, c.d),
           normalized_error(from_device<float>(dh, x.size()), want.data), kNormBound);
  }
}

TEST(GpuNorm, AddThenNormWritesTheSumAndTheNorm) {
  REQUIRE_GPU();
  cuda::Stream s;
  uint32_t seed = 100;
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 1024}, {16, 4096}, {3, 5120}, {9, 896}, {2, 100}}) {
    std::vector<float> x = random_values(rows * n, seed++), y = random_values(rows * n, seed++);
    std::vector<float> w = random_values(n, seed++);
    Tensor sum = add(Tensor({rows, n}, x), Tensor({rows, n}, y));
    Tensor want = rms_norm(sum, Tensor({n}, w), 1e-5);
    auto dx = to_device(x), dy = to_device(y), dw = to_device(w), dh = to_device(std::vector<float>(x.size()));
    kernels::add_rms_norm(dx.ptr(), dh.ptr(), dy.ptr(), dw.ptr(), rows, n, 1e-5f, s.handle());
    s.synchronize();
    std::vector<float> got_sum = from_device<float>(dx, x.size());
    EXPECT_EQ(got_sum, sum.data) << "the sum is one f32 rounding, as add's";
    report("add_rms_norm", fmt::format("rows {} n {}", rows, n),
           normalized_error(from_device<float>(dh, x.size()), want.data), kNormBound);
  }
}

struct RopeCase {
  int64_t rows, heads, d, n_rot;
  RopeOrder order;
  std::string scaling;  // none, linear, llama3, factors (llama3 with frequency factors)
  int32_t first_position;
};

RopeFreqScaling scaling_of(const RopeCase& c) {
  RopeFreqScaling s;
  if (c.scaling == "linear") {
    s.kind = "linear";
    s.factor = 4.0;
  } else if (c.scaling == "llama3" || c.scaling == "factors") {
    s.kind = "llama3";
    s.factor = 8.0;
    s.low_freq_factor = 1.0;
    s.high_freq_factor = 4.0;
    s.original_context = 8192;
    if (c.scaling == "factors")
      for (int64_t j = 0; j < c.n_rot / 2; ++j) s.freq_factors.push_back(1.0f + 0.37f * float(j % 5));
  }
  return s;
}

const RopeCase kRopeCases[] = {
    {1, 4, 64, 64, RopeOrder::normal, "none", 0},
    {1, 32, 128, 128, RopeOrder::neox, "none", 4095},
    {16, 8, 128, 128, RopeOrder::neox, "none", 100},
    {7, 32, 128, 128, RopeOrder::normal, "llama3", 3000},
    {4, 8, 128, 128, RopeOrder::normal, "factors", 120000},
    {3, 16, 64, 32, RopeOrder::neox, "none", 17},          // partial rotary
    {5, 12, 128, 64, RopeOrder::normal, "linear", 9000},   // partial rotary, linear scaling
    {2, 40, 256, 128, RopeOrder::neox, "llama3", 65000},
};

std::vector<int32_t> positions_of(const RopeCase& c) {
  std::vector<int32_t> p(c.rows);
  for (int64_t r = 0; r < c.rows; ++r) p[r] = c.first_position + int32_t(r * (r % 2 ? 1 : 37));  // ragged
  return p;
}

std::string rope_label(const RopeCase& c) {
  return fmt::format("r{} h{} d{} rot{} {} {} @{}", c.rows, c.heads, c.d, c.n_rot,
                     c.order == RopeOrder::neox ? "neox" : "norm", c.scaling, c.first_position);
}

TEST(GpuRope, MatchesTheInterpreter) {
  REQUIRE_GPU();
  cuda::Stream s;
  uint32_t seed = 200;
  for (const RopeCase& c : kRopeCases) {
    const double base = c.d == 128 ? 1000000.0 : 10000.0;
    std::vector<float> x = random_values(c.rows * c.heads * c.d, seed++);
    std::vector<int32_t> pos = positions_of(c);
    RopeFreqScaling scaling = scaling_of(c);
    Tensor want = rope(Tensor({c.rows, c.heads, c.d}, x), pos, c.n_rot, base, c.order, scaling);
    kernels::RopeTable table = kernels::make_rope_table(c.n_rot, base, scaling);
    auto dx = to_device(x);
    auto dp = to_device(pos);
    kernels::rope(dx.ptr(), dp.ptr(), c.rows, c.heads, c.d, table, c.order, s.handle());
    s.synchronize();
    report("rope", rope_label(c), normalized_error(from_device<float>(dx, x.size()), want.data), kRopeBound);
  }
}

TEST(GpuRope, FusedHeadNormAndRopeMatchesNormThenRope) {
  REQUIRE_GPU();
  cuda::Stream s;
  uint32_t seed = 300;
  for (const RopeCase& c : kRopeCases) {
    const double base = 1000000.0;
    std::vector<float> x = random_values(c.rows * c.heads * c.d, seed++, 4.0f);
    std::vector<float> w = random_values(c.d, seed++);
    std::vector<int32_t> pos = positions_of(c);
    RopeFreqScaling scaling = scaling_of(c);
    Tensor normed = rms_norm(Tensor({c.rows, c.heads, c.d}, x), Tensor({c.d}, w), 1e-6);
    Tensor want = rope(normed, pos, c.n_rot, base, c.order, scaling);
    kernels::RopeTable table = kernels::make_rope_table(c.n_rot, base, scaling);
    auto dx = to_device(x), dw = to_device(w);
    auto dp = to_device(pos);
    kernels::head_rms_norm_rope(dx.ptr(), dp.ptr(), dw.ptr(), 1e-6f, c.rows, c.heads, c.d, table, c.order,
                                s.handle());
    s.synchronize();
    report("head_norm_rope", rope_label(c), normalized_error(from_device<float>(dx, x.size()), want.data),
           kRopeBound);
  }
}

TEST(GpuRope, RefusesWhatTheInterpreterRefuses) {
  EXPECT_THROW(kernels::rope_frequencies(7, 10000.0, {}), UserError);
  RopeFreqScaling bad;
  bad.kind = "yarn";
  EXPECT_THROW(kernels::rope_frequencies(64, 10000.0, bad), UserError);
  RopeFreqScaling factors;
  factors.freq_factors = {1.0f, 2.0f};
  EXPECT_THROW(kernels::rope_frequencies(64, 10000.0, factors), UserError);
}

}  // namespace
}  // namespace lathe::test
