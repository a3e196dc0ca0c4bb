// The interpreter: every cut of every model program on a synthetic checkpoint of each tiny shape gives
// the decode step's logits (prefill chunks, batch steps of sequences at different positions); the
// caches carry across steps, one per sequence; rows that do not fit the cut or the caches, constants
// missing from the checkpoint or of the wrong shape, and checkpoints the program cannot honour are
// refused by name. Conformance with transformers is test_conformance.cpp.
#include "gguf/gguf_writer.h"
#include "interp/interpreter.h"
#include "kernels/gemm_f16_launch.h"
#include "lang/program.h"
#include "model/embedded_programs.h"
#include "model/model_program.h"
#include "model/synth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

using namespace lathe;

namespace {

constexpr int64_t kCtx = 32;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

// A synthetic checkpoint of a tiny shape, written once per test program.
const GgufFile& synthetic(const std::string& shape) {
  static std::map<std::string, std::unique_ptr<GgufFile>> files;
  auto& f = files[shape];
  if (!f) {
    std::string path = (std::filesystem::path(::testing::TempDir()) / ("lathe_interp_" + shape + ".gguf")).string();
    SynthOptions o;
    o.shape = shape;
    o.type = shape == "llama-tiny" ? "q4_k_m" : "q8_0";  // the interpreter reads every format in place
    o.seed = 7;
    o.threads = 2;
    write_synthetic_checkpoint(o, path);
    f = std::make_unique<GgufFile>(GgufFile::open(path));
  }
  return *f;
}

struct Model {
  const GgufFile& file;
  ModelProgram mp;
  Interpreter cut(const std::string& name) const {
    return Interpreter(lang::make_cut(mp.program, lang::parse_cut(name)), mp.bindings, file);
  }
};

Model model(const std::string& shape) {
  const GgufFile& file = synthetic(shape);
  return Model{file, model_program(file, read_model_spec(file), kCtx)};
}

std::vector<int32_t> random_tokens(int n, uint32_t seed, int32_t n_vocab) {
  std::mt19937 rng(seed);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(static_cast<int32_t>(rng() % n_vocab));
  return out;
}

// The logits of each token of a sequence, run one decode step at a time in a fresh state.
std::vector<std::vector<float>> decode_one_by_one(const Interpreter& decode, const std::vector<int32_t>& tokens) {
  KvState state = decode.new_state();
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    StepOutput o = decode.step({{tokens[i]}, {int32_t(i)}, {0}}, state);
    const Tensor& l = o.at("logits").tensor;
    out.emplace_back(l.data.begin(), l.data.end());
  }
  return out;
}

// max |a - b| / max |b|.
double relative_error(const float* a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return diff / scale;
}

constexpr double kTight = 1e-6;  // the same f32 ops in the same order: only grouping could differ

class EveryShape : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryShape, PrefillChunksGiveTheDecodeStepsLogits) {
  Model m = model(GetParam());
  Interpreter decode = m.cut("decode");
  const int32_t n_vocab = static_cast<int32_t>(m.mp.bindings.at("n_vocab"));
  std::vector<int32_t> tokens = random_tokens(8, 1, n_vocab);
  auto expected = decode_one_by_one(decode, tokens);
  for (float v : expected.back()) ASSERT_TRUE(std::isfinite(v));

  // One chunk of 8; and chunks of 3, 1, 3, 1 carrying the caches between them.
  for (const std::vector<int>& chunks : {std::vector<int>{8}, std::vector<int>{3, 1, 3, 1}}) {
    KvState state = decode.new_state();
    int32_t at = 0;
    for (int r : chunks) {
      Interpreter chunk = m.cut("prefill:" + std::to_string(r));
      StepInput in;
      for (int i = 0; i < r; ++i) {
        in.tokens.push_back(tokens[at + i]);
        in.positions.push_back(at + i);
        in.sequences.push_back(0);
      }
      StepOutput o = chunk.step(in, state);
      const Tensor& logits = o.at("logits").tensor;
      ASSERT_EQ(logits.shape, (std::vector<int64_t>{r, n_vocab}));
      for (int i = 0; i < r; ++i)
        EXPECT_LE(relative_error(logits.row(i), expected[at + i]), kTight) << "prefill:" << r << " row " << i;
      at += r;
    }
  }
}

