// The CPU reference ops against numpy: tests/data/cpu_ops/fixtures.json, written by
// scripts/make_cpu_op_fixtures.py from HF-transformers-style formulas in float64.
#include "test_cpu_ops_helpers.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

namespace lathe {
namespace {

using nlohmann::json;

Tensor tensor_of(const json& j) {
  return Tensor(j.at("shape").get<std::vector<int64_t>>(), j.at("data").get<std::vector<float>>());
}

const json& fixtures() {
  static const json all = [] {
    std::ifstream in(LATHE_TEST_DATA "/cpu_ops/fixtures.json");
    EXPECT_TRUE(in.good()) << "run scripts/make_cpu_op_fixtures.py";
    return json::parse(in);
  }();
  return all;
}

Tensor run_case(const json& c) {
  std::string op = c.at("op");
  if (op == "rms_norm") return rms_norm(tensor_of(c["x"]), tensor_of(c["weight"]), c["eps"]);
  if (op == "layer_norm")
    return layer_norm(tensor_of(c["x"]), tensor_of(c["weight"]), tensor_of(c["bias"]), c["eps"]);
  if (op == "softmax") return softmax(tensor_of(c["x"]));
  if (op == "gelu") return gelu(tensor_of(c["x"]));
  if (op == "silu") return silu(tensor_of(c["x"]));
  if (op == "rope") {
    const json& s = c["scaling"];
    RopeFreqScaling scaling{s["kind"], s["factor"], s["low_freq_factor"], s["high_freq_factor"],
                            s["original_context"], {}};
    auto positions = c["positions"].get<std::vector<int32_t>>();
    RopeOrder order = c["order"] == "normal" ? RopeOrder::normal : RopeOrder::neox;
    return rope(tensor_of(c["x"]), positions, c["n_rot"], c["base"], order, scaling);
  }
  if (op == "attention") {
    AttentionOptions options{c["scale"], c["window"], c["cap"], c["sinks"].get<std::vector<float>>()};
    auto positions = c["positions"].get<std::vector<int32_t>>();
    return attention(tensor_of(c["q"]), tensor_of(c["k"]), tensor_of(c["v"]), positions, options);
  }
  if (op == "mixture") {
    auto router = test::f32_matrix_of(tensor_of(c["router"]));
    auto gate = test::f32_matrix_of(tensor_of(c["gate"]));
    auto up = test::f32_matrix_of(tensor_of(c["up"]));
    auto down = test::f32_matrix_of(tensor_of(c["down"]));
    MixtureOptions options{c["k"], c["renormalize"]};
    return mixture(tensor_of(c["x"]), router.ref, gate.ref, up.ref, down.ref, options);
  }
  ADD_FAILURE() << "unknown op " << op;
  return {};
}

TEST(CpuOpsFixtures, AgreeWithNumpy) {
  std::map<std::string, int> seen;
  for (const json& c : fixtures().at("cases")) {
    std::string what = c["op"].get<std::string>() + " #" + std::to_string(seen[c["op"]]++);
    // The fixtures' float64 answers were rounded once to f32; ours are within a few f32 ulps of them.
    test::expect_close(run_case(c), tensor_of(c["expected"]), 2e-6, what);
  }
  for (const char* op : {"rms_norm", "layer_norm", "softmax", "gelu", "silu", "rope", "attention", "mixture"})
    EXPECT_GT(seen[op], 0) << op;
}

}  // namespace
}  // namespace lathe
