#include "cli/engines.h"

#include "base/error.h"
#include "fuse/fusion.h"
#include "kernels/gemm_f16_launch.h"
#include "kernels/moe_prefill_launch.h"

#include <fmt/core.h>

#include <string>

#include "model/model_spec.h"
#include "runtime/cpu_engine.h"
#include "runtime/cuda_driver.h"
#include "runtime/gpu_engine.h"

namespace lathe::cli {

void add_engine_options(CLI::App* cmd, EngineOptions& o) {
  cmd->add_option("--device", o.device, "auto, cpu or gpu")->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
  cmd->add_option("--ctx", o.n_ctx, "context length: positions the KV cache holds")->capture_default_str();
  cmd->add_option("--activations", o.activations, "GPU numerics contract: f32, int8, int8x2")
      ->capture_default_str()->check(CLI::IsMember({"f32", "int8", "int8x2"}));
  std::string rules;
  for (const fuse::Rule& r : fuse::fusion_rules()) rules += (rules.empty() ? "" : ", ") + std::string(r.name);
  cmd->add_option("--hold", o.hold, "hold back a fusion rule by name (repeatable): " + rules);
  cmd->add_option("--program", o.program, "a .lathe program file to run instead of the checkpoint architecture's");
  cmd->add_option("--gpu-memory", o.gpu_memory_gb,
                  "the most GPU memory to take, in GB (default: what is free); matrices that do not fit are "
                  "read from pinned host memory")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-chunk", o.max_chunk, "the largest prefill chunk (rows)")->capture_default_str();
  cmd->add_flag("--persistent", o.persistent,
                "run the decode step's products, rope and attention as phases of one persistent launch "
                "(also LATHE_PERSISTENT=1)");
  cmd->add_option("--merge-from", o.merge_from,
                  "the position from which a decode step merges the attention's splits by a launch of its own "
                  "(a second captured graph); 0: the last split merges at every position (default: 128, the "
                  "first position whose rows split; also LATHE_ATTN_MERGE_FROM)")
      ->check(CLI::NonNegativeNumber);
}

void add_lane_rounding_option(CLI::App* cmd, EngineOptions& o) {
  cmd->add_flag("--lane-rounding", o.lane_rounding,
                "the interpreter rounds as the GPU lane does (the KV cache in f16; under the int8 contracts a "
                "prefill chunk's products with x and the weights in f16, and its attention with q and the "
                "weights in f16): what is left of a difference is not rounding (docs/numerics.md)");
}

namespace {
// The lane's chunk mixture on f16 tensor cores (the kernels' rule, from the stacks' formats and shapes).
bool mixture_rounds_f16(const MatrixRef& gate, const MatrixRef& up, const MatrixRef& down) {
  auto stack = [](const MatrixRef& m) { return kernels::WeightMatrix{m.type, 0, m.n_rows, m.n_cols, m.n_stack}; };
  return kernels::moe_prefill_rounds_f16(stack(gate), stack(up), stack(down));
}
}  // namespace

LaneRounding lane_rounding_of(const EngineOptions& o) {
  LaneRounding r;
  r.f16_cache = true;
  const bool int8_contract = parse_activations(o.activations) != kernels::Activations::f32;
  if (int8_contract && kernels::prefill_gemm_setting() != kernels::PrefillGemm::int8)
    r.f16_chunk_products = &kernels::gemm_f16_supports;
  r.f16_flash_attention = int8_contract;
  if (int8_contract) r.f16_mixture_products = &mixture_rounds_f16;
  return r;
}

kernels::Activations parse_activations(const std::string& name) {
  if (name == "f32") return kernels::Activations::f32;
  if (name == "int8") return kernels::Activations::int8;
  if (name == "int8x2") return kernels::Activations::int8x2;
  fail("--activations is f32, int8 or int8x2, not '{}'", name);
}

std::unique_ptr<Engine> make_gpu_engine(const GgufFile& file, const EngineOptions& o) {
  if (o.persistent && o.merge_from > 0)
    fail("--merge-from {} asks for a second decode graph, which --persistent does not have (its step runs one "
         "form for every position): use one or the other",
         o.merge_from);
  std::string why;
  if (!cuda::gpu_available(&why)) fail("--device gpu: {}", why);
  GpuEngineOptions g;
  g.n_ctx = o.n_ctx;
  g.max_chunk = o.max_chunk;
  g.activations = parse_activations(o.activations);
  g.held = std::set<std::string>(o.hold.begin(), o.hold.end());
  g.program_file = o.program;
  g.gpu_memory = static_cast<size_t>(o.gpu_memory_gb * 1e9);
  g.persistent = o.persistent;
  if (o.merge_from >= 0) g.long_from = o.merge_from;
  auto engine = std::make_unique<GpuEngine>(file, g);
  // Matrices read over PCIe make every token slow: say so where it happens.
  if (engine->device_model().host_bytes() > 0) fmt::print(stderr, "note: {}\n", engine->device_model().residence());
  return engine;
}

LoadedModel load_model(const std::string& path, const EngineOptions& o) {
  if (o.n_ctx <= 0) fail("--ctx must be positive, not {}", o.n_ctx);
  LoadedModel m;
  m.file = std::make_unique<GgufFile>(GgufFile::open(path));
  const ModelSpec spec = read_model_spec(*m.file);
  m.tokenizer = std::make_unique<Tokenizer>(Tokenizer::from_gguf(*m.file));
  if (m.tokenizer->n_vocab() != spec.n_vocab)
    fail("{}: the tokenizer has {} tokens but the model's vocabulary is {}", path, m.tokenizer->n_vocab(),
         spec.n_vocab);
  m.engine = make_engine(*m.file, o);
  return m;
}

std::unique_ptr<Engine> make_engine(const GgufFile& file, const EngineOptions& o) {
  if (o.n_ctx <= 0) fail("--ctx must be positive, not {}", o.n_ctx);
  if (o.lane_rounding) {
    if (o.device != "cpu") fail("--lane-rounding rounds the interpreter's values as the GPU lane does: give --device cpu");
    // Chunked as the lane chunks a prompt (--max-chunk), so the same rows take the chunks' roundings.
    auto e = std::make_unique<CpuEngine>(file, o.n_ctx, o.max_chunk, o.program);
    e->set_rounding(lane_rounding_of(o));
    return e;
  }
  if (o.device == "gpu") return make_gpu_engine(file, o);
  std::string why;
  const bool gpu = o.device == "auto" && cuda::gpu_available(&why);
  if (o.device == "auto" && !gpu && cuda::gpu_present())
    fmt::print(stderr, "note: {}; running on the CPU\n", why);  // a card the kernels do not take
  if (gpu) {
    // auto: the GPU when the lane can run this model (its decode step plans), else the CPU, saying why.
    try {
      std::unique_ptr<Engine> e = make_gpu_engine(file, o);
      dynamic_cast<GpuEngine&>(*e).plan(1);
      return e;
    } catch (const UserError& e) {
      fmt::print(stderr, "note: the GPU lane cannot run this model ({}); running on the CPU\n", e.what());
    }
  }
  return std::make_unique<CpuEngine>(file, o.n_ctx, 64, o.program);
}

}  // namespace lathe::cli
