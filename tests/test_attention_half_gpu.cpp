// A decode row's attention half in one launch (kernels/attention_o_split_launch.h's attention_half:
// the residual's norm from its fixed-point sum, q/k/v, the attention with rope_attention's prologue,
// o split along its input), against the launches it replaces: the merged q/k/v product with the norm
// in its prologue reading the same sum (gemv_multi_norm, x_fixed), rope_attention's decode attention
// writing the heads' outputs, then an f64 product on the host of the same o bytes. Over head layouts
// (qwen3-0.6b's 16/8 of 128 among them), both int8 contracts, positions inside the first chunk,
// across chunks and past one ring's fill. Each case checks:
//   - the caches within 2^-9 of the held-back chain's (the same values up to the products' f32 order,
//     rounded to f16);
//   - s_out - s_in within the contract's bound of o . attention, relative to its largest value;
//   - the sum it zeroes zero, and the same bits in a second launch (s_out and the caches).
#include "gguf/block_format.h"
#include "kernels/attention_launch.h"
#include "kernels/attention_o_split_launch.h"
#include "kernels/gemv_multi_launch.h"
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

std::vector<uint8_t> q8_0_rows(const std::vector<float>& w, int64_t rows, int64_t k) {
  const size_t row_bytes = static_cast<size_t>(34 * k / 32);
  std::vector<uint8_t> b(static_cast<size_t>(rows) * row_bytes);
  for (int64_t i = 0; i < rows; ++i) quantize_row(GgmlType::Q8_0, w.data() + i * k, b.data() + i * row_bytes, k);
  return b;
}

struct HalfCase {
  int64_t n_head, n_head_kv, d, e;
  int32_t position;
  kernels::Activations a;
  bool norm;
  RopeOrder order = RopeOrder::neox;
  int32_t sequence = 0;  // the row's sequence: its caches start at sequence * n_ctx slots
  bool sinks = false;    // a sink logit a query head
  float cap = 0;         // the scores' soft cap, 0 for none
};

