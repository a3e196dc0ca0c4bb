// SentencePiece-style encoding (SentencePiece's BPE model, as llama.cpp's SPM tokenizer runs it):
// the text, spaces already made ▁, starts as one symbol per character; the adjacent pair whose
// concatenation is a vocabulary piece of highest score merges first (leftmost on ties). A final
// symbol that is no token is split back along the merges that made it, and what is left falls back
// to <0xNN> byte tokens (or the unknown token when the vocabulary has no byte tokens).
#include "runtime/tokenizer_vocab.h"

#include "base/error.h"

#include <queue>

namespace lathe {
namespace {

struct Symbol {
  size_t begin, end;  // bytes of the text
  int32_t prev, next;
};

struct Bigram {
  float score;
  int32_t left, right;
  size_t size;  // the bytes the pair covered when pushed; a different size later means stale
  bool operator<(const Bigram& o) const {  // priority_queue pops the largest: highest score, leftmost
    return score != o.score ? score < o.score : left > o.left;
  }
};

bool mergeable(const TokenizerVocab& v, int32_t id) {
  const TokenType t = v.types[id];
  return t == TokenType::normal || t == TokenType::user_defined || t == TokenType::unused ||
         t == TokenType::undefined;
}

class SpmSession {
 public:
  SpmSession(const TokenizerVocab& v, std::string_view text) : v_(v), text_(text) {}

  void encode(std::vector<int32_t>& out) {
    for (size_t at = 0; at < text_.size();) {
      const size_t n = std::max<size_t>(1, utf8_sequence_length(text_.substr(at)));
      const int32_t index = static_cast<int32_t>(symbols_.size());
      symbols_.push_back({at, std::min(at + n, text_.size()), index - 1, index + 1});
      at += n;
    }
    if (symbols_.empty()) return;
    symbols_.back().next = -1;
    for (int32_t i = 1; i < static_cast<int32_t>(symbols_.size()); ++i) try_add(i - 1, i);
    while (!queue_.empty()) {
      const Bigram b = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[b.left];
      Symbol& right = symbols_[b.right];
      if (left.end == left.begin || right.end == right.begin ||
          right.end - left.begin != b.size || left.next != b.right)
        continue;
      left.end = right.end;
      right.begin = right.end;  // emptied: merged into left
      left.next = right.next;
      if (right.next >= 0) symbols_[right.next].prev = b.left;
      try_add(left.prev, b.left);
      try_add(b.left, left.next);
    }
    for (int32_t i = 0; i >= 0; i = symbols_[i].next)
      resegment(text_.substr(symbols_[i].begin, symbols_[i].end - symbols_[i].begin), out);
  }

 private:
  void try_add(int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const std::string_view piece =
        text_.substr(symbols_[left].begin, symbols_[right].end - symbols_[left].begin);
    const auto it = v_.ids.find(std::string(piece));
    if (it == v_.ids.end() || !mergeable(v_, it->second)) return;
    queue_.push({v_.scores[it->second], left, right, piece.size()});
    rev_merge_.try_emplace(std::string(piece),
                           symbols_[left].end - symbols_[left].begin);
  }

  void resegment(std::string_view piece, std::vector<int32_t>& out) {
    const auto it = v_.ids.find(std::string(piece));
    if (it != v_.ids.end()) {
      out.push_back(it->second);
      return;
    }
    const auto split = rev_merge_.find(std::string(piece));
    if (split != rev_merge_.end()) {
      resegment(piece.substr(0, split->second), out);
      resegment(piece.substr(split->second), out);
      return;
    }
    for (char c : piece) {
      const int32_t byte = v_.byte_fallback[static_cast<uint8_t>(c)];
      if (byte >= 0) {
        out.push_back(byte);
      } else if (v_.unk >= 0) {
        out.push_back(v_.unk);
        return;  // one unknown token for the whole piece, as SentencePiece does
      } else {
        fail("tokenizer: the text has a character with no token, and the vocabulary has neither "
             "byte tokens (<0xNN>) nor tokenizer.ggml.unknown_token_id");
      }
    }
  }

  const TokenizerVocab& v_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram> queue_;
  std::unordered_map<std::string, size_t> rev_merge_;  // merged piece -> length of its left part
};

}  // namespace

void spm_encode_fragment(const TokenizerVocab& v, std::string_view text, std::vector<int32_t>& out) {
  SpmSession(v, text).encode(out);
}

}  // namespace lathe
