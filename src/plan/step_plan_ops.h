// Internal to plan/: the builder of a StepPlan (storage in step_plan.cpp, launches in
// step_plan_ops.cpp).
#pragma once

#include "kernels/attention_launch.h"
#include "kernels/elementwise_launch.h"
#include "kernels/gemv_multi_launch.h"
#include "plan/arena.h"
#include "plan/step_plan.h"

#include <map>
#include <optional>
#include <set>

namespace lathe::plan {

constexpr int64_t kGemvRows = 8;  // the most rows the decode products take; more run as a GEMM
constexpr int64_t kWgmmaRows = 1024;  // a chunk's f16 products run on wgmma from this many rows (sm_90a)

int64_t numel(const graph::Tensor& t);
// Bytes of the int8 form a GEMV reads (none beyond kGemvRows rows, or under the f32 contract).
int64_t gemv_quantized_bytes(int64_t rows, int64_t k, kernels::Activations a);
kernels::WeightMatrix weight_of(const DeviceModel& m, const graph::Tensor& t);  // a constant as the kernels read it
std::string base_name(const std::string& ssa);
bool moe_kernels_enabled();     // the mixture's decode kernels (LATHE_MOE_KERNELS=0: off)
bool moe_one_launch_enabled();  // mixture_one_launch honoured (LATHE_MOE_ONE_LAUNCH=1)
bool moe_by_slot_enabled();    // experts_by_slot honoured (LATHE_MOE_BY_SLOT=1)
bool moe_split_enabled();      // ffn_split honoured on a mixture (LATHE_MOE_SPLIT=1: slower so far; or ring)
bool moe_split_ring();         // ... in its one-wave form (LATHE_MOE_SPLIT=ring: not yet run on a GPU)
enum class OSplitForm { none, redundant, cluster };
OSplitForm o_split_form();     // o_split honoured, and how (LATHE_O_SPLIT=1 or cluster: step_plan_osplit.cpp)
bool attention_half_enabled();  // attention_half honoured (LATHE_ATTENTION_HALF=1: step_plan_osplit.cpp)
// LATHE_EPILOGUE_SKIP=attention,swiglu,moe (a measuring knob): those producers leave quantize_epilogue's
// int8 form to the product that reads it.
bool epilogue_skipped(std::string_view kind);

struct StepPlan::Builder {
  Builder(const graph::Graph& g, const DeviceModel& m, const PlanOptions& o, StepPlan& p);

  const graph::Graph& g;
  const DeviceModel& m;
  const PlanOptions& o;
  StepPlan& p;

  struct Store {
    int64_t bytes = 0;
    int first = 0, last = 0;
    bool persistent = false;  // a returned value: outside the arena
    int request = -1;
    int64_t offset = 0;
    CUdeviceptr ptr = 0;
  };
  std::vector<int> root;            // tensor -> the tensor whose storage it uses (-1: none)
  std::vector<int> last_consumer;   // tensor -> the last node reading it
  std::map<int, Store> stores;      // root tensor -> storage
  std::vector<ArenaRequest> scratch_requests;
  std::vector<CUdeviceptr> scratch_ptrs;
  std::vector<std::vector<int>> group_scratch;  // group -> its scratch requests
  std::vector<bool> copy_first;     // group -> copy the input into the output before working in place
  std::map<int, int> quantized;     // activation tensor -> the scratch request holding the form products
                                    // read: int8 (reads_quantized) or f16 (reads_half; chunks only)
  std::map<int, bool> quantize_in;  // product group -> it makes that form (the first to read it)
  std::map<int, int> quantize_out;  // producer group -> its scratch slot for its output's int8 form
  std::map<int, std::vector<bool>> rope_copies;  // rope_append group -> per rope (graph order): copy its operand in

