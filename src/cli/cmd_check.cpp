// lathe check MODEL | PROGRAM --weights MODEL: the GPU lane against the reference interpreter on the
// same tokens (the checkpoint's own program, or a program file run on the checkpoint's weights): a
// prompt run as a prefill chunk, then decode steps fed the interpreter's greedy tokens. Prints the largest
// difference of the logits per step and overall, normalized by the largest logit, against the bound
// of the numerics contract in use; exits 1 when the bound is broken.
#include "cli/commands.h"
#include "cli/engines.h"
#include "interp/cpu_ops.h"
#include "runtime/cpu_engine.h"
#include "runtime/sampler.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace lathe::cli {
namespace {

// The contracts' bounds on max|gpu - cpu| / max|cpu| over a row of logits (docs/numerics.md). The
// lane keeps the KV cache in f16, which alone moves logits by about 4e-4 of their largest; the f32
// contract's bound allows that and little else.
double contract_bound(const std::string& activations) {
  if (activations == "f32") return 1e-3;
  if (activations == "int8x2") return 2e-3;
  return 5e-2;  // int8
}

struct Diff {
  double max_abs = 0, normalized = 0;
  std::vector<double> rows;  // each row's normalized difference
};

Diff compare(const std::vector<float>& gpu, const std::vector<float>& cpu, int64_t n_vocab) {
  Diff d;
  for (size_t r = 0; r * n_vocab < cpu.size(); ++r) {
    double scale = 0, diff = 0;
    for (int64_t i = 0; i < n_vocab; ++i) {
      const size_t k = r * n_vocab + static_cast<size_t>(i);
      scale = std::max(scale, std::abs(static_cast<double>(cpu[k])));
      const double e = std::abs(static_cast<double>(gpu[k]) - cpu[k]);
      diff = std::isnan(e) ? INFINITY : std::max(diff, e);
    }
    d.max_abs = std::max(d.max_abs, diff);
    d.normalized = std::max(d.normalized, diff / std::max(scale, 1e-30));
    d.rows.push_back(diff / std::max(scale, 1e-30));
  }
  return d;
}

// The rows' normalized differences on one line ("row: value"), for a prefill that breaks the bound:
// which prompt positions are off says much about where (a chunk's tiles, its last row, all of them).
std::string row_list(const std::vector<double>& rows) {
  std::string out;
  for (size_t r = 0; r < rows.size(); ++r) out += fmt::format("{}{}: {:.1e}", r ? ", " : "", r, rows[r]);
  return out;
}

}  // namespace

