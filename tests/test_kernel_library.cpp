// The kernel library compiles with NVRTC for Hopper (sm_90) on any machine with the CUDA toolkit,
// GPU or not: a kernel that does not compile fails here, in CI, before it reaches a device.
#include "kernels/library.h"
#include "runtime/cuda_api.h"

#include <gtest/gtest.h>

namespace lathe::kernels {
namespace {

TEST(KernelLibrary, EveryFileIsEmbedded) {
  bool common = false;
  for (const KernelFile& f : kernel_files()) {
    EXPECT_FALSE(f.text.empty()) << f.name;
    common = common || f.name == "common.cuh";
  }
  EXPECT_TRUE(common);
  const std::string src = library_source();
  EXPECT_EQ(src.find("// ---- file: common.cuh"), src.find("// ---- file:"));
}

TEST(KernelLibrary, CompilesForHopperWithNvrtc) {
  std::string why;
  if (!cuda::nvrtc_api(&why)) GTEST_SKIP() << why;
  const std::vector<char> cubin = cuda::nvrtc_compile(library_source(), "lathe_kernels.cu", {}, "sm_90");
  EXPECT_GT(cubin.size(), 100u);
}

}  // namespace
}  // namespace lathe::kernels
