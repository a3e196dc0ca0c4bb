// The plan on a virtual H200 (cuda::Recorder: no GPU) for checkpoints in llama.cpp's lower K mixes
// (synthetic qwen3-0.6b of 3 layers: q2_k, q3_k_m, q4_k_m, q5_k_m): the decode step and a 16-row chunk
// plan, and every launch names a kernel of the library. In a chunk a merged q/k/v group may mix
// formats that take different prefill kernels (Q5_0 q and k, read in f32 by the batched product,
// beside a Q8_0 v on f16 tensor cores: a Q4_K_M file's fallbacks where rows are not whole 256-value
// blocks): the group's f16 form of x is made by the first product that reads it, not by the first
// product. (The plan threw a range error for such a group; a q5_k_m or q3_k_m file's was one until
// Q5_K and Q3_K took the f16 GEMMs too.)
#include "gguf/block_format.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/model_program.h"
#include "model/model_spec.h"
#include "model/synth.h"
#include "plan/device_model.h"
#include "plan/step_plan.h"
#include "runtime/cuda_driver.h"
#include "runtime/gpu_engine.h"
#include "test_recorder_helpers.h"

#include <gtest/gtest.h>

#include <cstring>
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

// qwen3-tiny Q8_0 with layer 1's q and k re-quantized to Q5_0, which only the f32 batched product
// reads in a chunk, beside its Q8_0 v (f16 tensor cores): as a Q4_K_M file's q and k fall back to
// Q5_0 and its more-bits v to Q8_0 where rows are not whole 256-value blocks.
std::string mixed_qkv() {
  const std::string base = testing::TempDir() + "/plan-formats-qwen3-tiny-q8_0.gguf";
  SynthOptions o;
  o.shape = "qwen3-tiny";
  o.type = "q8_0";
  write_synthetic_checkpoint(o, base);
  const GgufFile f = GgufFile::open(base);
  GgufWriter w;
  for (const auto& [key, value] : f.metadata()) w.set(key, value);
  for (const GgufTensor& t : f.tensors()) {
    const int64_t n = t.dims[0], rows = t.n_rows();
    const bool requantize = t.name == "blk.1.attn_q.weight" || t.name == "blk.1.attn_k.weight";
    const GgmlType type = requantize ? GgmlType::Q5_0 : t.type;
    std::vector<uint8_t> data(static_cast<size_t>(rows * row_bytes(type, n)));
    if (!requantize) {
      std::memcpy(data.data(), t.data, data.size());
    } else {
      std::vector<float> row(static_cast<size_t>(n));
      for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(t.type, t.data + r * row_bytes(t.type, n), row.data(), n);
        quantize_row(type, row.data(), data.data() + r * row_bytes(type, n), n);
      }
    }
    w.add_tensor(t.name, t.dims, type, std::move(data));
  }
  const std::string path = testing::TempDir() + "/plan-formats-mixed-qkv.gguf";
  w.write(path);
  return path;
}

TEST(PlanFormats, AMixedChunkGroupMakesXsF16FormWhereItIsFirstRead) {
  const std::vector<RecordedLaunch> launches = record(mixed_qkv(), 16);
  // Layer 1's q, k (Q5_0, the batched f32 product) and v (Q8_0) read one normed x.
  int seen = 0;
  for (size_t i = 0; i + 2 < launches.size(); ++i) {
    const std::string& q = launches[i].what;
    if (q.rfind("matmul q5_0 [16 x 256] . [256 x 256]", 0) != 0) continue;
    const std::string& k = launches[i + 1].what;
    const std::string& v = launches[i + 2].what;
    ++seen;
    EXPECT_EQ(k.rfind("matmul q5_0 [16 x 256] . [128 x 256]", 0), 0u) << k;
    EXPECT_NE(v.find("q8_0 [16 x 256] . [128 x 256]"), std::string::npos) << v;
    EXPECT_EQ(v.rfind("gemm ", 0), 0u) << v;
    const std::vector<std::string>& ops = launches[i + 2].kernels;
    ASSERT_FALSE(ops.empty()) << v;
    EXPECT_EQ(ops.front(), "lathe_convert_f32_to_f16") << v << ": x's f16 form, made by the product that first reads it";
    for (size_t j = i; j < i + 2; ++j)
      for (const std::string& kernel : launches[j].kernels) EXPECT_NE(kernel, "lathe_convert_f32_to_f16") << launches[j].what;
  }
  EXPECT_EQ(seen, 1) << "layer 1's q and k Q5_0, its v Q8_0";
}

// Q5_K's matrices take the f16 tensor-core GEMM in a chunk (not the f32 batched product).
TEST(PlanFormats, Q5KChunksRunOnTensorCores) {
  int f16 = 0, f32 = 0;
  for (const RecordedLaunch& l : record(synth_06b("q5_k_m"), 16)) {
    if (l.what.find("q5_K [16 x") == std::string::npos) continue;
    if (l.what.rfind("gemm ", 0) == 0) ++f16;
    if (l.what.rfind("matmul ", 0) == 0) ++f32;
  }
  EXPECT_GT(f16, 0);
  EXPECT_EQ(f32, 0);
}

}  // namespace
}  // namespace lathe
