// KV cache append and decode attention on the GPU against the interpreter (interp/cpu_ops.h).
// The caches are f16 on the device; the interpreter reads the same f16 values widened to f32, so the
// comparison measures the kernel's f32 arithmetic alone. Bounds (max |gpu - cpu| / max |cpu|):
// append bit-exact (round to nearest even), attention 5e-5 (the kernel splits each f32 operand of its
// f16 tensor-core products into two halves, which keeps f32 accuracy).
#include "gguf/block_format.h"
#include "kernels/attention_launch.h"
#include "kernels/cache_launch.h"
#include "kernels/gemv_launch.h"
#include "kernels/rope_launch.h"
#include "test_gpu_ops_helpers.h"

#include <fmt/format.h>

namespace lathe::test {
namespace {

constexpr double kAttentionBound = 5e-5;

struct RowAt {
  int32_t sequence, position;
};

struct AttnCase {
  int64_t n_head, n_head_kv, d, n_ctx, n_seq;
  std::vector<RowAt> rows;
  int64_t window = 0;
  float cap = 0;
  bool sinks = false;
  bool graph_bound = false;  // split for n_ctx slots, as a captured graph must
  float scale = 0;
  int64_t prefill = 0;       // > 0: the last `prefill` rows' k and v are appended by the kernel first
};

std::string label(const AttnCase& c) {
  std::string s = fmt::format("h{}/{} d{} ctx{} rows{}", c.n_head, c.n_head_kv, c.d, c.n_ctx, c.rows.size());
  if (c.window) s += fmt::format(" win{}", c.window);
  if (c.cap) s += fmt::format(" cap{}", c.cap);
  if (c.sinks) s += " sinks";
  if (c.graph_bound) s += " graph";
  if (c.scale) s += fmt::format(" scale{}", c.scale);
  if (c.prefill) s += fmt::format(" prefill{}", c.prefill);
  return s;
}

// Values as f16 bits and as the f32 values those bits mean.
struct HalfValues {
  std::vector<uint16_t> bits;
  std::vector<float> values;
};
HalfValues halves_of(const std::vector<float>& v) {
  HalfValues h;
  h.bits.reserve(v.size());
  h.values.reserve(v.size());
  for (float x : v) {
    h.bits.push_back(f32_to_f16(x));
    h.values.push_back(f16_to_f32(h.bits.back()));
  }
  return h;
}

// Uniform values of variance 1 from a xorshift generator: caches of millions of values, quickly.
std::vector<float> cache_values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint64_t x = 0x9e3779b97f4a7c15ull ^ seed;
  for (float& f : v) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    f = (float(x >> 40) / float(1 << 24) - 0.5f) * 3.4641f;
  }
  return v;
}

