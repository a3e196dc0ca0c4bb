// `lathe tokenize`, `lathe logits` and `lathe perplexity` run as a user runs them (the built binary,
// LATHE_BINARY): tokenize gives Tokenizer::encode's ids under the BOS rule of `lathe run`; logits on
// the CPU match transformers on the tiny peer models and are readable by numpy; perplexity agrees with
// the logits it is computed from and ranks the default model's own training text above shuffled words;
// malformed token lists and out-of-range ids are refused by name with exit 1.
#include "gguf/gguf_file.h"
#include "runtime/tokenizer.h"

#include "test_cli_helpers.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

using namespace lathe;

namespace {


Ran run(const std::string& args, bool with_stderr = true) { return run_lathe(args, with_stderr); }

std::string data(const std::string& rel) { return std::string(LATHE_TEST_DATA) + "/" + rel; }
std::string default_model() { return std::string(LATHE_SOURCE_DIR) + "/models/default/lathe-kjv-qwen3.gguf"; }
std::string temp_path(const std::string& name) { return (std::filesystem::path(::testing::TempDir()) / name).string(); }

// Single quotes for the shell, the text's own quotes escaped.
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<int32_t> parse_ids(const std::string& line) {
  std::vector<int32_t> ids;
  std::istringstream in(line);
  for (std::string item; std::getline(in, item, ',');) ids.push_back(std::stoi(item));
  return ids;
}

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  return out;
}

// The pieces line of `lathe tokenize` back into bytes: "a","b\n" -> {"a", "b\n"}.
std::vector<std::string> parse_pieces(const std::string& line) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    EXPECT_EQ(line[i], '"') << line.substr(i);
    std::string piece;
    for (++i; i < line.size() && line[i] != '"'; ++i) {
      if (line[i] != '\\') {
        piece += line[i];
        continue;
      }
      const char e = line[++i];
      if (e == 'n') piece += '\n';
      else if (e == 'r') piece += '\r';
      else if (e == 't') piece += '\t';
      else if (e == 'x') piece += static_cast<char>(std::stoi(line.substr(i + 1, 2), nullptr, 16)), i += 2;
      else piece += e;
    }
    out.push_back(piece);
    i += 2;  // the closing quote and the comma
  }
  return out;
}

// A .npy array (version 1.0, as `lathe logits` writes it): descr, shape and the raw data; the data
// offset must be a multiple of 64.
struct Npy {
  std::string descr;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
  size_t data_offset = 0;
};

Npy read_npy(const std::string& path) {
  const std::string bytes = read_file(path);
  Npy out;
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw std::runtime_error(path + ": not .npy");
  const size_t major = static_cast<unsigned char>(bytes[6]);
  const size_t at = major == 1 ? 10 : 12;
  size_t len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  if (major != 1) len |= (static_cast<size_t>(static_cast<unsigned char>(bytes[10])) << 16) |
                         (static_cast<size_t>(static_cast<unsigned char>(bytes[11])) << 24);
  const std::string header = bytes.substr(at, len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr': *'([^']*)'"))) throw std::runtime_error("no descr");
  out.descr = m[1];
  if (header.find("'fortran_order': False") == std::string::npos) throw std::runtime_error("Fortran order");
  if (!std::regex_search(header, m, std::regex("'shape': *\\(([^)]*)\\)"))) throw std::runtime_error("no shape");
  const std::string dims = m[1];
  const std::regex number("[0-9]+");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it)
    out.shape.push_back(std::stoll(it->str()));
  out.data_offset = at + len;
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(at + len), bytes.end());
  return out;
}

template <typename T>
std::vector<T> values(const Npy& a) {
  std::vector<T> out(a.data.size() / sizeof(T));
  std::memcpy(out.data(), a.data.data(), out.size() * sizeof(T));
  return out;
}

// -log softmax(row)[target], in f64.
double nll(const float* row, int64_t n_vocab, int32_t target) {
  const double max = *std::max_element(row, row + n_vocab);
  double sum = 0;
  for (int64_t i = 0; i < n_vocab; ++i) sum += std::exp(row[i] - max);
  return std::log(sum) - (row[target] - max);
}

struct Ppl {
  double value = 0, error = 0;
};

Ppl parse_ppl(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("PPL = ([0-9.]+) \\+/- ([0-9.]+)"))) return {};
  return {std::stod(m[1]), std::stod(m[2])};
}

// ---- tokenize

