// Tokenizer::from_gguf: reads and checks the tokenizer.* keys into a TokenizerVocab. Every refusal
// names the key (and the entry) at fault.
#include "runtime/tokenizer_vocab.h"

#include "base/error.h"
#include "gguf/gguf_file.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fmt/format.h>

namespace lathe {
namespace {

const char* kTokens = "tokenizer.ggml.tokens";

std::vector<std::string> read_strings(const GgufFile& f, const char* key) {
  const GgufValue& a = f.get_array(key);
  if (a.elem_type != GgufValueType::STRING)
    fail("{}: {} is an array of {}, not of strings", f.path(), key, gguf_value_type_name(a.elem_type));
  std::vector<std::string> out;
  out.reserve(a.items.size());
  for (const GgufValue& v : a.items) out.push_back(v.str);
  return out;
}

int32_t read_token_id(const GgufFile& f, const std::string& key, int64_t n_vocab) {
  const GgufValue* v = f.find(key);
  if (!v) return -1;
  const int64_t id = v->type == GgufValueType::INT32 || v->type == GgufValueType::INT64 ||
                             v->type == GgufValueType::INT8 || v->type == GgufValueType::INT16
                         ? v->i
                         : static_cast<int64_t>(f.get_uint(key));
  if (id == -1) return -1;  // some converters write -1 for "none"
  if (id < 0 || id >= n_vocab)
    fail("{}: {} is {}, outside the vocabulary of {} tokens", f.path(), key, id, n_vocab);
  return static_cast<int32_t>(id);
}

void load_types_and_scores(const GgufFile& f, TokenizerVocab& v) {
  const size_t n = v.texts.size();
  v.types.assign(n, TokenType::normal);
  v.scores.assign(n, 0.0f);
  if (const GgufValue* t = f.find("tokenizer.ggml.token_type")) {
    if (!t->is_array() || t->items.size() != n)
      fail("{}: tokenizer.ggml.token_type must be an array of {} integers (one per token)", f.path(), n);
    for (size_t i = 0; i < n; ++i) {
      const GgufValue& e = t->items[i];
      const int64_t type = e.type == GgufValueType::INT32 || e.type == GgufValueType::INT64 ||
                                   e.type == GgufValueType::INT8 || e.type == GgufValueType::INT16
                               ? e.i
                               : static_cast<int64_t>(e.u);
      if (!e.is_integer() || type < 0 || type > 6)
        fail("{}: tokenizer.ggml.token_type[{}] is not a token type (0..6)", f.path(), i);
      v.types[i] = static_cast<TokenType>(type);
    }
  }
  if (const GgufValue* s = f.find("tokenizer.ggml.scores")) {
    if (!s->is_array() || s->items.size() != n || (n > 0 && !s->items[0].is_float()))
      fail("{}: tokenizer.ggml.scores must be an array of {} floats (one per token)", f.path(), n);
    for (size_t i = 0; i < n; ++i) v.scores[i] = static_cast<float>(s->items[i].f);
  }
}

void load_byte_bpe(const GgufFile& f, TokenizerVocab& v) {
  v.pre = f.find_string("tokenizer.ggml.pre").value_or("default");
  v.regex = pretok_regex_for(v.pre, v.ignore_merges);
  if (!v.regex)
    fail("{}: tokenizer.ggml.pre \"{}\" is not a pre-tokenizer Lathe knows (qwen2, "
         "deepseek-r1-qwen, llama-bpe, llama3, llama-v3, smaug-bpe, dbrx, default, gpt-2)",
         f.path(), v.pre);
  const auto& alphabet = byte_level_alphabet();
  for (int b = 0; b < 256; ++b) {
    const auto it = v.ids.find(alphabet[b]);
    if (it == v.ids.end())
      fail("{}: {} lacks the byte-level token for byte 0x{:02X} (\"{}\"); a gpt2 vocabulary must "
           "have all 256", f.path(), kTokens, b, alphabet[b]);
    v.byte_token[b] = it->second;
  }
  if (!f.has("tokenizer.ggml.merges"))
    fail("{}: tokenizer.ggml.merges is missing (a gpt2 vocabulary needs its merges)", f.path());
  const std::vector<std::string> merges = read_strings(f, "tokenizer.ggml.merges");
  v.merges.reserve(merges.size() * 2);
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& m = merges[rank];
    const size_t space = m.find(' ', 1);
    if (space == std::string::npos || space + 1 >= m.size())
      fail("{}: tokenizer.ggml.merges[{}] \"{}\" is not two tokens separated by a space", f.path(),
           rank, m);
    const std::string left = m.substr(0, space), right = m.substr(space + 1);
    const auto l = v.ids.find(left), r = v.ids.find(right), result = v.ids.find(left + right);
    if (l == v.ids.end() || r == v.ids.end() || result == v.ids.end())
      fail("{}: tokenizer.ggml.merges[{}] \"{}\" names a token not in {} (\"{}\")", f.path(), rank,
           m, kTokens, l == v.ids.end() ? left : r == v.ids.end() ? right : left + right);
    v.merges.try_emplace(merge_key(l->second, r->second),
                         BpeMerge{static_cast<int32_t>(rank), result->second});
  }
  for (size_t i = 0; i < v.texts.size(); ++i) {
    // Control tokens decode to their text; the rest undo the byte alphabet where it applies
    // (user-defined tokens may be stored as raw text).
    if (v.types[i] != TokenType::control) byte_level_decode(v.texts[i], v.bytes[i]);
  }
}

void load_spm(const GgufFile& f, TokenizerVocab& v) {
  v.add_space_prefix = f.find_bool("tokenizer.ggml.add_space_prefix").value_or(true);
  v.byte_fallback.fill(-1);
  for (size_t i = 0; i < v.texts.size(); ++i) {
    const std::string& t = v.texts[i];
    if (v.types[i] == TokenType::control || v.types[i] == TokenType::unknown) continue;
    unsigned byte = 0;
    if (t.size() == 6 && t.starts_with("<0x") && t[5] == '>' &&
        std::sscanf(t.c_str() + 3, "%2x", &byte) == 1 && std::isxdigit(t[3]) && std::isxdigit(t[4])) {
      if (v.byte_fallback[byte] < 0) v.byte_fallback[byte] = static_cast<int32_t>(i);
      v.bytes[i] = std::string(1, static_cast<char>(byte));
      continue;
    }
    std::string text;
    for (size_t at = 0; at < t.size();) {  // ▁ (U+2581) is the space marker
      if (t.compare(at, 3, "\xE2\x96\x81") == 0) {
        text += ' ';
        at += 3;
      } else {
        text += t[at++];
      }
    }
    v.bytes[i] = std::move(text);
  }
}

bool ends_generation_by_text(const std::string& t) {
  static const char* kEnds[] = {"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end_of_text|>",
                                "<|endoftext|>", "</s>", "<|end|>", "<end_of_turn>", "<|return|>"};
  return std::find(std::begin(kEnds), std::end(kEnds), t) != std::end(kEnds);
}

}  // namespace

