// The host side of the streamed decode kernels (kernels/decode_stream.h), no GPU needed: how a row is
// cut into chunks and half chunks, where the paired products are chosen, and that the host's mirrors
// of the kernels' constants match the kernel text the binary carries.
#include "base/error.h"
#include "fuse/fusion.h"
#include "gguf/block_format.h"
#include "kernels/decode_stream.h"
#include "kernels/gemv_launch.h"
#include "kernels/library.h"
#include "kernels/route_epilogue_launch.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lathe::kernels {
namespace {

const DecodeFormat& format(GgmlType t) {
  const DecodeFormat* f = decode_format(t);
  EXPECT_NE(f, nullptr);
  return *f;
}

TEST(DecodeStream, RowsAreCutIntoChunksAndHalfChunks) {
  const DecodeFormat& q8 = format(GgmlType::Q8_0);  // 64 blocks a chunk, 32 a half chunk
  EXPECT_EQ(decode_chunks_per_row(q8, 1024), 1);
  EXPECT_EQ(decode_half_chunks_per_row(q8, 1024), 1);
  EXPECT_EQ(decode_chunks_per_row(q8, 3072), 2);  // 96 blocks: 64 + 32
  EXPECT_EQ(decode_half_chunks_per_row(q8, 3072), 3);
  EXPECT_EQ(decode_chunks_per_row(q8, 4096), 2);
  EXPECT_EQ(decode_half_chunks_per_row(q8, 4096), 4);
  const DecodeFormat& q4 = format(GgmlType::Q4_K);  // 16 super-blocks a chunk
  EXPECT_EQ(decode_half_chunks_per_row(q4, 4096), 2);
  const DecodeFormat& q6 = format(GgmlType::Q6_K);  // 12 super-blocks a chunk, 6 a half chunk
  EXPECT_EQ(decode_chunks_per_row(q6, 4096), 2);
  EXPECT_EQ(decode_half_chunks_per_row(q6, 4096), 3);
  EXPECT_EQ(decode_format(GgmlType::F16), nullptr);
}

TEST(DecodeStream, PairsWhereARowsLastChunkIsPartialOrTheProductSmall) {
  const DecodeFormat& q8 = format(GgmlType::Q8_0);
  EXPECT_TRUE(decode_pairs_pay(q8, 3072, 1024));     // qwen3-0.6b gate/up: half a chunk a row
  EXPECT_TRUE(decode_pairs_pay(q8, 1024, 3072));     // its down: 64 + 32 blocks
  EXPECT_TRUE(decode_pairs_pay(q8, 151936, 1024));   // its output matrix
  EXPECT_TRUE(decode_pairs_pay(q8, 1024, 2048));     // its o: whole chunks, but 2M values
  EXPECT_FALSE(decode_pairs_pay(q8, 4096, 4096));    // qwen3-8b's o
  EXPECT_FALSE(decode_pairs_pay(q8, 12288, 4096));   // its gate / up
  EXPECT_FALSE(decode_pairs_pay(q8, 4096, 12288));   // its down
  EXPECT_FALSE(decode_pairs_pay(q8, 2048, 4096));    // qwen3-30b-a3b's o (8M values)
  EXPECT_FALSE(decode_pairs_pay(q8, 6144, 2048));    // its experts' gate/up launch
  const DecodeFormat& q4 = format(GgmlType::Q4_K);
  EXPECT_FALSE(decode_pairs_pay(q4, 12288, 4096));
  EXPECT_TRUE(decode_pairs_pay(q4, 3072, 1024));
  const DecodeFormat& q6 = format(GgmlType::Q6_K);  // never: its half chunk leaves lanes idle
  EXPECT_FALSE(decode_pairs_pay(q6, 3072, 1024));
  EXPECT_FALSE(decode_pairs_pay(q6, 1024, 2048));
}

// The host mirrors of gemv_decode.cuh's ring, gemv_decode_pairs.cuh's pairs bit, moe_decode.cuh's down
// rounds, moe_single_launch.cuh's deepest ring, moe_route_epilogue.cuh's rows and terms, and the
// attention's query heads a block (rope_attention's limit, fuse/fusion.h).
TEST(DecodeStream, MirrorsMatchTheKernelText) {
  std::string src;
  for (const KernelFile& f : kernel_files()) src += f.text;
  auto defined = [&](const std::string& name) -> long long {
    const std::string key = "#define " + name + " ";
    const size_t at = src.find(key);
    if (at == std::string::npos) return -1;
    return std::stoll(src.substr(at + key.size()));
  };
  const long long warps = defined("LATHE_GEMV1_WARPS"), stages = defined("LATHE_GEMV1_STAGES");
  const long long slot = defined("LATHE_GEMV1_SLOT");
  EXPECT_EQ(warps * stages * slot, kDecodeStageBytes);
  EXPECT_EQ(warps * slot, kDecodeSlotBytes);
  EXPECT_EQ(defined("LATHE_MOE_SINGLE_MAX_STAGES"), kMoeSingleMaxStages);
  EXPECT_EQ(defined("LATHE_GEMV1_PAIRS"), kDecodePairs);
  EXPECT_EQ(defined("LATHE_MOE_DOWN_ROUNDS"), kMoeDownRounds);
  EXPECT_GT(kDecodePairs, 16);  // above every group (warps an item: 1..16)
  EXPECT_EQ(defined("LATHE_ROUTE_EPI_ROWS"), kRouteEpilogueRows);
  EXPECT_EQ(defined("LATHE_ROUTE_EPI_TERMS"), kRouteEpilogueTerms);
  EXPECT_EQ(defined("ATTD_HEADS"), fuse::kRopeAttentionMaxGroup);
  // The tiles: a tile's rows, and each format's unit, box and ring; its x after the warps' rings (a
  // slot 16 rows of a box, 128 bytes of alignment), Q4_K's where the row walk's is (the merged
  // kernels stage x once for either walk).
  EXPECT_EQ(defined("LATHE_GEMV1T_ROWS"), kDecodeTileRows);
  for (const auto& [type, macro] : {std::pair{GgmlType::Q2_K, "Q2K"}, std::pair{GgmlType::Q3_K, "Q3K"}, std::pair{GgmlType::Q4_K, "Q4K"},
                                    std::pair{GgmlType::Q5_K, "Q5K"}, std::pair{GgmlType::Q6_K, "Q6K"}}) {
    const DecodeTileFormat* f = decode_tile_format_listed(type);
    ASSERT_NE(f, nullptr) << macro;
    const std::string m = std::string("LATHE_GEMV1T_") + macro + "_";
    EXPECT_EQ(defined(m + "UNIT"), f->unit_bytes) << macro;
    EXPECT_EQ(defined(m + "BOX"), f->box_bytes) << macro;
    EXPECT_EQ(defined(m + "STAGES"), f->stages) << macro;
    EXPECT_EQ(f->unit_bytes, static_cast<int64_t>(row_bytes(type, 256))) << macro;
    EXPECT_GE(f->box_bytes, f->unit_bytes) << macro;
    EXPECT_EQ(f->box_bytes % 16, 0) << macro;             // a TMA box's rows
    EXPECT_EQ(kDecodeTileRows * f->box_bytes % 128, 0) << macro;  // a slot stays 128-byte aligned
    EXPECT_GE(f->x_offset, warps * f->stages * kDecodeTileRows * f->box_bytes + 128) << macro;
    EXPECT_EQ(f->x_offset % 16, 0) << macro;
  }
  for (const GgmlType t : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K})  // x where the row walk has it
    EXPECT_EQ(decode_tile_format_listed(t)->x_offset, kDecodeStageBytes) << ggml_type_name(t);
  EXPECT_EQ(decode_tile_format(GgmlType::Q8_0), nullptr);
}

