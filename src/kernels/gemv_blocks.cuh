// GGUF block formats on the device: every format the products and the gather read, decoded 8 values
// (a "piece") at a time, to exactly the f32 values of the CPU's dequantize_row (src/gguf/dequantize*.cpp).
//
// A format is a trait struct: `unit_values` values stored in `unit_bytes` bytes (the format's block; 8
// values for the float formats), `pieces` = unit_values / 8. For the quantized formats piece p of a
// unit (values 8p .. 8p+7 of the unit) decodes to two words of signed int8 levels q (bytes in value
// order) and a scale and offset with w = scale * q + offset, the offset being 0 unless `has_offset`;
// an offset holds for 32 values (a block, a K sub-block) unless `offset_by_piece` (Q2_K's 16).
// The f32 value of a level is formed as the CPU forms it: one rounded product, then one rounded sum
// (never a fused multiply-add), with scale and offset themselves the CPU's products (d * sc,
// dmin * m). Units may sit at any even address (every block size is even), so the quantized decoders
// read 16-bit words; the float formats need their units 16-byte aligned (rows of k % 32 == 0 values
// from a 16-byte aligned base are).

__device__ __forceinline__ uint32_t lathe_gemv_ld32(const uint8_t* p) {  // p 2-byte aligned
  const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
  return static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16);
}

// A 16-byte load of streamed weights: not kept in L1, so the activations stay there.
__device__ __forceinline__ uint4 lathe_gemv_ld_stream(const void* p) {
  uint4 r;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
      : "l"(p));
  return r;
}

// Exact int -> float for |i| < 2^22 with two full-rate instructions (I2F runs at quarter rate).
__device__ __forceinline__ float lathe_gemv_i2f(int i) {
  return __int_as_float(0x4B400000 + i) - 12582912.0f;
}

// Byte i of a word of int8 levels, sign-extended (__byte_perm ignores prmt's sign-replicate bit).
__device__ __forceinline__ int lathe_gemv_sbyte(uint32_t word, int i) {
  return static_cast<int>(word << (24 - 8 * i)) >> 24;
}

// Bytes of unsigned levels minus c (c <= 128, levels < 256 - (128 - c)), as signed int8 bytes.
__device__ __forceinline__ int lathe_gemv_bias(uint32_t q, uint32_t c) {
  const uint32_t add = (128u - c) * 0x01010101u;
  return static_cast<int>((q + add) ^ 0x80808080u);
}

// Bits 0..3 of h as bit 4 of bytes 0..3 (the fifth bit of Q5 levels).
__device__ __forceinline__ uint32_t lathe_gemv_spread4(uint32_t h) {
  return ((h * 0x00204081u) & 0x01010101u) << 4;
}

struct lathe_gemv_q8_0 {  // d:f16, qs:int8[32]
  static constexpr int unit_values = 32, unit_bytes = 34, pieces = 4;
  static constexpr bool is_float = false, has_offset = false;
  static __device__ __forceinline__ void piece(const uint8_t* u, int p, int& q0, int& q1, float& scale, float& offset) {
    scale = lathe_f16(u);
    offset = 0.0f;
    q0 = static_cast<int>(lathe_gemv_ld32(u + 2 + 8 * p));
    q1 = static_cast<int>(lathe_gemv_ld32(u + 6 + 8 * p));
  }
};

// Q4_0 / Q4_1 nibbles: value j < 16 is the low nibble of qs[j], value j + 16 its high nibble.
__device__ __forceinline__ void lathe_gemv_nibbles32(const uint8_t* qs, int p, uint32_t& n0, uint32_t& n1) {
  const int shift = 4 * (p >> 1);
  n0 = (lathe_gemv_ld32(qs + 8 * (p & 1)) >> shift) & 0x0F0F0F0Fu;
  n1 = (lathe_gemv_ld32(qs + 8 * (p & 1) + 4) >> shift) & 0x0F0F0F0Fu;
}

struct lathe_gemv_q4_0 {  // d:f16, qs:uint8[16]; x = d * (q - 8)
  static constexpr int unit_values = 32, unit_bytes = 18, pieces = 4;
  static constexpr bool is_float = false, has_offset = false;
  static __device__ __forceinline__ void piece(const uint8_t* u, int p, int& q0, int& q1, float& scale, float& offset) {
    uint32_t n0, n1;
    lathe_gemv_nibbles32(u + 2, p, n0, n1);
    scale = lathe_f16(u);
    offset = 0.0f;
    q0 = lathe_gemv_bias(n0, 8);
    q1 = lathe_gemv_bias(n1, 8);
  }
};

