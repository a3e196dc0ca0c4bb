// Host side of the wgmma product's two launch forms (gemm_wgmma_launch.h: gemm_wgmma_multi,
// gemm_wgmma_swiglu; kernels in gemm_wgmma_rs_multi.cuh).
#include "kernels/elementwise_launch.h"
#include "kernels/gemm_f16_launch.h"
#include "kernels/gemm_wgmma_launch.h"
#include "kernels/gemm_wgmma_maps.h"

#include "base/error.h"
#include "kernels/gemm_wgmma_rs.cuh"  // LatheGwrMap's size: one CUtensorMap
#include "kernels/library.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace lathe::kernels {
namespace {

constexpr int kTileOutputs = 128;  // a block's weight rows (both forms)

// LatheGwrOuts of gemm_wgmma_rs_multi.cuh, as the kernel receives it by value.
struct MultiOuts {
  CUdeviceptr y0, y1, y2;
  int n0, n1, n2;
  int end0, end1;
};
static_assert(sizeof(MultiOuts) == 48);

// Stream-ordered allocation for the fallback's scratch (the driver's entries beside cuda_api's table,
// as gemm_wgmma_launch.cpp finds cuTensorMapEncodeTiled): ordered on the stream and legal in a graph
// capture, unlike cuMemAlloc.
struct AsyncAlloc {
  CUresult (*alloc)(CUdeviceptr*, size_t, CUstream) = nullptr;
  CUresult (*free)(CUdeviceptr, CUstream) = nullptr;
};
const AsyncAlloc& async_alloc() {
  static const AsyncAlloc a = [] {
    AsyncAlloc r;
    if (void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
      r.alloc = reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t, CUstream)>(dlsym(lib, "cuMemAllocAsync"));
      r.free = reinterpret_cast<CUresult (*)(CUdeviceptr, CUstream)>(dlsym(lib, "cuMemFreeAsync"));
    }
    return r;
  }();
  if (!a.alloc || !a.free) internal_fail("gemm_wgmma_swiglu: the driver has no cuMemAllocAsync");
  return a;
}

void check_same_kind(const WeightMatrix& a, const WeightMatrix& b, const char* what) {
  if (a.type != b.type || a.k != b.k)
    fail("{}: the matrices must share one format and k ({} x {} vs {} x {})", what, ggml_type_name(a.type), a.k,
         ggml_type_name(b.type), b.k);
}

}  // namespace

std::string gemm_wgmma_multi_kernel_name(GgmlType type, int tile_rows) {
  const GemmF16Format* f = gemm_f16_format(type);
  LATHE_CHECK(f != nullptr && (tile_rows == 128 || tile_rows == 256));
  return fmt::format("lathe_gemm_wgmma_rs_multi_{}_{}", f->name, tile_rows);
}

std::string gemm_wgmma_swiglu_kernel_name(GgmlType type, int tile_rows) {
  const GemmF16Format* f = gemm_f16_format(type);
  LATHE_CHECK(f != nullptr && (tile_rows == 128 || tile_rows == 256));
  return fmt::format("lathe_gemm_wgmma_rs_swiglu_{}_{}", f->name, tile_rows);
}

bool gemm_wgmma_swiglu_fused_pays(GgmlType type) { return type == GgmlType::F16 || type == GgmlType::Q8_0; }

void gemm_wgmma_multi(const WeightMatrix* w, int n_matrices, CUdeviceptr x16, int64_t rows, const CUdeviceptr* y,
                      CUstream stream) {
  if (n_matrices < 1 || n_matrices > 3) fail("gemm_wgmma_multi: {} matrices (1 to 3 run in one launch)", n_matrices);
  for (int m = 0; m < n_matrices; ++m) {
    wgmma_detail::check_product(w[m], rows);
    check_same_kind(w[0], w[m], "gemm_wgmma_multi");
    LATHE_CHECK(w[m].data % 16 == 0 && y[m] % 16 == 0);
  }
  LATHE_CHECK(x16 % 16 == 0);
  if (n_matrices == 1 || !gemm_wgmma_uses_rs(w[0].type, w[0].k)) {
    for (int m = 0; m < n_matrices; ++m) gemm_wgmma(w[m], x16, rows, y[m], stream);
    return;
  }
  // Matrix m's tiles [end[m - 1], end[m]); unused matrices get empty ranges past the grid.
  int64_t end[3] = {0, 0, 0}, total = 0;
  for (int m = 0; m < 3; ++m) {
    if (m < n_matrices) total += (w[m].n_out + kTileOutputs - 1) / kTileOutputs;
    end[m] = total;
  }
  if (total > 65535) fail("gemm_wgmma_multi: {} output tiles of {} are more than 65535", total, kTileOutputs);
  int64_t outputs = 0;  // the key of a tuned choice, and the rule's output count
  for (int m = 0; m < n_matrices; ++m) outputs += w[m].n_out;
  const int bm = gemm_wgmma_chosen_tile(GemmWgmmaForm::multi, w[0].type, w[0].k, rows, outputs);
  const CUtensorMap mx = wgmma_detail::x_map(x16, w[0].k, rows, bm);
  CUtensorMap mw[6];
  for (int m = 0; m < 3; ++m) {
    if (m < n_matrices) wgmma_detail::weight_maps(w[m], kTileOutputs, &mw[2 * m], &mw[2 * m + 1]);
    else mw[2 * m] = mw[2 * m + 1] = mw[0];  // never read: no tile is this matrix's
  }
  MultiOuts outs{};
  CUdeviceptr* ys[3] = {&outs.y0, &outs.y1, &outs.y2};
  int* ns[3] = {&outs.n0, &outs.n1, &outs.n2};
  for (int m = 0; m < 3; ++m) {
    *ys[m] = m < n_matrices ? y[m] : y[0];
    *ns[m] = m < n_matrices ? static_cast<int>(w[m].n_out) : 0;
  }
  outs.end0 = static_cast<int>(end[0]);
  outs.end1 = static_cast<int>(end[1]);
  int n_rows = static_cast<int>(rows), k = static_cast<int>(w[0].k);
  const cuda::Dim3 grid{static_cast<unsigned>((rows + bm - 1) / bm), static_cast<unsigned>(total), 1};
  cuda::launch(kernel_90a(gemm_wgmma_multi_kernel_name(w[0].type, bm)), grid, {256, 1, 1},  // LATHE_GWR_THREADS
               gemm_wgmma_rs_shared_bytes(w[0].type, bm), stream,
               {const_cast<CUtensorMap*>(&mx), &mw[0], &mw[1], &mw[2], &mw[3], &mw[4], &mw[5], &outs, &n_rows, &k},
               "launching the register-A wgmma GEMM of several matrices");
}

