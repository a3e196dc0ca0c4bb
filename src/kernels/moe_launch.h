// Host launchers of the mixture's decode kernels (moe_route.cuh, moe_decode.cuh): a layer's mixture
// at 1..8 rows in three launches instead of eight (router gemv, route_top_k, quantizer, gate and up
// gemv_experts, swiglu, quantizer, down gemv_experts):
//   moe_route           router product + softmax + top k (+ renormalization), x's int8 form written
//   moe_gate_up_swiglu  the chosen experts' gate and up rows with SwiGLU in the epilogue
//   moe_down_combine    the chosen experts' down rows, weighted and summed per row in the epilogue
// Every pointer is a device pointer; every call only enqueues on `stream`. Weights follow
// gemv_launch.h's layout: stacks [n_expert][n_out][k] in their GGUF block format, rows
// row_bytes(type, k) apart, 16-byte aligned, readable to the next 16-byte line past their end.
// Semantics are the interpreter's mixture (interp/cpu_ops.h): softmax over all experts, the top k by
// logit (equal logits: the lower expert index first), weights renormalized over the kept k when asked,
// out = sum_j w_j * down_ej(silu(gate_ej x) * up_ej x).
//
// Each entry point takes every shape and format; where its kernel does not apply it falls back to
// the launches the planner used before (named per function below), so callers can always use them.
// Results are deterministic (fixed summation order, no atomics) for a given shape and device.
//
// Measured on the H200 (tests/test_moe_gpu.cpp, MoeGpu.Timing: qwen3-30b-a3b shape, q8_0, 1 row, us
// per layer; all its correctness tests pass):
//   int8    3 launches 28.7 (eight launches 65.6); route 8.1; gate/up 9.4 (62% of 4,630 GB/s);
//           down 9.7 (30%; 13.6 before its chunks carried several experts' rows and h was quantized by
//           the whole block)
//   int8x2  3 launches 31.5 (66.6); route 8.3; gate/up 10.0 (58%); down 11.1 (26%; 17.1 before)
// The router's ~8 us is not its work (1 MB, a top k): neither an L2 prefetch nor a faster top k
// moved it, nor dealing it over 32 blocks without a cluster (the wide router: 8.12 us alone, and
// slower in the decode step; 2026-12-01).
#pragma once

#include "kernels/gemv_multi_launch.h"

#include "kernels/gemv_launch.h"

#include <cuda.h>

#include <cstdint>