TEST_P(EveryShape, BatchStepsOfSequencesAtDifferentPositionsGiveTheDecodeStepsLogits) {
  Model m = model(GetParam());
  Interpreter decode = m.cut("decode");
  Interpreter batch = m.cut("batch:3");
  const int32_t n_vocab = static_cast<int32_t>(m.mp.bindings.at("n_vocab"));
  // Three sequences (numbered 10, 4, 7: any numbers), already 0, 2 and 5 tokens in.
  const std::vector<int32_t> numbers = {10, 4, 7};
  const std::vector<int32_t> started = {0, 2, 5};
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::vector<std::vector<float>>> expected;
  for (int s = 0; s < 3; ++s) {
    tokens.push_back(random_tokens(8, 100 + s, n_vocab));
    expected.push_back(decode_one_by_one(decode, tokens[s]));
  }
  KvState state = batch.new_state();
  for (int s = 0; s < 3; ++s)
    for (int32_t p = 0; p < started[s]; ++p) decode.step({{tokens[s][p]}, {p}, {numbers[s]}}, state);
  for (int32_t t = 0; t < 3; ++t) {
    StepInput in;
    for (int s = 0; s < 3; ++s) {
      in.tokens.push_back(tokens[s][started[s] + t]);
      in.positions.push_back(started[s] + t);
      in.sequences.push_back(numbers[s]);
    }
    StepOutput o = batch.step(in, state);
    const Tensor& logits = o.at("logits").tensor;
    ASSERT_EQ(logits.shape, (std::vector<int64_t>{3, n_vocab}));
    for (int s = 0; s < 3; ++s) {
      EXPECT_LE(relative_error(logits.row(s), expected[s][started[s] + t]), kTight) << "sequence " << s << " step " << t;
      // next is the argmax of each row's logits.
      const float* row = logits.row(s);
      EXPECT_EQ(o.at("next").ids[s], std::max_element(row, row + n_vocab) - row);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Synthetic, EveryShape,
                         ::testing::Values("qwen3-tiny", "qwen3moe-tiny", "qwen2-tiny", "llama-tiny"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// The lane's roundings replayed (LaneRounding): the f16 chunk products only in a chunk of more than 8
// rows (a decode step of 8 takes the GEMV on the GPU), the f16 cache in every step; each moves the
// logits, by about what f16 rounding of a tiny model's values gives (well under the int8x2 bound).
// The logits of the first `rows` of `tokens` as one prefill chunk of sequence 0, rounded as `r` says.
std::vector<float> chunk_logits(Model& m, const std::vector<int32_t>& tokens, int rows, const LaneRounding& r) {
  Interpreter chunk = m.cut("prefill:" + std::to_string(rows));
  chunk.set_rounding(r);
  KvState state = chunk.new_state();
  StepInput in;
  for (int i = 0; i < rows; ++i) {
    in.tokens.push_back(tokens[static_cast<size_t>(i)]);
    in.positions.push_back(i);
    in.sequences.push_back(0);
  }
  const StepOutput out = chunk.step(in, state);  // (kept alive while its logits are read)
  const Tensor& t = out.at("logits").tensor;
  return std::vector<float>(t.data.begin(), t.data.end());
}

TEST(Interpreter, TheLanesRoundingsApplyWhereTheLaneRounds) {
  Model m = model("qwen3-tiny");
  const int32_t n_vocab = static_cast<int32_t>(m.mp.bindings.at("n_vocab"));
  const std::vector<int32_t> tokens = random_tokens(12, 5, n_vocab);
  auto logits = [&](int rows, const LaneRounding& r) { return chunk_logits(m, tokens, rows, r); };
  const LaneRounding none, products{false, &kernels::gemm_f16_supports, false}, cache{true, nullptr, false},
      flash{false, nullptr, true};
  // 8 rows: no chunk product rounds; the cache does (from the second row on, which reads the first's);
  // the flash attention's roundings do in any chunk (and not in a decode step of one row).
  EXPECT_EQ(logits(8, products), logits(8, none));
  EXPECT_EQ(logits(1, flash), logits(1, none));
  const double flash8 = relative_error(logits(8, flash).data(), logits(8, none));
  EXPECT_GT(flash8, 0.0);
  EXPECT_LT(flash8, 2e-3);
  const double cache8 = relative_error(logits(8, cache).data(), logits(8, none));
  EXPECT_GT(cache8, 0.0);
  EXPECT_LT(cache8, 2e-3);
  // 12 rows: the products round too.
  const double products12 = relative_error(logits(12, products).data(), logits(12, none));
  EXPECT_GT(products12, 0.0);
  EXPECT_LT(products12, 2e-3);
}

// The mixture's chunk products replayed as the lane's wgmma engine rounds them (x, h and the weights in
// f16), asked of the rule only in a chunk of more than 8 rows; the router's product is not rounded.
TEST(Interpreter, TheMixturesRoundingsApplyInChunksTheLaneGroups) {
  Model m = model("qwen3moe-tiny");
  const int32_t n_vocab = static_cast<int32_t>(m.mp.bindings.at("n_vocab"));
  const std::vector<int32_t> tokens = random_tokens(12, 6, n_vocab);
  auto logits = [&](int rows, const LaneRounding& r) { return chunk_logits(m, tokens, rows, r); };
  static int asked = 0;
  LaneRounding mixture, never;
  mixture.f16_mixture_products = [](const MatrixRef& gate, const MatrixRef& up, const MatrixRef& down) {
    ++asked;
    return gate.n_stack > 1 && gate.n_stack == up.n_stack && down.n_stack == gate.n_stack;
  };
  never.f16_mixture_products = [](const MatrixRef&, const MatrixRef&, const MatrixRef&) { return false; };
  const LaneRounding none;
  EXPECT_EQ(logits(8, mixture), logits(8, none));
  EXPECT_EQ(asked, 0) << "an 8-row chunk runs the decode GEMVs on the GPU";
  EXPECT_EQ(logits(12, never), logits(12, none));
  const double mixture12 = relative_error(logits(12, mixture).data(), logits(12, none));
  EXPECT_GT(asked, 0);
  EXPECT_GT(mixture12, 0.0);
  EXPECT_LT(mixture12, 2e-3);
}

TEST(Interpreter, CachesCarryAcrossStepsOnePerSequence) {
  Model m = model("qwen3-tiny");
  Interpreter decode = m.cut("decode");
  KvState a = decode.new_state();
  auto logits = [&](KvState& s, int32_t token, int32_t pos, int32_t seq) {
    return decode.step({{token}, {pos}, {seq}}, s).at("logits").tensor.data;
  };
  std::vector<float> alone = logits(a, 5, 0, 0);
  std::vector<float> after_3 = logits(a, 5, 1, 0);  // the same token, with token 5 before it
  KvState b = decode.new_state();
  logits(b, 9, 0, 0);
  std::vector<float> after_9 = logits(b, 5, 1, 0);
  EXPECT_NE(after_3, after_9);  // the cache of position 0 is read
  // Another sequence in the same state leaves sequence 0's caches as they were.
  KvState c = decode.new_state();
  logits(c, 5, 0, 0);
  logits(c, 9, 0, 1);
  logits(c, 11, 1, 1);
  EXPECT_EQ(logits(c, 5, 1, 0), after_3);
  EXPECT_EQ(c.filled(0), 2);
  EXPECT_EQ(c.filled(1), 2);
  // A dropped sequence starts afresh; rewinding a sequence overwrites its later positions.
  c.drop(1);
  EXPECT_EQ(logits(c, 5, 0, 1), alone);
  EXPECT_EQ(logits(c, 9, 0, 0), logits(b, 9, 0, 0));
  EXPECT_EQ(logits(c, 5, 1, 0), after_9);
}

TEST(Interpreter, RowsThatDoNotFitTheCutOrTheCachesAreRefused) {
  Model m = model("qwen3-tiny");
  Interpreter decode = m.cut("decode"), chunk = m.cut("prefill:3"), batch = m.cut("batch:2");
  KvState s = decode.new_state();
  EXPECT_NE(error_of([&] { chunk.step({{1, 2}, {0, 1}, {0, 0}}, s); }).find("runs 3 rows of 1 sequences; got 2"),
            std::string::npos);
  EXPECT_NE(error_of([&] { batch.step({{1, 2}, {0, 1}, {0, 0}}, s); }).find("2 rows of 2 sequences; got 2 rows of 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { chunk.step({{1, 2, 3}, {0, 2, 3}, {0, 0, 0}}, s); }).find("consecutive positions"),
            std::string::npos);
  EXPECT_NE(error_of([&] { decode.step({{1}, {3}, {0}}, s); }).find("position 3 leaves a gap"), std::string::npos);
  EXPECT_NE(error_of([&] { decode.step({{1}, {kCtx}, {0}}, s); }).find("past the caches' 32 positions"),
            std::string::npos);
  EXPECT_NE(error_of([&] { decode.step({{1 << 20}, {0}, {0}}, s); }).find("outside the table"), std::string::npos);
  EXPECT_NE(error_of([&] { decode.step({{1}, {0, 1}, {0}}, s); }).find("1 tokens, 2 positions"), std::string::npos);
}

TEST(Interpreter, AProgramWithNoStepLineTakesAnyRows) {
  Model m = model("qwen2-tiny");
  Interpreter any(m.mp.program, m.mp.bindings, m.file);
  Interpreter decode = m.cut("decode");
  KvState s = any.new_state(), t = decode.new_state();
  std::vector<float> two = any.step({{3, 4}, {0, 1}, {0, 0}}, s).at("logits").tensor.data;
  decode.step({{3}, {0}, {0}}, t);
  std::vector<float> one = decode.step({{4}, {1}, {0}}, t).at("logits").tensor.data;
  EXPECT_LE(relative_error(two.data() + two.size() / 2, one), kTight);
}

}  // namespace

// ---- binding constants to a checkpoint

namespace {

// every_op.lathe's parameters: small numbers that fit its shapes.
lang::Bindings every_op_bindings() {
  return {{"n_embd", 32}, {"n_head", 4}, {"n_head_kv", 2}, {"head_dim", 8}, {"n_ff", 16}, {"n_layer", 2},
          {"n_vocab", 50}, {"n_ctx", kCtx}, {"n_rot", 4}, {"n_expert", 4}, {"n_expert_used", 2},
          {"n_ff_expert", 8}, {"eps", 1e-5}, {"rope_base", 10000}, {"rope_scale_factor", 2},
          {"rope_low_freq_factor", 1}, {"rope_high_freq_factor", 4}, {"rope_original_context", 16},
          {"n_rot_pairs", 4}};
}

// A checkpoint of random f32 tensors for every constant a program declares (`{L}` for each layer),
// in memory. `edit` may rename a tensor, change its dims, or drop it (returns false).
struct MemoryCheckpoint {
  std::vector<uint8_t> bytes;
  std::unique_ptr<GgufFile> file;
};
using Edit = std::function<bool(std::string& name, std::vector<int64_t>& dims)>;

std::unique_ptr<MemoryCheckpoint> random_checkpoint(const lang::Program& p, const lang::Bindings& b,
                                                     const Edit& edit = {}) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-0.2f, 0.2f);
  GgufWriter w;
  for (const lang::ConstantDecl& c : p.constants) {
    std::vector<int64_t> dims;
    for (const lang::Operand& d : c.shape) {
      double n = 1;
      for (const lang::Factor& f : d.factors) n *= f.is_name ? b.at(f.name) : f.number;
      dims.insert(dims.begin(), static_cast<int64_t>(n));  // ggml order: the row length first
    }
    const bool per_layer = c.name.find("{L}") != std::string::npos;
    for (int64_t l = 0; l < (per_layer ? static_cast<int64_t>(b.at("n_layer")) : 1); ++l) {
      std::string name = c.name;
      if (per_layer) name.replace(name.find("{L}"), 3, std::to_string(l));
      std::vector<int64_t> d = dims;
      if (edit && !edit(name, d)) continue;
      int64_t n = 1;
      for (int64_t x : d) n *= x;
      std::vector<float> values(n);
      const bool norm = name.find("norm") != std::string::npos;
      for (float& v : values) v = norm ? 1.0f + uniform(rng) : uniform(rng);
      std::vector<uint8_t> bytes(n * sizeof(float));
      std::memcpy(bytes.data(), values.data(), bytes.size());
      w.add_tensor(name, d, GgmlType::F32, std::move(bytes));
    }
  }
  auto out = std::make_unique<MemoryCheckpoint>();
  out->bytes = w.to_bytes();
  out->file = std::make_unique<GgufFile>(GgufFile::from_bytes(out->bytes, "random.gguf"));
  return out;
}

lang::Program every_op_program() { return lang::parse_program_file(std::string(LATHE_TEST_DATA) + "/lang/every_op.lathe"); }

}  // namespace

TEST(Interpreter, EveryOpOfTheLanguageRunsInEveryCut) {
  lang::Program p = every_op_program();
  lang::Bindings b = every_op_bindings();
  auto ckpt = random_checkpoint(p, b, [](std::string& name, std::vector<int64_t>&) { return name != "output.weight"; });
  Interpreter decode(lang::make_cut(p, lang::parse_cut("decode")), b, *ckpt->file);
  Interpreter chunk(lang::make_cut(p, lang::parse_cut("prefill:5")), b, *ckpt->file);
  std::vector<int32_t> tokens = {3, 14, 15, 9, 26};
  auto expected = decode_one_by_one(decode, tokens);
  KvState s = chunk.new_state();
  StepOutput o = chunk.step({tokens, {0, 1, 2, 3, 4}, {0, 0, 0, 0, 0}}, s);
  const Tensor& logits = o.at("logits").tensor;
  ASSERT_EQ(logits.shape, (std::vector<int64_t>{5, 50}));
  for (int i = 0; i < 5; ++i) {
    for (float v : expected[i]) ASSERT_TRUE(std::isfinite(v));
    EXPECT_LE(relative_error(logits.row(i), expected[i]), kTight) << "row " << i;
  }
  EXPECT_EQ(o.at("p").tensor.shape, (std::vector<int64_t>{5, 50}));
  EXPECT_EQ(o.at("pt").tensor.shape, (std::vector<int64_t>{50, 5}));
  EXPECT_TRUE(o.at("next").is_ids);
  Interpreter batch(lang::make_cut(p, lang::parse_cut("batch:2")), b, *ckpt->file);
  KvState t = batch.new_state();
  EXPECT_EQ(batch.step({{3, 3}, {0, 0}, {0, 1}}, t).at("logits").tensor.data.size(), 100u);
}

TEST(Interpreter, AnAbsentTensorReadsItsFallback) {
  lang::Program p = lang::make_cut(every_op_program(), lang::parse_cut("decode"));
  lang::Bindings b = every_op_bindings();
  // Without output.weight, logits read token_embd.weight: the same as an output.weight equal to it.
  auto tied = random_checkpoint(p, b, [](std::string& name, std::vector<int64_t>&) { return name != "output.weight"; });
  auto copied = random_checkpoint(p, b);
  const GgufTensor& embd = tied->file->tensor("token_embd.weight");
  const GgufTensor& output = copied->file->tensor("output.weight");
  ASSERT_EQ(embd.n_bytes, output.n_bytes);
  const GgufTensor& copied_embd = copied->file->tensor("token_embd.weight");
  // Same seed, same order: the two files differ only in output.weight.
  ASSERT_EQ(std::memcmp(embd.data, copied_embd.data, embd.n_bytes), 0);
  std::memcpy(const_cast<uint8_t*>(output.data), embd.data, embd.n_bytes);
  Interpreter a(p, b, *tied->file), c(p, b, *copied->file);
  KvState sa = a.new_state(), sc = c.new_state();
  EXPECT_EQ(a.step({{7}, {0}, {0}}, sa).at("logits").tensor.data, c.step({{7}, {0}, {0}}, sc).at("logits").tensor.data);
}

TEST(Interpreter, AMissingConstantIsRefusedNamingTheTensor) {
  lang::Program p = lang::make_cut(every_op_program(), lang::parse_cut("decode"));
  lang::Bindings b = every_op_bindings();
  auto ckpt = random_checkpoint(p, b, [](std::string& name, std::vector<int64_t>&) { return name != "blk.1.attn_sinks.weight"; });
  std::string e = error_of([&] { Interpreter(p, b, *ckpt->file); });
  EXPECT_NE(e.find("no tensor 'blk.1.attn_sinks.weight'"), std::string::npos) << e;
  EXPECT_NE(e.find("every_op.lathe:"), std::string::npos) << e;
  // With neither output.weight nor its fallback, both are named.
  auto neither = random_checkpoint(p, b, [](std::string& name, std::vector<int64_t>&) {
    return name != "output.weight" && name != "token_embd.weight";
  });
  e = error_of([&] { Interpreter(p, b, *neither->file); });
  EXPECT_NE(e.find("token_embd.weight"), std::string::npos) << e;
}

TEST(Interpreter, AConstantOfTheWrongShapeIsRefusedNamingTheTensor) {
  lang::Program p = lang::make_cut(every_op_program(), lang::parse_cut("decode"));
  lang::Bindings b = every_op_bindings();
  auto ckpt = random_checkpoint(p, b, [](std::string& name, std::vector<int64_t>& dims) {
    if (name == "blk.0.ffn_up.weight") std::swap(dims[0], dims[1]);
    return true;
  });
  std::string e = error_of([&] { Interpreter(p, b, *ckpt->file); });
  EXPECT_NE(e.find("tensor 'blk.0.ffn_up.weight' has shape [16, 32]"), std::string::npos) << e;
  EXPECT_NE(e.find("a matrix of 16 by 32"), std::string::npos) << e;
  // A stack with one expert too few.
  auto stack = random_checkpoint(p, b, [](std::string& name, std::vector<int64_t>& dims) {
    if (name == "blk.1.ffn_down_exps.weight") dims[2] = 3;
    return true;
  });
  e = error_of([&] { Interpreter(p, b, *stack->file); });
  EXPECT_NE(e.find("tensor 'blk.1.ffn_down_exps.weight' has shape [8, 32, 3]"), std::string::npos) << e;
}

// ---- binding programs to models

TEST(ModelProgram, TheBuiltInProgramsAreTheModelFiles) {
  ASSERT_EQ(embedded_programs().size(), 4u);
  for (const EmbeddedProgram& e : embedded_programs()) {
    std::ifstream in(std::string(LATHE_SOURCE_DIR) + "/" + std::string(e.file_name));
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), e.text) << e.name;
    EXPECT_EQ(program_for_architecture(e.name).model, e.name);
  }
}