TEST(AttentionHalfGpu, MatchesTheHeldBackLaunchesAndRepeatsItsBits) {
  REQUIRE_GPU();
  const HalfCase cases[] = {
      {16, 8, 128, 1024, 77, kernels::Activations::int8x2, true},  // qwen3-0.6b
      {16, 8, 128, 1024, 127, kernels::Activations::int8, true},
      {16, 8, 128, 1024, 0, kernels::Activations::int8x2, true},   // the row's own slot alone
      {32, 8, 128, 512, 5, kernels::Activations::int8x2, false},   // G 4: 96 rows of q/k/v a block
      {8, 2, 64, 256, 300, kernels::Activations::int8x2, true},    // past one fill of the ring
      {8, 2, 64, 256, 40, kernels::Activations::int8, false},
      {4, 2, 64, 256, 33, kernels::Activations::int8x2, true},     // qwen3-tiny's heads
      {8, 8, 64, 512, 18, kernels::Activations::int8x2, true},     // one query head a kv head: 24 rows a block
      {16, 2, 64, 256, 90, kernels::Activations::int8x2, true},    // G 8: two units a warp, 80 rows a block
      {8, 2, 64, 256, 45, kernels::Activations::int8x2, false, RopeOrder::normal, 1, true, 30.0f},  // llama's order,
      {8, 2, 64, 256, 200, kernels::Activations::int8, true, RopeOrder::normal, 2, true, 0.0f},     // sinks, sequence
  };
  const int64_t n_ctx = 512;
  uint32_t seed = 3700;
  std::printf("attention_half: |s_out - s_in - o a| / max |o a| (bound int8x2 %.0e, int8 %.0e); caches\n", 2e-4, 3e-2);
  for (const HalfCase& c : cases) {
    const int64_t slot = c.n_head_kv * c.d, k_in = c.n_head * c.d, e = c.e;
    const std::vector<int32_t> sequences{c.sequence}, positions{c.position};
    const size_t cache_values = static_cast<size_t>((c.sequence + 1) * n_ctx * slot);
    std::vector<uint16_t> kbits, vbits;
    for (float x : random_values(cache_values, seed += 10, 1.0f)) kbits.push_back(f32_to_f16(x));
    for (float x : random_values(cache_values, seed + 1, 1.0f)) vbits.push_back(f32_to_f16(x));
    const std::vector<uint8_t> wq = q8_0_rows(random_values(static_cast<size_t>(k_in * e), seed + 2, 0.08f), k_in, e);
    const std::vector<uint8_t> wk = q8_0_rows(random_values(static_cast<size_t>(slot * e), seed + 3, 0.08f), slot, e);
    const std::vector<uint8_t> wv = q8_0_rows(random_values(static_cast<size_t>(slot * e), seed + 4, 0.08f), slot, e);
    const std::vector<uint8_t> ob = q8_0_rows(random_values(static_cast<size_t>(e * k_in), seed + 5, 0.05f), e, k_in);
    const std::vector<float> qw = random_values(static_cast<size_t>(c.d), seed + 6, 1.0f);
    const std::vector<float> kw = random_values(static_cast<size_t>(c.d), seed + 7, 1.0f);
    std::vector<float> nw = random_values(static_cast<size_t>(e), seed + 8, 0.5f);
    for (float& w : nw) w += 1.0f;
    const std::vector<float> x0 = random_values(static_cast<size_t>(e), seed + 9, 2.0f);
    std::vector<long long> s0(static_cast<size_t>(e));
    for (int64_t i = 0; i < e; ++i) s0[i] = std::llrint(double(x0[i]) * kFix);

    auto dseq = to_device(sequences), dpos = to_device(positions), dqw = to_device(qw), dkw = to_device(kw);
    auto dwq = to_device(wq), dwk = to_device(wk), dwv = to_device(wv), dob = to_device(ob), dnw = to_device(nw);
    auto ds0 = to_device(s0);
    const kernels::WeightMatrix mq{GgmlType::Q8_0, dwq.ptr(), k_in, e}, mk{GgmlType::Q8_0, dwk.ptr(), slot, e},
        mv{GgmlType::Q8_0, dwv.ptr(), slot, e}, ow{GgmlType::Q8_0, dob.ptr(), e, k_in};
    const kernels::RopeTable table = kernels::make_rope_table(c.d, 1000000.0);
    const kernels::AttentionShape shape{1, c.n_head, c.n_head_kv, c.d, n_ctx, n_ctx};
    auto dsinks = to_device(random_values(static_cast<size_t>(c.n_head), seed + 11, 2.0f));
    kernels::AttentionOptionsGpu opt;
    opt.sinks = c.sinks ? dsinks.ptr() : 0;
    opt.cap = c.cap;
    const std::string what = fmt::format("h{}/{} d{} e{} at {} of seq {} {}{}{}{}{}", c.n_head, c.n_head_kv, c.d, e,
                                         c.position, c.sequence, kernels::activations_name(c.a), c.norm ? " normed" : "",
                                         c.order == RopeOrder::normal ? " normal order" : "", c.sinks ? " sinks" : "",
                                         c.cap != 0 ? " capped" : "");
    ASSERT_TRUE(kernels::attention_half_applies(shape, mq, mk, mv, ow, c.a)) << what;
    cuda::Stream s;

    // Held back: q/k/v with the norm in the prologue (reading the fixed-point sum), then the attention.
    auto q = to_device(std::vector<float>(static_cast<size_t>(k_in), NAN));
    auto k = to_device(std::vector<float>(static_cast<size_t>(slot), NAN));
    auto v = to_device(std::vector<float>(static_cast<size_t>(slot), NAN));
    auto residual = to_device(std::vector<float>(static_cast<size_t>(e), NAN));
    const kernels::WeightMatrix ms[3] = {mq, mk, mv};
    ASSERT_TRUE(kernels::merged_fixed_applies(ms, 3, c.a)) << what;
    kernels::NormPrologue np;
    np.x = ds0.ptr();
    np.w = dnw.ptr();
    np.sum = residual.ptr();
    np.eps = 1e-6f;
    np.early_fills = 2;
    np.x_fixed = true;
    const CUdeviceptr outs[3] = {q.ptr(), k.ptr(), v.ptr()};
    kernels::gemv_multi_norm(ms, 3, c.a, np, outs, s.handle());
    const kernels::AttentionRope rope{k.ptr(), v.ptr(), &table, c.order, c.norm, c.norm ? dqw.ptr() : 0,
                                      c.norm ? dkw.ptr() : 0, 1e-6f};
    const kernels::AttentionSplit split = kernels::plan_attention_split(shape, opt);
    cuda::DeviceBuffer work(std::max<size_t>(split.workspace_bytes, 16), "attention workspace");
    cuda::DeviceBuffer tickets(kernels::attention_ticket_bytes(shape), "attention tickets");
    tickets.zero();
    auto kca = to_device(kbits), vca = to_device(vbits), outa = to_device(std::vector<float>(static_cast<size_t>(k_in), NAN));
    kernels::decode_attention(outa.ptr(), q.ptr(), kca.ptr(), vca.ptr(), dseq.ptr(), dpos.ptr(), shape, opt, split,
                              work.ptr(), s.handle(), tickets.ptr(), {}, &rope);
    s.synchronize();
    const std::vector<float> attn = from_device<float>(outa, static_cast<size_t>(k_in));
    const std::vector<uint16_t> kheld = from_device<uint16_t>(kca, kbits.size()), vheld = from_device<uint16_t>(vca, vbits.size());

    // The one launch, twice from the same start.
    std::vector<long long> first, again;
    std::vector<uint16_t> kfirst, vfirst;
    for (int rep = 0; rep < 2; ++rep) {
      auto kcb = to_device(kbits), vcb = to_device(vbits);
      auto sout = to_device(std::vector<long long>(static_cast<size_t>(e), 0));
      auto zero = to_device(std::vector<long long>(static_cast<size_t>(e), 12345));
      kernels::AttentionHalf f;
      f.wq = mq;
      f.wk = mk;
      f.wv = mv;
      f.s_in = ds0.ptr();
      f.norm_w = dnw.ptr();
      f.norm_eps = 1e-6f;
      f.s_out = sout.ptr();
      f.zero = zero.ptr();
      f.k_cache = kcb.ptr();
      f.v_cache = vcb.ptr();
      f.sequences = dseq.ptr();
      f.positions = dpos.ptr();
      const kernels::AttentionRope no_kv{0, 0, &table, c.order, c.norm, c.norm ? dqw.ptr() : 0,
                                         c.norm ? dkw.ptr() : 0, 1e-6f};
      kernels::attention_half(shape, opt, no_kv, ow, c.a, f, s.handle());
      s.synchronize();
      for (long long z : from_device<long long>(zero, static_cast<size_t>(e))) ASSERT_EQ(z, 0) << what << ": the zeroed sum";
      const std::vector<uint16_t> kc = from_device<uint16_t>(kcb, kbits.size()), vc = from_device<uint16_t>(vcb, vbits.size());
      if (rep == 0) {
        kfirst = kc;
        vfirst = vc;
      } else {
        EXPECT_EQ(kc, kfirst) << what << ": k cache, second launch";
        EXPECT_EQ(vc, vfirst) << what << ": v cache, second launch";
      }
      (rep == 0 ? first : again) = from_device<long long>(sout, static_cast<size_t>(e));
    }
    EXPECT_EQ(first, again) << what << ": a second launch gave other bits";

    // The caches: the row's slot within 2^-9 of its largest value (the held-back chain's), the rest untouched.
    double cache_worst = 0.0, cache_scale = 0.0;
    for (size_t i = 0; i < kbits.size(); ++i) {
      const bool in_slot = static_cast<int64_t>(i) / slot == c.sequence * n_ctx + c.position;
      if (!in_slot) {
        ASSERT_EQ(kfirst[i], kbits[i]) << what << ": k cache outside the row's slot";
        ASSERT_EQ(vfirst[i], vbits[i]) << what << ": v cache outside the row's slot";
        continue;
      }
      for (const auto& [a, b] : {std::pair{kfirst[i], kheld[i]}, std::pair{vfirst[i], vheld[i]}}) {
        cache_scale = std::max(cache_scale, std::fabs(double(f16_to_f32(b))));
        cache_worst = std::max(cache_worst, std::fabs(double(f16_to_f32(a)) - double(f16_to_f32(b))));
      }
    }
    EXPECT_LE(cache_worst, cache_scale / 512) << what << ": the row's slot";

    std::vector<float> row(static_cast<size_t>(k_in));
    const size_t row_bytes = static_cast<size_t>(34 * k_in / 32);
    double worst = 0.0, scale = 0.0;
    for (int64_t i = 0; i < e; ++i) {
      dequantize_row(GgmlType::Q8_0, ob.data() + i * row_bytes, row.data(), k_in);
      double p = 0.0;
      for (int64_t j = 0; j < k_in; ++j) p += double(row[j]) * double(attn[j]);
      scale = std::max(scale, std::fabs(p));
      worst = std::max(worst, std::fabs(double(first[i] - s0[i]) / kFix - p));
    }
    const double bound = c.a == kernels::Activations::int8x2 ? 2e-4 : 3e-2;
    std::printf("  %-40s %.2e  cache %.2e\n", what.c_str(), worst / scale, cache_worst / cache_scale);
    EXPECT_LE(worst, bound * scale) << what;
  }
}

