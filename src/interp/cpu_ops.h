// The reference math of every op, on the CPU: plain loops over f32 values with f64 sums. This is
// what a program means; every GPU kernel is tested against these functions.
//
// Conventions: tensors are row-major f32, the last dimension fastest. A "row" is one token's vector;
// an op over [rows, n] treats each row alone unless it says otherwise. Checkpoint matrices are read
// in their own block format through MatrixRef and dequantized one row at a time.
#pragma once

#include "gguf/ggml_type.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace lathe {

struct Tensor {
  std::vector<int64_t> shape;  // outermost first
  std::vector<float> data;

  Tensor() = default;
  explicit Tensor(std::vector<int64_t> shape_);  // zero-filled
  Tensor(std::vector<int64_t> shape_, std::vector<float> data_);
  int64_t numel() const;
  int64_t dim(int i) const { return shape[i < 0 ? shape.size() + i : i]; }
  float* row(int64_t r);            // r-th slice along the first dimension
  const float* row(int64_t r) const;
  std::string shape_string() const;  // "[16, 4096]"
};

// A matrix in a checkpoint, in its own format: n_rows rows of n_cols values (ggml: ne0 = n_cols).
// A stacked expert tensor [n_expert, n_rows, n_cols] is `expert(e)` of a MatrixRef with n_stack > 1.
struct MatrixRef {
  GgmlType type = GgmlType::F32;
  const uint8_t* data = nullptr;
  int64_t n_cols = 0;
  int64_t n_rows = 0;
  int64_t n_stack = 1;
  MatrixRef expert(int64_t e) const;  // the e-th matrix of a stack
  void row(int64_t r, float* dst) const;  // dequantizes row r (n_cols values)
};

// ---- gather and products
Tensor gather_rows(const MatrixRef& table, std::span<const int32_t> ids);  // [ids, n_cols]
Tensor product(const Tensor& x, const MatrixRef& w);  // x [.., k] times w (n_rows x k)^T: [.., n_rows]
// The same with x and each dequantized weight rounded to f16 first (the f16 tensor-core GEMM's operands).
Tensor product_f16(const Tensor& x, const MatrixRef& w);

// ---- elementwise (b has x's shape, or is a vector of x's last dimension broadcast over rows)
Tensor add(const Tensor& a, const Tensor& b);
Tensor subtract(const Tensor& a, const Tensor& b);
Tensor multiply(const Tensor& a, const Tensor& b);
Tensor divide(const Tensor& a, const Tensor& b);
Tensor scale(const Tensor& x, double s);
Tensor silu(const Tensor& x);
Tensor gelu(const Tensor& x);     // tanh approximation, as ggml and transformers' gelu_pytorch_tanh
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor swiglu(const Tensor& gate, const Tensor& up);  // silu(gate) * up
Tensor soft_cap(const Tensor& x, double cap);         // cap * tanh(x / cap)

// ---- norms over the last dimension (per head when x is [.., heads, head_dim])
// weight and bias are vectors of the last dimension, or empty for none.
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps);
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);
Tensor softmax(const Tensor& x);  // over the last dimension

// ---- rope: x [rows, heads, head_dim], one position per row; the first n_rot dims of each head rotate.
enum class RopeOrder { normal, neox };
struct RopeFreqScaling {  // Llama 3 ("llama3") or linear; none when factor == 1 and kind is none
  std::string kind = "none";
  double factor = 1.0, low_freq_factor = 1.0, high_freq_factor = 4.0;
  int64_t original_context = 8192;
  // Empty, or n_rot / 2 divisors of each pair's frequency after the scaling above: GGUF llama 3's
  // rope_freqs tensor, which llama.cpp applies as theta_j = pos * freq_j / freq_factors[j].
  std::vector<float> freq_factors;
};
// The angle per position of each rotated pair (n_rot / 2 values): base^(-2j / n_rot), then the
// scaling, then divided by the frequency factors. The GPU lane uploads the same numbers.
std::vector<double> rope_frequencies(int64_t n_rot, double base, const RopeFreqScaling& scaling);
Tensor rope(const Tensor& x, std::span<const int32_t> positions, int64_t n_rot, double base,
            RopeOrder order, const RopeFreqScaling& scaling = {});

