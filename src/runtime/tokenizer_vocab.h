// The tables a Tokenizer is built from, and the pieces of the encoder the .cpp files share.
// Internal to src/runtime/: other stages use tokenizer.h.
#pragma once

#include "base/byte_alphabet.h"

#include "runtime/tokenizer.h"

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace lathe {

// llama.cpp's token types (tokenizer.ggml.token_type).
enum class TokenType : int32_t {
  undefined = 0, normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6,
};

class PretokRegex;  // tokenizer_pretok.cpp: a compiled PCRE2 pattern

struct BpeMerge {
  int32_t rank = 0;
  int32_t result = 0;  // the id of the merged token
};

struct TokenizerVocab {
  TokenizerKind kind = TokenizerKind::byte_bpe;
  std::string pre;
  std::vector<std::string> texts;   // as stored in tokenizer.ggml.tokens
  std::vector<std::string> bytes;   // what each token decodes to
  std::vector<TokenType> types;
  std::vector<float> scores;        // spm: higher merges first
  std::unordered_map<std::string, int32_t> ids;  // stored text -> id (the first id of a duplicate)

  int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, pad = -1;
  bool add_bos = false, add_eos = false;
  bool add_space_prefix = true;     // spm
  std::string chat_template;

  // Specials matched in text before pre-tokenization, longest first.
  std::vector<int32_t> specials;
  std::vector<bool> end_of_generation;

  // byte-level BPE
  std::array<int32_t, 256> byte_token{};          // the token of each byte's alphabet character
  std::unordered_map<uint64_t, BpeMerge> merges;   // (left id << 32 | right id) -> rank, result
  bool ignore_merges = false;                      // Llama 3: a word that is a token is taken whole
  std::shared_ptr<const PretokRegex> regex;

  // spm
  std::array<int32_t, 256> byte_fallback{};        // <0xNN> tokens, -1 where absent
};

inline uint64_t merge_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// GPT-2's reversible map of the 256 bytes to printable code points, as UTF-8 strings.
// Undoes the alphabet: the bytes a byte-level token text stands for; false if a character is not
// in the alphabet (then out holds the text unchanged).
bool byte_level_decode(std::string_view text, std::string& out);

// The pre-tokenizer of a tokenizer.ggml.pre name; nullptr when the name is unknown.
std::shared_ptr<const PretokRegex> pretok_regex_for(const std::string& pre, bool& ignore_merges);
// Splits text into pre-tokens (byte ranges). Invalid UTF-8 bytes become pre-tokens of their own.
void pretokenize(const PretokRegex& regex, std::string_view text, std::vector<std::string_view>& out);

// Appends the ids of one text fragment (no specials inside).
void bpe_encode_fragment(const TokenizerVocab& v, std::string_view text,
                         std::unordered_map<std::string, std::vector<int32_t>>& cache,
                         std::vector<int32_t>& out);
void spm_encode_fragment(const TokenizerVocab& v, std::string_view text, std::vector<int32_t>& out);

// The length of the valid UTF-8 sequence at the start of s, or 0 if s does not start with one.
size_t utf8_sequence_length(std::string_view s);

}  // namespace lathe
