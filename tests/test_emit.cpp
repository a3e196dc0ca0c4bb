// lathe emit: the kernel library's parameters read from its text, the recording mode of the CUDA
// wrapper (a virtual device, no GPU), and the emitted program for a tiny model: deterministic, equal
// to the golden copy in tests/data/emit/, and consistent with the plan it was recorded from.
// To accept a deliberate change of the emitted text: LATHE_UPDATE_GOLDEN=1 ./test_emit
#include "emit/emit_program.h"
#include "emit/kernel_params.h"
#include "emit/record.h"
#include "gguf/block_format.h"
#include "kernels/decode_stream.h"
#include "kernels/gemv_launch.h"
#include "kernels/gemv_multi_launch.h"
#include "kernels/library.h"
#include "kernels/tensor_map.h"
#include "lang/program.h"
#include "model/model_program.h"
#include "model/synth.h"
#include "test_recorder_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace lathe::emit {
namespace {

const std::string kGolden = std::string(LATHE_TEST_DATA) + "/emit/qwen3_tiny_q8_0.cu";

std::string tiny_model() {
  static const std::string path = [] {
    const std::string p = testing::TempDir() + "/emit-qwen3-tiny-q8_0.gguf";
    SynthOptions o;
    o.shape = "qwen3-tiny";
    o.type = "q8_0";
    write_synthetic_checkpoint(o, p);
    return p;
  }();
  return path;
}

EmitOptions golden_options() {
  EmitOptions o;
  o.prompt_tokens = {1, 2, 3};
  return o;
}

// The emitted text with the kernel library between its marker lines left out.
std::string without_library(const std::string& text, std::string* library = nullptr) {
  const size_t a = text.find(kLibraryBegin), b = text.find(kLibraryEnd);
  EXPECT_NE(a, std::string::npos);
  EXPECT_NE(b, std::string::npos);
  if (a == std::string::npos || b == std::string::npos) return text;
  if (library) *library = text.substr(a + kLibraryBegin.size(), b - a - kLibraryBegin.size());
  return text.substr(0, a + kLibraryBegin.size()) + text.substr(b);
}

TEST(KernelParams, MacroMadeKernelsAndSizes) {
  const std::string src = R"(
#define MAKE(NAME, T) \
  extern "C" __global__ void __launch_bounds__(32 * 4) NAME(const T* x, long long n, float s) { }
#define FAMILY(FMT) MAKE(k_##FMT##_a, float) MAKE(k_##FMT##_b, int)
FAMILY(q8)
// extern "C" __global__ void commented_out(int x) {}
extern "C" __global__ void plain(int a, const float4* __restrict__ b, float2 c, unsigned char d) {}
extern "C" __global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(512) clustered(int* ids) {}
)";
  const auto params = kernel_params(src);
  ASSERT_EQ(params.size(), 4u);
  ASSERT_TRUE(params.count("clustered"));
  EXPECT_EQ(params.at("clustered").size(), 1u);
  ASSERT_TRUE(params.count("k_q8_a") && params.count("k_q8_b") && params.count("plain"));
  std::vector<size_t> sizes;
  for (const KernelParam& p : params.at("k_q8_b")) sizes.push_back(p.bytes);
  EXPECT_EQ(sizes, (std::vector<size_t>{8, 8, 4}));
  EXPECT_EQ(params.at("k_q8_b")[0].type, "const int*");
  sizes.clear();
  for (const KernelParam& p : params.at("plain")) sizes.push_back(p.bytes);
  EXPECT_EQ(sizes, (std::vector<size_t>{4, 8, 8, 1}));
  EXPECT_EQ(params.at("plain")[1].name, "b");
  EXPECT_THROW(kernel_params("extern \"C\" __global__ void bad(struct S s) {}"), InternalError);
}

