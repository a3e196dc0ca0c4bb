#include "lang/diagnostic.h"

#include <fmt/format.h>

namespace lathe::lang {

std::string format_diagnostic(const std::string& file, const std::vector<std::string>& lines,
                              SourceLoc loc, const std::string& message,
                              const std::vector<std::string>& notes) {
  std::string out = fmt::format("{}:{}:{}: error: {}", file, loc.line, loc.col, message);
  if (loc.line >= 1 && loc.line <= static_cast<int>(lines.size())) {
    const std::string& text = lines[loc.line - 1];
    out += "\n    " + text + "\n    ";
    // Tabs stay tabs so the caret lines up under them.
    for (int i = 1; i < loc.col && i - 1 < static_cast<int>(text.size()); ++i)
      out += text[i - 1] == '\t' ? '\t' : ' ';
    out += '^';
  }
  for (const std::string& note : notes) out += "\n  " + note;
  return out;
}

void fail_at(const SourceText& source, SourceLoc loc, const std::string& message,
             const std::vector<std::string>& notes) {
  throw LangError(source.file_name, loc, message,
                  format_diagnostic(source.file_name, source.lines, loc, message, notes));
}

}  // namespace lathe::lang