Tokenizer Tokenizer::from_gguf(const GgufFile& f) {
  auto v = std::make_unique<TokenizerVocab>();
  const std::optional<std::string> model = f.find_string("tokenizer.ggml.model");
  if (!model) fail("{}: the checkpoint has no tokenizer (tokenizer.ggml.model is missing)", f.path());
  if (*model == "gpt2") v->kind = TokenizerKind::byte_bpe;
  else if (*model == "llama") v->kind = TokenizerKind::spm;
  else
    fail("{}: tokenizer.ggml.model \"{}\" is not a tokenizer Lathe reads (gpt2: byte-level BPE, "
         "llama: SentencePiece)", f.path(), *model);
  if (!f.has(kTokens)) fail("{}: {} is missing: the checkpoint has no vocabulary", f.path(), kTokens);
  v->texts = read_strings(f, kTokens);
  if (v->texts.empty()) fail("{}: {} is empty: the vocabulary has no tokens", f.path(), kTokens);
  if (v->texts.size() > static_cast<size_t>(INT32_MAX))
    fail("{}: {} has {} tokens, more than ids can count", f.path(), kTokens, v->texts.size());
  const int64_t n = static_cast<int64_t>(v->texts.size());
  for (int64_t i = n - 1; i >= 0; --i) v->ids[v->texts[i]] = static_cast<int32_t>(i);  // first wins
  v->bytes = v->texts;
  load_types_and_scores(f, *v);
  if (v->kind == TokenizerKind::byte_bpe) load_byte_bpe(f, *v);
  else load_spm(f, *v);

  v->bos = read_token_id(f, "tokenizer.ggml.bos_token_id", n);
  v->eos = read_token_id(f, "tokenizer.ggml.eos_token_id", n);
  v->eot = read_token_id(f, "tokenizer.ggml.eot_token_id", n);
  v->eom = read_token_id(f, "tokenizer.ggml.eom_token_id", n);
  v->unk = read_token_id(f, "tokenizer.ggml.unknown_token_id", n);
  v->pad = read_token_id(f, "tokenizer.ggml.padding_token_id", n);
  if (v->eot < 0) {
    for (const char* t : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>"}) {
      const auto it = v->ids.find(t);
      if (it != v->ids.end() && v->types[it->second] == TokenType::control) {
        v->eot = it->second;
        break;
      }
    }
    if (v->eot < 0) v->eot = v->eos;
  }
  if (v->unk < 0 && v->kind == TokenizerKind::spm) {
    const auto it = std::find(v->types.begin(), v->types.end(), TokenType::unknown);
    if (it != v->types.end()) v->unk = static_cast<int32_t>(it - v->types.begin());
  }
  const bool bos_default = v->kind == TokenizerKind::spm || v->ignore_merges;  // llama.cpp's
  v->add_bos = f.find_bool("tokenizer.ggml.add_bos_token").value_or(bos_default);
  v->add_eos = f.find_bool("tokenizer.ggml.add_eos_token").value_or(false);
  if (v->add_bos && v->bos < 0)
    fail("{}: tokenizer.ggml.add_bos_token is set but tokenizer.ggml.bos_token_id is missing", f.path());
  if (v->add_eos && v->eos < 0)
    fail("{}: tokenizer.ggml.add_eos_token is set but tokenizer.ggml.eos_token_id is missing", f.path());
  v->chat_template = f.find_string("tokenizer.chat_template").value_or("");

  v->end_of_generation.assign(n, false);
  for (int64_t i = 0; i < n; ++i) {
    const TokenType t = v->types[i];
    if (!v->texts[i].empty() &&
        (t == TokenType::control || t == TokenType::user_defined || t == TokenType::unknown))
      v->specials.push_back(static_cast<int32_t>(i));
    if (t == TokenType::control && ends_generation_by_text(v->texts[i])) v->end_of_generation[i] = true;
  }
  for (int32_t id : {v->eos, v->eot, v->eom})
    if (id >= 0) v->end_of_generation[id] = true;
  std::stable_sort(v->specials.begin(), v->specials.end(), [&](int32_t a, int32_t b) {
    return v->texts[a].size() > v->texts[b].size();
  });
  return Tokenizer(std::move(v));
}

}  // namespace lathe