TEST(KernelParams, EveryLibraryKernel) {
  const std::string src = kernels::library_source();
  const auto params = kernel_params(src);
  // Written out and made by macros, for every format and contract.
  for (const char* name : {"lathe_argmax", "lathe_rms_norm", "lathe_attn_decode_64", "lathe_attn_decode_256",
                           "lathe_gather_q8_0", "lathe_matmul_q4_k", "lathe_gemv_q6_k_int8x2", "lathe_gemv_bf16_f32"})
    EXPECT_TRUE(params.count(name)) << name;
  size_t declared = 0;  // every `lathe_` kernel the text defines outside macros is found
  for (size_t at = src.find("__global__ void lathe_"); at != std::string::npos; at = src.find("__global__ void lathe_", at + 1))
    ++declared;
  EXPECT_GT(params.size(), declared);
  std::vector<size_t> argmax;
  for (const KernelParam& p : params.at("lathe_argmax")) argmax.push_back(p.bytes);
  ASSERT_GE(argmax.size(), 3u);
  EXPECT_EQ(argmax[0], 8u);  // const float* x
  EXPECT_EQ(argmax[1], 8u);  // long long n
  EXPECT_EQ(argmax[2], 4u);  // int chunk
}

TEST(Recorder, VirtualDeviceRecordsInsteadOfRunning) {
  cuda::DeviceInfo d;
  d.name = "virtual";
  d.cc_major = 9;
  d.sm_count = 132;
  d.free_memory = d.total_memory = size_t{1} << 40;
  {
    cuda::Recorder rec(d, [](const std::string& k) { return k == "two" ? std::vector<size_t>{8, 4} : std::vector<size_t>{}; });
    EXPECT_EQ(cuda::recorder(), &rec);
    EXPECT_EQ(cuda::Context::get().info().sm_count, 132);
    EXPECT_EQ(cuda::Context::get().info().arch(), "sm_90");
    cuda::DeviceBuffer a(1000, "a"), b(64, "b");
    EXPECT_TRUE(cuda::Recorder::is_virtual(a.ptr()));
    EXPECT_NE(a.ptr(), b.ptr());
    const int32_t values[2] = {7, 9};
    b.upload(values, 8, 16);
    a.zero();
    ASSERT_EQ(rec.writes().size(), 2u);
    EXPECT_EQ(rec.writes()[0].buffer, 1u);
    EXPECT_EQ(rec.writes()[0].offset, 16u);
    EXPECT_EQ(rec.writes()[0].data.size(), 8u);
    EXPECT_TRUE(rec.writes()[1].zero);
    CUdeviceptr p = a.ptr() + 40;
    int n = 5;
    cuda::launch(kernels::kernel("two"), {3, 1, 1}, {64, 1, 1}, 0, nullptr, {&p, &n}, "test");
    cuda::copy_async(b.ptr(), a.ptr() + 8, 32, nullptr, "test");
    ASSERT_EQ(rec.ops().size(), 2u);
    EXPECT_EQ(rec.ops()[0].kernel, "two");
    EXPECT_EQ(rec.ops()[0].grid.x, 3u);
    ASSERT_EQ(rec.ops()[0].args.size(), 2u);
    size_t buffer = 9, offset = 9;
    CUdeviceptr got = 0;
    std::memcpy(&got, rec.ops()[0].args[0].data(), 8);
    ASSERT_TRUE(rec.locate(got, &buffer, &offset));
    EXPECT_EQ(buffer, 0u);
    EXPECT_EQ(offset, 40u);
    EXPECT_EQ(rec.ops()[0].args[1], (std::vector<unsigned char>{5, 0, 0, 0}));
    EXPECT_EQ(rec.ops()[1].kind, cuda::RecordedOp::Kind::copy);
    // A launch whose argument count does not match the kernel's parameters is our bug.
    EXPECT_THROW(cuda::launch(kernels::kernel("two"), {1}, {1}, 0, nullptr, {&p}, "test"), InternalError);
  }
  EXPECT_EQ(cuda::recorder(), nullptr);
}