TEST(InspectTokenize, IdsAreTheTokenizersWithoutBosAsTheDefaultModelAsks) {
  const GgufFile file = GgufFile::open(default_model());
  const Tokenizer tok = Tokenizer::from_gguf(file);
  ASSERT_FALSE(tok.add_bos());  // the default model asks for no BOS: `lathe run` feeds none
  for (const std::string text : {"In the beginning God created the heaven and the earth.",
                                 "And Jesus said unto them, \"Come, follow me\";\n\tit's 1611!",
                                 "naïve café, 你好 — ok"}) {
    const Ran r = run("tokenize " + default_model() + " --ids-only " + shell_quote(text));
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(r.out, join_ids(tok.encode(text, false, false)) + "\n") << text;
  }
}

TEST(InspectTokenize, PiecesLineSpellsTheTextBackPieceByPiece) {
  const GgufFile file = GgufFile::open(default_model());
  const Tokenizer tok = Tokenizer::from_gguf(file);
  const std::string text = "Let there be light, \"and\" there was\nlight: 你好\\";
  const Ran r = run("tokenize " + default_model() + " " + shell_quote(text));
  ASSERT_EQ(r.status, 0) << r.out;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  const std::vector<int32_t> ids = parse_ids(lines[0]);
  EXPECT_EQ(ids, tok.encode(text, false, false));
  const std::vector<std::string> pieces = parse_pieces(lines[1]);
  ASSERT_EQ(pieces.size(), ids.size()) << lines[1];
  std::string joined;
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(pieces[i], tok.token_bytes(ids[i])) << i;
    joined += pieces[i];
  }
  EXPECT_EQ(joined, text);
}

TEST(InspectTokenize, BosFlagsAndSpecialsAndFileInput) {
  const GgufFile file = GgufFile::open(default_model());
  const Tokenizer tok = Tokenizer::from_gguf(file);
  ASSERT_GE(tok.bos(), 0);
  const std::string text = "Amen.<|endoftext|>";
  const std::vector<int32_t> plain = tok.encode(text, false, false);
  std::vector<int32_t> with_bos = plain;
  with_bos.insert(with_bos.begin(), tok.bos());
  const std::string model = default_model() + " --ids-only ";
  EXPECT_EQ(run("tokenize " + model + "--bos " + shell_quote(text)).out, join_ids(with_bos) + "\n");
  EXPECT_EQ(run("tokenize " + model + "--no-bos " + shell_quote(text)).out, join_ids(plain) + "\n");
  // The control token is text unless --parse-special.
  const std::vector<int32_t> special = tok.encode(text, false, true);
  ASSERT_NE(special, plain);
  EXPECT_EQ(special.back(), tok.find_token("<|endoftext|>"));
  EXPECT_EQ(run("tokenize " + model + "--parse-special " + shell_quote(text)).out, join_ids(special) + "\n");
  // -f reads the file byte for byte, newlines and all.
  const std::string path = temp_path("lathe_tokenize_input.txt");
  std::ofstream(path, std::ios::binary) << "line one\nline two\n\n";
  EXPECT_EQ(run("tokenize " + model + "-f " + path).out, join_ids(tok.encode("line one\nline two\n\n", false, false)) + "\n");
  // Usage mistakes.
  EXPECT_NE(run("tokenize " + model + "--bos --no-bos x").status, 0);
  const Ran none = run("tokenize " + default_model());
  EXPECT_EQ(none.status, 1) << none.out;
  EXPECT_NE(none.out.find("nothing to tokenize"), std::string::npos) << none.out;
  const Ran missing = run("tokenize " + model + "-f /nonexistent/lathe.txt");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.out.find("/nonexistent/lathe.txt"), std::string::npos) << missing.out;
}

// ---- logits

class InspectLogits : public ::testing::TestWithParam<std::string> {};