TEST(ModelProgram, AnUnknownArchitectureIsRefusedByName) {
  std::string e = error_of([] { program_for_architecture("gpt2"); });
  EXPECT_NE(e.find("no program for architecture 'gpt2'"), std::string::npos) << e;
  EXPECT_NE(e.find("llama, qwen2, qwen3, qwen3moe"), std::string::npos) << e;
}

TEST(ModelProgram, BindsTheSpecsNumbers) {
  const GgufFile& file = synthetic("qwen3moe-tiny");
  ModelSpec spec = read_model_spec(file);
  ModelProgram mp = model_program(file, spec, 100);
  EXPECT_EQ(mp.bindings.at("n_ctx"), 100);
  EXPECT_EQ(mp.bindings.at("n_expert"), spec.n_expert);
  EXPECT_EQ(mp.bindings.at("n_ff_expert"), spec.n_ff_expert);
  EXPECT_EQ(mp.bindings.at("eps"), spec.norm_eps);
  EXPECT_EQ(mp.bindings.count("n_ff"), spec.n_ff > 0 ? 1u : 0u);
  EXPECT_EQ(mp.program.model, "qwen3moe");
  EXPECT_EQ(mp.program.source.file_name, "models/qwen3moe.lathe");
}

// Llama 3's rope_freqs.weight is read (`with frequency factors`); a tensor no program line reads is
// refused, not run without it.
TEST(ModelProgram, ATensorTheProgramDoesNotReadIsRefused) {
  const GgufFile llama = GgufFile::open(std::string(LATHE_TEST_DATA) + "/transformers/llama.gguf");
  GgufWriter w;
  for (const auto& [key, value] : llama.metadata()) w.set(key, value);
  for (const GgufTensor& t : llama.tensors())
    w.add_tensor(t.name, t.dims, t.type, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  std::vector<uint8_t> factors(8 * sizeof(float));
  w.add_tensor("rope_freqs.weight", {8}, GgmlType::F32, factors);
  std::vector<uint8_t> bytes = w.to_bytes();
  const GgufFile file = GgufFile::from_bytes(bytes, "llama3.gguf");
  EXPECT_NO_THROW(model_program(file, read_model_spec(file), 64));
  w.add_tensor("blk.0.attn_q.bias", {8}, GgmlType::F32, factors);
  std::vector<uint8_t> more = w.to_bytes();
  const GgufFile biased = GgufFile::from_bytes(more, "llama3-bias.gguf");
  std::string e = error_of([&] { model_program(biased, read_model_spec(biased), 64); });
  EXPECT_NE(e.find("does not read the checkpoint's tensor 'blk.0.attn_q.bias'"), std::string::npos) << e;
  EXPECT_NO_THROW(model_program(llama, read_model_spec(llama), 64));
}