struct lathe_gemv_q4_1 {  // d:f16, m:f16, qs:uint8[16]; x = d * q + m
  static constexpr int unit_values = 32, unit_bytes = 20, pieces = 4;
  static constexpr bool is_float = false, has_offset = true, offset_by_piece = false;
  static __device__ __forceinline__ void piece(const uint8_t* u, int p, int& q0, int& q1, float& scale, float& offset) {
    uint32_t n0, n1;
    lathe_gemv_nibbles32(u + 4, p, n0, n1);
    scale = lathe_f16(u);
    offset = lathe_f16(u + 2);
    q0 = static_cast<int>(n0);
    q1 = static_cast<int>(n1);
  }
};

// Q5 levels: nibbles as Q4_0, bit j of the little-endian qh is the fifth bit of value j.
__device__ __forceinline__ void lathe_gemv_levels5(const uint8_t* qh, const uint8_t* qs, int p, uint32_t& l0, uint32_t& l1) {
  uint32_t n0, n1;
  lathe_gemv_nibbles32(qs, p, n0, n1);
  const uint32_t h = (lathe_gemv_ld32(qh) >> (8 * p)) & 0xFFu;
  l0 = n0 | lathe_gemv_spread4(h & 0xFu);
  l1 = n1 | lathe_gemv_spread4(h >> 4);
}

struct lathe_gemv_q5_0 {  // d:f16, qh:uint8[4], qs:uint8[16]; x = d * (q - 16)
  static constexpr int unit_values = 32, unit_bytes = 22, pieces = 4;
  static constexpr bool is_float = false, has_offset = false;
  static __device__ __forceinline__ void piece(const uint8_t* u, int p, int& q0, int& q1, float& scale, float& offset) {
    uint32_t l0, l1;
    lathe_gemv_levels5(u + 2, u + 6, p, l0, l1);
    scale = lathe_f16(u);
    offset = 0.0f;
    q0 = lathe_gemv_bias(l0, 16);
    q1 = lathe_gemv_bias(l1, 16);
  }
};

struct lathe_gemv_q5_1 {  // d:f16, m:f16, qh:uint8[4], qs:uint8[16]; x = d * q + m
  static constexpr int unit_values = 32, unit_bytes = 24, pieces = 4;
  static constexpr bool is_float = false, has_offset = true, offset_by_piece = false;
  static __device__ __forceinline__ void piece(const uint8_t* u, int p, int& q0, int& q1, float& scale, float& offset) {
    uint32_t l0, l1;
    lathe_gemv_levels5(u + 4, u + 8, p, l0, l1);
    scale = lathe_f16(u);
    offset = lathe_f16(u + 2);
    q0 = static_cast<int>(l0);
    q1 = static_cast<int>(l1);
  }
};

// Q4_K / Q5_K: piece p lies in sub-block s = p / 4 (32 values), at l = 8 (p % 4) within it; its
// nibbles are the low (s even) or high (s odd) halves of qs[32 (s / 2) + l ..]; x = d*sc * q - dmin*m.
__device__ __forceinline__ void lathe_gemv_k4_scales(const uint8_t* u, int s, float& scale, float& offset) {
  int sc, m;
  lathe_k4_scale_min(u + 4, s, sc, m);
  scale = __fmul_rn(lathe_f16(u), static_cast<float>(sc));
  offset = -__fmul_rn(lathe_f16(u + 2), static_cast<float>(m));
}

struct lathe_gemv_q4_k {  // d:f16, dmin:f16, scales:uint8[12], qs:uint8[128]
  static constexpr int unit_values = 256, unit_bytes = 144, pieces = 32;
  static constexpr bool is_float = false, has_offset = true, offset_by_piece = false;
  static __device__ __forceinline__ void piece(const uint8_t* u, int p, int& q0, int& q1, float& scale, float& offset) {
    const int s = p >> 2, l = 8 * (p & 3), shift = 4 * (s & 1);
    const uint8_t* qs = u + 16 + 32 * (s >> 1) + l;
    lathe_gemv_k4_scales(u, s, scale, offset);
    q0 = static_cast<int>((lathe_gemv_ld32(qs) >> shift) & 0x0F0F0F0Fu);
    q1 = static_cast<int>((lathe_gemv_ld32(qs + 4) >> shift) & 0x0F0F0F0Fu);
  }
};

