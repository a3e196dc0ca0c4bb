// The lexer: one source line to tokens. Words carry dots and braces (`blk.{L}.attn_q.weight`); a
// dot ends the sentence unless a letter, digit, `_` or `{` follows it. `#` starts a comment that runs
// to the end of the line; comments are not part of the program (nor of its identity).
#pragma once

#include "lang/ast.h"

#include <string>
#include <string_view>
#include <vector>

namespace lathe::lang {

struct Token {
  enum class Kind { word, number, comma, period, star };
  Kind kind = Kind::word;
  std::string text;
  double number = 0;  // Kind::number
  SourceLoc loc;
};

// Throws LangError on a character outside the language.
std::vector<Token> tokenize_line(std::string_view line, int line_no, const SourceText& source);

std::vector<std::string> split_lines(std::string_view text);

}  // namespace lathe::lang
