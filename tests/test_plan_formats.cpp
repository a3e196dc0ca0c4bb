// The plan on a virtual H200 (cuda::Recorder: no GPU) for checkpoints in llama.cpp's lower K mixes
// (synthetic qwen3-0.6b of 3 layers: q2_k, q3_k_m, q4_k_m, q5_k_m): the decode step and a 16-row chunk
// plan, and every launch names a kernel of the library. In a chunk a merged q/k/v group may mix
// formats that take different prefill kernels (q5_k_m's third layer: q and k Q5_K, read in f32 by
// the batched product; v Q6_K, on f16 tensor cores): the group's f16 form of x is made by the first
// product that reads it, not by the first product. (The plan threw a range error for such a group.)
#include "gguf/gguf_file.h"
#include "model/model_program.h"
#include "model/model_spec.h"
#include "model/synth.h"
#include "plan/device_model.h"
#include "plan/step_plan.h"
#include "runtime/cuda_driver.h"
#include "runtime/gpu_engine.h"
#include "test_recorder_helpers.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace lathe {
namespace {

struct RecordedLaunch {
  std::string what;
  std::vector<std::string> kernels;
};

// The `rows`-row step of the checkpoint at `path`, planned and run on a virtual H200.
std::vector<RecordedLaunch> record(const std::string& path, int64_t rows) {
  cuda::Recorder rec(test::virtual_h200(), test::library_param_sizes());
  const GgufFile f = GgufFile::open(path);
  const ModelSpec spec = read_model_spec(f);
  const ModelProgram mp = model_program(f, spec, 64);
  const graph::Graph g = lift_cut(f, mp, rows);
  std::set<std::string> constants;
  for (const graph::Tensor& t : g.tensors)
    if (t.role == graph::Role::constant) constants.insert(t.checkpoint_name);
  const plan::DeviceModel model(f, constants, {spec.n_layer, 1, 64, spec.n_head_kv, spec.head_dim}, 0, 0);
  plan::PlanOptions po;
  const plan::StepPlan p(g, model, po);
  std::vector<RecordedLaunch> out;
  for (const plan::Launch& l : p.launches()) {
    rec.clear_ops();
    l.run(nullptr);
    RecordedLaunch r{l.what, {}};
    for (const cuda::RecordedOp& op : rec.ops())
      if (op.kind == cuda::RecordedOp::Kind::launch) r.kernels.push_back(op.kernel);
    out.push_back(std::move(r));
  }
  return out;
}

std::string synth_06b(const std::string& type) {
  const std::string p = testing::TempDir() + "/plan-formats-qwen3-0.6b-" + type + ".gguf";
  SynthOptions o;
  o.shape = "qwen3-0.6b";
  o.type = type;
  o.layers = 3;
  write_synthetic_checkpoint(o, p);
  return p;
}

TEST(PlanFormats, LowerKMixesPlanTheirDecodeStepAndChunks) {
  for (const char* type : {"q2_k", "q3_k_m", "q4_k_m", "q5_k_m"}) {
    SCOPED_TRACE(type);
    const std::string path = synth_06b(type);
    for (int64_t rows : {1, 16}) {
      std::vector<RecordedLaunch> launches;
      ASSERT_NO_THROW(launches = record(path, rows)) << rows << " rows";
      size_t kernels = 0;
      for (const RecordedLaunch& l : launches) kernels += l.kernels.size();
      EXPECT_GT(kernels, 3u * 5u) << rows << " rows";  // (unknown kernels would have thrown in the recorder)
    }
  }
}

TEST(PlanFormats, AMixedChunkGroupMakesXsF16FormWhereItIsFirstRead) {
  const std::vector<RecordedLaunch> launches = record(synth_06b("q5_k_m"), 16);
  // Layer 2's q, k (Q5_K, the batched f32 product) and v (Q6_K) read one normed x.
  int seen = 0;
  for (size_t i = 0; i + 2 < launches.size(); ++i) {
    const std::string& q = launches[i].what;
    if (q.rfind("matmul q5_K [16 x 1024] . [2048 x 1024]", 0) != 0) continue;
    const std::string& k = launches[i + 1].what;
    const std::string& v = launches[i + 2].what;
    if (v.find("q6_K [16 x 1024] . [1024 x 1024]") == std::string::npos) continue;
    ++seen;
    EXPECT_EQ(k.rfind("matmul q5_K [16 x 1024] . [1024 x 1024]", 0), 0u) << k;
    EXPECT_EQ(v.rfind("gemm ", 0), 0u) << v;
    const std::vector<std::string>& ops = launches[i + 2].kernels;
    ASSERT_FALSE(ops.empty()) << v;
    EXPECT_EQ(ops.front(), "lathe_convert_f32_to_f16") << v << ": x's f16 form, made by the product that first reads it";
    for (size_t j = i; j < i + 2; ++j)
      for (const std::string& kernel : launches[j].kernels) EXPECT_NE(kernel, "lathe_convert_f32_to_f16") << launches[j].what;
  }
  EXPECT_EQ(seen, 1) << "layer 2 of q5_k_m's mix: q and k Q5_K, v Q6_K (use_more_bits)";
}

}  // namespace
}  // namespace lathe
