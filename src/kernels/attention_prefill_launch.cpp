#include "kernels/attention_prefill_launch.h"

#include "kernels/library.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace lathe::kernels {
namespace {

constexpr int64_t kBlockM = 64;    // PATTN_BM in attention_prefill.cuh
constexpr unsigned kThreads = 128;  // PATTN_THREADS

int64_t tile_slots(int64_t d) { return d >= 256 ? 32 : 64; }  // PattnShape<D>::bn

// PattnShape<D>::shared_halves: K and V, two buffers each, rows padded by 8 halves; q has rows of
// its own only at d 256 (it lives in registers below).
size_t shared_bytes(int64_t d) {
  const int64_t tile = tile_slots(d) * (d + 8);
  return static_cast<size_t>(4 * tile + (d > 128 ? kBlockM * (d + 8) : 0)) * 2;
}

void check_shape(const AttentionShape& s, const AttentionOptionsGpu& o) {
  if (s.d != 64 && s.d != 128 && s.d != 256)
    fail("prefill attention: head size {} has no kernel (64, 128 and 256 do)", s.d);
  if (s.n_head_kv <= 0 || s.n_head <= 0 || s.n_head % s.n_head_kv != 0)
    fail("prefill attention: {} query heads are not a multiple of {} kv heads", s.n_head, s.n_head_kv);
  if (s.rows < 0 || s.n_ctx <= 0 || s.n_ctx > INT32_MAX || s.n_head_kv > 65535 ||
      s.rows * s.n_head > INT32_MAX || (s.rows * s.n_head + kBlockM - 1) / kBlockM > INT32_MAX)
    fail("prefill attention: {} rows, {} heads, {} slots are out of the kernel's range", s.rows, s.n_head,
         s.n_ctx);
  if (s.rows > s.n_ctx)
    fail("prefill attention: a chunk of {} rows does not fit a cache of {} slots", s.rows, s.n_ctx);
  if (o.window < 0 || o.window > INT32_MAX) fail("prefill attention: window {} must be positive or 0", o.window);
  if (!(o.cap >= 0) || !std::isfinite(o.cap)) fail("prefill attention: cap {} must be positive or 0", o.cap);
  if (!std::isfinite(o.scale)) fail("prefill attention: scale {} is not a number", o.scale);
}

}  // namespace

PrefillSplit plan_prefill_split(const AttentionShape& shape, const AttentionOptionsGpu& options,
                                int64_t target_blocks) {
  check_shape(shape, options);
  PrefillSplit split;
  if (target_blocks <= 0) target_blocks = 2 * int64_t{cuda::Context::get().info().sm_count};
  const int64_t group = shape.n_head / shape.n_head_kv;
  const int64_t base_blocks = std::max<int64_t>(1, (shape.rows * group + kBlockM - 1) / kBlockM * shape.n_head_kv);
  // The most slots one block may see: up to its last row, from its first row's first slot.
  int64_t range = std::clamp<int64_t>(shape.max_visible, 1, shape.n_ctx);
  if (options.window > 0) range = std::min(range, options.window + kBlockM);
  const int64_t bn = tile_slots(shape.d);
  // Below this many slots a block's work is too short to be worth a merge.
  if (base_blocks >= target_blocks || range <= 4 * bn) return split;
  const int64_t want = std::min((target_blocks + base_blocks - 1) / base_blocks, (range + 4 * bn - 1) / (4 * bn));
  int64_t len = (range + want - 1) / want;
  len = (len + bn - 1) / bn * bn;
  split.split_len = len;
  split.n_split = (range + len - 1) / len;
  if (split.n_split > 1)
    split.workspace_bytes = static_cast<size_t>(split.n_split * shape.rows * shape.n_head) *
                            static_cast<size_t>(shape.d + 2) * sizeof(float);
  else
    split = PrefillSplit{};
  return split;
}

void prefill_attention(CUdeviceptr out, CUdeviceptr q, CUdeviceptr k_cache, CUdeviceptr v_cache,
                       CUdeviceptr sequences, CUdeviceptr positions, const AttentionShape& shape,
                       const AttentionOptionsGpu& options, CUstream stream) {
  prefill_attention(out, q, k_cache, v_cache, sequences, positions, shape, options, PrefillSplit{}, 0, stream);
}

void prefill_attention(CUdeviceptr out, CUdeviceptr q, CUdeviceptr k_cache, CUdeviceptr v_cache,
                       CUdeviceptr sequences, CUdeviceptr positions, const AttentionShape& shape,
                       const AttentionOptionsGpu& options, const PrefillSplit& split, CUdeviceptr workspace,
                       CUstream stream) {
  check_shape(shape, options);
  LATHE_CHECK(split.n_split >= 1);
  LATHE_CHECK(split.n_split == 1 || (split.split_len > 0 && split.split_len % tile_slots(shape.d) == 0 &&
                                     workspace != 0));
  if (shape.rows == 0) return;
  int rows = static_cast<int>(shape.rows), n_head = static_cast<int>(shape.n_head);
  int n_head_kv = static_cast<int>(shape.n_head_kv), n_ctx = static_cast<int>(shape.n_ctx);
  int window = static_cast<int>(options.window), d = static_cast<int>(shape.d);
  int n_split = static_cast<int>(split.n_split);
  int split_len = n_split > 1 ? static_cast<int>(split.split_len) : 0;
  float scale = options.scale != 0 ? options.scale : static_cast<float>(1.0 / std::sqrt(double(shape.d)));
  float cap = options.cap;
  CUdeviceptr sinks = options.sinks;
  CUdeviceptr part_o = n_split > 1 ? workspace : 0;
  CUdeviceptr part_ml =
      n_split > 1 ? workspace + static_cast<CUdeviceptr>(split.n_split * shape.rows * shape.n_head * shape.d) * sizeof(float)
                  : 0;
  const int64_t group = shape.n_head / shape.n_head_kv;
  const auto m_tiles = static_cast<unsigned>((shape.rows * group + kBlockM - 1) / kBlockM);
  cuda::launch(kernel("lathe_attn_prefill_" + std::to_string(shape.d)),
               {m_tiles, static_cast<unsigned>(shape.n_head_kv), static_cast<unsigned>(n_split)}, {kThreads},
               static_cast<unsigned>(shared_bytes(shape.d)), stream,
               {&q, &k_cache, &v_cache, &sequences, &positions, &out, &part_o, &part_ml, &rows, &n_head, &n_head_kv,
                &n_ctx, &window, &split_len, &n_split, &scale, &cap, &sinks},
               "prefill attention");
  if (n_split > 1)
    cuda::launch(kernel("lathe_attn_prefill_merge"), {static_cast<unsigned>(shape.rows * shape.n_head)},
                 {static_cast<unsigned>(d)}, 0, stream, {&part_o, &part_ml, &out, &rows, &n_head, &d, &n_split, &sinks},
                 "prefill attention merge");
}

}  // namespace lathe::kernels
