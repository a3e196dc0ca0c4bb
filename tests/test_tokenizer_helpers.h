// Shared by the tokenizer tests: checkpoints made in memory, and byte strings that stress a decoder.
#pragma once

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/model_spec.h"
#include "model/synth.h"
#include "runtime/tokenizer.h"

#include <memory>
#include <random>
#include <string>
#include <vector>

namespace lathe::test {

inline std::string data_path(const std::string& rel) {
  return std::string(LATHE_TEST_DATA) + "/" + rel;
}

// A GgufFile over bytes it keeps alive.
struct MemoryGguf {
  std::vector<uint8_t> bytes;
  std::unique_ptr<GgufFile> file;
  explicit MemoryGguf(const GgufWriter& w, const std::string& name = "vocab.gguf")
      : bytes(w.to_bytes()), file(std::make_unique<GgufFile>(GgufFile::from_bytes(bytes, name))) {}
};

// The tokenizer keys the synthetic checkpoints carry (as src/model/synth.cpp writes them).
inline GgufWriter synthetic_vocab_writer(Arch arch, int64_t n_vocab) {
  const SynthVocab v = make_synthetic_vocab(arch, n_vocab);
  GgufWriter w;
  w.set("general.architecture", GgufValue::of_string(arch == Arch::llama ? "llama" : "qwen2"));
  w.set("tokenizer.ggml.model", GgufValue::of_string("gpt2"));
  w.set("tokenizer.ggml.pre", GgufValue::of_string(v.pre));
  w.set("tokenizer.ggml.tokens", GgufValue::of_strings(v.tokens));
  w.set("tokenizer.ggml.token_type", GgufValue::of_i32s(v.token_types));
  w.set("tokenizer.ggml.merges", GgufValue::of_strings(v.merges));
  w.set("tokenizer.ggml.bos_token_id", GgufValue::of_u32(static_cast<uint32_t>(v.bos)));
  w.set("tokenizer.ggml.eos_token_id", GgufValue::of_u32(static_cast<uint32_t>(v.eos)));
  w.set("tokenizer.ggml.eot_token_id", GgufValue::of_u32(static_cast<uint32_t>(v.eot)));
  w.set("tokenizer.ggml.add_bos_token", GgufValue::of_bool(v.add_bos));
  w.set("tokenizer.chat_template", GgufValue::of_string(v.chat_template));
  return w;
}

// Byte strings no text tokenizer should lose: every byte, invalid UTF-8, truncated sequences,
// surrogates and overlongs, and random bytes.
inline std::vector<std::string> hostile_byte_strings() {
  std::vector<std::string> out;
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  out.push_back(all);
  out.push_back(std::string(all.rbegin(), all.rend()));
  out.push_back("\xff\xfe\xfd abc \x80\x81 def");
  out.push_back("caf\xc3");               // truncated é
  out.push_back("\xe2\x82");              // truncated €
  out.push_back("\xf0\x9f\x98 x");        // truncated emoji then text
  out.push_back("\xed\xa0\x80 surrogate");
  out.push_back("\xc0\xaf overlong / and \xe0\x80\xaf");
  out.push_back("\xf4\x90\x80\x80 past U+10FFFF");
  out.push_back(std::string("nul\0inside", 10));
  out.push_back("   \t\n\r\x0b\x0c  ");
  std::mt19937 rng(7);
  for (int n : {1, 2, 3, 17, 100, 1000}) {
    std::string s;
    for (int i = 0; i < n; ++i) s += static_cast<char>(rng() & 0xFF);
    out.push_back(s);
  }
  return out;
}

}  // namespace lathe::test
