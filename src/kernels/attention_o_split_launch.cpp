#include "kernels/attention_o_split_launch.h"

#include "base/error.h"
#include "gguf/block_format.h"
#include "kernels/decode_stream.h"
#include "kernels/library.h"
#include "kernels/rope_launch.h"
#include "runtime/cuda_driver.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace lathe::kernels {
namespace {

constexpr int64_t kSplitMin = 128;  // the one split's length granule (any multiple of 16 slots)

// Measuring knobs (read once): LATHE_O_SPLIT_WARPS=4 or 2 takes the 4- or 2-warp kernels (8 by default,
// the held-back attention's count), LATHE_O_SPLIT_STAGES=0 the 8-warp kernels with the launchers' ring
// (3 chunks a warp at d 128) instead of one chunk a warp, LATHE_O_SPLIT_BLOCKS=N caps R at N,
// LATHE_O_SPLIT_BULK=1 asks for the slice by bulk copies (one a row, by one thread); LATHE_O_SPLIT_PROBE=
// 2 | 4 | 8 skips the slice's copies, the adds, the rows' products (wrong sums: the kernel's phases timed).
int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}
const int kWarps = [] {
  const int w = env_int("LATHE_O_SPLIT_WARPS", 8);
  return w == 2 || w == 4 ? w : 8;
}();
const int kBulkRows = (env_int("LATHE_O_SPLIT_BULK", 0) == 1 ? 1 : 0) | (env_int("LATHE_O_SPLIT_PROBE", 0) & 14);
// The ring's chunks a warp: 1 with 8 warps (LATHE_O_SPLIT_STAGES=0 the launchers' count by d), else by d.
const int kStages = kWarps == 8 && env_int("LATHE_O_SPLIT_STAGES", 1) == 1 ? 1 : 0;
const int64_t kMaxR = env_int("LATHE_O_SPLIT_BLOCKS", 1 << 20);

int64_t group_of(const AttentionShape& s) { return s.n_head / s.n_head_kv; }
int64_t blocks_a_row(const AttentionShape& s) { return group_of(s) * s.d / 32; }  // NB: Q8_0 blocks of a kv head's columns

// attention.cuh's ring for 4 warps, rope_attention.cuh's floats, then the kernel's: the slice, the
// heads' outputs, their levels (two words), their scales.
int64_t shared_bytes(const AttentionShape& s, int64_t rows) {
  const int64_t d = s.d, stages = kStages > 0 ? kStages : d <= 64 ? 4 : d <= 128 ? 3 : 2, nb = blocks_a_row(s);
  return kWarps * stages * (d / 8) * 32 * 16 + (10 + kWarps) * d * 4 + (34 * rows * nb + 15) / 16 * 16 +
         group_of(s) * d * (4 + 2) + 16 * nb;
}

// The parameters both forms' kernels share, as their launches pass them (by address), checked.
struct CommonArgs {
  CUdeviceptr q, kc, vc, seqs, pos, sinks, k, v, freq, qw, kw, ow, s_io;
  int n_head, n_head_kv, n_ctx, window, n_rot, neox, norm, e;
  float scale, cap, eps;
  double position_scale;
};
CommonArgs common_args(const AttentionShape& shape, const AttentionOptionsGpu& options, const AttentionRope& rope,
                       const WeightMatrix& o, const AttentionOSplit& f) {
  LATHE_CHECK(o.data % 16 == 0 && f.q % 16 == 0 && f.k_cache % 16 == 0 && f.v_cache % 16 == 0 && f.s_io % 8 == 0);
  LATHE_CHECK(f.s_io != 0 && rope.table && rope.table->n_rot <= shape.d && rope.table->n_rot % 2 == 0 && rope.k &&
              rope.v);
  CommonArgs c;
  c.q = f.q, c.kc = f.k_cache, c.vc = f.v_cache, c.seqs = f.sequences, c.pos = f.positions, c.sinks = options.sinks;
  c.k = rope.k, c.v = rope.v, c.freq = rope.table->freq.ptr(), c.qw = rope.q_weight, c.kw = rope.k_weight;
  c.ow = o.data, c.s_io = f.s_io;
  c.n_head = static_cast<int>(shape.n_head), c.n_head_kv = static_cast<int>(shape.n_head_kv);
  c.n_ctx = static_cast<int>(shape.n_ctx), c.window = static_cast<int>(options.window);
  c.n_rot = static_cast<int>(rope.table->n_rot), c.neox = rope.order == RopeOrder::neox ? 1 : 0;
  c.norm = rope.norm ? 1 : 0, c.e = static_cast<int>(o.n_out);
  c.scale = options.scale != 0 ? options.scale : static_cast<float>(1.0 / std::sqrt(double(shape.d)));
  c.cap = options.cap, c.eps = rope.eps;
  c.position_scale = rope.table->position_scale;
  return c;
}

}  // namespace

