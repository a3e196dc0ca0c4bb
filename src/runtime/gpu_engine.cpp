#include "runtime/gpu_engine.h"

#include "kernels/argmax_launch.h"
#include "kernels/attention_launch.h"
#include "kernels/gemv_launch.h"
#include "kernels/sample_head_launch.h"
#include "kernels/top_candidates_launch.h"
#include "lang/program.h"
#include "model/model_spec.h"
#include "runtime/cuda_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace lathe {

graph::Graph lift_cut(const GgufFile& file, const ModelProgram& program, int64_t rows) {
  const lang::Cut cut = rows == 1 ? lang::Cut{lang::Cut::Kind::decode, 1} : lang::Cut{lang::Cut::Kind::prefill, rows};
  return graph::lift(lang::make_cut(program.program, cut), program.bindings,
                     [&file](const std::string& name) -> std::optional<graph::CheckpointTensor> {
                       const GgufTensor* t = file.find_tensor(name);
                       if (!t) return std::nullopt;
                       return graph::CheckpointTensor{t->type, t->dims};
                     });
}

namespace {
// A whole number >= 0 from the environment, or none where the variable is unset or empty.
std::optional<int64_t> env_count(const char* name) {
  const char* env = std::getenv(name);
  if (!env || !*env) return std::nullopt;
  char* end = nullptr;
  const long long v = std::strtoll(env, &end, 10);
  if (*end != '\0' || v < 0) fail("{} must be a whole number of 0 or more, not '{}'", name, env);
  return v;
}
}  // namespace

GpuEngine::GpuEngine(const GgufFile& file, const GpuEngineOptions& options) : file_(file), options_(options) {
  if (options_.n_ctx <= 0) fail("--ctx must be positive");
  if (options_.max_chunk <= 0) fail("--max-chunk must be positive");
  if (const char* env = std::getenv("LATHE_PERSISTENT"); env && *env) options_.persistent = std::string(env) != "0";
  if (const auto v = env_count("LATHE_ATTN_MERGE_FROM")) options_.long_from = *v;
  if (const auto v = env_count("LATHE_ATTN_LONG_GRANULE")) options_.long_granule = *v;
  if (const auto v = env_count("LATHE_DECODE_CHAIN")) options_.decode_chain = *v;
  if (const char* env = std::getenv("LATHE_SAMPLED_CHAIN"); env && *env) {
    if (std::string(env) != "0" && std::string(env) != "1") fail("LATHE_SAMPLED_CHAIN must be 0 or 1, not '{}'", env);
    options_.sampled_chain = env[0] == '1';
  }
  if (options_.decode_chain < 1 || options_.decode_chain > 1024)
    fail("a chain of greedy decode steps (LATHE_DECODE_CHAIN) must be 1 to 1024 steps, not {}", options_.decode_chain);
  const int64_t slots = kernels::attention_chunk_slots();
  if (options_.long_granule <= 0 || options_.long_granule % slots != 0)
    fail("the long form's split granule (LATHE_ATTN_LONG_GRANULE) must be a positive multiple of {} slots, not {}",
         slots, options_.long_granule);
  if (const char* env = std::getenv("LATHE_WEIGHTS_EVICT_FIRST"); env && *env) {
    if (std::string(env) != "0" && std::string(env) != "1")
      fail("LATHE_WEIGHTS_EVICT_FIRST must be 0 or 1, not '{}'", env);
    options_.weights_evict_first = env[0] - '0';
  }
  if (options_.persistent && options_.long_from > 0)
    fail("a decode step's long form from position {} (--merge-from, LATHE_ATTN_MERGE_FROM) needs the graph of "
         "kernels: the persistent step runs one form for every position",
         options_.long_from);
  options_.max_chunk = std::min(options_.max_chunk, options_.n_ctx);  // a chunk never exceeds the cache
  const ModelSpec spec = read_model_spec(file);
  if (options_.long_from < 0) options_.long_from = kernels::attention_first_split_position();
  if (options_.weights_evict_first < 0) options_.weights_evict_first = spec.n_expert == 0 ? 1 : 0;
  if (options_.persistent) options_.weights_evict_first = 0;  // its phases are the plain products' bodies
  n_vocab_ = spec.n_vocab;
  program_ = model_program(file, spec, options_.n_ctx, options_.program_file);
  fuse::check_rule_names(options_.held);
  // The persistent step's phases are rope_append's and the attention's bodies (step_persistent.cuh),
  // and the plain products' and the merged products' with the norm in their prologue (x added, not
  // a fixed-point sum: ffn_split's launch is no phase).
  if (options_.persistent) options_.held.insert({"rope_attention", "norm_epilogue", "ffn_split", "o_split", "attention_half"});
  const graph::Graph decode = lift_cut(file, program_, 1);
  const graph::Graph chunk = lift_cut(file, program_, options_.max_chunk);
  std::set<std::string> constants;
  for (const graph::Tensor& t : decode.tensors)
    if (t.role == graph::Role::constant) constants.insert(t.checkpoint_name);
  plan::CacheShape caches{spec.n_layer, 1, options_.n_ctx, spec.n_head_kv, spec.head_dim};
  // Steps: the decode row, and a chunk in both variants (all rows' logits; the last row's).
  const size_t reserve = plan::StepPlan::estimate_bytes(decode, caches) + 2 * plan::StepPlan::estimate_bytes(chunk, caches);
  model_ = std::make_unique<plan::DeviceModel>(file, constants, caches, reserve, options_.gpu_memory);
  stream_ = std::make_unique<cuda::Stream>();
}

