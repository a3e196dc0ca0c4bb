// The persistent decode step (kernels/step_persistent.cuh): a planned decode step's launches, run as
// phases of one cooperative launch wherever consecutive launches are of the kinds that kernel runs
// (the decode products, rope with the cache append, the decode attention), and as the plan's own
// launches elsewhere (the embedding gather, the output head, a mixture's kernels). The phases carry
// each launch's own parameter bytes, collected from the plan on the device (cuda::LaunchCollector),
// so the step computes what the plan's launches compute, bit for bit (tests/test_persistent_step_gpu).
//
// On with --persistent or LATHE_PERSISTENT=1; the graph of kernels stays the default until the
// persistent step is measured faster on every model (docs/perf.md).
// Knobs for measuring it (the environment): LATHE_PERSISTENT_TRACE=1 (`lathe bench` prints each
// phase kind's time and one layer's phases with their blocks' finishing times);
// LATHE_PERSISTENT_EARLY=N (chunks a product's warps ask for before the barrier, at least N);
// LATHE_PERSISTENT_PREFETCH_MB (the idle warps' L2 requests, 16 by default). Two give WRONG tokens
// and exist only to time parts: LATHE_PERSISTENT_DRY=1 (barriers alone) and
// LATHE_PERSISTENT_KERNEL=products (a kernel without the rope and attention phases' work).
#pragma once

#include "kernels/gemv_launch.h"
#include "plan/step_plan.h"
#include "runtime/cuda_driver.h"

#include <string>
#include <string_view>
#include <vector>

namespace lathe {

// The phase kind (step_persistent.cuh's lathe_phase_kind) the persistent kernel of contract `a` runs
// a launch of `kernel` as; 0 when it does not run it (another contract's kernel, or any other kernel).
int persistent_phase_kind(std::string_view kernel, kernels::Activations a);

// The runs [begin, end) of consecutive ops that become one persistent launch: every op of a run has
// a kind (kinds[i] != 0), and a run has at least min_ops of them (shorter ones stay launches).
std::vector<std::pair<size_t, size_t>> persistent_runs(const std::vector<int>& kinds, size_t min_ops = 2);

struct PersistentOptions {
  int early = 1;            // chunks a product's warp asks for past its ring before the barrier (at least)
  double prefetch_mb = 16;  // how much of the next product's weights the idle warps of a small phase ask L2 for
  static PersistentOptions from_environment();  // LATHE_PERSISTENT_EARLY, LATHE_PERSISTENT_PREFETCH_MB
};

class PersistentStep {
 public:
  // Collects the plan's launches (nothing runs) and writes the phase tables. A CudaError when the
  // card cannot keep one block of the persistent kernel on every SM.
  PersistentStep(const plan::StepPlan& plan, kernels::Activations a, const PersistentOptions& options,
                 CUstream stream);
  PersistentStep(const PersistentStep&) = delete;
  PersistentStep& operator=(const PersistentStep&) = delete;

  void run(CUstream stream) const;
  size_t launches_replaced() const { return replaced_; }  // plan launches that became phases
  size_t launches() const { return items_.size(); }       // launches a step makes now
  std::string describe() const;
  // With LATHE_PERSISTENT_TRACE=1: the time the last step's phases took, summed by kind (phase time
  // as block 0 sees it: from its start to the next phase's start, the barrier's wait included).
  std::string trace_summary() const;  // after the step has finished

 private:
  struct Item {
    size_t op = 0;           // a plan op replayed, when phases == 0
    CUdeviceptr table = 0;   // else a persistent launch over these phases
    int phases = 0;
    unsigned shared_bytes = 0;
    CUdeviceptr sync = 0;
    CUdeviceptr trace = 0;   // phases + 1 timestamps, when tracing
    size_t first_phase = 0;
  };
  std::vector<int> phase_kinds_;   // of every phase, in table order
  std::vector<cuda::CollectedOp> ops_;
  std::vector<Item> items_;
  cuda::DeviceBuffer tables_, sync_, trace_;
  CUfunction kernel_ = nullptr;
  int blocks_ = 0;
  size_t replaced_ = 0;
};

}  // namespace lathe
