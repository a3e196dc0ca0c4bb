// lathe bench MODEL -p 512 -n 128 [-r R]: prompt processing (pp) and text generation (tg) speed on
// the GPU, in llama-bench's table: mean and standard deviation over R repeats after a warm-up. The
// tg line also gives the fraction of the decode limit: the bytes a token must read (every matrix
// once, an embedding row, the KV cache) over the H200's streaming read rate.
#include "cli/commands.h"
#include "cli/engines.h"
#include "model/model_spec.h"
#include "runtime/gpu_engine.h"
#include "runtime/product_stamps.h"

#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <map>
#include <numeric>

namespace lathe::cli {
namespace {

constexpr double kReadGBs = 4630.0;  // ../shared/anchors.md: the H200's streaming read rate
constexpr double kInt8Tops = 1979.0;  // ../shared/anchors.md: the H200's dense int8 tensor cores (datasheet)

struct Stat {
  double mean = 0, sd = 0;
};

Stat stat(const std::vector<double>& v) {
  Stat s;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
  s.sd = v.size() > 1 ? std::sqrt(s.sd / static_cast<double>(v.size() - 1)) : 0.0;
  return s;
}

double seconds(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

Action add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "measure prompt and generation speed on the GPU (llama-bench's table)");
  auto path = std::make_shared<std::string>();
  auto o = std::make_shared<EngineOptions>();
  auto pp = std::make_shared<int64_t>(512);
  auto tg = std::make_shared<int64_t>(128);
  auto depth = std::make_shared<int64_t>(0);
  auto reps = std::make_shared<int>(5);
  auto profile = std::make_shared<bool>(false);
  cmd->add_option("model", *path, "the GGUF checkpoint")->required();
  cmd->add_option("-p,--n-prompt", *pp, "prompt tokens (0: skip)")->capture_default_str();
  cmd->add_option("-n,--n-gen", *tg, "generated tokens (0: skip)")->capture_default_str();
  cmd->add_option("-d,--depth", *depth, "tokens already in the context before the test")->capture_default_str();
  cmd->add_option("-r,--repetitions", *reps, "repeats")->capture_default_str();
  cmd->add_flag("--profile", *profile, "time every launch of the decode step alone and print them by kind");
  add_engine_options(cmd, *o);
  return [=] {
    if (*reps < 1) fail("-r must be at least 1");
    o->n_ctx = std::max<int64_t>(*depth + std::max(*pp, *tg) + 1, 64);
    const GgufFile file = GgufFile::open(*path);
    const ModelSpec spec = read_model_spec(file);
    std::unique_ptr<Engine> base = make_gpu_engine(file, *o);
    GpuEngine& gpu = dynamic_cast<GpuEngine&>(*base);
    std::vector<int32_t> ids(static_cast<size_t>(std::max(*pp, *depth)));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7919) % 1000);
    const std::string model = fmt::format("{} {}", spec.arch_name, spec.name);
    uint64_t params = 0;
    for (const GgufTensor& t : file.tensors()) params += static_cast<uint64_t>(t.n_elements());
    fmt::print("| model | size | params | backend | activations | test | t/s | of limit |\n");
    fmt::print("| --- | ---: | ---: | --- | --- | --- | ---: | ---: |\n");
    const std::string head = fmt::format("| {} | {:.2f} GiB | {:.2f} B | {} | {}", model, file.file_size() / 1073741824.0,
                                         params / 1e9, gpu.name(), o->activations);
    const std::string at = *depth > 0 ? fmt::format(" @ d{}", *depth) : "";
    if (*pp > 0) {
      std::vector<double> rates;
      for (int r = 0; r <= *reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        gpu.run(std::span<const int32_t>(ids.data(), static_cast<size_t>(*pp)), *depth, false);
        gpu.synchronize();
        if (r > 0) rates.push_back(static_cast<double>(*pp) / seconds(t0));  // r == 0: warm-up
      }
      const Stat s = stat(rates);
      // Prefill is bound by arithmetic: the share of the card's dense int8 tensor-core rate it reaches.
      const double flops = prompt_flops_per_token(file, spec, static_cast<double>(*depth) + (*pp + 1) / 2.0);
      fmt::print("{} | pp{}{} | {:.2f} ± {:.2f} | {:.1f}% of {:.0f} int8 TOPS |\n", head, *pp, at, s.mean, s.sd,
                 100.0 * flops * s.mean / (kInt8Tops * 1e12), kInt8Tops);
    }
    if (*tg > 0) {
      if (*depth > 0) gpu.run(std::span<const int32_t>(ids.data(), static_cast<size_t>(*depth)), 0, false);
      std::vector<double> rates;
      // LATHE_STAMPS=FILE: the decode products' block stamps of one more repetition, its first 2^18
      // block records (~13 tokens of an 8B model; runtime/product_stamps.h), left out of the rates.
      const std::string stamps_file = cuda::product_stamps_file();
      std::unique_ptr<cuda::ProductStamps> stamps;
      for (int r = 0; r <= *reps + (stamps_file.empty() ? 0 : 1); ++r) {
        if (r == 1 && !stamps_file.empty()) stamps = std::make_unique<cuda::ProductStamps>(size_t{1} << 18);
        int32_t tok = 1;
        const auto t0 = std::chrono::steady_clock::now();
        // Greedy steps, chained on the device where the engine does (GpuEngineOptions::decode_chain).
        for (int64_t i = 0; i < *tg;) {
          const std::vector<int32_t> got = gpu.run_argmax_steps(tok, *depth + i, *tg - i);
          tok = got.back();
          i += static_cast<int64_t>(got.size());
        }
        if (stamps) {
          stamps->write(stamps_file);
          stamps.reset();
          fmt::print("(product stamps of {} tokens written to {})\n", *tg, stamps_file);
          continue;
        }
        if (r > 0) rates.push_back(static_cast<double>(*tg) / seconds(t0));
      }
      const Stat s = stat(rates);
      const DecodeBytes bytes = decode_bytes_per_token(file, spec, *depth + *tg / 2);
      const double limit = kReadGBs * 1e9 / static_cast<double>(bytes.total());
      fmt::print("{} | tg{}{} | {:.2f} ± {:.2f} | {:.0f}% of {:.0f} |\n", head, *tg, at, s.mean, s.sd,
                 100.0 * s.mean / limit, limit);
      if (const PersistentStep* ps = gpu.persistent_step()) {
        fmt::print("({})\n", ps->describe());
        gpu.synchronize();
        fmt::print("{}", ps->trace_summary());
      }
    }
    if (*profile) {
      // Launch times by kind (the text before the first '['), summed over the step: the decode step,
      // then the prompt's largest chunk.
      auto print_profile = [&gpu](int64_t rows, const std::string& title) {
        std::map<std::string, std::pair<double, int>> by_kind;
        double total = 0;
        for (const auto& [what, ms] : gpu.profile(rows, rows == 1 ? 5 : 3)) {
          auto& [t, n] = by_kind[what.substr(0, what.find('['))];
          t += ms;
          ++n;
          total += ms;
        }
        fmt::print("{}, each launch timed alone: {:.3f} ms in all\n", title, total);
        for (const auto& [kind, tn] : by_kind)
          fmt::print("  {:<40} {:>4} launches {:>8.3f} ms  {:5.1f}%\n", kind, tn.second, tn.first, 100 * tn.first / total);
      };
      if (*tg > 0) print_profile(1, "decode step");
      if (*pp > 0) {
        const int64_t rows = prompt_chunks(*pp, o->max_chunk).front();
        print_profile(rows, fmt::format("prefill chunk of {} rows", rows));
      }
    }
    return 0;
  };
}

}  // namespace lathe::cli
