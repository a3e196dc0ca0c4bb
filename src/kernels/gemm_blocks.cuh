// The pieces of the int8 tensor-core GEMM (gemm_int8.cuh): cp.async and ldmatrix wrappers, the two
// integer mma shapes, and one unpacker per weight format that turns a staged GGUF super-block tile
// (256 values of one weight row, raw bytes as cp.async brought them) into int8 levels plus per-block
// scales in shared memory.
//
// Unpacked form of one weight row of a 256-value k-tile (what the mma loop reads):
//   levels  int8 [256], 16-byte chunks XOR-swizzled by (row & 7) so ldmatrix is conflict-free;
//   scale   float [8][BN]: the factor of block j's (32 values) integer sums (q8_0: d; q4_K: d * sc_j;
//           q6_K: d, with the 16-value sub-block scales applied to the int32 sums);
//   minus   float [8][BN]: q4_K's dmin * m_j (the term that multiplies the activation block sum);
//   sub     int8 [16][BN]: q6_K's sub-block scales.
// (Block-major, so the lanes of a warp, reading neighbouring outputs, hit distinct banks.)
// Every level is exact, so the mma's int32 sums are exact.

__device__ __forceinline__ void lathe_gemm_cp16(void* smem, const void* g, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int n = valid ? 16 : 0;  // 0 bytes read: the line is zero-filled
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(g), "r"(n) : "memory");
}
__device__ __forceinline__ void lathe_gemm_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void lathe_gemm_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

__device__ __forceinline__ void lathe_gemm_ldsm4(const void* smem, uint32_t* r) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}

// d = a (16x32, row) . b (32x8, col) + c0, int8 inputs, int32 sums.
__device__ __forceinline__ void lathe_gemm_mma_k32(int* d, const uint32_t* a, const uint32_t* b, int c0) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%10, %10, %10, %10};\n"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c0));
}

// An int32 sum started from kLatheGemmMagic is the bit pattern of the float 1.5 * 2^23 + S while
// |S| < 2^22 (one 32-value block of int8 levels: |S| <= 32 * 127 * 127), so S comes out as a float
// with one FADD instead of a conversion (I2F runs at a quarter of the FMA rate).
#define LATHE_GEMM_MAGIC 0x4B400000
__device__ __forceinline__ float lathe_gemm_magic_to_float(int d) { return __int_as_float(d) - 12582912.0f; }

// d = a (16x16) . b (16x8): half of a k32 fragment (a0, a1 with b0, or a2, a3 with b1).
__device__ __forceinline__ void lathe_gemm_mma_k16(int* d, uint32_t a0, uint32_t a1, uint32_t b0) {
  asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %7, %7, %7};\n"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a0), "r"(a1), "r"(b0), "r"(0));
}

// 4 bytes at a 2-byte aligned shared address (staged rows start at any even offset).
__device__ __forceinline__ uint32_t lathe_gemm_ld32_a2(const uint8_t* p) {
  const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
  return static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16);
}

// The staged x block terms (d1, d2, block sum) of rows 16 i + g and 16 i + g + 8 of a warp's tile at
// k-step kk: only the words the contract and format use are read (the min's block sum for formats
// with one, d2 for int8x2). sds: the stage's [8][BM] float4 of x.
template <class F, bool X2>
__device__ __forceinline__ void lathe_gemm_dx(const float4* sds, int kk, int bm, int wm0, int i, int g, float4& dxa,
                                              float4& dxb) {
  const float4* pa = sds + kk * bm + wm0 + 16 * i + g;
  if (F::has_min) {
    dxa = pa[0];
    dxb = pa[8];
  } else if (X2) {
    const float2 a = *reinterpret_cast<const float2*>(pa);
    const float2 b2 = *reinterpret_cast<const float2*>(pa + 8);
    dxa = make_float4(a.x, a.y, 0.0f, 0.0f);
    dxb = make_float4(b2.x, b2.y, 0.0f, 0.0f);
  } else {
    dxa = make_float4(pa[0].x, 0.0f, 0.0f, 0.0f);
    dxb = make_float4(pa[8].x, 0.0f, 0.0f, 0.0f);
  }
}

