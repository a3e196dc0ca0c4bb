// A row's best logits on the device (kernels/top_candidates.cuh) against the host's best_logits (the
// sampler's order: larger first, ties to the lower index, -0 as +0) over a sweep of row lengths (one
// chunk, chunk edges, Qwen's and Llama's vocabularies) and head sizes, rows with many ties, -inf and
// +-0; the penalized tokens' logits beside; written into page-locked memory as the GPU engine does;
// replayed (the counter left zero). A timing line for a Qwen row.
#include "kernels/top_candidates_launch.h"
#include "runtime/sampler.h"
#include "test_gpu_ops_helpers.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace lathe::kernels {
namespace {

using test::from_device;
using test::to_device;

// A row of n logits: normal, every third rounded to a quarter (ties across chunks), some -inf, some
// +-0; `flat`: every value one of 4 levels (ties everywhere, the head's edge inside a tie).
std::vector<float> row(size_t n, uint32_t seed, bool flat) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> l(n);
  for (size_t i = 0; i < n; ++i) {
    l[i] = normal(rng);
    if (flat) l[i] = std::round(l[i] / 2.0f);
    else if (i % 3 == 0) l[i] = std::round(l[i] * 4) / 4;
    if (i % 101 == 7) l[i] = -INFINITY;
    if (i % 89 == 3) l[i] = (i / 89) % 2 ? -0.0f : 0.0f;
  }
  return l;
}

TEST(TopCandidatesGpu, MatchesTheHostsHead) {
  REQUIRE_GPU();
  int cases = 0;
  for (const int64_t n : {1, 5, 1000, 4096, 4097, 12288, 32000, 128256, 151936}) {
    for (const bool flat : {false, true}) {
      const std::vector<float> l = row(static_cast<size_t>(n), static_cast<uint32_t>(n + flat), flat);
      const cuda::DeviceBuffer x = to_device(l);
      std::vector<int32_t> also;
      for (int64_t i = 0; i < std::min<int64_t>(n, 70); ++i) also.push_back(static_cast<int32_t>((i * 7919) % n));
      const cuda::DeviceBuffer also_d = to_device(also);
      for (int64_t m : {int64_t{1}, int64_t{2}, int64_t{40}, int64_t{104}, int64_t{1024}, n}) {
        m = std::min(m, n);
        if (m > kMaxTopCandidates) continue;
        cuda::DeviceBuffer work(top_candidates_workspace_bytes(n, m), "workspace");
        work.zero();
        cuda::DeviceBuffer keys(static_cast<size_t>(m) * 8, "keys"), also_out(also.size() * 4 + 4, "also");
        std::vector<float> want_values;
        std::vector<int32_t> want_tokens;
        best_logits(l, static_cast<size_t>(m), want_values, want_tokens);
        for (int rep = 0; rep < 2; ++rep) {  // the second launch reads the counter the first left
          top_candidates(keys.ptr(), x.ptr(), n, m, also_d.ptr(), static_cast<int64_t>(also.size()), also_out.ptr(),
                         work.ptr(), 0);
          const std::vector<uint64_t> k = from_device<uint64_t>(keys, static_cast<size_t>(m));
          for (int64_t i = 0; i < m; ++i) {
            ASSERT_EQ(top_candidate_index(k[i]), want_tokens[i]) << "n " << n << " m " << m << " flat " << flat << " rank " << i;
            const float v = top_candidate_value(k[i]), w = want_values[i];
            ASSERT_TRUE(v == w || (std::isinf(v) && std::isinf(w) && v < 0 && w < 0)) << "n " << n << " rank " << i;
          }
          const std::vector<float> a = from_device<float>(also_out, also.size());
          for (size_t j = 0; j < also.size(); ++j)
            ASSERT_EQ(std::bit_cast<uint32_t>(a[j]), std::bit_cast<uint32_t>(l[static_cast<size_t>(also[j])]));
        }
        ++cases;
      }
    }
  }
  std::printf("top candidates: %d cases of (row length, head size, row kind) equal the host's head\n", cases);
}

