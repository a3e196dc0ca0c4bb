// Model specs: every synthetic shape reads back as the real model's numbers (written here from the
// models' published configs, not from shapes.cpp), the decode bytes match ../shared/anchors.md, and
// every inconsistency is refused naming the key or tensor.
#include "gguf/block_format.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/model_spec.h"
#include "model/synth.h"
#include "model/synth_blocks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace lathe {
namespace {

struct Known {
  const char* shape;
  Arch arch;
  int64_t vocab, embd, layers, heads, kv, head_dim, ff, experts, used, ff_expert;
  double rope_base;
  bool tied;
};

const Known kKnown[] = {
    {"qwen3-0.6b", Arch::qwen3, 151936, 1024, 28, 16, 8, 128, 3072, 0, 0, 0, 1e6, true},
    {"qwen3-8b", Arch::qwen3, 151936, 4096, 36, 32, 8, 128, 12288, 0, 0, 0, 1e6, false},
    {"qwen3-30b-a3b", Arch::qwen3moe, 151936, 2048, 48, 32, 4, 128, 6144, 128, 8, 768, 1e6, false},
    {"llama3-8b", Arch::llama, 128256, 4096, 32, 32, 8, 128, 14336, 0, 0, 0, 5e5, false},
};

// In the running test's own file: ctest runs these tests as parallel processes, and several write
// (and remove) the same shape.
std::string synth(const std::string& shape, const std::string& type, bool zero_data, int64_t layers = 0) {
  const std::string test = testing::UnitTest::GetInstance()->current_test_info()->name();
  const std::string path = testing::TempDir() + "/" + test + "-" + shape + "-" + type + ".gguf";
  SynthOptions o;
  o.shape = shape;
  o.type = type;
  o.zero_data = zero_data;
  o.layers = layers;
  write_synthetic_checkpoint(o, path);
  return path;
}

TEST(ModelSpec, FullSizeShapesReadAsTheRealModels) {
  for (const Known& k : kKnown) {
    SCOPED_TRACE(k.shape);
    const std::string path = synth(k.shape, "q8_0", /*zero_data=*/true);
    const GgufFile f = GgufFile::open(path);
    const ModelSpec s = read_model_spec(f);
    EXPECT_EQ(s.arch, k.arch);
    EXPECT_EQ(s.n_vocab, k.vocab);
    EXPECT_EQ(s.n_embd, k.embd);
    EXPECT_EQ(s.n_layer, k.layers);
    EXPECT_EQ(s.n_head, k.heads);
    EXPECT_EQ(s.n_head_kv, k.kv);
    EXPECT_EQ(s.head_dim, k.head_dim);
    EXPECT_EQ(s.n_ff, k.ff);
    EXPECT_EQ(s.n_expert, k.experts);
    EXPECT_EQ(s.n_expert_used, k.used);
    EXPECT_EQ(s.n_ff_expert, k.ff_expert);
    EXPECT_EQ(s.rope_base, k.rope_base);
    EXPECT_EQ(s.tied_output, k.tied);
    EXPECT_EQ(s.rope_style, k.arch == Arch::llama ? RopeStyle::normal : RopeStyle::neox);
    EXPECT_EQ(s.qk_norm, k.arch != Arch::llama);
    std::filesystem::remove(path);
  }
}

TEST(ModelSpec, DecodeBytesMatchTheAnchors) {
  // ../shared/anchors.md: Qwen3-8B Q8_0 ~8.04 GB a token; Qwen3-30B-A3B Q8_0 ~3.27 GB.
  const std::pair<const char*, double> anchors[] = {{"qwen3-8b", 8.04e9}, {"qwen3-30b-a3b", 3.27e9}};
  for (const auto& [shape, bytes] : anchors) {
    SCOPED_TRACE(shape);
    const std::string path = synth(shape, "q8_0", true);
    const GgufFile f = GgufFile::open(path);
    const DecodeBytes d = decode_bytes_per_token(f, read_model_spec(f), 0);
    EXPECT_NEAR(static_cast<double>(d.total()), bytes, 0.01 * bytes);
    std::filesystem::remove(path);
  }
}

// From the architecture, not the tensor list: per layer q, k, v, o, the feed-forward (or the router
// and the used experts), then the output; attention's QK and PV over the mean context.
TEST(ModelSpec, PromptFlopsFollowTheArchitecture) {
  for (const char* shape : {"qwen3-8b", "qwen3-30b-a3b"}) {
    SCOPED_TRACE(shape);
    const std::string path = synth(shape, "q8_0", true);
    const GgufFile f = GgufFile::open(path);
    const ModelSpec s = read_model_spec(f);
    const double e = static_cast<double>(s.n_embd), hd = static_cast<double>(s.head_dim);
    double per_layer = e * hd * static_cast<double>(2 * s.n_head + 2 * s.n_head_kv);  // q, o; k, v
    if (s.n_expert > 0)
      per_layer += e * static_cast<double>(s.n_expert) + 3 * e * static_cast<double>(s.n_ff_expert * s.n_expert_used);
    else
      per_layer += 3 * e * static_cast<double>(s.n_ff);
    const double matrices = static_cast<double>(s.n_layer) * per_layer + e * static_cast<double>(s.n_vocab);
    const double ctx = 256.5, attention = 2 * static_cast<double>(s.n_layer * s.n_head) * hd * ctx;
    EXPECT_NEAR(prompt_flops_per_token(f, s, ctx), 2 * (matrices + attention), 1e-9 * matrices);
    std::filesystem::remove(path);
  }
  // Qwen3-8B: ~15.1 GFLOP a token for its products (8.19 B parameters less the 0.62 B embedding).
  const std::string path = synth("qwen3-8b", "q8_0", true);
  const GgufFile f = GgufFile::open(path);
  EXPECT_NEAR(prompt_flops_per_token(f, read_model_spec(f), 0), 15.1e9, 0.1e9);
  std::filesystem::remove(path);
}

TEST(ModelSpec, TinyShapesOfEveryArchitectureAndType) {
  for (const char* shape : {"qwen3-tiny", "qwen3moe-tiny", "qwen2-tiny", "llama-tiny"}) {
    for (const char* type : {"f32", "f16", "bf16", "q8_0", "q4_0", "q2_k", "q3_k_m", "q4_k_m", "q5_k_m"}) {
      SCOPED_TRACE(std::string(shape) + " " + type);
      const std::string path = synth(shape, type, false);
      const GgufFile f = GgufFile::open(path);
      const ModelSpec s = read_model_spec(f);
      EXPECT_EQ(s.arch_name, f.get_string("general.architecture"));
      EXPECT_LT(f.file_size(), 16u << 20);
      // The weights are finite and not all zero.
      const GgufTensor& q = f.tensor("blk.1.attn_q.weight");
      std::vector<float> row(q.dims[0]);
      dequantize_row(q.type, q.data + row_bytes(q.type, q.dims[0]) * 3, row.data(), q.dims[0]);
      double sum2 = 0;
      for (float v : row) {
        ASSERT_TRUE(std::isfinite(v));
        sum2 += v * v;
      }
      EXPECT_GT(sum2, 0.0);
      std::filesystem::remove(path);
    }
  }
}

TEST(ModelSpec, Q4KMixFollowsLlamaCpp) {
  const int64_t n = 32;  // use_more_bits: i < 4, i >= 28, (i - 4) % 3 == 2
  int more = 0;
  for (int64_t l = 0; l < n; ++l) {
    const GgmlType v = synth_tensor_type("q4_k_m", "blk.x.attn_v.weight", l, n, 4096, false);
    const GgmlType q = synth_tensor_type("q4_k_m", "blk.x.attn_q.weight", l, n, 4096, false);
    EXPECT_EQ(q, GgmlType::Q4_K);
    more += v == GgmlType::Q6_K;
  }
  EXPECT_EQ(more, 4 + 4 + 8);  // half of the layers
  EXPECT_EQ(synth_tensor_type("q4_k_m", "output.weight", -1, n, 4096, false), GgmlType::Q6_K);
  EXPECT_EQ(synth_tensor_type("q4_k_m", "token_embd.weight", -1, n, 4096, true), GgmlType::Q6_K);
  EXPECT_EQ(synth_tensor_type("q4_k_m", "token_embd.weight", -1, n, 4096, false), GgmlType::Q4_K);
  EXPECT_THROW(synth_tensor_type("q3_xs", "output.weight", -1, n, 4096, false), UserError);
}

TEST(ModelSpec, LowerKMixesFollowLlamaCpp) {
  const int64_t n = 32;
  auto type = [&](const char* file, const char* name, int64_t l, int64_t gqa = 4) {
    return synth_tensor_type(file, name, l, n, 4096, false, gqa);
  };
  for (int64_t l = 0; l < n; ++l) {
    // q3_k_m: attn_v Q5_K below layer 2, ffn_down Q5_K below n / 16, both Q4_K after; attn_output Q4_K
    EXPECT_EQ(type("q3_k_m", "blk.x.attn_v.weight", l), l < 2 ? GgmlType::Q5_K : GgmlType::Q4_K);
    EXPECT_EQ(type("q3_k_m", "blk.x.ffn_down.weight", l), l < n / 16 ? GgmlType::Q5_K : GgmlType::Q4_K);
    EXPECT_EQ(type("q3_k_m", "blk.x.ffn_down_exps.weight", l), l < n / 16 ? GgmlType::Q5_K : GgmlType::Q4_K);
    EXPECT_EQ(type("q3_k_m", "blk.x.attn_output.weight", l), GgmlType::Q4_K);
    for (const char* other : {"blk.x.attn_q.weight", "blk.x.attn_k.weight", "blk.x.ffn_gate.weight", "blk.x.ffn_up.weight"}) {
      EXPECT_EQ(type("q3_k_m", other, l), GgmlType::Q3_K) << other;
      EXPECT_EQ(type("q2_k", other, l), GgmlType::Q2_K) << other;
    }
    // q2_k: attn_v by the grouping, ffn_down and attn_output Q3_K
    EXPECT_EQ(type("q2_k", "blk.x.attn_v.weight", l, 4), GgmlType::Q4_K);
    EXPECT_EQ(type("q2_k", "blk.x.attn_v.weight", l, 2), GgmlType::Q3_K);
    EXPECT_EQ(type("q2_k", "blk.x.ffn_down.weight", l), GgmlType::Q3_K);
    EXPECT_EQ(type("q2_k", "blk.x.attn_output.weight", l), GgmlType::Q3_K);
    // q5_k_m: q4_k_m's layers with Q5_K
    const GgmlType v = type("q5_k_m", "blk.x.attn_v.weight", l);
    EXPECT_EQ(v, type("q4_k_m", "blk.x.attn_v.weight", l) == GgmlType::Q6_K ? GgmlType::Q6_K : GgmlType::Q5_K);
    EXPECT_EQ(type("q5_k_m", "blk.x.attn_q.weight", l), GgmlType::Q5_K);
  }
  for (const char* file : {"q2_k", "q3_k_m", "q5_k_m"}) {
    EXPECT_EQ(type(file, "output.weight", -1), GgmlType::Q6_K) << file;
    EXPECT_EQ(synth_tensor_type(file, "token_embd.weight", -1, n, 4096, true), GgmlType::Q6_K) << file;
  }
  // Rows of 64 values cannot hold 256-value blocks: llama.cpp's 32-value fallbacks (Q4_0 where it takes IQ4_NL).
  EXPECT_EQ(synth_tensor_type("q3_k_m", "blk.x.attn_q.weight", 5, n, 64, false), GgmlType::Q4_0);
  EXPECT_EQ(synth_tensor_type("q2_k", "blk.x.attn_q.weight", 5, n, 64, false), GgmlType::Q4_0);
  EXPECT_EQ(synth_tensor_type("q5_k_m", "blk.x.attn_q.weight", 5, n, 64, false), GgmlType::Q5_1);
}

// The block writers that fill a synthetic checkpoint without quantizing: every value within the
// bound and finite, and the levels used (not all one value).
TEST(ModelSpec, RandomBlocksOfEveryDirectFormatStayWithinTheBound) {
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                     GgmlType::Q6_K, GgmlType::F16, GgmlType::BF16, GgmlType::F32}) {
    const int64_t n = 4096;
    const double bound = 0.03;
    std::vector<uint8_t> row(static_cast<size_t>(row_bytes(t, n)));
    SynthRng rng{7};
    ASSERT_TRUE(write_random_blocks(t, rng, bound, row.data(), n)) << ggml_type_name(t);
    std::vector<float> v(static_cast<size_t>(n));
    dequantize_row(t, row.data(), v.data(), n);
    double lo = 0, hi = 0;
    for (float x : v) {
      ASSERT_TRUE(std::isfinite(x)) << ggml_type_name(t);
      ASSERT_LE(std::fabs(x), bound * 1.01) << ggml_type_name(t);
      lo = std::min<double>(lo, x);
      hi = std::max<double>(hi, x);
    }
    EXPECT_LT(lo, -bound / 4) << ggml_type_name(t);
    EXPECT_GT(hi, bound / 4) << ggml_type_name(t);
  }
}

