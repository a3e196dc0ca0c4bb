// The GPU lane end to end: every fusion rule held back gives the same logits as the fused plan, and
// the lane agrees with the reference interpreter within the numerics contract, on every
// architecture, for a prefill chunk and decode steps. Skips where there is no GPU.
#include "fuse/fusion.h"
#include "gguf/gguf_file.h"
#include "model/model_program.h"
#include "model/model_spec.h"
#include "model/synth.h"
#include "plan/step_plan.h"
#include "runtime/cpu_engine.h"
#include "runtime/cuda_driver.h"
#include "runtime/generate.h"
#include "runtime/gpu_engine.h"
#include "runtime/sampler.h"
#include "runtime/tokenizer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace lathe {
namespace {

double normalized(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

// A synthetic checkpoint of `shape` (layers 0: its own count), written once per name under the test's
// temporary directory.
GgufFile synthetic(const std::string& shape, const std::string& name, int64_t layers = 0) {
  const std::string path = testing::TempDir() + "/lane-" + name + ".gguf";
  SynthOptions o;
  o.shape = shape;
  o.layers = layers;
  write_synthetic_checkpoint(o, path);
  return GgufFile::open(path);
}

// Logits of a 12-token prompt (one chunk of 8, one of 4) and 4 decode steps, concatenated.
std::vector<float> trace(Engine& e) {
  std::vector<int32_t> ids;
  for (int i = 0; i < 12; ++i) ids.push_back((i * 37 + 5) % 300);
  std::vector<float> out = e.run(ids, 0, true);
  for (int s = 0; s < 4; ++s) {
    const int32_t one[1] = {(s * 11 + 3) % 300};
    std::vector<float> l = e.run(one, 12 + s, false);
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

// A plan (n_ctx 64, chunks of 8) against the same plan with `rule` held back and against the
// interpreter: both plans' descriptions and the traces' normalized differences.
struct AgainstHeld {
  std::string plan, held_plan;
  double vs_held = 0.0, vs_cpu = 0.0;
};
AgainstHeld against_held(const GgufFile& f, const std::string& rule) {
  GpuEngineOptions go;
  go.n_ctx = 64;
  go.max_chunk = 8;
  GpuEngine fused(f, go);
  AgainstHeld r;
  r.plan = fused.plan(1).describe();
  const std::vector<float> got = trace(fused);
  GpuEngineOptions held_options = go;
  held_options.held = {rule};
  GpuEngine held(f, held_options);
  r.held_plan = held.plan(1).describe();
  const std::vector<float> base = trace(held);
  CpuEngine cpu(f, 64, 8);
  r.vs_held = normalized(got, base);
  r.vs_cpu = normalized(got, trace(cpu));
  return r;
}

class GpuLane : public testing::TestWithParam<std::string> {};

// Every rule held back alone against the fused plan, then the fused plan against the interpreter.
void check_rules_and_interpreter(const std::string& shape, const std::string& program_file) {
  const GgufFile f = synthetic(shape, shape);
  GpuEngineOptions go;
  go.n_ctx = 64;
  go.max_chunk = 8;
  go.program_file = program_file;
  GpuEngine fused(f, go);
  const std::vector<float> base = trace(fused);
  for (const fuse::Rule& r : fuse::fusion_rules()) {
    GpuEngineOptions held = go;
    held.held = {std::string(r.name)};
    // rope_append claims what qk_norm_rope and kv_append would: hold it too to test those.
    if (r.name == "qk_norm_rope" || r.name == "kv_append") held.held.insert("rope_append");
    GpuEngine e(f, held);
    const double err = normalized(trace(e), base);
    // A fused kernel sums in another order than the kernels it replaces; f32 rounding differences
    // then flip a few f16 roundings of the KV cache. Measured on the H200: add_norm 2.6e-5 to 4.1e-5,
    // qk_norm_rope, kv_append, rope_append and rope_attention 0 (the same arithmetic), quantize_epilogue
    // 2.5e-6 to 4.3e-5 (2026-12-01; not traced); elementwise_run may
    // contract a product and a sum into one FMA. The prompt's chunks run the flash attention, which
    // rounds q and the softmax weights to f16: a last-bit change of q flips some of those roundings
    // (add_norm held on qwen3moe-tiny: 1.17e-4 since then; 2.6e-5 to 4.3e-5 on the others).
    EXPECT_LT(err, 2.5e-4) << r.name << " held back";
    std::printf("[ lane ] %-14s %-17s held: %.2e\n", shape.c_str(), std::string(r.name).c_str(), err);
  }
  CpuEngine cpu(f, 64, 8, program_file);
  const double err = normalized(base, trace(cpu));
  EXPECT_LT(err, 2e-3);  // int8x2 (docs/numerics.md)
  std::printf("[ lane ] %-14s gpu vs interpreter: %.2e%s\n", shape.c_str(), err, program_file.empty() ? "" : " (program file)");
}

TEST_P(GpuLane, HeldBackRulesAndTheInterpreterAgree) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  check_rules_and_interpreter(GetParam(), "");
}

// A program with runs of elementwise statements (tests/data/programs/): elementwise_run applies.
TEST(GpuLaneProgram, ElementwiseRunsAgree) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  check_rules_and_interpreter("qwen3-tiny", std::string(LATHE_TEST_DATA) + "/programs/qwen3_elementwise_runs.lathe");
}

// Residence on a card of any size: a --gpu-memory cap just above what the caches and steps need
// moves matrices to pinned host memory (the embedding first); the kernels read them there over
// PCIe and the logits are those of the all-on-device plan, bit for bit. A cap below the fixed needs
// is refused with the numbers.
TEST(GpuLaneResidence, MatricesInPinnedHostMemoryGiveTheSameLogits) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  const GgufFile f = synthetic("qwen3-tiny", "residence");
  GpuEngineOptions go;
  go.n_ctx = 64;
  go.max_chunk = 8;
  GpuEngine all(f, go);
  ASSERT_EQ(all.device_model().host_bytes(), 0u);
  const std::vector<float> base = trace(all);
  const size_t weights = all.device_model().device_bytes(), fixed = all.device_model().fixed_bytes();
  GpuEngineOptions capped = go;
  capped.gpu_memory = fixed + weights / 2;  // about half the weights' bytes must move
  GpuEngine half(f, capped);
  std::printf("[ lane ] residence at cap %.3f GB: %s\n", capped.gpu_memory / 1e9, half.device_model().residence().c_str());
  EXPECT_GE(half.device_model().host_bytes(), weights / 2);
  EXPECT_LE(half.device_model().device_bytes() + fixed, capped.gpu_memory);
  EXPECT_EQ(normalized(trace(half), base), 0.0);
  capped.gpu_memory = fixed - 1;  // not even the caches and step buffers fit
  try {
    GpuEngine none(f, capped);
    ADD_FAILURE() << "a cap below the caches and step buffers was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("too little GPU memory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(the --gpu-memory cap)"), std::string::npos) << e.what();
  }
}

// norm_prologue (on by default): a decode row's sum and norm in the merged GEMV's
// prologue, against the plan without it (add_rms_norm then the merged kernel) and the interpreter.
TEST(GpuLaneNormPrologue, AgreesWithHeldBackAndInterpreter) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  for (const std::string shape : {"qwen3-tiny", "llama-tiny", "qwen3moe-tiny"}) {
    const GgufFile f = synthetic(shape, "norm-prologue-" + shape);
    GpuEngineOptions go;
    go.n_ctx = 64;
    go.max_chunk = 8;
    go.held = {"router_epilogue"};  // which takes the mixture's norm prologue over (GpuLaneRouterEpilogue)
    GpuEngine fused(f, go);
    const std::vector<float> got = trace(fused);
    const std::string plan = fused.plan(1).describe();
    GpuEngineOptions held_options = go;
    held_options.held = {"norm_prologue", "router_epilogue"};
    GpuEngine held(f, held_options);
    const std::vector<float> base = trace(held);
    CpuEngine cpu(f, 64, 8);
    const double vs_held = normalized(got, base), vs_cpu = normalized(got, trace(cpu));
    std::printf("[ lane ] %-14s norm in the prologue: vs held back %.2e, vs interpreter %.2e\n", shape.c_str(), vs_held,
                vs_cpu);
    EXPECT_NE(plan.find("with the norm in its prologue"), std::string::npos) << plan;
    if (shape == "qwen3moe-tiny") {  // and the mixture's router (bit for bit add_rms_norm's: test_moe_gpu)
      EXPECT_NE(plan.find("with the norm in the router's prologue"), std::string::npos) << plan;
    }
    EXPECT_LT(vs_held, 2.5e-4);  // as add_norm: the norm's sum of squares in another order
    EXPECT_LT(vs_cpu, 2e-3);
  }
}

