// lathe tokenize MODEL [--ids-only] [--bos|--no-bos] [--parse-special] TEXT | -f FILE
// The ids `lathe run` would feed the model for this text (prompt_ids.h: BOS first only when the
// model's metadata asks for it, or --bos), so a prompt can be checked against another tokenizer.
//
// Output (stdout): line 1 holds the ids, comma-separated, nothing else. Unless --ids-only, line 2 holds
// each id's piece, the bytes it stands for, in the same order: comma-separated, each in double quotes,
// escaped as C escapes them (\" \\ \n \r \t, \xNN for other control bytes and for bytes that are not
// whole UTF-8 characters), so a piece holding a comma or a quote cannot be misread.
#include "cli/commands.h"
#include "cli/prompt_ids.h"
#include "gguf/gguf_file.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <memory>

namespace lathe::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string file;
  bool ids_only = false;
  bool bos = false, no_bos = false;
  bool parse_special = false;
};

// The length of the valid UTF-8 character starting at s[i] (2 to 4 bytes), or 0 when there is none.
size_t utf8_char_at(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = 0;
  uint32_t cp = 0;
  if (c >= 0xc2 && c <= 0xdf) n = 2, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef) n = 3, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3f);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are not characters.
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return n;
}

std::string quoted_piece(std::string_view bytes) {
  std::string out = "\"";
  for (size_t i = 0; i < bytes.size();) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c >= 0x20 && c < 0x7f) out += static_cast<char>(c);
    else if (size_t n = c >= 0x80 ? utf8_char_at(bytes, i) : 0; n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
      continue;
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
    ++i;
  }
  return out + "\"";
}

}  // namespace

Action add_tokenize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "tokenize",
      "the token ids `lathe run` feeds the model for a text.\n"
      "Prints one line of comma-separated ids; then, unless --ids-only, a second line with each id's\n"
      "piece (the bytes it stands for) in the same order: comma-separated, in double quotes, escaped\n"
      "as in C (\\\" \\\\ \\n \\r \\t, \\xNN for other control bytes and bytes that are not whole UTF-8\n"
      "characters). Example:\n"
      "  1147,258,2084\n"
      "  \"In\",\" the\",\" beginning\"");
  auto o = std::make_shared<TokenizeOptions>();
  cmd->add_option("model", o->model, "the GGUF checkpoint")->required();
  auto* text = cmd->add_option("text", o->text, "the text to tokenize");
  auto* file = cmd->add_option("-f,--file", o->file, "tokenize the whole of this file instead");
  text->excludes(file);
  file->excludes(text);
  cmd->add_flag("--ids-only", o->ids_only, "print the line of ids only");
  auto* bos = cmd->add_flag("--bos", o->bos, "put the BOS token first even if the model does not ask for it");
  auto* no_bos = cmd->add_flag("--no-bos", o->no_bos, "never put the BOS token first");
  bos->excludes(no_bos);
  no_bos->excludes(bos);
  cmd->add_flag("--parse-special", o->parse_special,
                "control tokens written in the text (\"<|im_start|>\") become their ids");
  return [o, text, file] {
    if (text->count() == 0 && file->count() == 0) fail("nothing to tokenize: give TEXT or -f FILE");
    const std::string input = file->count() > 0 ? read_text_file(o->file) : o->text;
    const GgufFile gguf = GgufFile::open(o->model);
    const Tokenizer tok = Tokenizer::from_gguf(gguf);
    const std::vector<int32_t> ids = prompt_ids(tok, input, bos_rule(o->bos, o->no_bos), o->parse_special);
    fmt::print("{}\n", fmt::join(ids, ","));
    if (!o->ids_only) {
      std::string pieces;
      for (size_t i = 0; i < ids.size(); ++i) {
        if (i > 0) pieces += ',';
        pieces += quoted_piece(tok.token_bytes(ids[i]));
      }
      fmt::print("{}\n", pieces);
    }
    return 0;
  };
}

}  // namespace lathe::cli
