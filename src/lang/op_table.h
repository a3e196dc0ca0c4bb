// The op table and the modifier table: one entry per op and per modifier. The parser matches
// sentences against the patterns, the printer prints from them, the checker and later stages switch on
// the kind. Adding an op is one entry here, one rule in the checker, and its CPU function.
//
// A pattern is a list of words separated by spaces. `$v` is a value slot (a name, optionally written
// `each head of NAME`), `$n` a number slot (`4096`, `eps`, `n_head*head_dim`); any other word, and `,`,
// must appear as written. Op patterns starting with `$v` or `the` follow `Let NAME be`; patterns starting
// with another word are whole statements (the cache appends).
#pragma once

#include "lang/ast.h"

#include <span>
#include <string_view>

namespace lathe::lang {

struct OpInfo {
  OpKind kind;
  std::string_view name;     // a short name for messages and later stages: "rms_norm"
  std::string_view pattern;  // "the RMS norm of $v"
  std::vector<ModKind> mods;  // allowed modifiers, in canonical order
  std::string_view cpu_op;   // the function of interp/cpu_ops.h that computes it
};

struct ModInfo {
  ModKind kind;
  std::string_view name;
  std::string_view pattern;  // "within a window of $n"
};

std::span<const OpInfo> op_table();
std::span<const ModInfo> mod_table();
const OpInfo& op_info(OpKind kind);
const ModInfo& mod_info(ModKind kind);

// The number of slots of a pattern: an op's arity, a modifier's operand count.
int pattern_arity(std::string_view pattern);

// The words of a pattern, `$v` and `$n` included.
std::vector<std::string_view> pattern_words(std::string_view pattern);

// A modifier's phrase for messages: its pattern up to the first slot ("within a window of").
std::string mod_phrase(ModKind kind);

}  // namespace lathe::lang