double run_case(const AttnCase& c, uint32_t seed) {
  const int64_t rows = static_cast<int64_t>(c.rows.size());
  const int64_t slot = c.n_head_kv * c.d, seq_size = c.n_ctx * slot;
  HalfValues k = halves_of(cache_values(c.n_seq * seq_size, seed));
  HalfValues v = halves_of(cache_values(c.n_seq * seq_size, seed + 1));
  std::vector<float> q = random_values(rows * c.n_head * c.d, seed + 2, 1.0f);
  std::vector<float> sinks = c.sinks ? random_values(c.n_head, seed + 3, 2.0f) : std::vector<float>{};
  std::vector<int32_t> sequences, positions;
  for (const RowAt& r : c.rows) {
    sequences.push_back(r.sequence);
    positions.push_back(r.position);
  }
  auto dk = to_device(k.bits), dv = to_device(v.bits);
  auto dseq = to_device(sequences), dpos = to_device(positions);
  cuda::Stream s;

  // Prefill: the chunk's own k and v go in through the append kernel, and into the reference.
  if (c.prefill > 0) {
    std::vector<float> k_new = random_values(c.prefill * slot, seed + 4), v_new = random_values(c.prefill * slot, seed + 5);
    const int64_t first = rows - c.prefill;
    std::vector<int32_t> pseq(sequences.begin() + first, sequences.end()), ppos(positions.begin() + first, positions.end());
    auto dkn = to_device(k_new), dvn = to_device(v_new), dps = to_device(pseq), dpp = to_device(ppos);
    kernels::cache_append(dk.ptr(), dv.ptr(), dkn.ptr(), dvn.ptr(), dps.ptr(), dpp.ptr(), c.prefill, c.n_ctx, slot,
                          slot, s.handle());
    s.synchronize();
    HalfValues kh = halves_of(k_new), vh = halves_of(v_new);
    for (int64_t r = 0; r < c.prefill; ++r) {
      const int64_t at = pseq[r] * seq_size + ppos[r] * slot;
      std::copy_n(kh.values.begin() + r * slot, slot, k.values.begin() + at);
      std::copy_n(vh.values.begin() + r * slot, slot, v.values.begin() + at);
    }
  }

  std::vector<float> want(rows * c.n_head * c.d);
  AttentionOptions options;
  options.scale = c.scale;
  options.window = c.window;
  options.cap = c.cap;
  options.sinks = sinks;
  for (int64_t r = 0; r < rows; ++r) {
    const RowAt& at = c.rows[r];
    Tensor kc({c.n_ctx, c.n_head_kv, c.d},
              std::vector<float>(k.values.begin() + at.sequence * seq_size, k.values.begin() + (at.sequence + 1) * seq_size));
    Tensor vc({c.n_ctx, c.n_head_kv, c.d},
              std::vector<float>(v.values.begin() + at.sequence * seq_size, v.values.begin() + (at.sequence + 1) * seq_size));
    Tensor qr({1, c.n_head, c.d}, std::vector<float>(q.begin() + r * c.n_head * c.d, q.begin() + (r + 1) * c.n_head * c.d));
    std::vector<int32_t> p = {at.position};
    Tensor o = attention(qr, kc, vc, p, options);
    std::copy(o.data.begin(), o.data.end(), want.begin() + r * c.n_head * c.d);
  }

  kernels::AttentionShape shape{rows, c.n_head, c.n_head_kv, c.d, c.n_ctx, c.n_ctx};
  if (!c.graph_bound) {
    shape.max_visible = 1;
    for (int32_t p : positions) shape.max_visible = std::max<int64_t>(shape.max_visible, p + 1);
  }
  auto dq = to_device(q), dsinks = to_device(sinks), dout = to_device(std::vector<float>(want.size(), NAN));
  kernels::AttentionOptionsGpu gopt{c.scale, c.window, c.cap, c.sinks ? dsinks.ptr() : 0};
  kernels::AttentionSplit split = kernels::plan_attention_split(shape, gopt);
  cuda::DeviceBuffer work(std::max<size_t>(split.workspace_bytes, 16), "attention workspace");
  // The held-back form first (the splits merged by lathe_attn_merge), then the splits merged by the
  // last of them, twice on the same tickets: each call must leave them zero for the next.
  kernels::decode_attention(dout.ptr(), dq.ptr(), dk.ptr(), dv.ptr(), dseq.ptr(), dpos.ptr(), shape, gopt, split,
                            work.ptr(), s.handle());
  s.synchronize();
  const std::vector<float> merged_by_kernel = from_device<float>(dout, want.size());
  cuda::DeviceBuffer tickets(kernels::attention_ticket_bytes(shape), "attention tickets");
  tickets.zero();
  std::vector<float> in_block;
  for (int round = 0; round < 2; ++round) {
    dout.upload(std::vector<float>(want.size(), NAN).data(), want.size() * sizeof(float));
    kernels::decode_attention(dout.ptr(), dq.ptr(), dk.ptr(), dv.ptr(), dseq.ptr(), dpos.ptr(), shape, gopt, split,
                              work.ptr(), s.handle(), tickets.ptr());
    s.synchronize();
    const std::vector<float> got = from_device<float>(dout, want.size());
    if (round == 1) {
      EXPECT_EQ(got, in_block) << "the second launch on the same tickets differs";
    }
    in_block = got;
  }
  for (int32_t t : from_device<int32_t>(tickets, kernels::attention_ticket_bytes(shape) / sizeof(int32_t)))
    EXPECT_EQ(t, 0) << "a ticket was left set";
  // quantize_epilogue: the output's int8 form, written by the blocks that finish a row (or by the
  // merge kernel for the rows it merges), is quantize_activations' bytes of the same output, which
  // the form leaves as it was.
  for (kernels::Activations a : {kernels::Activations::int8, kernels::Activations::int8x2}) {
    for (const bool by_kernel : {false, true}) {
      const size_t bytes = static_cast<size_t>(kernels::quantized_activation_bytes(rows, c.n_head * c.d, a));
      cuda::DeviceBuffer qo(bytes, "attention's int8 form"), qr(bytes, "quantizer's int8 form");
      kernels::decode_attention(dout.ptr(), dq.ptr(), dk.ptr(), dv.ptr(), dseq.ptr(), dpos.ptr(), shape, gopt, split,
                                work.ptr(), s.handle(), by_kernel ? 0 : tickets.ptr(), kernels::QuantizedOut{qo.ptr(), a});
      kernels::quantize_activations(dout.ptr(), rows, c.n_head * c.d, a, qr.ptr(), s.handle());
      s.synchronize();
      EXPECT_EQ(from_device<float>(dout, want.size()), by_kernel ? merged_by_kernel : in_block)
          << "the output with its int8 form" << (by_kernel ? " (merge kernel)" : "");
      EXPECT_EQ(from_device<uint8_t>(qo, bytes), from_device<uint8_t>(qr, bytes))
          << "the int8 form is not the quantizer's (" << kernels::activations_name(a) << (by_kernel ? ", merge kernel)" : ")");
    }
  }
  // Same partials, merged by the same arithmetic (attd_merge_dims) in the same order: the same bits.
  const double vs_kernel = normalized_error(in_block, merged_by_kernel);
  EXPECT_EQ(in_block, merged_by_kernel) << "merged in the block against the merge kernel";
  // A decode step's long form: splits by 16-slot granules (more, shorter ones), merged by the kernel.
  const kernels::AttentionSplit fine = kernels::plan_attention_split(shape, gopt, 0, 16);
  cuda::DeviceBuffer fine_work(std::max<size_t>(fine.workspace_bytes, 16), "attention workspace (16-slot granules)");
  dout.upload(std::vector<float>(want.size(), NAN).data(), want.size() * sizeof(float));
  kernels::decode_attention(dout.ptr(), dq.ptr(), dk.ptr(), dv.ptr(), dseq.ptr(), dpos.ptr(), shape, gopt, fine,
                            fine_work.ptr(), s.handle());
  s.synchronize();
  const std::vector<float> fine_out = from_device<float>(dout, want.size());
  std::printf("  [splits %lld x %lld, in-block merge vs kernel %.1e; by 16: %lld splits, vs 128 %.1e]",
              static_cast<long long>(split.n_split), static_cast<long long>(split.split_len), vs_kernel,
              static_cast<long long>(fine.n_split), normalized_error(fine_out, merged_by_kernel));
  return std::max({normalized_error(in_block, want), normalized_error(merged_by_kernel, want),
                   normalized_error(fine_out, want)});
}

