// lathe kernels [--arch sm_XY]
// Compiles the kernel library (src/kernels/*.cuh, one NVRTC unit; for sm_90 also the sm_90a module of
// the wgmma kernels) into the kernel cache, where every
// command that runs on a GPU of that architecture finds it instead of compiling (~2-3 minutes on two
// cores). Without --arch: for the GPU in use. With it, no GPU is needed: compile once on a build
// machine and carry the cache ($LATHE_CACHE_DIR) to the GPU machine; its NVRTC must be the same
// version, which is part of the cache key.
#include "cli/commands.h"
#include "kernels/library.h"
#include "runtime/cuda_driver.h"

#include <fmt/core.h>

#include <chrono>
#include <memory>
#include <regex>

namespace lathe::cli {

Action add_kernels_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("kernels", "compile the kernel library into the kernel cache (for a GPU or an --arch)");
  auto arch = std::make_shared<std::string>();
  cmd->add_option("--arch", *arch, "the architecture to compile for, e.g. sm_90 (default: the GPU in use)");
  return [arch] {
    std::string a = *arch;
    if (a.empty()) a = cuda::Context::get().info().arch();
    if (!std::regex_match(a, std::regex("sm_[0-9]{2,3}a?")))
      fail("--arch '{}' is not an architecture name such as sm_90", a);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string file =
        cuda::Module::precompile(kernels::library_source(), "lathe_kernels.cu", a, kernels::library_options());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print("the kernel library for {}: {} ({:.1f} s)\n", a, file, s);
    if (a == "sm_90") {  // compute capability 9.0 cards also load the sm_90a module (library.h)
      const auto t1 = std::chrono::steady_clock::now();
      const std::string f90a = cuda::Module::precompile(kernels::library_90a_source(), "lathe_kernels_90a.cu", a,
                                                        kernels::sm90a_options());
      fmt::print("the sm_90a kernels: {} ({:.1f} s)\n", f90a,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
    }
    return 0;
  };
}

}  // namespace lathe::cli
