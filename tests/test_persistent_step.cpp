// The persistent decode step's host rules (runtime/persistent_step.h), with no GPU: which launches
// become phases of the persistent kernel, and how consecutive ones group into persistent launches.
#include "runtime/persistent_step.h"

#include <gtest/gtest.h>

namespace lathe {
namespace {

using kernels::Activations;

TEST(PersistentStep, PhaseKindsFollowTheKernelAndTheContract) {
  EXPECT_EQ(persistent_phase_kind("lathe_gemv1_q8_0_int8x2", Activations::int8x2), 1);
  EXPECT_EQ(persistent_phase_kind("lathe_gemv1_q6_k_int8", Activations::int8), 3);
  EXPECT_EQ(persistent_phase_kind("lathe_gemvm_q4_k_q6_k_int8x2", Activations::int8x2), 7);
  EXPECT_EQ(persistent_phase_kind("lathe_gemvm_q4_k_int8x2", Activations::int8x2), 5);
  EXPECT_EQ(persistent_phase_kind("lathe_rope_append", Activations::int8), 8);
  EXPECT_EQ(persistent_phase_kind("lathe_attn_decode_128", Activations::int8x2), 10);
  // Another contract's product, kernels the persistent kernel does not run, and near names.
  EXPECT_EQ(persistent_phase_kind("lathe_gemv1_q8_0_int8", Activations::int8x2), 0);
  EXPECT_EQ(persistent_phase_kind("lathe_gemv1_q8_0_int8x2", Activations::int8), 0);
  EXPECT_EQ(persistent_phase_kind("lathe_gemv1_q8_0_int8x2", Activations::f32), 0);
  EXPECT_EQ(persistent_phase_kind("lathe_argmax", Activations::int8x2), 0);
  EXPECT_EQ(persistent_phase_kind("lathe_gemv_q8_0_int8x2", Activations::int8x2), 0);
  EXPECT_EQ(persistent_phase_kind("lathe_attn_decode_128x", Activations::int8x2), 0);
  EXPECT_EQ(persistent_phase_kind("lathe_attn_merge", Activations::int8x2), 0);
}

TEST(PersistentStep, RunsAreMaximalAndLongEnough) {
  using Runs = std::vector<std::pair<size_t, size_t>>;
  EXPECT_EQ(persistent_runs({}), Runs{});
  EXPECT_EQ(persistent_runs({0, 0}), Runs{});
  EXPECT_EQ(persistent_runs({1, 8, 10, 1, 4, 1}), (Runs{{0, 6}}));
  // The gather before and the head after stay launches; a lone phase between launches stays one too.
  EXPECT_EQ(persistent_runs({0, 4, 8, 10, 1, 0, 1, 0, 4, 3}), (Runs{{1, 5}, {8, 10}}));
  EXPECT_EQ(persistent_runs({0, 4, 8, 10, 1, 0, 1, 0, 4, 3}, 1), (Runs{{1, 5}, {6, 7}, {8, 10}}));
  EXPECT_EQ(persistent_runs({2, 2, 2}, 4), Runs{});
}

}  // namespace
}  // namespace lathe
