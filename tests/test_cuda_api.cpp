// The driver's entries resolved by name (runtime/cuda_api.h): a driver missing a required entry is
// refused with its name; one missing only the optional entries (older than CUDA 12.4) still loads,
// with those entries null, and the persistent step says what it lacks (runtime/cuda_driver.cpp).
#include "runtime/cuda_api.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace lathe::cuda {
namespace {

// A symbol table holding every name but `missing` (each resolves to one dummy address; none is called).
std::function<void*(const char*)> table_without(std::set<std::string> missing) {
  return [missing](const char* name) -> void* {
    static char dummy;
    return missing.count(name) ? nullptr : &dummy;
  };
}

TEST(CudaApi, EveryEntryPresentLoads) {
  const DriverLoad d = resolve_driver(table_without({}));
  EXPECT_TRUE(d.ok) << d.why;
  EXPECT_NE(d.api.cuInit, nullptr);
  EXPECT_NE(d.api.cuFuncGetParamInfo, nullptr);
  EXPECT_NE(d.api.cuFuncGetName, nullptr);
}

TEST(CudaApi, ADriverWithoutTheOptionalEntriesStillLoads) {
  const DriverLoad d = resolve_driver(table_without({"cuFuncGetParamInfo", "cuFuncGetName"}));
  EXPECT_TRUE(d.ok) << d.why;
  EXPECT_NE(d.api.cuLaunchKernelEx, nullptr);
  EXPECT_EQ(d.api.cuFuncGetParamInfo, nullptr);
  EXPECT_EQ(d.api.cuFuncGetName, nullptr);
}

TEST(CudaApi, AMissingRequiredEntryIsNamed) {
  // cuda.h maps cuMemAlloc to its versioned entry; the message names the symbol looked up.
  const DriverLoad d = resolve_driver(table_without({"cuMemAlloc_v2"}));
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.why.find("the NVIDIA driver lacks cuMemAlloc_v2"), std::string::npos) << d.why;
  const DriverLoad e = resolve_driver(table_without({"cuLaunchKernelEx"}));
  EXPECT_FALSE(e.ok);
  EXPECT_NE(e.why.find("cuLaunchKernelEx"), std::string::npos) << e.why;
}

}  // namespace
}  // namespace lathe::cuda
