// Encoding (specials split out first, then each text fragment by the vocabulary's algorithm),
// decoding, and the streaming decoder.
#include "runtime/tokenizer_vocab.h"

#include "base/error.h"

namespace lathe {
namespace {

struct Fragment {
  std::string_view text;  // empty when token >= 0
  int32_t token = -1;
};

// Leftmost-longest match of the active specials; candidates are bucketed by first byte so ordinary
// text costs one table look-up per byte.
std::vector<Fragment> split_specials(const TokenizerVocab& v, std::string_view text, bool parse_special) {
  std::array<std::vector<int32_t>, 256> by_first;
  bool any = false;
  for (int32_t id : v.specials) {  // already longest first
    if (!parse_special && v.types[id] != TokenType::user_defined) continue;
    by_first[static_cast<uint8_t>(v.texts[id][0])].push_back(id);
    any = true;
  }
  std::vector<Fragment> out;
  if (!any) {
    if (!text.empty()) out.push_back({text});
    return out;
  }
  size_t start = 0;
  for (size_t at = 0; at < text.size();) {
    int32_t found = -1;
    for (int32_t id : by_first[static_cast<uint8_t>(text[at])]) {
      if (text.substr(at).starts_with(v.texts[id])) {
        found = id;
        break;
      }
    }
    if (found < 0) {
      ++at;
      continue;
    }
    if (at > start) out.push_back({text.substr(start, at - start)});
    out.push_back({{}, found});
    at += v.texts[found].size();
    start = at;
  }
  if (start < text.size()) out.push_back({text.substr(start)});
  return out;
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<TokenizerVocab> vocab) : vocab_(std::move(vocab)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  const TokenizerVocab& v = *vocab_;
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && v.add_bos) out.push_back(v.bos);
  std::unordered_map<std::string, std::vector<int32_t>> cache;
  bool prev_special = true;  // spm: the first fragment, and one after a special, get the ▁ prefix
  for (const Fragment& frag : split_specials(v, text, parse_special)) {
    if (frag.token >= 0) {
      out.push_back(frag.token);
      prev_special = true;
      continue;
    }
    if (v.kind == TokenizerKind::byte_bpe) {
      bpe_encode_fragment(v, frag.text, cache, out);
    } else {
      std::string escaped;
      escaped.reserve(frag.text.size() + 8);
      if (v.add_space_prefix && prev_special) escaped += "\xE2\x96\x81";
      for (char c : frag.text) {
        if (c == ' ') escaped += "\xE2\x96\x81";
        else escaped += c;
      }
      spm_encode_fragment(v, escaped, out);
    }
    prev_special = false;
  }
  if (add_special && v.add_eos) out.push_back(v.eos);
  return out;
}

std::string Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= n_vocab())
    fail("token id {} is outside the vocabulary of {} tokens", id, n_vocab());
  return vocab_->bytes[id];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_control) const {
  StreamingDecoder stream(*this, skip_control);
  std::string out;
  for (int32_t id : ids) out += stream.push(id);
  return out + stream.flush();
}

const std::string& Tokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= n_vocab())
    fail("token id {} is outside the vocabulary of {} tokens", id, n_vocab());
  return vocab_->texts[id];
}

int32_t Tokenizer::find_token(std::string_view text) const {
  const auto it = vocab_->ids.find(std::string(text));
  return it == vocab_->ids.end() ? -1 : it->second;
}

TokenizerKind Tokenizer::kind() const { return vocab_->kind; }
int64_t Tokenizer::n_vocab() const { return static_cast<int64_t>(vocab_->texts.size()); }
int32_t Tokenizer::bos() const { return vocab_->bos; }
int32_t Tokenizer::eos() const { return vocab_->eos; }
int32_t Tokenizer::eot() const { return vocab_->eot; }
bool Tokenizer::add_bos() const { return vocab_->add_bos; }
bool Tokenizer::add_eos() const { return vocab_->add_eos; }
const std::string& Tokenizer::chat_template() const { return vocab_->chat_template; }
const std::string& Tokenizer::pre() const { return vocab_->pre; }

bool Tokenizer::is_end_of_generation(int32_t id) const {
  return id >= 0 && id < n_vocab() && vocab_->end_of_generation[id];
}

bool Tokenizer::is_control(int32_t id) const {
  return id >= 0 && id < n_vocab() && vocab_->types[id] == TokenType::control;
}

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, bool skip_control)
    : tokenizer_(&tokenizer), skip_control_(skip_control) {}

std::string StreamingDecoder::push(int32_t id) {
  std::string piece = tokenizer_->token_bytes(id);  // checks the range
  const bool control = tokenizer_->is_control(id);
  if (control && skip_control_) return {};
  if (!control && first_) {
    first_ = false;
    const TokenizerVocab& v = tokenizer_->vocab();
    // Only a ▁ the encoder could have added is removed, not a <0x20> byte token.
    if (v.kind == TokenizerKind::spm && v.add_space_prefix && v.texts[id].starts_with("\xE2\x96\x81"))
      piece.erase(0, 1);
  }
  pending_ += piece;
  const size_t n = utf8_complete_prefix(pending_);
  std::string out = pending_.substr(0, n);
  pending_.erase(0, n);
  return out;
}

std::string StreamingDecoder::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

size_t utf8_complete_prefix(std::string_view s) {
  // Only the last three bytes can begin an unfinished character (sequences are at most four long).
  for (size_t k = 1; k <= 3 && k <= s.size(); ++k) {
    const size_t at = s.size() - k;
    const uint8_t c = static_cast<uint8_t>(s[at]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: its lead is further back
    const size_t need = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 1;
    if (need <= k) return s.size();  // complete, or a byte that starts nothing: pass it on
    if (k >= 2) {
      // The second byte's range depends on the lead (no overlongs, surrogates, or > U+10FFFF).
      const uint8_t c1 = static_cast<uint8_t>(s[at + 1]);
      const uint8_t lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
      const uint8_t hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
      if (c1 < lo || c1 > hi) return s.size();
    }
    return at;  // a valid start of a character still missing bytes: hold it back
  }
  return s.size();
}

}  // namespace lathe
