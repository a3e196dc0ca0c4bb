#include "kernels/cache_launch.h"

#include "kernels/library.h"

#include <algorithm>

namespace lathe::kernels {

void cache_append(CUdeviceptr k_cache, CUdeviceptr v_cache, CUdeviceptr k, CUdeviceptr v,
                  CUdeviceptr sequences, CUdeviceptr positions, int64_t rows, int64_t n_ctx,
                  int64_t k_slot, int64_t v_slot, CUstream stream) {
  if (k_slot <= 0 || k_slot > INT32_MAX || v_slot < 0 || v_slot > INT32_MAX || n_ctx <= 0 || n_ctx > INT32_MAX)
    fail("cache append: slots of {} and {} values in a cache of {} positions are not supported", k_slot,
         v_slot, n_ctx);
  if (rows == 0) return;
  const bool both = v != 0 && v_cache != 0;
  int ctx = static_cast<int>(n_ctx), ks = static_cast<int>(k_slot), vs = static_cast<int>(v_slot);
  const int64_t widest = std::max(k_slot, both ? v_slot : 0) / 4;
  const unsigned threads = static_cast<unsigned>(std::clamp<int64_t>((widest + 31) / 32 * 32, 32, 256));
  cuda::launch(kernel("lathe_cache_append"), {static_cast<unsigned>(rows), both ? 2u : 1u}, {threads}, 0,
               stream, {&k, &k_cache, &v, &v_cache, &sequences, &positions, &ctx, &ks, &vs},
               "cache append");
}

}  // namespace lathe::kernels