std::vector<RowAt> chunk(int32_t sequence, int32_t first, int32_t count) {
  std::vector<RowAt> r;
  for (int32_t i = 0; i < count; ++i) r.push_back({sequence, first + i});
  return r;
}

TEST(GpuAttention, DecodeMatchesTheInterpreter) {
  REQUIRE_GPU();
  std::vector<AttnCase> cases = {
      {4, 1, 64, 8, 1, {{0, 0}}},
      {8, 8, 128, 16, 2, {{0, 6}, {1, 6}, {1, 3}}},
      {32, 8, 128, 128, 1, {{0, 99}}},
      {32, 8, 128, 128, 1, {{0, 99}}, 0, 0, false, false, 0.05f},
      {32, 8, 128, 128, 1, {{0, 99}}, 1},
      {32, 8, 128, 4096, 1, {{0, 4095}}},
      {16, 2, 64, 4096, 3, {{0, 4095}, {1, 2000}, {2, 77}, {0, 1}}},
      {32, 4, 128, 4096, 1, {{0, 4095}, {0, 3000}}, 1000, 50.0f, true},
      {32, 1, 64, 512, 2, {{0, 300}, {1, 511}}, 0, 0, false, true},
      {14, 2, 64, 1024, 1, {{0, 999}}, 0, 30.0f},
      {40, 8, 128, 256, 1, {{0, 255}}, 100, 0, true},
      {16, 16, 256, 600, 1, {{0, 512}}},
      {24, 8, 128, 4096, 2, {{0, 4095}, {1, 4094}, {0, 4000}, {1, 17}, {0, 2048}, {1, 4095}, {0, 63}, {1, 64}}, 0, 0,
       false, true},
      // A decode graph's plan for a large cache, rows at short and long positions.
      {32, 8, 128, 32768, 1, {{0, 0}, {0, 127}, {0, 128}, {0, 5000}, {0, 32767}}, 0, 0, false, true},
      {16, 2, 64, 32768, 1, {{0, 300}, {0, 32767}}, 4096, 0, true, true},
  };
  uint32_t seed = 1000;
  for (const AttnCase& c : cases) {
    const double err = run_case(c, seed += 10);
    report("attention", label(c), err, kAttentionBound);
  }
}

