// Embedding rows: out[r][:] = the row ids[r] of a table in any block format (gemv_blocks.cuh),
// dequantized to exactly the values of the CPU's dequantize_row. The table is [n_rows][n_cols] with
// rows row_bytes apart (n_cols % 32 == 0, a multiple of 256 for the K formats; 16-byte aligned base
// for the float formats); out is [n_ids][n_cols] f32, 32-byte aligned.
// Grid (ceil(n_cols / 8 / 256), n_ids), 256 threads: a thread writes one piece of 8 values.

template <class F>
__device__ __forceinline__ void lathe_gather_body(const uint8_t* table, long long row_bytes, const int* ids,
                                                  int n_cols, float* out) {
  const int piece = blockIdx.x * blockDim.x + threadIdx.x;  // piece of the row: values 8 piece ..
  if (piece * 8 >= n_cols) return;
  const int r = blockIdx.y;
  const int v = 8 * piece;
  const uint8_t* u = table + ids[r] * row_bytes + static_cast<long long>(v / F::unit_values) * F::unit_bytes;
  float w[8];
  lathe_gemv_dequant8<F>(u, (v % F::unit_values) / 8, w);
  float4* o = reinterpret_cast<float4*>(out + static_cast<long long>(r) * n_cols + v);
  o[0] = make_float4(w[0], w[1], w[2], w[3]);
  o[1] = make_float4(w[4], w[5], w[6], w[7]);
}

#define LATHE_GATHER_KERNEL(FMT)                                                                       \
  extern "C" __global__ void __launch_bounds__(256) lathe_gather_##FMT(                                \
      const uint8_t* table, long long row_bytes, const int* ids, int n_cols, float* out) { lathe_pdl_entry();             \
    lathe_gather_body<lathe_gemv_##FMT>(table, row_bytes, ids, n_cols, out);                           \
  }

LATHE_GATHER_KERNEL(q8_0)
LATHE_GATHER_KERNEL(q4_0)
LATHE_GATHER_KERNEL(q4_1)
LATHE_GATHER_KERNEL(q5_0)
LATHE_GATHER_KERNEL(q5_1)
LATHE_GATHER_KERNEL(q2_k)
LATHE_GATHER_KERNEL(q3_k)
LATHE_GATHER_KERNEL(q4_k)
LATHE_GATHER_KERNEL(q5_k)
LATHE_GATHER_KERNEL(q6_k)
LATHE_GATHER_KERNEL(f32)
LATHE_GATHER_KERNEL(f16)
LATHE_GATHER_KERNEL(bf16)
