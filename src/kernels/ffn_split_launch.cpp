#include "kernels/ffn_split_launch.h"

#include "base/error.h"
#include "gguf/block_format.h"
#include "kernels/decode_stream.h"
#include "kernels/library.h"
#include "kernels/q8_0_relay.h"
#include "runtime/cuda_driver.h"

#include <string>

namespace lathe::kernels {
namespace {

constexpr int64_t kQ8Bytes = 34;  // a Q8_0 block: f16 scale, 32 levels

}  // namespace

int64_t ffn_split_shared_bytes(int64_t e) {
  // gate and up rows, the slice and 16 bytes read past it, s, h's scales and levels (two words), a's
  // values, levels and scales, the block sum's scratch: ffn_split.cuh's layout.
  return 2 * 32 * (e / 32) * kQ8Bytes + kQ8Bytes * e + 16 + 4 * e + 16 * (e / 32) + 2 * e + 128 + 64 + 16 + 128;
}

bool ffn_split_applies(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down, Activations a) {
  if (a != Activations::int8 && a != Activations::int8x2) return false;
  for (const WeightMatrix* w : {&gate, &up, &down})
    if (w->type != GgmlType::Q8_0 || w->n_expert != 1) return false;
  const int64_t e = gate.k, f = gate.n_out;
  if (up.k != e || up.n_out != f || down.n_out != e || down.k != f) return false;
  return e % 256 == 0 && f % 32 == 0 && f > 0 && ffn_split_shared_bytes(e) <= shared_optin_bytes();
}

std::vector<uint8_t> relay_down_by_slices(const uint8_t* down, size_t bytes, int64_t e, int64_t f) {
  if (e <= 0 || f <= 0 || f % 32 != 0)
    fail("relay_down_by_slices: down must be E x F with F a multiple of 32, not {} x {}", e, f);
  const int64_t nb = f / 32;
  if (static_cast<int64_t>(bytes) != e * nb * kQ8Bytes)
    fail("relay_down_by_slices: {} bytes are not a Q8_0 matrix of {} x {} ({} bytes)", bytes, e, f, e * nb * kQ8Bytes);
  return lathe_relay::down_by_slices(down, e, f);
}

std::vector<uint8_t> relay_q8_0_levels(const uint8_t* blocks, size_t bytes, int64_t group) {
  const size_t g = static_cast<size_t>(group) * kQ8Bytes;
  if (group <= 0 || bytes % g != 0)
    fail("relay_q8_0_levels: {} bytes are not whole groups of {} Q8_0 blocks", bytes, group);
  return lathe_relay::levels(blocks, bytes, group);
}

void ffn_split(const WeightMatrix& gate, const WeightMatrix& up, CUdeviceptr down_slices, Activations a,
               const FfnSplit& f, CUstream stream) {
  WeightMatrix down{GgmlType::Q8_0, down_slices, gate.k, gate.n_out, 1};
  if (!ffn_split_applies(gate, up, down, a))
    internal_fail("ffn_split: the launch does not take {} x {} under this contract", gate.n_out, gate.k);
  LATHE_CHECK(gate.data % 16 == 0 && up.data % 16 == 0 && down_slices % 16 == 0 && f.norm_w % 16 == 0);
  LATHE_CHECK(f.s_out % 8 == 0 && f.zero % 8 == 0 && f.s_out != 0 && f.zero != 0 && (f.s_in != 0 || f.x != 0));
  CUdeviceptr g = gate.data, u = up.data, d = down_slices, x = f.x, y = f.y, s_in = f.s_in, w = f.norm_w,
              s_out = f.s_out, zero = f.zero, stamps = f.stamps;
  int e = static_cast<int>(gate.k);
  float eps = f.eps;
  const std::string name =
      std::string("lathe_ffn_split_q8_0_") + std::string(activations_name(a)) + (f.levels ? "_lv" : "");
  cuda::launch(kernel(name), {static_cast<unsigned>(gate.n_out / 32), 1, 1}, {512, 1, 1},
               static_cast<unsigned>(ffn_split_shared_bytes(gate.k)), stream,
               {&g, &u, &d, &e, &x, &y, &s_in, &w, &eps, &s_out, &zero, &stamps},
               "launching a feed-forward half with down split along its input");
}

namespace {

// Both mixture forms' shapes: Q8_0 stacks of one expert count, int8 or int8x2, E % 256, F % 32, top_k.
bool moe_split_shapes(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down, Activations a,
                      int64_t top_k) {
  if (a != Activations::int8 && a != Activations::int8x2) return false;
  for (const WeightMatrix* w : {&gate, &up, &down})
    if (w->type != GgmlType::Q8_0 || w->n_expert != gate.n_expert) return false;
  const int64_t e = gate.k, f = gate.n_out;
  if (up.k != e || up.n_out != f || down.n_out != e || down.k != f) return false;
  if (top_k < 1 || top_k > gate.n_expert || top_k * (f / 32) > (int64_t{1} << 20)) return false;
  return e % 256 == 0 && f % 32 == 0 && f > 0;
}

}  // namespace

bool moe_split_applies(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down, Activations a,
                       int64_t top_k) {
  return moe_split_shapes(gate, up, down, a, top_k) && ffn_split_shared_bytes(gate.k) <= shared_optin_bytes();
}

// moe_split_ring.cuh's layout: down's two slices, x's levels (two words' room) and scales, 16 warps'
// two-row rings, a, its levels and scales.
int64_t moe_split_ring_shared_bytes(int64_t e) {
  const int64_t nb = e / 32, rb = 34 * nb;
  return 68 * e + 2 * e + 16 * nb + 2 * 16 * rb + 64 * 4 + 2 * 64 + 2 * 16;
}

bool moe_split_ring_applies(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down, Activations a,
                            int64_t top_k) {
  if (!moe_split_shapes(gate, up, down, a, top_k) || gate.n_out % 64 != 0) return false;
  return moe_split_ring_shared_bytes(gate.k) <= shared_optin_bytes();
}

std::vector<uint8_t> relay_down_stack_by_slices(const uint8_t* down, size_t bytes, int64_t n_expert, int64_t e,
                                                int64_t f) {
  if (n_expert <= 0 || e <= 0 || f <= 0 || f % 32 != 0)
    fail("relay_down_stack_by_slices: down must be {} x E x F with F a multiple of 32, not E x F = {} x {}", n_expert, e, f);
  const size_t one = static_cast<size_t>(e * (f / 32) * kQ8Bytes);
  if (bytes != one * static_cast<size_t>(n_expert))
    fail("relay_down_stack_by_slices: {} bytes are not {} Q8_0 matrices of {} x {}", bytes, n_expert, e, f);
  return lathe_relay::down_stack_by_slices(down, n_expert, e, f);
}

void moe_split(const WeightMatrix& gate, const WeightMatrix& up, CUdeviceptr down_slices, Activations a, int64_t top_k,
               const MoeSplit& m, CUstream stream) {
  WeightMatrix down{GgmlType::Q8_0, down_slices, gate.k, gate.n_out, gate.n_expert};
  if (m.ring ? !moe_split_ring_applies(gate, up, down, a, top_k) : !moe_split_applies(gate, up, down, a, top_k))
    internal_fail("moe_split: the launch does not take {} experts of {} x {} under this contract", gate.n_expert,
                  gate.n_out, gate.k);
  LATHE_CHECK(gate.data % 16 == 0 && up.data % 16 == 0 && down_slices % 16 == 0 && m.x_q % 16 == 0);
  LATHE_CHECK(m.s_out % 8 == 0 && m.zero % 8 == 0 && m.s_out != 0 && m.zero != 0 && m.s != 0 && m.ids && m.wts);
  CUdeviceptr g = gate.data, u = up.data, d = down_slices, xq = m.x_q, ids = m.ids, wts = m.wts, s = m.s,
              s_out = m.s_out, zero = m.zero, stamps = m.stamps;
  int e = static_cast<int>(gate.k), f = static_cast<int>(gate.n_out);
  const std::string name =
      std::string(m.ring ? "lathe_moe_split_ring_q8_0_" : "lathe_moe_split_q8_0_") + std::string(activations_name(a));
  const int64_t values = m.ring ? 64 : 32;
  cuda::launch(kernel(name), {static_cast<unsigned>(top_k * (gate.n_out / values)), 1, 1}, {512, 1, 1},
               static_cast<unsigned>(m.ring ? moe_split_ring_shared_bytes(gate.k) : ffn_split_shared_bytes(gate.k)),
               stream, {&g, &u, &d, &e, &f, &xq, &ids, &wts, &s, &s_out, &zero, &stamps},
               "launching the kept experts' feed-forward halves with down split along its input");
}

}  // namespace lathe::kernels