// The sweep the tensor-core kernel must cover: head sizes, groups of 1, 4, 7 and 32 query heads per
// kv head (32 takes four blocks of 8 heads), 1, 3 and 8 rows at positions at and around the chunk and
// split edges, with and without a window, a cap and sinks, split for the rows or for all n_ctx slots.
TEST(GpuAttention, SweepOfHeadsSizesRowsAndPositions) {
  REQUIRE_GPU();
  const int64_t sizes[] = {64, 128, 256};
  const std::pair<int64_t, int64_t> heads[] = {{32, 8}, {16, 16}, {14, 2}, {64, 2}};
  const int32_t positions[] = {0, 1, 63, 64, 1000, 4095, 4094, 2047};
  struct Restore {
    ~Restore() { kernels::set_attention_warps(4); }
  } restore;
  int k = 0;
  uint32_t seed = 3000;
  for (int warps : {4, 8})  // blocks of 8 warps where the head size has them (d <= 128)
  for (int64_t d : sizes)
    for (auto [n_head, n_head_kv] : heads)
      for (int n_rows : {1, 3, 8}) {
        if (warps == 8 && d > 128) continue;
        kernels::set_attention_warps(warps);
        AttnCase c{n_head, n_head_kv, d, 4096, 2, {}};
        for (int r = 0; r < n_rows; ++r) c.rows.push_back({r % 2, positions[(k + r) % 8]});
        switch (k % 5) {
          case 1: c.window = 1000; break;
          case 2: c.cap = 30.0f; break;
          case 3: c.sinks = true; break;
          case 4: c.window = 64; c.cap = 50.0f; c.sinks = true; break;
          default: break;
        }
        c.graph_bound = k % 2 == 0;
        ++k;
        const double err = run_case(c, seed += 10);
        std::string at = " at";
        for (const RowAt& r : c.rows) at += fmt::format(" {}", r.position);
        report("attention sweep", label(c) + at + fmt::format(", {} warps", warps), err, kAttentionBound);
      }
}