// LATHE_DECODE_TILES's values (gemv_launch.h), and a clear error for any other.
TEST(DecodeStream, DecodeTilesSettingByName) {
  EXPECT_EQ(decode_tiles_named(""), DecodeTiles::all);
  EXPECT_EQ(decode_tiles_named("1"), DecodeTiles::all);
  EXPECT_EQ(decode_tiles_named("all"), DecodeTiles::all);
  EXPECT_EQ(decode_tiles_named("merged"), DecodeTiles::merged);
  EXPECT_EQ(decode_tiles_named("0"), DecodeTiles::off);
  EXPECT_EQ(decode_tiles_named("off"), DecodeTiles::off);
  try {
    decode_tiles_named("yes");
    ADD_FAILURE() << "no error for LATHE_DECODE_TILES=yes";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("LATHE_DECODE_TILES=yes"), std::string::npos) << e.what();
  }
}

// router_columns (route_epilogue_launch.h) is the router transposed with the norm's weights folded in.
TEST(DecodeStream, RouterColumnsAreTheWeightedTranspose) {
  const std::vector<float> router = {1, 2, 3, 4, 5, 6};  // 2 experts x 3
  const std::vector<float> w = {0.5f, 2.0f, -1.0f};
  const std::vector<float> cols = router_columns(router.data(), w.data(), 2, 3);
  EXPECT_EQ(cols, (std::vector<float>{0.5f, 2.0f, 4.0f, 10.0f, -3.0f, -6.0f}));
}

}  // namespace
}  // namespace lathe::kernels