struct lathe_gemv_q5_k {  // d:f16, dmin:f16, scales:uint8[12], qh:uint8[32], qs:uint8[128]
  static constexpr int unit_values = 256, unit_bytes = 176, pieces = 32;
  static constexpr bool is_float = false, has_offset = true, offset_by_piece = false;
  static __device__ __forceinline__ void piece(const uint8_t* u, int p, int& q0, int& q1, float& scale, float& offset) {
    const int s = p >> 2, l = 8 * (p & 3), shift = 4 * (s & 1);
    const uint8_t* qs = u + 48 + 32 * (s >> 1) + l;
    const uint8_t* qh = u + 16 + l;  // bit s of qh[l] is the fifth bit of value l of sub-block s
    lathe_gemv_k4_scales(u, s, scale, offset);
    q0 = static_cast<int>(((lathe_gemv_ld32(qs) >> shift) & 0x0F0F0F0Fu) | (((lathe_gemv_ld32(qh) >> s) & 0x01010101u) << 4));
    q1 = static_cast<int>(((lathe_gemv_ld32(qs + 4) >> shift) & 0x0F0F0F0Fu) |
                          (((lathe_gemv_ld32(qh + 4) >> s) & 0x01010101u) << 4));
  }
};

// Q2_K and Q3_K: value v = 128 h + 32 j + l (l < 32) has its low 2 bits at bits 2 j of qs[32 h + l]
// and belongs to sub-block 8 h + 2 j + l / 16; a piece (8 values from l = 8 (p % 4)) shares h, j and
// its sub-block.
// Q2_K: the low nibble of scales[s] scales sub-block s, its high nibble is its min;
// x = (d * sc) * q - dmin * m.
struct lathe_gemv_q2_k {  // scales:uint8[16], qs:uint8[64], d:f16, dmin:f16
  static constexpr int unit_values = 256, unit_bytes = 84, pieces = 32;
  static constexpr bool is_float = false, has_offset = true, offset_by_piece = true;  // a min a 16 values
  static __device__ __forceinline__ void piece(const uint8_t* u, int p, int& q0, int& q1, float& scale, float& offset) {
    const int h = p >> 4, j = (p >> 2) & 3, l = 8 * (p & 3);
    const uint8_t* qs = u + 16 + 32 * h + l;
    const int sc = u[8 * h + 2 * j + (l >> 4)];
    scale = __fmul_rn(lathe_f16(u + 80), static_cast<float>(sc & 0xF));
    offset = -__fmul_rn(lathe_f16(u + 82), static_cast<float>(sc >> 4));
    q0 = static_cast<int>((lathe_gemv_ld32(qs) >> (2 * j)) & 0x03030303u);
    q1 = static_cast<int>((lathe_gemv_ld32(qs + 4) >> (2 * j)) & 0x03030303u);
  }
};

// Q3_K: 6-bit scales stored minus 32 (scale s: low 4 bits the low nibble of scales[s] for s < 8, else
// the high nibble of scales[s - 8]; top 2 bits at bits 2 (s / 4) of scales[8 + s % 4]); bit 4 h + j of
// hmask[l] clear takes 4 off the level; x = (d * (scale - 32)) * q.
struct lathe_gemv_q3_k {  // hmask:uint8[32], qs:uint8[64], scales:uint8[12], d:f16
  static constexpr int unit_values = 256, unit_bytes = 110, pieces = 32;
  static constexpr bool is_float = false, has_offset = false;
  static __device__ __forceinline__ void piece(const uint8_t* u, int p, int& q0, int& q1, float& scale, float& offset) {
    const int h = p >> 4, j = (p >> 2) & 3, l = 8 * (p & 3);
    const int s = 8 * h + 2 * j + (l >> 4);
    const uint8_t* scales = u + 96;
    const int low = s < 8 ? (scales[s] & 0xF) : (scales[s - 8] >> 4);
    const int high = (scales[8 + (s & 3)] >> (2 * (s >> 2))) & 3;
    scale = __fmul_rn(lathe_f16(u + 108), static_cast<float>((low | (high << 4)) - 32));
    offset = 0.0f;
    const uint8_t* qs = u + 32 + 32 * h + l;
    const int hb = 4 * h + j;  // the hmask bit of these values
    // levels 0..7 (the low 2 bits, and 4 where the hmask bit is set), less 4
    const uint32_t a = ((lathe_gemv_ld32(qs) >> (2 * j)) & 0x03030303u) | (((lathe_gemv_ld32(u + l) >> hb) & 0x01010101u) << 2);
    const uint32_t b =
        ((lathe_gemv_ld32(qs + 4) >> (2 * j)) & 0x03030303u) | (((lathe_gemv_ld32(u + l + 4) >> hb) & 0x01010101u) << 2);
    q0 = lathe_gemv_bias(a, 4);
    q1 = lathe_gemv_bias(b, 4);
  }
};