TEST(ModelSpec, ReadsPyPIGgufCheckpoint) {
  const GgufFile f = GgufFile::open(std::string(LATHE_TEST_DATA) + "/gguf/pygguf_qwen3.gguf");
  const ModelSpec s = read_model_spec(f);
  EXPECT_EQ(s.arch, Arch::qwen3);
  EXPECT_EQ(s.n_embd, 64);
  EXPECT_EQ(s.n_layer, 2);
  EXPECT_EQ(s.n_head, 4);
  EXPECT_EQ(s.n_head_kv, 2);
  EXPECT_EQ(s.head_dim, 16);
  EXPECT_EQ(s.n_ff, 128);
  EXPECT_EQ(s.n_vocab, 512);
  EXPECT_FALSE(s.tied_output);
  EXPECT_DOUBLE_EQ(s.norm_eps, static_cast<double>(1e-6f));
}

// Rewrites a tiny checkpoint with one change and expects the spec reader's refusal to name it.
void expect_refusal(const std::function<void(GgufWriter&, const GgufFile&)>& change,
                    const std::string& words, bool keep_tensor(const std::string&) = nullptr) {
  const std::string base = synth("qwen3-tiny", "f32", false);
  const GgufFile f = GgufFile::open(base);
  GgufWriter w;
  for (const auto& [k, v] : f.metadata()) w.set(k, v);
  for (const GgufTensor& t : f.tensors()) {
    if (keep_tensor && !keep_tensor(t.name)) continue;
    w.add_tensor(t.name, t.dims, t.type, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  change(w, f);
  const std::vector<uint8_t> bytes = w.to_bytes();
  const GgufFile bad = GgufFile::from_bytes(bytes, "bad.gguf");
  try {
    read_model_spec(bad);
    ADD_FAILURE() << "accepted; expected an error with: " << words;
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(ModelSpec, RefusesWithTheKeyOrTensorNamed) {
  expect_refusal([](GgufWriter& w, const GgufFile&) {
    w.set("general.architecture", GgufValue::of_string("mamba"));
  }, "unknown architecture 'mamba'");
  expect_refusal([](GgufWriter& w, const GgufFile&) {
    w.set("qwen3.block_count", GgufValue::of_string("two"));
  }, "'qwen3.block_count'");
  expect_refusal([](GgufWriter& w, const GgufFile&) {
    w.set("qwen3.attention.head_count_kv", GgufValue::of_u32(3));
  }, "not a multiple of attention.head_count_kv 3");
  expect_refusal([](GgufWriter& w, const GgufFile&) {
    w.set("qwen3.embedding_length", GgufValue::of_u32(0));
  }, "'qwen3.embedding_length' = 0 must be positive");
  expect_refusal([](GgufWriter& w, const GgufFile&) {
    w.set("qwen3.vocab_size", GgufValue::of_u32(77));
  }, "vocab_size 77");
  expect_refusal([](GgufWriter& w, const GgufFile&) {
    w.set("qwen3.block_count", GgufValue::of_u32(3));
  }, "missing tensor 'blk.2.attn_norm.weight'");
  expect_refusal([](GgufWriter& w, const GgufFile&) {
    w.set("qwen3.feed_forward_length", GgufValue::of_u32(1024));
  }, "tensor 'blk.0.ffn_gate.weight' has shape [256, 512], expected [256, 1024]");
  expect_refusal([](GgufWriter&, const GgufFile&) {}, "missing tensor 'blk.1.attn_k_norm.weight'",
                 [](const std::string& name) { return name != "blk.1.attn_k_norm.weight"; });
  expect_refusal([](GgufWriter& w, const GgufFile&) {
    w.set("qwen3.rope.scaling.type", GgufValue::of_string("yarn"));
  }, "rope.scaling.type 'yarn'");
}

TEST(ModelSpec, RefusesUnknownShapeAndType) {
  SynthOptions o;
  o.shape = "gpt5";
  EXPECT_THROW(write_synthetic_checkpoint(o, testing::TempDir() + "/x.gguf"), UserError);
  o.shape = "qwen3-tiny";
  o.type = "q3_k";
  EXPECT_THROW(write_synthetic_checkpoint(o, testing::TempDir() + "/x.gguf"), UserError);
}

}  // namespace
}  // namespace lathe