// router_epilogue (on by default): the mixture's router in the o product's epilogue, against the plan
// without it (the o product, then the router kernel with the norm in its prologue) and the interpreter.
TEST(GpuLaneRouterEpilogue, AgreesWithHeldBackAndInterpreter) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  const AgainstHeld r = against_held(synthetic("qwen3moe-tiny", "router-epilogue"), "router_epilogue");
  std::printf("[ lane ] qwen3moe-tiny router in o's epilogue: vs held back %.2e, vs interpreter %.2e\n", r.vs_held,
              r.vs_cpu);
  EXPECT_NE(r.plan.find("in its epilogue"), std::string::npos) << r.plan;
  EXPECT_NE(r.plan.find("the router in the product's epilogue"), std::string::npos) << r.plan;
  EXPECT_EQ(r.held_plan.find("in its epilogue"), std::string::npos) << r.held_plan;
  EXPECT_LT(r.vs_held, 2.5e-4);  // the norm's squares and the logits added in another order
  EXPECT_LT(r.vs_cpu, 2e-3);
}

// norm_epilogue: the sum, the norm's weighting and x's int8 form in the epilogue of the product
// before the merged products (o before gate/up, down before the next q/k/v), against the plan without
// it and the interpreter. The tiny shapes' rows dealt by 32-row blocks leave SMs idle, so the launcher
// takes them only when forced (LATHE_NORM_EPILOGUE=force); the real shapes take it by default
// (lathe check of qwen3-8b and llama3-8b, scripts/device_run.sh).
TEST(GpuLaneNormEpilogue, AgreesWithHeldBackAndInterpreter) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  ASSERT_EQ(setenv("LATHE_NORM_EPILOGUE", "force", 1), 0);
  for (const std::string shape : {"qwen3-tiny", "llama-tiny", "qwen2-tiny"}) {
    const AgainstHeld r = against_held(synthetic(shape, "norm-epilogue-" + shape), "norm_epilogue");
    std::printf("[ lane ] %-14s norm in the product's epilogue: vs held back %.2e, vs interpreter %.2e\n",
                shape.c_str(), r.vs_held, r.vs_cpu);
    EXPECT_NE(r.plan.find("the norm's weighting in its epilogue"), std::string::npos) << r.plan;
    EXPECT_NE(r.plan.find("scaled by the norm's factor"), std::string::npos) << r.plan;
    EXPECT_EQ(r.held_plan.find("the norm's weighting in its epilogue"), std::string::npos) << r.held_plan;
    EXPECT_LT(r.vs_held, 2.5e-4);  // x's levels before the norm's factor; the squares in another order
    EXPECT_LT(r.vs_cpu, 2e-3);
  }
  unsetenv("LATHE_NORM_EPILOGUE");
}

