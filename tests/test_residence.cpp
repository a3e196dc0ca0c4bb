// Residence without a GPU: what stays on the device, what moves to pinned host memory and in which
// order, and the refusals with their numbers.
#include "plan/residence.h"

#include "base/error.h"

#include <gtest/gtest.h>

namespace lathe::plan {
namespace {

constexpr uint64_t GB = 1000000000ull;
constexpr uint64_t MB = 1000000ull;  // slack for the one vector

ResidenceRequest model(uint64_t device_free, uint64_t host = 64 * GB) {
  ResidenceRequest r;
  r.tensors = {{"token_embd.weight", 2 * GB, true},
               {"blk.0.attn_norm.weight", 16384, false},
               {"blk.0.attn_q.weight", 1 * GB, true},
               {"blk.0.ffn_up_exps.weight", 3 * GB, true},
               {"blk.0.ffn_down.weight", 2 * GB, true},
               {"output.weight", 2 * GB, true}};
  r.cache_bytes = 1 * GB;
  r.n_ctx = 4096;
  r.step_bytes = GB / 2;
  r.margin = GB / 2;
  r.device_free = device_free;
  r.host_available = host;
  return r;
}

TEST(Residence, EverythingStaysWhenItFits) {
  const Residence r = plan_residence(model(20 * GB));
  EXPECT_TRUE(r.on_host.empty());
  EXPECT_EQ(r.device_bytes, 10 * GB + 16384);
  EXPECT_EQ(r.host_bytes, 0u);
}

TEST(Residence, MovesTheEmbeddingFirstThenExpertsThenTheLargest) {
  // Weights 10 GB + 2 GB fixed; 10 GB free: 2 GB must go -> the embedding alone.
  Residence r = plan_residence(model(10 * GB + MB));
  EXPECT_EQ(r.on_host, (std::set<std::string>{"token_embd.weight"}));
  // 7 GB free: 5 GB must go -> the embedding, then the expert stack.
  r = plan_residence(model(7 * GB + MB));
  EXPECT_EQ(r.on_host, (std::set<std::string>{"token_embd.weight", "blk.0.ffn_up_exps.weight"}));
  // 5 GB free: 7 GB must go -> then the largest other matrix (2 GB; the first of equals).
  r = plan_residence(model(5 * GB + MB));
  EXPECT_EQ(r.on_host.size(), 3u);
  EXPECT_TRUE(r.on_host.count("blk.0.ffn_down.weight"));
  EXPECT_EQ(r.host_bytes, 7 * GB);
  EXPECT_LE(r.device_bytes + 2 * GB, 5 * GB + MB);
}

TEST(Residence, RefusesWithTheNumbers) {
  try {
    plan_residence(model(1 * GB));  // the caches and buffers alone need 2 GB
    FAIL();
  } catch (const UserError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("KV caches (1.00 GB at --ctx 4096)"), std::string::npos) << m;
    EXPECT_NE(m.find("lower --ctx"), std::string::npos) << m;
  }
  try {
    plan_residence(model(5 * GB + MB, 3 * GB));  // 7 GB would move, 3 GB may be pinned
    FAIL();
  } catch (const UserError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("10.00 GB of weights"), std::string::npos) << m;
    EXPECT_NE(m.find("3.00 GB of host memory can be pinned, but 7.00 GB would have to move"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace lathe::plan
