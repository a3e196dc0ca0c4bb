// A model's program: which of the programs built into Lathe (models/*.lathe) an architecture runs,
// and the values of its parameters from the checkpoint's spec. A new architecture is one program file
// named after its GGUF architecture, plus what its spec needs.
//
//   ModelProgram mp = model_program(file, read_model_spec(file), 4096);
//   Program decode = lang::make_cut(mp.program, lang::parse_cut("decode"));
//   Interpreter interp(decode, mp.bindings, file);
#pragma once

#include "gguf/gguf_file.h"
#include "lang/ast.h"
#include "lang/checker.h"
#include "model/model_spec.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace lathe {

// The built-in program of an architecture ("qwen3"), parsed; a UserError naming the architecture and
// the ones Lathe has programs for when there is none.
lang::Program program_for_architecture(std::string_view arch_name);

// Every parameter a program may declare, from the spec; n_ctx (the positions a cache holds) is the
// user's choice. Counts the spec does not have (n_ff of a mixture model) are left out.
lang::Bindings spec_bindings(const ModelSpec& spec, int64_t n_ctx);

struct ModelProgram {
  lang::Program program;    // uncut: make_cut gives the decode step, a prefill chunk, a batch step
  lang::Bindings bindings;  // checked: the program's shapes hold with these numbers
};

// The program of the checkpoint's architecture, bound to its spec and checked with the numbers. A
// checkpoint that needs what the program does not say (partial rotary, linear rope scaling,
// unnormalized expert weights, a tensor the program does not read) is refused, naming what, rather
// than run wrongly. Llama 3.1's rope_freqs.weight is read when present (an optional constant).
// `program_file` non-empty: that program file instead of the built-in one (checked the same way
// against the checkpoint: `lathe check PROGRAM --weights M.gguf`, `--program` of the commands).
ModelProgram model_program(const GgufFile& file, const ModelSpec& spec, int64_t n_ctx,
                           const std::string& program_file = "");

}  // namespace lathe
