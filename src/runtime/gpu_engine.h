// The GPU lane as an engine: the model's program lifted for each cut it runs (the decode step and
// prefill chunks of powers of two), fused, planned on the device and run; the decode step is
// captured as a CUDA graph once for each of its forms (plan::StepForm: one for short positions, one
// for long) and replayed for every token.
#pragma once

#include "gguf/gguf_file.h"
#include "kernels/gemv_launch.h"
#include "model/model_program.h"
#include "plan/device_model.h"
#include "plan/step_plan.h"
#include "runtime/engine.h"
#include "runtime/persistent_step.h"

#include <functional>
#include <map>
#include <memory>
#include <set>

namespace lathe {

struct GpuEngineOptions {
  int64_t n_ctx = 2048;
  int64_t max_chunk = 4096;  // the largest prefill chunk (clamped to n_ctx; cli/engines.h says why)
  kernels::Activations activations = kernels::Activations::int8x2;
  std::set<std::string> held;  // fusion rules held back
  bool use_graph = true;       // capture the decode step as a CUDA graph
  std::string program_file;    // a program file to run instead of the architecture's
  size_t gpu_memory = 0;       // > 0: the most device memory to take (residence moves the rest to the host)
  // The decode step as phases of persistent launches (runtime/persistent_step.h); also LATHE_PERSISTENT=1.
  bool persistent = false;
  // The position from which a decode step takes its long form (plan::StepForm: the attention's splits
  // merged by a launch of their own), below which its short form; one graph each. 0: one form for
  // every position (the last split's block merges). LATHE_ATTN_MERGE_FROM=N sets it. -1: from the
  // first position whose rows split (128). With splits by 128 slots the long form paid only on models
  // 2,048 wide or more (eighteenth session); by 16-slot granules (long_granule) it pays on qwen3-0.6b
  // too: +2.8% at 1,024 of context, +4.5% at 4,096, even at 16 (docs/perf.md, nineteenth session).
  int64_t long_from = -1;
  // The long form's split granule in slots (plan::PlanOptions::long_granule: 16; 128 gives the one
  // form's bits); LATHE_ATTN_LONG_GRANULE=N sets it.
  int64_t long_granule = 16;
  // Whether the dense decode products stream Q8_0 weights evict-first from L2 (kernels::
  // set_weights_evict_first), keeping the caches, activations and code there; also
  // LATHE_WEIGHTS_EVICT_FIRST=0/1. -1: by the model, on for dense models (qwen3-8b Q8_0 +1.1-1.8% at
  // 4,096 of context, even at 16) and off for mixtures (qwen3-30b-a3b: -1.5% or +0.4% at 4,096, by the
  // form measured): docs/perf.md, nineteenth session. Off under `persistent` (its phases stream plainly).
  int weights_evict_first = -1;
  // Decode steps chained on the device (run_argmax_steps, run_sampled_steps): up to this many steps'
  // graphs replayed back to back, each step's token made the next step's input on the device
  // (kernels::step_advance, sample_head_advance), so that the host waits once for them instead of once
  // a token. 1: a host round trip a token. LATHE_DECODE_CHAIN=N sets it.
  int64_t decode_chain = 16;
  // Whether sampled steps chain too (run_sampled_steps; also LATHE_SAMPLED_CHAIN=0/1): each token drawn
  // on the device from the step's head with the host sampler's own uniform, the same tokens as the
  // host's draws (the lane's ChainedSampledStepsDrawTheHostsTokens; the same text chained and not on an
  // H200, forty-fourth session). On by default since.
  bool sampled_chain = true;
};

class GpuEngine : public Engine {
 public:
  GpuEngine(const GgufFile& file, const GpuEngineOptions& options);
  ~GpuEngine() override;
  std::vector<float> run(std::span<const int32_t> tokens, int64_t start, bool all_logits) override;
  // One decode step whose next token is the device's argmax (no logits copied back): for greedy
  // generation and for timing.
  int32_t run_greedy(int32_t token, int64_t position);
  // The program's `next` when its decode step returns one (the built-in programs: the argmax of the
  // logits, formed on the device), else the logits' argmax on the host.
  int32_t run_argmax(int32_t token, int64_t position) override;
  // Chained on the device where the step returns `next` and runs as a graph: min(n, decode_chain)
  // steps, the host waiting once; else one step.
  std::vector<int32_t> run_argmax_steps(int32_t token, int64_t position, int64_t n) override;
  // The same chains for sampling from the head (top_candidates, then kernels::sample_head_advance)
  // where there is no penalty and top-k is at most max_head(), a chain of one step included; none
  // otherwise (and with decode_chain 1, no graph or the persistent step).
  std::vector<int32_t> run_sampled_steps(int32_t token, int64_t position, int64_t n, const SamplerOptions& o,
                                         std::span<const double> uniforms) override;
  std::span<const float> run_one(int32_t token, int64_t position) override;
  // The head formed on the device (kernels/top_candidates_launch.h), written into page-locked memory.
  LogitHead run_head(int32_t token, int64_t position, int64_t m, std::span<const int32_t> penalized) override;
  int64_t max_head() const override;
  int64_t n_ctx() const override { return options_.n_ctx; }
  int64_t n_vocab() const override { return n_vocab_; }
  std::string name() const override;