int64_t o_split_blocks_per_head(const AttentionShape& s, const WeightMatrix& o) {
  const int64_t sms = cuda::Context::get().info().sm_count;
  for (int64_t r = std::min(sms / s.n_head_kv, kMaxR); r >= 1; --r) {
    if (o.n_out % r != 0) continue;
    const int64_t rows = o.n_out / r;
    if (shared_bytes(s, rows) <= shared_optin_bytes()) return r;
  }
  return 0;
}

bool attention_o_split_applies(const AttentionShape& s, const WeightMatrix& o, Activations a) {
  if (a != Activations::int8 && a != Activations::int8x2) return false;
  if (s.rows != 1 || (s.d != 64 && s.d != 128) || s.n_head_kv <= 0 || s.n_head % s.n_head_kv != 0) return false;
  const int64_t nb = blocks_a_row(s);
  if (nb < 2 || nb > 32 || 32 % nb != 0) return false;
  if (o.type != GgmlType::Q8_0 || o.n_expert != 1 || o.k != s.n_head * s.d || o.n_out <= 0) return false;
  return o_split_blocks_per_head(s, o) > 0;
}

void attention_o_split(const AttentionShape& shape, const AttentionOptionsGpu& options, const AttentionRope& rope,
                       const WeightMatrix& o, Activations a, const AttentionOSplit& f, CUstream stream) {
  if (!attention_o_split_applies(shape, o, a))
    internal_fail("attention_o_split: the launch does not take {} heads ({} kv) of {} and o [{} x {}]", shape.n_head,
                  shape.n_head_kv, shape.d, o.n_out, o.k);
  const int64_t r = f.blocks_per_head > 0 ? f.blocks_per_head : o_split_blocks_per_head(shape, o);
  LATHE_CHECK(r > 0 && o.n_out % r == 0 && shared_bytes(shape, o.n_out / r) <= shared_optin_bytes());
  CommonArgs c = common_args(shape, options, rope, o, f);
  int split_min = static_cast<int>(kSplitMin), rr = static_cast<int>(r), bulk = kBulkRows;
  const std::string name = "lathe_attn_o_split_" + std::to_string(shape.d) + "_q8_0_" + std::string(activations_name(a)) +
                           "_w" + std::to_string(kWarps) + "s" + std::to_string(kStages);
  cuda::launch(kernel(name), {1, static_cast<unsigned>(shape.n_head_kv * r), 1}, {32 * static_cast<unsigned>(kWarps), 1, 1},
               static_cast<unsigned>(shared_bytes(shape, o.n_out / r)), stream,
               {&c.q, &c.kc, &c.vc, &c.seqs, &c.pos, &c.n_head, &c.n_head_kv, &c.n_ctx, &c.window, &split_min, &c.scale,
                &c.cap, &c.sinks, &c.k, &c.v, &c.freq, &c.position_scale, &c.n_rot, &c.neox, &c.qw, &c.kw, &c.norm,
                &c.eps, &c.ow, &c.e, &rr, &c.s_io, &bulk},
               "launching a decode attention with o split along its input");
}

