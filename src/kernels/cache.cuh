// KV cache append: rows of x [rows, n_head_kv, d] f32 into an f16 cache laid out
// [sequences, n_ctx, n_head_kv, d], row r at slot (sequences[r], positions[r]), rounded to nearest even.
// blockIdx.y picks the pair: 0 writes (k, k_cache), 1 writes (v, v_cache), so one launch appends a
// layer's key and value. Each block copies one row; the slot (n_head_kv * d values) is split across
// threads four values at a time when slot_size % 4 == 0 and both addresses allow it.

__device__ __forceinline__ void cache_copy_row(__half* __restrict__ dst, const float* __restrict__ src,
                                               int slot_size) {
  const bool vector = (slot_size & 3) == 0 && ((unsigned long long)dst & 7) == 0 &&
                      ((unsigned long long)src & 15) == 0;
  if (vector) {
    for (int i = threadIdx.x; i < slot_size / 4; i += blockDim.x) {
      const float4 v = reinterpret_cast<const float4*>(src)[i];
      __half2 lo = __floats2half2_rn(v.x, v.y), hi = __floats2half2_rn(v.z, v.w);
      uint2 packed;
      packed.x = *reinterpret_cast<unsigned*>(&lo);
      packed.y = *reinterpret_cast<unsigned*>(&hi);
      reinterpret_cast<uint2*>(dst)[i] = packed;
    }
  } else {
    for (int i = threadIdx.x; i < slot_size; i += blockDim.x) dst[i] = __float2half_rn(src[i]);
  }
}

extern "C" __global__ void lathe_cache_append(const float* __restrict__ k, __half* k_cache,
                                              const float* __restrict__ v, __half* v_cache,
                                              const int* __restrict__ sequences,
                                              const int* __restrict__ positions, int n_ctx,
                                              int k_slot_size, int v_slot_size) { lathe_pdl_entry();
  const long long row = blockIdx.x;
  const long long slot = (long long)sequences[row] * n_ctx + positions[row];
  if (blockIdx.y == 0)
    cache_copy_row(k_cache + slot * k_slot_size, k + row * k_slot_size, k_slot_size);
  else
    cache_copy_row(v_cache + slot * v_slot_size, v + row * v_slot_size, v_slot_size);
}