void gemm_wgmma_swiglu(const WeightMatrix& gate, const WeightMatrix& up, CUdeviceptr x16, int64_t rows, CUdeviceptr h,
                       CUstream stream, CUdeviceptr h16) {
  wgmma_detail::check_product(gate, rows);
  wgmma_detail::check_product(up, rows);
  check_same_kind(gate, up, "gemm_wgmma_swiglu");
  if (gate.n_out != up.n_out) fail("gemm_wgmma_swiglu: gate has {} outputs, up {}", gate.n_out, up.n_out);
  if (h == 0 && h16 == 0) fail("gemm_wgmma_swiglu: neither h nor h16 given");
  LATHE_CHECK(gate.data % 16 == 0 && up.data % 16 == 0 && x16 % 16 == 0 && h % 16 == 0 && h16 % 16 == 0);
  const int64_t n_ff = gate.n_out, count = rows * n_ff;
  if (!gemm_wgmma_uses_rs(gate.type, gate.k)) {
    const AsyncAlloc& a = async_alloc();
    CUdeviceptr scratch = 0;
    const size_t part = (static_cast<size_t>(count) * 4 + 255) & ~size_t{255};  // each part 256-byte aligned
    const size_t bytes = part * (h == 0 ? 3 : 2);
    if (a.alloc(&scratch, bytes, stream) != CUDA_SUCCESS)
      fail("gemm_wgmma_swiglu: no {} bytes of scratch for the gate and up outputs", bytes);
    const CUdeviceptr g = scratch, u = scratch + part;
    const CUdeviceptr out = h != 0 ? h : u + part;
    gemm_wgmma(gate, x16, rows, g, stream);
    gemm_wgmma(up, x16, rows, u, stream);
    elementwise_binary(ElemBinary::swiglu, out, g, u, count, count, stream);
    if (h16 != 0) convert_to_f16(out, count, h16, stream);
    if (a.free(scratch, stream) != CUDA_SUCCESS) internal_fail("gemm_wgmma_swiglu: cuMemFreeAsync failed");
    return;
  }
  constexpr int kHalf = kTileOutputs / 2;  // a block's outputs: 64 gate rows and 64 up rows
  const int64_t tiles = (n_ff + kHalf - 1) / kHalf;
  if (tiles > 65535) fail("gemm_wgmma_swiglu: {} outputs need more than 65535 tiles of {}", n_ff, kHalf);
  const int bm = gemm_wgmma_chosen_tile(GemmWgmmaForm::swiglu, gate.type, gate.k, rows, 2 * n_ff);
  const CUtensorMap mx = wgmma_detail::x_map(x16, gate.k, rows, bm);
  CUtensorMap mg0, mg1, mu0, mu1;
  wgmma_detail::weight_maps(gate, kHalf, &mg0, &mg1);
  wgmma_detail::weight_maps(up, kHalf, &mu0, &mu1);
  CUdeviceptr hp = h, h16p = h16;
  int n_rows = static_cast<int>(rows), k = static_cast<int>(gate.k), nf = static_cast<int>(n_ff);
  const cuda::Dim3 grid{static_cast<unsigned>((rows + bm - 1) / bm), static_cast<unsigned>(tiles), 1};
  cuda::launch(kernel_90a(gemm_wgmma_swiglu_kernel_name(gate.type, bm)), grid, {256, 1, 1},  // LATHE_GWR_THREADS
               gemm_wgmma_rs_shared_bytes(gate.type, bm), stream,
               {const_cast<CUtensorMap*>(&mx), &mg0, &mg1, &mu0, &mu1, &hp, &h16p, &n_rows, &k, &nf},
               "launching the register-A wgmma GEMM with SwiGLU");
}

}  // namespace lathe::kernels