// ffn_split: each layer's feed-forward half but the last and the next residual sum in one launch, the
// sum in fixed point read by the next layer's q/k/v prologue, against the plan without it and the
// interpreter. Four layers: the step takes three such launches, each zeroing the next one's sum, and
// the four decode steps of the trace check that the sums are zero again step after step. The mixture's
// form too (qwen3moe-tiny: its kept experts' halves in one launch after the router; taken only under
// LATHE_MOE_SPLIT=1, and not without it).
TEST(GpuLaneFfnSplit, AgreesWithHeldBackAndInterpreter) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  for (const std::string shape : {"qwen3-tiny", "llama-tiny", "qwen3moe-tiny"}) {
    const GgufFile f = synthetic(shape, "ffn-split-" + shape, 4);
    const bool moe = shape == "qwen3moe-tiny";
    // The mixture's form only under LATHE_MOE_SPLIT=1 (slower in the 30B's step so far).
    if (moe) {
      ASSERT_EQ(setenv("LATHE_MOE_SPLIT", "1", 1), 0);
    }
    const char* marker = moe ? "down split along its input (the next sum in fixed point)" : "feed-forward in one launch";
    const AgainstHeld r = against_held(f, "ffn_split");
    std::printf("[ lane ] %-14s feed-forward in one launch: vs held back %.2e, vs interpreter %.2e\n", shape.c_str(),
                r.vs_held, r.vs_cpu);
    size_t taken = 0;
    for (size_t at = r.plan.find(marker); at != std::string::npos; at = r.plan.find(marker, at + 1)) ++taken;
    EXPECT_EQ(taken, 3u) << r.plan;
    EXPECT_NE(r.plan.find("x the feed-forward launch's fixed-point sum"), std::string::npos) << r.plan;
    EXPECT_EQ(r.held_plan.find(marker), std::string::npos) << r.held_plan;
    EXPECT_LT(r.vs_held, 2.5e-4);  // gate/up summed in another order (a's levels), down's partials by slices
    EXPECT_LT(r.vs_cpu, 2e-3);
    if (!moe) {  // the levels layout by default; the packed form (LATHE_FFN_SPLIT_LEVELS=0): the same launches, other reads
      EXPECT_NE(r.plan.find("by slices (the levels layout)"), std::string::npos) << r.plan;
      ASSERT_EQ(setenv("LATHE_FFN_SPLIT_LEVELS", "0", 1), 0);
      const AgainstHeld pk = against_held(f, "ffn_split");
      unsetenv("LATHE_FFN_SPLIT_LEVELS");
      std::printf("[ lane ] %-14s feed-forward in one launch, packed form: vs held back %.2e, vs interpreter %.2e\n",
                  shape.c_str(), pk.vs_held, pk.vs_cpu);
      EXPECT_EQ(pk.plan.find("(the levels layout)"), std::string::npos) << pk.plan;
      EXPECT_NE(pk.plan.find(marker), std::string::npos) << pk.plan;
      EXPECT_LT(pk.vs_held, 2.5e-4);
      EXPECT_LT(pk.vs_cpu, 2e-3);
    }
    if (moe) {  // the one-wave form (LATHE_MOE_SPLIT=ring): the same launches, 64 values a block
      ASSERT_EQ(setenv("LATHE_MOE_SPLIT", "ring", 1), 0);
      const AgainstHeld wv = against_held(f, "ffn_split");
      std::printf("[ lane ] %-14s feed-forward in one launch, one wave: vs held back %.2e, vs interpreter %.2e\n",
                  shape.c_str(), wv.vs_held, wv.vs_cpu);
      EXPECT_NE(wv.plan.find(marker), std::string::npos) << wv.plan;
      EXPECT_LT(wv.vs_held, 2.5e-4);
      EXPECT_LT(wv.vs_cpu, 2e-3);
    }
    if (moe) {
      unsetenv("LATHE_MOE_SPLIT");
      GpuEngineOptions go;
      go.n_ctx = 64;
      go.max_chunk = 8;
      GpuEngine plain(f, go);
      const std::string plain_plan = plain.plan(1).describe();
      EXPECT_EQ(plain_plan.find(marker), std::string::npos) << "the mixture's form without LATHE_MOE_SPLIT=1";
    }
  }
}

