#include "kernels/route_launch.h"

#include "kernels/library.h"

namespace lathe::kernels {

void route_top_k(CUdeviceptr ids, CUdeviceptr weights, CUdeviceptr logits, int64_t rows,
                 int64_t n_expert, int64_t k, bool renormalize, CUstream stream) {
  if (n_expert < 1 || n_expert > 8192 || k < 1 || k > n_expert)
    fail("route: k = {} of {} experts: the kernel takes 1 <= k <= experts <= 8192", k, n_expert);
  if (rows <= 0) return;
  const unsigned warps = 4;  // rows per block
  int r = static_cast<int>(rows), ne = static_cast<int>(n_expert), kk = static_cast<int>(k);
  int renorm = renormalize ? 1 : 0;
  const unsigned shared = static_cast<unsigned>(warps * n_expert * sizeof(float));
  cuda::launch(kernel("lathe_route_top_k"), {static_cast<unsigned>((rows + warps - 1) / warps)}, {32 * warps},
               shared, stream, {&logits, &r, &ne, &kk, &renorm, &ids, &weights}, "route top k");
}

}  // namespace lathe::kernels
