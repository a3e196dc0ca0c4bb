// Activations quantized once per step for the int8 contracts of the products (gemv_product.cuh).
// Each row of k f32 values (k % 32 == 0) becomes k / 32 blocks of 32:
//   q1[i] = round(x[i] / d1), d1 = max|x| / 127                      (int8: x^ = d1 * q1)
//   q2[i] = round((x[i] - d1 * q1[i]) / d2), d2 = max|residual| / 127 (int8x2: x^ = d1 q1 + d2 q2)
//   ds = (d1, d2, sum over the block of x^, 0) as a float4; d2 = 0 for int8.
// |x - x^| <= d1 / 2 for int8 and <= d2 / 2 ~ max|x| / 64516 for int8x2 (about 14 bits of a block's
// range). The residual is formed with one rounding (an FMA), the levels by round-to-nearest-even.
// Layout: q1 [rows][k] int8, q2 [rows][k] int8 (int8x2 only), ds [rows][k / 32] float4.
// One warp per block, lane i holding value i; blocks of 256 threads (8 blocks of x each).

extern "C" __global__ void __launch_bounds__(256) lathe_quantize_act(const float* x, int k, int n_rows, int two_words,
                                                                     int8_t* q1, int8_t* q2, float4* ds) { lathe_pdl_entry();
  const long long block = static_cast<long long>(blockIdx.x) * 8 + (threadIdx.x >> 5);
  const long long n_blocks = static_cast<long long>(n_rows) * (k >> 5);
  if (block >= n_blocks) return;  // whole warps leave together
  const long long i = block * 32 + (threadIdx.x & 31);  // rows are contiguous and k % 32 == 0: block b is values 32 b ..
  lathe_quantize_block32(x[i], i, two_words, q1, q2, ds);
}