GpuEngine::~GpuEngine() = default;

std::string GpuEngine::name() const {
  return fmt::format("gpu ({}, {})", cuda::Context::get().info().name, kernels::activations_name(options_.activations));
}

const plan::StepPlan& GpuEngine::plan(int64_t rows, bool last_row_outputs) {
  return mutable_plan(rows, last_row_outputs);
}

plan::StepPlan& GpuEngine::mutable_plan(int64_t rows, bool last_row_outputs) {
  last_row_outputs = last_row_outputs && rows > 1;
  auto it = plans_.find({rows, last_row_outputs});
  if (it != plans_.end()) return *it->second;
  const graph::Graph g = lift_cut(file_, program_, rows);
  plan::PlanOptions po;
  po.activations = options_.activations;
  po.held = options_.held;
  po.last_row_outputs = last_row_outputs;
  // The persistent step collects one set of launches for every position: the one form.
  po.long_from = options_.persistent ? 0 : options_.long_from;
  po.long_granule = options_.long_granule;
  return *plans_.emplace(std::make_pair(rows, last_row_outputs), std::make_unique<plan::StepPlan>(g, *model_, po))
              .first->second;
}

void GpuEngine::synchronize() { stream_->synchronize(); }

std::vector<std::pair<std::string, double>> GpuEngine::profile(int64_t rows, int reps) {
  plan::StepPlan& p = mutable_plan(rows, true);
  kernels::set_weights_evict_first(options_.weights_evict_first == 1);
  std::vector<int32_t> t(static_cast<size_t>(rows), 1), pos(static_cast<size_t>(rows)), seq(static_cast<size_t>(rows), 0);
  for (int64_t r = 0; r < rows; ++r) pos[static_cast<size_t>(r)] = static_cast<int32_t>(r);
  p.set_inputs(t, pos, seq, stream_->handle());
  std::vector<std::vector<double>> times(p.launches().size());
  cuda::EventTimer timer;
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t i = 0; i < p.launches().size(); ++i) {
      timer.start(*stream_);
      p.launches()[i].run(stream_->handle());
      times[i].push_back(timer.stop(*stream_));
    }
  }
  std::vector<std::pair<std::string, double>> out;
  for (size_t i = 0; i < times.size(); ++i) {
    std::sort(times[i].begin(), times[i].end());
    out.push_back({p.launches()[i].what, times[i][times[i].size() / 2]});
  }
  return out;
}

void GpuEngine::set_launch_settings(int64_t rows) {
  // Programmatic dependent launch pays for the decode step's chain of small kernels (qwen3-8b Q8_0
  // tg128 223 -> 248 tok/s) and costs a prefill chunk's large ones (pp512 1363 -> 1176): docs/perf.md.
  cuda::set_programmatic_launch(rows <= 8);
  kernels::set_weights_evict_first(options_.weights_evict_first == 1);  // (the launchers': this engine's choice)
}

