// The plan of one cut on the device: a kernel (or a few) for every group of the fusion plan, with
// its launch shape and the device pointers it reads and writes; every step-local array placed in
// the arena by its lifetime. Running the plan is replaying its launches: in order on a stream, or
// captured once as a CUDA graph.
//
// An op the lane has no kernel for is refused naming the op, its statement and line; a kernel's
// launcher refuses a shape it does not cover (a head size, a block format) naming the field.
#pragma once

#include "fuse/fusion.h"
#include "graph/graph.h"
#include "kernels/gemv_launch.h"
#include "kernels/rope_launch.h"
#include "plan/device_model.h"
#include "runtime/cuda_driver.h"

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace lathe::plan {

// The forms a step runs in. Every step has the form for any position. A decode step (one row) with
// PlanOptions::long_from > 0 has two more, each valid for a range of positions and captured as a
// graph of its own (runtime/gpu_engine.h): below long_from the decode attention is planned for
// long_from visible slots (fewer split blocks launched, the same splits a row uses, so the same
// bits); from long_from on its splits are merged by a launch of their own (kernels/attention_launch.h;
// the same bits as the last split's in-block merge), which beats the in-block merge where rows split
// and costs a launch where they do not (docs/perf.md, eighteenth session).
enum class StepForm { any_position, short_positions, long_positions };

struct PlanOptions {
  kernels::Activations activations = kernels::Activations::int8x2;
  std::set<std::string> held;  // fusion rules held back
  // A prompt chunk whose caller reads the returned values (logits, next) of its last row only: the
  // product that makes them and the argmax run on that row alone (the other rows' are not written).
  bool last_row_outputs = false;
  int64_t long_from = 0;  // > 0: a decode step's short and long forms split at this position (above)
  // The long form's split lengths are multiples of this many slots (kernels::plan_attention_split's
  // granule; 0: the one form's, 128). With the merge in a launch of its own, shorter splits add no
  // merging block's work, and 16 keeps every split's block busy just past a multiple of the splits:
  // qwen3-8b Q8_0 +0.7-1.1% at 4,096 of context, and the long form then pays on qwen3-0.6b too (+2.8%
  // at 1,024, +4.5% at 4,096; docs/perf.md, eighteenth and nineteenth sessions). The
  // long form then adds its partials in another grouping than the one form: equal within the
  // contract, not bit for bit (128 gives the one form's bits).
  int64_t long_granule = 16;
  // Constants the plan re-lays from the checkpoint at load (ffn_split's down by slices) may be taken
  // (`lathe emit`'s program forms them at its load from StepPlan::relays()); false: the file's tensors
  // as they are.
  bool relaid_constants = true;
};

// A constant the plan re-lays from a checkpoint tensor at load (ffn_split's), as a recipe over the
// tensor's bytes (kernels/q8_0_relay.h): by 32-column slices (n_expert matrices [e][f], where f > 0),
// then in the levels layout by groups of `group` blocks (where group > 0). `lathe emit`'s program forms
// the same bytes at its load.
struct Relay {
  CUdeviceptr ptr = 0;    // the plan's device copy (the bytes at its start)
  std::string weight;     // the checkpoint tensor
  int64_t n_expert = 1, e = 0, f = 0, group = 0;
};

struct Launch {
  std::string what;                         // "gemv q8_0 [1 x 4096] . [12288 x 4096]^T  (line 29)"
  std::function<void(CUstream)> run;
};

class StepPlan {
 public:
  StepPlan(const graph::Graph& g, const DeviceModel& model, const PlanOptions& options);
  StepPlan(const StepPlan&) = delete;
  StepPlan& operator=(const StepPlan&) = delete;

  int64_t rows() const { return rows_; }
  // Copies the rows' tokens, positions and sequences to the device (async on the stream).
  void set_inputs(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions,
                  const std::vector<int32_t>& sequences, CUstream stream);
  void run(CUstream stream) const;
  // The returned values: f32 activations or int32 ids, row after row (synchronous copy); read_f32
  // copies only the last `last_values` values when that is >= 0.
  std::vector<float> read_f32(const std::string& output, CUstream stream, int64_t last_values = -1) const;
  std::vector<int32_t> read_ids(const std::string& output, CUstream stream) const;
  CUdeviceptr output_ptr(const std::string& output) const;
  bool has_output(const std::string& output) const;
  // Where set_inputs puts the rows' tokens, positions and sequences (int32 each; for `lathe emit`).
  CUdeviceptr tokens_ptr() const { return tokens_; }
  CUdeviceptr positions_ptr() const { return positions_; }
  CUdeviceptr sequences_ptr() const { return sequences_; }

  // The form a step at `position` runs in: any_position unless the plan has ranges (long_from).
  StepForm form_for(int64_t position) const;
  // launches() run in form `f` from now on (a captured graph keeps the form it was captured in).
  // Refuses a range form the plan does not have.
  void set_form(StepForm f);
  StepForm form() const { return form_; }

  const std::vector<Launch>& launches() const { return launches_; }
  const std::vector<Relay>& relays() const { return relays_; }  // the re-laid constants, by recipe
  const fuse::FusionPlan& fusion() const { return fusion_; }
  size_t arena_bytes() const { return arena_.bytes(); }
  std::string describe() const;  // one line a launch

  // Device bytes a graph's steps need besides weights and caches, for residence, without a device
  // model: every temporary placed by its lifetime at twice its f32 size (its int8 forms, scratch), the
  // attention and mixture scratch per node, the outputs, and 64 MB. At least the plan's arena.
  static size_t estimate_bytes(const graph::Graph& g, const CacheShape& caches);

  struct Builder;

 private:
  int64_t rows_ = 1;
  int64_t long_from_ = 0;  // 0: the one form
  int64_t long_granule_ = 0;  // the long form's split granule (PlanOptions::long_granule)
  StepForm form_ = StepForm::any_position;
  fuse::FusionPlan fusion_;
  std::vector<Launch> launches_;
  cuda::DeviceBuffer arena_, io_, workspace_;
  cuda::DeviceBuffer tickets_;  // the decode attention's, zero between launches (attention_launch.h)
  cuda::DeviceBuffer moe_sync_;  // the one-launch mixture's barriers, the wide router's count: zero between launches
  cuda::DeviceBuffer moe_h_counts_;  // gate/up's counts of h's blocks (moe_launch.h): zero between launches
  cuda::DeviceBuffer norm_counts_;  // the dealt norm epilogue's counts (norm_epilogue_launch.h): zero between launches
  cuda::DeviceBuffer moe_slot_counts_;  // the experts by slot's counts (moe_launch.h): zero between launches
  CUdeviceptr tokens_ = 0, positions_ = 0, sequences_ = 0;
  std::vector<std::pair<std::string, std::pair<CUdeviceptr, int64_t>>> outputs_;  // name -> (ptr, values)
  std::vector<std::unique_ptr<kernels::RopeTable>> rope_tables_;
  std::vector<cuda::DeviceBuffer> router_columns_;  // router_epilogue's constants (route_epilogue_launch.h)
  std::vector<cuda::DeviceBuffer> ffn_down_slices_;  // ffn_split's down matrices re-laid by slices (ffn_split_launch.h)
  std::vector<cuda::DeviceBuffer> ffn_gate_up_;  // the levels layout's gate and up, a pair a launch
  std::vector<Relay> relays_;  // how each re-laid constant above was formed
  cuda::DeviceBuffer ffn_sums_;  // ffn_split's fixed-point sums, int64 [n_embd] each: zero between their launches
  cuda::DeviceBuffer half_sums_;  // attention_half's, one a taken launch, int64 [n_embd] each (step_plan_osplit.cpp)
  std::vector<int32_t> staging_;
  friend struct Builder;
};

}  // namespace lathe::plan
