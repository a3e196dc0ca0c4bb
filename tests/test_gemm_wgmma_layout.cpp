// The wgmma GEMM's host-checkable parts, no GPU needed (kernels/gemm_wgmma.cuh is plain C++ above
// its device section, so the kernel's own layout functions run here):
//   - the swizzle the producer writes and the descriptors the consumers issue agree, element by
//     element, with a model of how wgmma reads a 128-byte-swizzled K-major operand (PTX ISA, "matrix
//     descriptor" and "shared memory matrix layout": start + (row / 8) SBO + (row % 8) 128 + 2 k,
//     then address bits 4-6 XOR bits 7-9);
//   - the stage ring's geometry (alignment, no overlap, 227 KB, S >= D + 2, R = D + 2) per format;
//   - a model of the producer/consumer mbarrier protocol run under random schedules: it finishes
//     (no deadlock: a wrong parity or count hangs the real kernel) and never overwrites a stage or a
//     raw slot still being read;
//   - NVRTC 13 compiles the sm_90a module here, with the options the device path uses, and the main
//     library leaves the sm_90a files out.
#include "gguf/block_format.h"
#include "kernels/gemm_wgmma.cuh"
#include "kernels/gemm_wgmma_rs.cuh"
#include "kernels/gemm_wgmma_launch.h"
#include "kernels/library.h"
#include "runtime/cuda_api.h"
#include "runtime/cuda_driver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace lathe::kernels {
namespace {

// The address wgmma reads for element (row m, k) of a K-major 128B-swizzled operand, from its
// descriptor alone.
uint32_t hardware_address(uint64_t desc, int m, int k) {
  EXPECT_EQ(desc >> 62, 1u) << "128-byte swizzle";
  EXPECT_EQ((desc >> 49) & 7u, 0u) << "base offset";
  const uint32_t start = static_cast<uint32_t>(desc & 0x3FFF) << 4;
  const uint32_t sbo = static_cast<uint32_t>((desc >> 32) & 0x3FFF) << 4;
  const uint32_t a = start + static_cast<uint32_t>(m / 8) * sbo + static_cast<uint32_t>(m % 8) * 128 + 2 * k;
  return a ^ (((a >> 7) & 7u) << 4);
}

TEST(GemmWgmmaLayout, SwizzleIsAPermutationOfEachRowsPieces) {
  for (int r = 0; r < 256; ++r) {
    std::set<int> pieces;
    for (int p = 0; p < 8; ++p) {
      const int off = lathe_gwg_swz(r, p);
      EXPECT_EQ(off / 128, r);
      EXPECT_EQ(off % 16, 0);
      pieces.insert(off % 128 / 16);
    }
    EXPECT_EQ(pieces.size(), 8u) << r;
  }
  // 8 consecutive rows put piece p in 8 different 16-byte bank groups (conflict-free row walks).
  for (int p = 0; p < 8; ++p) {
    std::set<int> groups;
    for (int r = 0; r < 8; ++r) groups.insert(lathe_gwg_swz(r, p) % 128 / 16);
    EXPECT_EQ(groups.size(), 8u);
  }
}

TEST(GemmWgmmaLayout, DescriptorsReadWhatTheProducerWrote) {
  const uint64_t d = lathe_gwg_desc(0x12400);
  EXPECT_EQ(d & 0x3FFF, 0x12400u >> 4);
  EXPECT_EQ((d >> 16) & 0x3FFF, 1u);
  EXPECT_EQ((d >> 32) & 0x3FFF, 1024u >> 4);
  for (uint32_t tile : {0x0u, 0x400u, 0x8000u, 0x30C00u}) {
    // A operands: 64-row groups at rows 0, 64, 128, 192 (both consumers, both m64 halves); B: rows 0..127.
    for (int row0 : {0, 64, 128, 192}) {
      for (int s = 0; s < 4; ++s) {
        const uint64_t desc = lathe_gwg_slice_desc(tile, row0, s);
        for (int m = 0; m < 64; ++m)
          for (int kk = 0; kk < 16; ++kk) {
            const int r = row0 + m, k = 16 * s + kk;
            const uint32_t written = tile + static_cast<uint32_t>(lathe_gwg_swz(r, k / 8)) + 2 * (k % 8);
            ASSERT_EQ(hardware_address(desc, m, kk), written)
                << "tile " << tile << " row0 " << row0 << " slice " << s << " m " << m << " k " << kk;
          }
      }
    }
    const uint64_t b = lathe_gwg_slice_desc(tile, 0, 2);  // N = 128: rows 64..127 of B through SBO
    for (int n = 64; n < 128; ++n)
      EXPECT_EQ(hardware_address(b, n, 5), tile + static_cast<uint32_t>(lathe_gwg_swz(n, 4)) + 10);
  }
}

struct Fmt {
  GgmlType type;
  int lines;
  bool direct;
};
const Fmt kFmts[] = {{GgmlType::F16, 8, true},   {GgmlType::Q8_0, 6, false}, {GgmlType::Q2_K, 7, false},
                     {GgmlType::Q3_K, 8, false},  {GgmlType::Q4_K, 3, false}, {GgmlType::Q5_K, 5, false},
                     {GgmlType::Q6_K, 10, false}};

TEST(GemmWgmmaLayout, StageRingFitsAndDoesNotOverlap) {
  for (const Fmt& f : kFmts)
    for (int bm : {128, 256}) {
      const LatheGwgGeometry g = lathe_gwg_geometry(bm, 128, f.lines, f.direct);
      const std::string what = gemm_wgmma_kernel_name(f.type, bm);
      EXPECT_GE(g.ahead, 1) << what;
      EXPECT_GE(g.stages, g.ahead + 2) << what;
      EXPECT_EQ(g.raw_slots, f.direct ? 0 : g.ahead + 2) << what;
      EXPECT_EQ(g.stage_bytes % 1024, 0) << what;
      EXPECT_EQ((bm * 128) % 1024, 0) << what;  // the W tile after x stays 1024-aligned
      EXPECT_EQ(g.raw_at, g.stages * g.stage_bytes) << what;
      EXPECT_GE(g.bar_at, g.raw_at + g.raw_slots * 128 * g.raw_stride) << what;
      EXPECT_EQ(g.bar_at % 8, 0) << what;
      EXPECT_GE(g.total, g.bar_at + 16 * g.stages + 1023) << what;
      EXPECT_LE(g.total, 232448) << what;
      EXPECT_EQ(gemm_wgmma_shared_bytes(f.type, bm), static_cast<unsigned>(g.total));
      if (!f.direct) {
        EXPECT_EQ(g.raw_stride % 32, 16) << what << ": an odd count of 16-byte lines";
      }
      std::printf("  %-32s stages %d ahead %d raw slots %d shared %d bytes\n", what.c_str(), g.stages, g.ahead,
                  g.raw_slots, g.total);
    }
  EXPECT_EQ(gemm_wgmma_kernel_name(GgmlType::Q4_K, 256), "lathe_gemm_wgmma_q4_k_256x128");
  EXPECT_FALSE(gemm_wgmma_supports(GgmlType::Q5_0));
  EXPECT_THROW(gemm_wgmma(WeightMatrix{GgmlType::Q5_0, 0, 64, 256}, 0, 1, 0, nullptr), UserError);
  EXPECT_THROW(gemm_wgmma(WeightMatrix{GgmlType::Q4_K, 0, 64, 288}, 0, 1, 0, nullptr), UserError);
  EXPECT_THROW(gemm_wgmma(WeightMatrix{GgmlType::Q8_0, 0, 64, 256, 4}, 0, 1, 0, nullptr), UserError);
}

// The kernel's protocol (gemm_wgmma_kernel.cuh) as a state machine over chunks, its actors stepped in
// a random order: the producer (its 128 threads as one) and the two consumer warpgroups (their eight
// warps' arrivals as two). An mbarrier is its count of completed phases; a wait on parity P passes
// when the current (incomplete) phase's parity is not P, as mbarrier.try_wait.parity does.
struct ProtocolModel {
  int S, D, R, n;
  std::vector<int> full_done, empty_done, empty_arrivals;
  std::vector<int> stage_chunk, stage_released, raw_chunk;  // the chunk a stage / raw slot holds
  int loaded = 0, produced = 0;                             // chunks whose loads issued / handed over
  int issued[2] = {0, 0}, released[2] = {0, 0};             // per consumer
  std::string violation;

