// The tokenizer against its peers: vocabularies trained by PyPI's tokenizers (Qwen2's, Llama 3's and
// GPT-2's pre-tokenizers) and sentencepiece (Llama 2 style), written as GGUF by
// scripts/make_tokenizer_fixtures.py with the ids each peer gave on a corpus of hard strings. Also
// the synthetic vocabularies of src/model/synth.h, byte round trips, and speed.
#include "test_tokenizer_helpers.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>

namespace lathe {
namespace {

using test::data_path;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return nlohmann::json::parse(in);
}

std::string show(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

// A plain validator, written apart from the tokenizer's own.
bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (int k = 1; k < n; ++k)
      if ((static_cast<uint8_t>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

struct PeerVocab {
  GgufFile file;
  Tokenizer tok;
  nlohmann::json fixture;
  explicit PeerVocab(const std::string& name)
      : file(GgufFile::open(data_path("tokenizer/" + name + ".gguf"))),
        tok(Tokenizer::from_gguf(file)),
        fixture(read_json(data_path("tokenizer/" + name + ".json"))) {}
};

void expect_byte_bpe_peer(const std::string& name) {
  const PeerVocab p(name);
  ASSERT_EQ(p.tok.n_vocab(), p.fixture["n_vocab"].get<int64_t>());
  ASSERT_GE(p.fixture["cases"].size(), 30u);
  for (const auto& c : p.fixture["cases"]) {
    const std::string text = c["text"];
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(show(p.tok.encode(text, false, true)), show(ids)) << name << ": \"" << text << "\"";
    EXPECT_EQ(show(p.tok.encode(text, true, true)), show(c["ids_add_special"].get<std::vector<int32_t>>()))
        << name << " with BOS/EOS: \"" << text << "\"";
    EXPECT_EQ(show(p.tok.encode(text, false, false)), show(c["ids_no_parse"].get<std::vector<int32_t>>()))
        << name << " without parsing specials: \"" << text << "\"";
    EXPECT_EQ(p.tok.decode(ids), text) << name;
  }
}

TEST(TokenizerPeer, Qwen2MatchesTokenizers) {
  expect_byte_bpe_peer("qwen2");
  const PeerVocab p("qwen2");
  EXPECT_EQ(p.tok.pre(), "qwen2");
  EXPECT_FALSE(p.tok.add_bos());
  EXPECT_EQ(p.tok.token_text(p.tok.eot()), "<|im_end|>");
  EXPECT_TRUE(p.tok.is_end_of_generation(p.tok.find_token("<|endoftext|>")));
  EXPECT_FALSE(p.tok.is_end_of_generation(p.tok.find_token("<|im_start|>")));
  // Qwen2 splits digits one by one.
  const auto digits = p.tok.encode("12345", false, true);
  EXPECT_EQ(digits.size(), 5u);
}

TEST(TokenizerPeer, Llama3MatchesTokenizers) {
  expect_byte_bpe_peer("llama3");
  const PeerVocab p("llama3");
  EXPECT_TRUE(p.tok.add_bos());
  EXPECT_EQ(p.tok.token_text(p.tok.bos()), "<|begin_of_text|>");
  const auto with_bos = p.tok.encode("Hi", true, true);
  ASSERT_FALSE(with_bos.empty());
  EXPECT_EQ(with_bos[0], p.tok.bos());
  // Llama 3 groups digits by three: "1234567" is 123|456|7, each a token only if the vocabulary has it,
  // so check the split through decode of each piece instead.
  std::vector<std::string> pieces;
  for (int32_t id : p.tok.encode("1234567", false, true)) pieces.push_back(p.tok.token_bytes(id));
  std::string joined;
  for (const auto& s : pieces) joined += s + "|";
  EXPECT_TRUE(joined.starts_with("1") && joined.find("|7|") != std::string::npos) << joined;
}

TEST(TokenizerPeer, Gpt2MatchesTokenizers) {
  expect_byte_bpe_peer("gpt2");
  EXPECT_EQ(PeerVocab("gpt2").tok.pre(), "gpt-2");
}

TEST(TokenizerPeer, SentencePieceMatchesSentencepiece) {
  const PeerVocab p("spm");
  EXPECT_EQ(p.tok.kind(), TokenizerKind::spm);
  ASSERT_GE(p.fixture["cases"].size(), 20u);
  for (const auto& c : p.fixture["cases"]) {
    const std::string text = c["text"];
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(show(p.tok.encode(text, false, false)), show(ids)) << "\"" << text << "\"";
    EXPECT_EQ(p.tok.decode(ids), c["decoded"].get<std::string>()) << "\"" << text << "\"";
    auto with_bos = p.tok.encode(text, true, false);
    ASSERT_FALSE(with_bos.empty());
    EXPECT_EQ(with_bos[0], p.tok.bos());
    EXPECT_EQ(p.tok.decode(with_bos, /*skip_control=*/true), c["decoded"].get<std::string>());
  }
  // Characters the vocabulary lacks come back from their <0xNN> byte tokens.
  const std::string rare = "ℵ₀ 🜁 ꙮ";
  EXPECT_EQ(p.tok.decode(p.tok.encode(rare, false, false)), rare);
  EXPECT_EQ(p.tok.token_text(p.tok.encode("\xe2\x84\xb5", false, false).back()), "<0xB5>");
}

TEST(TokenizerRoundTrip, AnyBytesThroughByteLevelVocabularies) {
  for (const char* name : {"qwen2", "llama3", "gpt2"}) {
    const PeerVocab p(name);
    for (const std::string& s : test::hostile_byte_strings()) {
      for (bool parse : {false, true}) {
        const auto ids = p.tok.encode(s, false, parse);
        ASSERT_EQ(p.tok.decode(ids), s) << name << ": " << s.size() << " bytes";
      }
    }
  }
}

TEST(TokenizerSynthetic, AnyTextRoundTrips) {
  for (Arch arch : {Arch::qwen2, Arch::llama}) {
    const int64_t n_vocab = arch == Arch::llama ? 128256 : 151936;
    const test::MemoryGguf g(test::synthetic_vocab_writer(arch, n_vocab));
    const Tokenizer tok = Tokenizer::from_gguf(*g.file);
    EXPECT_EQ(tok.n_vocab(), n_vocab);
    EXPECT_EQ(tok.pre(), arch == Arch::llama ? "llama-bpe" : "qwen2");
    const PeerVocab peer("qwen2");
    std::vector<std::string> texts = test::hostile_byte_strings();
    for (const auto& c : peer.fixture["cases"]) texts.push_back(c["text"]);
    for (const std::string& s : texts) {
      const auto ids = tok.encode(s, false, false);
      for (int32_t id : ids) ASSERT_FALSE(tok.is_control(id));
      ASSERT_EQ(tok.decode(ids), s) << arch_name(arch);
    }
    // Merges apply: a common word is fewer tokens than letters.
    EXPECT_LT(tok.encode(" the quick brown fox", false, false).size(), 12u);
    // The family's specials parse as one token each, and end generation where they should.
    const std::string turn = arch == Arch::llama ? "<|eot_id|>" : "<|im_end|>";
    const auto ids = tok.encode("hi" + turn, true, true);
    EXPECT_EQ(ids.back(), tok.eot());
    EXPECT_TRUE(tok.is_end_of_generation(ids.back()));
    EXPECT_EQ(ids.front() == tok.bos(), arch == Arch::llama);
    EXPECT_EQ(tok.decode(ids, /*skip_control=*/true), "hi");
    EXPECT_FALSE(tok.chat_template().empty());
  }
}

TEST(TokenizerStreaming, EmitsOnlyWholeCharacters) {
  const PeerVocab p("qwen2");
  for (const auto& c : p.fixture["cases"]) {
    const std::string text = c["text"];
    StreamingDecoder stream(p.tok);
    std::string joined;
    for (int32_t id : c["ids"].get<std::vector<int32_t>>()) {
      const std::string piece = stream.push(id);
      // Valid UTF-8 in, so every piece is valid UTF-8 on its own.
      EXPECT_TRUE(valid_utf8(piece)) << "\"" << text << "\" piece of " << piece.size() << " bytes";
      joined += piece;
    }
    EXPECT_EQ(stream.flush(), "");
    EXPECT_EQ(joined, text);
  }
  // A four-byte emoji fed byte token by byte token is held back until its last byte.
  const std::string smile = "\xf0\x9f\x98\x80";
  StreamingDecoder stream(p.tok);
  std::string out;
  for (size_t i = 0; i < smile.size(); ++i) {
    const std::string piece = stream.push(p.tok.encode(smile.substr(i, 1), false, false).at(0));
    if (i + 1 < smile.size()) {
      EXPECT_EQ(piece, "") << "byte " << i;
    }
    out += piece;
  }
  EXPECT_EQ(out, smile);
  // A byte that can never start a character passes at once; an unfinished one comes out on flush.
  StreamingDecoder s2(p.tok);
  EXPECT_EQ(s2.push(p.tok.encode("\xff", false, false).at(0)), "\xff");
  EXPECT_EQ(s2.push(p.tok.encode("\xe2", false, false).at(0)), "");
  EXPECT_EQ(s2.flush(), "\xe2");
}

TEST(TokenizerStreaming, CompletePrefix) {
  EXPECT_EQ(utf8_complete_prefix(""), 0u);
  EXPECT_EQ(utf8_complete_prefix("abc"), 3u);
  EXPECT_EQ(utf8_complete_prefix("ab\xc3"), 2u);
  EXPECT_EQ(utf8_complete_prefix("ab\xc3\xa9"), 4u);
  EXPECT_EQ(utf8_complete_prefix("a\xe2\x82"), 1u);
  EXPECT_EQ(utf8_complete_prefix("a\xf0\x9f\x98"), 1u);
  EXPECT_EQ(utf8_complete_prefix("a\xe0\x80"), 3u);  // overlong second byte: never valid
  EXPECT_EQ(utf8_complete_prefix("a\xed\xa0"), 3u);  // surrogate: never valid
  EXPECT_EQ(utf8_complete_prefix("a\x80"), 2u);
  EXPECT_EQ(utf8_complete_prefix("a\xc1"), 2u);
}

TEST(TokenizerSpeed, OneMegabyteWellUnderASecond) {
  const PeerVocab p("qwen2");
  std::string text;
  std::mt19937 rng(3);
  std::vector<std::string> words;
  for (const auto& c : p.fixture["cases"]) words.push_back(c["text"]);
  for (int i = 0; i < 5000; ++i) words.push_back(" " + p.tok.token_bytes(static_cast<int32_t>(rng() % 5000)));
  while (text.size() < (1 << 20)) text += words[rng() % words.size()];
  const auto start = std::chrono::steady_clock::now();
  const auto ids = p.tok.encode(text, false, true);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("encoded %zu bytes into %zu tokens in %.3f s\n", text.size(), ids.size(), seconds);
  EXPECT_EQ(p.tok.decode(ids), text);
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(seconds, 1.0);
#endif
  // Long runs are single pre-tokens (no cache help): neither the merges nor the regex may be
  // quadratic in them, nor run out of PCRE2's JIT stack.
  for (const std::string unit : {"a", " ", "7", "!", "\n ", "ab ", "日"}) {
    std::string run;
    while (run.size() < 200000) run += unit;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(p.tok.decode(p.tok.encode(run, false, false)), run) << "a run of \"" << unit << "\"";
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0)
        << "a run of \"" << unit << "\"";
  }
}

}  // namespace
}  // namespace lathe