namespace lathe::kernels {

// ---- router. router: [n_expert][n_embd] (n_expert == router.n_out, n_embd == router.k), any gemv
// format, products in f32 on exactly dequantized weights (the f32 contract). x: f32 [rows][n_embd],
// 16-byte aligned. Writes ids [rows][top_k] int32 (falling logit order) and weights [rows][top_k] f32;
// logits [rows][n_expert] f32 too when `logits` != 0. x_q: when x_q.q != 0, also writes x's quantized
// form for contract x_q.a (activations.h layout, bit-identical to quantize_activations) for the expert
// products. 1 <= rows <= 8, 1 <= top_k <= n_expert.
// Kernel: one cluster of 8 blocks (moe_route.cuh) when n_embd % 32 == 0, n_expert <= 1024 and
// rows * (n_embd + n_expert * (parts + 1)) floats fit the opt-in shared memory. Fallback: gemv (f32)
// into `logits` (or a scratch the launcher owns), route_top_k, quantize_activations.
// norm (the kernel only, moe_route_applies): x is not read; each block forms it from the norm in
// its prologue, x = (norm.x + norm.y) / rms * norm.w, bit for bit as add_rms_norm, and the sum is
// written to norm.sum (fusion rule norm_prologue).
// wide: the router's units dealt over many blocks (moe_route_wide.cuh), the same bytes out, where
// moe_route_wide_applies; else (and when null) the cluster kernel. Its part sums take
// moe_route_part_bytes(router, rows) bytes; its count is 4 bytes, zero before the first launch (each
// launch leaves it zero; launches sharing one must not overlap, which launches on one stream never do).
// The decode step passes it only under LATHE_MOE_ROUTE=wide (moe_route_wide_chosen): in the step it
// measured slower than the cluster kernel, not yet explained (H200, 2026-12-01: docs/perf.md).
struct RouteScratch {
  CUdeviceptr part_sums = 0, count = 0;
  CUdeviceptr trace = 0;  // a measurement: kMoeWideStamps x blocks u64, the phases' edges (moe_route_wide.cuh)
};
constexpr int kMoeWideStamps = 7;
void moe_route(const WeightMatrix& router, CUdeviceptr x, int64_t rows, int64_t top_k, bool renormalize,
               CUdeviceptr ids, CUdeviceptr weights, const QuantizedOut& x_q, CUstream stream, CUdeviceptr logits = 0,
               const NormPrologue* norm = nullptr, const RouteScratch* wide = nullptr);
int64_t moe_route_part_bytes(const WeightMatrix& router, int64_t rows);
bool moe_route_wide_applies(const WeightMatrix& router, int64_t rows, int64_t top_k, bool norm);
bool moe_route_wide_chosen();  // LATHE_MOE_ROUTE=wide, read once (a measuring knob)

// ---- gate, up and SwiGLU. gate, up: stacks [n_expert][n_ff][n_embd] of one format. x: contract a's
// form of [rows][n_embd] (int8 / int8x2: quantize_activations' layout, 16-byte aligned; f32: f32).
// ids: [rows][top_k] int32, each in [0, n_expert) (not checked on the device), written by the launch
// just before at the latest. h: f32 [rows * top_k][n_ff], h[r * top_k + j][o] =
// silu(gate_ids[r][j][o] . x_r) * (up_ids[r][j][o] . x_r), fully written, 4-byte aligned.
// Kernel: q8_0, q4_K, q6_K under int8 / int8x2, top_k <= 32, shared memory for ~160 KB + 2.5 n_embd.
// Reads each slot's rows (two rows choosing one expert read it twice: L2 usually holds it).
// Fallback: gemv_experts for gate and for up (a scratch of rows * top_k * n_ff floats the launcher
// owns) and elementwise swiglu.
// h_q (h_q.q != 0, contract a, 16-byte aligned): h's int8 form too, quantize_activations' bytes for
// [rows * top_k][n_ff], each 32-value block quantized by the kernel's block that completes it
// (moe_decode.cuh's lathe_moe_h_quantized), so moe_down_combine copies it instead of every block
// quantizing h. counts: moe_h_count_bytes(rows, top_k, n_ff) bytes, zero before the first launch (each
// launch leaves them zero). The fallback runs the quantizer.
void moe_gate_up_swiglu(const WeightMatrix& gate, const WeightMatrix& up, Activations a, CUdeviceptr x, int64_t rows,
                        CUdeviceptr ids, int64_t top_k, CUdeviceptr h, CUstream stream, const QuantizedOut& h_q = {},
                        CUdeviceptr counts = 0);
inline int64_t moe_h_count_bytes(int64_t rows, int64_t top_k, int64_t n_ff) { return rows * top_k * n_ff / 32 * 4; }

// ---- down and the weighted combine. down: stack [n_expert][n_embd][n_ff]. h: [rows * top_k][n_ff],
// one row per slot: f32 (h_quantized false; under int8 / int8x2 each block quantizes its row's slots
// into shared memory, bit-identical to quantize_activations) or contract a's quantized form
// (h_quantized true). ids, route_w: [rows][top_k] int32 / f32 (route_w 0: weights of 1).
// out: f32 [rows][n_embd], out[r] = sum_j route_w[r][j] * (down_ids[r][j] . h[r * top_k + j]), fully
// written (not accumulated into), 4-byte aligned.
// ids_settled: ids and route_w were written at least two launches back (moe_route, then
// moe_gate_up_swiglu), so the kernel reads them and requests its first weights before waiting for the
// kernel before it (programmatic dependent launch). Pass false when the launch just before wrote them.
// Kernel: q8_0, q4_K, q6_K under int8 / int8x2, top_k <= 32, shared memory for ~160 KB +
// 2.5 top_k n_ff. Fallback: quantize_activations of h (f32 h under an int8 contract, into a scratch
// the launcher owns) and gemv_experts with combine.
void moe_down_combine(const WeightMatrix& down, Activations a, CUdeviceptr h, bool h_quantized, int64_t rows,
                      CUdeviceptr ids, CUdeviceptr route_w, int64_t top_k, CUdeviceptr out, CUstream stream,
                      bool ids_settled = false);

// ---- the whole mixture of ONE decode row in one launch (moe_single_launch.cuh; fusion rule
// mixture_one_launch): moe_route, moe_gate_up_swiglu and moe_down_combine (with ids_settled, f32 h) as
// three phases of one grid with grid barriers between them, bit for bit their results: ids, weights,
// logits (when logits != 0), h, out, and norm->sum under a norm prologue. Each warp streams its gate/up
// chunks and then its down chunks through one ring, so the down weights are in flight while the grid
// waits for h. part_sums: moe_single_part_bytes(router) bytes; sync: 8 bytes, zero before the first
// launch (each launch leaves them zero; launches using one sync must not overlap, which launches on
// one stream never do). Takes: one row, an f32 router that moe_route's kernel takes (and its norm
// prologue, when norm), the formats pairs below, gate/up on its rows path (not the paired products),
// and the ring and staged rows in the opt-in shared memory; moe_single_launch_applies says so.
// Kernels: router f32 with q8_0 experts, q4_K experts, or q4_K gate/up with q6_K down, int8 / int8x2.
int64_t moe_single_part_bytes(const WeightMatrix& router);
bool moe_single_launch_applies(const WeightMatrix& router, const WeightMatrix& gate, const WeightMatrix& up,
                               const WeightMatrix& down, Activations a, int64_t rows, int64_t top_k, bool norm);
void moe_single_launch(const WeightMatrix& router, const WeightMatrix& gate, const WeightMatrix& up,
                       const WeightMatrix& down, Activations a, CUdeviceptr x, int64_t top_k, bool renormalize,
                       CUdeviceptr ids, CUdeviceptr weights, CUdeviceptr logits, CUdeviceptr h, CUdeviceptr out,
                       CUdeviceptr part_sums, CUdeviceptr sync, CUstream stream, const NormPrologue* norm = nullptr,
                       CUdeviceptr trace = 0);
// trace (a measurement): 9 x SM count u64, the phases' edges by block (moe_single_launch.cuh).
constexpr int kMoeSingleStamps = 9;

// ---- the kept experts of ONE decode row in one launch, dealt by slot (moe_experts_by_slot.cuh;
// fusion rule experts_by_slot): moe_gate_up_swiglu and moe_down_combine (ids settled, f32 h) as one
// grid whose blocks of slot j compute h_j between them and meet on a count of their own, then each
// multiplies its share of expert ids[j]'s down rows; the slots' parts are added in slot order by the
// block that completes them. h: f32 [top_k][n_ff], the gate/up kernel's bits (its group); out: f32
// [n_embd], fully written, within f32 rounding of moe_down_combine's (another order of additions, not
// its bits). parts: moe_experts_part_bytes(down, top_k) bytes; counts: moe_experts_count_bytes(top_k)
// bytes, zero before the first launch (each launch leaves them zero; launches sharing them must not
// overlap, which launches on one stream never do). x, ids, route_w may be written by the launch just
// before. Takes: one row, q8_0 gate, up and down under int8 / int8x2, a down row in one ring chunk,
// top_k <= 32 and <= the SM count; moe_experts_by_slot_applies says so.
int64_t moe_experts_part_bytes(const WeightMatrix& down, int64_t top_k);
int64_t moe_experts_count_bytes(int64_t top_k);
bool moe_experts_by_slot_applies(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down,
                                 Activations a, int64_t rows, int64_t top_k);
void moe_experts_by_slot(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down, Activations a,
                         CUdeviceptr x, CUdeviceptr ids, CUdeviceptr route_w, int64_t top_k, CUdeviceptr h,
                         CUdeviceptr parts, CUdeviceptr counts, CUdeviceptr out, CUstream stream);

// Whether each entry point takes its kernel for these shapes (no launch). Shared memory needs a
// driver; false when there is none.
bool moe_route_applies(const WeightMatrix& router, int64_t rows, int64_t top_k);
// And its norm prologue: add_rms_norm's threads for n_embd (to sum in its order) fit the block.
bool moe_route_norm_applies(const WeightMatrix& router, int64_t rows, int64_t top_k);
bool moe_gate_up_applies(const WeightMatrix& gate, const WeightMatrix& up, Activations a, int64_t top_k);
bool moe_down_applies(const WeightMatrix& down, Activations a, int64_t top_k);

// Whether the entry points may take their kernels (default true); false forces the fallbacks, for
// measurements and tests that compare the two. Not thread-safe.
void set_moe_kernels_enabled(bool enabled);

// The router kernel's options, for measurements (moe_route.cuh: 1 requests the router's rows into L2
// before waiting for the kernel before it, 2 picks the top k in registers; moe_route_wide.cuh: 8 picks
// it from keys sorted in registers, in the wide router only; default none, the fastest measured; the
// environment's LATHE_MOE_ROUTE_FLAGS=N at start). No option changes a result. LATHE_MOE_GAPS=1 adds
// the near-tie report (2 | 4). Not thread-safe.
void set_moe_route_flags(int flags);
// The cluster router's warps a block: 16 (the default), or 8 (lathe_moe_route8_: its blocks fit beside a
// decode product's block, so route flag 1's L2 requests overlap the product; the same bytes). The
// environment's LATHE_MOE_ROUTE_WARPS=8 at start. Where the norm prologue needs more threads, 16.
void set_moe_route_cluster_warps(int warps);

}  // namespace lathe::kernels
