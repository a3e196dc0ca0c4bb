// Host launchers of the merged decode GEMVs (gemv_multi.cuh): the products of a layer that read one
// activation row in one launch. Every pointer is a device pointer; every call only enqueues on
// `stream`. Weights follow gemv_launch.h's layout and alignment rules (rows row_bytes(type, k) apart,
// 16-byte aligned, readable to the next 16-byte line past their end); n_expert must be 1.
//
// Both entry points take every shape and format gemv takes: where the merged kernel does not apply
// (the f32 contract, n_rows > 1, formats other than q8_0 / q4_K / q6_K or a mix other than q4_K with
// q6_K, shared memory short of 160 KB + 2.5 k) they fall back to one gemv per matrix (and, for
// gate/up, the elementwise swiglu), so callers can always use them. Results equal the separate
// products' up to f32 rounding order (each product's sum is split into the same chunks).
//
// Speed (H200, weights cycled past L2, launches in a graph, each set after the activation quantizer
// as in a decode step; tests/test_gemv_multi_gpu.cpp TimingMergedVsSeparate), us per set, separate
// launches -> merged, int8 / int8x2 (% of 4,630 GB/s: merged int8x2):
//   qwen3-8b q8_0   q/k/v 4096,1024,1024 x 4096  14.4 -> 11.6 / 15.7 -> 12.5 us (46%; 55% w/o quantizer)
//   qwen3-8b q8_0   gate/up 12288 x 4096         34.2 -> 30.1 / 34.8 -> 33.3 us (70%)
//   qwen3-0.6b q8_0 q/k/v 2048,1024,1024 x 1024   7.8 ->  4.8 /  8.5 ->  4.9 us (20%)
//   qwen3-0.6b q8_0 gate/up 3072 x 1024           8.4 ->  6.4 /  9.2 ->  6.6 us (22%)
//   qwen3-8b q4_K_M q/k/v (q6_K v)               14.0 -> 11.3 / 15.7 -> 12.2 us (27%)
//   qwen3-8b q4_K_M gate/up                      25.4 -> 24.9 / 30.4 -> 26.3 us (47%)
// One matrix alone is slower merged than in gemv's decode kernel (q8_0 4096 x 4096: 7.4 vs 6.4 us;
// the merged kernel spends more instructions a chunk), so gemv_multi of one matrix calls gemv.
#pragma once

#include "kernels/gemv_launch.h"

#include <cuda.h>

#include <cstdint>

