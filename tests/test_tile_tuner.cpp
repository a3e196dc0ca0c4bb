// The tile tuner without a GPU: the fastest candidate is chosen and remembered, the file is read back
// by a later tuner, a changed key is measured anew, a damaged file is ignored.
#include "kernels/tile_tuner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace lathe::kernels {
namespace {

std::filesystem::path fresh_file(const std::string& name) {
  const std::filesystem::path p = std::filesystem::path(testing::TempDir()) / "tuner" / name;
  std::filesystem::remove(p);
  return p;
}

TEST(TileTuner, ChoosesTheFastestAndRemembersIt) {
  const std::filesystem::path file = fresh_file("a.json");
  int measured = 0;
  const double times[] = {30.0, 12.5, 12.5, 40.0};
  {
    TileTuner t(file);
    EXPECT_FALSE(t.known("gemm shape 1", 4));
    const int best = t.choose("gemm shape 1", 4, [&](int i) {
      ++measured;
      return times[i];
    });
    EXPECT_EQ(best, 1);  // a tie goes to the first
    EXPECT_EQ(measured, 4);
    EXPECT_EQ(t.choose("gemm shape 1", 4, [&](int) -> double { ADD_FAILURE() << "measured twice"; return 0; }), 1);
  }
  TileTuner later(file);  // another run
  ASSERT_TRUE(later.known("gemm shape 1", 4));
  EXPECT_EQ(*later.known("gemm shape 1", 4), 1);
  EXPECT_FALSE(later.known("gemm shape 1", 1));  // an index the candidates no longer have
  EXPECT_FALSE(later.known("gemm shape 2", 4));
  EXPECT_EQ(later.choose("gemm shape 2", 2, [](int i) { return i == 0 ? 9.0 : 3.0; }), 1);
  TileTuner third(file);
  EXPECT_EQ(third.known("gemm shape 1", 4), 1);
  EXPECT_EQ(third.known("gemm shape 2", 2), 1);
}

TEST(TileTuner, ADamagedFileIsMeasuredAgain) {
  const std::filesystem::path file = fresh_file("b.json");
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file) << "{\"choices\": {\"k\": {\"index\": \"not a number\"";
  TileTuner t(file);
  EXPECT_FALSE(t.known("k", 3));
  EXPECT_EQ(t.choose("k", 3, [](int i) { return 10.0 - i; }), 2);
  EXPECT_EQ(TileTuner(file).known("k", 3), 2);  // rewritten whole
}

TEST(TileTuner, TuningIsTurnedOffByName) {
  ::setenv("LATHE_TUNE", "0", 1);
  EXPECT_FALSE(tuning_enabled());
  ::setenv("LATHE_TUNE", "1", 1);
  EXPECT_TRUE(tuning_enabled());
  ::unsetenv("LATHE_TUNE");
  EXPECT_TRUE(tuning_enabled());  // on by default: measured on the H200 (tile_tuner.h)
}

}  // namespace
}  // namespace lathe::kernels
