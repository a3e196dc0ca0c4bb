#include "lang/lexer.h"

#include "lang/diagnostic.h"

#include <cctype>
#include <cstdlib>

namespace lathe::lang {

namespace {

bool is_word_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '{'; }
bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '{' || c == '}';
}
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t i = 0;
  while (i <= text.size()) {
    size_t j = text.find('\n', i);
    if (j == std::string_view::npos) j = text.size();
    std::string line(text.substr(i, j - i));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    if (j == text.size()) break;
    i = j + 1;
  }
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

std::vector<Token> tokenize_line(std::string_view line, int line_no, const SourceText& source) {
  std::vector<Token> tokens;
  size_t i = 0;
  auto at = [&](size_t k) { return k < line.size() ? line[k] : '\0'; };
  while (i < line.size()) {
    char c = line[i];
    SourceLoc loc{line_no, static_cast<int>(i) + 1};
    if (c == ' ' || c == '\t') {
      ++i;
    } else if (c == '#') {
      break;
    } else if (is_word_start(c)) {
      size_t j = i;
      while (is_word_char(at(j)) || (at(j) == '.' && is_word_start(at(j + 1))) ||
             (at(j) == '.' && is_digit(at(j + 1))))
        ++j;
      tokens.push_back({Token::Kind::word, std::string(line.substr(i, j - i)), 0, loc});
      i = j;
    } else if (is_digit(c)) {
      size_t j = i;
      while (is_digit(at(j))) ++j;
      if (at(j) == '.' && is_digit(at(j + 1))) {
        ++j;
        while (is_digit(at(j))) ++j;
      }
      if ((at(j) == 'e' || at(j) == 'E') &&
          (is_digit(at(j + 1)) || ((at(j + 1) == '-' || at(j + 1) == '+') && is_digit(at(j + 2))))) {
        j += 2;
        while (is_digit(at(j))) ++j;
      }
      if (is_word_start(at(j)))
        fail_at(source, SourceLoc{line_no, static_cast<int>(j) + 1},
                "a name cannot start with a digit");
      std::string text(line.substr(i, j - i));
      tokens.push_back({Token::Kind::number, text, std::strtod(text.c_str(), nullptr), loc});
      i = j;
    } else if (c == ',') {
      tokens.push_back({Token::Kind::comma, ",", 0, loc});
      ++i;
    } else if (c == '.') {
      tokens.push_back({Token::Kind::period, ".", 0, loc});
      ++i;
    } else if (c == '*') {
      tokens.push_back({Token::Kind::star, "*", 0, loc});
      ++i;
    } else {
      fail_at(source, loc, fmt::format("`{}` is not a character of the language", c));
    }
  }
  return tokens;
}

}  // namespace lathe::lang
