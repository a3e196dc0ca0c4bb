#include "cli/engines.h"

#include "base/error.h"
#include "model/model_spec.h"
#include "runtime/cpu_engine.h"
#include "runtime/cuda_driver.h"

namespace lathe::cli {

void add_engine_options(CLI::App* cmd, EngineOptions& o) {
  cmd->add_option("--device", o.device, "auto, cpu or gpu")->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
  cmd->add_option("--ctx", o.n_ctx, "context length: positions the KV cache holds")->capture_default_str();
  cmd->add_option("--activations", o.activations, "GPU numerics contract: f32, int8, int8x2")
      ->capture_default_str()->check(CLI::IsMember({"f32", "int8", "int8x2"}));
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
  if (o.device == "gpu") {
    std::string why;
    if (!cuda::gpu_available(&why)) fail("--device gpu: {}", why);
    fail("--device gpu: the GPU lane cannot run models yet in this build (use --device cpu)");
  }
  m.engine = std::make_unique<CpuEngine>(*m.file, o.n_ctx);
  return m;
}

}  // namespace lathe::cli