// A decode step's range forms (plan::StepForm), a graph each: below long_from the attention planned
// for that many slots gives the one-form step's bits (the same splits); from it on the merge kernel
// merges the splits, with the last split's block's arithmetic: the same bits too where the long form
// splits by the one form's granule (128), and within 1e-4 by its default (16: other splits, so the
// partials are added in another grouping). The steps cross the line.
// o_split (LATHE_O_SPLIT=1): in the short form (every decode step here: n_ctx 64, below long_from 128) the attention's
// launch of layers 1 and 2 of 4 runs o too, into the residual's fixed-point sum the feed-forward
// launch then reads; against held back (the attention and o as two launches) and the interpreter.
TEST(GpuLaneOSplit, AgreesWithHeldBackAndInterpreter) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  for (const std::string shape : {"qwen3-tiny", "llama-tiny", "qwen3-tiny cluster"}) {
    // taken only under LATHE_O_SPLIT (slower so far): 1, or cluster for the cluster form
    const bool cluster = shape.ends_with(" cluster");
    ASSERT_EQ(setenv("LATHE_O_SPLIT", cluster ? "cluster" : "1", 1), 0);
    const std::string model = cluster ? shape.substr(0, shape.size() - 8) : shape;
    const GgufFile f = synthetic(model, "o-split-" + model, 4);
    const AgainstHeld r = against_held(f, "o_split");
    std::printf("[ lane ] %-18s attention and o in one launch: vs held back %.2e, vs interpreter %.2e\n",
                shape.c_str(), r.vs_held, r.vs_cpu);
    if (cluster) {
      EXPECT_NE(r.plan.find("cluster of 8 blocks a kv head"), std::string::npos) << r.plan;
    }
    const std::string marker = "split along its input into the residual's fixed-point sum";
    size_t taken = 0;
    for (size_t at = r.plan.find(marker); at != std::string::npos; at = r.plan.find(marker, at + 1)) ++taken;
    EXPECT_EQ(taken, 2u) << r.plan;
    EXPECT_EQ(r.held_plan.find(marker), std::string::npos) << r.held_plan;
    EXPECT_LT(r.vs_held, 2.5e-4);  // o's rows summed by kv head in fixed point, the residual read from the sum
    EXPECT_LT(r.vs_cpu, 2e-3);
  }
  unsetenv("LATHE_O_SPLIT");
}

// attention_half (LATHE_ATTENTION_HALF=1): in the short form the attention's launch of layers 1 and 2
// of 4 runs their q/k/v and o too, into a sum of its own that the feed-forward launch then reads;
// against held back (o_split's layers as q/k/v, the attention and o) and the interpreter.
TEST(GpuLaneAttentionHalf, AgreesWithHeldBackAndInterpreter) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  ASSERT_EQ(setenv("LATHE_ATTENTION_HALF", "1", 1), 0);
  for (const std::string shape : {"qwen3-tiny", "llama-tiny"}) {
    const GgufFile f = synthetic(shape, "attention-half-" + shape, 4);
    const AgainstHeld r = against_held(f, "attention_half");
    std::printf("[ lane ] %-18s attention half in one launch: vs held back %.2e, vs interpreter %.2e\n", shape.c_str(),
                r.vs_held, r.vs_cpu);
    const std::string marker = "attention half in one launch";
    size_t taken = 0;
    for (size_t at = r.plan.find(marker); at != std::string::npos; at = r.plan.find(marker, at + 1)) ++taken;
    EXPECT_EQ(taken, 2u) << r.plan;
    EXPECT_EQ(r.held_plan.find(marker), std::string::npos) << r.held_plan;
    EXPECT_LT(r.vs_held, 2.5e-4);  // as o_split's: q/k/v's sums in another order, o's rows in fixed point
    EXPECT_LT(r.vs_cpu, 2e-3);
  }
  unsetenv("LATHE_ATTENTION_HALF");
}

