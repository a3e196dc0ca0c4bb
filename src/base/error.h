// Errors, in two kinds (after Halide): a UserError is the user's to fix (a bad checkpoint, a bad
// program, too little memory) and is printed as is with a non-zero exit; an InternalError is a bug in
// Lathe and says so.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace lathe {

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw UserError(fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void internal_fail(fmt::format_string<Args...> format, Args&&... args) {
  throw InternalError(fmt::format(format, std::forward<Args>(args)...));
}

// LATHE_CHECK states an invariant of Lathe's own code; it never guards against user input.
#define LATHE_CHECK(cond)                                                                   \
  do {                                                                                      \
    if (!(cond)) ::lathe::internal_fail("{}:{}: check failed: {}", __FILE__, __LINE__, #cond); \
  } while (0)

}  // namespace lathe