// A decode product on tiles records its tensor map as the map's arguments (kernels/tensor_map.h), which
// the emitted program encodes at its start: the array's address is one of the recording's buffers.
TEST(Recorder, TileProductsRecordTheirTensorMaps) {
  cuda::Recorder rec(test::virtual_h200(), test::library_param_sizes());
  const kernels::DecodeTiles before = kernels::set_decode_tiles(kernels::DecodeTiles::all);
  for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q6_K}) {
    const int64_t n_out = 4096, k = 4096, rb = row_bytes(t, k);
    cuda::DeviceBuffer w(static_cast<size_t>(n_out * rb), "w"), x(static_cast<size_t>(3 * k), "x"), y(4 * n_out, "y");
    const kernels::WeightMatrix wm{t, w.ptr(), n_out, k};
    rec.clear_ops();
    kernels::gemv(wm, kernels::Activations::int8x2, x.ptr(), 1, y.ptr(), nullptr);
    ASSERT_EQ(rec.ops().size(), 1u);
    const cuda::RecordedOp& op = rec.ops()[0];
    EXPECT_EQ(op.kernel, std::string("lathe_gemv1t_") + (t == GgmlType::Q4_K ? "q4_k" : "q6_k") + "_int8x2");
    ASSERT_FALSE(op.args.empty());
    kernels::TensorMapArgs m;
    ASSERT_TRUE(kernels::recorded_tensor_map(op.args.back().data(), op.args.back().size(), &m)) << op.kernel;
    EXPECT_EQ(m.base, w.ptr());
    EXPECT_EQ(m.inner, static_cast<uint64_t>(rb));
    EXPECT_EQ(m.outer, static_cast<uint64_t>(n_out));
    EXPECT_EQ(m.stride, static_cast<uint64_t>(rb));
    EXPECT_EQ(m.box_inner, static_cast<uint32_t>(kernels::decode_tile_format(t)->box_bytes));
    EXPECT_EQ(m.box_outer, 16u);
    // Not a map: the literal bytes of any other parameter.
    EXPECT_FALSE(kernels::recorded_tensor_map(op.args[0].data(), op.args[0].size(), &m));
  }
  kernels::set_decode_tiles(before);
}

// The K forms (LATHE_DECODE_K35, on unless 0: Q2_K, Q3_K, Q5_K on the row walk and the tiles) as a virtual
// H200 plans them: a 4096 x 4096 product on the format's tiles with its box, 1024 x 4096 (fewer tiles
// than SMs) on its row walk, gate and up (12288 x 4096) with their SwiGLU on the merged tile form; with
// the setting off, the general product for all three.
TEST(Recorder, TheKFormsTakeTheirKernels) {
  cuda::Recorder rec(test::virtual_h200(), test::library_param_sizes());
  const kernels::DecodeTiles before = kernels::set_decode_tiles(kernels::DecodeTiles::all);
  for (const bool on : {true, false}) {
    const bool was = kernels::set_decode_k35(on);
    for (const auto& [t, name] : {std::pair{GgmlType::Q2_K, "q2_k"}, std::pair{GgmlType::Q3_K, "q3_k"},
                                  std::pair{GgmlType::Q5_K, "q5_k"}}) {
      const int64_t k = 4096, rb = row_bytes(t, k);
      cuda::DeviceBuffer w(static_cast<size_t>(12288 * rb), "w"), w2(static_cast<size_t>(12288 * rb), "w2");
      cuda::DeviceBuffer x(static_cast<size_t>(3 * k), "x"), y(4 * 12288, "y");
      auto kernel_of = [&](auto&& launch) {  // the launches' kernels, space-separated
        rec.clear_ops();
        launch();
        std::string names;
        for (const cuda::RecordedOp& op : rec.ops()) names += (names.empty() ? "" : " ") + op.kernel;
        return names;
      };
      const std::string s(name);
      const std::string square = kernel_of([&] {
        kernels::gemv(kernels::WeightMatrix{t, w.ptr(), 4096, k}, kernels::Activations::int8x2, x.ptr(), 1, y.ptr(), nullptr);
      });
      const std::string narrow = kernel_of([&] {
        kernels::gemv(kernels::WeightMatrix{t, w.ptr(), 1024, k}, kernels::Activations::int8x2, x.ptr(), 1, y.ptr(), nullptr);
      });
      const std::string merged = kernel_of([&] {
        kernels::gemv_gate_up_swiglu(kernels::WeightMatrix{t, w.ptr(), 12288, k}, kernels::WeightMatrix{t, w2.ptr(), 12288, k},
                                     kernels::Activations::int8x2, x.ptr(), y.ptr(), nullptr);
      });
      if (on) {
        EXPECT_EQ(square, "lathe_gemv1t_" + s + "_int8x2");
        EXPECT_EQ(narrow, "lathe_gemv1_" + s + "_int8x2");
        EXPECT_EQ(merged, "lathe_gemvm_t_" + s + "_int8x2");
        rec.clear_ops();
        kernels::gemv(kernels::WeightMatrix{t, w.ptr(), 4096, k}, kernels::Activations::int8x2, x.ptr(), 1, y.ptr(), nullptr);
        kernels::TensorMapArgs m;
        ASSERT_TRUE(kernels::recorded_tensor_map(rec.ops().back().args.back().data(), rec.ops().back().args.back().size(), &m));
        EXPECT_EQ(m.box_inner, static_cast<uint32_t>(kernels::decode_tile_format(t)->box_bytes)) << s;
        EXPECT_EQ(m.inner, static_cast<uint64_t>(rb)) << s;
      } else {
        EXPECT_EQ(square, "lathe_gemv_" + s + "_int8x2");
        EXPECT_EQ(narrow, "lathe_gemv_" + s + "_int8x2");
        EXPECT_EQ(merged, "lathe_gemv_" + s + "_int8x2 lathe_gemv_" + s + "_int8x2 lathe_elem_binary");  // one by one
      }
    }
    kernels::set_decode_k35(was);
  }
  kernels::set_decode_tiles(before);
}