// transformers' logits of the 32 fixture ids (scripts/fixtures/hf_tiny_models.py) against
// `lathe logits --device cpu`, row by row: max |a - b| / max |b| within 1e-4.
TEST_P(InspectLogits, CpuMatchesTransformers) {
  const std::string dir = data("transformers/"), name = GetParam();
  const Npy ids_npy = read_npy(dir + name + "_ids.npy");
  ASSERT_EQ(ids_npy.descr, "<i4");
  const std::vector<int32_t> ids = values<int32_t>(ids_npy);
  const Npy expected_npy = read_npy(dir + name + "_logits.npy");
  ASSERT_EQ(expected_npy.descr, "<f4");
  const std::vector<float> expected = values<float>(expected_npy);
  const std::string out = temp_path("lathe_logits_" + name + ".npy");
  std::filesystem::remove(out);
  const Ran r = run("logits " + dir + name + ".gguf --device cpu --tokens " + join_ids(ids) + " -o " + out);
  ASSERT_EQ(r.status, 0) << r.out;
  const Npy got_npy = read_npy(out);
  EXPECT_EQ(got_npy.descr, "<f4");
  EXPECT_EQ(got_npy.data_offset % 64, 0u);
  ASSERT_EQ(got_npy.shape, expected_npy.shape);
  ASSERT_EQ(got_npy.shape.size(), 2u);
  const std::vector<float> got = values<float>(got_npy);
  ASSERT_EQ(got.size(), expected.size());
  const int64_t n_vocab = got_npy.shape[1];
  for (int64_t row = 0; row < got_npy.shape[0]; ++row) {
    double diff = 0, scale = 0;
    for (int64_t i = row * n_vocab; i < (row + 1) * n_vocab; ++i) {
      diff = std::max(diff, std::abs(double(got[i]) - double(expected[i])));
      scale = std::max(scale, std::abs(double(expected[i])));
    }
    EXPECT_LE(diff / scale, 1e-4) << name << " row " << row;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, InspectLogits, ::testing::Values("qwen3", "llama", "qwen2", "qwen3moe"));

TEST(InspectLogitsFile, NumpyReadsItAsFloat32OfTheShape) {
  if (std::system("python3 -c 'import numpy' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3 with numpy";
  const std::string out = temp_path("lathe_logits_numpy.npy");
  const Ran r = run("logits " + data("transformers/qwen3.gguf") + " --device cpu --tokens 5,17,300 -o " + out);
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string script = "import numpy; a = numpy.load('" + out + "'); print(a.dtype, a.shape, a.flags['C_CONTIGUOUS'], float(a[2, 7]))";
  std::string command = "python3 -c " + shell_quote(script);
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::array<char, 256> buffer{};
  const size_t n = fread(buffer.data(), 1, buffer.size() - 1, pipe);
  pclose(pipe);
  const std::string said(buffer.data(), n);
  const std::vector<float> ours = values<float>(read_npy(out));
  ASSERT_EQ(ours.size(), 3u * 512u);
  EXPECT_EQ(said.substr(0, said.find(" True") + 5), "float32 (3, 512) True") << said;
  EXPECT_NEAR(std::stod(said.substr(said.find("True") + 5)), ours[2 * 512 + 7], 1e-6) << said;
}

TEST(InspectLogitsRefusals, MalformedTokenListsAreRefusedByName) {
  const std::string model = data("transformers/qwen3.gguf");
  struct Case {
    std::string tokens, says;
  };
  for (const Case& c : std::vector<Case>{{"1,,2", "item 2 is empty"},
                                         {"a", "item 1 \"a\" is not a token id"},
                                         {"-1", "item 1 \"-1\" is not a token id"},
                                         {"3,4,x7", "item 3 \"x7\" is not a token id"},
                                         {"1,2,", "item 3 is empty"},
                                         {"", "--tokens is empty"},
                                         {"1.5", "item 1 \"1.5\" is not a token id"},
                                         {"99999999999", "item 1 \"99999999999\" is out of range"}}) {
    const std::string out = temp_path("lathe_logits_refused.npy");
    std::filesystem::remove(out);
    const Ran r = run("logits " + model + " --device cpu --tokens " + shell_quote(c.tokens) + " -o " + out);
    EXPECT_EQ(r.status, 1) << c.tokens << ": " << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.tokens << ": " << r.out;
    EXPECT_FALSE(std::filesystem::exists(out)) << c.tokens;
  }
}

TEST(InspectLogitsRefusals, OutOfRangeIdsAreRefusedByName) {
  const Ran r = run("logits " + data("transformers/qwen3.gguf") + " --device cpu --tokens 1,511,512 -o " +
                    temp_path("lathe_logits_range.npy"));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("item 3 is token id 512, out of range"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("512 tokens (ids 0 to 511)"), std::string::npos) << r.out;
  const Ran ctx = run("logits " + data("transformers/qwen3.gguf") + " --device cpu --ctx 2 --tokens 1,2,3 -o " +
                      temp_path("lathe_logits_ctx.npy"));
  EXPECT_EQ(ctx.status, 1) << ctx.out;
  EXPECT_NE(ctx.out.find("3 tokens, more than the context of 2"), std::string::npos) << ctx.out;
}

// --lane-rounding: the interpreter's logits with the GPU lane's roundings (this fixture's F32 matrices
// take no f16 product: the cache's and the flash attention's roundings) stay near the plain ones and
// are not them; the flag goes with --device cpu only.
TEST(InspectLogitsLaneRounding, RoundsNearThePlainLogitsOnTheCpuOnly) {
  const std::string model = data("transformers/qwen3.gguf"), tokens = "5,17,300,2,9,44,100,7,8,300,31,400";
  const std::string plain = temp_path("lathe_logits_plain.npy"), rounded = temp_path("lathe_logits_rounded.npy");
  ASSERT_EQ(run("logits " + model + " --device cpu --tokens " + tokens + " -o " + plain).status, 0);
  const Ran r = run("logits " + model + " --device cpu --lane-rounding --tokens " + tokens + " -o " + rounded);
  ASSERT_EQ(r.status, 0) << r.out;
  const std::vector<float> a = values<float>(read_npy(plain)), b = values<float>(read_npy(rounded));
  ASSERT_EQ(a.size(), b.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(double(a[i])));
  }
  EXPECT_GT(diff, 0.0);
  EXPECT_LT(diff / scale, 2e-3);
  for (const std::string device : {"gpu", "auto"}) {
    const Ran refused = run("logits " + model + " --device " + device + " --lane-rounding --tokens 1,2 -o " + rounded);
    EXPECT_EQ(refused.status, 1) << refused.out;
    EXPECT_NE(refused.out.find("--lane-rounding"), std::string::npos) << refused.out;
  }
}

// The rounded interpreter chunks a prompt as the lane does (--max-chunk): a Q8_0 model's 16 tokens in one
// chunk take the f16 products' roundings, in two chunks of 8 rows (the decode GEMVs') they do not.
TEST(InspectLogitsLaneRounding, ChunksAsTheLaneChunks) {
  const std::string model = temp_path("lathe_logits_chunks_q8_0.gguf");
  ASSERT_EQ(run("synth --shape qwen3-tiny --type q8_0 -o " + model).status, 0);
  const std::string tokens = "5,17,300,2,9,44,100,7,8,300,31,400,12,90,3,77";
  const std::string one = temp_path("lathe_logits_one_chunk.npy"), eights = temp_path("lathe_logits_by_8.npy");
  ASSERT_EQ(run("logits " + model + " --device cpu --lane-rounding --tokens " + tokens + " -o " + one).status, 0);
  ASSERT_EQ(run("logits " + model + " --device cpu --lane-rounding --max-chunk 8 --tokens " + tokens + " -o " + eights).status,
            0);
  EXPECT_NE(values<float>(read_npy(one)), values<float>(read_npy(eights)));
}

// LATHE_PREFILL_GEMM's value is read where the roundings are chosen: one it does not take is refused
// by name, with the values it takes (not silently read as the planner's rule).
TEST(InspectLogitsLaneRounding, RefusesAPrefillGemmSettingItDoesNotTake) {
  const std::string model = data("transformers/qwen3.gguf"), out = temp_path("lathe_logits_knob.npy");
  setenv("LATHE_PREFILL_GEMM", "int4", 1);
  const Ran r = run("logits " + model + " --device cpu --lane-rounding --tokens 1,2 -o " + out);
  unsetenv("LATHE_PREFILL_GEMM");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("LATHE_PREFILL_GEMM=int4: it takes wgmma, f16 or int8"), std::string::npos) << r.out;
}

// ---- perplexity

// The figure is llama-perplexity's from the logits: windows of 32 ids, the last 15 predictions of
// each (positions 16..30) scored; ppl = exp(mean NLL), error = ppl * sqrt(var / (n - 1)).
TEST(InspectPerplexity, EqualsTheFigureComputedFromTheLogits) {
  const std::string model = default_model();
  const std::string text_path = data("inspect/genesis_1_3.txt");
  const Ran tokenized = run("tokenize " + model + " --ids-only -f " + text_path, false);
  ASSERT_EQ(tokenized.status, 0);
  const std::vector<int32_t> ids = parse_ids(tokenized.out);
  ASSERT_GE(ids.size(), 64u);
  // Two windows of 32: the first 64 ids of the text, in a file of their own words.
  const std::string short_path = temp_path("lathe_ppl_short.txt");
  {
    const GgufFile file = GgufFile::open(model);
    const Tokenizer tok = Tokenizer::from_gguf(file);
    const std::vector<int32_t> head(ids.begin(), ids.begin() + 70);
    std::ofstream(short_path, std::ios::binary) << tok.decode(head);
    ASSERT_EQ(tok.encode(tok.decode(head), false, false), head);  // the text re-tokenizes to the same ids
  }
  double sum = 0, sum2 = 0;
  int n = 0;
  for (int w = 0; w < 2; ++w) {
    const std::vector<int32_t> window(ids.begin() + w * 32, ids.begin() + (w + 1) * 32);
    const std::string out = temp_path("lathe_ppl_window.npy");
    const Ran r = run("logits " + model + " --device cpu --tokens " + join_ids(window) + " -o " + out);
    ASSERT_EQ(r.status, 0) << r.out;
    const Npy npy = read_npy(out);
    const std::vector<float> logits = values<float>(npy);
    const int64_t n_vocab = npy.shape[1];
    for (int j = 16; j < 31; ++j) {
      const double x = nll(logits.data() + j * n_vocab, n_vocab, window[j + 1]);
      sum += x, sum2 += x * x, ++n;
    }
  }
  const double mean = sum / n, ppl = std::exp(mean);
  const double error = ppl * std::sqrt((sum2 / n - mean * mean) / (n - 1));
  const Ran r = run("perplexity " + model + " --device cpu --ctx 32 -f " + short_path);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("[1]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(",[2]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("[3]"), std::string::npos) << r.out;  // the 6 ids past 64 make no window
  const Ppl got = parse_ppl(r.out);
  EXPECT_NEAR(got.value, ppl, 1e-4 * ppl + 1e-4) << r.out;
  EXPECT_NEAR(got.error, error, 1e-3 * error + 1e-5) << r.out;
  EXPECT_GT(got.error, 0);
}

// The default model was trained on the KJV (Genesis 1-3 included): its own text must read as far
// more likely than the same words in a random order (measured: 7.6 against 4,800 over Genesis 1:1-2:5).
// The first 20 verses (about 600 tokens, 4 windows of 128) keep the two runs near 6 s on the CPU.
TEST(InspectPerplexity, OwnTrainingTextScoresBelowTheSameWordsShuffled) {
  std::string text;
  const std::vector<std::string> verses = lines_of(read_file(data("inspect/genesis_1_3.txt")));
  ASSERT_GE(verses.size(), 20u);
  for (size_t i = 0; i < 20; ++i) text += verses[i] + "\n";
  const std::string own_path = temp_path("lathe_genesis_own.txt");
  std::ofstream(own_path, std::ios::binary) << text;
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  ASSERT_GT(words.size(), 400u);
  std::mt19937 rng(20240611);
  for (size_t i = words.size() - 1; i > 0; --i) std::swap(words[i], words[rng() % (i + 1)]);
  std::string shuffled;
  for (size_t i = 0; i < words.size(); ++i) shuffled += words[i] + (i % 20 == 19 ? "\n" : " ");
  const std::string shuffled_path = temp_path("lathe_genesis_shuffled.txt");
  std::ofstream(shuffled_path, std::ios::binary) << shuffled;

  const std::string command = "perplexity " + default_model() + " --device cpu --ctx 128 -f ";
  const Ran own = run(command + own_path);
  ASSERT_EQ(own.status, 0) << own.out;
  const Ran mixed = run(command + shuffled_path);
  ASSERT_EQ(mixed.status, 0) << mixed.out;
  const Ppl a = parse_ppl(own.out), b = parse_ppl(mixed.out);
  ASSERT_GT(a.value, 1) << own.out;
  EXPECT_LT(a.value + 3 * a.error, b.value - 3 * b.error) << own.out << "\n" << mixed.out;
}

TEST(InspectPerplexity, RefusesATextTooShortForOneWindow) {
  const std::string path = temp_path("lathe_ppl_tiny.txt");
  std::ofstream(path) << "In the beginning God created the heaven and the earth.\n";
  const Ran r = run("perplexity " + default_model() + " --device cpu --ctx 64 -f " + path);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("tokens long, too short for one window of 64 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(path), std::string::npos) << r.out;
}

}  // namespace
