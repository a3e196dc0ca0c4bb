// Elementwise ops on f32 arrays, an op code picking the function (codes mirror ElemBinary and
// ElemUnary in elementwise_launch.h). Binary: out[i] = f(a[i], b[i % period]): b has a's shape
// (period = n) or is a vector of a's last dimension broadcast over rows. f32 arithmetic; the
// transcendental ones (silu, gelu, sigmoid, soft cap) are within a few ulp of the f64 reference.
// `vec4` (the launcher decides): n and period are multiples of 4 and every pointer is 16-byte
// aligned, so each thread handles four values with one load per operand. out may alias a or x.

__device__ __forceinline__ float elem_binary_op(int op, float a, float b) {
  switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    default: return lathe_swiglu(a, b);  // 4: swiglu, silu(a) * b
  }
}

__device__ __forceinline__ float elem_unary_op(int op, float v, float param) {
  switch (op) {
    case 0: return v * param;                   // scale
    case 1: return v / (1.0f + expf(-v));       // silu
    case 2: {                                   // gelu, tanh approximation
      const float c = 0.7978845608028654f;      // sqrt(2 / pi)
      return 0.5f * v * (1.0f + tanhf(c * (v + 0.044715f * v * v * v)));
    }
    case 3: return 1.0f / (1.0f + expf(-v));    // sigmoid
    case 4: return v > 0.0f ? v : 0.0f;         // relu
    default: return param * tanhf(v / param);   // 5: soft cap
  }
}

extern "C" __global__ void lathe_elem_binary(int op, const float* a, const float* b, float* out,
                                             long long n, long long period, int vec4) { lathe_pdl_entry();
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (vec4) {
    for (; i < n / 4; i += stride) {
      const float4 x = reinterpret_cast<const float4*>(a)[i];
      const float4 y = reinterpret_cast<const float4*>(b)[i % (period / 4)];
      reinterpret_cast<float4*>(out)[i] =
          make_float4(elem_binary_op(op, x.x, y.x), elem_binary_op(op, x.y, y.y),
                      elem_binary_op(op, x.z, y.z), elem_binary_op(op, x.w, y.w));
    }
  } else {
    for (; i < n; i += stride) out[i] = elem_binary_op(op, a[i], b[i % period]);
  }
}

extern "C" __global__ void lathe_elem_unary(int op, const float* x, float* out, long long n,
                                            float param, int vec4) { lathe_pdl_entry();
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (vec4) {
    for (; i < n / 4; i += stride) {
      const float4 v = reinterpret_cast<const float4*>(x)[i];
      reinterpret_cast<float4*>(out)[i] =
          make_float4(elem_unary_op(op, v.x, param), elem_unary_op(op, v.y, param),
                      elem_unary_op(op, v.z, param), elem_unary_op(op, v.w, param));
    }
  } else {
    for (; i < n; i += stride) out[i] = elem_unary_op(op, x[i], param);
  }
}

// A run of elementwise ops carried in registers (fusion rule elementwise_run): v = x[i], then up to
// four steps, each a unary op or a binary op with a second operand b[i % period] (on either side:
// `swap` puts v second), then out[i] = v; one read of x and of each operand, one write. Step s is
// byte s of `codes`: bits 0-3 the op code, bit 4 unary, bit 5 swap. Where q1 is not null the result
// is also written in the int8 contracts' form (quantize_epilogue; n % 32 == 0, so each warp's
// 32 consecutive values are one block of the [rows][k] array whatever k % 32 == 0 is).
__device__ __forceinline__ float lathe_chain_step(int code, float v, float param, const float* b,
                                                  long long period, long long i) {
  if (code & 16) return elem_unary_op(code & 15, v, param);
  const float o = b[i % period];
  return (code & 32) ? elem_binary_op(code & 15, o, v) : elem_binary_op(code & 15, v, o);
}

extern "C" __global__ void lathe_elem_chain(const float* x, float* out, long long n, int n_steps, int codes,
                                            float p0, float p1, float p2, float p3, const float* b0,
                                            const float* b1, const float* b2, const float* b3, long long period0,
                                            long long period1, long long period2, long long period3,
                                            int8_t* q1, int8_t* q2, float4* ds, int two_words) { lathe_pdl_entry();
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = x[i];
    v = lathe_chain_step(codes & 255, v, p0, b0, period0, i);
    if (n_steps > 1) v = lathe_chain_step((codes >> 8) & 255, v, p1, b1, period1, i);
    if (n_steps > 2) v = lathe_chain_step((codes >> 16) & 255, v, p2, b2, period2, i);
    if (n_steps > 3) v = lathe_chain_step((codes >> 24) & 255, v, p3, b3, period3, i);
    out[i] = v;
    if (q1) lathe_quantize_block32(v, i, two_words, q1, q2, ds);
  }
}
