// libFuzzer target: any bytes, encoded by each byte-level tokenizer of the fixtures (qwen2's,
// llama3's and GPT-2's pre-tokenizers; tests/data/tokenizer) with and without control tokens parsed,
// decode back to the same bytes (tokenizer.h's promise), and the streaming decoder's pieces join to
// them; the sentencepiece fixture must encode and decode them without a crash or a sanitizer report.
// The first byte picks the tokenizer; the rest is the text.
#include "base/error.h"
#include "gguf/gguf_file.h"
#include "runtime/tokenizer.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct Loaded {
  std::unique_ptr<lathe::GgufFile> file;
  std::unique_ptr<lathe::Tokenizer> tok;
};

const std::vector<Loaded>& tokenizers() {
  static const std::vector<Loaded> all = [] {
    std::vector<Loaded> out;
    for (const char* name : {"qwen2", "llama3", "gpt2", "spm"}) {
      auto file = std::make_unique<lathe::GgufFile>(
          lathe::GgufFile::open(std::string(LATHE_SOURCE_DIR) + "/tests/data/tokenizer/" + name + ".gguf"));
      auto tok = std::make_unique<lathe::Tokenizer>(lathe::Tokenizer::from_gguf(*file));
      out.push_back({std::move(file), std::move(tok)});
    }
    return out;
  }();
  return all;
}

void expect_equal(const std::string& got, std::string_view want, const char* what) {
  if (got == want) return;
  std::fprintf(stderr, "%s: %zu bytes in, %zu bytes back\n", what, want.size(), got.size());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  const auto& all = tokenizers();
  const lathe::Tokenizer& tok = *all[data[0] % all.size()].tok;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  for (const bool parse_special : {false, true}) {
    const std::vector<int32_t> ids = tok.encode(text, /*add_special=*/false, parse_special);
    const std::string back = tok.decode(ids);
    lathe::StreamingDecoder stream(tok);
    std::string pieces;
    for (int32_t id : ids) pieces += stream.push(id);
    pieces += stream.flush();
    if (tok.kind() != lathe::TokenizerKind::byte_bpe) continue;  // sentencepiece: no crash is the check
    expect_equal(back, text, parse_special ? "decode(encode(text, parse_special))" : "decode(encode(text))");
    expect_equal(pieces, text, "the streaming decoder's pieces");
  }
  return 0;
}
