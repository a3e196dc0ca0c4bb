// Host launchers of decode attention over the f16 KV caches (attention.cuh), split along the cache,
// on tensor cores with f32-accurate arithmetic (each f32 operand split into two f16).
#pragma once

#include "kernels/activations.h"
#include "kernels/rope_launch.h"
#include "runtime/cuda_driver.h"

#include <cstdint>

namespace lathe::kernels {

struct AttentionShape {
  int64_t rows = 1;        // query rows in flight (a decode batch, or a prefill chunk)
  int64_t n_head = 1;      // query heads; a multiple of n_head_kv, at most 32 per kv head
  int64_t n_head_kv = 1;
  int64_t d = 128;         // head size of q, k and v: 64, 128 or 256
  int64_t n_ctx = 1;       // cache slots per sequence
  // The most slots any row may see (position + 1, or the window): sizes the splits. n_ctx when the
  // positions are not known at launch (a captured graph); smaller values give more, shorter splits.
  int64_t max_visible = 1;
};

struct AttentionOptionsGpu {
  float scale = 0;          // 0: 1 / sqrt(d)
  int64_t window = 0;       // 0: none
  float cap = 0;            // 0: none
  CUdeviceptr sinks = 0;    // 0, or n_head f32 logits
};

// How the cache is split: up to n_split blocks per (row, kv head, set of 8 query heads). The kernels
// size the splits on the device from each row's position: an even share of its visible slots,
// rounded up to a multiple of split_len, so a row at a short position uses few splits (the other
// blocks exit at once) even when the launch was planned for n_ctx slots (a captured graph).
// workspace_bytes of device memory hold the partial results (0 when n_split == 1).
struct AttentionSplit {
  int64_t split_len = 0;  // the granule of a split's length, in slots
  int64_t n_split = 1;
  size_t workspace_bytes = 0;
};
// Splits so that about `target_blocks` blocks run (0: one a multiprocessor, which for one row of
// 8 kv heads at 4,096 slots is 16 splits of 256 slots per kv head), their lengths multiples of
// `granule` slots (0: attention_first_split_position(), 128; else a positive multiple of 16). A
// shorter granule keeps every split's block busy at positions just past a multiple of the splits
// (4,100 slots: 16 splits of 272, not 11 of 384), and where the last split's block merges it adds
// partials to merge; a step whose splits a merge launch merges takes 16 (plan::PlanOptions::long_granule).
AttentionSplit plan_attention_split(const AttentionShape& shape, const AttentionOptionsGpu& options,
                                    int64_t target_blocks = 0, int64_t granule = 0);

// What decode_attention's rope prologue reads: the product's k and v ([rows, n_head_kv, d] f32), the
// table, the order, and the per-head norm's weights (0: 1) and epsilon when `norm`.
struct AttentionRope {
  CUdeviceptr k = 0, v = 0;
  const RopeTable* table = nullptr;
  RopeOrder order = RopeOrder::normal;
  bool norm = false;
  CUdeviceptr q_weight = 0, k_weight = 0;
  float eps = 1e-6f;
};

// out [rows, n_head, d] f32 = attention of q [rows, n_head, d] f32 over k_cache and v_cache
// ([sequences, n_ctx, n_head_kv, d] f16), row r reading sequence sequences[r] up to positions[r]
// inclusive (int32 device arrays), as the interpreter's attention. The rows' slots must already be
// in the cache. workspace: split.workspace_bytes of device memory (any contents). q, out, the caches
// and the workspace 16-byte aligned. Refuses shapes the kernels do not cover (d, group > 32).
// tickets: attention_ticket_bytes(shape) of device memory, ZERO before the first call and left zero
// by every call (the last split of a row merges the row's splits in its block and resets the row's
// ticket), reusable by any later call of no more rows and heads on the same stream; or 0: the
// splits are merged by a second launch (lathe_attn_merge), which a decode step takes at long
// positions (plan/step_plan.h's forms). Both forms merge by the same arithmetic in the same order:
// the same bits (test_gpu_attention_gpu).
// rope (fusion rule rope_attention; rope_attention.cuh): q is the product's, not yet rotated; each
// block norms (rope->norm: each head, by q_weight / k_weight or 1) and rotates the query heads it
// reads in its shared memory, and the split that holds a row's slot writes that row's rotated k and
// its v into the caches first, as rope_append would: one launch for rope_append and the attention,
// the same bits. Only for rows of distinct sequences (each row's new slot read by that row alone).
// qout (quantize_epilogue): out also in qout.a's int8 form ([rows][n_head * d], quantize_activations'
// layout, bit for bit; 16-byte aligned) for the product that reads it next: written by the blocks
// that finish a row (its only split, or the last split's merge), or by the merge kernel for the rows
// it merges.
void decode_attention(CUdeviceptr out, CUdeviceptr q, CUdeviceptr k_cache, CUdeviceptr v_cache,
                      CUdeviceptr sequences, CUdeviceptr positions, const AttentionShape& shape,
                      const AttentionOptionsGpu& options, const AttentionSplit& split,
                      CUdeviceptr workspace, CUstream stream, CUdeviceptr tickets = 0,
                      const QuantizedOut& qout = {}, const AttentionRope* rope = nullptr);

size_t attention_ticket_bytes(const AttentionShape& shape);

// The first position whose row reads more than one split (the splits' granule): below it the
// decode attention never merges.
int64_t attention_first_split_position();
// The slots a warp of the decode kernel takes a step (ATTD_CHUNK): a split granule is a multiple of it.
int64_t attention_chunk_slots();

// Warps a block of the decode kernel for head sizes <= 128: 8 by default, or 4 (LATHE_ATTN_WARPS=4,
// read once). The splits are the same; 4 warps take a block's chunks in other turns, so the sums are
// bound-equal, not bit-equal. For tests and measurements.
void set_attention_warps(int warps);

}  // namespace lathe::kernels
