// Pre-tokenization for byte-level BPE: the regexes of the Hugging Face tokenizer.json files (applied
// as a Split with the "isolated" behaviour: matches and the gaps between them are pre-tokens), run by
// PCRE2 with Unicode properties; and GPT-2's byte alphabet.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "runtime/tokenizer_vocab.h"

#include "base/error.h"

#include <pcre2.h>

#include <map>
#include <mutex>

namespace lathe {

// The patterns as the tokenizer.json files write them. Hugging Face runs them with Oniguruma; PCRE2
// with UCP agrees on the classes used here, U+0085 (NEL) counted as \s included (a fixture checks).
namespace {

constexpr const char* kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";


}  // namespace

class PretokRegex {
 public:
  explicit PretokRegex(const std::string& pattern) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                          PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    if (!code_) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof message);
      internal_fail("pre-tokenizer regex does not compile at {}: {}", offset,
                    reinterpret_cast<const char*>(message));
    }
    pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);  // a failure only means the slower interpreter
  }
  PretokRegex(const PretokRegex&) = delete;
  PretokRegex& operator=(const PretokRegex&) = delete;
  ~PretokRegex() { pcre2_code_free(code_); }

  // Splits valid UTF-8 into matches and the gaps between them.
  void split(std::string_view text, pcre2_match_data* md, std::vector<std::string_view>& out) const {
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t at = 0, emitted = 0;
    while (at < text.size()) {
      const int rc = pcre2_match(code_, subject, text.size(), at, PCRE2_NO_UTF_CHECK, md, nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) internal_fail("pre-tokenizer regex failed to match: error {}", rc);
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      const size_t begin = ov[0], end = ov[1];
      if (begin > emitted) out.push_back(text.substr(emitted, begin - emitted));
      if (end > begin) {
        out.push_back(text.substr(begin, end - begin));
        emitted = end;
        at = end;
      } else {  // an empty match: step over one character
        at = begin + std::max<size_t>(1, utf8_sequence_length(text.substr(begin)));
      }
    }
    if (emitted < text.size()) out.push_back(text.substr(emitted));
  }

  pcre2_code* code() const { return code_; }

 private:
  pcre2_code* code_ = nullptr;
};

std::shared_ptr<const PretokRegex> pretok_regex_for(const std::string& pre, bool& ignore_merges) {
  // llama.cpp's names for each pattern (llama-vocab.cpp); Llama 3 also takes whole-word tokens first.
  static const std::map<std::string, std::pair<const char*, bool>> kByName = {
      {"default", {kGpt2, false}},    {"gpt-2", {kGpt2, false}},        {"gpt2", {kGpt2, false}},
      {"llama-bpe", {kLlama3, true}}, {"llama3", {kLlama3, true}},      {"llama-v3", {kLlama3, true}},
      {"smaug-bpe", {kLlama3, false}}, {"dbrx", {kLlama3, false}},
      {"qwen2", {kQwen2, false}},     {"deepseek-r1-qwen", {kQwen2, false}},
  };
  const auto it = kByName.find(pre);
  if (it == kByName.end()) return nullptr;
  ignore_merges = it->second.second;
  // Compiled once per pattern and shared: a compiled PCRE2 pattern is read-only while matching.
  static std::mutex mutex;
  static std::map<const char*, std::shared_ptr<const PretokRegex>> compiled;
  std::lock_guard lock(mutex);
  auto& slot = compiled[it->second.first];
  if (!slot) slot = std::make_shared<const PretokRegex>(it->second.first);
  return slot;
}

void pretokenize(const PretokRegex& regex, std::string_view text, std::vector<std::string_view>& out) {
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(regex.code(), nullptr);
  LATHE_CHECK(md != nullptr);
  size_t run_begin = 0, at = 0;
  // PCRE2 in UTF mode needs valid UTF-8: regex-split each valid run, emit invalid bytes alone.
  while (at < text.size()) {
    const size_t n = utf8_sequence_length(text.substr(at));
    if (n > 0) {
      at += n;
      continue;
    }
    if (at > run_begin) regex.split(text.substr(run_begin, at - run_begin), md, out);
    out.push_back(text.substr(at, 1));
    run_begin = ++at;
  }
  if (at > run_begin) regex.split(text.substr(run_begin, at - run_begin), md, out);
  pcre2_match_data_free(md);
}

size_t utf8_sequence_length(std::string_view s) {
  if (s.empty()) return 0;
  const auto b = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t c = b(0);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t min = 0, cp = 0;
  if ((c & 0xE0) == 0xC0) { n = 2; min = 0x80; cp = c & 0x1F; }
  else if ((c & 0xF0) == 0xE0) { n = 3; min = 0x800; cp = c & 0x0F; }
  else if ((c & 0xF8) == 0xF0) { n = 4; min = 0x10000; cp = c & 0x07; }
  else return 0;
  if (s.size() < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((b(i) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}


bool byte_level_decode(std::string_view text, std::string& out) {
  static const std::unordered_map<std::string, uint8_t> inverse = [] {
    std::unordered_map<std::string, uint8_t> m;
    const auto& a = byte_level_alphabet();
    for (int b = 0; b < 256; ++b) m.emplace(a[b], static_cast<uint8_t>(b));
    return m;
  }();
  std::string bytes;
  for (size_t at = 0; at < text.size();) {
    const size_t n = utf8_sequence_length(text.substr(at));
    const auto it = n ? inverse.find(std::string(text.substr(at, n))) : inverse.end();
    if (it == inverse.end()) {
      out.assign(text);
      return false;
    }
    bytes += static_cast<char>(it->second);
    at += n;
  }
  out = std::move(bytes);
  return true;
}

}  // namespace lathe
