// lathe: the command line. Parses the subcommand, runs it, and turns errors into messages and exit
// codes: 1 for the user's errors (bad input), 2 for usage, 3 for Lathe's own bugs.
#include "base/error.h"
#include "cli/commands.h"

#include <fmt/core.h>

#include <map>

int main(int argc, char** argv) {
  CLI::App app{"Lathe: a compiler for language models (GGUF in, CUDA out)", "lathe"};
  app.require_subcommand(1);
  std::map<CLI::App*, lathe::cli::Action> actions;
  auto add = [&](lathe::cli::Action (*adder)(CLI::App&)) {
    lathe::cli::Action action = adder(app);
    actions[app.get_subcommands({}).back()] = std::move(action);
  };
  add(lathe::cli::add_synth_command);
  add(lathe::cli::add_inspect_command);
  add(lathe::cli::add_program_command);
  add(lathe::cli::add_run_command);
  add(lathe::cli::add_check_command);
  add(lathe::cli::add_bench_command);
  add(lathe::cli::add_emit_command);
  add(lathe::cli::add_tokenize_command);
  add(lathe::cli::add_logits_command);
  add(lathe::cli::add_perplexity_command);
  add(lathe::cli::add_kernels_command);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    for (auto& [sub, action] : actions)
      if (sub->parsed()) return action();
  } catch (const lathe::UserError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  } catch (const lathe::InternalError& e) {
    fmt::print(stderr, "internal error (a bug in Lathe, please report it): {}\n", e.what());
    return 3;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "error: out of host memory\n");
    return 1;
  } catch (const std::exception& e) {  // the system's errors (files, threads): the user's to act on
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 2;
}