// The launch at qwen3-0.6b's shapes (16/8 heads of 128, n_embd 1024, position 80 or
// O_SPLIT_TIMING_POSITION) in a graph of 28 layers, each its own weights, against the launches it
// replaces there but o's: the merged q/k/v product with the norm of the fixed-point sum, then the
// attention (o's own launch costs ~3.1 us more in the step: docs/perf.md).
TEST(AttentionHalfGpu, TimingAgainstTheLaunchesItReplaces) {
  REQUIRE_GPU();
  const int64_t n_head = 16, n_kv = 8, d = 128, e = 1024, n_ctx = 512, k_in = n_head * d, slot = n_kv * d, layers = 28;
  const char* at = std::getenv("O_SPLIT_TIMING_POSITION");  // a measuring knob: the row's position
  const std::vector<int32_t> sequences{0}, positions{at ? std::atoi(at) : 80};
  std::vector<uint16_t> bits;
  for (float x : random_values(static_cast<size_t>(n_ctx * slot), 91, 1.0f)) bits.push_back(f32_to_f16(x));
  const std::vector<uint8_t> wq = q8_0_rows(random_values(static_cast<size_t>(k_in * e), 92, 0.08f), k_in, e);
  const std::vector<uint8_t> wkv = q8_0_rows(random_values(static_cast<size_t>(slot * e), 93, 0.08f), slot, e);
  const std::vector<uint8_t> ob = q8_0_rows(random_values(static_cast<size_t>(e * k_in), 94, 0.05f), e, k_in);
  std::vector<long long> s0(static_cast<size_t>(e));
  for (size_t i = 0; i < s0.size(); ++i) s0[i] = static_cast<long long>(i % 97) << 30;
  auto dseq = to_device(sequences), dpos = to_device(positions), ds0 = to_device(s0);
  auto dw = to_device(random_values(static_cast<size_t>(d), 96, 1.0f));
  auto dnw = to_device(std::vector<float>(static_cast<size_t>(e), 1.0f));
  std::vector<cuda::DeviceBuffer> kc, vc, mq, mk, mv, o;
  for (int64_t l = 0; l < layers; ++l) {
    kc.push_back(to_device(bits));
    vc.push_back(to_device(bits));
    mq.push_back(to_device(wq));
    mk.push_back(to_device(wkv));
    mv.push_back(to_device(wkv));
    o.push_back(to_device(ob));
  }
  auto q = to_device(std::vector<float>(static_cast<size_t>(k_in), 0.0f));
  auto k = to_device(std::vector<float>(static_cast<size_t>(slot), 0.0f));
  auto v = to_device(std::vector<float>(static_cast<size_t>(slot), 0.0f));
  auto residual = to_device(std::vector<float>(static_cast<size_t>(e), 0.0f));
  auto out = to_device(std::vector<float>(static_cast<size_t>(k_in), 0.0f));
  std::vector<cuda::DeviceBuffer> sums;
  for (int i = 0; i < 2; ++i) sums.push_back(to_device(std::vector<long long>(static_cast<size_t>(e), 0)));
  const kernels::RopeTable table = kernels::make_rope_table(d, 1000000.0);
  const kernels::AttentionRope rope{k.ptr(), v.ptr(), &table, RopeOrder::neox, true, dw.ptr(), dw.ptr(), 1e-6f};
  const kernels::AttentionShape shape{1, n_head, n_kv, d, n_ctx, n_ctx};
  kernels::AttentionShape short_shape = shape;
  short_shape.max_visible = 128;
  const kernels::AttentionOptionsGpu opt;
  const kernels::AttentionSplit split = kernels::plan_attention_split(short_shape, opt);
  cuda::DeviceBuffer tickets(kernels::attention_ticket_bytes(shape), "attention tickets");
  tickets.zero();
  const kernels::Activations a = kernels::Activations::int8x2;
  auto matrices = [&](int l, kernels::WeightMatrix* ms) {
    ms[0] = {GgmlType::Q8_0, mq[l].ptr(), k_in, e};
    ms[1] = {GgmlType::Q8_0, mk[l].ptr(), slot, e};
    ms[2] = {GgmlType::Q8_0, mv[l].ptr(), slot, e};
  };
  cuda::Stream s;
  const double held = kernels::test::graph_median_us(s, static_cast<int>(layers), [&](int l) {
    kernels::WeightMatrix ms[3];
    matrices(l, ms);
    kernels::NormPrologue np;
    np.x = ds0.ptr();
    np.w = dnw.ptr();
    np.sum = residual.ptr();
    np.early_fills = 2;
    np.x_fixed = true;
    const CUdeviceptr outs[3] = {q.ptr(), k.ptr(), v.ptr()};
    kernels::gemv_multi_norm(ms, 3, a, np, outs, s.handle());
    kernels::decode_attention(out.ptr(), q.ptr(), kc[l].ptr(), vc[l].ptr(), dseq.ptr(), dpos.ptr(), shape, opt, split, 0,
                              s.handle(), tickets.ptr(), {}, &rope);
  });
  const auto half_layer = [&](int l, CUdeviceptr stamps) {
    kernels::AttentionHalf f;
    kernels::WeightMatrix ms[3];
    matrices(l, ms);
    f.wq = ms[0];
    f.wk = ms[1];
    f.wv = ms[2];
    f.s_in = ds0.ptr();
    f.norm_w = dnw.ptr();
    f.s_out = sums[l % 2].ptr();
    f.zero = sums[(l + 1) % 2].ptr();
    f.k_cache = kc[l].ptr();
    f.v_cache = vc[l].ptr();
    f.sequences = dseq.ptr();
    f.positions = dpos.ptr();
    f.stamps = stamps;
    kernels::attention_half(shape, opt, rope, kernels::WeightMatrix{GgmlType::Q8_0, o[l].ptr(), e, k_in}, a, f,
                            s.handle());
  };
  const double fused = kernels::test::graph_median_us(s, static_cast<int>(layers), [&](int l) { half_layer(l, 0); });
  std::printf("qwen3-0.6b attention half at position %d, a layer in a graph of %lld: q/k/v then the attention (two "
              "launches) %.2f us; the one launch with o too %.2f us\n",
              positions[0], static_cast<long long>(layers), held, fused);

  // Its phases (the stamps of the last replay of the same graph): medians over layers 1.. and their
  // blocks, us; the release from the layer before's last block's end to this layer's first wait.
  const int64_t blocks = 8 * n_kv;
  cuda::DeviceBuffer stamps(static_cast<size_t>(layers * blocks * 12 * 8), "stamps");
  const double stamped = kernels::test::graph_median_us(s, static_cast<int>(layers), [&](int l) {
    half_layer(l, stamps.ptr() + static_cast<CUdeviceptr>(l * blocks * 12 * 8));
  });
  const std::vector<unsigned long long> t = from_device<unsigned long long>(stamps, static_cast<size_t>(layers * blocks * 12));
  auto stamp_at = [&](int64_t l, int64_t b, int p) { return static_cast<double>(t[static_cast<size_t>((l * blocks + b) * 12 + p)]); };
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2] / 1e3;
  };
  std::vector<double> phase[11], release, period;
  for (int64_t l = 1; l < layers; ++l) {
    double prev_end = 0.0, end = 0.0, first_wait = 1e300;
    for (int64_t b = 0; b < blocks; ++b) {
      prev_end = std::max(prev_end, stamp_at(l - 1, b, 11));
      end = std::max(end, stamp_at(l, b, 11));
      first_wait = std::min(first_wait, stamp_at(l, b, 2));
      for (int p = 0; p < 11; ++p) phase[p].push_back(stamp_at(l, b, p + 1) - stamp_at(l, b, p));
    }
    release.push_back(first_wait - prev_end);
    period.push_back(end - prev_end);
  }
  std::printf("  stamped %.2f us a layer; medians, us: ask %.2f, to the wait %.2f | release %.2f | x and h %.2f, rows "
              "%.2f, barrier %.2f, rope %.2f, attention %.2f, barrier %.2f, merge %.2f, o's rows %.2f, last wait %.2f | "
              "period %.2f\n",
              stamped, median(phase[0]), median(phase[1]), median(release), median(phase[2]), median(phase[3]),
              median(phase[4]), median(phase[5]), median(phase[6]), median(phase[7]), median(phase[8]), median(phase[9]),
              median(phase[10]), median(period));
}