void GpuEngine::run_rows(std::span<const int32_t> tokens, int64_t start, bool last_row_outputs) {
  const int64_t rows = static_cast<int64_t>(tokens.size());
  plan::StepPlan& p = mutable_plan(rows, last_row_outputs);
  std::vector<int32_t> t(tokens.begin(), tokens.end()), pos(static_cast<size_t>(rows)), seq(static_cast<size_t>(rows), 0);
  for (int64_t r = 0; r < rows; ++r) {
    if (t[static_cast<size_t>(r)] < 0 || t[static_cast<size_t>(r)] >= n_vocab_)
      fail("token id {} is outside the vocabulary of {} tokens", t[static_cast<size_t>(r)], n_vocab_);
    pos[static_cast<size_t>(r)] = static_cast<int32_t>(start + r);
  }
  stream_->synchronize();  // the staging of the inputs is reused; the last step must be done with them
  p.set_inputs(t, pos, seq, stream_->handle());
  set_launch_settings(rows);
  if (rows == 1 && options_.persistent && !persistent_)
    persistent_ = std::make_unique<PersistentStep>(p, options_.activations, PersistentOptions::from_environment(),
                                                   stream_->handle());
  const auto run_step = [&] {
    if (rows == 1 && persistent_) persistent_->run(stream_->handle());
    else p.run(stream_->handle());
  };
  if (rows == 1) p.set_form(p.form_for(start));
  if (rows == 1 && options_.use_graph) {
    std::unique_ptr<cuda::CapturedGraph>& graph = decode_graphs_[p.form()];
    if (!graph) {
      graph = std::make_unique<cuda::CapturedGraph>();
      graph->begin(*stream_);
      run_step();
      graph->end(*stream_);
    }
    graph->replay(*stream_);
  } else if (rows == 1) {
    run_step();
  } else {
    p.run(stream_->handle());
  }
}

std::vector<float> GpuEngine::run(std::span<const int32_t> tokens, int64_t start, bool all_logits) {
  return run_in_chunks(tokens, start, all_logits, options_.n_ctx, options_.max_chunk, n_vocab_,
                       [this](std::span<const int32_t> chunk, int64_t at, int64_t want) {
                         // A chunk whose logits are read for its last row at most computes only that row's.
                         const int64_t rows = static_cast<int64_t>(chunk.size());
                         const bool last_row = want <= 1;
                         run_rows(chunk, at, last_row);
                         return want > 0 ? plan(rows, last_row).read_f32("logits", stream_->handle(), want * n_vocab_)
                                         : std::vector<float>();
                       });
}

void GpuEngine::run_decode_row(int32_t token, int64_t position) {
  const int32_t one[1] = {token};
  if (position < 0 || position >= options_.n_ctx) fail("position {} is outside the context", position);
  run_rows(one, position);
}

int32_t GpuEngine::run_greedy(int32_t token, int64_t position) {
  run_decode_row(token, position);
  return plan(1).read_ids("next", stream_->handle()).at(0);
}

std::span<const float> GpuEngine::run_one(int32_t token, int64_t position) {
  run_decode_row(token, position);
  const size_t bytes = static_cast<size_t>(n_vocab_) * sizeof(float);
  if (one_logits_.bytes() < bytes) one_logits_ = cuda::PinnedBuffer(bytes);
  cuda::check(cuda::driver().cuMemcpyDtoHAsync(one_logits_.data(), plan(1).output_ptr("logits"), bytes, stream_->handle()),
              "reading the step's logits");
  stream_->synchronize();
  return {static_cast<const float*>(one_logits_.data()), static_cast<size_t>(n_vocab_)};
}

int64_t GpuEngine::max_head() const { return std::min(n_vocab_, kernels::kMaxTopCandidates); }