namespace {

constexpr int64_t kCluster = 8;  // LATHE_ATTN_O_CLUSTER in rope_attention_o_cluster.cuh

// rope_attention_o_cluster.cuh's layout but the slice: a one-chunk ring for 8 warps, the rope's floats,
// the partial (outputs, (m, l) a head, padded to 16 bytes), the merged outputs, their levels, scales.
int64_t cluster_shared_bytes(const AttentionShape& s) {
  const int64_t d = s.d, g = group_of(s), gd = g * d, nb = blocks_a_row(s);
  return 8 * (d / 8) * 32 * 16 + (10 + 8) * d * 4 + 4 * (gd + 2 * g + (2 * g) % 4) + 4 * gd + 2 * gd + 16 * nb;
}

}  // namespace

bool attention_o_cluster_applies(const AttentionShape& s, const WeightMatrix& o, Activations a) {
  if (a != Activations::int8 && a != Activations::int8x2) return false;
  if (s.rows != 1 || (s.d != 64 && s.d != 128) || s.n_head_kv <= 0 || s.n_head % s.n_head_kv != 0) return false;
  const int64_t nb = blocks_a_row(s);
  if (nb < 2 || nb > 32 || 32 % nb != 0 || s.n_head / s.n_head_kv > 8) return false;
  if (o.type != GgmlType::Q8_0 || o.n_expert != 1 || o.k != s.n_head * s.d || o.n_out <= 0 || o.n_out % kCluster != 0)
    return false;
  const int64_t slice = (34 * (o.n_out / kCluster) * nb + 15) / 16 * 16;
  return s.n_head_kv * kCluster <= 65535 && cluster_shared_bytes(s) + slice <= shared_optin_bytes();
}

void attention_o_cluster(const AttentionShape& shape, const AttentionOptionsGpu& options, const AttentionRope& rope,
                         const WeightMatrix& o, Activations a, const AttentionOSplit& f, CUstream stream) {
  if (!attention_o_cluster_applies(shape, o, a))
    internal_fail("attention_o_cluster: the launch does not take {} heads ({} kv) of {} and o [{} x {}]", shape.n_head,
                  shape.n_head_kv, shape.d, o.n_out, o.k);
  CommonArgs c = common_args(shape, options, rope, o, f);
  const int64_t slice = (34 * (o.n_out / kCluster) * blocks_a_row(shape) + 15) / 16 * 16;
  const std::string name = "lathe_attn_o_cluster_" + std::to_string(shape.d) + "_q8_0_" + std::string(activations_name(a));
  cuda::launch(kernel(name), {static_cast<unsigned>(kCluster), static_cast<unsigned>(shape.n_head_kv), 1}, {256, 1, 1},
               static_cast<unsigned>(cluster_shared_bytes(shape) + slice), stream,
               {&c.q, &c.kc, &c.vc, &c.seqs, &c.pos, &c.n_head, &c.n_head_kv, &c.n_ctx, &c.window, &c.scale, &c.cap,
                &c.sinks, &c.k, &c.v, &c.freq, &c.position_scale, &c.n_rot, &c.neox, &c.qw, &c.kw, &c.norm, &c.eps,
                &c.ow, &c.e, &c.s_io},
               "launching a decode attention split over a cluster with o split along its input");
}

// rope_attention_qkv_o.cuh's layout past the cluster form's, o slice included: the block's (G + 2) d / 8
// rows of q/k/v, the norm's weights, x, h's levels (two words), their scales, the rows' values, 32 floats.
int64_t attention_half_shared_bytes(const AttentionShape& s, int64_t e) {
  const int64_t rows = (group_of(s) + 2) * s.d / kCluster, nb = e / 32;
  const int64_t slice = (34 * (e / kCluster) * blocks_a_row(s) + 15) / 16 * 16;
  return cluster_shared_bytes(s) + slice + 34 * nb * rows + 4 * e + 4 * e + 2 * e + 16 * nb + 4 * ((rows + 3) / 4 * 4) +
         4 * 32;
}

