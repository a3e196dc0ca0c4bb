// down re-laid by 32-column slices for the split feed-forward half (kernels/ffn_split_launch.h), on
// the host: every Q8_0 block (r, b) of down [E][F] lands at slice b, place r, its 34 bytes unchanged;
// shapes that are not E x F of Q8_0 with F % 32 == 0 are refused with the numbers; a stack of experts
// re-laid expert by expert.
#include "base/error.h"
#include "kernels/ffn_split_launch.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace lathe::kernels {
namespace {

TEST(FfnSplitLayout, EveryBlockLandsInItsSlice) {
  const int64_t e = 5, f = 96, nb = f / 32;
  std::vector<uint8_t> down(static_cast<size_t>(e * nb * 34));
  for (size_t i = 0; i < down.size(); ++i) down[i] = static_cast<uint8_t>(i * 7 + i / 34);
  const std::vector<uint8_t> out = relay_down_by_slices(down.data(), down.size(), e, f);
  ASSERT_EQ(out.size(), down.size());
  for (int64_t r = 0; r < e; ++r)
    for (int64_t b = 0; b < nb; ++b)
      EXPECT_EQ(std::memcmp(out.data() + (b * e + r) * 34, down.data() + (r * nb + b) * 34, 34), 0)
          << "block (" << r << ", " << b << ")";
}

TEST(FfnSplitLayout, RefusesOtherShapes) {
  std::vector<uint8_t> down(4 * 2 * 34);
  try {
    relay_down_by_slices(down.data(), down.size(), 4, 48);
    FAIL() << "F % 32 != 0 was taken";
  } catch (const UserError& err) {
    EXPECT_NE(std::string(err.what()).find("4 x 48"), std::string::npos) << err.what();
  }
  try {
    relay_down_by_slices(down.data(), down.size() - 1, 4, 64);
    FAIL() << "a short matrix was taken";
  } catch (const UserError& err) {
    EXPECT_NE(std::string(err.what()).find("271 bytes"), std::string::npos) << err.what();
  }
}

// A stack of experts: each expert's matrix re-laid on its own, in expert order (the mixture's form:
// expert x's slice b at (x * F / 32 + b) * E blocks).
TEST(FfnSplitLayout, EveryExpertOfAStackLandsInItsOwnSlices) {
  const int64_t n = 3, e = 4, f = 64, nb = f / 32, one = e * nb * 34;
  std::vector<uint8_t> down(static_cast<size_t>(n * one));
  for (size_t i = 0; i < down.size(); ++i) down[i] = static_cast<uint8_t>(i * 13 + i / 34 + i / 272);
  const std::vector<uint8_t> out = relay_down_stack_by_slices(down.data(), down.size(), n, e, f);
  ASSERT_EQ(out.size(), down.size());
  for (int64_t x = 0; x < n; ++x)
    for (int64_t r = 0; r < e; ++r)
      for (int64_t b = 0; b < nb; ++b)
        EXPECT_EQ(std::memcmp(out.data() + ((x * nb + b) * e + r) * 34, down.data() + x * one + (r * nb + b) * 34, 34), 0)
            << "expert " << x << " block (" << r << ", " << b << ")";
  try {
    relay_down_stack_by_slices(down.data(), down.size() - 34, n, e, f);
    FAIL() << "a short stack was taken";
  } catch (const UserError& err) {
    EXPECT_NE(std::string(err.what()).find("3 Q8_0 matrices of 4 x 64"), std::string::npos) << err.what();
  }
}

// The levels layout: each group's first 16 levels of every block, then their last 16, then the
// scales, the same bytes a group; a size that is not whole groups is refused.
TEST(FfnSplitLayout, LevelsLayoutKeepsEveryByteOfItsGroup) {
  const int64_t group = 3, groups = 2;
  std::vector<uint8_t> blocks(static_cast<size_t>(groups * group * 34));
  for (size_t i = 0; i < blocks.size(); ++i) blocks[i] = static_cast<uint8_t>(i * 11 + 5);
  const std::vector<uint8_t> out = relay_q8_0_levels(blocks.data(), blocks.size(), group);
  ASSERT_EQ(out.size(), blocks.size());
  for (int64_t gi = 0; gi < groups; ++gi)
    for (int64_t i = 0; i < group; ++i) {
      const uint8_t* b = blocks.data() + (gi * group + i) * 34;
      const uint8_t* o = out.data() + gi * group * 34;
      EXPECT_EQ(std::memcmp(o + 16 * i, b + 2, 16), 0) << "group " << gi << " block " << i << ": first levels";
      EXPECT_EQ(std::memcmp(o + 16 * (group + i), b + 18, 16), 0) << "group " << gi << " block " << i << ": last levels";
      EXPECT_EQ(std::memcmp(o + 32 * group + 2 * i, b, 2), 0) << "group " << gi << " block " << i << ": scale";
    }
  try {
    relay_q8_0_levels(blocks.data(), blocks.size() - 34, 4);
    FAIL() << "a part of a group was taken";
  } catch (const UserError& err) {
    EXPECT_NE(std::string(err.what()).find("groups of 4 Q8_0 blocks"), std::string::npos) << err.what();
  }
}

}  // namespace
}  // namespace lathe::kernels
