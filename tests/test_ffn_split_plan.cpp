// The plan's side of ffn_split on a virtual device (cuda::Recorder: no GPU, the launches recorded with
// their arguments): a 4-layer qwen3-tiny decode step takes three split launches (every layer's
// feed-forward half but the last), launch i adding into its own fixed-point sum and zeroing the next
// one's (sum i + 1 mod 3), and the q/k/v launch after each (the _fixed_early kernel) reads exactly the
// sum it made; the down products they run launch nothing of their own. None held back, none in a
// 2-layer model (one launch a step would zero its own sum), none where the plan takes no re-laid
// constants (`lathe emit`). And o_split, which adds o's output into the same sums (below).
#include "gguf/gguf_file.h"
#include "kernels/q8_0_relay.h"
#include "model/model_program.h"
#include "model/model_spec.h"
#include "model/synth.h"
#include "plan/device_model.h"
#include "plan/step_plan.h"
#include "runtime/cuda_driver.h"
#include "runtime/gpu_engine.h"
#include "test_recorder_helpers.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace lathe {
namespace {

std::string tiny(int64_t layers, const std::string& shape = "qwen3-tiny") {
  const std::string p = testing::TempDir() + "/ffn-split-plan-" + shape + "-" + std::to_string(layers) + ".gguf";
  SynthOptions o;
  o.shape = shape;
  o.type = "q8_0";
  o.layers = layers;
  write_synthetic_checkpoint(o, p);
  return p;
}

struct Launched {
  std::string kernel;
  std::vector<std::vector<unsigned char>> args;
  cuda::Dim3 grid;
  uint64_t pointer(size_t i) const {
    uint64_t v = 0;
    std::memcpy(&v, args.at(i).data(), 8);
    return v;
  }
};

struct Recorded {
  std::string plan;
  std::vector<Launched> ops;
  size_t device_bytes = 0, host_bytes = 0, fixed_bytes = 0;  // the model's (plan::DeviceModel)
};

// The decode step of the checkpoint at `path`, planned and run on a virtual H200 (of at most `cap`
// bytes where cap > 0, as --gpu-memory), in `form` (a range form needs po.long_from > 0).
// A checkpoint's decode cut and its device model (64 slots of cache; at most `cap` bytes where cap > 0).
struct DecodeCut {
  GgufFile f;
  ModelSpec spec;
  ModelProgram mp;
  graph::Graph g;
  plan::DeviceModel model;
  DecodeCut(const std::string& path, size_t cap)
      : f(GgufFile::open(path)),
        spec(read_model_spec(f)),
        mp(model_program(f, spec, 64)),
        g(lift_cut(f, mp, 1)),
        model(f, constants_of(g), {spec.n_layer, 1, 64, spec.n_head_kv, spec.head_dim}, 0, cap) {}
  static std::set<std::string> constants_of(const graph::Graph& g) {
    std::set<std::string> constants;
    for (const graph::Tensor& t : g.tensors)
      if (t.role == graph::Role::constant) constants.insert(t.checkpoint_name);
    return constants;
  }
};

Recorded record_decode(const std::string& path, const plan::PlanOptions& po, size_t cap = 0,
                       plan::StepForm form = plan::StepForm::any_position) {
  cuda::Recorder rec(test::virtual_h200(), test::library_param_sizes());
  const DecodeCut cut(path, cap);
  const plan::DeviceModel& model = cut.model;
  plan::StepPlan p(cut.g, model, po);
  if (form != plan::StepForm::any_position) p.set_form(form);
  Recorded out;
  out.plan = p.describe();
  out.device_bytes = model.device_bytes();
  out.host_bytes = model.host_bytes();
  out.fixed_bytes = model.fixed_bytes();
  for (const plan::Launch& l : p.launches()) {
    rec.clear_ops();
    l.run(nullptr);
    for (const cuda::RecordedOp& op : rec.ops())
      if (op.kind == cuda::RecordedOp::Kind::launch) out.ops.push_back({op.kernel, op.args, op.grid});
  }
  return out;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The sums of the split launches (kernel names starting with `prefix`; s_out and zero at parameters
// `out` and `out + 1`): one a launch, launch i zeroing sum i + 1, and the q/k/v launch after each
// (lathe_gemvm_*_fixed_early, whose 19th parameter is nx) reads the sum it made.
void expect_rotating_sums(const Recorded& r, const std::string& prefix, size_t out, size_t launches) {
  std::vector<uint64_t> outs, zeros, read;
  for (const Launched& op : r.ops) {
    if (op.kernel.starts_with(prefix)) {
      outs.push_back(op.pointer(out));
      zeros.push_back(op.pointer(out + 1));
    }
    if (op.kernel.ends_with("_fixed_early")) read.push_back(op.pointer(18));
  }
  ASSERT_EQ(outs.size(), launches) << r.plan;
  EXPECT_EQ(std::set<uint64_t>(outs.begin(), outs.end()).size(), launches) << "one sum a launch";
  for (size_t i = 0; i < launches; ++i) EXPECT_EQ(zeros[i], outs[(i + 1) % launches]) << prefix << " launch " << i;
  EXPECT_EQ(read, outs) << prefix;
}

TEST(FfnSplitPlan, SumsRotateAndTheNextProductsReadThem) {
  const std::string four = tiny(4);
  const Recorded r = record_decode(four, {});
  EXPECT_EQ(count(r.plan, "feed-forward in one launch"), 3u) << r.plan;
  EXPECT_EQ(count(r.plan, "x the feed-forward launch's fixed-point sum"), 3u) << r.plan;
  // lathe_ffn_split_*: (gate, up, down_slices, E, x, y, s_in, norm_w, eps, s_out, zero, stamps).
  expect_rotating_sums(r, "lathe_ffn_split_", 9, 3);
  for (const Launched& op : r.ops) {
    if (op.kernel.starts_with("lathe_ffn_split_")) {
      EXPECT_EQ(op.pointer(6), 0u) << "s_in: the launch adds x and y";
    }
  }
  // Held back: gate/up and down, two of the plan's launches where the split takes one, for each half.
  plan::PlanOptions held;
  held.held = {"ffn_split"};
  const Recorded h = record_decode(four, held);
  EXPECT_EQ(count(h.plan, "feed-forward in one launch"), 0u);
  EXPECT_EQ(std::stoi(h.plan), std::stoi(r.plan) + 3) << h.plan << r.plan;  // "N launches, arena ..."
}

// By default the _lv kernels, gate and up read from copies of their own in the levels layout;
// LATHE_FFN_SPLIT_LEVELS=0 the packed kernels on the row-major gate and up.
TEST(FfnSplitPlan, LevelsLayoutByDefaultPackedUnderItsKnob) {
  const auto lv_kernels = [](const Recorded& r) {
    size_t lv = 0;
    for (const Launched& op : r.ops) lv += op.kernel.starts_with("lathe_ffn_split_") && op.kernel.ends_with("_lv");
    return lv;
  };
  const Recorded r = record_decode(tiny(4), {});
  EXPECT_EQ(count(r.plan, "by slices (the levels layout)"), 3u) << r.plan;
  EXPECT_EQ(lv_kernels(r), 3u);
  expect_rotating_sums(r, "lathe_ffn_split_", 9, 3);
  ASSERT_EQ(setenv("LATHE_FFN_SPLIT_LEVELS", "0", 1), 0);
  const Recorded packed = record_decode(tiny(4), {});
  unsetenv("LATHE_FFN_SPLIT_LEVELS");
  EXPECT_EQ(count(packed.plan, "feed-forward in one launch"), 3u) << packed.plan;
  EXPECT_EQ(count(packed.plan, "(the levels layout)"), 0u) << packed.plan;
  EXPECT_EQ(lv_kernels(packed), 0u);
  expect_rotating_sums(packed, "lathe_ffn_split_", 9, 3);
}

// LATHE_MOE_SPLIT=1: a 4-layer qwen3moe-tiny's mixtures but the last as the router's launch, then the
// kept experts' split launch (lathe_moe_split_*: s_out and zero its 10th and 11th parameters); =ring
// its one-wave form (lathe_moe_split_ring_*, the same parameters).
TEST(FfnSplitPlan, MixtureFormUnderItsKnob) {
  const std::string moe = tiny(4, "qwen3moe-tiny");
  EXPECT_EQ(count(record_decode(moe, {}).plan, "the next sum in fixed point"), 0u) << "taken without the knob";
  ASSERT_EQ(setenv("LATHE_MOE_SPLIT", "1", 1), 0);
  const Recorded r = record_decode(moe, {});
  unsetenv("LATHE_MOE_SPLIT");
  EXPECT_EQ(count(r.plan, "down split along its input (the next sum in fixed point)"), 3u) << r.plan;
  expect_rotating_sums(r, "lathe_moe_split_", 9, 3);
  // Its one-wave form (LATHE_MOE_SPLIT=ring): the same sums, 64 values a block (2 kept x 128 / 64 blocks).
  ASSERT_EQ(setenv("LATHE_MOE_SPLIT", "ring", 1), 0);
  const Recorded w = record_decode(moe, {});
  unsetenv("LATHE_MOE_SPLIT");
  EXPECT_EQ(count(w.plan, "down split along its input (the next sum in fixed point)"), 3u) << w.plan;
  expect_rotating_sums(w, "lathe_moe_split_ring_", 9, 3);
  for (const Launched& op : w.ops) {
    if (op.kernel.starts_with("lathe_moe_split_ring_")) {
      EXPECT_EQ(op.grid.x, 4u);
    }
  }
}

// The re-laid down matrices only from the model's spare bytes: under a cap that holds the weights but
// not the copies the plan runs the two launches and no weight leaves the device; with room, it takes
// them (the levels layout's copies of gate and up only where those fit too).
TEST(FfnSplitPlan, ReLaidCopiesOnlyFromSpareBytes) {
  const std::string four = tiny(4);
  const Recorded all = record_decode(four, {});
  ASSERT_EQ(all.host_bytes, 0u);
  const size_t relaid = 3 * (512 * (256 / 32) * 34 + 16);  // three downs [256][512] of Q8_0
  const size_t base = all.device_bytes + all.fixed_bytes;
  const Recorded tight = record_decode(four, {}, base + relaid / 2);
  EXPECT_EQ(tight.host_bytes, 0u) << "a weight left the device";
  EXPECT_EQ(count(tight.plan, "feed-forward in one launch"), 0u) << tight.plan;
  // Room for the slices but not for the levels layout's gate and up copies: the packed form.
  const Recorded room = record_decode(four, {}, base + relaid + 4096);
  EXPECT_EQ(room.host_bytes, 0u);
  EXPECT_EQ(count(room.plan, "feed-forward in one launch"), 3u) << room.plan;
  EXPECT_EQ(count(room.plan, "(the levels layout)"), 0u) << room.plan;
  // Room for both (gate and up [512][256] of Q8_0 a layer, each re-laid by 32-row groups: same bytes).
  const size_t gate_up = 3 * 2 * (512 * (256 / 32) * 34 + 16);
  const Recorded both = record_decode(four, {}, base + relaid + gate_up + 4096);
  EXPECT_EQ(both.host_bytes, 0u);
  EXPECT_EQ(count(both.plan, "by slices (the levels layout)"), 3u) << both.plan;
}

// o_split (under LATHE_O_SPLIT=1): in the short form (below long_from) the attention's launch of each layer whose residual is
// a fixed-point sum (layers 1 and 2 of 4: their q/k/v read the sum the feed-forward launch before made,
// and their feed-forward half is a split launch) runs o too, adding into the sum that q/k/v launch
// read, which the feed-forward launch then reads as s_in; o's own launch runs in neither of those
// layers. In the long form, and held back, the attention and o are two launches and the feed-forward
// launch adds the residual and o's output.
TEST(FfnSplitPlan, OSplitRunsOInTheAttentionsLaunchBelowLongFrom) {
  const std::string four = tiny(4);
  plan::PlanOptions po;
  po.long_from = 128;
  EXPECT_EQ(count(record_decode(four, po, 0, plan::StepForm::short_positions).plan, "into the residual's fixed-point"),
            0u)
      << "taken without LATHE_O_SPLIT=1";
  ASSERT_EQ(setenv("LATHE_O_SPLIT", "1", 1), 0);
  const Recorded r = record_decode(four, po, 0, plan::StepForm::short_positions);
  EXPECT_EQ(count(r.plan, "split along its input into the residual's fixed-point sum"), 2u) << r.plan;
  EXPECT_EQ(count(r.plan, "below it the attention's launch runs o"), 2u) << r.plan;
  EXPECT_EQ(count(r.plan, "the sum read is the residual with o's output added"), 2u) << r.plan;
  // In order: _fixed_early (x its 19th parameter), then lathe_attn_o_split_* (s_io its 27th), then the
  // feed-forward launch (s_in its 7th).
  std::vector<uint64_t> qkv_read, o_added, ffn_read;
  size_t o_products = 0, o_splits = 0;
  uint64_t last_read = 0;
  for (const Launched& op : r.ops) {
    if (op.kernel.ends_with("_fixed_early")) last_read = op.pointer(18);
    if (op.kernel.starts_with("lathe_attn_o_split_")) {
      ++o_splits;
      qkv_read.push_back(last_read);
      o_added.push_back(op.pointer(26));
    }
    if (op.kernel.starts_with("lathe_ffn_split_") && op.pointer(6) != 0) ffn_read.push_back(op.pointer(6));
    if (op.kernel.starts_with("lathe_attn_decode")) ++o_products;  // an attention's own launch: o's follows
  }
  EXPECT_EQ(o_splits, 2u);
  EXPECT_EQ(o_products, 2u) << "layers 0 and 3 keep the attention and o as two launches";
  EXPECT_EQ(o_added, qkv_read) << "o added into the sum its layer's q/k/v read";
  EXPECT_EQ(ffn_read, o_added) << "the feed-forward launch reads that sum";
  // One launch fewer a taken layer than the long form.
  const Recorded l = record_decode(four, po, 0, plan::StepForm::long_positions);
  size_t long_splits = 0, long_s_in = 0;
  for (const Launched& op : l.ops) {
    long_splits += op.kernel.starts_with("lathe_attn_o_split_");
    long_s_in += op.kernel.starts_with("lathe_ffn_split_") && op.pointer(6) != 0;
  }
  EXPECT_EQ(long_splits, 0u);
  EXPECT_EQ(long_s_in, 0u);
  // Held back: two launches more in the short form (o's own, in layers 1 and 2).
  po.held = {"o_split"};
  const Recorded h = record_decode(four, po, 0, plan::StepForm::short_positions);
  EXPECT_EQ(count(h.plan, "split along its input into the residual's fixed-point sum"), 0u) << h.plan;
  EXPECT_EQ(h.ops.size(), r.ops.size() + 2);
  // Without range forms (long_from 0) never.
  EXPECT_EQ(count(record_decode(four, {}).plan, "split along its input into the residual's"), 0u);
  // The cluster form (LATHE_O_SPLIT=cluster): grid (8, n_head_kv), the same sums (s_io its 25th parameter).
  ASSERT_EQ(setenv("LATHE_O_SPLIT", "cluster", 1), 0);
  po.held.clear();
  const Recorded c = record_decode(four, po, 0, plan::StepForm::short_positions);
  unsetenv("LATHE_O_SPLIT");
  EXPECT_EQ(count(c.plan, "the attention split over a cluster of 8 blocks a kv head"), 2u) << c.plan;
  std::vector<uint64_t> c_read, c_added;
  for (const Launched& op : c.ops) {
    if (op.kernel.ends_with("_fixed_early")) last_read = op.pointer(18);
    if (op.kernel.starts_with("lathe_attn_o_cluster_")) {
      c_read.push_back(last_read);
      c_added.push_back(op.pointer(24));
      EXPECT_EQ(op.grid.x, 8u);
      EXPECT_EQ(op.grid.y, 2u);  // qwen3-tiny's kv heads
    }
  }
  EXPECT_EQ(c_added.size(), 2u);
  EXPECT_EQ(c_added, c_read);
  EXPECT_EQ(c.ops.size(), r.ops.size());
}

// attention_half (under LATHE_ATTENTION_HALF=1): in the short form, the attention's launch of layers 1
// and 2 of 4 (o_split's layers) runs their q/k/v and o too: grid (8, n_head_kv); it reads the sum the
// feed-forward launch before made (s_in, its 4th parameter), adds into a sum of its own (its 28th),
// which that layer's feed-forward launch then reads (its 7th), and zeroes the other taken launch's sum
// (its 29th). Neither layer's q/k/v nor o has a launch of its own there; the long form and held back
// keep them.
TEST(FfnSplitPlan, AttentionHalfRunsQkvAndOInTheAttentionsLaunchBelowLongFrom) {
  const std::string four = tiny(4);
  plan::PlanOptions po;
  po.long_from = 128;
  EXPECT_EQ(count(record_decode(four, po, 0, plan::StepForm::short_positions).plan, "attention half in one launch"), 0u)
      << "taken without LATHE_ATTENTION_HALF=1";
  ASSERT_EQ(setenv("LATHE_ATTENTION_HALF", "1", 1), 0);
  const Recorded r = record_decode(four, po, 0, plan::StepForm::short_positions);
  const Recorded l = record_decode(four, po, 0, plan::StepForm::long_positions);
  po.held = {"attention_half"};
  const Recorded h = record_decode(four, po, 0, plan::StepForm::short_positions);
  unsetenv("LATHE_ATTENTION_HALF");
  EXPECT_EQ(count(r.plan, "attention half in one launch"), 2u) << r.plan;
  EXPECT_EQ(count(h.plan, "attention half in one launch"), 0u) << h.plan;
  std::vector<uint64_t> made, read, added, zeroed, ffn_read;
  uint64_t last_made = 0;
  size_t fixed = 0, long_fixed = 0, long_halves = 0;
  for (const Launched& op : r.ops) {
    if (op.kernel.starts_with("lathe_ffn_split_")) {
      if (op.pointer(6) != 0) ffn_read.push_back(op.pointer(6));
      last_made = op.pointer(9);
    }
    fixed += op.kernel.ends_with("_fixed_early");
    if (op.kernel.starts_with("lathe_attn_half_")) {
      read.push_back(op.pointer(3));
      made.push_back(last_made);
      added.push_back(op.pointer(27));
      zeroed.push_back(op.pointer(28));
      EXPECT_EQ(op.grid.x, 8u);
      EXPECT_EQ(op.grid.y, 2u);  // qwen3-tiny's kv heads
    }
  }
  ASSERT_EQ(added.size(), 2u);
  EXPECT_EQ(read, made) << "each reads the sum the feed-forward launch before it made";
  EXPECT_EQ(ffn_read, added) << "the feed-forward launch after each reads the sum it made";
  EXPECT_NE(added[0], added[1]);
  EXPECT_EQ(zeroed[0], added[1]);
  EXPECT_EQ(zeroed[1], added[0]);
  EXPECT_EQ(fixed, 1u) << "layer 3's q/k/v alone reads a fixed-point sum in its own launch";
  for (const Launched& op : l.ops) {
    long_fixed += op.kernel.ends_with("_fixed_early");
    long_halves += op.kernel.starts_with("lathe_attn_half_");
  }
  EXPECT_EQ(long_fixed, 3u);
  EXPECT_EQ(long_halves, 0u);
  EXPECT_EQ(h.ops.size(), r.ops.size() + 4) << "held back: q/k/v's and o's own launches in layers 1 and 2";
}

// Each re-laid constant's recipe (StepPlan::relays(), which `lathe emit`'s program follows at its load,
// kernels/q8_0_relay.h) applied to the checkpoint tensor's bytes gives exactly the bytes the plan
// uploaded: 3 taken launches of a 4-layer qwen3-tiny, each down by slices in the levels layout, its
// gate and up in the levels layout.
TEST(FfnSplitPlan, RelayRecipesGiveTheBytesThePlanUploads) {
  const std::string four = tiny(4);
  cuda::Recorder rec(test::virtual_h200(), test::library_param_sizes());
  const DecodeCut cut(four, 0);
  const GgufFile& f = cut.f;
  const plan::StepPlan p(cut.g, cut.model, {});
  ASSERT_EQ(p.relays().size(), 9u);
  size_t downs = 0;
  for (const plan::Relay& r : p.relays()) {
    size_t buffer = 0, offset = 0;
    ASSERT_TRUE(rec.locate(r.ptr, &buffer, &offset));
    EXPECT_EQ(offset, 0u);
    const cuda::RecordedWrite* upload = nullptr;
    for (const cuda::RecordedWrite& w : rec.writes())
      if (w.buffer == buffer && w.offset == 0 && !w.zero) upload = &w;
    ASSERT_NE(upload, nullptr) << r.weight;
    ASSERT_TRUE(upload->kept);
    const GgufTensor& t = f.tensor(r.weight);
    std::vector<uint8_t> bytes(t.data, t.data + t.n_bytes);
    if (r.f > 0) bytes = lathe_relay::down_stack_by_slices(bytes.data(), r.n_expert, r.e, r.f);
    if (r.group > 0) bytes = lathe_relay::levels(bytes.data(), bytes.size(), r.group);
    EXPECT_EQ(std::vector<unsigned char>(bytes.begin(), bytes.end()), upload->data) << r.weight;
    downs += r.f > 0;
  }
  EXPECT_EQ(downs, 3u);
}

TEST(FfnSplitPlan, NotTakenWithOneLaunchAStepNorForEmit) {
  EXPECT_EQ(count(record_decode(tiny(2), {}).plan, "feed-forward in one launch"), 0u);
  plan::PlanOptions emit;
  emit.relaid_constants = false;
  EXPECT_EQ(count(record_decode(tiny(4), emit).plan, "feed-forward in one launch"), 0u);
}

}  // namespace
}  // namespace lathe
