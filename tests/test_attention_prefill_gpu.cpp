// Prefill attention on tensor cores (kernels/attention_prefill_launch.h) against the interpreter's
// attention over a sweep of chunk sizes, start positions, head sizes, head groups and options, and its
// speed against decode attention run over the same rows.
// The caches are f16 on the device and the reference reads the same f16 values widened, so the error
// is the kernel's own: q and the softmax weights rounded to f16 for the tensor cores (relative 2^-11
// each), f32 accumulation. Bound (max |gpu - cpu| / max |cpu|): 1e-3.
#include "gguf/block_format.h"
#include "kernels/attention_prefill_launch.h"
#include "test_gpu_ops_helpers.h"

#include <fmt/format.h>

namespace lathe::test {
namespace {

constexpr double kPrefillBound = 1e-3;

struct PrefillCase {
  int64_t rows, start, d, n_head, n_head_kv;
  int64_t window = 0;
  float cap = 0;
  bool sinks = false;
  float scale = 0;
  float q_scale = 1;        // larger q: sharper softmax
  int64_t split_blocks = 0;  // > 0: split along the cache for about this many blocks, sized for n_ctx;
                             // -1: the default plan, sized for the chunk's last position (as a timing does)
  int64_t slack = 5;         // cache slots past the chunk
  bool decode_kernel = false;  // run today's decode attention instead (the timing's comparison)
};

std::string label(const PrefillCase& c) {
  std::string s = fmt::format("rows {} at {} d{} h{}/{}", c.rows, c.start, c.d, c.n_head, c.n_head_kv);
  if (c.window) s += fmt::format(" win{}", c.window);
  if (c.cap) s += fmt::format(" cap{}", c.cap);
  if (c.sinks) s += " sinks";
  if (c.scale) s += fmt::format(" scale{}", c.scale);
  if (c.q_scale != 1) s += fmt::format(" q*{}", c.q_scale);
  if (c.decode_kernel) s += " [decode kernel]";
  return s;
}

std::vector<uint16_t> halves(const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = f32_to_f16(v[i]);
  return h;
}

double run_case(const PrefillCase& c, uint32_t seed, std::string* split_note) {
  // Two sequences; the chunk is sequence 1's. Slots past the chunk hold NaN, as stale or never-written
  // cache memory may: the kernel must not let them into any product.
  const int64_t n_seq = 2, n_ctx = c.start + c.rows + c.slack, slot = c.n_head_kv * c.d, seq_size = n_ctx * slot;
  std::vector<uint16_t> k = halves(random_values(n_seq * seq_size, seed)), v = halves(random_values(n_seq * seq_size, seed + 1));
  for (int64_t i = seq_size + (c.start + c.rows) * slot; i < 2 * seq_size; ++i) k[i] = v[i] = 0x7e00;
  const std::vector<float> q = random_values(c.rows * c.n_head * c.d, seed + 2, c.q_scale);
  const std::vector<float> sinks = c.sinks ? random_values(c.n_head, seed + 3, 2.0f) : std::vector<float>{};
  std::vector<int32_t> sequences(c.rows, 1), positions(c.rows);
  for (int64_t r = 0; r < c.rows; ++r) positions[r] = static_cast<int32_t>(c.start + r);

  std::vector<float> kf(seq_size), vf(seq_size);  // sequence 1, widened
  for (int64_t i = 0; i < seq_size; ++i) {
    kf[i] = f16_to_f32(k[seq_size + i]);
    vf[i] = f16_to_f32(v[seq_size + i]);
  }
  AttentionOptions options;
  options.scale = c.scale;
  options.window = c.window;
  options.cap = c.cap;
  options.sinks = sinks;
  const Tensor want = attention(Tensor({c.rows, c.n_head, c.d}, q), Tensor({n_ctx, c.n_head_kv, c.d}, kf),
                                Tensor({n_ctx, c.n_head_kv, c.d}, vf), positions, options);

  auto dk = to_device(k), dv = to_device(v), dq = to_device(q), dsinks = to_device(sinks);
  auto dseq = to_device(sequences), dpos = to_device(positions);
  auto dout = to_device(std::vector<float>(want.data.size(), NAN));
  kernels::AttentionShape shape{c.rows, c.n_head, c.n_head_kv, c.d, n_ctx, n_ctx};
  kernels::AttentionOptionsGpu gopt{c.scale, c.window, c.cap, c.sinks ? dsinks.ptr() : 0};
  cuda::Stream s;
  kernels::PrefillSplit split;
  if (c.split_blocks > 0) split = kernels::plan_prefill_split(shape, gopt, c.split_blocks);
  if (c.split_blocks < 0) {
    shape.max_visible = c.start + c.rows;
    split = kernels::plan_prefill_split(shape, gopt);
  }
  const kernels::AttentionSplit decode_split = kernels::plan_attention_split(shape, gopt);
  cuda::DeviceBuffer work(std::max({split.workspace_bytes, decode_split.workspace_bytes, size_t{16}}), "prefill workspace");
  if (c.decode_kernel)
    kernels::decode_attention(dout.ptr(), dq.ptr(), dk.ptr(), dv.ptr(), dseq.ptr(), dpos.ptr(), shape, gopt, decode_split,
                              work.ptr(), s.handle());
  else if (split.n_split > 1)
    kernels::prefill_attention(dout.ptr(), dq.ptr(), dk.ptr(), dv.ptr(), dseq.ptr(), dpos.ptr(), shape, gopt, split,
                               work.ptr(), s.handle());
  else
    kernels::prefill_attention(dout.ptr(), dq.ptr(), dk.ptr(), dv.ptr(), dseq.ptr(), dpos.ptr(), shape, gopt,
                               s.handle());
  s.synchronize();
  const int64_t n_split = c.decode_kernel ? decode_split.n_split : split.n_split;
  const int64_t split_len = c.decode_kernel ? decode_split.split_len : split.split_len;
  *split_note = n_split > 1 ? fmt::format(" split {}x{}", n_split, split_len) : "";
  return normalized_error(from_device<float>(dout, want.data.size()), want.data);
}

void run_all(const std::vector<PrefillCase>& cases, uint32_t seed) {
  double worst = 0;
  for (const PrefillCase& c : cases) {
    std::string note;
    const double err = run_case(c, seed += 10, &note);
    worst = std::max(worst, err);
    report("prefill attention", label(c) + note, err, kPrefillBound);
  }
  std::printf("  worst %.2e over %zu cases\n", worst, cases.size());
}

TEST(PrefillAttention, SweepMatchesTheInterpreter) {
  REQUIRE_GPU();
  std::vector<PrefillCase> cases;
  for (int64_t d : {64, 128})
    for (auto [h, hkv] : {std::pair<int64_t, int64_t>{32, 8}, {16, 16}, {14, 2}})
      for (int64_t start : {0, 37, 1000})
        for (int64_t rows : {1, 5, 64, 100, 512}) cases.push_back({rows, start, d, h, hkv});
  run_all(cases, 100);
}

TEST(PrefillAttention, OptionsAndGroupsMatchTheInterpreter) {
  REQUIRE_GPU();
  std::vector<PrefillCase> cases = {
      {100, 37, 128, 32, 8, 16},                      // window shorter than a tile
      {512, 1000, 128, 32, 8, 100},                   // window across tiles
      {64, 0, 64, 16, 16, 1},                         // each row sees itself only
      {100, 1000, 128, 32, 8, 0, 30.0f, false, 0, 4.0f},  // soft cap on sharp scores
      {5, 37, 64, 14, 2, 0, 0, true},                 // sinks
      {512, 37, 128, 32, 8, 0, 0, true},
      {100, 37, 128, 32, 8, 0, 0, false, 0.05f},      // explicit scale
      {100, 1000, 64, 14, 2, 300, 50.0f, true, 0, 3.0f},  // everything at once
      {77, 200, 128, 64, 8},                          // group 8
      {33, 90, 64, 24, 3},                            // group 8, ragged
      {40, 10, 128, 12, 4},                           // group 3
      {100, 37, 256, 16, 16},                         // d 256
      {70, 500, 256, 32, 4, 0, 0, true},
      {1, 0, 128, 8, 1},
      {64, 3584, 128, 32, 8, 0, 0, false, 0, 1, 264},  // split along the cache
      {100, 1000, 128, 32, 8, 200, 30.0f, true, 0, 2.0f, 264},
      {5, 1000, 64, 14, 2, 0, 0, true, 0, 1, 500},
      {3, 0, 128, 16, 16, 0, 0, false, 0, 1, 264, 3000},  // splits past the bound exit
  };
  run_all(cases, 200);
}

// The timing's shapes through the default split plan, and the decode kernel it compares against.
TEST(PrefillAttention, TimingShapesMatchTheInterpreter) {
  REQUIRE_GPU();
  std::vector<PrefillCase> cases = {
      {512, 0, 128, 32, 8, 0, 0, false, 0, 1, -1},
      {64, 3584, 128, 32, 8, 0, 0, false, 0, 1, -1},
      {512, 0, 128, 32, 8, 0, 0, false, 0, 1, -1, 5, true},
      {64, 3584, 128, 32, 8, 0, 0, false, 0, 1, -1, 5, true},
  };
  run_all(cases, 300);
}

TEST(PrefillAttention, RefusesShapesItHasNoKernelFor) {
  kernels::AttentionShape shape{64, 32, 8, 96, 4096, 4096};
  kernels::AttentionOptionsGpu options;
  auto refuses = [&](const char* part) {
    try {
      kernels::prefill_attention(0, 0, 0, 0, 0, 0, shape, options, nullptr);
      ADD_FAILURE() << "accepted " << part;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  refuses("head size 96");
  shape.d = 128;
  shape.n_head = 30;
  refuses("30 query heads");
  shape.n_head = 32;
  options.window = -1;
  refuses("window -1");
  options.window = 0;
  options.cap = -2;
  refuses("cap -2");
}

// The timing's setup: a qwen3-8b layer (32 heads, 8 kv heads, d 128), one sequence of 4,096 slots.
struct SpeedSetup {
  static constexpr int64_t n_head = 32, n_head_kv = 8, d = 128, n_ctx = 4096;
  cuda::DeviceBuffer k, v, q, out, seq, pos;
  cuda::Stream s;
  SpeedSetup() {
    const int64_t slot = n_head_kv * d;
    k = to_device(halves(random_values(n_ctx * slot, 1)));
    v = to_device(halves(random_values(n_ctx * slot, 2)));
    q = to_device(random_values(n_ctx * n_head * d, 3));
    out = to_device(std::vector<float>(n_ctx * n_head * d));
    std::vector<int32_t> seqs(n_ctx, 0), positions(n_ctx);
    for (int64_t i = 0; i < n_ctx; ++i) positions[i] = static_cast<int32_t>(i);
    seq = to_device(seqs);
    pos = to_device(positions);
    cuda::set_programmatic_launch(false);  // large kernels: as the engine sets it for prefill
  }
};

struct SpeedCase {
  int64_t rows, start, chunk;
};
constexpr SpeedCase kSpeedCases[] = {{512, 0, 512}, {512, 3584, 512}, {4096, 0, 512}, {4096, 0, 4096}, {64, 3584, 64}};

// Milliseconds (median of 5) for one pass over the case's rows, chunk by chunk, with the prefill kernel or
// today's decode kernel; n_split: the first chunk's split.
double time_rows(SpeedSetup& su, const SpeedCase& c, bool prefill, int64_t* n_split) {
  using S = SpeedSetup;
  std::vector<kernels::PrefillSplit> splits;
  std::vector<kernels::AttentionSplit> dsplits;
  size_t work_bytes = 16;
  auto shape_at = [&](int64_t at) { return kernels::AttentionShape{c.chunk, S::n_head, S::n_head_kv, S::d, S::n_ctx, at + c.chunk}; };
  for (int64_t at = c.start; at < c.start + c.rows; at += c.chunk) {
    splits.push_back(kernels::plan_prefill_split(shape_at(at), {}));
    dsplits.push_back(kernels::plan_attention_split(shape_at(at), {}));
    work_bytes = std::max({work_bytes, splits.back().workspace_bytes, dsplits.back().workspace_bytes});
  }
  *n_split = prefill ? splits.front().n_split : dsplits.front().n_split;
  cuda::DeviceBuffer work(work_bytes, "speed workspace");
  auto once = [&] {
    size_t i = 0;
    for (int64_t at = c.start; at < c.start + c.rows; at += c.chunk, ++i) {
      const CUdeviceptr q = su.q.ptr() + at * S::n_head * S::d * 4, o = su.out.ptr() + at * S::n_head * S::d * 4;
      const CUdeviceptr p = su.pos.ptr() + at * 4;
      if (prefill)
        kernels::prefill_attention(o, q, su.k.ptr(), su.v.ptr(), su.seq.ptr(), p, shape_at(at), {}, splits[i], work.ptr(),
                                   su.s.handle());
      else
        kernels::decode_attention(o, q, su.k.ptr(), su.v.ptr(), su.seq.ptr(), p, shape_at(at), {}, dsplits[i], work.ptr(),
                                  su.s.handle());
    }
  };
  once();
  su.s.synchronize();
  const int iters = prefill ? 10 : 2;
  std::vector<double> ms;
  for (int rep = 0; rep < 5; ++rep) {
    cuda::EventTimer t;
    t.start(su.s);
    for (int i = 0; i < iters; ++i) once();
    ms.push_back(t.stop(su.s) / iters);
  }
  return median(ms);
}

// Causal flops of a pass: 4 d per (row, head, visible slot), for q.k and p.v.
double causal_flops(const SpeedCase& c) {
  double slots = 0;
  for (int64_t r = 0; r < c.rows; ++r) slots += double(c.start + r + 1);
  return 4.0 * double(SpeedSetup::d) * double(SpeedSetup::n_head) * slots;
}

void time_kernel(bool prefill) {
  SpeedSetup su;
  std::printf("  device: %s, %d multiprocessors\n", cuda::Context::get().info().name.c_str(),
              cuda::Context::get().info().sm_count);
  for (const SpeedCase& c : kSpeedCases) {
    int64_t n_split = 1;
    const double ms = time_rows(su, c, prefill, &n_split);
    std::printf("  %s h32/8 d128 rows %4lld at %4lld in chunks of %4lld (split %2lld): %8.3f ms %6.1f TFLOP/s\n",
                prefill ? "prefill kernel" : "decode kernel ", (long long)c.rows, (long long)c.start, (long long)c.chunk,
                (long long)n_split, ms, causal_flops(c) / ms / 1e9);
    std::fflush(stdout);
    EXPECT_GT(ms, 0.0);
  }
}

TEST(PrefillAttentionSpeed, Qwen3Shape) {
  REQUIRE_GPU();
  time_kernel(true);
}

// Today's decode kernel over the same rows, for comparison (its own test: a fault there spares the above).
TEST(PrefillAttentionSpeed, Qwen3ShapeWithTheDecodeKernel) {
  REQUIRE_GPU();
  time_kernel(false);
}

}  // namespace
}  // namespace lathe::test
