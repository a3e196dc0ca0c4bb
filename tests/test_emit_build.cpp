// The emitted standalone program builds with nvcc (as `lathe emit` says) with no Lathe header or
// library, and, run with no GPU and no checkpoint, prints the identity of the program it was
// compiled from before it refuses. Skipped where nvcc is absent.
#include "emit/emit_program.h"
#include "lang/program.h"
#include "model/model_program.h"
#include "model/synth.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace lathe::emit {
namespace {

std::string find_nvcc() {
  for (const char* dir : {static_cast<const char*>(std::getenv("CUDA_HOME")), static_cast<const char*>(std::getenv("CUDA_PATH")),
                          "/usr/local/cuda"})
    if (dir && std::filesystem::exists(std::filesystem::path(dir) / "bin/nvcc")) return std::string(dir) + "/bin/nvcc";
  if (std::system("command -v nvcc > /dev/null 2>&1") == 0) return "nvcc";
  return "";
}

std::string run(const std::string& command, int* rc) {
  std::string out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf;
  while (size_t n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  *rc = pclose(p);
  return out;
}

TEST(EmitBuild, StandaloneProgramBuildsWithNvcc) {
  const std::string nvcc = find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc is not installed";
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "emit-build";
  std::filesystem::create_directories(dir);
  const std::string model = (dir / "tiny.gguf").string();
  SynthOptions o;
  o.shape = "qwen3-tiny";
  o.type = "q8_0";
  write_synthetic_checkpoint(o, model);
  const GgufFile file = GgufFile::open(model);
  EmitOptions e;
  e.prompt_tokens = {1, 2, 3};
  {
    std::ofstream(dir / "prog.cu", std::ios::binary) << emit_program(file, e);
  }
  // Only the emitted file: no -I, no Lathe library; the driver library as `lathe emit` prints.
  int rc = -1;
  const std::string prog = (dir / "prog").string();
  const std::string log = run(nvcc + " -arch=sm_90 " + (dir / "prog.cu").string() + " -o " + prog + " -lcuda", &rc);
  ASSERT_EQ(rc, 0) << log;
  ASSERT_TRUE(std::filesystem::exists(prog));
  // No checkpoint named: the identity, then a usage error (exit 1), GPU or not.
  const std::string out = run(prog, &rc);
  const std::string id = lang::identity(model_program(file, read_model_spec(file), e.n_ctx).program);
  EXPECT_NE(out.find("lathe program sha256:" + id + " (qwen3)"), std::string::npos) << out;
  EXPECT_NE(out.find("usage"), std::string::npos) << out;
  EXPECT_NE(rc, 0);
}

}  // namespace
}  // namespace lathe::emit