bool attention_half_applies(const AttentionShape& s, const WeightMatrix& wq, const WeightMatrix& wk,
                            const WeightMatrix& wv, const WeightMatrix& o, Activations a) {
  if (!attention_o_cluster_applies(s, o, a)) return false;
  const int64_t e = o.n_out;
  if (e % 256 != 0 || ((group_of(s) + 2) * s.d) % kCluster != 0) return false;
  const int64_t rows[3] = {s.n_head * s.d, s.n_head_kv * s.d, s.n_head_kv * s.d};
  const WeightMatrix* ws[3] = {&wq, &wk, &wv};
  for (int i = 0; i < 3; ++i)
    if (ws[i]->type != GgmlType::Q8_0 || ws[i]->n_expert != 1 || ws[i]->k != e || ws[i]->n_out != rows[i] ||
        ws[i]->data % 16 != 0)
      return false;
  return attention_half_shared_bytes(s, e) <= shared_optin_bytes();
}

void attention_half(const AttentionShape& shape, const AttentionOptionsGpu& options, const AttentionRope& rope,
                    const WeightMatrix& o, Activations a, const AttentionHalf& f, CUstream stream) {
  if (!attention_half_applies(shape, f.wq, f.wk, f.wv, o, a))
    internal_fail("attention_half: the launch does not take {} heads ({} kv) of {}, q/k/v of {} columns and o [{} x {}]",
                  shape.n_head, shape.n_head_kv, shape.d, f.wq.k, o.n_out, o.k);
  LATHE_CHECK(o.data % 16 == 0 && f.k_cache % 16 == 0 && f.v_cache % 16 == 0 && f.norm_w && f.norm_w % 16 == 0);
  LATHE_CHECK(f.s_in % 8 == 0 && f.s_out % 8 == 0 && f.zero % 8 == 0 && f.s_in && f.s_out && f.zero &&
              f.s_out != f.s_in && f.s_out != f.zero && f.zero != f.s_in);
  LATHE_CHECK(rope.table && rope.table->n_rot <= shape.d && rope.table->n_rot % 2 == 0);
  CUdeviceptr wq = f.wq.data, wk = f.wk.data, wv = f.wv.data, s_in = f.s_in, norm_w = f.norm_w, kc = f.k_cache,
              vc = f.v_cache, seqs = f.sequences, pos = f.positions, sinks = options.sinks,
              freq = rope.table->freq.ptr(), qw = rope.q_weight, kw = rope.k_weight, ow = o.data, s_out = f.s_out,
              zero = f.zero, stamps = f.stamps;
  float norm_eps = f.norm_eps, eps = rope.eps, cap = options.cap;
  float scale = options.scale != 0 ? options.scale : static_cast<float>(1.0 / std::sqrt(double(shape.d)));
  int e = static_cast<int>(o.n_out), n_head = static_cast<int>(shape.n_head), n_head_kv = static_cast<int>(shape.n_head_kv),
      n_ctx = static_cast<int>(shape.n_ctx), window = static_cast<int>(options.window),
      n_rot = static_cast<int>(rope.table->n_rot), neox = rope.order == RopeOrder::neox ? 1 : 0, norm = rope.norm ? 1 : 0;
  double position_scale = rope.table->position_scale;
  const std::string name = "lathe_attn_half_" + std::to_string(shape.d) + "_q8_0_" + std::string(activations_name(a));
  cuda::launch(kernel(name), {static_cast<unsigned>(kCluster), static_cast<unsigned>(shape.n_head_kv), 1}, {256, 1, 1},
               static_cast<unsigned>(attention_half_shared_bytes(shape, o.n_out)), stream,
               {&wq, &wk, &wv, &s_in, &norm_w, &norm_eps, &e, &kc, &vc, &seqs, &pos, &n_head, &n_head_kv, &n_ctx,
                &window, &scale, &cap, &sinks, &freq, &position_scale, &n_rot, &neox, &qw, &kw, &norm, &eps, &ow,
                &s_out, &zero, &stamps},
               "launching a decode row's attention half (q/k/v, the attention, o) in one launch");
}

}  // namespace lathe::kernels
