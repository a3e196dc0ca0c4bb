// The arena: arrays whose lifetimes overlap never share bytes; arrays that do not may; offsets are
// aligned and the placement is deterministic. And the prompt's chunks.
#include "plan/arena.h"
#include "runtime/cpu_engine.h"

#include <gtest/gtest.h>

#include <random>

namespace lathe::plan {
namespace {

TEST(Arena, LifetimesThatDoNotOverlapShareBytes) {
  const ArenaLayout l = place_in_arena({{1000, 0, 1}, {1000, 2, 3}, {1000, 1, 2}});
  EXPECT_EQ(l.offsets[0], l.offsets[1]);  // [0,1] and [2,3] share
  EXPECT_NE(l.offsets[2], l.offsets[0]);  // [1,2] overlaps both
  EXPECT_EQ(l.size, 2 * 1024);
  for (int64_t o : l.offsets) EXPECT_EQ(o % 256, 0);
}

TEST(Arena, RandomRequestsNeverCollide) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<ArenaRequest> req;
    for (int i = 0; i < 40; ++i) {
      const int a = static_cast<int>(rng() % 30), b = a + static_cast<int>(rng() % 8);
      req.push_back({static_cast<int64_t>(1 + rng() % 100000), a, b});
    }
    const ArenaLayout l = place_in_arena(req);
    int64_t total = 0;
    for (size_t i = 0; i < req.size(); ++i) {
      total += req[i].bytes;
      EXPECT_LE(l.offsets[i] + req[i].bytes, l.size);
      for (size_t j = i + 1; j < req.size(); ++j) {
        const bool live_together = !(req[i].last < req[j].first || req[j].last < req[i].first);
        const bool bytes_overlap = l.offsets[i] < l.offsets[j] + req[j].bytes && l.offsets[j] < l.offsets[i] + req[i].bytes;
        EXPECT_FALSE(live_together && bytes_overlap) << trial << ": " << i << " and " << j;
      }
    }
    EXPECT_LE(l.size, total + 256 * static_cast<int64_t>(req.size()));
    EXPECT_EQ(place_in_arena(req).offsets, l.offsets);  // deterministic
  }
}

TEST(PromptChunks, LargestPowersOfTwoThatFit) {
  EXPECT_EQ(prompt_chunks(1, 512), (std::vector<int64_t>{1}));
  EXPECT_EQ(prompt_chunks(13, 512), (std::vector<int64_t>{8, 4, 1}));
  EXPECT_EQ(prompt_chunks(1100, 512), (std::vector<int64_t>{512, 512, 64, 8, 4}));
  EXPECT_EQ(prompt_chunks(5, 2), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_TRUE(prompt_chunks(0, 8).empty());
}

}  // namespace
}  // namespace lathe::plan
