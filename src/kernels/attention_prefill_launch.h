// Host launchers of causal prefill attention on tensor cores (attention_prefill.cuh): flash attention
// over the f16 KV caches for one prefill chunk, grouped-query heads sharing each K/V tile.
#pragma once

#include "kernels/attention_launch.h"  // AttentionShape, AttentionOptionsGpu
#include "runtime/cuda_driver.h"

#include <cstdint>

namespace lathe::kernels {

// How a chunk's attention is split along the cache: n_split blocks of split_len slots per query tile
// and kv head; workspace_bytes of device memory for the partials (0 when n_split == 1).
struct PrefillSplit {
  int64_t split_len = 0;  // 0 with n_split == 1: each block takes its whole visible range
  int64_t n_split = 1;
  size_t workspace_bytes = 0;
};

// Splits only when the unsplit grid would leave the device short of blocks (a short chunk far into a
// long prompt): about `target_blocks` blocks (0: two per multiprocessor of this device). Sized from
// shape.max_visible (n_ctx when the positions are only known on the device); splits past a chunk's
// causal bound exit at once. Refuses what prefill_attention refuses.
PrefillSplit plan_prefill_split(const AttentionShape& shape, const AttentionOptionsGpu& options,
                                int64_t target_blocks = 0);

// out [rows, n_head, d] f32 = causal attention of q [rows, n_head, d] f32 over k_cache and v_cache
// ([sequences, n_ctx, n_head_kv, d] f16), as the interpreter's attention (interp/cpu_ops.h), with
// options.scale (0: 1/sqrt(d)), window, cap and sinks (n_head f32 logits) honoured.
// Contract of a prefill chunk: the rows are ONE sequence at consecutive positions. The kernel reads
// only sequences[0] and positions[0] (int32 device arrays, read on the device, so the launch may be
// captured in a graph) and takes row r at position positions[0] + r, seeing slots up to it; every
// one of those slots (this chunk's included) must already be in the cache. positions[0] + rows <=
// n_ctx. q, out, the caches and the workspace 16-byte aligned. Rows any count >= 0; d 64, 128 or
// 256; n_head a multiple of n_head_kv (any group size). Arithmetic: q, k, v and the softmax weights
// are f16 in the tensor-core products, with f32 accumulation and an f32 softmax.
// The first form does not split; the second takes plan_prefill_split's split and its workspace.
void prefill_attention(CUdeviceptr out, CUdeviceptr q, CUdeviceptr k_cache, CUdeviceptr v_cache,
                       CUdeviceptr sequences, CUdeviceptr positions, const AttentionShape& shape,
                       const AttentionOptionsGpu& options, CUstream stream);
void prefill_attention(CUdeviceptr out, CUdeviceptr q, CUdeviceptr k_cache, CUdeviceptr v_cache,
                       CUdeviceptr sequences, CUdeviceptr positions, const AttentionShape& shape,
                       const AttentionOptionsGpu& options, const PrefillSplit& split, CUdeviceptr workspace,
                       CUstream stream);

}  // namespace lathe::kernels
