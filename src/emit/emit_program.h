// `lathe emit`: one standalone CUDA C++ file for a checkpoint. The kernel library's text, the
// recorded steps (record.h) as tables, and a fixed host program (host_main.cu.in) that loads the
// checkpoint, runs a prompt and generates greedily, printing the identity of the program it was
// compiled from. `nvcc -arch=sm_90 prog.cu -o prog -lcuda` builds it; it needs no Lathe header or
// library. The text is deterministic: the same checkpoint and options give the same bytes (no
// addresses, times or paths).
#pragma once

#include "emit/record.h"
#include "gguf/gguf_file.h"

#include <string>
#include <string_view>

namespace lathe::emit {

// The lines that enclose the kernel library in the emitted text (tests compare the rest).
inline constexpr std::string_view kLibraryBegin = "// ==== the kernel library (src/kernels/*.cuh) ====\n";
inline constexpr std::string_view kLibraryEnd = "// ==== end of the kernel library ====\n";

std::string emit_program(const GgufFile& file, const EmitOptions& options);

// The emitted text of a recorded model (emit_program records, then writes this).
std::string write_program(const GgufFile& file, const EmitOptions& options, const RecordedModel& model);

// The host program's template (src/emit/host_main.cu.in), embedded by cmake/embed_emit.cmake.
std::string_view host_main_template();
std::string_view relay_source();  // src/kernels/q8_0_relay.h's text (generated, cmake/embed_emit.cmake)

}  // namespace lathe::emit
