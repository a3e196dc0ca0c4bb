// Each `lathe` subcommand registers itself on the app; main() runs the one chosen.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace lathe::cli {

using Action = std::function<int()>;

// Adds the subcommand and returns the action that runs it once options are parsed.
Action add_synth_command(CLI::App& app);
Action add_inspect_command(CLI::App& app);
Action add_program_command(CLI::App& app);
Action add_run_command(CLI::App& app);
Action add_check_command(CLI::App& app);
Action add_bench_command(CLI::App& app);
Action add_emit_command(CLI::App& app);
Action add_tokenize_command(CLI::App& app);
Action add_logits_command(CLI::App& app);
Action add_perplexity_command(CLI::App& app);
Action add_kernels_command(CLI::App& app);

}  // namespace lathe::cli
