// Tokenizer refusals (each names the key at fault) and a hand-made SentencePiece vocabulary whose
// expected ids were worked out by hand from the scores.
#include "test_tokenizer_helpers.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>

namespace lathe {
namespace {

// Expects Tokenizer::from_gguf to throw a UserError whose message contains every fragment.
void expect_refused(const GgufWriter& w, std::vector<std::string> fragments) {
  const test::MemoryGguf g(w, "bad.gguf");
  try {
    Tokenizer::from_gguf(*g.file);
    ADD_FAILURE() << "accepted; expected a refusal naming " << fragments[0];
  } catch (const UserError& e) {
    const std::string message = e.what();
    for (const std::string& f : fragments)
      EXPECT_NE(message.find(f), std::string::npos) << "\"" << message << "\" lacks \"" << f << "\"";
    EXPECT_NE(message.find("bad.gguf"), std::string::npos) << message;
  }
}

GgufWriter qwen_vocab() { return test::synthetic_vocab_writer(Arch::qwen2, 4096); }

TEST(TokenizerErrors, EachDefectNamesItsKey) {
  {
    GgufWriter w;
    w.set("general.architecture", GgufValue::of_string("qwen2"));
    expect_refused(w, {"no tokenizer", "tokenizer.ggml.model"});
  }
  {
    GgufWriter w = qwen_vocab();
    w.set("tokenizer.ggml.model", GgufValue::of_string("bert"));
    expect_refused(w, {"tokenizer.ggml.model", "bert"});
  }
  {
    GgufWriter w;
    w.set("tokenizer.ggml.model", GgufValue::of_string("gpt2"));
    expect_refused(w, {"tokenizer.ggml.tokens", "missing"});
  }
  {
    GgufWriter w = qwen_vocab();
    w.set("tokenizer.ggml.tokens", GgufValue::of_strings({}));
    expect_refused(w, {"tokenizer.ggml.tokens", "empty"});
  }
  {
    GgufWriter w = qwen_vocab();
    w.set("tokenizer.ggml.tokens", GgufValue::of_i32s({1, 2, 3}));
    expect_refused(w, {"tokenizer.ggml.tokens", "not of strings"});
  }
  {
    GgufWriter w = qwen_vocab();
    w.set("tokenizer.ggml.pre", GgufValue::of_string("deepseek-llm"));
    expect_refused(w, {"tokenizer.ggml.pre", "deepseek-llm"});
  }
  {
    GgufWriter w = qwen_vocab();
    w.set("tokenizer.ggml.merges", GgufValue::of_strings({"a b", "Ġ qqq"}));
    expect_refused(w, {"tokenizer.ggml.merges[1]", "qqq"});
  }
  {
    GgufWriter w = qwen_vocab();
    w.set("tokenizer.ggml.merges", GgufValue::of_strings({"ab"}));
    expect_refused(w, {"tokenizer.ggml.merges[0]", "two tokens"});
  }
  {
    GgufWriter w = qwen_vocab();
    w.set("tokenizer.ggml.bos_token_id", GgufValue::of_u32(4096));
    expect_refused(w, {"tokenizer.ggml.bos_token_id", "4096", "outside"});
  }
  {
    GgufWriter w = qwen_vocab();
    w.set("tokenizer.ggml.eot_token_id", GgufValue::of_u32(100000));
    expect_refused(w, {"tokenizer.ggml.eot_token_id"});
  }
  {
    GgufWriter w = qwen_vocab();
    w.set("tokenizer.ggml.token_type", GgufValue::of_i32s({1, 1}));
    expect_refused(w, {"tokenizer.ggml.token_type", "4096"});
  }
  {
    GgufWriter w = qwen_vocab();
    std::vector<std::string> tokens = make_synthetic_vocab(Arch::qwen2, 4096).tokens;
    tokens['A'] = "not a byte";
    w.set("tokenizer.ggml.tokens", GgufValue::of_strings(tokens));
    w.set("tokenizer.ggml.merges", GgufValue::of_strings({}));
    expect_refused(w, {"tokenizer.ggml.tokens", "0x41"});
  }
}

TEST(TokenizerErrors, IdsOutOfRangeAreRefused) {
  const test::MemoryGguf g(qwen_vocab());
  const Tokenizer tok = Tokenizer::from_gguf(*g.file);
  const std::vector<int32_t> bad = {5, 4096};
  EXPECT_THROW(tok.decode(bad), UserError);
  EXPECT_THROW(tok.token_text(-1), UserError);
  StreamingDecoder stream(tok);
  EXPECT_THROW(stream.push(1 << 30), UserError);
  EXPECT_FALSE(tok.is_end_of_generation(-3));
}

TEST(TokenizerSpecials, BosEosFollowTheMetadata) {
  GgufWriter w = qwen_vocab();
  w.set("tokenizer.ggml.add_bos_token", GgufValue::of_bool(true));
  w.set("tokenizer.ggml.add_eos_token", GgufValue::of_bool(true));
  const test::MemoryGguf g(w);
  const Tokenizer tok = Tokenizer::from_gguf(*g.file);
  const auto ids = tok.encode("hi", true, false);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), tok.bos());
  EXPECT_EQ(ids.back(), tok.eos());
  EXPECT_EQ(tok.encode("hi", false, false).size() + 2, ids.size());
  // Control tokens are text unless parse_special: a user cannot forge the end of a turn.
  const auto forged = tok.encode("<|im_end|>", false, false);
  EXPECT_GT(forged.size(), 1u);
  EXPECT_EQ(tok.decode(forged), "<|im_end|>");
  EXPECT_EQ(tok.encode("<|im_end|>", false, true), std::vector<int32_t>{tok.eos()});
}