  void own(int tensor, int group);
  void view(int tensor, int of);
  bool may_overwrite(int tensor, int node) const;
  // The node's output takes its first operand's storage when nothing reads that after the node;
  // else its own, with the operand copied in first (copy_first) so the kernel can work in place.
  void in_place(const graph::Node& n, int group);
  int scratch(int group, int64_t bytes);
  std::vector<int> scratch_for(int group);  // step_plan_ops.cpp: what a group's kernels need
  std::vector<int> scratch_for_kernels(int group);  // ... less its output's int8 form (quantize_epilogue)
  kernels::QuantizedOut quantized_output(int group) const;  // that form's slot, or none
  bool epilogue_writes(int group) const;  // a marked group writes the form where it runs
  struct AttentionLaunch {  // a decode attention's launch (step_plan_ops.cpp)
    kernels::AttentionShape shape;
    kernels::AttentionOptionsGpu opt;
    kernels::AttentionSplit split;        // for every position (n_ctx visible slots)
    kernels::AttentionSplit split_short;  // StepForm::short_positions' (long_from visible slots)
    kernels::AttentionSplit split_long;   // StepForm::long_positions' (by PlanOptions::long_granule)
    CUdeviceptr out = 0, q = 0, kc = 0, vc = 0, seqs = 0, pos = 0, ws = 0, tickets = 0;
    // The split and the tickets (0: the merge kernel) of the step's form.
    const kernels::AttentionSplit& split_in(StepForm f) const {
      return f == StepForm::short_positions ? split_short : f == StepForm::long_positions ? split_long : split;
    }
    CUdeviceptr tickets_in(StepForm f) const { return f == StepForm::long_positions ? 0 : tickets; }
  };
  AttentionLaunch attention_launch(const graph::Node& attention, int group) const;
  std::string forms_note(const AttentionLaunch& at) const;
  void assign_storage();
  void place();
  CUdeviceptr ptr(int tensor) const;
  CUdeviceptr input_ptr(lang::ValueKind kind) const;
  CUdeviceptr scratch_ptr(int group, int k) const {
    return scratch_ptrs.at(static_cast<size_t>(group_scratch.at(static_cast<size_t>(group)).at(static_cast<size_t>(k))));
  }
  void emit(int group);  // step_plan_ops.cpp
  kernels::ElemStep elem_step(const graph::Node& e, int value) const;  // e's op on the run's value
  bool reads_quantized(const graph::Node& product) const;  // the product reads its input's int8 form
  bool reads_half(const graph::Node& product) const;       // ... its f16 form (a chunk on f16 tensor cores)
  void emit_product(const graph::Node& n, int group, bool quantize);
  void emit_merged(int group);  // merged_products, gate_up_swiglu
  void emit_norm_prologue(int group);
  kernels::NormPrologue norm_prologue_of(const fuse::Group& grp);
  void emit_mixture(int group, bool norm_prologue = false);  // norm_prologue: the group is [add, norm, mixture]
  // router_epilogue: whether the product group's launch takes the mixture group's router (decided once, in
  // assign_storage: the two maps), and that launch.
  bool takes_router_epilogue(int product_group, int mixture_group) const;
  std::map<int, int> router_epi_of_mixture, router_epi_of_product;  // one group -> the other
  void emit_router_epilogue(const graph::Node& product, int group, bool quantize);
  // norm_epilogue (step_plan_norm.cpp): whether the product group's launch forms the norm group's sum,
  // x's int8 form and the parts (decided once, in assign_storage: the two maps), and that launch.
  bool takes_norm_epilogue(int product_group, int norm_group) const;
  void assign_norm_epilogues();
  std::map<int, int> norm_epi_of_norm, norm_epi_of_product;  // one group -> the other
  std::map<int, int> norm_epi_parts;  // norm group -> the scratch slot of the parts
  void emit_norm_epilogue(const graph::Node& product, int group, bool quantize);
  std::vector<kernels::WeightMatrix> norm_group_matrices(const fuse::Group& grp) const;
  // ffn_split (step_plan_ffn.cpp): whether the feed-forward group's launch takes the down product's
  // group and forms the next norm group's sum in fixed point (decided once, in assign_storage), and
  // that launch.
  struct FfnSplitTaken {
    int down_group = -1;  // -1: a mixture's group (its launch: moe_split)
    int sum = 0;  // the fixed-point sum it adds into: ffn_sums_'s slot
  };
  bool takes_ffn_split(int ffn_group, int down_group, int next_group) const;
  void assign_ffn_splits();
  std::map<int, FfnSplitTaken> ffn_split_of_ffn;  // feed-forward group -> what it takes
  std::map<int, int> ffn_sum_of_norm;             // next norm group -> the sum it reads
  std::set<int> ffn_split_downs;                  // down groups whose product the launch before ran
  int64_t ffn_split_embd = 0;                     // n_embd of every taken launch (the sums' length)
  std::map<int, std::pair<CUdeviceptr, CUdeviceptr>> gate_up_levels;  // feed-forward group -> its levels-layout gate, up
  void emit_ffn_split(int ffn_group);
  const graph::Tensor& ffn_split_down(int ffn_group, int down_group) const;
  size_t relaid_bytes_of(int ffn_group) const;
  CUdeviceptr ffn_sum(int i) const;  // fixed-point sum i (mod their count)
  // o_split (step_plan_osplit.cpp): the attention groups whose launch, in the decode step's short form,
  // also runs the o product after them, adding o's output into the residual's fixed-point sum (the one
  // the layer's q/k/v launch read, which its feed-forward launch then reads); decided once, after
  // assign_ffn_splits. In the long form the two launches run as before.
  struct OSplitTaken {
    int o_group = -1;
    int sum = 0;           // the fixed-point sum (ffn_sums_'s slot)
    bool cluster = false;  // the cluster form (attention_o_cluster)
  };
  void assign_o_splits();
  struct OSplitLayer {  // a marked o product's layer (step_plan_osplit.cpp)
    int ga = -1, go = -1, gf = -1, gq = -1;  // the attention's, o's, the feed-forward's and the q/k/v's groups
    int sum = 0;                              // the fixed-point sum the q/k/v group reads (ffn_sums_'s slot)
    kernels::AttentionShape shape;            // the attention's, one row
  };
  std::optional<OSplitLayer> o_split_layer(int o_node, int attention_node) const;
  std::map<int, OSplitTaken> o_split_of_attention;  // attention group -> what its launch takes
  std::map<int, CUdeviceptr> o_split_of_ffn;        // feed-forward group -> the sum it reads in the short form
  std::set<int> short_form_by_attention;            // groups (o; q/k/v) the attention's launch runs in the short form
  // attention_half (step_plan_osplit.cpp): the attention groups whose launch, in the short form, also runs
  // the q/k/v group before them and the o product after them (kernels/attention_o_split_launch.h's
  // attention_half), adding o's output and the residual into a sum of its own (half_sums_) that the
  // feed-forward launch then reads; decided before assign_o_splits, which leaves those layers to it.
  struct AttentionHalfTaken {
    int qkv_group = -1, o_group = -1;
    int sum_in = 0;  // the fixed-point sum the q/k/v group reads (ffn_sums_'s slot)
    int index = 0;   // its place among the taken launches: it adds into half sum index, zeroes index + 1
    kernels::WeightMatrix wq, wk, wv;  // the q/k/v group's matrices (half_matrices)
  };
  void assign_attention_halves();
  std::map<int, AttentionHalfTaken> attention_half_of_attention;  // attention group -> what its launch takes
  CUdeviceptr half_sum(int i) const;  // attention_half's sum i (mod their count)
  std::vector<kernels::WeightMatrix> half_matrices(const graph::Node& attention, const fuse::Group& qkv) const;
  // A rope_append or rope_attention group's parts: q's and k's ropes, their head norms (or none), the
  // appends, and the tensors the group reads: q and k before their norms and ropes, and v.
  struct RopeParts {
    const graph::Node* rq = nullptr;
    const graph::Node* rk = nullptr;
    const graph::Node* norm_q = nullptr;
    const graph::Node* norm_k = nullptr;
    const graph::Node* append_k = nullptr;
    const graph::Node* append_v = nullptr;
    bool k_rope_second = false;  // k's rope is the group's second (graph order)
    int q_in = -1, k_in = -1, v = -1;
  };
  RopeParts rope_parts(const fuse::Group& grp) const;
  bool emitting_long_only = false;
  void long_form_only(size_t first_launch);  // launches from first_launch on run in the long form alone
  bool flash_prefill(const graph::Node& attention) const;  // the chunk's attention on tensor cores
  void add(std::string what, const graph::Node& n, std::function<void(CUstream)> run);
  [[noreturn]] void no_kernel(const graph::Node& n, const std::string& why) const;
};

}  // namespace lathe::plan
