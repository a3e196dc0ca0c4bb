#include "kernels/attention_launch.h"

#include "kernels/library.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace lathe::kernels {
namespace {

constexpr int64_t kChunk = 16;     // ATTD_CHUNK in attention.cuh: slots a warp takes per step
constexpr int64_t kGranule = 128;  // split lengths are multiples of this: 8 chunks of 16 slots
constexpr int64_t kSetHeads = 8;   // ATTD_HEADS: query heads of a block
constexpr int64_t kMaxGroup = 32;

// Warps a block of the decode kernel: 8 where the head size has that kernel (d <= 128), else 4
// (ATTD_WARPS); LATHE_ATTN_WARPS=4 (read once; a measuring knob) or set_attention_warps (tests) takes
// 4 everywhere. Measured on the H200 (docs/perf.md, 2026-12-01): qwen3-8b q8_0 tg128 at 4,096 of
// context 286.4 -> 297.4 with 8 (each block's whole split asked for before its programmatic-launch
// wait), short contexts unchanged.
int g_attention_warps = [] {
  const char* v = std::getenv("LATHE_ATTN_WARPS");
  return v && std::string(v) == "4" ? 4 : 8;
}();

int warps_for(int64_t d) { return d <= 128 ? g_attention_warps : 4; }

// attd_shared_bytes in attention.cuh: w warps' rings of 4, 3 or 2 chunks of K and V.
size_t shared_bytes(int64_t d, int w) {
  const int64_t stages = d <= 64 ? 4 : d <= 128 ? 3 : 2;
  return static_cast<size_t>(w * stages * (d / 8) * 32 * 16);
}

// rope_attention.cuh's prologue past the attention's shared memory: the row's cosines and sines,
// ATTD_HEADS query heads, k, and a head's buffer a warp: (10 + w) d floats.
size_t rope_shared_bytes(int64_t d, int w) { return static_cast<size_t>((10 + w) * d * 4); }

int64_t head_sets(const AttentionShape& s) { return (s.n_head / s.n_head_kv + kSetHeads - 1) / kSetHeads; }

void check_shape(const AttentionShape& s, const AttentionOptionsGpu& o) {
  if (s.d != 64 && s.d != 128 && s.d != 256)
    fail("decode attention: head size {} has no kernel (64, 128 and 256 do)", s.d);
  if (s.n_head_kv <= 0 || s.n_head % s.n_head_kv != 0)
    fail("decode attention: {} query heads are not a multiple of {} kv heads", s.n_head, s.n_head_kv);
  if (s.n_head / s.n_head_kv > kMaxGroup)
    fail("decode attention: {} query heads per kv head; the kernel takes at most {}",
         s.n_head / s.n_head_kv, kMaxGroup);
  if (s.n_ctx <= 0 || s.n_ctx > INT32_MAX || s.rows < 0 || s.rows > 65535 || s.n_head_kv * head_sets(s) > 65535)
    fail("decode attention: {} rows, {} kv heads, {} slots are out of the kernel's range", s.rows,
         s.n_head_kv, s.n_ctx);
  if (o.window < 0 || o.window > INT32_MAX || o.cap < 0)
    fail("decode attention: window {} and cap {} must be positive or 0", o.window, o.cap);
}

}  // namespace

void set_attention_warps(int warps) { g_attention_warps = warps == 8 ? 8 : 4; }

AttentionSplit plan_attention_split(const AttentionShape& shape, const AttentionOptionsGpu& options,
                                    int64_t target_blocks, int64_t granule) {
  check_shape(shape, options);
  if (granule == 0) granule = kGranule;
  if (granule <= 0 || granule % kChunk != 0)
    fail("decode attention: a split granule of {} slots is not a positive multiple of {}", granule, kChunk);
  // One block a multiprocessor: measured on the H200 at 4,096 slots (32/8 heads, d 128) it beats two
  // (one row 13.0 us against 14.7, eight rows 50.5 against 52.2): fewer partials to merge, and the
  // second resident block adds no read rate.
  if (target_blocks <= 0) target_blocks = int64_t{cuda::Context::get().info().sm_count};
  int64_t visible = std::clamp<int64_t>(shape.max_visible, 1, shape.n_ctx);
  if (options.window > 0) visible = std::min(visible, options.window);
  const int64_t base_blocks = std::max<int64_t>(1, shape.rows * shape.n_head_kv * head_sets(shape));
  const int64_t most = (visible + granule - 1) / granule;
  AttentionSplit split;
  split.split_len = granule;
  split.n_split = std::clamp<int64_t>(target_blocks / base_blocks, 1, most);
  if (split.n_split > 1)
    split.workspace_bytes = static_cast<size_t>(shape.rows * shape.n_head * split.n_split) *
                            static_cast<size_t>(shape.d + 2) * sizeof(float);
  return split;
}

int64_t attention_first_split_position() { return kGranule; }
int64_t attention_chunk_slots() { return kChunk; }

size_t attention_ticket_bytes(const AttentionShape& shape) {
  return static_cast<size_t>(std::max<int64_t>(1, shape.rows * shape.n_head_kv * head_sets(shape))) * sizeof(int);
}

