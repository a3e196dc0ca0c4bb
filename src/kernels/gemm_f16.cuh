// The prefill product on f16 tensor cores: y [R][n_out] f32 = x16 . dequant(W)^T, x16 f16 [R][k]
// (row-major), W read in place in its GGUF format (f16, q8_0, q4_K, q6_K). Host side and contract:
// gemm_f16_launch.h. The formats and the kernel instantiations: gemm_f16_blocks.cuh (after this file
// in the library's name order, which the templates below need: their format calls are dependent).
//
// A block of 256 threads (8 warps, 2 along rows x 4 along outputs) computes a BM x BN tile of y,
// walking k in chunks of 64 values through a ring of LATHE_GF16_STAGES stages:
//   stage  x16 chunk [BM][64] f16 (cp.async, 16-byte pieces XOR-swizzled by row & 7: conflict-free
//          ldmatrix), then the chunk's raw weight bytes, F::lines 16-byte lines per weight row
//          (F::line says which lines of the row; rows padded to an odd count of lines).
//   deq    two [BN][64] f16 tiles, swizzled as x: chunk c's weights dequantized ONCE per block
//          (w = d q rounded to f16, q4_K d sc q - dmin m), read by all BM rows' mma.
// Iteration c (one barrier): wait for chunk c + 1's raw bytes, issue the loads of chunk c + S - 1,
// then mma.sync m16n8k16 (f16 x f16 -> f32) over chunk c from deq[c & 1], dequantizing chunk c + 1
// into deq[(c + 1) & 1] halfway through (fragments loaded one 16-value step ahead). The f16 format needs no dequantizing: its lines land swizzled in the stage and the
// mma reads them there (F::direct). Rows >= R, outputs >= n_out and k past its end are zero-filled
// when loaded and never stored. Consecutive blocks (blockIdx.x: rows) share a weight tile, so a
// tile's bytes come from DRAM once and from L2 for the other row tiles running beside it.

#define LATHE_GF16_THREADS 256
#define LATHE_GF16_STAGES 4

__device__ __forceinline__ void lathe_gf16_cp16(void* smem, const void* g, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int n = valid ? 16 : 0;  // 0 bytes read: the piece is zero-filled
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(g), "r"(n) : "memory");
}
__device__ __forceinline__ void lathe_gf16_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void lathe_gf16_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void lathe_gf16_ldsm4(const uint8_t* smem, uint32_t* r) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}