TEST(AttentionHalfGpu, RefusesWhatItDoesNotTake) {
  REQUIRE_GPU();
  const kernels::AttentionShape s06{1, 16, 8, 128, 512, 512};
  const kernels::WeightMatrix q06{GgmlType::Q8_0, 0, 2048, 1024}, kv06{GgmlType::Q8_0, 0, 1024, 1024},
      o06{GgmlType::Q8_0, 0, 1024, 2048};
  const kernels::Activations a = kernels::Activations::int8x2;
  EXPECT_TRUE(kernels::attention_half_applies(s06, q06, kv06, kv06, o06, a));
  EXPECT_FALSE(kernels::attention_half_applies(s06, q06, kv06, kv06, o06, kernels::Activations::f32));
  EXPECT_FALSE(kernels::attention_half_applies(s06, kernels::WeightMatrix{GgmlType::Q4_K, 0, 2048, 1024}, kv06, kv06,
                                               o06, a))
      << "q in Q4_K";
  EXPECT_FALSE(kernels::attention_half_applies(s06, kv06, kv06, kv06, o06, a)) << "q's rows are not n_head d";
  EXPECT_FALSE(kernels::attention_half_applies(s06, q06, kv06, kernels::WeightMatrix{GgmlType::Q8_0, 0, 1024, 512}, o06, a))
      << "v's columns are not o's rows";
  EXPECT_FALSE(kernels::attention_half_applies(kernels::AttentionShape{1, 32, 8, 128, 512, 512},
                                               kernels::WeightMatrix{GgmlType::Q8_0, 0, 4096, 4096},
                                               kernels::WeightMatrix{GgmlType::Q8_0, 0, 1024, 4096},
                                               kernels::WeightMatrix{GgmlType::Q8_0, 0, 1024, 4096},
                                               kernels::WeightMatrix{GgmlType::Q8_0, 0, 4096, 4096}, a))
      << "qwen3-8b: its rows of q/k/v and o do not fit a block's shared memory";
  EXPECT_FALSE(kernels::attention_half_applies(kernels::AttentionShape{2, 16, 8, 128, 512, 512}, q06, kv06, kv06, o06, a))
      << "two rows";
}

}  // namespace
}  // namespace lathe::test