TEST(Emit, RecordedStepsAreConsistent) {
  const GgufFile file = GgufFile::open(tiny_model());
  const RecordedModel m = record_model(file, golden_options());
  ASSERT_EQ(m.steps.size(), 2u);  // the decode step and the prompt's chunk of 2 (then 1)
  EXPECT_EQ(m.steps[0].rows, 1);
  EXPECT_EQ(m.steps[1].rows, 2);
  EXPECT_EQ(m.program_identity, lang::identity(model_program(file, read_model_spec(file), 2048).program));
  const auto params = kernel_params(kernels::library_source());
  for (const EmitStep& s : m.steps) {
    EXPECT_FALSE(s.ops.empty());
    for (const BufferRef& r : {s.tokens, s.positions, s.sequences, s.logits, s.next}) {
      ASSERT_GE(r.buffer, 0);
      EXPECT_LE(r.offset + 4 * s.rows, m.buffers.at(static_cast<size_t>(r.buffer)).bytes);
    }
    for (const EmitOp& op : s.ops) {
      if (op.copy) continue;
      ASSERT_TRUE(params.count(op.kernel)) << op.kernel;
      EXPECT_EQ(op.args.size(), params.at(op.kernel).size()) << op.kernel;
      for (size_t i = 0; i < op.args.size(); ++i) {
        EXPECT_EQ(op.args[i].bytes, params.at(op.kernel)[i].bytes);
        const bool pointer_type = params.at(op.kernel)[i].type.find('*') != std::string::npos;
        if (op.args[i].pointer.buffer >= 0) {
          EXPECT_TRUE(pointer_type) << op.kernel << " parameter " << i;
          EXPECT_LT(op.args[i].pointer.offset, m.buffers.at(static_cast<size_t>(op.args[i].pointer.buffer)).bytes);
        } else if (pointer_type) {
          EXPECT_EQ(op.args[i].literal[0], 0u) << op.kernel << ": a pointer that is neither null nor a buffer";
        }
      }
    }
  }
  // Every weight the steps read is a checkpoint tensor; the rope tables are filled with their bytes.
  int weights = 0, filled = 0;
  for (const EmitBuffer& b : m.buffers) {
    if (!b.weight.empty()) {
      ++weights;
      EXPECT_NE(file.find_tensor(b.weight), nullptr);
    }
    if (b.what == "rope frequencies") {
      ++filled;
      EXPECT_EQ(b.fills.size(), 1u);
    }
  }
  EXPECT_EQ(weights, static_cast<int>(file.tensors().size()));  // tied output: every tensor is read
  EXPECT_GT(filled, 0);
}

