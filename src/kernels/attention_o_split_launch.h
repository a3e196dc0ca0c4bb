// Host launcher of a decode row's attention and o product in one launch, o split along its input by kv
// head (rope_attention_o_split.cuh; fusion rule o_split, docs/perf.md, thirty-sixth session). For one
// row under an int8 contract, with rope_attention's prologue (head norms, rope, the cache append):
//   a_h     = attention of query head h over the row's visible slots           (attention_launch.h)
//   s_io[i] += sum over kv heads g of fix(o[i][g's columns] . quant(a_g))       for every i < E
// where a_g is kv head g's G query heads' D values each (G D values, quantized as the contract's x by
// 32-value blocks: the levels the attention's quantize epilogue gives o when held back) and fix(v) =
// rint(v * 2^32) as int64 (ffn_split_launch.h): s_io is the residual in fixed point, to which the
// launch adds o's output; integer adds in any order, so the same bits every run. The attention's own
// output is not written (o is its only reader). Every pointer is a device pointer; the call only
// enqueues on `stream`.
#pragma once

#include "kernels/activations.h"
#include "kernels/attention_launch.h"
#include "kernels/gemv_launch.h"

#include <cuda.h>

#include <cstdint>

namespace lathe::kernels {

struct AttentionOSplit {
  CUdeviceptr q = 0;                  // f32 [n_head][d], as the q/k/v product wrote it (not rotated)
  CUdeviceptr k_cache = 0, v_cache = 0, sequences = 0, positions = 0;
  CUdeviceptr s_io = 0;               // int64 [E]: the residual in fixed point, o's output added
  int64_t blocks_per_head = 0;        // R: 0 chooses (o_split_blocks_per_head)
};

// Whether the launch takes the attention `shape` (one row) and o [E][n_head d] under contract a: o
// Q8_0 and one matrix, int8 or int8x2, d 64 or 128, G = n_head / n_head_kv query heads a kv head with
// G d / 32 (a row's share of a kv head, in Q8_0 blocks) dividing 32 (the shapes its test covers:
// 2, 4, 8 and 16), and R blocks a kv head within shared memory.
bool attention_o_split_applies(const AttentionShape& shape, const WeightMatrix& o, Activations a);
// The blocks a kv head takes (R): the most that divide E into whole warps' rows with n_head_kv R at
// most the card's SMs, 0 where none does.
int64_t o_split_blocks_per_head(const AttentionShape& shape, const WeightMatrix& o);

void attention_o_split(const AttentionShape& shape, const AttentionOptionsGpu& options, const AttentionRope& rope,
                       const WeightMatrix& o, Activations a, const AttentionOSplit& f, CUstream stream);

// The cluster form (rope_attention_o_cluster.cuh; LATHE_O_SPLIT=cluster): grid (8, n_head_kv) in
// clusters of 8, kv head g's attention split along its span over its cluster (each slot read and the
// row's slot appended once), the partials merged through the cluster's shared memory, each block then
// adding its E / 8 rows of o at g's columns into s_io. The same sum as attention_o_split within the
// contract (the attention's splits merged in f32). Takes what attention_o_split takes with at most 8
// query heads a kv head and E a multiple of 8 (blocks_per_head unused).
bool attention_o_cluster_applies(const AttentionShape& shape, const WeightMatrix& o, Activations a);
void attention_o_cluster(const AttentionShape& shape, const AttentionOptionsGpu& options, const AttentionRope& rope,
                         const WeightMatrix& o, Activations a, const AttentionOSplit& f, CUstream stream);

// The attention half in one launch (rope_attention_qkv_o.cuh; fusion rule attention_half): the cluster
// form with the layer's q/k/v product in front, for one row under an int8 contract:
//   x = s_in 2^-32;  h = x rsqrt(sum x^2 / E + eps) norm_w, quantized as the contract's x
//   q, k, v = wq h, wk h, wv h                       (Q8_0 [n_head d][E], [n_head_kv d][E], [n_head_kv d][E])
//   a = the attention of q over the caches with rope_attention's prologue (head norms, rope, k and v
//       appended at the row's slot), split over a cluster of 8 blocks a kv head and merged as
//       attention_o_cluster does
//   s_out[i] += s_in[i] + sum over kv heads g of fix(o[i][g's columns] . quant(a_g));   zero[i] = 0
// for every i < E. s_out must be zero before the launch and differ from s_in and zero; the attention's
// output, q, k and v are not written (but k and v into the caches).
struct AttentionHalf {
  WeightMatrix wq, wk, wv;
  CUdeviceptr s_in = 0;    // int64 [E]: the residual in fixed point
  CUdeviceptr norm_w = 0;  // f32 [E]: the attention norm's weights
  float norm_eps = 1e-6f;
  CUdeviceptr s_out = 0, zero = 0;  // int64 [E] each
  CUdeviceptr k_cache = 0, v_cache = 0, sequences = 0, positions = 0;
  CUdeviceptr stamps = 0;  // 0, or u64 [n_head_kv][8][12]: each block's phases (rope_attention_qkv_o.cuh), a measurement
};
// Whether the launch takes the attention `shape` (one row), o and the three matrices under contract
// a: what attention_o_cluster takes, with wq, wk and wv Q8_0 of E = o's rows columns (E % 256 == 0) and
// n_head d, n_head_kv d and n_head_kv d rows, each 16-byte aligned, within shared memory.
bool attention_half_applies(const AttentionShape& shape, const WeightMatrix& wq, const WeightMatrix& wk,
                            const WeightMatrix& wv, const WeightMatrix& o, Activations a);
// The launch's shared memory (bytes a block).
int64_t attention_half_shared_bytes(const AttentionShape& shape, int64_t e);
void attention_half(const AttentionShape& shape, const AttentionOptionsGpu& options, const AttentionRope& rope,
                    const WeightMatrix& o, Activations a, const AttentionHalf& f, CUstream stream);

}  // namespace lathe::kernels
