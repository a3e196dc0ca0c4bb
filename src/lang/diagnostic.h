// Diagnostics of the language: `file:line:col: error: message`, the statement's line, a caret under
// the column, then notes (the shapes involved in a shape error), each on its own line.
#pragma once

#include "base/error.h"
#include "lang/ast.h"

#include <string>
#include <vector>

namespace lathe::lang {

class LangError : public UserError {
 public:
  LangError(std::string file, SourceLoc loc, std::string message, std::string text)
      : UserError(text), file(std::move(file)), loc(loc), message(std::move(message)) {}
  std::string file;
  SourceLoc loc;
  std::string message;  // the message alone, without location, source line or notes
};

// Formats the diagnostic; `lines` is the source text (line 1 is lines[0]); a location beyond it
// prints no source line.
std::string format_diagnostic(const std::string& file, const std::vector<std::string>& lines,
                              SourceLoc loc, const std::string& message,
                              const std::vector<std::string>& notes = {});

[[noreturn]] void fail_at(const SourceText& source, SourceLoc loc, const std::string& message,
                          const std::vector<std::string>& notes = {});

}  // namespace lathe::lang
