// Host launcher of the KV cache append (cache.cuh). A layer's caches are f16 arrays laid out
// [sequences, n_ctx, n_head_kv, d] (one for keys, one for values; the value head size may differ).
#pragma once

#include "runtime/cuda_driver.h"

#include <cstdint>

namespace lathe::kernels {

// Writes row r of k [rows, k_slot] f32 into k_cache and of v [rows, v_slot] into v_cache at slot
// (sequences[r], positions[r]) (int32 device arrays), rounded to f16 (nearest even). k_slot and v_slot
// are n_head_kv * d of each cache. v and v_cache may be 0 to append to one cache only. Positions must
// lie in [0, n_ctx) and rows must name distinct slots (else which write wins is unspecified).
void cache_append(CUdeviceptr k_cache, CUdeviceptr v_cache, CUdeviceptr k, CUdeviceptr v,
                  CUdeviceptr sequences, CUdeviceptr positions, int64_t rows, int64_t n_ctx,
                  int64_t k_slot, int64_t v_slot, CUstream stream);

}  // namespace lathe::kernels