void GpuEngine::make_head_buffers() {
  constexpr size_t kMax = static_cast<size_t>(kernels::kMaxTopCandidates);
  if (head_io_.bytes() != 0) return;
  head_io_ = cuda::PinnedBuffer(kMax * (8 + 4 + 4) + 16);
  head_workspace_ = cuda::DeviceBuffer(kernels::top_candidates_workspace_bytes(n_vocab_, kernels::kMaxTopCandidates),
                                       "the top candidates' workspace");
  head_workspace_.zero();
  chain_keys_ = cuda::DeviceBuffer(kMax * 8, "the sampled chain's head");
  const size_t params = static_cast<size_t>(kernels::kSampleParamsBefore + options_.decode_chain) * 8;
  chain_params_ = cuda::DeviceBuffer(params, "the sampled chain's parameters");
  chain_params_staging_ = cuda::PinnedBuffer(params);
}

LogitHead GpuEngine::run_head(int32_t token, int64_t position, int64_t m, std::span<const int32_t> penalized) {
  const int64_t n_pen = static_cast<int64_t>(penalized.size());
  if (m < 1 || m > max_head() || n_pen > kernels::kMaxTopCandidates)
    fail("the head of a step's logits: {} best and {} penalized tokens (at most {} each)", m, n_pen, max_head());
  constexpr size_t kMax = static_cast<size_t>(kernels::kMaxTopCandidates);
  make_head_buffers();
  auto* keys = static_cast<uint64_t*>(head_io_.data());
  auto* ids = reinterpret_cast<int32_t*>(keys + kMax);
  auto* pen_values = reinterpret_cast<float*>(ids + kMax);
  for (int64_t i = 0; i < n_pen; ++i) {
    if (penalized[static_cast<size_t>(i)] < 0 || penalized[static_cast<size_t>(i)] >= n_vocab_)
      fail("penalized token {} is outside the vocabulary of {}", penalized[static_cast<size_t>(i)], n_vocab_);
    ids[i] = penalized[static_cast<size_t>(i)];
  }
  run_decode_row(token, position);
  const CUdeviceptr io = head_io_.device_ptr();
  // The kernel's last block tags its head with this call's number: a head left from an earlier call
  // (its last block not knowing it was last) is an error, not a silent draw.
  auto* done = reinterpret_cast<volatile uint32_t*>(pen_values + kMax);
  const uint32_t seq = ++head_calls_;
  kernels::top_candidates(io, plan(1).output_ptr("logits"), n_vocab_, m, io + kMax * 8, n_pen, io + kMax * 12,
                          head_workspace_.ptr(), stream_->handle(), io + kMax * 16, seq);
  stream_->synchronize();
  if (*done != seq) throw InternalError("the top candidates kernel did not finish its head");
  head_values_.resize(static_cast<size_t>(m));
  head_tokens_.resize(static_cast<size_t>(m));
  for (size_t i = 0; i < static_cast<size_t>(m); ++i) {
    head_values_[i] = kernels::top_candidate_value(keys[i]);
    head_tokens_[i] = kernels::top_candidate_index(keys[i]);
  }
  head_penalized_values_.assign(pen_values, pen_values + n_pen);
  return {head_values_, head_tokens_, penalized, head_penalized_values_, n_vocab_};
}

int64_t GpuEngine::chain_length(int64_t n) const {
  if (options_.decode_chain == 1 || !options_.use_graph || options_.persistent) return 1;
  return std::min(n, options_.decode_chain);
}

std::vector<int32_t> GpuEngine::run_chain(plan::StepPlan& p, int32_t token, int64_t position, int64_t n,
                                          const std::function<std::unique_ptr<cuda::CapturedGraph>&(plan::StepForm)>& graph_of,
                                          const std::function<void()>& capture_tail) {
  const int64_t slots = options_.decode_chain;
  if (chain_ids_.bytes() == 0) chain_ids_ = cuda::PinnedBuffer(static_cast<size_t>(slots) * 4);
  stream_->synchronize();  // the inputs' staging is reused (run_rows)
  // The graphs of the forms the chain's positions take, captured before any replay.
  for (const int64_t at : {position, position + n - 1}) {
    std::unique_ptr<cuda::CapturedGraph>& graph = graph_of(p.form_for(at));
    if (graph) continue;
    p.set_form(p.form_for(at));
    set_launch_settings(1);
    graph = std::make_unique<cuda::CapturedGraph>();
    graph->begin(*stream_);
    p.run(stream_->handle());
    capture_tail();
    graph->end(*stream_);
  }
  p.set_inputs({token}, {static_cast<int32_t>(position)}, {0}, stream_->handle());
  for (int64_t j = 0; j < n; ++j) graph_of(p.form_for(position + j))->replay(*stream_);
  stream_->synchronize();
  const auto* ids = static_cast<const volatile int32_t*>(chain_ids_.data());
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) out[static_cast<size_t>(j)] = ids[(position + j) % slots];
  return out;
}

