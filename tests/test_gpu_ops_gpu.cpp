// Elementwise ops, row argmax and the mixture router's top k on the GPU against the interpreter
// (interp/cpu_ops.h). Bounds (max |gpu - cpu| / max |cpu|): add, subtract, multiply, divide, scale,
// relu exact (one f32 rounding each side); silu, gelu, sigmoid, soft cap, swiglu 1e-6 (f32
// transcendentals); argmax and router ids exact; router weights 1e-6.
#include "kernels/argmax_launch.h"
#include "kernels/elementwise_launch.h"
#include "kernels/route_launch.h"
#include "test_gpu_ops_helpers.h"

#include <fmt/format.h>

namespace lathe::test {
namespace {

using kernels::ElemBinary;
using kernels::ElemUnary;

TEST(GpuElementwise, BinaryOpsWithAndWithoutBroadcast) {
  REQUIRE_GPU();
  cuda::Stream s;
  struct Op { ElemBinary op; const char* name; Tensor (*ref)(const Tensor&, const Tensor&); double bound; };
  const Op ops[] = {{ElemBinary::add, "add", add, 0},           {ElemBinary::subtract, "subtract", subtract, 0},
                    {ElemBinary::multiply, "multiply", multiply, 0}, {ElemBinary::divide, "divide", divide, 0},
                    {ElemBinary::swiglu, "swiglu", swiglu, 1e-6}};
  uint32_t seed = 1;
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 4096}, {16, 12288}, {3, 1001}, {7, 5}, {1, 1}}) {
    for (const Op& op : ops) {
      for (bool broadcast : {false, true}) {
        if (broadcast && op.op == ElemBinary::swiglu) continue;  // swiglu takes equal shapes
        std::vector<float> a = random_values(rows * n, seed++, 4.0f);
        std::vector<float> b = random_values(broadcast ? n : rows * n, seed++, 4.0f);
        Tensor want = op.ref(Tensor({rows, n}, a), broadcast ? Tensor({n}, b) : Tensor({rows, n}, b));
        auto da = to_device(a), db = to_device(b), dout = to_device(std::vector<float>(a.size()));
        kernels::elementwise_binary(op.op, dout.ptr(), da.ptr(), db.ptr(), rows * n, broadcast ? n : rows * n,
                                    s.handle());
        s.synchronize();
        report(op.name, fmt::format("rows {} n {}{}", rows, n, broadcast ? " broadcast" : ""),
               normalized_error(from_device<float>(dout, a.size()), want.data), op.bound);
      }
    }
  }
}

TEST(GpuElementwise, UnaryOps) {
  REQUIRE_GPU();
  cuda::Stream s;
  uint32_t seed = 100;
  for (int64_t n : {int64_t{4096}, int64_t{1000003}, int64_t{6}}) {
    std::vector<float> x = random_values(n, seed++, 6.0f);
    x[0] = 90.0f;  // exp(-x) underflows: silu and sigmoid must still be finite
    if (n > 1) x[1] = -90.0f;
    Tensor t({n}, x);
    struct Op { ElemUnary op; const char* name; Tensor want; float param; double bound; };
    const Op ops[] = {{ElemUnary::scale, "scale", scale(t, 0.125), 0.125f, 0},
                      {ElemUnary::silu, "silu", silu(t), 0, 1e-6},
                      {ElemUnary::gelu, "gelu", gelu(t), 0, 1e-6},
                      {ElemUnary::sigmoid, "sigmoid", sigmoid(t), 0, 1e-6},
                      {ElemUnary::relu, "relu", relu(t), 0, 0},
                      {ElemUnary::soft_cap, "soft_cap", soft_cap(t, 30.0), 30.0f, 1e-6}};
    for (const Op& op : ops) {
      auto dx = to_device(x), dout = to_device(std::vector<float>(n));
      kernels::elementwise_unary(op.op, dout.ptr(), dx.ptr(), n, op.param, s.handle());
      s.synchronize();
      report(op.name, fmt::format("n {}", n), normalized_error(from_device<float>(dout, n), op.want.data), op.bound);
      // In place.
      kernels::elementwise_unary(op.op, dx.ptr(), dx.ptr(), n, op.param, s.handle());
      s.synchronize();
      report(op.name, fmt::format("n {} in place", n), normalized_error(from_device<float>(dx, n), op.want.data),
             op.bound);
    }
  }
}