// d += a (16x16 f16, row) . b (16x8 f16, col), f32 sums.
__device__ __forceinline__ void lathe_gf16_mma(float* d, const uint32_t* a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Byte offset of 16-byte piece c (8 f16) of row r in a swizzled [rows][64] f16 tile.
__device__ __forceinline__ int lathe_gf16_swz(int r, int c) { return r * 128 + ((c ^ (r & 7)) << 4); }

__device__ __forceinline__ float lathe_gf16_half_at(const uint8_t* p) {  // 2-byte aligned
  return __half2float(__ushort_as_half(*reinterpret_cast<const uint16_t*>(p)));
}

// Byte b of word u (0..255) as an exact float, minus `bias` (one PRMT and one FADD: 2^23 + byte is
// the float whose low mantissa bits are the byte; I2F would run at a quarter of the FADD rate).
__device__ __forceinline__ float lathe_gf16_byte(uint32_t u, int b, float bias) {
  return __int_as_float(static_cast<int>(__byte_perm(u, 0x4B000000u, 0x7540u + b))) - (8388608.0f + bias);
}

// Two f32 weights rounded to f16 (round to nearest even), packed low first.
__device__ __forceinline__ uint32_t lathe_gf16_pack(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// Stores 32 packed f16 (16 words) as pieces 4 h .. 4 h + 3 of row r of a dequantized tile.
__device__ __forceinline__ void lathe_gf16_put32(uint8_t* deq, int r, int h, const uint32_t* v) {
#pragma unroll
  for (int i = 0; i < 4; ++i)
    *reinterpret_cast<uint4*>(deq + lathe_gf16_swz(r, 4 * h + i)) =
        make_uint4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
}

template <class F, int BM, int BN>
struct LatheGf16Layout {
  static constexpr int x_bytes = BM * 128;
  static constexpr int raw_stride = F::direct ? 128 : (F::lines | 1) * 16;  // odd lines: 8 rows, 8 bank groups
  static constexpr int stage_bytes = x_bytes + BN * raw_stride;
  static constexpr int deq_at = LATHE_GF16_STAGES * stage_bytes;
  static constexpr int total = deq_at + (F::direct ? 0 : 2 * BN * 128);  // gemm_f16_launch.cpp mirrors this
};

// Chunk c's x16 pieces and raw weight lines into `stage` (cp.async; the caller commits).
template <class F, int BM, int BN>
__device__ __forceinline__ void lathe_gf16_load(uint8_t* stage, const uint8_t* w, long long row_bytes,
                                                const __half* x, int n_rows, int k, int n_out, int m0, int n0,
                                                int c) {
  typedef LatheGf16Layout<F, BM, BN> L;
  const int t = threadIdx.x, k0 = c * 64;
  for (int i = t; i < BM * 8; i += LATHE_GF16_THREADS) {
    const int r = i >> 3, p = i & 7;
    const bool valid = m0 + r < n_rows && k0 + 8 * p < k;
    lathe_gf16_cp16(stage + lathe_gf16_swz(r, p), valid ? x + static_cast<long long>(m0 + r) * k + k0 + 8 * p : x,
                    valid);
  }
  uint8_t* raw = stage + L::x_bytes;
  for (int i = t; i < BN * F::lines; i += LATHE_GF16_THREADS) {
    const int r = i / F::lines, l = i - r * F::lines;
    const uint8_t* src = w;
    const bool valid = n0 + r < n_out && F::line(w + static_cast<long long>(n0 + r) * row_bytes, k, c, l, src);
    lathe_gf16_cp16(raw + (F::direct ? lathe_gf16_swz(r, l) : r * L::raw_stride + l * 16), valid ? src : w, valid);
  }
}

template <class F, int BM, int BN>
__device__ __forceinline__ void lathe_gf16_body(const uint8_t* w, long long row_bytes, const __half* x, float* y,
                                                int n_rows, int k, int n_out) {
  typedef LatheGf16Layout<F, BM, BN> L;
  constexpr int S = LATHE_GF16_STAGES;
  constexpr int MT = BM / 32, NT = BN / 32;  // 16-row and 8-output mma tiles per warp
  extern __shared__ __align__(128) uint8_t lathe_gf16_smem[];
  uint8_t* smem = lathe_gf16_smem;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int wm0 = (warp >> 2) * (BM / 2), wn0 = (warp & 3) * (BN / 4);
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
  const int n_chunks = (k + 63) >> 6;

  // Dequantizes chunk cc (its raw lines in stage cc % S) into deq[cc & 1]: one (row, 32-value half)
  // a thread.
  auto dequant = [&](int cc) {
    const uint8_t* raw = smem + (cc % S) * L::stage_bytes + L::x_bytes;
    uint8_t* deq = smem + L::deq_at + (cc & 1) * BN * 128;
    for (int u = t; u < BN * 2; u += LATHE_GF16_THREADS) {
      const int r = u >> 1, h = u & 1;
      const size_t row_addr = reinterpret_cast<size_t>(w) + static_cast<size_t>(n0 + r) * row_bytes;
      uint32_t v[16];
      F::dequant(raw + r * L::raw_stride, row_addr, k, cc, h, v);
      lathe_gf16_put32(deq, r, h, v);
    }
  };

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (s < n_chunks) lathe_gf16_load<F, BM, BN>(smem + s * L::stage_bytes, w, row_bytes, x, n_rows, k, n_out, m0, n0, s);
    lathe_gf16_commit();
  }
  if (!F::direct) {
    lathe_gf16_wait<S - 2>();  // chunk 0
    __syncthreads();
    dequant(0);
  }
  for (int c = 0; c < n_chunks; ++c) {
    // Direct: chunk c must be in; otherwise chunk c + 1 (c's weights are dequantized already).
    if (F::direct) lathe_gf16_wait<S - 2>(); else lathe_gf16_wait<S - 3>();
    __syncthreads();  // ... and every warp is done with chunk c - 1: its stage and deq[(c + 1) & 1] are free
    if (c + S - 1 < n_chunks)
      lathe_gf16_load<F, BM, BN>(smem + ((c + S - 1) % S) * L::stage_bytes, w, row_bytes, x, n_rows, k, n_out, m0, n0,
                                 c + S - 1);
    lathe_gf16_commit();
    const uint8_t* xs = smem + (c % S) * L::stage_bytes;
    const uint8_t* ws = F::direct ? xs + L::x_bytes : smem + L::deq_at + (c & 1) * BN * 128;
    // Fragments of 16-value step s + 1 load while step s multiplies; chunk c + 1 is dequantized
    // after step 1's mma are issued, so the tensor pipe works through them meanwhile.
    uint32_t a[2][MT][4], b[2][NT][2];
    auto fragments = [&](int s, int buf) {
#pragma unroll
      for (int i = 0; i < MT; ++i)
        lathe_gf16_ldsm4(xs + lathe_gf16_swz(wm0 + 16 * i + (lane & 15), 2 * s + (lane >> 4)), a[buf][i]);
#pragma unroll
      for (int j = 0; j < NT; j += 2) {
        uint32_t f[4];
        lathe_gf16_ldsm4(ws + lathe_gf16_swz(wn0 + 8 * j + (lane & 7) + 8 * (lane >> 4), 2 * s + ((lane >> 3) & 1)), f);
        b[buf][j][0] = f[0];
        b[buf][j][1] = f[1];
        b[buf][j + 1][0] = f[2];
        b[buf][j + 1][1] = f[3];
      }
    };
    fragments(0, 0);
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      if (s < 3) fragments(s + 1, (s + 1) & 1);
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) lathe_gf16_mma(acc[i][j], a[s & 1][i], b[s & 1][j][0], b[s & 1][j][1]);
      if (s == 1 && !F::direct && c + 1 < n_chunks) dequant(c + 1);
    }
  }

  // y: lane (g, tq) holds rows g, g + 8 and outputs 2 tq, 2 tq + 1 of each mma tile.
  const int g = lane >> 2, tq = lane & 3;
  const bool pairs = (n_out & 1) == 0;  // then every (even output, next) pair is 8-byte aligned
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int r = m0 + wm0 + 16 * i + g + 8 * hh, o = n0 + wn0 + 8 * j + 2 * tq;
        if (r >= n_rows || o >= n_out) continue;
        float* p = y + static_cast<long long>(r) * n_out + o;
        if (pairs) {
          *reinterpret_cast<float2*>(p) = make_float2(acc[i][j][2 * hh], acc[i][j][2 * hh + 1]);
        } else {
          p[0] = acc[i][j][2 * hh];
          if (o + 1 < n_out) p[1] = acc[i][j][2 * hh + 1];
        }
      }
}

// x [count] f32 -> out [count] f16 (round to nearest even), 4 values a thread.
extern "C" __global__ void __launch_bounds__(256) lathe_convert_f32_to_f16(const float* x, long long count,
                                                                            __half* out) {
  lathe_pdl_entry();
  const long long i = (static_cast<long long>(blockIdx.x) * 256 + threadIdx.x) * 4;
  if (i + 3 < count) {
    const float4 v = *reinterpret_cast<const float4*>(x + i);
    *reinterpret_cast<uint2*>(out + i) = make_uint2(lathe_gf16_pack(v.x, v.y), lathe_gf16_pack(v.z, v.w));
  } else {
    for (long long j = i; j < count; ++j) out[j] = __float2half_rn(x[j]);
  }
}
