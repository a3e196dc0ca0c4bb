// The persistent decode step (runtime/persistent_step.h) against the graph of kernels it replaces:
// the same checkpoint, the same prompt and the same decode steps give the same logits bit for bit
// (every phase runs its kernel's body with the kernel's own arguments), over formats, contracts and
// architectures, across many replays of the captured step (the grid barrier sets itself back).
// Skips where there is no GPU.
#include "gguf/gguf_file.h"
#include "model/synth.h"
#include "runtime/cuda_driver.h"
#include "runtime/gpu_engine.h"

#include <gtest/gtest.h>

#include <cstring>

namespace lathe {
namespace {

GgufFile synthetic(const std::string& shape, const std::string& type, int64_t layers) {
  const std::string path = testing::TempDir() + "/persistent-" + shape + "-" + type + ".gguf";
  SynthOptions o;
  o.shape = shape;
  o.type = type;
  o.layers = layers;
  write_synthetic_checkpoint(o, path);
  return GgufFile::open(path);
}

// Logits of a 12-token prompt and `steps` decode steps, then `greedy` greedy tokens.
struct Trace {
  std::vector<float> logits;
  std::vector<int32_t> tokens;
};
Trace trace(GpuEngine& e, int steps, int greedy) {
  Trace t;
  std::vector<int32_t> ids;
  for (int i = 0; i < 12; ++i) ids.push_back((i * 37 + 5) % 300);
  e.run(ids, 0, false);
  for (int s = 0; s < steps; ++s) {
    const int32_t one[1] = {(s * 11 + 3) % 300};
    const std::vector<float> l = e.run(one, 12 + s, false);
    t.logits.insert(t.logits.end(), l.begin(), l.end());
  }
  int32_t tok = 7;
  for (int s = 0; s < greedy; ++s) t.tokens.push_back(tok = e.run_greedy(tok, 12 + steps + s));
  return t;
}

struct Case {
  std::string shape, type;
  int64_t layers;
  kernels::Activations activations;
};

class PersistentStepCase : public testing::TestWithParam<Case> {};

TEST_P(PersistentStepCase, GivesTheGraphOfKernelsLogitsBitForBit) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  const Case c = GetParam();
  const GgufFile f = synthetic(c.shape, c.type, c.layers);
  GpuEngineOptions go;
  go.n_ctx = 256;
  go.max_chunk = 16;
  go.activations = c.activations;
  GpuEngine plain(f, go);
  const Trace base = trace(plain, 6, 24);
  go.persistent = true;
  GpuEngine persistent(f, go);
  const Trace got = trace(persistent, 6, 24);

  ASSERT_NE(persistent.persistent_step(), nullptr);
  const PersistentStep& ps = *persistent.persistent_step();
  std::printf("[ persistent ] %s %s %s: %s\n", c.shape.c_str(), c.type.c_str(),
              std::string(kernels::activations_name(c.activations)).c_str(), ps.describe().c_str());
  EXPECT_GT(ps.launches_replaced(), 4u);  // every layer's products, rope and attention at least
  EXPECT_LT(ps.launches(), persistent.plan(1).launches().size());  // its own plan (rope_attention held)
  ASSERT_EQ(got.logits.size(), base.logits.size());
  size_t differ = 0;
  for (size_t i = 0; i < base.logits.size(); ++i)
    differ += std::memcmp(&got.logits[i], &base.logits[i], sizeof(float)) != 0;
  EXPECT_EQ(differ, 0u) << "of " << base.logits.size() << " logits";
  EXPECT_EQ(got.tokens, base.tokens);
}

INSTANTIATE_TEST_SUITE_P(
    Formats, PersistentStepCase,
    testing::Values(Case{"qwen3-tiny", "q8_0", 0, kernels::Activations::int8x2},
                    Case{"qwen3-tiny", "q8_0", 0, kernels::Activations::int8},
                    Case{"llama-tiny", "q8_0", 0, kernels::Activations::int8x2},
                    Case{"qwen3-tiny", "q4_k_m", 0, kernels::Activations::int8x2},
                    Case{"qwen3moe-tiny", "q8_0", 0, kernels::Activations::int8x2},
                    Case{"qwen3-0.6b", "q8_0", 2, kernels::Activations::int8x2},
                    Case{"qwen3-0.6b", "q4_k_m", 2, kernels::Activations::int8x2}),
    [](const testing::TestParamInfo<Case>& i) {
      std::string n = i.param.shape + "_" + i.param.type + "_" + std::string(kernels::activations_name(i.param.activations));
      for (char& ch : n)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

}  // namespace
}  // namespace lathe