// rope_attention: the attention with rope and the cache append in its prologue (kernels/
// rope_attention.cuh) against rope_append then the attention, which it replaces: the same output,
// the same caches (every slot), bit for bit, with the splits merged in the block or by the merge
// kernel; q and k as the product wrote them are left as they were. Qwen3's shapes (head norms, neox
// order), Llama's (no norms, normal order), a partial rotation, head size 64 and 256, 7 query heads a
// kv head, rows of several sequences, positions that take one split and many.
TEST(GpuAttention, RopeInItsPrologueIsRopeAppendThenAttention) {
  REQUIRE_GPU();
  struct Case {
    int64_t n_head, n_head_kv, d, n_rot;
    bool neox, norm;
    std::vector<RowAt> rows;
  };
  const Case cases[] = {{32, 8, 128, 128, true, true, {{0, 17}}},
                        {32, 8, 128, 128, true, true, {{0, 3000}}},
                        {16, 8, 128, 128, true, true, {{0, 0}}},
                        {32, 8, 128, 128, false, false, {{0, 200}, {1, 4095}, {2, 5}}},
                        {14, 2, 64, 32, true, true, {{0, 777}}},
                        {16, 4, 256, 256, false, true, {{0, 1500}, {1, 2}}},
                        // the new slot at other places of its chunk (lanes of its K and V pieces),
                        // in one chunk a warp and in several (the chunk that holds it patched)
                        {16, 8, 128, 128, true, true, {{0, 143}}},
                        {16, 8, 128, 128, true, true, {{0, 9}}},
                        {32, 4, 128, 128, true, true, {{0, 46}}},
                        {16, 8, 64, 64, true, true, {{0, 250}}}};
  const int64_t n_ctx = 4096, n_seq = 3;
  uint32_t seed = 7000;
  for (const Case& c : cases) {
    const int64_t rows = static_cast<int64_t>(c.rows.size()), slot = c.n_head_kv * c.d;
    std::vector<int32_t> sequences, positions;
    for (const RowAt& r : c.rows) {
      sequences.push_back(r.sequence);
      positions.push_back(r.position);
    }
    const HalfValues k0 = halves_of(cache_values(n_seq * n_ctx * slot, seed += 10));
    const HalfValues v0 = halves_of(cache_values(n_seq * n_ctx * slot, seed + 1));
    const std::vector<float> q = random_values(rows * c.n_head * c.d, seed + 2, 1.0f);
    const std::vector<float> k = random_values(rows * slot, seed + 3, 1.0f), v = random_values(rows * slot, seed + 4, 1.0f);
    const std::vector<float> qw = random_values(c.d, seed + 5, 1.0f), kw = random_values(c.d, seed + 6, 1.0f);
    auto dseq = to_device(sequences), dpos = to_device(positions);
    auto dqw = to_device(qw), dkw = to_device(kw);
    const kernels::RopeTable table = kernels::make_rope_table(c.n_rot, 1000000.0);
    const RopeOrder order = c.neox ? RopeOrder::neox : RopeOrder::normal;
    kernels::AttentionShape shape{rows, c.n_head, c.n_head_kv, c.d, n_ctx, n_ctx};
    const kernels::AttentionOptionsGpu opt;
    const kernels::AttentionSplit split = kernels::plan_attention_split(shape, opt);
    cuda::DeviceBuffer work(std::max<size_t>(split.workspace_bytes, 16), "attention workspace");
    cuda::DeviceBuffer tickets(kernels::attention_ticket_bytes(shape), "attention tickets");
    tickets.zero();
    cuda::Stream s;
    for (const bool merge_kernel : {false, true}) {
      // Held back: rope_append (q and k rotated in place, the slots appended), then the attention.
      auto qa = to_device(q), ka = to_device(k), va = to_device(v), kca = to_device(k0.bits), vca = to_device(v0.bits);
      auto outa = to_device(std::vector<float>(q.size(), NAN));
      kernels::rope_append(qa.ptr(), ka.ptr(), va.ptr(), dpos.ptr(), dseq.ptr(), rows, c.n_head, c.n_head_kv, c.d, table,
                           order, c.norm, c.norm ? dqw.ptr() : 0, c.norm ? dkw.ptr() : 0, 1e-6f, kca.ptr(), vca.ptr(),
                           n_ctx, s.handle());
      kernels::decode_attention(outa.ptr(), qa.ptr(), kca.ptr(), vca.ptr(), dseq.ptr(), dpos.ptr(), shape, opt, split,
                                work.ptr(), s.handle(), merge_kernel ? 0 : tickets.ptr());
      // Fused: the attention rotates and appends in its prologue.
      auto qb = to_device(q), kb = to_device(k), vb = to_device(v), kcb = to_device(k0.bits), vcb = to_device(v0.bits);
      auto outb = to_device(std::vector<float>(q.size(), NAN));
      const kernels::AttentionRope rope{kb.ptr(), vb.ptr(), &table, order, c.norm, c.norm ? dqw.ptr() : 0,
                                        c.norm ? dkw.ptr() : 0, 1e-6f};
      kernels::decode_attention(outb.ptr(), qb.ptr(), kcb.ptr(), vcb.ptr(), dseq.ptr(), dpos.ptr(), shape, opt, split,
                                work.ptr(), s.handle(), merge_kernel ? 0 : tickets.ptr(), {}, &rope);
      s.synchronize();
      const std::string what = fmt::format("h{}/{} d{} rot{}{}{} rows{} at {}{}", c.n_head, c.n_head_kv, c.d, c.n_rot,
                                           c.neox ? " neox" : "", c.norm ? " normed" : "", rows, positions[0],
                                           merge_kernel ? ", merge kernel" : "");
      EXPECT_EQ(from_device<float>(outb, q.size()), from_device<float>(outa, q.size())) << what << ": the output";
      EXPECT_EQ(from_device<uint16_t>(kcb, k0.bits.size()), from_device<uint16_t>(kca, k0.bits.size())) << what << ": k cache";
      EXPECT_EQ(from_device<uint16_t>(vcb, v0.bits.size()), from_device<uint16_t>(vca, v0.bits.size())) << what << ": v cache";
      EXPECT_EQ(from_device<float>(qb, q.size()), q) << what << ": q was written";
      EXPECT_EQ(from_device<float>(kb, k.size()), k) << what << ": k was written";
      std::printf("  %s [%lld splits]: the same bits\n", what.c_str(), static_cast<long long>(split.n_split));
    }
    for (int32_t t : from_device<int32_t>(tickets, kernels::attention_ticket_bytes(shape) / sizeof(int32_t)))
      EXPECT_EQ(t, 0) << "a ticket was left set";
  }
}