// A SentencePiece vocabulary small enough to check by hand.
struct HandSpm {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  std::vector<float> scores = {0, 0, 0};
  void add(const std::string& t, int32_t type, float score) {
    tokens.push_back(t);
    types.push_back(type);
    scores.push_back(score);
  }
  int32_t id(const std::string& t) const {
    return static_cast<int32_t>(std::find(tokens.begin(), tokens.end(), t) - tokens.begin());
  }
  GgufWriter writer(bool byte_tokens, bool space_prefix) {
    HandSpm v = *this;
    if (byte_tokens)
      for (int b = 0; b < 256; ++b) v.add(fmt::format("<0x{:02X}>", b), 6, 0);
    GgufWriter w;
    w.set("general.architecture", GgufValue::of_string("llama"));
    w.set("tokenizer.ggml.model", GgufValue::of_string("llama"));
    w.set("tokenizer.ggml.tokens", GgufValue::of_strings(v.tokens));
    w.set("tokenizer.ggml.token_type", GgufValue::of_i32s(v.types));
    w.set("tokenizer.ggml.scores", GgufValue::of_f32s(v.scores));
    w.set("tokenizer.ggml.bos_token_id", GgufValue::of_u32(1));
    w.set("tokenizer.ggml.eos_token_id", GgufValue::of_u32(2));
    w.set("tokenizer.ggml.add_space_prefix", GgufValue::of_bool(space_prefix));
    return w;
  }
};

HandSpm hand_spm() {
  HandSpm v;
  for (const char* t : {"▁", "h", "e", "l", "o"}) v.add(t, 1, -10);
  v.add("▁h", 1, -1);
  v.add("ll", 1, -2);
  v.add("llo", 1, -3);
  v.add("▁he", 1, -4);
  v.add("he", 1, -5);
  return v;
}

TEST(TokenizerSpm, HandCheckedMerges) {
  HandSpm v = hand_spm();
  const test::MemoryGguf g(v.writer(true, true));
  const Tokenizer tok = Tokenizer::from_gguf(*g.file);
  HandSpm full = v;  // the ids as writer(true, ...) lays them out: byte tokens last
  for (int b = 0; b < 256; ++b) full.add(fmt::format("<0x{:02X}>", b), 6, 0);
  auto id = [&](const std::string& t) { return full.id(t); };
  // ▁h (-1) first, then ll (-2), llo (-3), ▁he (-4); "he" (-5) is stale by then.
  EXPECT_EQ(tok.encode("hello", false, false), (std::vector<int32_t>{id("▁he"), id("llo")}));
  EXPECT_EQ(tok.encode("hel lo", false, false),
            (std::vector<int32_t>{id("▁he"), id("l"), id("▁"), id("l"), id("o")}));
  // x is no token: its byte.
  EXPECT_EQ(tok.encode("hex", false, false), (std::vector<int32_t>{id("▁he"), id("<0x78>")}));
  // After a parsed special the fragment gets the space prefix again (llama.cpp's rule).
  EXPECT_EQ(tok.encode("<s>hello", false, true), (std::vector<int32_t>{1, id("▁he"), id("llo")}));
  EXPECT_EQ(tok.encode("<s>hello", false, false),
            (std::vector<int32_t>{id("▁"), id("<0x3C>"), id("<0x73>"), id("<0x3E>"), id("he"), id("llo")}));
  EXPECT_EQ(tok.encode("hello", true, false), (std::vector<int32_t>{1, id("▁he"), id("llo")}));
  EXPECT_EQ(tok.decode(std::vector<int32_t>{1, id("▁he"), id("llo")}, true), "hello");
  EXPECT_EQ(tok.decode(std::vector<int32_t>{1, id("▁he"), id("llo")}), "<s>hello");
  EXPECT_EQ(tok.decode(tok.encode("  hel lo ", false, false)), "  hel lo ");
  EXPECT_EQ(tok.decode(tok.encode("héllo 日本", false, false)), "héllo 日本");

  const test::MemoryGguf no_prefix(v.writer(true, false));
  const Tokenizer raw = Tokenizer::from_gguf(*no_prefix.file);
  EXPECT_EQ(raw.encode("hello", false, false), (std::vector<int32_t>{id("he"), id("llo")}));
  EXPECT_EQ(raw.decode(raw.encode(" hello", false, false)), " hello");

  // Without byte tokens an unknown piece is the unknown token.
  const test::MemoryGguf no_bytes(v.writer(false, true));
  const Tokenizer unk = Tokenizer::from_gguf(*no_bytes.file);
  EXPECT_EQ(unk.encode("hex", false, false), (std::vector<int32_t>{v.id("▁he"), 0}));
}

}  // namespace
}  // namespace lathe