void decode_attention(CUdeviceptr out, CUdeviceptr q, CUdeviceptr k_cache, CUdeviceptr v_cache,
                      CUdeviceptr sequences, CUdeviceptr positions, const AttentionShape& shape,
                      const AttentionOptionsGpu& options, const AttentionSplit& split,
                      CUdeviceptr workspace, CUstream stream, CUdeviceptr tickets, const QuantizedOut& qout,
                      const AttentionRope* rope) {
  check_shape(shape, options);
  LATHE_CHECK(split.split_len % kChunk == 0 && split.split_len > 0 && split.n_split >= 1);
  LATHE_CHECK(out % 16 == 0);  // the finishing loops store 4 dims at a time
  LATHE_CHECK(split.n_split == 1 || workspace != 0);
  if (shape.rows == 0) return;
  int n_head = static_cast<int>(shape.n_head), n_head_kv = static_cast<int>(shape.n_head_kv);
  int n_ctx = static_cast<int>(shape.n_ctx), window = static_cast<int>(options.window);
  int split_len = static_cast<int>(split.split_len), n_split = static_cast<int>(split.n_split);
  int d = static_cast<int>(shape.d);
  float scale = options.scale != 0 ? options.scale : static_cast<float>(1.0 / std::sqrt(double(shape.d)));
  float cap = options.cap;
  CUdeviceptr sinks = options.sinks;
  CUdeviceptr part_o = split.n_split > 1 ? workspace : 0;
  CUdeviceptr part_ml =
      split.n_split > 1 ? workspace + static_cast<CUdeviceptr>(shape.rows * shape.n_head * split.n_split * shape.d) * sizeof(float)
                        : 0;
  // The output's int8 form in the kernel's finishing loops (its own rows, or the last split's merge),
  // and in the merge kernel's for the rows it merges.
  const bool merge_kernel = split.n_split > 1 && tickets == 0;
  if (qout.q) LATHE_CHECK(qout.a != Activations::f32 && qout.q % 16 == 0);
  CUdeviceptr q_out = qout.q;
  int q_words = qout.a == Activations::int8x2 ? 2 : 1, q_rows = static_cast<int>(shape.rows);
  const int w = warps_for(shape.d);
  const cuda::Dim3 grid{static_cast<unsigned>(split.n_split), static_cast<unsigned>(shape.n_head_kv * head_sets(shape)),
                  static_cast<unsigned>(shape.rows)};
  if (rope) {
    LATHE_CHECK(rope->table && rope->table->n_rot <= shape.d && rope->table->n_rot % 2 == 0 && rope->k && rope->v);
    const std::string name = "lathe_attn_decode_rope_" + std::to_string(shape.d) + (w == 8 ? "_w8" : "");
    CUdeviceptr k = rope->k, v = rope->v, freq = rope->table->freq.ptr(), qw = rope->q_weight, kw = rope->k_weight;
    double position_scale = rope->table->position_scale;
    int n_rot = static_cast<int>(rope->table->n_rot), neox = rope->order == RopeOrder::neox ? 1 : 0;
    int norm = rope->norm ? 1 : 0;
    float eps = rope->eps;
    const size_t bytes = shared_bytes(shape.d, w) + rope_shared_bytes(shape.d, w);
    cuda::launch(kernel(name), grid, {32 * static_cast<unsigned>(w)}, static_cast<unsigned>(bytes), stream,
                 {&q, &k_cache, &v_cache, &sequences, &positions, &out, &part_o, &part_ml, &n_head, &n_head_kv, &n_ctx,
                  &window, &split_len, &n_split, &scale, &cap, &sinks, &tickets, &q_out, &q_words, &q_rows, &k, &v,
                  &freq, &position_scale, &n_rot, &neox, &qw, &kw, &norm, &eps},
                 "decode attention with rope and the cache append");
  } else {
    const std::string name = "lathe_attn_decode_" + std::to_string(shape.d) + (w == 8 ? "_w8" : "");
    cuda::launch(kernel(name), grid, {32 * static_cast<unsigned>(w)}, static_cast<unsigned>(shared_bytes(shape.d, w)),
                 stream,
                 {&q, &k_cache, &v_cache, &sequences, &positions, &out, &part_o, &part_ml, &n_head, &n_head_kv,
                  &n_ctx, &window, &split_len, &n_split, &scale, &cap, &sinks, &tickets, &q_out, &q_words, &q_rows},
                 "decode attention");
  }
  if (merge_kernel) {
    // 4 dims a thread over whole warps (ATTD_MERGE_MAX_THREADS: 64, for d 256)
    const unsigned merge_threads = static_cast<unsigned>((shape.d / 4 + 31) / 32 * 32);
    cuda::launch(kernel("lathe_attn_merge"), {static_cast<unsigned>(shape.n_head), static_cast<unsigned>(shape.rows)},
                 {merge_threads}, 0, stream,
                 {&part_o, &part_ml, &positions, &out, &n_head, &d, &window, &split_len, &n_split, &sinks,
                  &q_out, &q_words, &q_rows},
                 "attention merge");
  }
}

}  // namespace lathe::kernels
