// The mixture's wgmma products compile with NVRTC (no GPU needed): the sm_90a module holds every
// grouped kernel moe_wgmma_launch.cpp names, the main module the router and the f16 gather; the
// launcher's shared-memory sizes mirror the kernels' geometry. With LATHE_MOE_PRECOMPILE=1 the two
// modules are also compiled into the kernel cache ($LATHE_CACHE_DIR) for a device run, as `lathe
// kernels --arch sm_90` would.
#include "gguf/block_format.h"
#include "kernels/library.h"
#include "kernels/moe_prefill_launch.h"
#include "kernels/moe_wgmma_launch.h"
#include "runtime/cuda_api.h"
#include "runtime/cuda_driver.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace lathe::kernels {
namespace {

TEST(MoeWgmma, Sm90aModuleHoldsTheGroupedKernels) {
  std::string why;
  if (!cuda::nvrtc_api(&why)) GTEST_SKIP() << why;
  const std::string src = library_90a_source();
  EXPECT_NE(src.find("// ---- file: gemm_wgmma_rs_moe.cuh"), std::string::npos);
  EXPECT_LT(src.find("// ---- file: gemm_wgmma_rs.cuh"), src.find("// ---- file: gemm_wgmma_rs_moe.cuh"));
  const std::vector<char> cubin = cuda::nvrtc_compile(src, "lathe_kernels_90a.cu", sm90a_options(), "sm_90");
  const std::string bytes(cubin.begin(), cubin.end());
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K})
    for (int bn : {64, 128})
      for (bool gate_up : {true, false}) {
        EXPECT_NE(bytes.find(moe_wgmma_kernel_name(gate_up, t, bn)), std::string::npos);
        EXPECT_LE(moe_wgmma_shared_bytes(t, bn), bn == 64 ? 115712u : 232448u);  // two blocks an SM at 64
      }
  if (const char* v = std::getenv("LATHE_MOE_PRECOMPILE"); v && std::string(v) == "1") {
    cuda::Module::precompile(library_source(), "lathe_kernels.cu", "sm_90");
    cuda::Module::precompile(src, "lathe_kernels_90a.cu", "sm_90", sm90a_options());
  }
}

TEST(MoeWgmma, MainModuleHoldsRouterAndGather) {
  std::string why;
  if (!cuda::nvrtc_api(&why)) GTEST_SKIP() << why;
  const std::string src = library_source();
  EXPECT_EQ(src.find("// ---- file: gemm_wgmma"), std::string::npos);
  EXPECT_NE(src.find("lathe_moe_gather_f16"), std::string::npos);
  EXPECT_NE(src.find("lathe_moe_router_f32"), std::string::npos);
}

TEST(MoeWgmma, SupportsTheRegisterAFormats) {
  const auto stack = [](GgmlType t, int64_t n_out, int64_t k) { return WeightMatrix{t, 0, n_out, k, 8}; };
  EXPECT_TRUE(moe_wgmma_supports(stack(GgmlType::Q8_0, 768, 2048), stack(GgmlType::Q8_0, 768, 2048),
                                 stack(GgmlType::Q8_0, 2048, 768)));
  EXPECT_FALSE(moe_wgmma_supports(stack(GgmlType::Q8_0, 96, 160), stack(GgmlType::Q8_0, 96, 160),
                                  stack(GgmlType::Q8_0, 160, 96)));  // q8_0 rows not 16-byte multiples
  EXPECT_TRUE(moe_wgmma_supports(stack(GgmlType::Q4_K, 256, 512), stack(GgmlType::Q4_K, 256, 512),
                                 stack(GgmlType::Q4_K, 512, 256)));
  EXPECT_FALSE(moe_wgmma_supports(stack(GgmlType::Q4_K, 256, 512), stack(GgmlType::Q8_0, 256, 512),
                                  stack(GgmlType::Q4_K, 512, 256)));
  EXPECT_FALSE(moe_wgmma_supports(stack(GgmlType::F32, 256, 512), stack(GgmlType::F32, 256, 512),
                                  stack(GgmlType::F32, 512, 256)));
}

// The interpreter's replay of the lane's mixture roundings (--lane-rounding) asks moe_prefill_rounds_f16:
// the stacks the wgmma engine takes (shapes only), not the int8 engine's formats or a forced int8.
TEST(MoeWgmma, RoundsF16WhereTheWgmmaEngineRuns) {
  const auto stack = [](GgmlType t, int64_t n_out, int64_t k) { return WeightMatrix{t, 0, n_out, k, 128}; };
  const auto rounds = [&](GgmlType t, int64_t n_embd, int64_t n_ff) {
    return moe_prefill_rounds_f16(stack(t, n_ff, n_embd), stack(t, n_ff, n_embd), stack(t, n_embd, n_ff));
  };
  EXPECT_TRUE(rounds(GgmlType::Q8_0, 2048, 768));   // qwen3-30b-a3b
  EXPECT_TRUE(rounds(GgmlType::Q4_K, 2048, 768));
  EXPECT_FALSE(rounds(GgmlType::Q8_0, 256, 128));   // qwen3moe-tiny: down's q8_0 rows of 136 bytes
  EXPECT_FALSE(rounds(GgmlType::Q2_K, 2048, 768));  // no grouped kernels: 8-row GEMV chunks
  set_moe_prefill_engine(MoePrefillEngine::int8);
  EXPECT_FALSE(rounds(GgmlType::Q8_0, 2048, 768));
  set_moe_prefill_engine(MoePrefillEngine::automatic);
  EXPECT_TRUE(rounds(GgmlType::Q8_0, 2048, 768));
}

}  // namespace
}  // namespace lathe::kernels