// One workspace sized for the largest head serving heads of every size in turn, as the GPU engine's
// (a head's size follows the penalized tokens in the history, so it shrinks as well as grows).
TEST(TopCandidatesGpu, OneWorkspaceServesHeadsOfEverySize) {
  REQUIRE_GPU();
  const int64_t n = 151936;
  const std::vector<float> l = row(static_cast<size_t>(n), 9, false);
  const cuda::DeviceBuffer x = to_device(l);
  cuda::DeviceBuffer work(top_candidates_workspace_bytes(n, kMaxTopCandidates), "workspace");
  work.zero();
  cuda::DeviceBuffer keys(kMaxTopCandidates * 8, "keys");
  for (const int64_t m : {int64_t{1024}, int64_t{40}, int64_t{104}, int64_t{41}, int64_t{1}, int64_t{700}, int64_t{40}}) {
    top_candidates(keys.ptr(), x.ptr(), n, m, 0, 0, 0, work.ptr(), 0);
    std::vector<float> want_values;
    std::vector<int32_t> want_tokens;
    best_logits(l, static_cast<size_t>(m), want_values, want_tokens);
    const std::vector<uint64_t> k = from_device<uint64_t>(keys, static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) ASSERT_EQ(top_candidate_index(k[i]), want_tokens[i]) << "m " << m << " rank " << i;
    std::vector<uint64_t> ones(kMaxTopCandidates, ~0ull);
    keys.upload(ones.data(), ones.size() * 8);  // the next launch must write every key it returns
  }
}

TEST(TopCandidatesGpu, WritesPageLockedMemory) {
  REQUIRE_GPU();
  const int64_t n = 151936, m = 104;
  const std::vector<float> l = row(static_cast<size_t>(n), 3, false);
  const cuda::DeviceBuffer x = to_device(l);
  cuda::PinnedBuffer io(static_cast<size_t>(m) * 8 + 64 * 8 + 16);
  auto* ids = reinterpret_cast<int32_t*>(static_cast<char*>(io.data()) + m * 8);
  for (int j = 0; j < 64; ++j) ids[j] = 151935 - 13 * j;
  cuda::DeviceBuffer work(top_candidates_workspace_bytes(n, m), "workspace");
  work.zero();
  cuda::Stream stream;
  const CUdeviceptr done = io.device_ptr() + m * 8 + 512;
  top_candidates(io.device_ptr(), x.ptr(), n, m, io.device_ptr() + m * 8, 64, io.device_ptr() + m * 8 + 256,
                 work.ptr(), stream.handle(), done, 7);
  stream.synchronize();
  EXPECT_EQ(*reinterpret_cast<const volatile uint32_t*>(static_cast<char*>(io.data()) + m * 8 + 512), 7u);  // the tag, last
  std::vector<float> want_values;
  std::vector<int32_t> want_tokens;
  best_logits(l, static_cast<size_t>(m), want_values, want_tokens);
  const auto* k = static_cast<const uint64_t*>(io.data());
  for (int64_t i = 0; i < m; ++i) ASSERT_EQ(top_candidate_index(k[i]), want_tokens[i]) << i;
  const auto* pen = reinterpret_cast<const float*>(ids + 64);
  for (int j = 0; j < 64; ++j) ASSERT_EQ(pen[j], l[static_cast<size_t>(ids[j])]) << j;
  // Timing: a launch and its wait, as a sampled decode step adds them.
  std::vector<double> us;
  for (int r = 0; r < 50; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    top_candidates(io.device_ptr(), x.ptr(), n, m, io.device_ptr() + m * 8, 64, io.device_ptr() + m * 8 + 256,
                   work.ptr(), stream.handle());
    stream.synchronize();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("top candidates: a row of %lld, head %lld, 64 penalized: %.1f us a launch and its wait (median of 50)\n",
              static_cast<long long>(n), static_cast<long long>(m), test::median(us));
}

TEST(TopCandidatesGpu, RefusesBadSizes) {
  EXPECT_THROW(top_candidates(0, 0, 100, 0, 0, 0, 0, 8, 0), UserError);
  EXPECT_THROW(top_candidates(0, 0, 100, 101, 0, 0, 0, 8, 0), UserError);
  EXPECT_THROW(top_candidates(0, 0, 5000, kMaxTopCandidates + 1, 0, 0, 0, 8, 0), UserError);
}

}  // namespace
}  // namespace lathe::kernels