TEST(GpuAttention, PrefillChunksAreCausal) {
  REQUIRE_GPU();
  std::vector<AttnCase> cases = {
      {32, 8, 128, 4096, 1, chunk(0, 4080, 16), 0, 0, false, false, 0, 16},
      {16, 4, 64, 64, 2, chunk(1, 0, 16), 5, 0, true, false, 0, 16},
      {32, 8, 128, 512, 1, chunk(0, 200, 7), 0, 0, false, true, 0, 7},
      {8, 1, 64, 128, 1, chunk(0, 0, 1), 0, 0, false, false, 0, 1},
  };
  uint32_t seed = 2000;
  for (const AttnCase& c : cases) report("attention prefill", label(c), run_case(c, seed += 10), kAttentionBound);
}

TEST(GpuCache, AppendRoundsToNearestEvenAndTouchesOnlyItsSlots) {
  REQUIRE_GPU();
  cuda::Stream s;
  for (auto [n_head_kv, d, kv_d] : {std::tuple<int64_t, int64_t, int64_t>{8, 128, 128}, {1, 64, 64}, {2, 5, 7}}) {
    const int64_t n_seq = 3, n_ctx = 20, rows = 5;
    const int64_t k_slot = n_head_kv * d, v_slot = n_head_kv * kv_d;
    std::vector<float> k = random_values(rows * k_slot, 7, 100.0f), v = random_values(rows * v_slot, 8, 1e-4f);
    k[0] = 65520.0f;         // rounds to inf
    k[1] = 1.0f + 1.0f / 2048;  // a tie: to even (1.0)
    std::vector<int32_t> seq = {0, 2, 1, 2, 0}, pos = {0, 19, 5, 6, 19};
    std::vector<uint16_t> kc(n_seq * n_ctx * k_slot, 0x7777), vc(n_seq * n_ctx * v_slot, 0x1234);
    auto dkc = to_device(kc), dvc = to_device(vc), dk = to_device(k), dv = to_device(v);
    auto dseq = to_device(seq), dpos = to_device(pos);
    kernels::cache_append(dkc.ptr(), dvc.ptr(), dk.ptr(), dv.ptr(), dseq.ptr(), dpos.ptr(), rows, n_ctx, k_slot,
                          v_slot, s.handle());
    s.synchronize();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < k_slot; ++i) kc[(seq[r] * n_ctx + pos[r]) * k_slot + i] = f32_to_f16(k[r * k_slot + i]);
      for (int64_t i = 0; i < v_slot; ++i) vc[(seq[r] * n_ctx + pos[r]) * v_slot + i] = f32_to_f16(v[r * v_slot + i]);
    }
    EXPECT_EQ(from_device<uint16_t>(dkc, kc.size()), kc) << "k, d " << d;
    EXPECT_EQ(from_device<uint16_t>(dvc, vc.size()), vc) << "v, d " << kv_d;
    std::printf("  cache_append           kv heads %lld d %lld / %lld: %s\n", (long long)n_head_kv, (long long)d,
                (long long)kv_d, testing::Test::HasFailure() ? "MISMATCH" : "bit-exact");
  }
}