TEST(GpuArgmax, FirstOfEqualMaximaNaNLoses) {
  REQUIRE_GPU();
  cuda::Stream s;
  uint32_t seed = 200;
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 262144}, {1, 151936}, {4, 32000}, {16, 128256}, {3, 7},
                         {1, 1}, {2, 2049}}) {
    std::vector<float> x = random_values(rows * n, seed++);
    // Ties: plant a maximum twice in each row (the first must win), NaN before it, -inf elsewhere.
    for (int64_t r = 0; r < rows; ++r) {
      float* xr = x.data() + r * n;
      const int64_t a = (r * 7919 + 13) % n, b = (a + n / 2 + 1) % n;
      xr[a] = 50.0f;
      xr[b] = 50.0f;
      if (n > 3) xr[std::min(a, b) / 2] = NAN;
      if (n > 5) xr[n - 1] = -INFINITY;
    }
    if (rows > 1) std::fill(x.begin() + (rows - 1) * n, x.end(), NAN);  // all NaN: index 0, as the interpreter
    std::vector<int32_t> want = argmax(Tensor({rows, n}, x));
    auto dx = to_device(x), dout = to_device(std::vector<int32_t>(rows, -1));
    cuda::DeviceBuffer work(std::max<size_t>(kernels::argmax_workspace_bytes(rows, n), 16), "argmax workspace");
    work.zero();
    for (int twice = 0; twice < 2; ++twice) {  // the second launch checks the counters were left zero
      kernels::argmax(dout.ptr(), dx.ptr(), rows, n, work.ptr(), s.handle());
      s.synchronize();
      EXPECT_EQ(from_device<int32_t>(dout, rows), want) << "rows " << rows << " n " << n << " launch " << twice;
    }
    std::printf("  argmax                 rows %lld n %lld: %s\n", (long long)rows, (long long)n,
                from_device<int32_t>(dout, rows) == want ? "equal" : "DIFFERENT");
  }
}

TEST(GpuRoute, SoftmaxTopKRenormalized) {
  REQUIRE_GPU();
  cuda::Stream s;
  struct Case { int64_t rows, n_expert, k; bool renormalize; bool ties; };
  const Case cases[] = {{1, 128, 8, true, false}, {16, 128, 8, true, true},  {5, 64, 6, false, false},
                        {3, 8, 2, true, true},    {7, 256, 8, true, false},  {2, 60, 4, false, true},
                        {9, 32, 32, true, false}, {1, 1, 1, true, false}};
  uint32_t seed = 300;
  for (const Case& c : cases) {
    std::vector<float> logits = random_values(c.rows * c.n_expert, seed++, 2.0f);
    if (c.ties)  // coarse values: many equal logits, the lower index must go first
      for (float& v : logits) v = std::round(v);
    std::vector<int32_t> want_ids;
    std::vector<float> want_w;
    MixtureOptions options{c.k, c.renormalize};
    for (int64_t r = 0; r < c.rows; ++r) {
      std::vector<int32_t> ids;
      std::vector<float> w;
      route_top_k({logits.data() + r * c.n_expert, static_cast<size_t>(c.n_expert)}, options, ids, w);
      want_ids.insert(want_ids.end(), ids.begin(), ids.end());
      want_w.insert(want_w.end(), w.begin(), w.end());
    }
    auto dl = to_device(logits), dids = to_device(std::vector<int32_t>(c.rows * c.k)),
         dw = to_device(std::vector<float>(c.rows * c.k));
    kernels::route_top_k(dids.ptr(), dw.ptr(), dl.ptr(), c.rows, c.n_expert, c.k, c.renormalize, s.handle());
    s.synchronize();
    const std::string shape = fmt::format("rows {} experts {} k {}{}{}", c.rows, c.n_expert, c.k,
                                          c.renormalize ? " renorm" : "", c.ties ? " ties" : "");
    EXPECT_EQ(from_device<int32_t>(dids, want_ids.size()), want_ids) << shape;
    report("route_top_k", shape, normalized_error(from_device<float>(dw, want_w.size()), want_w), 1e-6);
  }
}

TEST(GpuArgmaxSpeed, VocabularyRows) {
  REQUIRE_GPU();
  cuda::Stream s;
  for (int64_t n : {int64_t{151936}, int64_t{262144}}) {
    auto dx = to_device(random_values(n, 9)), dout = to_device(std::vector<int32_t>(1));
    cuda::DeviceBuffer work(std::max<size_t>(kernels::argmax_workspace_bytes(1, n), 16), "argmax workspace");
    work.zero();
    cuda::CapturedGraph graph;
    graph.begin(s);
    for (int i = 0; i < 50; ++i) kernels::argmax(dout.ptr(), dx.ptr(), 1, n, work.ptr(), s.handle());
    graph.end(s);
    graph.replay(s);
    std::vector<double> us;
    for (int rep = 0; rep < 7; ++rep) {
      cuda::EventTimer t;
      t.start(s);
      graph.replay(s);
      us.push_back(1000.0 * t.stop(s) / 50.0);
    }
    std::printf("  argmax speed n %lld: %.2f us (%.0f GB/s, from L2)\n", (long long)n, median(us),
                double(n) * 4 / (median(us) * 1e-6) / 1e9);
  }
}

}  // namespace
}  // namespace lathe::test
