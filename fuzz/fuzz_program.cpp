// libFuzzer target: any text is either a program that parses, prints canonically (and parses back to
// the same text), checks with the numbers of one of three tiny checkpoints (qwen3, qwen3-MoE, llama
// shapes), lifts against its tensors, fuses, and runs a two-row prefill chunk and a decode step on the
// interpreter; or it is refused with a UserError (a LangError, a LiftError, the interpreter's
// refusal of a row or a tensor) somewhere on that way. Anything else
// (an InternalError, another exception, a sanitizer report, a crash) is a finding: a user's program
// must never get past the front door into a state the later stages do not expect.
#include "base/error.h"
#include "fuse/fusion.h"
#include "gguf/gguf_file.h"
#include "graph/graph.h"
#include "interp/interpreter.h"
#include "lang/checker.h"
#include "lang/program.h"
#include "model/model_program.h"
#include "model/model_spec.h"
#include "model/synth.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct Checkpoint {
  std::unique_ptr<lathe::GgufFile> file;
  lathe::ModelSpec spec;
};

constexpr int64_t kCtx = 8;

// The tiny checkpoints, written once a process (f32 vectors, Q8_0 matrices: the interpreter reads
// them in place).
const std::vector<Checkpoint>& checkpoints() {
  static const std::vector<Checkpoint> all = [] {
    std::vector<Checkpoint> out;
    const std::filesystem::path dir = std::filesystem::temp_directory_path();
    for (const char* shape : {"qwen3-tiny", "qwen3moe-tiny", "llama-tiny"}) {
      const std::string path = (dir / (std::string("lathe_fuzz_program_") + shape + ".gguf")).string();
      lathe::SynthOptions o;
      o.shape = shape;
      o.type = "q8_0";
      o.layers = 2;
      o.seed = 3;
      o.threads = 1;
      lathe::write_synthetic_checkpoint(o, path);
      auto file = std::make_unique<lathe::GgufFile>(lathe::GgufFile::open(path));
      lathe::ModelSpec spec = lathe::read_model_spec(*file);
      out.push_back({std::move(file), std::move(spec)});
    }
    return out;
  }();
  return all;
}

// The first checkpoint whose numbers the program checks with and whose tensors it lifts against;
// nullopt when none does (each refusal a UserError). Unlike a model's program, a fuzzed one need not
// read every tensor of the checkpoint (model_program's refusal), so mutants that drop a statement
// still reach the interpreter.
struct Bound {
  const Checkpoint* checkpoint;
  lathe::lang::Bindings bindings;
  lathe::graph::Graph decode;
};

std::optional<Bound> bind_to_some(const lathe::lang::Program& p, const lathe::lang::Program& decode) {
  for (const Checkpoint& c : checkpoints()) {
    try {
      lathe::lang::Bindings b = lathe::spec_bindings(c.spec, kCtx);
      lathe::lang::check(p, &b);
      const lathe::GgufFile& file = *c.file;
      lathe::graph::Graph g = lathe::graph::lift(
          decode, b, [&file](const std::string& name) -> std::optional<lathe::graph::CheckpointTensor> {
            const lathe::GgufTensor* t = file.find_tensor(name);
            if (!t) return std::nullopt;
            return lathe::graph::CheckpointTensor{t->type, t->dims};
          });
      return Bound{&c, std::move(b), std::move(g)};
    } catch (const lathe::UserError&) {
    }
  }
  return std::nullopt;
}

void run_program(std::string_view text) {
  const lathe::lang::Program parsed = lathe::lang::parse_program(text, "fuzz.lathe");
  const std::string canonical = lathe::lang::print_canonical(parsed);
  const lathe::lang::Program reparsed = lathe::lang::parse_program(canonical, "canonical.lathe");
  if (lathe::lang::print_canonical(reparsed) != canonical) {
    std::fprintf(stderr, "the canonical text does not parse back to itself:\n%s\n", canonical.c_str());
    std::abort();
  }
  lathe::lang::check(parsed);
  const lathe::lang::Program decode = lathe::lang::make_cut(parsed, lathe::lang::parse_cut("decode"));
  const auto bound = bind_to_some(parsed, decode);
  if (!bound) return;
  (void)lathe::fuse::fuse(bound->decode);

  const lathe::GgufFile& file = *bound->checkpoint->file;
  const lathe::Interpreter step(decode, bound->bindings, file);
  const lathe::Interpreter chunk(lathe::lang::make_cut(parsed, lathe::lang::parse_cut("prefill:2")), bound->bindings, file);
  lathe::KvState state = chunk.new_state();
  (void)chunk.step({{1, 2}, {0, 1}, {0, 0}}, state);
  (void)step.step({{3}, {2}, {0}}, state);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;  // a program is a page or two; longer inputs only slow the search
  try {
    run_program(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const lathe::UserError&) {
  }
  return 0;
}