__device__ __forceinline__ float lathe_gemm_f16_a2(const uint8_t* p) {
  return __half2float(__ushort_as_half(*reinterpret_cast<const uint16_t*>(p)));
}

// Byte offset of 16-byte chunk c of row r in a swizzled [rows][256] int8 array.
__device__ __forceinline__ int lathe_gemm_swz(int r, int c) { return r * 256 + ((c ^ (r & 7)) << 4); }

// Stores 16 levels (4 words) as chunk c of row r.
__device__ __forceinline__ void lathe_gemm_put16(uint8_t* levels, int r, int c, uint32_t a, uint32_t b, uint32_t e,
                                                 uint32_t f) {
  *reinterpret_cast<uint4*>(levels + lathe_gemm_swz(r, c)) = make_uint4(a, b, e, f);
}

// ---- unpackers: `raw` is the first byte of the row's super-block tile (2-byte aligned in general),
// `part` (0..3) the quarter of 64 values this thread unpacks, `n_blocks` the 32-value blocks of the
// tile inside k (8 but for q8_0's last tile). Blocks past n_blocks get scale 0 (their activation
// levels are zero-filled, and 0 * a stray f16 inf would be NaN).
struct LatheGemmUnpacked {
  uint8_t* levels;  // [BN][256] swizzled
  float* scale;     // [8][BN]
  float* minus;     // [8][BN]
  int8_t* sub;      // [16][BN]
  int bn;
};

// q8_0, 34-byte blocks (d:f16, qs:int8[32]); 8 blocks a tile (272 bytes), rows start at even offsets.
struct lathe_gemm_q8_0 {
  static constexpr int tile_bytes = 272;
  static constexpr int lines = 18;  // 16-byte lines covering 272 bytes at any even offset
  static constexpr bool sub16 = false, has_min = false;
  static __device__ __forceinline__ void unpack(const uint8_t* raw, int part, int n_blocks, int row,
                                                LatheGemmUnpacked u) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int j = 2 * part + h;
      const uint8_t* b = raw + 34 * j;
      uint32_t q[8];
      lathe_gemm_words<8>(b + 2, q);
      lathe_gemm_put16(u.levels, row, 2 * j, q[0], q[1], q[2], q[3]);
      lathe_gemm_put16(u.levels, row, 2 * j + 1, q[4], q[5], q[6], q[7]);
      u.scale[j * u.bn + row] = j < n_blocks ? lathe_gemm_f16_a2(b) : 0.0f;
    }
  }
};

// q4_K, 144-byte super-blocks (d, dmin:f16, scales:uint8[12], qs:uint8[128]); always 16-byte aligned
// (144 = 9 * 16 and the matrix starts 16-byte aligned). Quarter p is qs[32p..32p+31]: low nibbles
// are sub-block 2p, high nibbles sub-block 2p + 1; value = d sc_j q - dmin m_j.
struct lathe_gemm_q4_k {
  static constexpr int tile_bytes = 144;
  static constexpr int lines = 9;
  static constexpr bool sub16 = false, has_min = true;
  static __device__ __forceinline__ void unpack(const uint8_t* raw, int part, int, int row, LatheGemmUnpacked u) {
    const uint4 a = *reinterpret_cast<const uint4*>(raw + 16 + 32 * part);
    const uint4 b = *reinterpret_cast<const uint4*>(raw + 32 + 32 * part);
    const uint32_t m4 = 0x0F0F0F0Fu;
    lathe_gemm_put16(u.levels, row, 4 * part + 0, a.x & m4, a.y & m4, a.z & m4, a.w & m4);
    lathe_gemm_put16(u.levels, row, 4 * part + 1, b.x & m4, b.y & m4, b.z & m4, b.w & m4);
    lathe_gemm_put16(u.levels, row, 4 * part + 2, (a.x >> 4) & m4, (a.y >> 4) & m4, (a.z >> 4) & m4, (a.w >> 4) & m4);
    lathe_gemm_put16(u.levels, row, 4 * part + 3, (b.x >> 4) & m4, (b.y >> 4) & m4, (b.z >> 4) & m4, (b.w >> 4) & m4);
    const float d = lathe_gemm_f16_a2(raw), dmin = lathe_gemm_f16_a2(raw + 2);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      int sc, m;
      lathe_k4_scale_min(raw + 4, 2 * part + h, sc, m);
      u.scale[(2 * part + h) * u.bn + row] = d * static_cast<float>(sc);
      u.minus[(2 * part + h) * u.bn + row] = dmin * static_cast<float>(m);
    }
  }
};