void GpuEngine::check_steps(int32_t token, int64_t position, int64_t n) const {
  if (n < 1) fail("a chain of {} decode steps", n);
  if (position < 0 || position + n > options_.n_ctx)
    fail("decode steps at positions {} to {} pass the context of {}", position, position + n - 1, options_.n_ctx);
  if (token < 0 || token >= n_vocab_) fail("token id {} is outside the vocabulary of {} tokens", token, n_vocab_);
}

std::vector<int32_t> GpuEngine::run_argmax_steps(int32_t token, int64_t position, int64_t n) {
  check_steps(token, position, n);
  plan::StepPlan& p = mutable_plan(1);
  if (chain_length(n) == 1 || !p.has_output("next")) return {run_argmax(token, position)};
  return run_chain(
      p, token, position, chain_length(n),
      [&](plan::StepForm f) -> std::unique_ptr<cuda::CapturedGraph>& { return chain_graphs_[f]; },
      [&] {
        kernels::step_advance(p.output_ptr("next"), p.tokens_ptr(), p.positions_ptr(), chain_ids_.device_ptr(),
                              static_cast<int>(options_.decode_chain), stream_->handle());
      });
}

std::vector<int32_t> GpuEngine::run_sampled_steps(int32_t token, int64_t position, int64_t n, const SamplerOptions& o,
                                                  std::span<const double> uniforms) {
  check_steps(token, position, n);
  if (static_cast<int64_t>(uniforms.size()) < n) fail("a chain of {} sampled steps with {} uniforms", n, uniforms.size());
  if (!(o.temperature > 0) || o.repeat_penalty != 1.0 || o.top_k < 1) return {};
  if (!options_.sampled_chain || options_.decode_chain == 1 || !options_.use_graph || options_.persistent) return {};
  const int64_t m = std::min<int64_t>(o.top_k, n_vocab_);
  if (m > max_head()) return {};
  plan::StepPlan& p = mutable_plan(1);
  const int64_t chain = chain_length(n), slots = options_.decode_chain;
  make_head_buffers();
  stream_->synchronize();  // the parameters' staging is reused
  auto* params = static_cast<double*>(chain_params_staging_.data());
  params[0] = o.top_p;
  params[1] = o.min_p;
  params[2] = o.temperature;
  for (int64_t j = 0; j < chain; ++j)
    params[kernels::kSampleParamsBefore + (position + j) % slots] = uniforms[static_cast<size_t>(j)];
  cuda::check(cuda::driver().cuMemcpyHtoDAsync(chain_params_.ptr(), params,
                                              static_cast<size_t>(kernels::kSampleParamsBefore + slots) * 8,
                                              stream_->handle()),
              "copying the sampler's parameters");
  return run_chain(
      p, token, position, chain,
      [&](plan::StepForm f) -> std::unique_ptr<cuda::CapturedGraph>& { return sampled_graphs_[{f, m}]; },
      [&] {
        kernels::top_candidates(chain_keys_.ptr(), p.output_ptr("logits"), n_vocab_, m, 0, 0, 0,
                                head_workspace_.ptr(), stream_->handle());
        kernels::sample_head_advance(chain_keys_.ptr(), m, chain_params_.ptr(), p.tokens_ptr(), p.positions_ptr(),
                                     chain_ids_.device_ptr(), static_cast<int>(slots), stream_->handle());
      });
}

int32_t GpuEngine::run_argmax(int32_t token, int64_t position) {
  return plan(1).has_output("next") ? run_greedy(token, position) : Engine::run_argmax(token, position);
}

}  // namespace lathe