TEST(Emit, DeterministicAndEqualToTheGoldenCopy) {
  const GgufFile file = GgufFile::open(tiny_model());
  const std::string a = emit_program(file, golden_options());
  const std::string b = emit_program(file, golden_options());
  ASSERT_EQ(a, b);
  std::string library;
  const std::string got = without_library(a, &library);
  EXPECT_EQ(library, kernels::library_source());
  EXPECT_EQ(got.find(tiny_model()), std::string::npos) << "the emitted text names a path";
  if (const char* u = std::getenv("LATHE_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream(kGolden, std::ios::binary) << got;
    GTEST_SKIP() << "wrote " << kGolden;
  }
  std::ifstream in(kGolden, std::ios::binary);
  ASSERT_TRUE(in) << kGolden << " is missing (LATHE_UPDATE_GOLDEN=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  if (got != want.str()) {
    // The first differing line, to read the change without a diff tool.
    std::istringstream g(got), w(want.str());
    std::string gl, wl;
    int line = 0;
    while (true) {
      ++line;
      const bool gm = static_cast<bool>(std::getline(g, gl)), wm = static_cast<bool>(std::getline(w, wl));
      if (!gm && !wm) break;
      if (gl != wl || gm != wm) {
        ADD_FAILURE() << "the emitted program differs from " << kGolden << " at line " << line << ":\n  golden:  " << wl
                      << "\n  emitted: " << gl << "\n(a deliberate change: LATHE_UPDATE_GOLDEN=1 ./test_emit)";
        break;
      }
    }
  }
}

// The merged products that norm x in their prologue take the _early kernels (two of the ring's first
// fills before the wait) after a dense product, and the one-fill kernels after a mixture, whose launch
// holds every SM to its end (NormPrologue::early_fills; docs/perf.md, m4).
TEST(Recorder, NormingProductsAskEarlyOnlyAfterADenseProduct) {
  auto norming = [](const RecordedModel& m) {
    std::vector<std::string> kernels;
    for (const EmitOp& op : m.steps.at(0).ops)  // the decode step
      if (!op.copy && op.what.find("with the norm in its prologue") != std::string::npos) kernels.push_back(op.kernel);
    return kernels;
  };
  const std::vector<std::string> dense = norming(record_model(GgufFile::open(tiny_model()), golden_options()));
  ASSERT_FALSE(dense.empty());
  for (const std::string& k : dense) EXPECT_TRUE(k.ends_with("_early")) << k;
  const std::string moe_path = testing::TempDir() + "/emit-qwen3moe-tiny-q8_0.gguf";
  SynthOptions so;
  so.shape = "qwen3moe-tiny";
  so.type = "q8_0";
  write_synthetic_checkpoint(so, moe_path);
  const std::vector<std::string> moe = norming(record_model(GgufFile::open(moe_path), golden_options()));
  ASSERT_FALSE(moe.empty());  // q/k/v after each layer's mixture
  for (const std::string& k : moe) EXPECT_FALSE(k.ends_with("_early")) << k;
}

