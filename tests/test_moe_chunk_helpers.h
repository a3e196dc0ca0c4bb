// A mixture prefill chunk's device buffers (moe_prefill_launch.h's scratch and the chunk's x and out),
// shared by the mixture's GPU tests (test_moe_prefill_gpu, test_moe_wgmma_gpu).
#pragma once

#include "kernels/moe_prefill_launch.h"
#include "runtime/cuda_driver.h"

#include "test_product_helpers.h"

#include <cstdint>
#include <vector>

namespace lathe::kernels::test {

struct MoeChunk {
  cuda::DeviceBuffer x, out, logits, ids, wts, h, y, q, group;
  MoePrefillScratch scratch() const {
    return {logits.ptr(), ids.ptr(), wts.ptr(), h.ptr(), y.ptr(), q.ptr(), group.ptr()};
  }
};

// rows rows of x [rows][n_embd] uploaded, every other buffer sized for top_k of n_expert experts of
// n_ff under contract a.
inline MoeChunk make_moe_chunk(int64_t rows, int64_t n_embd, int64_t n_ff, int64_t n_expert, int64_t top_k, Activations a,
                               const std::vector<float>& x) {
  const int64_t pairs = rows * top_k;
  MoeChunk c;
  c.x = upload(x);
  c.out = cuda::DeviceBuffer(static_cast<size_t>(rows * n_embd * 4));
  c.logits = cuda::DeviceBuffer(static_cast<size_t>(rows * n_expert * 4));
  c.ids = cuda::DeviceBuffer(static_cast<size_t>(pairs * 4));
  c.wts = cuda::DeviceBuffer(static_cast<size_t>(pairs * 4));
  c.h = cuda::DeviceBuffer(static_cast<size_t>(pairs * n_ff * 4));
  c.y = cuda::DeviceBuffer(static_cast<size_t>(pairs * n_embd * 4));
  c.q = cuda::DeviceBuffer(static_cast<size_t>(moe_prefill_quantized_bytes(rows, top_k, n_embd, n_ff, a)));
  c.group = cuda::DeviceBuffer(static_cast<size_t>(moe_group_bytes(rows, top_k, n_expert)));
  return c;
}

}  // namespace lathe::kernels::test
