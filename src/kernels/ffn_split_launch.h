// Host launcher of a decode row's feed-forward half in one launch, down split along its input
// (ffn_split.cuh; docs/perf.md, thirty-fourth session). For one row under an int8 contract:
//   s = (s_in * 2^-32 (s_in given) or x) + y (y optional)            the residual sum before the half
//   h = s / rms(s) * norm_w                                          (quantized as the contract's x)
//   s_out += fix(s) + sum over 32-value slices b of fix(down[:, b] . quant(silu(gate_b h) * up_b h))
//   zero  = 0
// with fix(v) = rint(v * 2^32) as int64 (clamped to +-2^62): s_out is the next residual in fixed
// point, the same bits every run (integer adds in any order). s_out must be zero before the launch,
// which zeroes `zero` for a later one (the plan keeps one sum a launch, launch i zeroing sum i + 1:
// plan/step_plan_ffn.cpp; the next q/k/v launch reads the sum in its prologue, NormPrologue::x_fixed).
// Every pointer is a device pointer; the call only enqueues on `stream`.
#pragma once

#include "kernels/activations.h"
#include "kernels/gemv_launch.h"

#include <cuda.h>

#include <cstdint>
#include <vector>

namespace lathe::kernels {

struct FfnSplit {
  CUdeviceptr x = 0, y = 0;      // f32 [E]; x unused where s_in is given, y may be 0
  CUdeviceptr s_in = 0;          // int64 [E] or 0
  CUdeviceptr norm_w = 0;        // f32 [E], 16-byte aligned
  float eps = 1e-6f;
  CUdeviceptr s_out = 0, zero = 0;  // int64 [E]
  CUdeviceptr stamps = 0;           // 0, or u64 [F / 32][8]: each block's phases (ffn_split.cuh), a measurement
  // gate, up and down_slices in the levels layout (relay_q8_0_levels: gate and up by 32-row groups of
  // E / 32 * 32 blocks, the slices by E blocks): the _lv kernels, the plan's default where the spare
  // bytes hold the copies (7.6 us a 0.6B layer against the packed form's 8.2; LATHE_FFN_SPLIT_LEVELS=0
  // takes the packed form).
  bool levels = false;
};

// Whether the launch takes gate, up [F][E] and down [E][F] under contract a: all Q8_0, one matrix
// each, int8 or int8x2, E % 256 == 0, F % 32 == 0, and the block's rows and slice within the card's
// shared memory (E <= 2,048 on the H200).
bool ffn_split_applies(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down, Activations a);
// The dynamic shared memory of a block at width E.
int64_t ffn_split_shared_bytes(int64_t n_embd);

// down [E][F] Q8_0 (row-major: a row is F / 32 blocks of 34 bytes) re-laid by 32-column slices: slice b
// is E consecutive blocks, block r being down's block (r, b). Refuses (UserError) bytes that are not
// E x F of Q8_0 or F % 32 != 0.
std::vector<uint8_t> relay_down_by_slices(const uint8_t* down, size_t bytes, int64_t n_embd, int64_t n_ff);

// The levels layout of Q8_0 blocks, by groups of `group` consecutive blocks: a group's first 16 levels
// of each block [group][16], then their last 16 [group][16], then the scales [group] (f16): the same
// bytes a group. Refuses (UserError) bytes that are not whole groups of Q8_0 blocks.
std::vector<uint8_t> relay_q8_0_levels(const uint8_t* blocks, size_t bytes, int64_t group);

// down_slices: relay_down_by_slices's bytes on the device (16-byte aligned).
void ffn_split(const WeightMatrix& gate, const WeightMatrix& up, CUdeviceptr down_slices, Activations a,
               const FfnSplit& f, CUstream stream);

// ---- The mixture's form (fusion rule ffn_split on a mixture; ffn_split.cuh's lathe_moe_split_*): for
// one decode row whose router (the launch before) wrote ids, weights, x's int8 form and the residual
// sum s, the kept experts' gate/up, SwiGLU and down, down split along its input, every block adding
// its weighted partial of every output into s_out, block 0 adding fix(s):
//   s_out += fix(s) + sum over kept slots k and slices j of fix(w_k down_e[:, j] . quant(a_e,j))
//   zero = 0                          (as FfnSplit: s_out zero before, three or more rotating)
struct MoeSplit {
  CUdeviceptr x_q = 0;           // x's form under the contract (activations.h), [E]
  CUdeviceptr ids = 0, wts = 0;  // int32 [top_k], f32 [top_k]
  CUdeviceptr s = 0;             // f32 [E]: the residual sum before the mixture
  CUdeviceptr s_out = 0, zero = 0;  // int64 [E]
  CUdeviceptr stamps = 0;           // 0, or u64 [blocks][8] (ffn_split.cuh, moe_split_ring.cuh), a measurement
  // The one-wave form (moe_split_ring.cuh, LATHE_MOE_SPLIT=ring): 64 values a block (top_k F / 64 blocks),
  // gate/up streamed through a ring a warp; each row's two slices rounded to 2^-32 once.
  bool ring = false;
};
// gate, up: stacks [n_expert][F][E]; down: [n_expert][E][F]; all Q8_0, int8 or int8x2, E % 256 == 0,
// F % 32 == 0, 1 <= top_k <= n_expert, and a block's rows and slice within shared memory.
bool moe_split_applies(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down, Activations a,
                       int64_t top_k);
// The one-wave form's: F % 64 == 0 and its shared memory (moe_split_ring_shared_bytes) within the card's.
bool moe_split_ring_applies(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down, Activations a,
                            int64_t top_k);
int64_t moe_split_ring_shared_bytes(int64_t n_embd);
// A stack of n_expert down matrices [E][F] Q8_0, each re-laid by relay_down_by_slices, one after another.
std::vector<uint8_t> relay_down_stack_by_slices(const uint8_t* down, size_t bytes, int64_t n_expert, int64_t n_embd,
                                                int64_t n_ff);
// down_slices: relay_down_stack_by_slices's bytes on the device (16-byte aligned).
void moe_split(const WeightMatrix& gate, const WeightMatrix& up, CUdeviceptr down_slices, Activations a, int64_t top_k,
               const MoeSplit& m, CUstream stream);

}  // namespace lathe::kernels