  ProtocolModel(int s, int d, int n_chunks)
      : S(s), D(d), R(d + 2), n(n_chunks), full_done(s), empty_done(s), empty_arrivals(s), stage_chunk(s, -1),
        stage_released(s), raw_chunk(d + 2, -1) {}
  static bool passed(int done, int parity) { return (done & 1) != parity; }

  void load(int j) {  // x into stage j % S, raw lines into slot j % R
    const int s = j % S;
    if (stage_chunk[s] >= 0 && stage_released[s] < 2) violation = "stage overwritten while read";
    if (raw_chunk[j % R] >= produced) violation = "raw slot overwritten before dequantized";
    stage_chunk[s] = j, stage_released[s] = 0, raw_chunk[j % R] = j;
    ++loaded;
  }
  // The producer: loads of chunks 0 .. D - 1 without waiting, then per chunk c: wait empty for chunk
  // c + D's stage (parity ((j / S) & 1) ^ 1) and load it, dequantize c (raw slot c % R into stage
  // c % S) and arrive on full[c % S].
  bool producer_step() {
    if (loaded < std::min(n, D)) return load(loaded), true;
    if (produced == n) return false;
    const int j = produced + D;
    if (j < n && loaded == j) {
      if (!passed(empty_done[j % S], ((j / S) & 1) ^ 1)) return false;
      return load(j), true;
    }
    const int c = produced;
    if (raw_chunk[c % R] != c || stage_chunk[c % S] != c) violation = "handed over a chunk not loaded";
    ++full_done[c % S];  // the 128th arrival completes the phase
    ++produced;
    return true;
  }
  // A consumer: wait full[c % S] (parity (c / S) & 1) and issue chunk c; wgmma.wait_group 1 then
  // ends chunk c - 1's reads and releases it (never the last chunk: wait_group 0 ends that one).
  bool consumer_step(int w) {
    int &i = issued[w], &r = released[w];
    if (r < i - 1) {
      const int s = r % S;
      ++stage_released[s];
      if (++empty_arrivals[s] == 2) empty_arrivals[s] = 0, ++empty_done[s];
      ++r;
      return true;
    }
    if (i == n) return false;
    const int s = i % S;
    if (!passed(full_done[s], (i / S) & 1)) return false;
    if (stage_chunk[s] != i || produced <= i) violation = "read a stage before its chunk was handed over";
    ++i;
    return true;
  }
  bool finished() const { return produced == n && issued[0] == n && issued[1] == n; }
};

TEST(GemmWgmmaLayout, MbarrierProtocolNeverDeadlocksOrOverwrites) {
  std::mt19937 rng(7);
  for (const Fmt& f : kFmts)
    for (int bm : {128, 256}) {
      const LatheGwgGeometry g = lathe_gwg_geometry(bm, 128, f.lines, f.direct);
      for (int n : {1, 2, 3, 5, 17, 64}) {  // chunks: k / 64
        for (int trial = 0; trial < 50; ++trial) {
          ProtocolModel pm(g.stages, g.ahead, n);
          int idle = 0;
          while (!pm.finished() && idle < 1000) {
            const int actor = static_cast<int>(rng() % 3);
            const bool moved = actor == 0 ? pm.producer_step() : pm.consumer_step(actor - 1);
            idle = moved ? 0 : idle + 1;
          }
          ASSERT_TRUE(pm.finished()) << "deadlock: S " << g.stages << " D " << g.ahead << " chunks " << n;
          ASSERT_EQ(pm.violation, "") << "S " << g.stages << " D " << g.ahead << " chunks " << n;
        }
      }
    }
}

// The model can fail: one stage fewer than D + 2 (the producer waits on the chunk it has not handed
// over yet) never finishes.
TEST(GemmWgmmaLayout, ProtocolModelCatchesAShortRing) {
  std::mt19937 rng(3);
  ProtocolModel pm(3, 2, 8);
  int idle = 0;
  while (!pm.finished() && idle < 1000) {
    const int actor = static_cast<int>(rng() % 3);
    idle = (actor == 0 ? pm.producer_step() : pm.consumer_step(actor - 1)) ? 0 : idle + 1;
  }
  EXPECT_FALSE(pm.finished());
}

// The register-A kernel's ring (gemm_wgmma_rs.cuh): each stage's x tile 1024-aligned (the 128-byte
// swizzle of TMA and wgmma) and its weight boxes after it, the TMA bytes inside the stage, >= 3 stages,
// the mbarriers 8-aligned after the last stage, within 227 KB; BN = 128 within half an SM (two
// blocks a multiprocessor) whenever that holds 4 stages.
TEST(GemmWgmmaLayout, RegisterAGeometryFitsAndAligns) {
  for (int fmt = 0; fmt < 4; ++fmt)
    for (int bn : {128, 256}) {
      const LatheGwrGeometry g = lathe_gwr_geometry(bn, fmt);
      const LatheGwrBoxes b = lathe_gwr_boxes(fmt);
      EXPECT_EQ(g.stage_bytes % 1024, 0);
      EXPECT_EQ(g.w_at, bn * 128);
      EXPECT_EQ(g.tx_bytes, bn * 128 + 128 * b.row_bytes);
      EXPECT_LE(g.tx_bytes, g.stage_bytes);
      EXPECT_EQ(b.row_bytes % 16, 0);
      EXPECT_GE(g.stages, 3) << fmt << " " << bn;
      EXPECT_LE(g.stages, 8);
      EXPECT_EQ(g.bar_at, g.stages * g.stage_bytes);
      EXPECT_LE(g.total, 232448);
      if (bn == 128 && (115712 - 1024 - 256) / g.stage_bytes >= 4) {
        EXPECT_LE(g.total, 115712) << fmt;
      }
      if (fmt == 0) {
        EXPECT_EQ(b.map0, 128) << "f16 boxes: 64 values of 128 swizzled bytes";
      }
    }
}

TEST(GemmWgmmaLayout, Sm90aModuleCompilesWithNvrtc) {
  std::string why;
  if (!cuda::nvrtc_api(&why)) GTEST_SKIP() << why;
  const std::string main_src = library_source(), src = library_90a_source();
  // No gemm_wgmma*.cuh file in the main unit (a comment there may name one) and no wgmma instruction.
  EXPECT_EQ(main_src.find("// ---- file: gemm_wgmma"), std::string::npos) << "the main (sm_90) unit must not hold wgmma";
  EXPECT_EQ(main_src.find("wgmma.mma_async"), std::string::npos) << "the main (sm_90) unit must not hold wgmma";
  EXPECT_EQ(src.find("// ---- file: common.cuh"), src.find("// ---- file:"));
  EXPECT_NE(src.find("// ---- file: gemm_wgmma_kernel.cuh"), std::string::npos);
  // As Module::compile runs it on a 9.0 card: --gpu-architecture=sm_90 first, then sm90a_options().
  const std::vector<char> cubin = cuda::nvrtc_compile(src, "lathe_kernels_90a.cu", sm90a_options(), "sm_90");
  ASSERT_GT(cubin.size(), 100u);
  const std::string bytes(cubin.begin(), cubin.end());
  for (const Fmt& f : kFmts)
    for (int bm : {128, 256}) {
      EXPECT_NE(bytes.find(gemm_wgmma_kernel_name(f.type, bm)), std::string::npos);
      // The register-A kernel and its multi and SwiGLU forms: the formats with their boxes (the
      // others, Q2_K, Q3_K, Q5_K, run the staged kernel a matrix).
      if (!gemm_wgmma_uses_rs(f.type, 4096)) continue;
      EXPECT_NE(bytes.find(gemm_wgmma_rs_kernel_name(f.type, bm)), std::string::npos);
      EXPECT_NE(bytes.find(gemm_wgmma_multi_kernel_name(f.type, bm)), std::string::npos);
      EXPECT_NE(bytes.find(gemm_wgmma_swiglu_kernel_name(f.type, bm)), std::string::npos);
    }
  // Plain sm_90 refuses wgmma: the module above really was built for sm_90a.
  EXPECT_THROW(cuda::nvrtc_compile(src, "lathe_kernels_90a.cu", {}, "sm_90"), cuda::CudaError);
}

}  // namespace
}  // namespace lathe::kernels
