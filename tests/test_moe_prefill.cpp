// The host side of the grouped mixture (kernels/moe_prefill_launch.h), no GPU needed: the host
// grouping the device kernel is compared with (a stable sort of the (row, slot) pairs by expert, cut
// into tiles), the worst-case tile count that sizes the grouped products' grid and the grouping's
// scratch, and the row-tile rule.
#include "kernels/moe_prefill_launch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

namespace lathe::kernels {
namespace {

std::vector<int32_t> random_ids(int64_t rows, int64_t k, int64_t ne, std::mt19937& rng, bool skew) {
  std::vector<int32_t> ids, all(static_cast<size_t>(ne));
  for (int64_t r = 0; r < rows; ++r) {
    std::iota(all.begin(), all.end(), 0);
    if (!skew || r % 7 == 0) std::shuffle(all.begin(), all.end(), rng);
    ids.insert(ids.end(), all.begin(), all.begin() + k);
  }
  return ids;
}

TEST(MoePrefill, GroupingIsAStableSortByExpertCutIntoTiles) {
  std::mt19937 rng(91);
  for (int64_t ne : {1, 5, 128})
    for (int64_t k : {1, 4, 8})
      for (int64_t rows : {1, 13, 300})
        for (bool skew : {false, true})
          for (int bm : {32, 64}) {
            if (k > ne) continue;
            const std::vector<int32_t> ids = random_ids(rows, k, ne, rng, skew);
            const MoeGrouping g = moe_group_reference(ids, rows, k, ne, bm);
            const int64_t pairs = rows * k;
            ASSERT_EQ(g.offsets.front(), 0);
            ASSERT_EQ(g.offsets.back(), pairs);
            // pair_of is the pairs stably sorted by expert; pos_of its inverse
            std::vector<int32_t> order(static_cast<size_t>(pairs));
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return ids[a] < ids[b]; });
            EXPECT_EQ(g.pair_of, order);
            for (int64_t i = 0; i < pairs; ++i) EXPECT_EQ(g.pair_of[g.pos_of[i]], i);
            for (int64_t e = 0; e < ne; ++e)
              for (int32_t p = g.offsets[e]; p < g.offsets[e + 1]; ++p) EXPECT_EQ(ids[g.pair_of[p]], e);
            // tiles: each within one expert, at most bm pairs, covering every pair once in order
            int32_t next = 0;
            for (size_t t = 0; t < g.tiles.size(); t += 4) {
              const int32_t e = g.tiles[t], first = g.tiles[t + 1], n = g.tiles[t + 2];
              EXPECT_EQ(first, next);
              EXPECT_GE(n, 1);
              EXPECT_LE(n, bm);
              EXPECT_GE(first, g.offsets[e]);
              EXPECT_LE(first + n, g.offsets[e + 1]);
              next = first + n;
            }
            EXPECT_EQ(next, pairs);
            EXPECT_LE(static_cast<int64_t>(g.tiles.size() / 4), moe_max_tiles(pairs, ne, bm));
          }
}

// The bound is reached: every used expert one pair past a multiple of bm.
TEST(MoePrefill, TileBoundIsTight) {
  for (int bm : {32, 64})
    for (int64_t ne : {3, 16}) {
      const int64_t rows = ne * (bm + 1);  // top 1: expert r % ne gets bm + 1 rows
      std::vector<int32_t> ids(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) ids[r] = static_cast<int32_t>(r % ne);
      const MoeGrouping g = moe_group_reference(ids, rows, 1, ne, bm);
      EXPECT_EQ(static_cast<int64_t>(g.tiles.size() / 4), 2 * ne);
      EXPECT_EQ(moe_max_tiles(rows, ne, bm), 2 * ne);
    }
  EXPECT_EQ(moe_max_tiles(5, 128, 32), 5);  // fewer pairs than experts: one tile each at most
}

TEST(MoePrefill, RowTileAndScratch) {
  EXPECT_EQ(moe_prefill_row_tile(512, 8, 128), 32);   // 32 pairs an expert on average
  EXPECT_EQ(moe_prefill_row_tile(1024, 8, 128), 64);  // 64
  EXPECT_EQ(moe_prefill_row_tile(9, 8, 8), 32);
  set_moe_prefill_row_tile(64);
  EXPECT_EQ(moe_prefill_row_tile(512, 8, 128), 64);
  set_moe_prefill_row_tile(0);
  // the grouping's scratch holds the tile table of the smallest tile, 16-byte aligned
  const MoeGroupView v = moe_group_view(0, 512, 8, 128);
  EXPECT_EQ(v.tiles % 16, 0u);
  EXPECT_GE(static_cast<int64_t>(moe_group_bytes(512, 8, 128)),
            static_cast<int64_t>(v.tiles) + 16 * moe_max_tiles(4096, 128, 32));
  EXPECT_GE(v.tiles, v.n_tiles + 4);
  EXPECT_EQ(moe_prefill_quantized_bytes(512, 8, 2048, 768, Activations::int8x2),
            std::max(quantized_activation_bytes(512, 2048, Activations::int8x2),
                     quantized_activation_bytes(4096, 768, Activations::int8x2)));
}

}  // namespace
}  // namespace lathe::kernels