// ---- attention over a cache
// q [rows, n_head, d]; k_cache, v_cache [n_ctx, n_head_kv, d] (n_head a multiple of n_head_kv:
// grouped heads); row r attends causally to cache slots 0..positions[r] (inclusive), or only the last
// `window` of them when window > 0. Scores are q.k * scale, soft-capped by `cap` when cap > 0; with
// sinks (one logit per head) the softmax's denominator also counts exp(sink). Output [rows, n_head, d].
// v_cache's head size may differ from q's and k's ([n_ctx, n_head_kv, dv]); the output then has dv.
struct AttentionOptions {
  double scale = 0;        // 0 means 1/sqrt(d)
  int64_t window = 0;      // 0 means no window
  double cap = 0;          // 0 means no soft cap
  std::vector<float> sinks;  // empty or n_head values
  // The flash kernel's roundings (a prefill chunk on the GPU lane; LaneRounding): q rounded to f16, and
  // each weight exp(score - max) rounded to f16 where it multiplies v (the denominator sums the
  // weights unrounded). The kernel's max is a running one over 64-slot tiles (and split ranges): the
  // same as the row's max where a row sees 64 slots or fewer, close to it past them.
  bool f16_flash = false;
};
Tensor attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                 std::span<const int32_t> positions, const AttentionOptions& options);
// Writes rows of x [rows, n_head_kv, d] into cache [n_ctx, n_head_kv, d] at the given positions
// (f16: each value rounded to f16 as it is stored, as the GPU lane's cache holds it).
void cache_append(Tensor& cache, const Tensor& x, std::span<const int32_t> positions, bool f16 = false);

// ---- mixture of experts, per row: router logits = x . router^T, softmax over all experts, keep the
// top k (ties to the lower index), renormalize the kept weights when asked, and combine
// sum_e w_e * down_e(silu(gate_e x) * up_e x). gate/up stacks [n_expert, n_ff, n], down [n_expert, n, n_ff].
struct MixtureOptions {
  int64_t k = 8;
  bool renormalize = true;
  // The experts' products with x, h and each weight rounded to f16 first (product_f16), as the GPU
  // lane's chunk mixture on wgmma computes them; the router's product stays f32, as the lane's does.
  bool f16_products = false;
};
Tensor mixture(const Tensor& x, const MatrixRef& router, const MatrixRef& gate, const MatrixRef& up,
               const MatrixRef& down, const MixtureOptions& options);
// The router's choice for one row of logits: the top k expert ids and their (renormalized) weights.
void route_top_k(std::span<const float> logits, const MixtureOptions& options,
                 std::vector<int32_t>& experts, std::vector<float>& weights);

// How close routings came to choosing another expert: the smallest gap between a row's k-th and
// (k+1)-th router logit, relative to the row's largest |logit|, over every route_top_k call (any
// thread) since the last reset; 1 when there was none. `lathe check` uses it to tell a router
// near-tie (another contract may flip the choice) from an error.
double routing_margin();
void reset_routing_margin();

// ---- reductions and layout
std::vector<int32_t> argmax(const Tensor& x);  // over the last dimension, ties to the lower index
Tensor transpose(const Tensor& x);             // a 2-D [a, b] to [b, a]
Tensor split_heads(const Tensor& x, int64_t n_heads);   // [rows, n] to [rows, n_heads, n / n_heads]
Tensor join_heads(const Tensor& x);                     // [rows, heads, d] to [rows, heads * d]
Tensor head_slice(const Tensor& x, int64_t first, int64_t count);  // heads [first, first + count)

}  // namespace lathe
