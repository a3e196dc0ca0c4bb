// A byte-level BPE vocabulary (GPT-2's byte-to-unicode alphabet, as Qwen and Llama 3 use) with a
// few hundred merges of letters, the family's special tokens at their usual places, and unused
// padding tokens filling the rest, so any text tokenizes and the vocabulary has the real size.
#include "model/synth.h"

#include "base/byte_alphabet.h"
#include "base/error.h"

#include <fmt/format.h>

namespace lathe {
namespace {

constexpr int32_t kNormal = 1, kControl = 3, kUnused = 5;

}  // namespace

SynthVocab make_synthetic_vocab(Arch arch, int64_t n_vocab) {
  SynthVocab v;
  const std::array<std::string, 256>& bytes = byte_level_alphabet();
  const std::string space = bytes[' '];
  for (const std::string& b : bytes) v.tokens.push_back(b);
  auto merge = [&](const std::string& a, const std::string& b) {
    v.merges.push_back(a + " " + b);
    v.tokens.push_back(a + b);
  };
  for (char c = 'a'; c <= 'z'; ++c) merge(space, std::string(1, c));
  for (char c = 'A'; c <= 'Z'; ++c) merge(space, std::string(1, c));
  for (char a = 'a'; a <= 'z'; ++a)
    for (char b = 'a'; b <= 'z'; ++b) merge(std::string(1, a), std::string(1, b));
  for (char a = 'a'; a <= 'z'; ++a)
    for (char b = 'a'; b <= 'z'; ++b) merge(space + a, std::string(1, b));

  std::vector<std::string> specials;
  int64_t special_base = 0;
  if (arch == Arch::llama) {
    // Llama 3: 256 special tokens at the end of the vocabulary.
    for (int k = 0; k < 256; ++k) specials.push_back(fmt::format("<|reserved_special_token_{}|>", k));
    specials[0] = "<|begin_of_text|>";
    specials[1] = "<|end_of_text|>";
    specials[6] = "<|start_header_id|>";
    specials[7] = "<|end_header_id|>";
    specials[9] = "<|eot_id|>";
    special_base = n_vocab - 256;
  } else {
    specials = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    special_base = static_cast<int64_t>(v.tokens.size());
  }
  if (special_base < static_cast<int64_t>(v.tokens.size()) ||
      special_base + static_cast<int64_t>(specials.size()) > n_vocab)
    fail("vocabulary of {} tokens is too small for a synthetic {} vocabulary", n_vocab,
         arch_name(arch));
  v.token_types.assign(v.tokens.size(), kNormal);
  while (static_cast<int64_t>(v.tokens.size()) < special_base) {
    v.tokens.push_back(fmt::format("[PAD{}]", v.tokens.size()));
    v.token_types.push_back(kUnused);
  }
  for (const std::string& s : specials) {
    v.tokens.push_back(s);
    v.token_types.push_back(kControl);
  }
  while (static_cast<int64_t>(v.tokens.size()) < n_vocab) {
    v.tokens.push_back(fmt::format("[PAD{}]", v.tokens.size()));
    v.token_types.push_back(kUnused);
  }
  const int32_t base = static_cast<int32_t>(special_base);
  if (arch == Arch::llama) {
    v.bos = base;
    v.eos = base + 9;  // <|eot_id|> ends a turn; <|end_of_text|> ends a document
    v.eot = base + 9;
    v.add_bos = true;
    v.pre = "llama-bpe";
    v.chat_template =
        "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
        "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | "
        "trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}"
        "{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
        "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";
  } else {
    v.bos = base;      // <|endoftext|>, never added: Qwen adds no BOS
    v.eos = base + 2;  // <|im_end|>
    v.eot = base + 2;
    v.add_bos = false;
    v.pre = "qwen2";
    v.chat_template =
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
        "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
        "{{ '<|im_start|>assistant\n' }}{% endif %}";
  }
  return v;
}

}  // namespace lathe