// The decode forms' tests: a 300-token prompt, then n steps at positions 300 .. (the logits of each).
std::vector<std::vector<float>> decode_after_prompt(Engine& e, int n) {
  std::vector<int32_t> ids;
  for (int i = 0; i < 300; ++i) ids.push_back((i * 41 + 7) % 300);
  std::vector<std::vector<float>> out;
  e.run(ids, 0, false);
  for (int s = 0; s < n; ++s) {
    const int32_t one[1] = {(s * 13 + 5) % 300};
    out.push_back(e.run(one, 300 + s, false));
  }
  return out;
}

TEST(GpuLaneDecodeForms, ShortAndLongFormsAgreeWithTheOneForm) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  const GgufFile f = synthetic("qwen3-tiny", "decode-forms");
  const auto steps = [&](GpuEngine& e) { return decode_after_prompt(e, 6); };
  GpuEngineOptions go;
  go.n_ctx = 512;
  go.max_chunk = 128;
  go.long_from = 0;
  GpuEngine one(f, go);
  EXPECT_EQ(one.plan(1).form_for(5000), plan::StepForm::any_position);
  const std::vector<std::vector<float>> base = steps(one);
  go.long_from = 303;
  CpuEngine cpu(f, 512, 128);
  const std::vector<std::vector<float>> refs = decode_after_prompt(cpu, 6);
  for (const int64_t granule : {128, 16}) {
    go.long_granule = granule;
    GpuEngine ranged(f, go);
    const std::vector<std::vector<float>> got = steps(ranged);
    const std::string plan = ranged.plan(1).describe();
    EXPECT_NE(plan.find(fmt::format("{}-slot granules, merged by a launch of their own", granule)), std::string::npos)
        << plan;
    EXPECT_EQ(ranged.plan(1).form_for(302), plan::StepForm::short_positions);
    EXPECT_EQ(ranged.plan(1).form_for(303), plan::StepForm::long_positions);
    for (int s = 0; s < 6; ++s) {
      const bool is_long = 300 + s >= 303;
      const double vs_one = normalized(got[static_cast<size_t>(s)], base[static_cast<size_t>(s)]);
      const double vs_cpu = normalized(got[static_cast<size_t>(s)], refs[static_cast<size_t>(s)]);
      std::printf("[ lane ] decode at %d (%s form, long granule %lld): vs one form %.2e, vs interpreter %.2e\n",
                  300 + s, is_long ? "long" : "short", static_cast<long long>(granule), vs_one, vs_cpu);
      if (granule == 128 || !is_long)
        EXPECT_EQ(got[static_cast<size_t>(s)], base[static_cast<size_t>(s)]) << "position " << 300 + s;
      else
        EXPECT_LT(vs_one, 1e-4) << "position " << 300 + s;
      EXPECT_LT(vs_cpu, 2e-3);
    }
  }
}

// A prompt whose caller reads only the last row's logits runs the chunk's prompt variant (the output
// product and argmax on the last row alone): its logits agree with the all-rows plan's last row
// within the contract (a GEMV row against the chunk's GEMM) and with the interpreter.
TEST(GpuLanePrompt, LastRowVariantAgreesWithAllRows) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  // qwen3-0.6b cut to one layer: a vocabulary of 151,936, whose one-row argmax splits the row (its
  // workspace is the variant's own).
  for (const auto& [shape, layers] : {std::pair<std::string, int>{"qwen3-tiny", 0}, {"llama-tiny", 0}, {"qwen3-0.6b", 1}}) {
    const GgufFile f = synthetic(shape, "last-row-" + shape, layers);
    GpuEngineOptions go;
    go.n_ctx = 128;
    go.max_chunk = 32;
    GpuEngine e(f, go);
    CpuEngine cpu(f, 128);
    std::vector<int32_t> ids;
    for (int i = 0; i < 45; ++i) ids.push_back((i * 53 + 11) % 300);  // chunks of 32, 8, 4 and 1
    const std::vector<float> last = e.run(ids, 0, false);
    const std::vector<float> all = e.run(ids, 0, true);
    const std::vector<float> all_last(all.end() - static_cast<long>(last.size()), all.end());
    const std::vector<float> ref = cpu.run(ids, 0, false);
    const double vs_all = normalized(last, all_last), vs_cpu = normalized(last, ref);
    std::printf("[ lane ] %-13s prompt variant: vs all rows %.2e, vs interpreter %.2e\n", shape.c_str(), vs_all, vs_cpu);
    EXPECT_LE(vs_all, 1e-3);
    EXPECT_LE(vs_cpu, 2e-3);
    EXPECT_NE(e.plan(32, true).describe().find("of the last row"), std::string::npos);
  }
}

