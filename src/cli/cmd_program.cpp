// lathe program MODEL.gguf [--cut C] [--ctx N]: the program the checkpoint's architecture runs, cut,
// bound to the checkpoint's spec and checked with its numbers; printed canonically with its identity.
// lathe program FILE.lathe [--cut C]: a program file's canonical text and identity, or its
// diagnostics (exit 1); with --weights M.gguf, bound to that checkpoint as MODEL.gguf's is.
#include "cli/commands.h"
#include "fuse/fusion.h"
#include "gguf/gguf_file.h"
#include "graph/graph.h"
#include "lang/checker.h"
#include "lang/diagnostic.h"
#include "lang/program.h"
#include "model/model_program.h"

#include <fmt/core.h>

#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string_view>
#include <utility>

namespace lathe::cli {
namespace {

// A checkpoint by its magic, or by its name when it cannot be read (GgufFile::open then says why).
bool is_gguf(const std::string& path) {
  if (path.ends_with(".gguf")) return true;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

void print_program(const lang::Program& cut, const lang::Bindings* bindings) {
  fmt::print("{}", lang::print_canonical(cut));
  if (bindings) {
    std::string line;
    for (const lang::Name& p : cut.parameters)
      line += fmt::format("{}{} = {}", line.empty() ? "" : ", ", p.name, bindings->at(p.name));
    fmt::print("\n# parameters: {}\n", line);
  }
  fmt::print("# identity: {}\n", lang::identity(cut));
}

// The lifted graph, then the fusion plan's groups (the DEBUG view of the middle of the pipeline).
void print_lowered(const GgufFile& file, const lang::Program& cut, const lang::Bindings& bindings,
                   const std::vector<std::string>& hold) {
  const graph::Graph g = graph::lift(cut, bindings, [&file](const std::string& name) -> std::optional<graph::CheckpointTensor> {
    const GgufTensor* t = file.find_tensor(name);
    if (!t) return std::nullopt;
    return graph::CheckpointTensor{t->type, t->dims};
  });
  fmt::print("{}", graph::print_graph(g));
  const fuse::FusionPlan plan = fuse::fuse(g, std::set<std::string>(hold.begin(), hold.end()));
  fmt::print("fusion: {} groups for {} ops\n", plan.groups.size(), g.nodes.size());
  // The rules that mark rather than group: what each marks, and how many.
  const std::map<std::string_view, std::pair<size_t, const char*>> marks = {
      {"quantize_epilogue", {plan.quantized_by_producer.size(), "values"}},
      {"mixture_one_launch", {plan.one_launch_mixtures.size(), "mixtures"}},
      {"experts_by_slot", {plan.by_slot_mixtures.size(), "mixtures"}},
      {"router_epilogue", {plan.router_epilogues.size(), "products"}},
      {"norm_epilogue", {plan.norm_epilogues.size(), "products"}},
      {"ffn_split", {plan.ffn_splits.size(), "downs"}},
      {"o_split", {plan.o_splits.size(), "o's"}},
      {"attention_half", {plan.attention_halves.size(), "o's"}},
  };
  for (const fuse::Rule& r : fuse::fusion_rules()) {
    if (const auto m = marks.find(r.name); m != marks.end())
      fmt::print("  {:<17} {:>4} {}  {}\n", r.name, m->second.first, m->second.second, r.what);
    else
      fmt::print("  {:<17} {:>4} groups  {}\n", r.name, plan.count(r.name), r.what);
  }
}

}  // namespace

Action add_program_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("program", "print a model's program (or a program file) and its identity");
  auto path = std::make_shared<std::string>();
  auto cut = std::make_shared<std::string>("decode");
  auto ctx = std::make_shared<int64_t>(4096);
  auto lowered = std::make_shared<bool>(false);
  auto hold = std::make_shared<std::vector<std::string>>();
  auto weights = std::make_shared<std::string>();
  cmd->add_option("file", *path, "a GGUF checkpoint, or a .lathe program file")->required();
  cmd->add_option("--weights", *weights, "for a program file: the checkpoint it is bound to (then --graph works)");
  cmd->add_option("--cut", *cut, "decode, prefill:R or batch:B")->capture_default_str();
  cmd->add_option("--ctx", *ctx, "positions each cache holds (n_ctx), for a checkpoint")->capture_default_str();
  cmd->add_flag("--graph", *lowered, "for a checkpoint: also print the lifted tensor graph and the fusion groups");
  cmd->add_option("--hold", *hold, "with --graph: hold back a fusion rule by name");
  return [path, cut, ctx, lowered, hold, weights] {
    const lang::Cut c = lang::parse_cut(*cut);
    if (is_gguf(*path) || !weights->empty()) {
      if (!weights->empty() && is_gguf(*path)) fail("--weights goes with a program file; {} is a checkpoint", *path);
      const GgufFile file = GgufFile::open(weights->empty() ? *path : *weights);
      const ModelProgram mp = model_program(file, read_model_spec(file), *ctx, weights->empty() ? "" : *path);
      const lang::Program p = lang::make_cut(mp.program, c);
      lang::check(p, &mp.bindings);
      print_program(p, &mp.bindings);
      if (*lowered) print_lowered(file, p, mp.bindings, *hold);
      return 0;
    }
    try {
      const lang::Program p = lang::make_cut(lang::parse_program_file(*path), c);
      lang::check(p);
      print_program(p, nullptr);
    } catch (const lang::LangError& e) {
      fmt::print(stderr, "{}\n", e.what());  // the diagnostic says `error:` itself
      return 1;
    }
    return 0;
  };
}

}  // namespace lathe::cli