// Microseconds a launch of `launch(l)` takes, l = 0..launches-1 captured as one graph (as the runtime
// replays a step, so the host's launch cost is not timed): the median of 5 replays.
template <typename Launch>
double graph_us(cuda::Stream& s, int launches, Launch launch) {
  cuda::CapturedGraph graph;
  graph.begin(s);
  for (int l = 0; l < launches; ++l) launch(l);
  graph.end(s);
  graph.replay(s);
  std::vector<double> us;
  for (int rep = 0; rep < 5; ++rep) {
    cuda::EventTimer t;
    t.start(s);
    graph.replay(s);
    us.push_back(1000.0 * t.stop(s) / launches);
  }
  return median(us);
}

// Decode attention timed as a decode graph runs it: planned for n_ctx slots (the positions are known
// only on the device), rows at position ctx - 1. GB/s counts the f16 K and V slots the rows see,
// against the H200's 4,630 GB/s. Launches rotate through distinct parts of the cache (over 160 MB
// read per graph, more than L2 holds), as layers do. (The kernel before issue 6, measured so on the
// H200: 1 row 13.6 / 17.3 / 30.4 us at 128 / 512 / 4,096 slots, 8 rows 31 / 120 / 138 us; with
// n_ctx 32,768 1 row 23 / 86 / 109 / 137 us at 128 / 512 / 4,096 / 16,384, 8 rows 32 / 120 / 731 / 918.)
TEST(GpuAttentionSpeed, DecodeReadsTheCacheNearBandwidth) {
  REQUIRE_GPU();
  struct SpeedCase {
    int64_t n_head, n_head_kv, d, rows, ctx, n_ctx;
  };
  std::vector<SpeedCase> cases;
  for (int64_t n_ctx : {4096, 32768})
    for (int64_t rows : {1, 8})
      for (int64_t ctx : {128, 512, 4096, 16384})
        if (ctx <= n_ctx) cases.push_back({32, 8, 128, rows, ctx, n_ctx});
  for (SpeedCase c : std::initializer_list<SpeedCase>{
           {32, 8, 64, 1, 4096, 4096}, {16, 8, 128, 1, 4096, 4096}, {64, 8, 128, 1, 4096, 4096},
           {32, 4, 128, 1, 4096, 4096}, {16, 8, 256, 1, 4096, 4096}, {32, 32, 128, 1, 4096, 4096},
           {64, 2, 128, 1, 4096, 4096},
           // The same 16.8 MB as 32/8 heads at 4,096 slots, with fewer kv heads over more slots: a kv
           // head's slots lie n_head_kv * d * 2 bytes apart in the cache, so these tell the cost of
           // reading a head's 256-byte rows scattered (2 KB apart at 8 heads) from reading them whole.
           {4, 1, 128, 1, 32768, 32768}, {8, 2, 128, 1, 16384, 16384}, {16, 4, 128, 1, 8192, 8192}})
    cases.push_back(c);
  cuda::Stream s;
  std::printf("  device: %s, %d multiprocessors\n", cuda::Context::get().info().name.c_str(),
              cuda::Context::get().info().sm_count);
  std::printf("  %-22s %5s %6s %6s | %9s %7s %5s %8s\n", "heads/d", "rows", "ctx", "n_ctx", "us", "GB/s", "%",
              "splits");
  for (const SpeedCase& c : cases) {
    const int64_t slot_bytes = c.n_head_kv * c.d * 2;
    const double read = 2.0 * double(c.rows * c.ctx * slot_bytes);
    const int launches = int(std::clamp<double>(std::ceil(160e6 / read), 2, 256));
    // Launch l reads slots [l * ctx, l * ctx + ctx) of sequence r's n_ctx, all distinct.
    const size_t cache_bytes = size_t(c.rows * c.n_ctx + launches * c.ctx) * size_t(slot_bytes);
    cuda::DeviceBuffer k(cache_bytes, "speed k"), v(cache_bytes, "speed v");
    k.zero();
    v.zero();
    std::vector<int32_t> seq(c.rows), pos(c.rows, int32_t(c.ctx - 1));
    for (int64_t r = 0; r < c.rows; ++r) seq[r] = int32_t(r);
    auto dseq = to_device(seq), dpos = to_device(pos);
    auto dq = to_device(random_values(c.rows * c.n_head * c.d, 5));
    auto dout = to_device(std::vector<float>(c.rows * c.n_head * c.d));
    kernels::AttentionShape shape{c.rows, c.n_head, c.n_head_kv, c.d, c.n_ctx, c.n_ctx};
    kernels::AttentionOptionsGpu opt;
    const kernels::AttentionSplit split = kernels::plan_attention_split(shape, opt);
    cuda::DeviceBuffer work(std::max<size_t>(split.workspace_bytes, 16), "attention workspace");
    auto at = [&](const cuda::DeviceBuffer& b, int l) { return b.ptr() + CUdeviceptr(l * c.ctx * slot_bytes); };
    const double us = graph_us(s, launches, [&](int l) {
      kernels::decode_attention(dout.ptr(), dq.ptr(), at(k, l), at(v, l), dseq.ptr(), dpos.ptr(), shape, opt, split,
                                work.ptr(), s.handle());
    });
    const double gbs = read / (us * 1e-6) / 1e9;
    std::printf("  %-22s %5lld %6lld %6lld | %9.2f %7.0f %4.0f%% %8lld\n",
                fmt::format("h{}/{} d{}", c.n_head, c.n_head_kv, c.d).c_str(), (long long)c.rows, (long long)c.ctx,
                (long long)c.n_ctx, us, gbs, 100.0 * gbs / 4630.0, (long long)split.n_split);
    EXPECT_GT(gbs, 0.0);
  }
}