  // The step of `rows` rows, made on first use; last_row_outputs: the variant a prompt chunk runs
  // when only its last row's logits are read (plan::PlanOptions).
  const plan::StepPlan& plan(int64_t rows, bool last_row_outputs = false);
  // Times every launch of the `rows` step alone (synchronizing around each), `reps` times; returns
  // the median milliseconds of each launch, in plan order (a chunk: its prompt variant).
  std::vector<std::pair<std::string, double>> profile(int64_t rows, int reps);
  const plan::DeviceModel& device_model() const { return *model_; }
  const ModelProgram& program() const { return program_; }
  void synchronize();
  // The persistent decode step, when on (made by the first decode step); null otherwise.
  const PersistentStep* persistent_step() const { return persistent_.get(); }

 private:
  void run_rows(std::span<const int32_t> tokens, int64_t start, bool last_row_outputs = false);
  void run_decode_row(int32_t token, int64_t position);  // one token at a checked position
  plan::StepPlan& mutable_plan(int64_t rows, bool last_row_outputs = false);
  // How many of n steps one chain runs (1: no chain), and a chain's run: the step's graph of its
  // position's form (graph_of; made on first use: the step's launches, then capture_tail's, which
  // advance its inputs on the device) replayed for each step, back to back, the host waiting once;
  // returns each step's id (the tail's ids[position % decode_chain]).
  int64_t chain_length(int64_t n) const;
  void check_steps(int32_t token, int64_t position, int64_t n) const;  // n >= 1 steps in the context, a token id
  std::vector<int32_t> run_chain(plan::StepPlan& p, int32_t token, int64_t position, int64_t n,
                                 const std::function<std::unique_ptr<cuda::CapturedGraph>&(plan::StepForm)>& graph_of,
                                 const std::function<void()>& capture_tail);
  void make_head_buffers();  // run_head's and the sampled chains' buffers, on first use
  // The stream's settings a decode or prompt step of `rows` runs under (programmatic launch, eviction).
  void set_launch_settings(int64_t rows);

  const GgufFile& file_;
  GpuEngineOptions options_;
  int64_t n_vocab_ = 0;
  ModelProgram program_;
  std::unique_ptr<plan::DeviceModel> model_;
  std::map<std::pair<int64_t, bool>, std::unique_ptr<plan::StepPlan>> plans_;  // (rows, last_row_outputs)
  std::unique_ptr<cuda::Stream> stream_;
  std::map<plan::StepForm, std::unique_ptr<cuda::CapturedGraph>> decode_graphs_;  // one a form used
  std::unique_ptr<PersistentStep> persistent_;
  // Chained decode steps (run_argmax_steps): the step and its advance, a graph a form; and the chain's
  // ids, which the device writes into page-locked memory by position (decode_chain int32 slots, made
  // with the first chain: the graphs hold its address).
  std::map<plan::StepForm, std::unique_ptr<cuda::CapturedGraph>> chain_graphs_;
  cuda::PinnedBuffer chain_ids_;
  // Sampled chains: a graph a (form, top-k); the head's keys and the kernel's parameters on the device
  // (top_p, min_p, temperature, then a uniform a slot), copied from page-locked staging.
  std::map<std::pair<plan::StepForm, int64_t>, std::unique_ptr<cuda::CapturedGraph>> sampled_graphs_;
  cuda::DeviceBuffer chain_keys_, chain_params_;
  cuda::PinnedBuffer chain_params_staging_;
  cuda::PinnedBuffer one_logits_;  // run_one's copy of a decode step's logits (n_vocab f32), made on first use
  // run_head's: the kernel's keys, the penalized tokens and their logits (page-locked, the kernel
  // reads and writes them in place), its workspace, and the head read back; made on first use.
  cuda::PinnedBuffer head_io_;
  cuda::DeviceBuffer head_workspace_;
  std::vector<float> head_values_, head_penalized_values_;
  std::vector<int32_t> head_tokens_;
  uint32_t head_calls_ = 0;  // tags each head (the kernel writes it after the head)
};

// The graph of a cut of the engine's program (for `lathe program --graph` and tests).
graph::Graph lift_cut(const GgufFile& file, const ModelProgram& program, int64_t rows);

}  // namespace lathe
