// Host launcher of the o product with the mixture's router in its epilogue (moe_route_epilogue.cuh;
// fusion rule router_epilogue): for one decode row under an int8 contract,
//   s = W . x + resid                      (written to `sum`: the next residual)
//   x_r = s / rms(s) * norm_w              (the norm the mixture reads; its int8 form to x_q)
//   logits = router . x_r, ids / weights   (softmax over every expert, the top k, renormalized if asked)
// in one launch of the decode GEMV, replacing the product and the router kernel with its norm
// prologue (moe_route.cuh). The product's own output y is not written.
// cols is the router as the epilogue reads it: [n_embd][n_expert] f32, cols[i][e] = router[e][i] *
// norm_w[i] (router_columns below, formed once at load). Every pointer is a device pointer, 16-byte
// aligned; the call only enqueues on `stream`.
// Numerics: s is the held-back form's bits; the sum of squares and each logit add the same f32 terms in
// another order (and router[e][i] * norm_w[i] is rounded once to f32 first), so against the held-back
// form x's levels and the picks differ only where that rounding moves a level or breaks a near-tie
// (docs/numerics.md states the bound; tests/test_route_epilogue_gpu.cpp holds it).
// Measured on the H200 (docs/perf.md, 2026-12-01): qwen3-30b-a3b Q8_0 tg128 420 -> 453 against the
// product and the router kernel (with gate/up writing h's int8 form in both), 403 -> 451 with it.
#pragma once

#include "kernels/activations.h"
#include "kernels/gemv_launch.h"

#include <cuda.h>

#include <cstdint>
#include <vector>

namespace lathe::kernels {

// Mirrors LATHE_ROUTE_EPI_ROWS and LATHE_ROUTE_EPI_TERMS (moe_route_epilogue.cuh): the most rows a block
// of the product keeps, and the most of them one thread's logit terms take.
constexpr int64_t kRouteEpilogueRows = 128, kRouteEpilogueTerms = 8;

struct RouteEpilogue {
  CUdeviceptr resid = 0, sum = 0;     // [n_embd] f32: the residual the rows add to, and s
  CUdeviceptr cols = 0, norm_w = 0;   // [n_embd][n_expert] and [n_embd] f32
  float eps = 1e-6f;
  int64_t n_expert = 0, top_k = 0;
  bool renormalize = false;
  CUdeviceptr ids = 0, weights = 0, logits = 0;  // [top_k] int32, [top_k] f32, [n_expert] f32 (0: not written)
  QuantizedOut x_q;                              // x_r's int8 form for the expert products
  CUdeviceptr parts = 0;  // route_epilogue_part_bytes(n_expert)
  CUdeviceptr count = 0;  // 4 bytes, zero before the first launch; each launch leaves it zero
};

// Whether the fused launch takes w (the o product: n_out == n_embd) with n_expert experts, top_k kept,
// under contract a: the decode kernel's row walk (one row an item, even where the plain product would
// pair rows), n_expert <= 256, top_k <= 32, n_embd % 128 == 0 (x's blocks quantized by whole warps),
// n_embd % 32 == 0, and the tail's shared memory within the ring's.
bool route_epilogue_applies(const WeightMatrix& w, Activations a, int64_t n_expert, int64_t top_k);
// Bytes of the blocks' parts: one per SM, n_expert + 1 floats each, rounded up to 16.
int64_t route_epilogue_part_bytes(int64_t n_expert);
void gemv_route_epilogue(const WeightMatrix& w, Activations a, CUdeviceptr xq, const RouteEpilogue& r,
                         CUstream stream);

// cols[i][e] = router[e][i] * norm_w[i] for router [n_expert][n_embd] f32 (row-major), an f32 product.
std::vector<float> router_columns(const float* router, const float* norm_w, int64_t n_expert, int64_t n_embd);

}  // namespace lathe::kernels