// How the time of 32/8 heads d 128 at 4,096 slots depends on the blocks the plan aims at (the default
// is one a multiprocessor).
TEST(GpuAttentionSpeed, SplitCountsAtFourThousandSlots) {
  REQUIRE_GPU();
  cuda::Stream s;
  const int sms = cuda::Context::get().info().sm_count;
  for (int64_t rows : {1, 8}) {
    const int64_t slot_bytes = 8 * 128 * 2, ctx = 4096;
    const double read = 2.0 * double(rows * ctx * slot_bytes);
    const int launches = int(std::clamp<double>(std::ceil(160e6 / read), 2, 256));
    const size_t cache_bytes = size_t(rows * ctx + launches * ctx) * size_t(slot_bytes);
    cuda::DeviceBuffer k(cache_bytes, "speed k"), v(cache_bytes, "speed v");
    k.zero();
    v.zero();
    std::vector<int32_t> seq(rows), pos(rows, int32_t(ctx - 1));
    for (int64_t r = 0; r < rows; ++r) seq[r] = int32_t(r);
    auto dseq = to_device(seq), dpos = to_device(pos);
    auto dq = to_device(random_values(rows * 32 * 128, 5)), dout = to_device(std::vector<float>(rows * 32 * 128));
    kernels::AttentionShape shape{rows, 32, 8, 128, ctx, ctx};
    kernels::AttentionOptionsGpu opt;
    std::string line = fmt::format("  split counts, rows {}:", rows);
    for (int per_sm : {1, 2, 3, 4, 8}) {
      const kernels::AttentionSplit split = kernels::plan_attention_split(shape, opt, int64_t{per_sm} * sms);
      cuda::DeviceBuffer work(std::max<size_t>(split.workspace_bytes, 16), "attention workspace");
      const double us = graph_us(s, launches, [&](int l) {
        kernels::decode_attention(dout.ptr(), dq.ptr(), k.ptr() + CUdeviceptr(l * ctx * slot_bytes),
                                  v.ptr() + CUdeviceptr(l * ctx * slot_bytes), dseq.ptr(), dpos.ptr(), shape, opt,
                                  split, work.ptr(), s.handle());
      });
      line += fmt::format("  {}x{}: {:.2f} us ({:.0f}%)", split.n_split, split.split_len, us,
                          100.0 * read / (us * 1e-6) / 1e9 / 4630.0);
    }
    std::printf("%s\n", line.c_str());
  }
}

}  // namespace
}  // namespace lathe::test
