// The tokenizer a checkpoint carries in its metadata, as llama.cpp reads it:
//
//   tokenizer.ggml.model   "gpt2": byte-level BPE (GPT-2's byte-to-unicode alphabet, merges by rank),
//                          split first by the pre-tokenizer regex named by tokenizer.ggml.pre;
//                          "llama": SentencePiece-style (scores, the ▁ space marker, <0xNN> byte
//                          fallback), encoded by the highest-score merge as SentencePiece's BPE does.
//   tokenizer.ggml.pre     gpt2 only: "qwen2" (Qwen's regex: digits one by one), "llama-bpe" and its
//                          aliases (Llama 3's regex: digits in groups of three, whole-word tokens
//                          taken before merges), "default"/"gpt-2" (GPT-2's regex), "smaug-bpe", "dbrx".
//   tokenizer.ggml.tokens, .token_type (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused,
//   6 byte), .scores, .merges, .bos/.eos/.eot/.eom/.unknown/.padding_token_id, .add_bos_token,
//   .add_eos_token, .add_space_prefix, tokenizer.chat_template.
//
// Special tokens: user-defined tokens (type 4) are always matched in text as whole strings before
// pre-tokenization; control tokens (type 3) only when parse_special is set, so text from a user can be
// encoded without letting it forge "<|im_end|>". Matching is leftmost-longest.
//
// Any byte string, valid UTF-8 or not, survives encode then decode for byte-level BPE: the valid runs
// are pre-tokenized by the regex, each invalid byte is a pre-token of its own.
//
// A Tokenizer is immutable after from_gguf; encode and decode are safe to call from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lathe {

class GgufFile;
struct TokenizerVocab;  // tokenizer_vocab.h: the loaded tables

enum class TokenizerKind { byte_bpe, spm };

class Tokenizer {
 public:
  // Reads the tokenizer.* keys; throws UserError naming the key on an empty vocabulary, a missing
  // tokenizer.ggml.tokens, an unknown tokenizer.ggml.model or .pre, merges naming unknown tokens,
  // token ids out of range.
  static Tokenizer from_gguf(const GgufFile& file);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // add_special: BOS first when add_bos_token, EOS last when add_eos_token (as the metadata says).
  // parse_special: control tokens written in the text ("<|im_start|>") become their ids.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes of the ids, concatenated (control tokens as their text unless skip_control).
  // Throws UserError on an id outside [0, n_vocab).
  std::string decode(std::span<const int32_t> ids, bool skip_control = false) const;
  // The bytes one token stands for (byte-level alphabet undone, ▁ made a space, <0xNN> a byte).
  std::string token_bytes(int32_t id) const;
  // The token's text as stored in the vocabulary (for display and debugging).
  const std::string& token_text(int32_t id) const;
  // The id of a vocabulary entry with exactly this stored text, or -1.
  int32_t find_token(std::string_view text) const;

  TokenizerKind kind() const;
  int64_t n_vocab() const;
  int32_t bos() const;  // -1 when the metadata names none
  int32_t eos() const;
  int32_t eot() const;  // end of turn (<|im_end|>, <|eot_id|>); eos when the metadata names none
  bool add_bos() const;
  bool add_eos() const;
  // EOS, EOT, EOM, and any control token whose text marks an end (<|im_end|>, <|eot_id|>,
  // <|end_of_text|>, <|endoftext|>, </s>): generation stops on these.
  bool is_end_of_generation(int32_t id) const;
  bool is_control(int32_t id) const;
  const std::string& chat_template() const;  // "" when the file has none
  const std::string& pre() const;            // tokenizer.ggml.pre ("" for spm)

  const TokenizerVocab& vocab() const { return *vocab_; }

 private:
  explicit Tokenizer(std::unique_ptr<TokenizerVocab> vocab);
  std::unique_ptr<TokenizerVocab> vocab_;
};

// Turns a stream of ids into text that is safe to print as it comes: push returns only complete
// UTF-8 characters and holds back the bytes of a character not yet finished; a byte that can never
// start or continue a valid character is passed through at once (as decode would). flush returns
// whatever is held back. The Tokenizer must outlive the decoder.
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tokenizer, bool skip_control = false);
  std::string push(int32_t id);
  std::string flush();

 private:
  const Tokenizer* tokenizer_;
  bool skip_control_;
  bool first_ = true;  // spm: the first piece loses the space prefix the encoder added
  std::string pending_;
};

// The length of the longest prefix of bytes that does not end inside an unfinished but still
// possibly valid UTF-8 sequence (streaming holds back the rest).
size_t utf8_complete_prefix(std::string_view bytes);

}  // namespace lathe
