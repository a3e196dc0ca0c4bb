// lathe synth --shape NAME --type TYPE -o OUT.gguf [--layers N] [--seed S]
#include "cli/commands.h"
#include "model/synth.h"

#include <fmt/core.h>

#include <chrono>
#include <memory>

namespace lathe::cli {

Action add_synth_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("synth", "write a synthetic checkpoint of a real model's shape");
  auto opts = std::make_shared<SynthOptions>();
  auto out = std::make_shared<std::string>();
  std::string shapes;
  for (const ModelShape& s : model_shapes()) shapes += (shapes.empty() ? "" : ", ") + s.name;
  cmd->add_option("--shape", opts->shape, "model shape: " + shapes)->required();
  cmd->add_option("--type", opts->type, "f32, f16, bf16, q8_0, q4_0, q2_k, q3_k_m, q4_k_m, q5_k_m")->capture_default_str();
  cmd->add_option("-o,--output", *out, "the GGUF file to write")->required();
  cmd->add_option("--layers", opts->layers, "keep only the first N layers (0: all)");
  cmd->add_option("--seed", opts->seed, "random seed")->capture_default_str();
  cmd->add_option("--threads", opts->threads, "threads (0: all cores)");
  cmd->add_flag("--zero-data", opts->zero_data,
                "write metadata and tensor table only; the weights are a sparse hole of zeros");
  return [opts, out] {
    const auto start = std::chrono::steady_clock::now();
    uint64_t size = 0;
    const ModelSpec s = write_synthetic_checkpoint(*opts, *out, &size);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double gb = static_cast<double>(size) / 1e9;
    fmt::print("wrote {}: synthetic {} ({} layers, {}), {:.3f} GB in {:.1f} s ({:.2f} GB/s)\n", *out,
               opts->shape, s.n_layer, opts->type, gb, seconds, gb / std::max(seconds, 1e-9));
    return 0;
  };
}

}  // namespace lathe::cli