namespace lathe::kernels {

// y[m] [n_rows][w[m].n_out] = x . w[m]^T for each m < n_matrices (1..3): q, k and v of attention.
// The matrices share k and the activation x (gemv's form for contract a); they may differ in n_out
// and format. y[m] 4-byte aligned, fully written, not overlapping one another. The merged kernel
// deals the rows of all matrices to every SM as one list (one row, int8 / int8x2).
void gemv_multi(const WeightMatrix* w, int n_matrices, Activations a, CUdeviceptr x, const CUdeviceptr* y,
                CUstream stream, int64_t n_rows = 1);

// y [n_rows][n_out] = silu(x . gate^T) * (x . up^T), the interpreter's swiglu (cpu_ops.h) of the
// two products, with f32 silu(g) = g / (1 + exp(-g)). gate and up have one shape (n_out x k); y
// 4-byte aligned. Merged: one kernel whose work item is output o (rows o of gate and up), the
// SwiGLU in its epilogue; the fallback needs a scratch of n_rows * n_out floats, which it allocates
// once per call (tests and odd shapes only: the decode path never takes it).
// qout (quantize_epilogue): y also in contract qout.a's int8 form (qout.a == a, n_out % 32 == 0;
// quantize_activations' layout, bit for bit) for the product that reads it next. The merged kernel
// writes it in its epilogue (each block quantizes its own 32-row blocks, dealt to it whole: y's bits
// are the dealt form's); elsewhere quantize_activations runs after.
void gemv_gate_up_swiglu(const WeightMatrix& gate, const WeightMatrix& up, Activations a, CUdeviceptr x,
                         CUdeviceptr y, CUstream stream, int64_t n_rows = 1, const QuantizedOut& qout = {});

// Whether the merged kernel quantizes gate/up's output in its epilogue for one row (qout): where its
// rows dealt by whole 32-row blocks keep every block busy and load none more than dealing them one by
// one (the widest block sets the time; qwen3-8b yes, llama3-8b's 14,336 rows and qwen3-0.6b's 3,072
// no). Elsewhere the quantizer runs after it, so a plan leaves the int8 form to the product that
// reads it.
bool gate_up_quantizes_in_epilogue(const WeightMatrix& gate, const WeightMatrix& up, Activations a);

// Whether gemv_multi / gemv_gate_up_swiglu may take the merged kernel (default true); false forces
// the fallback, for measurements and tests that compare the two. Not thread-safe.
void set_merged_gemv_enabled(bool enabled);

// Whether the merged kernel requests its first weight chunks before waiting for the kernel before it
// (programmatic dependent launch; default true). false waits first, as other kernels do: for
// measuring what the early requests save. Not thread-safe.
void set_merged_gemv_early_weights(bool early);

// Whether gemv_multi takes the merged kernel for these matrices under contract a, one row (no launch);
// false for one matrix (gemv's decode kernel is faster). The gate/up pair: pass both.
bool merged_gemv_applies(const WeightMatrix* w, int n_matrices, Activations a);

// The fused add and RMS norm before a merged decode product (fusion rule norm_prologue), done in the
// merged kernel's prologue by every block: s = x + y (f32 [k], rounded once, as add_rms_norm), the
// product's input h = s / sqrt(mean(s^2) + eps) * w (w 0: 1), quantized into each block's shared
// memory for contract a (quantize_activations' layout and rounding); block 0 writes s to `sum` (the
// next residual; not x: the other blocks still read it). Every pointer 16-byte aligned, f32 [k]. h
// differs from add_rms_norm's in the last bits (its sum of squares is added in another order).
// Checked on the H200 by tests/test_gemv_multi_gpu.cpp NormPrologueMatchesNormThenMerged (0 to 1.7e-6
// of the norm-then-merged product); qwen3-8b Q8_0 tg128 285.5 -> 302.1 (docs/perf.md).
// With parts (fusion rule norm_epilogue, norm_epilogue_launch.h): the product before formed s (in
// `sum`), h = s * w's int8 form (xq) and its blocks' shares of s's sum of squares (n_parts floats);
// the merged kernel copies xq and multiplies each row's sums by rsqrt(sum of the parts / k + eps)
// (x, y and w unused).
// early_fills (the norm in the prologue): 2 asks for two of the ring's first fills before the
// programmatic wait (the _early kernels), where the launch before leaves SMs free early (a dense
// product: qwen3-0.6b +3.6%); 1 keeps one (after a mixture, whose launch holds every SM to its end:
// qwen3-30b-a3b -2% with two; docs/perf.md, m4).
// x_fixed (the norm in the prologue; fusion rule ffn_split, ffn_split_launch.h): x is the sum itself
// in fixed point, int64 [k] in units of 2^-32 (y unused), each value converted to f32 once
// (common.cuh's lathe_fix_to_float); block 0 writes that f32 sum to `sum` as before. Only the Q8_0
// row kernels have that form (_fixed_early: merged_fixed_applies), two first fills before the wait.
struct NormPrologue {
  CUdeviceptr x = 0, y = 0, w = 0, sum = 0;
  float eps = 1e-6f;
  int early_fills = 1;
  CUdeviceptr xq = 0, parts = 0;
  int64_t n_parts = 0;
  bool x_fixed = false;
};
bool merged_norm_applies(const WeightMatrix* w, int n_matrices, Activations a);  // and k % 128 == 0, k <= 8192
bool merged_fixed_applies(const WeightMatrix* w, int n_matrices, Activations a);  // ... and x_fixed (Q8_0)
void gemv_multi_norm(const WeightMatrix* w, int n_matrices, Activations a, const NormPrologue& norm,
                     const CUdeviceptr* y, CUstream stream);
void gemv_gate_up_swiglu_norm(const WeightMatrix& gate, const WeightMatrix& up, Activations a, const NormPrologue& norm,
                              CUdeviceptr y, CUstream stream, const QuantizedOut& qout = {});

}  // namespace lathe::kernels