// A chunk of qwen3-0.6b's shapes (k 1024: the register-A wgmma kernel reads q8_0 rows) on wgmma where
// the card has it: q, k and v in one launch and gate/up with the SwiGLU in one (or multi + SwiGLU),
// against merged_products and gate_up_swiglu held back (separate wgmma launches: the same outputs,
// bit for bit, the kernels promise) and against the interpreter.
TEST(GpuLaneChunk, MergedWgmmaProductsAgreeWithSeparateOnesAndTheInterpreter) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  const GgufFile f = synthetic("qwen3-0.6b", "wgmma-chunk", 2);
  std::vector<int32_t> ids;
  for (int i = 0; i < 64; ++i) ids.push_back((i * 53 + 11) % 3000);  // one chunk of 64 rows
  GpuEngineOptions go;
  go.n_ctx = 128;
  go.max_chunk = 64;
  GpuEngine merged(f, go);
  const std::vector<float> got = merged.run(ids, 0, true);
  const std::string plan = merged.plan(64).describe();
  GpuEngineOptions held_options = go;
  held_options.held = {"merged_products", "gate_up_swiglu"};
  GpuEngine held(f, held_options);
  const std::vector<float> base = held.run(ids, 0, true);
  CpuEngine cpu(f, 128, 64);
  const double vs_held = normalized(got, base), vs_cpu = normalized(got, cpu.run(ids, 0, true));
  std::printf("[ lane ] qwen3-0.6b 64-row chunk, merged products: vs held back %.2e, vs interpreter %.2e\n", vs_held,
              vs_cpu);
  if (plan.find("gemm wgmma of 3 matrices") == std::string::npos) {
    std::printf("[ lane ] no wgmma on this card: the chunk's plan is\n%s\n", plan.c_str());
  } else {
    EXPECT_NE(plan.find("gemm wgmma of 2 matrices"), std::string::npos) << plan;
    EXPECT_EQ(vs_held, 0.0);  // the same f16 weights and k order in one launch or three
  }
  EXPECT_LT(vs_cpu, 2e-3);
}

// Residence keeps StepPlan::estimate_bytes free for the steps before any plan exists: it must cover
// the arena each plan then takes, for a decode row and a full chunk, dense and mixture.
TEST(GpuLaneResidence, StepEstimateCoversThePlansArena) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  for (const std::string shape : {"qwen3-tiny", "qwen3moe-tiny"}) {
    const GgufFile f = synthetic(shape, "estimate-" + shape);
    GpuEngineOptions go;
    go.n_ctx = 1024;
    go.max_chunk = 512;
    GpuEngine e(f, go);
    const ModelSpec spec = read_model_spec(f);
    const ModelProgram program = model_program(f, spec, go.n_ctx, "");
    const plan::CacheShape caches{spec.n_layer, 1, go.n_ctx, spec.n_head_kv, spec.head_dim};
    for (int64_t rows : {int64_t{1}, int64_t{8}, int64_t{512}}) {
      const size_t estimate = plan::StepPlan::estimate_bytes(lift_cut(f, program, rows), caches);
      const size_t arena = e.plan(rows).arena_bytes();
      std::printf("[ lane ] %s %3ld rows: arena %.2f MB, estimate %.2f MB\n", shape.c_str(), static_cast<long>(rows),
                  arena / 1e6, estimate / 1e6);
      EXPECT_LE(arena, estimate) << shape << " rows " << rows;
    }
  }
}

// The mixture's three decode kernels (the default; LATHE_MOE_KERNELS=0 the eight launches) against the eight-launch path
// and the interpreter.
TEST(GpuLaneMixture, ThreeKernelsAgree) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  const GgufFile f = synthetic("qwen3moe-tiny", "moe");
  GpuEngineOptions go;
  go.n_ctx = 64;
  go.max_chunk = 8;
  ::setenv("LATHE_MOE_KERNELS", "0", 1);  // plans are made at first use: trace while it is set
  GpuEngine eight(f, go);
  const std::vector<float> base = trace(eight);
  ASSERT_EQ(eight.plan(1).describe().find("mixture in three kernels"), std::string::npos);
  ::unsetenv("LATHE_MOE_KERNELS");
  go.held = {"router_epilogue"};  // the three kernels as such (the router in o's epilogue: GpuLaneRouterEpilogue)
  GpuEngine three(f, go);
  const std::string plan = three.plan(1).describe();
  ASSERT_NE(plan.find("mixture in three kernels"), std::string::npos) << plan;
  const std::vector<float> got = trace(three);
  CpuEngine cpu(f, 64, 8);
  const double vs_eight = normalized(got, base), vs_cpu = normalized(got, trace(cpu));
  std::printf("[ lane ] qwen3moe-tiny three mixture kernels: vs eight launches %.2e, vs interpreter %.2e\n", vs_eight,
              vs_cpu);
  EXPECT_LT(vs_eight, 2.5e-4);
  EXPECT_LT(vs_cpu, 2e-3);
}

