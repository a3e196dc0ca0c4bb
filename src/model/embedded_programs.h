// The model programs built into the binary: models/*.lathe, as they were when Lathe was built
// (cmake/embed_programs.cmake generates the table). A program's name is its file's stem, which is the
// GGUF architecture it runs ("qwen3").
#pragma once

#include <span>
#include <string_view>

namespace lathe {

struct EmbeddedProgram {
  std::string_view name;       // "qwen3"
  std::string_view file_name;  // "models/qwen3.lathe": where diagnostics point
  std::string_view text;
};

std::span<const EmbeddedProgram> embedded_programs();  // sorted by name

}  // namespace lathe