Action add_check_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("check", "compare the GPU lane with the reference interpreter");
  auto path = std::make_shared<std::string>();
  auto o = std::make_shared<EngineOptions>();
  auto prompt = std::make_shared<int64_t>(16);
  auto steps = std::make_shared<int64_t>(32);
  auto weights = std::make_shared<std::string>();
  cmd->add_option("model", *path, "the GGUF checkpoint, or a .lathe program file (then --weights)")->required();
  cmd->add_option("--weights", *weights, "the checkpoint whose constants a program file reads");
  cmd->add_option("--prompt-tokens", *prompt, "tokens in the prompt (random ids, seeded)")->capture_default_str();
  cmd->add_option("--steps", *steps, "decode steps after the prompt")->capture_default_str();
  add_engine_options(cmd, *o);
  add_lane_rounding_option(cmd, *o);
  o->n_ctx = 256;
  return [path, o, prompt, steps, weights] {
    if (*prompt <= 0 || *steps < 0) fail("--prompt-tokens must be positive and --steps at least 0");
    if (*prompt + *steps > o->n_ctx) o->n_ctx = *prompt + *steps;
    std::string checkpoint = *path;
    if (path->ends_with(".lathe")) {
      if (weights->empty()) fail("{} is a program: say which checkpoint's weights it runs on with --weights M.gguf", *path);
      if (!o->program.empty()) fail("give the program once: as the file to check or as --program, not both");
      o->program = *path;
      checkpoint = *weights;
    } else if (!weights->empty()) {
      fail("--weights goes with a program file; {} is a checkpoint", *path);
    }
    const GgufFile file = GgufFile::open(checkpoint);
    CpuEngine cpu(file, o->n_ctx, o->max_chunk, o->program);
    if (o->lane_rounding) cpu.set_rounding(lane_rounding_of(*o));
    std::unique_ptr<Engine> gpu = make_gpu_engine(file, *o);
    const int64_t n_vocab = cpu.n_vocab();
    std::mt19937 rng(1234);
    std::vector<int32_t> ids(static_cast<size_t>(*prompt));
    for (int32_t& t : ids) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(std::min<int64_t>(n_vocab, 1000)));
    const double bound = contract_bound(o->activations);
    fmt::print("check {}{} on {} against {}{}: {} prompt tokens, {} decode steps, bound {:.0e} ({})\n", *path,
               o->program.empty() ? "" : " (weights " + checkpoint + ")", gpu->name(), cpu.name(),
               o->lane_rounding ? " rounding as the lane does" : "", *prompt, *steps, bound, o->activations);
    // The prompt's ids, so that `lathe logits M --tokens ... --device cpu [--lane-rounding]` replays it.
    fmt::print("  prompt ids {}\n", fmt::join(ids, ","));
    // A mixture's router may legitimately choose another expert where its k-th and (k+1)-th logits
    // are closer than the contract lets values move: such a step's logits are right for the other
    // expert, not held to the bound, and named (docs/numerics.md).
    int excused = 0;
    Diff worst;
    auto account = [&](const Diff& d, const std::string& what, bool print) {
      const double margin = routing_margin();
      const bool near_tie = d.normalized > bound && margin < bound;
      if (print || d.normalized > bound)
        fmt::print("  {:<18} logits max |diff| {:.3e}  normalized {:.3e}{}\n", what, d.max_abs, d.normalized,
                 near_tie ? fmt::format("  (router near-tie: margin {:.1e} of the top logit; not held to the bound)", margin)
                          : "");
      if (near_tie) {
        ++excused;
        return;
      }
      worst.max_abs = std::max(worst.max_abs, d.max_abs);
      worst.normalized = std::max(worst.normalized, d.normalized);
    };
    reset_routing_margin();
    std::vector<float> lc = cpu.run(ids, 0, true);
    std::vector<float> lg = gpu->run(ids, 0, true);
    const Diff prefill = compare(lg, lc, n_vocab);
    account(prefill, fmt::format("prefill {} rows", *prompt), true);
    if (prefill.normalized > bound) fmt::print("  prefill by row: {}\n", row_list(prefill.rows));
    int agree = 0;
    std::vector<float> last_cpu(lc.end() - n_vocab, lc.end()), last_gpu(lg.end() - n_vocab, lg.end());
    for (int64_t s = 0; s < *steps; ++s) {
      const int32_t next = argmax(last_cpu);
      agree += argmax(last_gpu) == next;
      const int32_t one[1] = {next};
      reset_routing_margin();
      last_cpu = cpu.run(one, *prompt + s, false);
      last_gpu = gpu->run(one, *prompt + s, false);
      const Diff d = compare(last_gpu, last_cpu, n_vocab);
      account(d, fmt::format("decode step {}", s), s < 4 || s + 1 == *steps);
    }
    fmt::print("largest difference: logits {:.3e} (normalized {:.3e}, bound {:.0e}); greedy tokens agree in {} of {} steps{}\n",
               worst.max_abs, worst.normalized, bound, agree, *steps,
               excused ? fmt::format("; {} step(s) at router near-ties not held to the bound", excused) : "");
    if (!(worst.normalized <= bound)) {
      fmt::print("FAIL: the {} contract's bound is broken\n", o->activations);
      return 1;
    }
    fmt::print("OK\n");
    return 0;
  };
}

}  // namespace lathe::cli
