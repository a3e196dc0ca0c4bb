// The language's front door: parse a program, print it canonically, name it by the digest of its
// canonical text, and make the cut a step runs (decode, a prefill chunk, a batch step).
//
//   Program p = parse_program(text, "models/qwen3.lathe");   // throws LangError (a UserError)
//   CheckResult types = check(p);                             // lang/checker.h
//   Program decode = make_cut(p, parse_cut("decode"));
//   std::string id = identity(decode);                        // sha256 of print_canonical(decode)
#pragma once

#include "lang/ast.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace lathe::lang {

Program parse_program(std::string_view text, const std::string& file_name);

// Reads a program file; a missing file is a UserError.
Program parse_program_file(const std::string& path);

// The fixed spelling and layout of a program: parse(print(p)) == p and print(parse(print(p))) ==
// print(p). Comments and blank lines of the source do not survive.
std::string print_canonical(const Program& program);

// The identity of a program: lowercase hex SHA-256 of its canonical text.
std::string identity(const Program& program);

// The rows a step runs. Every row carries a token, a position and a sequence number:
//   decode     1 row of 1 sequence
//   prefill:R  R rows of 1 sequence, at consecutive positions
//   batch:B    B rows of B sequences, each at its own position
struct Cut {
  enum class Kind { decode, prefill, batch };
  Kind kind = Kind::decode;
  int64_t n = 1;  // R or B; 1 for decode
  bool operator==(const Cut&) const = default;
};

// "decode", "prefill:16", "batch:8"; anything else is a UserError.
Cut parse_cut(std::string_view text);
std::string cut_name(const Cut& cut);

// The program of one cut: the model's program with its step line set (replaced if it had one).
// The canonical texts of two cuts of one program differ only in that line.
Program make_cut(const Program& program, const Cut& cut);

// Numbers the statements 0, 1, 2... in reading order (parse_program does this).
void number_statements(Program& program);

}  // namespace lathe::lang
