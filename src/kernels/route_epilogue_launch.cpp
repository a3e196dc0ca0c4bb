#include "kernels/route_epilogue_launch.h"

#include "base/error.h"
#include "gguf/block_format.h"
#include "kernels/decode_stream.h"
#include "kernels/library.h"
#include "runtime/cuda_api.h"

#include <algorithm>
#include <string>

namespace lathe::kernels {
namespace {

constexpr int64_t kMaxExperts = 256, kMaxTopK = 32;  // LATHE_ROUTE_EPI_EXPERTS lanes' worth; a warp's picks

int64_t sm_count() { return cuda::Context::get().info().sm_count; }

// The last block's shared memory (moe_route_epilogue.cuh): every block's part, s, w, the totals, then
// the top k's keys, picks and softmax terms.
int64_t tail_bytes(int64_t blocks, int64_t n_expert, int64_t n_embd) {
  const int64_t stride = n_expert + 1;
  const int64_t floats = (blocks * stride + 3) / 4 * 4 + 2 * n_embd + (stride + 1) / 2 * 2 + (3 * stride + 1) / 2 * 2;
  return floats * 4 + n_expert * 8 + (32 + 32 + 2) * 4;
}

constexpr int64_t kEpilogueStatic = 1024;  // its kept rows, a block sum's scratch and a flag

}  // namespace

bool route_epilogue_applies(const WeightMatrix& w, Activations a, int64_t n_expert, int64_t top_k) {
  if (a == Activations::f32 || w.n_expert != 1 || n_expert < 1 || n_expert > kMaxExperts) return false;
  if (top_k < 1 || top_k > kMaxTopK || top_k > n_expert) return false;
  // x's int8 form: 8 threads a 32-value block, four blocks a warp, every lane of a warp in each pass.
  if (w.n_out % 128 != 0) return false;
  DecodeGemvLaunch l;
  if (!decode_gemv_launch(w, a, l, false)) return false;
  if (l.shared_bytes + kDecodeStaticBytes + kEpilogueStatic > shared_optin_bytes()) return false;
  // A block's rows: its groups' (LATHE_GEMV1_WARPS / group of them) rounds of n_groups rows.
  const int64_t gpb = 16 / (l.mode & 255), n_groups = l.blocks * gpb;
  // ... each a slot whose logit terms a thread holds (kRouteEpilogueTerms of them, 512 / n_expert threads
  // an expert).
  const int64_t slots = (w.n_out + n_groups - 1) / n_groups * gpb;
  if (slots > kRouteEpilogueRows || slots > std::max<int64_t>(1, 512 / n_expert) * kRouteEpilogueTerms) return false;
  return tail_bytes(l.blocks, n_expert, w.n_out) <= kDecodeStageBytes;
}

int64_t route_epilogue_part_bytes(int64_t n_expert) { return (sm_count() * (n_expert + 1) * 4 + 15) / 16 * 16; }

void gemv_route_epilogue(const WeightMatrix& w, Activations a, CUdeviceptr xq, const RouteEpilogue& r,
                         CUstream stream) {
  if (!route_epilogue_applies(w, a, r.n_expert, r.top_k))
    internal_fail("the router epilogue does not take {} [{} x {}] with {} experts, top {}", ggml_type_name(w.type),
                  w.n_out, w.k, r.n_expert, r.top_k);
  LATHE_CHECK(xq % 16 == 0 && r.sum % 16 == 0 && r.norm_w % 16 == 0 && r.parts % 16 == 0 && r.count % 4 == 0);
  LATHE_CHECK(r.resid != 0 && r.cols != 0 && r.count != 0 && r.ids != 0 && r.weights != 0);
  DecodeGemvLaunch l;
  decode_gemv_launch(w, a, l, false);
  const QuantizedPointers qp = quantized_pointers(r.x_q, 1, w.n_out);
  CUdeviceptr wp = w.data, x = xq, resid = r.resid, sum = r.sum, cols = r.cols, nw = r.norm_w, ids = r.ids,
              wts = r.weights, lg = r.logits, q1 = qp.q1, q2 = qp.q2, ds = qp.ds, parts = r.parts, count = r.count;
  long long row_bytes = lathe::row_bytes(w.type, w.k);
  int k = static_cast<int>(w.k), n_out = static_cast<int>(w.n_out), mode = l.mode, early = decode_early_requests();
  int ne = static_cast<int>(r.n_expert), kk = static_cast<int>(r.top_k), renorm = r.renormalize ? 1 : 0;
  int two = qp.two_words;
  float eps = r.eps;
  const std::string name = std::string("lathe_gemv1_route_") + decode_format(w.type)->name + "_" +
                           std::string(activations_name(a));
  cuda::launch(kernel(name), {l.blocks, 1, 1}, {512, 1, 1}, static_cast<unsigned>(l.shared_bytes), stream,
               {&wp, &row_bytes, &x, &k, &n_out, &mode, &early, &resid, &sum, &cols, &nw, &eps, &ne, &kk, &renorm,
                &ids, &wts, &lg, &q1, &q2, &ds, &two, &parts, &count},
               "launching the o product with the router in its epilogue");
}

std::vector<float> router_columns(const float* router, const float* norm_w, int64_t n_expert, int64_t n_embd) {
  std::vector<float> cols(static_cast<size_t>(n_expert * n_embd));
  for (int64_t e = 0; e < n_expert; ++e)
    for (int64_t i = 0; i < n_embd; ++i)
      cols[static_cast<size_t>(i * n_expert + e)] = router[e * n_embd + i] * norm_w[i];
  return cols;
}

}  // namespace lathe::kernels