// Greedy generation asks the engine for each step's argmax (run_argmax: on the GPU the decode step's
// `next`, formed on the device, one id copied back): the same tokens as the logits copied back and
// their argmax taken on the host, and as the interpreter's.
TEST(GpuLaneGreedy, TheDevicesArgmaxGeneratesWhatTheLogitsDo) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  const GgufFile f = GgufFile::open(default_model_path());
  const Tokenizer tok = Tokenizer::from_gguf(f);
  const std::vector<int32_t> prompt = tok.encode("In the beginning God created", true, false);
  GpuEngineOptions go;
  go.n_ctx = 128;
  GpuEngine gpu(f, go);
  CpuEngine cpu(f, 128);
  SamplerOptions so;
  so.temperature = 0;
  for (Engine* e : {static_cast<Engine*>(&gpu), static_cast<Engine*>(&cpu)}) {
    Sampler greedy(so);
    std::vector<int32_t> by_argmax;
    GenerateOptions g;
    g.max_tokens = 24;
    g.stop_at_end = false;
    generate(*e, tok, prompt, 0, g, greedy, [](std::string_view) {}, &by_argmax);
    by_argmax.erase(by_argmax.begin(), by_argmax.begin() + static_cast<long>(prompt.size()));
    std::vector<int32_t> by_logits;
    std::vector<float> logits = e->run(prompt, 0, false);  // from the start again: the cache rewinds
    for (int i = 0; i < 24; ++i) {
      by_logits.push_back(argmax(logits));
      const int32_t one[1] = {by_logits.back()};
      if (i < 23) logits = e->run(one, static_cast<int64_t>(prompt.size()) + i, false);
    }
    EXPECT_EQ(by_argmax, by_logits) << e->name();
    // run_one (sampled generation's step: the GPU's from page-locked memory) gives run's logits.
    (void)e->run(prompt, 0, false);
    const int32_t one[1] = {by_logits[0]};
    const std::vector<float> want = e->run(one, static_cast<int64_t>(prompt.size()), false);
    (void)e->run(prompt, 0, false);
    const std::span<const float> got = e->run_one(by_logits[0], static_cast<int64_t>(prompt.size()));
    ASSERT_EQ(got.size(), want.size()) << e->name();
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << e->name();
  }
}

// Greedy steps chained on the device (run_argmax_steps: each step's graph replayed back to back, its
// argmax fed to the next by step_advance) make the tokens one step a call makes, across the decode
// step's change of form (short to long at 128, inside a chain) and at chain lengths that do not divide
// the steps.
TEST(GpuLaneGreedy, ChainedStepsMakeTheOneStepTokens) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  const GgufFile f = synthetic("qwen3-tiny", "chained-steps");
  std::vector<int32_t> prompt;
  for (int i = 0; i < 100; ++i) prompt.push_back((i * 37 + 11) % 1000);
  const int64_t steps = 90;  // positions 100 to 189: the long form from 128
  GpuEngineOptions go;
  go.n_ctx = 256;
  std::vector<int32_t> want;
  {
    go.decode_chain = 1;
    GpuEngine e(f, go);
    std::vector<float> logits = e.run(prompt, 0, false);
    int32_t t = argmax(logits);
    for (int64_t j = 0; j < steps; ++j) want.push_back(t = e.run_greedy(t, 100 + j));
    EXPECT_EQ(e.run_argmax_steps(want[0], 101, 8).size(), 1u);  // a chain of 1: one step a call
  }
  for (const int64_t chain : {16, 5}) {
    go.decode_chain = chain;
    GpuEngine e(f, go);
    ASSERT_EQ(e.plan(1).form_for(127), plan::StepForm::short_positions);
    std::vector<float> logits = e.run(prompt, 0, false);
    int32_t t = argmax(logits);
    std::vector<int32_t> got, lengths;
    while (static_cast<int64_t>(got.size()) < steps) {
      const std::vector<int32_t> ids =
          e.run_argmax_steps(t, 100 + static_cast<int64_t>(got.size()), steps - static_cast<int64_t>(got.size()));
      ASSERT_FALSE(ids.empty());
      lengths.push_back(static_cast<int32_t>(ids.size()));
      got.insert(got.end(), ids.begin(), ids.end());
      t = ids.back();
    }
    EXPECT_EQ(got, want) << "chain " << chain;
    // 16: five of 16 (the second, from 116, crosses into the long form at 128), then 10; 5: 18 of 5.
    std::string seen;
    for (int32_t l : lengths) seen += fmt::format("{} ", l);
    std::printf("[ lane ] chain %lld: steps by call %s\n", static_cast<long long>(chain), seen.c_str());
    EXPECT_EQ(lengths.size(), chain == 16 ? 6u : 18u) << seen;
    EXPECT_EQ(lengths.back(), chain == 16 ? 10 : 5) << seen;
  }
}