// A 4-layer qwen3-tiny takes ffn_split in three layers: the program runs the split launches, and the
// re-laid constants they read (down by slices, gate and up, in the levels layout) are formed by the
// program at its load from the checkpoint's tensors (test_ffn_split_plan checks the recipes give the
// plan's bytes), not carried as blobs of its source.
TEST(Emit, SplitFeedForwardConstantsFormedAtLoad) {
  const std::string path = testing::TempDir() + "/emit-qwen3-tiny-4-q8_0.gguf";
  SynthOptions so;
  so.shape = "qwen3-tiny";
  so.type = "q8_0";
  so.layers = 4;
  write_synthetic_checkpoint(so, path);
  const GgufFile file = GgufFile::open(path);
  const RecordedModel m = record_model(file, golden_options());
  size_t split_launches = 0;
  for (const EmitOp& op : m.steps[0].ops) split_launches += op.kernel.starts_with("lathe_ffn_split_q8_0_");
  EXPECT_EQ(split_launches, 3u);
  size_t relaid = 0;
  for (const EmitBuffer& b : m.buffers)
    if (b.relaid) {
      ++relaid;
      EXPECT_TRUE(b.fills.empty()) << b.what;
      EXPECT_TRUE(b.relay_weight.ends_with("ffn_down.weight") || b.relay_weight.ends_with("ffn_gate.weight") ||
                  b.relay_weight.ends_with("ffn_up.weight"))
          << b.relay_weight;
      EXPECT_GT(b.relay_group, 0) << "the levels layout";
    }
  EXPECT_EQ(relaid, 9u);
  size_t blob_bytes = 0;
  for (const auto& blob : m.blobs) blob_bytes += blob.size();
  EXPECT_LT(blob_bytes, size_t{64} << 10) << "a re-laid constant carried as a blob";
  const std::string text = emit_program(file, golden_options());
  EXPECT_NE(text.find("namespace lathe_relay"), std::string::npos);
  EXPECT_NE(text.find("\"blk.0.ffn_down.weight\", 0, 8, 2, {512, 256, 0, 0}, 139264ULL, {1, 1, 256, 512, 256}}"),
            std::string::npos);
}

// lathe emit --merge-from N: the decode step recorded in its two forms (lathe run's engine's), the
// short one first and the long one (its attention's splits merged by a launch of their own) second,
// on the same buffers; the program picks by position.
TEST(Emit, DecodeStepInTwoFormsByPosition) {
  const GgufFile file = GgufFile::open(tiny_model());
  EmitOptions o = golden_options();
  o.long_from = 128;
  const RecordedModel m = record_model(file, o);
  ASSERT_EQ(m.steps.size(), 3u);
  EXPECT_EQ(m.steps[0].rows, 1);
  EXPECT_EQ(m.steps[0].from, 0);
  EXPECT_EQ(m.steps[1].rows, 1);
  EXPECT_EQ(m.steps[1].from, 128);
  EXPECT_EQ(m.steps[2].rows, 2);
  const auto merges = [](const EmitStep& s) {
    return std::count_if(s.ops.begin(), s.ops.end(), [](const EmitOp& op) { return op.kernel.find("lathe_attn_merge") == 0; });
  };
  EXPECT_EQ(merges(m.steps[0]), 0);
  EXPECT_GT(merges(m.steps[1]), 0);
  for (const auto& [a, b] : {std::pair{m.steps[0].tokens, m.steps[1].tokens}, {m.steps[0].positions, m.steps[1].positions},
                             {m.steps[0].next, m.steps[1].next}}) {
    EXPECT_EQ(a.buffer, b.buffer);
    EXPECT_EQ(a.offset, b.offset);
  }
  const std::string text = emit_program(file, o);
  EXPECT_NE(text.find("steps of 1 row, 1 row from position 128, 2 rows"), std::string::npos);
  o.long_from = -1;
  EXPECT_THROW(record_model(file, o), UserError);
}

TEST(Emit, OptionsChangeTheText) {
  const GgufFile file = GgufFile::open(tiny_model());
  EmitOptions o = golden_options();
  const std::string base = emit_program(file, o);
  o.prompt_tokens.clear();
  o.max_chunk = 8;  // no baked prompt: steps of 1, 2, 4, 8 rows
  const RecordedModel m = record_model(file, o);
  ASSERT_EQ(m.steps.size(), 4u);
  EXPECT_EQ(m.steps[3].rows, 8);
  o = golden_options();
  o.activations = kernels::Activations::f32;
  const std::string f32 = emit_program(file, o);
  EXPECT_NE(f32, base);
  EXPECT_EQ(f32.find("lathe_quantize_act,"), std::string::npos);  // no activation is quantized
  o = golden_options();
  o.prompt_tokens = {1, 99999};
  EXPECT_THROW(emit_program(file, o), UserError);
}

}  // namespace
}  // namespace lathe::emit
