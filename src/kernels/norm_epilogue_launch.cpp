#include "kernels/norm_epilogue_launch.h"

#include "base/error.h"
#include "gguf/block_format.h"
#include "kernels/decode_stream.h"
#include "kernels/library.h"
#include "runtime/cuda_api.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace lathe::kernels {
namespace {

constexpr int64_t kEpilogueStatic = 1024;  // its kept rows (512 bytes) and their 32-row blocks' squares

// LATHE_NORM_EPILOGUE: "force" takes every shape by 32-row blocks, "dealt" every shape that the tiles do
// not take dealt (measured slower: docs/perf.md, twenty-eighth session's l7), "0" none. Read at every
// question (a plan asks once a product; a captured step asks no more), so a test may set it between
// engines.
enum class Mode { none, usual, force, dealt };
Mode mode_from_environment() {
  const char* v = std::getenv("LATHE_NORM_EPILOGUE");
  if (!v || !*v) return Mode::usual;
  const std::string s(v);
  return s == "0" ? Mode::none : s == "force" ? Mode::force : s == "dealt" ? Mode::dealt : Mode::usual;
}

struct Shape {
  DecodeGemvLaunch l;
  unsigned blocks = 0;  // by block: min(the decode launch's blocks, the 32-row blocks); dealt: the launch's
  int64_t owned = 0;    // the most 32-row blocks a block owns (by block)
  bool dealt = false;   // rows dealt one by one, each 32-row block quantized by its last writer
};

bool shape_of(const WeightMatrix& w, Activations a, Shape& s) {
  const Mode mode = mode_from_environment();
  if (mode == Mode::none || a == Activations::f32 || w.n_expert != 1 || w.n_out % 32 != 0) return false;
  if (!decode_gemv_launch(w, a, s.l, false)) return false;
  if (s.l.shared_bytes + kDecodeStaticBytes + kEpilogueStatic > shared_optin_bytes()) return false;
  const int64_t row_blocks = w.n_out / 32;
  s.blocks = static_cast<unsigned>(std::min<int64_t>(s.l.blocks, row_blocks));
  s.owned = (row_blocks + s.blocks - 1) / s.blocks;
  // Dealt one by one, a block of the decode launch takes its groups' rounds of n_groups rows.
  const int64_t gpb = 16 / (s.l.mode & 255), n_groups = static_cast<int64_t>(s.l.blocks) * gpb;
  const int64_t dealt = gpb * ((w.n_out + n_groups - 1) / n_groups);
  const bool balanced = 32 * s.owned <= kNormEpilogueRows && 32 * s.owned <= dealt;
  // The dealt form walks rows (no tiles): where the tiles would take the product, only by block.
  const bool rows_only = decode_tiles_group(w, a, TileProduct::norm_epilogue) == 0;
  if (mode == Mode::force) return 32 * s.owned <= kNormEpilogueRows;
  s.dealt = rows_only && mode == Mode::dealt;
  if (s.dealt) s.blocks = s.l.blocks;
  return s.dealt || (mode == Mode::usual && balanced);
}

// The shape of a launch the caller was told is taken (norm_epilogue_applies).
Shape shape_taken(const WeightMatrix& w, Activations a) {
  Shape s;
  if (!shape_of(w, a, s))
    internal_fail("the norm epilogue does not take {} [{} x {}]", ggml_type_name(w.type), w.n_out, w.k);
  return s;
}

}  // namespace

bool norm_epilogue_applies(const WeightMatrix& w, Activations a) {
  Shape s;
  return shape_of(w, a, s);
}

int64_t norm_epilogue_blocks(const WeightMatrix& w, Activations a) {
  const Shape s = shape_taken(w, a);
  return s.dealt ? w.n_out / 32 : s.blocks;
}

int64_t norm_epilogue_count_bytes(const WeightMatrix& w, Activations a) {
  return shape_taken(w, a).dealt ? 4 * (w.n_out / 32) : 0;
}