// q6_K, 210-byte super-blocks (ql:uint8[128], qh:uint8[64], scales:int8[16], d:f16), at even offsets.
// Value v = 128 h + 32 c + l: low nibble (c / 2) of ql[64 h + 32 (c % 2) + l], high bits 2c of
// qh[32 h + l], level = (low | high << 4) - 32, times d * scales[v / 16]. Quarter p = 2h + e holds
// c = 2e (ql[64h + l]) and c = 2e + 1 (ql[64h + 32 + l]).
struct lathe_gemm_q6_k {
  static constexpr int tile_bytes = 210;
  static constexpr int lines = 14;  // 210 bytes at any even offset
  static constexpr bool sub16 = true, has_min = false;
  static __device__ __forceinline__ void unpack(const uint8_t* raw, int part, int, int row, LatheGemmUnpacked u) {
    const int h = part >> 1, e = part & 1;
    uint32_t out[16], ql[16], qh[8];
    lathe_gemm_words<16>(raw + 64 * h, ql);
    lathe_gemm_words<8>(raw + 128 + 32 * h, qh);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t hi = qh[i] >> (4 * e), lo0 = ql[i] >> (4 * e), lo1 = ql[8 + i] >> (4 * e);
      out[i] = __vsub4((lo0 & 0x0F0F0F0Fu) | ((hi & 0x03030303u) << 4), 0x20202020u);
      out[8 + i] = __vsub4((lo1 & 0x0F0F0F0Fu) | ((hi & 0x0C0C0C0Cu) << 2), 0x20202020u);
    }
#pragma unroll
    for (int c = 0; c < 4; ++c)
      lathe_gemm_put16(u.levels, row, 4 * part + c, out[4 * c], out[4 * c + 1], out[4 * c + 2], out[4 * c + 3]);
    const float d = lathe_gemm_f16_a2(raw + 208);
    u.scale[(2 * part) * u.bn + row] = d;
    u.scale[(2 * part + 1) * u.bn + row] = d;
    const uint32_t s = lathe_gemm_ld32_a2(raw + 192 + 4 * part);
#pragma unroll
    for (int i = 0; i < 4; ++i) u.sub[(4 * part + i) * u.bn + row] = static_cast<int8_t>(s >> (8 * i));
  }
};

// ---- the consumers' arithmetic, shared by gemm_int8.cuh (lockstep) and gemm_ws_kernel.cuh
// (warp-specialized), so the two give the same terms in the same order.

template <int MT, int NT>
__device__ __forceinline__ void lathe_gemm_zero(float (&acc)[MT][NT][4]) {
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[i][j][c] = 0.0f;
}

// One 32-value block (kk of the 8 in a k-tile) of a warp's (16 MT) x (8 NT) sub-tile at (wm0, wn0):
// the weights' levels, scales, mins and q6_K sub-scales unpacked in shared memory (LatheGemmUnpacked's
// layout for BN outputs), the activation levels xs1 (xs2: int8x2) staged [BM][256] swizzled, and
// dx_of(i, dxa, dxb) giving the activation block's (d1, d2, sum) for rows 16 i + g and 16 i + g + 8.
// The block's int32 sums start from zero and are scaled in f32 registers into acc.
template <class F, bool X2, int MT, int NT, int BN, class Dx>
__device__ __forceinline__ void lathe_gemm_kstep(float (&acc)[MT][NT][4], int kk, const uint8_t* levels,
                                                 const float* scale, const float* minus, const int8_t* sub,
                                                 const uint8_t* xs1, const uint8_t* xs2, int wm0, int wn0, int lane,
                                                 Dx dx_of) {
  const int tq = lane & 3;
  uint32_t b[NT][2];
#pragma unroll
  for (int j = 0; j < NT; j += 2) {
    const int r = wn0 + 8 * j + (lane & 7) + 8 * (lane >> 4);
    uint32_t f[4];
    lathe_gemm_ldsm4(levels + lathe_gemm_swz(r, 2 * kk + ((lane >> 3) & 1)), f);
    b[j][0] = f[0]; b[j][1] = f[1]; b[j + 1][0] = f[2]; b[j + 1][1] = f[3];
  }
  float ws[NT][2], wmn[NT][2];
  int sa[NT][2], sb[NT][2];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int col = wn0 + 8 * j + 2 * tq;  // and col + 1
    const float2 sc = *reinterpret_cast<const float2*>(scale + kk * BN + col);
    ws[j][0] = sc.x;
    ws[j][1] = sc.y;
    if (F::has_min) {
      const float2 mn = *reinterpret_cast<const float2*>(minus + kk * BN + col);
      wmn[j][0] = -mn.x;
      wmn[j][1] = -mn.y;
    }
    if (F::sub16) {
      const char2 a = *reinterpret_cast<const char2*>(sub + 2 * kk * BN + col);
      const char2 b2 = *reinterpret_cast<const char2*>(sub + (2 * kk + 1) * BN + col);
      sa[j][0] = a.x;
      sa[j][1] = a.y;
      sb[j][0] = b2.x;
      sb[j][1] = b2.y;
    }
  }