// Sampled steps chained on the device (run_sampled_steps: the top candidates kernel, then
// sample_head_advance drawing with the host sampler's uniforms) make the tokens the host sampler draws
// from each step's head (a chain of 1: run_head and sample_head a token), across the change of form at
// 128, for the defaults and for top-k alone; a penalty is not chained.
TEST(GpuLaneHead, ChainedSampledStepsDrawTheHostsTokens) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  const GgufFile f = synthetic("qwen3-tiny", "chained-sampled");
  const Tokenizer tok = Tokenizer::from_gguf(f);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 100; ++i) prompt.push_back((i * 37 + 11) % 1000);
  GenerateOptions g;
  g.max_tokens = 60;  // positions 100 to 158
  g.stop_at_end = false;
  std::vector<SamplerOptions> cases(3);
  cases[1].top_p = 1.0, cases[1].min_p = 0, cases[1].top_k = 5, cases[1].temperature = 1.5;
  cases[2].repeat_penalty = 1.1;
  for (size_t c = 0; c < cases.size(); ++c) {
    std::vector<int32_t> runs[2];
    for (const int64_t chain : {1, 16}) {
      GpuEngineOptions go;
      go.n_ctx = 256;
      go.decode_chain = chain;
      go.sampled_chain = true;
      GpuEngine e(f, go);
      Sampler s(cases[c]);
      if (chain == 16) {
        const std::vector<double> u = s.next_uniforms(4);
        const std::vector<int32_t> direct = e.run_sampled_steps(7, 0, 4, cases[c], u);
        EXPECT_EQ(direct.size(), cases[c].repeat_penalty == 1.0 ? 4u : 0u) << "case " << c;
      }
      generate(e, tok, prompt, 0, g, s, [](std::string_view) {}, &runs[chain == 16]);
    }
    EXPECT_EQ(runs[1], runs[0]) << "case " << c;
    EXPECT_EQ(runs[0].size(), prompt.size() + 60) << "case " << c;
  }
}

// Sampled generation with top-k (or greedy with a penalty) asks the engine for the step's head
// (run_head: on the GPU the top candidates kernel over the step's logits): the head is run_one's row's
// head (best_logits) with the penalized tokens' logits, and a seeded sampled generation makes the same
// tokens as one that samples every row on the host.
TEST(GpuLaneHead, TheDevicesHeadIsTheRowsHead) {
  std::string why;
  if (!cuda::gpu_available(&why)) GTEST_SKIP() << why;
  const GgufFile f = GgufFile::open(default_model_path());
  const Tokenizer tok = Tokenizer::from_gguf(f);
  const std::vector<int32_t> prompt = tok.encode("In the beginning God created", true, false);
  GpuEngineOptions go;
  go.n_ctx = 128;
  GpuEngine gpu(f, go);
  const int64_t pos = static_cast<int64_t>(prompt.size());
  const std::vector<int32_t> penalized{0, 3, 17, static_cast<int32_t>(gpu.n_vocab() - 1)};
  for (const int64_t m : {int64_t{1}, int64_t{40}, int64_t{44}, gpu.max_head()}) {
    (void)gpu.run(prompt, 0, false);
    const std::span<const float> row_view = gpu.run_one(7, pos);
    const std::vector<float> row(row_view.begin(), row_view.end());
    std::vector<float> values;
    std::vector<int32_t> tokens;
    best_logits(row, static_cast<size_t>(m), values, tokens);
    (void)gpu.run(prompt, 0, false);
    const LogitHead head = gpu.run_head(7, pos, m, penalized);
    ASSERT_EQ(head.tokens.size(), static_cast<size_t>(m));
    EXPECT_TRUE(std::equal(head.tokens.begin(), head.tokens.end(), tokens.begin())) << "m " << m;
    EXPECT_TRUE(std::equal(head.values.begin(), head.values.end(), values.begin())) << "m " << m;
    for (size_t j = 0; j < penalized.size(); ++j)
      EXPECT_EQ(head.penalized_values[j], row[static_cast<size_t>(penalized[j])]) << "penalized " << j;
  }
  // A seeded generation by heads against one whose every step samples the row copied back.
  SamplerOptions so;
  so.repeat_penalty = 1.3;
  so.temperature = 1.5;  // the tiny model's rows are peaked: a hot draw picks beyond the first token
  std::vector<int32_t> by_head;
  GenerateOptions g;
  g.max_tokens = 32;
  g.stop_at_end = false;
  Sampler s1(so);
  generate(gpu, tok, prompt, 0, g, s1, [](std::string_view) {}, &by_head);
  Sampler s2(so);
  std::vector<int32_t> seen(prompt.begin(), prompt.end());
  std::vector<float> logits = gpu.run(prompt, 0, false);
  for (int i = 0; i < 32; ++i) {
    seen.push_back(s2.sample(logits, seen));
    if (i < 31) {
      const std::span<const float> v = gpu.run_one(seen.back(), pos + i);
      logits.assign(v.begin(), v.end());
    }
  }
  EXPECT_EQ(by_head, seen);
}

INSTANTIATE_TEST_SUITE_P(Architectures, GpuLane,
                         testing::Values("qwen3-tiny", "qwen3moe-tiny", "qwen2-tiny", "llama-tiny"));

}  // namespace
}  // namespace lathe