bool norm_epilogue_quantizes_row(const WeightMatrix& w, Activations a) {
  Shape s;
  return shape_of(w, a, s) && s.dealt && w.k % 128 == 0 && w.k <= quantizing_row_max_k();
}

void gemv_norm_epilogue(const WeightMatrix& w, Activations a, CUdeviceptr xq, const NormEpilogue& e,
                        CUstream stream, CUdeviceptr x_f32) {
  const Shape s = shape_taken(w, a);
  LATHE_CHECK(xq % 16 == 0 && e.sum % 16 == 0 && e.norm_w % 16 == 0 && e.parts % 16 == 0 && e.resid % 4 == 0);
  LATHE_CHECK(e.resid != 0 && e.x_q.q != 0 && e.x_q.a == a);
  const QuantizedPointers qp = quantized_pointers(e.x_q, 1, w.n_out);
  CUdeviceptr wp = w.data, x = xq, resid = e.resid, sum = e.sum, nw = e.norm_w, q1 = qp.q1, q2 = qp.q2, ds = qp.ds,
              parts = e.parts;
  long long row_bytes = lathe::row_bytes(w.type, w.k);
  int k = static_cast<int>(w.k), n_out = static_cast<int>(w.n_out), mode = s.l.mode & 255,
      early = decode_early_requests(), two = qp.two_words;
  if (s.dealt) {  // the rows dealt (lathe_gemv1_normd_*), each 32-row block's count in e.count
    LATHE_CHECK(e.count != 0 && e.count % 4 == 0);
    LATHE_CHECK(x_f32 == 0 || (x_f32 % 16 == 0 && norm_epilogue_quantizes_row(w, a)));
    CUdeviceptr count = e.count, xf = x_f32;
    const std::string name =
        std::string("lathe_gemv1_normd_") + dense_kernel_format(w.type) + "_" + std::string(activations_name(a));
    cuda::launch(kernel(name), {s.blocks, 1, 1}, {512, 1, 1}, static_cast<unsigned>(s.l.shared_bytes), stream,
                 {&wp, &row_bytes, &x, &k, &n_out, &mode, &early, &resid, &sum, &nw, &q1, &q2, &ds, &two, &parts,
                  &count, &xf},
                 "launching a decode product with the sum and the norm's weighting in its epilogue, its rows dealt");
    return;
  }
  LATHE_CHECK(x_f32 == 0);  // by block, x is an int8 form (norm_epilogue_quantizes_row)
  // Q4_K's and Q6_K's tiles (gemv_decode_tiles.cuh) over the same blocks' own rows, where they apply.
  const int tiles = decode_tiles_group(w, a, TileProduct::norm_epilogue);
  const int64_t tile_shared = tiles > 0 ? decode_tile_shared_bytes(w, a) : 0;
  const bool by_tiles = tiles > 0 && tile_shared + kDecodeTileStaticBytes + kEpilogueStatic <= shared_optin_bytes();
  if (by_tiles) mode = tiles;
  const int64_t shared = by_tiles ? tile_shared : s.l.shared_bytes;
  const std::string name = std::string(by_tiles ? "lathe_gemv1t_norm_" : "lathe_gemv1_norm_") +
                           dense_kernel_format(w.type) + "_" + std::string(activations_name(a));
  std::vector<void*> args = {&wp, &row_bytes, &x, &k, &n_out, &mode, &early, &resid, &sum, &nw, &q1, &q2, &ds, &two,
                             &parts};
  CUtensorMap map;  // the tile kernel's parameters end with w's tensor map
  if (by_tiles) {
    map = decode_tile_map(w);
    args.push_back(&map);
  }
  cuda::launch(kernel(name), {s.blocks, 1, 1}, {512, 1, 1}, static_cast<unsigned>(shared), stream,
               std::move(args), "launching a decode product with the sum and the norm's weighting in its epilogue");
}

}  // namespace lathe::kernels
