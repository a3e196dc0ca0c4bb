// Byte-level BPE on one fragment of text: pre-tokenize, map each word's bytes to their alphabet
// tokens, then merge the adjacent pair of lowest rank (leftmost on ties) until none is left — the
// order Hugging Face's BPE model and llama.cpp both use. Words repeat, so each call caches them.
#include "runtime/tokenizer_vocab.h"

#include "base/error.h"

#include <queue>

namespace lathe {
namespace {

// A word as a doubly linked list of symbols; a heap of candidate pairs keyed by (rank, position).
// A popped pair is stale when either side has changed since it was pushed; it is then skipped.
struct Pair {
  int32_t rank;
  int32_t left;  // symbol position
  int32_t right;
  int32_t left_id, right_id;
  bool operator>(const Pair& o) const {
    return rank != o.rank ? rank > o.rank : left > o.left;
  }
};

void merge_word(const TokenizerVocab& v, std::string_view word, std::vector<int32_t>& out) {
  const int32_t n = static_cast<int32_t>(word.size());
  std::vector<int32_t> id(n), prev(n), next(n);
  for (int32_t i = 0; i < n; ++i) {
    id[i] = v.byte_token[static_cast<uint8_t>(word[i])];
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  std::priority_queue<Pair, std::vector<Pair>, std::greater<Pair>> heap;
  auto push = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const auto it = v.merges.find(merge_key(id[left], id[right]));
    if (it != v.merges.end()) heap.push({it->second.rank, left, right, id[left], id[right]});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i, i + 1);
  while (!heap.empty()) {
    const Pair p = heap.top();
    heap.pop();
    // Stale: the right symbol was merged away (id -1), or a side was merged into something else.
    if (id[p.left] != p.left_id || id[p.right] != p.right_id || next[p.left] != p.right) continue;
    id[p.left] = v.merges.at(merge_key(p.left_id, p.right_id)).result;
    id[p.right] = -1;
    next[p.left] = next[p.right];
    if (next[p.left] >= 0) prev[next[p.left]] = p.left;
    push(prev[p.left], p.left);
    push(p.left, next[p.left]);
  }
  for (int32_t i = n > 0 ? 0 : -1; i >= 0; i = next[i]) out.push_back(id[i]);
}

}  // namespace

void bpe_encode_fragment(const TokenizerVocab& v, std::string_view text,
                         std::unordered_map<std::string, std::vector<int32_t>>& cache,
                         std::vector<int32_t>& out) {
  std::vector<std::string_view> words;
  pretokenize(*v.regex, text, words);
  const auto& alphabet = byte_level_alphabet();
  for (std::string_view word : words) {
    auto [it, inserted] = cache.try_emplace(std::string(word));
    std::vector<int32_t>& ids = it->second;
    if (inserted) {
      if (v.ignore_merges) {
        std::string mapped;
        for (char c : word) mapped += alphabet[static_cast<uint8_t>(c)];
        const auto whole = v.ids.find(mapped);
        if (whole != v.ids.end()) ids.push_back(whole->second);
      }
      if (ids.empty()) merge_word(v, word, ids);
    }
    out.insert(out.end(), ids.begin(), ids.end());
  }
}

}  // namespace lathe
