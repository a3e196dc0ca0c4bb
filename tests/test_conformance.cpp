// Peer conformance: tiny Qwen3, Qwen3-MoE, Llama and Qwen2 models made by transformers 5.17 with random
// weights (scripts/fixtures/hf_tiny_models.py, turned into GGUF by hf_to_gguf.py). The interpreter runs
// each model's own program on the GGUF: the 16-token prompt as one prefill chunk, then ids 16..31 one
// decode step at a time; the logits of all 32 positions must match transformers' within 1e-4 relative
// error (max |a - b| over a row / max |b| over the row).
#include "interp/interpreter.h"
#include "lang/program.h"
#include "model/model_program.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>

using namespace lathe;

namespace {

// A .npy array (format 1.0 to 3.0, little-endian, C order): its shape and raw values.
struct Npy {
  std::string descr;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

Npy read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    throw std::runtime_error(path + ": not a .npy file");
  const int major = bytes[6];
  size_t header_len = 0, header_at = 0;
  if (major == 1) {
    header_len = bytes[8] | (bytes[9] << 8);
    header_at = 10;
  } else {
    header_len = bytes[8] | (bytes[9] << 8) | (bytes[10] << 16) | (size_t(bytes[11]) << 24);
    header_at = 12;
  }
  std::string header(bytes.begin() + header_at, bytes.begin() + header_at + header_len);
  std::smatch m;
  Npy out;
  if (!std::regex_search(header, m, std::regex("'descr': *'([^']*)'"))) throw std::runtime_error(path + ": no descr");
  out.descr = m[1];
  if (header.find("'fortran_order': False") == std::string::npos) throw std::runtime_error(path + ": Fortran order");
  if (!std::regex_search(header, m, std::regex("'shape': *\\(([^)]*)\\)"))) throw std::runtime_error(path + ": no shape");
  std::string dims = m[1];
  const std::regex number("[0-9]+");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it)
    out.shape.push_back(std::stoll(it->str()));
  out.data.assign(bytes.begin() + header_at + header_len, bytes.end());
  return out;
}

template <typename T>
std::vector<T> values(const Npy& a, const std::string& descr) {
  if (a.descr != descr) throw std::runtime_error("expected " + descr + ", got " + a.descr);
  std::vector<T> out(a.data.size() / sizeof(T));
  std::memcpy(out.data(), a.data.data(), out.size() * sizeof(T));
  return out;
}

double relative_error(const float* a, const float* b, int64_t n) {
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return diff / scale;
}

class Conformance : public ::testing::TestWithParam<std::string> {};

TEST_P(Conformance, PrefillThenDecodeMatchesTransformers) {
  const std::string name = GetParam();
  const std::string dir = std::string(LATHE_TEST_DATA) + "/transformers/";
  const GgufFile file = GgufFile::open(dir + name + ".gguf");
  const ModelSpec spec = read_model_spec(file);
  const std::vector<int32_t> ids = values<int32_t>(read_npy(dir + name + "_ids.npy"), "<i4");
  const Npy logits_npy = read_npy(dir + name + "_logits.npy");
  const std::vector<float> expected = values<float>(logits_npy, "<f4");
  ASSERT_EQ(ids.size(), 32u);
  ASSERT_EQ(logits_npy.shape, (std::vector<int64_t>{32, spec.n_vocab}));
  const int64_t n_vocab = spec.n_vocab;

  ModelProgram mp = model_program(file, spec, 64);
  Interpreter prefill(lang::make_cut(mp.program, lang::parse_cut("prefill:16")), mp.bindings, file);
  Interpreter decode(lang::make_cut(mp.program, lang::parse_cut("decode")), mp.bindings, file);
  KvState state = prefill.new_state();

  StepInput prompt;
  for (int32_t i = 0; i < 16; ++i) {
    prompt.tokens.push_back(ids[i]);
    prompt.positions.push_back(i);
    prompt.sequences.push_back(0);
  }
  StepOutput out = prefill.step(prompt, state);
  const Tensor& chunk = out.at("logits").tensor;
  ASSERT_EQ(chunk.shape, (std::vector<int64_t>{16, n_vocab}));
  double worst = 0;
  for (int64_t r = 0; r < 16; ++r) {
    double err = relative_error(chunk.row(r), expected.data() + r * n_vocab, n_vocab);
    EXPECT_LE(err, 1e-4) << name << " prefill row " << r;
    worst = std::max(worst, err);
  }
  // transformers generated ids 16..31 greedily: the argmax after the prompt is id 16.
  EXPECT_EQ(out.at("next").ids.back(), ids[16]);

  for (int32_t i = 16; i < 32; ++i) {
    StepOutput o = decode.step({{ids[i]}, {i}, {0}}, state);
    const Tensor& logits = o.at("logits").tensor;
    ASSERT_EQ(logits.shape, (std::vector<int64_t>{1, n_vocab}));
    double err = relative_error(logits.row(0), expected.data() + i * n_vocab, n_vocab);
    EXPECT_LE(err, 1e-4) << name << " decode position " << i;
    worst = std::max(worst, err);
    if (i < 31) {
      EXPECT_EQ(o.at("next").ids[0], ids[i + 1]) << name << " position " << i;
    }
  }
  std::printf("%s: worst relative error over 32 positions %.3g\n", name.c_str(), worst);
}

INSTANTIATE_TEST_SUITE_P(Transformers, Conformance, ::testing::Values("qwen3", "qwen3moe", "llama", "qwen2"),
                         [](const auto& info) { return info.param; });

}  // namespace