// Q6_K: value v = 128 h + 32 kk + l has its low 4 bits in ql[64 h + 32 (kk % 2) + l] (low nibble for
// kk < 2), its high 2 bits at bits 2 kk of qh[32 h + l]; scale index 8 h + 2 kk + l / 16;
// x = (d * scale) * (q - 32).
struct lathe_gemv_q6_k {  // ql:uint8[128], qh:uint8[64], scales:int8[16], d:f16
  static constexpr int unit_values = 256, unit_bytes = 210, pieces = 32;
  static constexpr bool is_float = false, has_offset = false;
  static __device__ __forceinline__ void piece(const uint8_t* u, int p, int& q0, int& q1, float& scale, float& offset) {
    const int h = p >> 4, kk = (p >> 2) & 3, l = 8 * (p & 3);
    const uint8_t* ql = u + 64 * h + 32 * (kk & 1) + l;
    const uint8_t* qh = u + 128 + 32 * h + l;
    const int lo_shift = 4 * (kk >> 1), hi_shift = 2 * kk;
    const uint32_t a = ((lathe_gemv_ld32(ql) >> lo_shift) & 0x0F0F0F0Fu) | (((lathe_gemv_ld32(qh) >> hi_shift) & 0x03030303u) << 4);
    const uint32_t b = ((lathe_gemv_ld32(ql + 4) >> lo_shift) & 0x0F0F0F0Fu) |
                       (((lathe_gemv_ld32(qh + 4) >> hi_shift) & 0x03030303u) << 4);
    scale = __fmul_rn(lathe_f16(u + 208), static_cast<float>(static_cast<int8_t>(u[192 + 8 * h + 2 * kk + (l >> 4)])));
    offset = 0.0f;
    q0 = lathe_gemv_bias(a, 32);
    q1 = lathe_gemv_bias(b, 32);
  }
};

// The float formats: a unit is one piece of 8 values, 16-byte aligned.
struct lathe_gemv_f32 {
  static constexpr int unit_values = 8, unit_bytes = 32, pieces = 1;
  static constexpr bool is_float = true, has_offset = false;
  static __device__ __forceinline__ void values(const uint8_t* u, float* w) {
    const float4 a = *reinterpret_cast<const float4*>(u), b = *reinterpret_cast<const float4*>(u + 16);
    w[0] = a.x; w[1] = a.y; w[2] = a.z; w[3] = a.w; w[4] = b.x; w[5] = b.y; w[6] = b.z; w[7] = b.w;
  }
};

struct lathe_gemv_f16 {
  static constexpr int unit_values = 8, unit_bytes = 16, pieces = 1;
  static constexpr bool is_float = true, has_offset = false;
  static __device__ __forceinline__ void values(const uint8_t* u, float* w) {
    const uint4 v = *reinterpret_cast<const uint4*>(u);
    const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&words[i]));
      w[2 * i] = f.x;
      w[2 * i + 1] = f.y;
    }
  }
};

struct lathe_gemv_bf16 {
  static constexpr int unit_values = 8, unit_bytes = 16, pieces = 1;
  static constexpr bool is_float = true, has_offset = false;
  static __device__ __forceinline__ void values(const uint8_t* u, float* w) {
    const uint4 v = *reinterpret_cast<const uint4*>(u);
    const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      w[2 * i] = __uint_as_float(words[i] << 16);
      w[2 * i + 1] = __uint_as_float(words[i] & 0xFFFF0000u);
    }
  }
};

// The 8 f32 values of piece p of a unit, exactly as dequantize_row gives them.
template <class F>
__device__ __forceinline__ void lathe_gemv_dequant8(const uint8_t* u, int p, float* w) {
  if constexpr (F::is_float) {
    F::values(u, w);
  } else {
    int q0, q1;
    float scale, offset;
    F::piece(u, p, q0, q1, scale, offset);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int word = i < 4 ? q0 : q1;
      const int q = lathe_gemv_sbyte(static_cast<uint32_t>(word), i & 3);
      const float v = __fmul_rn(scale, lathe_gemv_i2f(q));
      w[i] = F::has_offset ? __fadd_rn(v, offset) : v;
    }
  }
}