#pragma unroll
  for (int i = 0; i < MT; ++i) {
    const int ra = wm0 + 16 * i + (lane & 7) + 8 * ((lane >> 3) & 1);
    const int ca = 2 * kk + (lane >> 4);
    uint32_t a1[4], a2[4];
    lathe_gemm_ldsm4(xs1 + lathe_gemm_swz(ra, ca), a1);
    if (X2) lathe_gemm_ldsm4(xs2 + lathe_gemm_swz(ra, ca), a2);
    float4 dxa, dxb;
    dx_of(i, dxa, dxb);
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      int s1[4], s2[4];  // q6_K: the block's sums; otherwise magic-biased (lathe_gemm_magic_to_float)
      if (F::sub16) {
        int h1[4], h2[4];
        lathe_gemm_mma_k16(h1, a1[0], a1[1], b[j][0]);
        lathe_gemm_mma_k16(h2, a1[2], a1[3], b[j][1]);
#pragma unroll
        for (int c = 0; c < 4; ++c) s1[c] = h1[c] * sa[j][c & 1] + h2[c] * sb[j][c & 1];
        if (X2) {
          lathe_gemm_mma_k16(h1, a2[0], a2[1], b[j][0]);
          lathe_gemm_mma_k16(h2, a2[2], a2[3], b[j][1]);
#pragma unroll
          for (int c = 0; c < 4; ++c) s2[c] = h1[c] * sa[j][c & 1] + h2[c] * sb[j][c & 1];
        }
      } else {
        lathe_gemm_mma_k32(s1, a1, b[j], LATHE_GEMM_MAGIC);
        if (X2) lathe_gemm_mma_k32(s2, a2, b[j], LATHE_GEMM_MAGIC);
      }
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const float4 dx = c < 2 ? dxa : dxb;
        // |sums| < 2^24: exact in f32 either way
        const float f1 = F::sub16 ? static_cast<float>(s1[c]) : lathe_gemm_magic_to_float(s1[c]);
        float v = f1 * dx.x;
        if (X2) v = fmaf(F::sub16 ? static_cast<float>(s2[c]) : lathe_gemm_magic_to_float(s2[c]), dx.y, v);
        float a = fmaf(v, ws[j][c & 1], acc[i][j][c]);
        if (F::has_min) a = fmaf(wmn[j][c & 1], dx.z, a);
        acc[i][j][c] = a;
      }
    }
  }
}

// y's rows and outputs of a warp's sub-tile, those inside [n_rows) x [n_out).
template <int MT, int NT>
__device__ __forceinline__ void lathe_gemm_store(const float (&acc)[MT][NT][4], float* y, int m0, int n0, int wm0,
                                                 int wn0, int lane, int n_rows, int n_out) {
  const int g = lane >> 2, tq = lane & 3;
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int r = m0 + wm0 + 16 * i + g + 8 * (c >> 1), o = n0 + wn0 + 8 * j + 2 * tq + (c & 1);
        if (r < n_rows && o < n_out) y[static_cast<long long>(r) * n_out + o] = acc[i][j][c];
      }
}
