// A decode row's attention and o product in one launch, o split along its input by kv head
// (kernels/attention_o_split_launch.h), against the two launches it replaces: rope_attention's
// decode attention (head norms, rope and the cache append in its prologue) writing the heads'
// outputs, then an f64 product on the host of the same o bytes. Over head layouts (qwen3-0.6b's 16/8
// of 128 among them), both int8 contracts, positions inside the first chunk, across chunks and past
// one ring's fill. Each case checks:
//   - the caches the same bits as the held-back attention's (every block of a kv head appends the
//     same slot);
//   - s_io - s_io before within the contract's bound of o . attention, relative to its largest
//     value (the heads' outputs quantized by 32-value blocks: int8x2 ~14 bits, int8 ~8);
//   - the same bits in a second launch (the int64 adds do not depend on their order).
#include "gguf/block_format.h"
#include "kernels/attention_launch.h"
#include "kernels/attention_o_split_launch.h"
#include "kernels/rope_launch.h"
#include "test_gpu_ops_helpers.h"
#include "test_product_helpers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace lathe::test {
namespace {

constexpr double kFix = 4294967296.0;


struct OCase {
  int64_t n_head, n_head_kv, d, e;
  int32_t position;
  kernels::Activations a;
  bool norm;
};

// cluster: the cluster form (attention_o_cluster) instead of R blocks each computing the attention.
void matches_held_back(bool cluster) {
  const OCase cases[] = {
      {16, 8, 128, 1024, 77, kernels::Activations::int8x2, true},  // qwen3-0.6b
      {16, 8, 128, 1024, 127, kernels::Activations::int8, true},
      {16, 8, 128, 1024, 0, kernels::Activations::int8x2, true},   // the row's own slot alone
      {32, 8, 128, 512, 5, kernels::Activations::int8x2, false},   // G 4: 16 blocks a row's share
      {8, 2, 64, 256, 300, kernels::Activations::int8x2, true},    // past one fill of the ring
      {8, 2, 64, 256, 40, kernels::Activations::int8, false},
      {4, 2, 64, 256, 33, kernels::Activations::int8x2, true},     // qwen3-tiny: a row's share 4 blocks (8-byte copies)
      {8, 8, 64, 512, 18, kernels::Activations::int8x2, true},     // one query head a kv head: 2 blocks (4-byte copies)
  };
  const int64_t n_ctx = 512;
  uint32_t seed = 3600;
  std::printf("attention_o_%s: |s_io - s0 - o a| / max |o a| (bound int8x2 %.0e, int8 %.0e)\n",
              cluster ? "cluster" : "split", 2e-4, 3e-2);
  for (const OCase& c : cases) {
    const int64_t slot = c.n_head_kv * c.d, k_in = c.n_head * c.d;
    const std::vector<int32_t> sequences{0}, positions{c.position};
    const std::vector<float> k0 = random_values(static_cast<size_t>(n_ctx * slot), seed += 10, 1.0f);
    const std::vector<float> v0 = random_values(static_cast<size_t>(n_ctx * slot), seed + 1, 1.0f);
    std::vector<uint16_t> kbits, vbits;
    for (float x : k0) kbits.push_back(f32_to_f16(x));
    for (float x : v0) vbits.push_back(f32_to_f16(x));
    const std::vector<float> q = random_values(static_cast<size_t>(k_in), seed + 2, 1.0f);
    const std::vector<float> k = random_values(static_cast<size_t>(slot), seed + 3, 1.0f);
    const std::vector<float> v = random_values(static_cast<size_t>(slot), seed + 4, 1.0f);
    const std::vector<float> qw = random_values(static_cast<size_t>(c.d), seed + 5, 1.0f);
    const std::vector<float> kw = random_values(static_cast<size_t>(c.d), seed + 6, 1.0f);
    // o [e][n_head d] in Q8_0, and the residual before it in fixed point.
    const std::vector<float> of = random_values(static_cast<size_t>(c.e * k_in), seed + 7, 0.05f);
    const size_t row_bytes = static_cast<size_t>(34 * k_in / 32);
    std::vector<uint8_t> ob(static_cast<size_t>(c.e) * row_bytes);
    for (int64_t i = 0; i < c.e; ++i) quantize_row(GgmlType::Q8_0, of.data() + i * k_in, ob.data() + i * row_bytes, k_in);
    const std::vector<float> x0 = random_values(static_cast<size_t>(c.e), seed + 8, 1.0f);
    std::vector<long long> s0(static_cast<size_t>(c.e));
    for (int64_t i = 0; i < c.e; ++i) s0[i] = std::llrint(double(x0[i]) * kFix);

    auto dseq = to_device(sequences), dpos = to_device(positions), dqw = to_device(qw), dkw = to_device(kw);
    auto dq = to_device(q), dk = to_device(k), dv = to_device(v), dob = to_device(ob);
    const kernels::RopeTable table = kernels::make_rope_table(c.d, 1000000.0);
    const kernels::AttentionRope rope{dk.ptr(), dv.ptr(), &table, RopeOrder::neox, c.norm, c.norm ? dqw.ptr() : 0,
                                      c.norm ? dkw.ptr() : 0, 1e-6f};
    const kernels::AttentionShape shape{1, c.n_head, c.n_head_kv, c.d, n_ctx, n_ctx};
    const kernels::AttentionOptionsGpu opt;
    const kernels::WeightMatrix ow{GgmlType::Q8_0, dob.ptr(), c.e, k_in};
    const std::string what = fmt::format("h{}/{} d{} e{} at {} {}{}", c.n_head, c.n_head_kv, c.d, c.e, c.position,
                                         kernels::activations_name(c.a), c.norm ? " normed" : "");
    ASSERT_TRUE(cluster ? kernels::attention_o_cluster_applies(shape, ow, c.a)
                        : kernels::attention_o_split_applies(shape, ow, c.a))
        << what;
    cuda::Stream s;

    // Held back: the attention alone, its output in f32.
    const kernels::AttentionSplit split = kernels::plan_attention_split(shape, opt);
    cuda::DeviceBuffer work(std::max<size_t>(split.workspace_bytes, 16), "attention workspace");
    cuda::DeviceBuffer tickets(kernels::attention_ticket_bytes(shape), "attention tickets");
    tickets.zero();
    auto kca = to_device(kbits), vca = to_device(vbits), outa = to_device(std::vector<float>(q.size(), NAN));
    kernels::decode_attention(outa.ptr(), dq.ptr(), kca.ptr(), vca.ptr(), dseq.ptr(), dpos.ptr(), shape, opt, split,
                              work.ptr(), s.handle(), tickets.ptr(), {}, &rope);
    s.synchronize();
    const std::vector<float> attn = from_device<float>(outa, q.size());

    // The one launch, twice from the same start.
    std::vector<long long> first, again;
    for (int rep = 0; rep < 2; ++rep) {
      auto kcb = to_device(kbits), vcb = to_device(vbits), sio = to_device(s0);
      kernels::AttentionOSplit f;
      f.q = dq.ptr();
      f.k_cache = kcb.ptr();
      f.v_cache = vcb.ptr();
      f.sequences = dseq.ptr();
      f.positions = dpos.ptr();
      f.s_io = sio.ptr();
      if (cluster)
        kernels::attention_o_cluster(shape, opt, rope, ow, c.a, f, s.handle());
      else
        kernels::attention_o_split(shape, opt, rope, ow, c.a, f, s.handle());
      s.synchronize();
      EXPECT_EQ(from_device<uint16_t>(kcb, kbits.size()), from_device<uint16_t>(kca, kbits.size())) << what << ": k cache";
      EXPECT_EQ(from_device<uint16_t>(vcb, vbits.size()), from_device<uint16_t>(vca, vbits.size())) << what << ": v cache";
      (rep == 0 ? first : again) = from_device<long long>(sio, s0.size());
    }
    EXPECT_EQ(first, again) << what << ": a second launch gave other bits";

    std::vector<float> row(static_cast<size_t>(k_in));
    double worst = 0.0, scale = 0.0;
    for (int64_t i = 0; i < c.e; ++i) {
      dequantize_row(GgmlType::Q8_0, ob.data() + i * row_bytes, row.data(), k_in);
      double p = 0.0;
      for (int64_t j = 0; j < k_in; ++j) p += double(row[j]) * double(attn[j]);
      scale = std::max(scale, std::fabs(p));
      worst = std::max(worst, std::fabs(double(first[i] - s0[i]) / kFix - p));
    }
    const double bound = c.a == kernels::Activations::int8x2 ? 2e-4 : 3e-2;
    std::printf("  %-40s R %lld  %.2e\n", what.c_str(), static_cast<long long>(kernels::o_split_blocks_per_head(shape, ow)),
                worst / scale);
    EXPECT_LE(worst, bound * scale) << what;
  }
}

TEST(AttentionOSplitGpu, MatchesTheHeldBackAttentionAndRepeatsItsBits) {
  REQUIRE_GPU();
  matches_held_back(false);
}

// The cluster form (written in the thirty-sixth session; device_run.sh os7): the same cases.
TEST(AttentionOSplitGpu, ClusterFormMatchesTheHeldBackAttentionAndRepeatsItsBits) {
  REQUIRE_GPU();
  matches_held_back(true);
}

// The launch at qwen3-0.6b's shapes (16/8 heads of 128, o 1024 x 2048, position 80 or
// O_SPLIT_TIMING_POSITION) in a graph of 28
// layers, against the held-back attention alone (its launch below long_from: one split): the us the
// one launch adds over the attention, against the ~3.1 us of o's own launch in the step (stamps).
TEST(AttentionOSplitGpu, TimingAgainstTheAttentionAlone) {
  REQUIRE_GPU();
  const int64_t n_head = 16, n_kv = 8, d = 128, e = 1024, n_ctx = 512, k_in = n_head * d, layers = 28;
  const char* at = std::getenv("O_SPLIT_TIMING_POSITION");  // a measuring knob: the row's position
  const std::vector<int32_t> sequences{0}, positions{at ? std::atoi(at) : 80};
  std::vector<uint16_t> bits;
  for (float x : random_values(static_cast<size_t>(n_ctx * n_kv * d), 91, 1.0f)) bits.push_back(f32_to_f16(x));
  const std::vector<float> of = random_values(static_cast<size_t>(e * k_in), 92, 0.05f);
  const size_t row_bytes = static_cast<size_t>(34 * k_in / 32);
  std::vector<uint8_t> ob(static_cast<size_t>(e) * row_bytes);
  for (int64_t i = 0; i < e; ++i) quantize_row(GgmlType::Q8_0, of.data() + i * k_in, ob.data() + i * row_bytes, k_in);
  auto dseq = to_device(sequences), dpos = to_device(positions);
  auto dq = to_device(random_values(static_cast<size_t>(k_in), 93, 1.0f));
  auto dk = to_device(random_values(static_cast<size_t>(n_kv * d), 94, 1.0f));
  auto dv = to_device(random_values(static_cast<size_t>(n_kv * d), 95, 1.0f));
  auto dw = to_device(random_values(static_cast<size_t>(d), 96, 1.0f));
  std::vector<cuda::DeviceBuffer> kc, vc, o;
  for (int64_t l = 0; l < layers; ++l) {
    kc.push_back(to_device(bits));
    vc.push_back(to_device(bits));
    o.push_back(to_device(ob));
  }
  auto out = to_device(std::vector<float>(static_cast<size_t>(k_in), 0.0f));
  auto sio = to_device(std::vector<long long>(static_cast<size_t>(e), 0));
  const kernels::RopeTable table = kernels::make_rope_table(d, 1000000.0);
  const kernels::AttentionRope rope{dk.ptr(), dv.ptr(), &table, RopeOrder::neox, true, dw.ptr(), dw.ptr(), 1e-6f};
  const kernels::AttentionShape shape{1, n_head, n_kv, d, n_ctx, n_ctx};
  kernels::AttentionShape short_shape = shape;
  short_shape.max_visible = 128;
  const kernels::AttentionOptionsGpu opt;
  const kernels::AttentionSplit split = kernels::plan_attention_split(short_shape, opt);
  cuda::DeviceBuffer tickets(kernels::attention_ticket_bytes(shape), "attention tickets");
  tickets.zero();
  cuda::Stream s;
  const double alone = kernels::test::graph_median_us(s, static_cast<int>(layers), [&](int l) {
    kernels::decode_attention(out.ptr(), dq.ptr(), kc[l].ptr(), vc[l].ptr(), dseq.ptr(), dpos.ptr(), shape, opt, split, 0,
                              s.handle(), tickets.ptr(), {}, &rope);
  });
  const auto operands = [&](int l) {
    kernels::AttentionOSplit f;
    f.q = dq.ptr();
    f.k_cache = kc[l].ptr();
    f.v_cache = vc[l].ptr();
    f.sequences = dseq.ptr();
    f.positions = dpos.ptr();
    f.s_io = sio.ptr();
    return f;
  };
  const double fused = kernels::test::graph_median_us(s, static_cast<int>(layers), [&](int l) {
    kernels::attention_o_split(shape, opt, rope, kernels::WeightMatrix{GgmlType::Q8_0, o[l].ptr(), e, k_in},
                               kernels::Activations::int8x2, operands(l), s.handle());
  });
  const double clustered = kernels::test::graph_median_us(s, static_cast<int>(layers), [&](int l) {
    kernels::attention_o_cluster(shape, opt, rope, kernels::WeightMatrix{GgmlType::Q8_0, o[l].ptr(), e, k_in},
                                 kernels::Activations::int8x2, operands(l), s.handle());
  });
  std::printf("qwen3-0.6b attention at position %d, a layer in a graph of %lld: alone (%lld split) %.2f us, with o "
              "split along its input %.2f us, its cluster form %.2f us\n",
              positions[0], static_cast<long long>(layers), static_cast<long long>(split.n_split), alone, fused,
              clustered);
}

TEST(AttentionOSplitGpu, RefusesWhatItDoesNotTake) {
  REQUIRE_GPU();
  const kernels::AttentionShape s06{1, 16, 8, 128, 512, 512};
  const kernels::WeightMatrix o06{GgmlType::Q8_0, 0, 1024, 2048};  // [n_embd][n_head d]
  EXPECT_TRUE(kernels::attention_o_split_applies(s06, o06, kernels::Activations::int8x2));
  EXPECT_FALSE(kernels::attention_o_split_applies(s06, o06, kernels::Activations::f32));
  EXPECT_FALSE(kernels::attention_o_split_applies(s06, kernels::WeightMatrix{GgmlType::Q4_K, 0, 1024, 2048},
                                                  kernels::Activations::int8x2));
  EXPECT_FALSE(kernels::attention_o_split_applies(kernels::AttentionShape{1, 6, 2, 64, 512, 512},
                                                  kernels::WeightMatrix{GgmlType::Q8_0, 0, 256, 384},
                                                  kernels::Activations::int8x2))
      << "three query heads a kv head: a row's share of 6 blocks is not among the shapes taken";
  EXPECT_FALSE(kernels::attention_o_split_applies(kernels::AttentionShape{1, 16, 8, 256, 512, 512},
                                                  kernels::WeightMatrix{GgmlType::Q8_0, 0, 1024, 4096},
                                                  kernels::Activations::int8x2))
      << "head size 256";
  EXPECT_FALSE(kernels::attention_o_split_applies(kernels::AttentionShape{2, 16, 8, 128, 512, 512}, o06,
                                                  kernels::Activations::int8x2))
      << "two rows";
}

}  // namespace
}  // namespace lathe::test
