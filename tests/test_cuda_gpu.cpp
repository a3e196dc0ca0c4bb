// The CUDA layer: NVRTC compile and its disk cache, launches, graphs, memory errors. Skips cleanly
// where there is no GPU (and says why).
#include "runtime/cuda_driver.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace lathe::cuda {
namespace {

#define REQUIRE_GPU()                                 \
  do {                                                \
    std::string why;                                  \
    if (!gpu_available(&why)) GTEST_SKIP() << why;    \
  } while (0)

const char* kSource = R"(
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

TEST(Cuda, NoGpuIsAClearMessageNotACrash) {
  std::string why;
  if (gpu_available(&why)) GTEST_SKIP() << "a GPU is present";
  EXPECT_FALSE(why.empty());
  EXPECT_THROW(Context::get(), CudaError);
}

TEST(Cuda, CompilesLaunchesAndCaches) {
  REQUIRE_GPU();
  setenv("LATHE_CACHE_DIR", (testing::TempDir() + "/lathe-kernel-cache").c_str(), 1);
  const std::string src = std::string(kSource) + "// " + std::to_string(std::rand());
  Module m = Module::compile(src, "axpy.cu");
  EXPECT_FALSE(m.from_cache());
  Module again = Module::compile(src, "axpy.cu");
  EXPECT_TRUE(again.from_cache());
  EXPECT_EQ(m.digest(), again.digest());
  const int n = 1000;
  std::vector<float> x(n), y(n, 1.0f);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i);
  DeviceBuffer dx(n * 4), dy(n * 4);
  dx.upload(x.data(), n * 4);
  dy.upload(y.data(), n * 4);
  Stream s;
  float a = 2.0f;
  CUdeviceptr px = dx.ptr(), py = dy.ptr();
  int nn = n;
  launch(m.function("axpy"), {(n + 255) / 256}, {256}, 0, s.handle(), {&a, &px, &py, &nn}, "axpy");
  // The same launch, captured and replayed twice.
  CapturedGraph g;
  g.begin(s);
  launch(again.function("axpy"), {(n + 255) / 256}, {256}, 0, s.handle(), {&a, &px, &py, &nn}, "axpy");
  g.end(s);
  g.replay(s);
  g.replay(s);
  s.synchronize();
  dy.download(y.data(), n * 4);
  for (int i = 0; i < n; ++i) ASSERT_EQ(y[i], 1.0f + 6.0f * i) << i;
  EXPECT_THROW(m.function("nope"), CudaError);
}

TEST(Cuda, CompileErrorsCarryTheLog) {
  REQUIRE_GPU();
  try {
    Module::compile("extern \"C\" __global__ void k() { undefined_thing(); }", "broken.cu");
    ADD_FAILURE();
  } catch (const CudaError& e) {
    EXPECT_NE(std::string(e.what()).find("undefined_thing"), std::string::npos) << e.what();
  }
}

TEST(Cuda, TooLittleMemoryIsRefusedWithTheNumbers) {
  REQUIRE_GPU();
  try {
    DeviceBuffer huge(size_t{1} << 50, "test matrix");
    ADD_FAILURE();
  } catch (const CudaError& e) {
    EXPECT_NE(std::string(e.what()).find("too little GPU memory for the test matrix"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace lathe::cuda
