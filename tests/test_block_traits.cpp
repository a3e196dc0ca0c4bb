// The device's block decoders (src/kernels/gemv_blocks.cuh: one trait a format, which every product,
// gather and batched product reads through) compiled for the host and checked against the CPU's
// dequantize_row, bit for bit, for every piece of every block: quantized random rows of each format
// and blocks of random bytes (their f16 fields kept finite). No GPU needed: the traits are plain
// arithmetic on bytes; CUDA's headers give the host the f16 types, and the few device helpers they
// call from common.cuh are given here in host form (the f16 loads, the K formats' 6-bit scales).
#include "gguf/block_codecs.h"
#include "gguf/block_format.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

// What gemv_blocks.cuh takes from common.cuh and the device's intrinsics, for the host. The products
// and sums are single IEEE roundings on the host as on the device (no fused multiply-add here:
// -ffp-contract is off for C++ on x86-64 unless asked).
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __int_as_float(int i) { return std::bit_cast<float>(i); }
inline float __uint_as_float(unsigned i) { return std::bit_cast<float>(i); }
inline float lathe_f16(const uint8_t* p) { return lathe::blocks::load_f16(p); }
inline void lathe_k4_scale_min(const uint8_t* s, int j, int& sc, int& m) {
  uint8_t a, b;
  lathe::blocks::k4_scale_min(j, s, &a, &b);
  sc = a;
  m = b;
}

#include "kernels/gemv_blocks.cuh"  // (tests/CMakeLists.txt: -Wno-unknown-pragmas -fno-strict-aliasing)

// And what gemm_f16_blocks.cuh's formats (the f16 and wgmma prefill GEMMs' weights) take from
// gemm_f16.cuh and common.cuh: an f16 read, a byte as a float less a bias, two values rounded to f16
// and packed, words from a 2-byte aligned address.
inline float lathe_gf16_half_at(const uint8_t* p) { return lathe::blocks::load_f16(p); }
inline float lathe_gf16_byte(uint32_t u, int b, float bias) { return static_cast<float>((u >> (8 * b)) & 255u) - bias; }
inline uint32_t lathe_gf16_pack(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  uint32_t w;
  std::memcpy(&w, &h, 4);
  return w;
}
template <int N>
void lathe_gemm_words(const uint8_t* p, uint32_t* out) {
  std::memcpy(out, p, 4 * N);
}
inline int min(int a, int b) { return a < b ? a : b; }
#define LATHE_GF16_FORMATS_ONLY 1
#include "kernels/gemm_f16_blocks.cuh"

// And what gemv_blocks_walk.cuh's row-walk pieces take: shared-memory loads at 32-bit addresses,
// given here over a host buffer that stands for the block's shared memory, and the funnel shift.
// A test may mark a range of it as not the block's (g_unowned: past what the kernel lays out there);
// a load that touches it is counted in g_unowned_reads, as the device would fault on it.
alignas(16) uint8_t g_shared[1 << 14];
struct UnownedRange {
  unsigned lo = 0, hi = 0;
};
UnownedRange g_unowned;
std::atomic<int> g_unowned_reads{0};
inline const uint8_t* host_shared(unsigned a, unsigned bytes) {
  if (a < g_unowned.hi && a + bytes > g_unowned.lo) ++g_unowned_reads;
  return g_shared + a;
}
inline uint32_t lathe_lds32(unsigned a) {
  uint32_t v;
  std::memcpy(&v, host_shared(a, 4), 4);
  return v;
}
inline unsigned short lathe_lds16(unsigned a) {
  unsigned short v;
  std::memcpy(&v, host_shared(a, 2), 2);
  return v;
}
inline uint4 lathe_lds128u(unsigned a) {
  uint4 v;
  std::memcpy(&v, host_shared(a, 16), 16);
  return v;
}
inline uint32_t __funnelshift_r(uint32_t lo, uint32_t hi, uint32_t sh) {
  return static_cast<uint32_t>(((static_cast<uint64_t>(hi) << 32) | lo) >> (sh & 31u));
}
#define LATHE_HOST_SHARED_LOADS 1
#include "kernels/gemv_blocks_walk.cuh"

// And the decode tiles' units (gemv_decode_tiles.cuh's lathe_gemv1t_fmt_*: a lane's part of x, a
// unit's mma and terms), run by 32 host threads as one warp: threadIdx, the 8-byte and float4 loads,
// and mma.m16n8k32 (A u8 or s8 16 x 32, B s8 32 x 8, s32 sums) over the fragments every lane gives,
// in PTX's fragment layout (lane 4 g + t: A rows g and g + 8, k 4t.. and 16 + 4t..; B column g, the
// same k; C rows g and g + 8, columns 2t and 2t + 1).
struct HostThreadIdx {
  unsigned x;
};
thread_local HostThreadIdx lathe_host_thread_idx;
#define threadIdx lathe_host_thread_idx
inline uint2 lathe_lds64u(unsigned a) {
  uint2 v;
  std::memcpy(&v, host_shared(a, 8), 8);
  return v;
}
inline float4 lathe_lds128f(unsigned a) {
  float4 v;
  std::memcpy(&v, host_shared(a, 16), 16);
  return v;
}
inline int4 lathe_lds128(unsigned a) {
  int4 v;
  std::memcpy(&v, host_shared(a, 16), 16);
  return v;
}
inline int __dp4a(int a, int b, int c) {  // four signed byte products added to c
  for (int i = 0; i < 4; ++i) c += static_cast<int8_t>(a >> (8 * i)) * static_cast<int8_t>(b >> (8 * i));
  return c;
}
inline uint32_t __vneg4(uint32_t v) {
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<uint32_t>(static_cast<uint8_t>(-static_cast<int8_t>(v >> (8 * i)))) << (8 * i);
  return r;
}
struct HostWarpMma {
  uint32_t a[32][4], b[32][2];
  std::barrier<>* sync = nullptr;
};
HostWarpMma g_mma;
template <bool ASigned>
void host_mma(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) {
  const unsigned lane = threadIdx.x & 31;
  g_mma.a[lane][0] = a0, g_mma.a[lane][1] = a1, g_mma.a[lane][2] = a2, g_mma.a[lane][3] = a3;
  g_mma.b[lane][0] = b0, g_mma.b[lane][1] = b1;
  g_mma.sync->arrive_and_wait();
  const unsigned g = lane >> 2, t = lane & 3;
  for (int i = 0; i < 4; ++i) {
    const unsigned row = i < 2 ? g : g + 8, col = 2 * t + (i & 1);
    int sum = 0;
    for (unsigned k = 0; k < 32; ++k) {
      const uint32_t aw = g_mma.a[(row % 8) * 4 + (k % 16) / 4][(row >= 8 ? 1 : 0) + (k >= 16 ? 2 : 0)];
      const uint32_t bw = g_mma.b[col * 4 + (k % 16) / 4][k >= 16 ? 1 : 0];
      const uint8_t ab = static_cast<uint8_t>(aw >> (8 * (k % 4)));
      const int av = ASigned ? static_cast<int8_t>(ab) : static_cast<int>(ab);
      sum += av * static_cast<int8_t>(bw >> (8 * (k % 4)));
    }
    c[i] += sum;
  }
  g_mma.sync->arrive_and_wait();  // every lane has read the fragments before any lane writes new ones
}
// A warp's shuffle by xor among the 32 host threads of a warp (the mma's barrier), float values.
float g_shfl[32];
inline float __shfl_xor_sync(unsigned /*mask*/, float v, int lane_mask) {
  const unsigned lane = threadIdx.x & 31;
  g_shfl[lane] = v;
  g_mma.sync->arrive_and_wait();
  const float got = g_shfl[lane ^ static_cast<unsigned>(lane_mask)];
  g_mma.sync->arrive_and_wait();  // every lane has read before any lane writes again
  return got;
}
inline void lathe_mma_u8s8(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) {
  host_mma<false>(c, a0, a1, a2, a3, b0, b1);
}
inline void lathe_mma_s8s8(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) {
  host_mma<true>(c, a0, a1, a2, a3, b0, b1);
}
#define LATHE_GEMV1_WARPS 16
#define LATHE_GEMV1_STAGES 4
#define LATHE_GEMV1_SLOT 2560
#define LATHE_HOST_TILE_UNITS 1
#include "kernels/gemv_decode_tiles.cuh"
#undef threadIdx

namespace lathe {
namespace {

using Decode8 = void (*)(const uint8_t* unit, int piece, float* w);

struct Trait {
  GgmlType type;
  Decode8 decode;
  int unit_values, unit_bytes;
};

template <class F>
Trait trait_of(GgmlType t) {
  return {t, &lathe_gemv_dequant8<F>, F::unit_values, F::unit_bytes};
}

const Trait kTraits[] = {
    trait_of<lathe_gemv_q8_0>(GgmlType::Q8_0), trait_of<lathe_gemv_q4_0>(GgmlType::Q4_0),
    trait_of<lathe_gemv_q4_1>(GgmlType::Q4_1), trait_of<lathe_gemv_q5_0>(GgmlType::Q5_0),
    trait_of<lathe_gemv_q5_1>(GgmlType::Q5_1), trait_of<lathe_gemv_q2_k>(GgmlType::Q2_K),
    trait_of<lathe_gemv_q3_k>(GgmlType::Q3_K), trait_of<lathe_gemv_q4_k>(GgmlType::Q4_K),
    trait_of<lathe_gemv_q5_k>(GgmlType::Q5_K), trait_of<lathe_gemv_q6_k>(GgmlType::Q6_K),
    trait_of<lathe_gemv_f32>(GgmlType::F32),   trait_of<lathe_gemv_f16>(GgmlType::F16),
    trait_of<lathe_gemv_bf16>(GgmlType::BF16),
};

// Where a block keeps its f16 scale fields (bytes), for random blocks: kept finite so that the two
// sides' NaNs (whose sign an x - y and an x + (-y) may give differently) do not enter.
std::vector<int> f16_fields(GgmlType t) {
  switch (t) {
    case GgmlType::Q8_0: case GgmlType::Q4_0: case GgmlType::Q5_0: return {0};
    case GgmlType::Q4_1: case GgmlType::Q5_1: return {0, 2};
    case GgmlType::Q2_K: return {80, 82};
    case GgmlType::Q3_K: return {108};
    case GgmlType::Q4_K: case GgmlType::Q5_K: return {0, 2};
    case GgmlType::Q6_K: return {208};
    default: return {};
  }
}

// Every piece of every unit of `row` (n values of type t) through the trait, against dequantize_row.
void expect_pieces_match(const Trait& tr, const std::vector<uint8_t>& row, int64_t n, const char* what) {
  std::vector<float> want(static_cast<size_t>(n));
  dequantize_row(tr.type, row.data(), want.data(), n);
  const int pieces = tr.unit_values / 8;
  for (int64_t u = 0; u < n / tr.unit_values; ++u)
    for (int p = 0; p < pieces; ++p) {
      float got[8];
      tr.decode(row.data() + u * tr.unit_bytes, p, got);
      for (int i = 0; i < 8; ++i) {
        const float w = want[static_cast<size_t>(u * tr.unit_values + 8 * p + i)];
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(w))
            << ggml_type_name(tr.type) << " " << what << ": unit " << u << " piece " << p << " value " << i << ": "
            << got[i] << " against " << w;
      }
    }
}

TEST(BlockTraits, EveryFormatsPiecesAreDequantizeRowsBits) {
  std::mt19937 rng(2026);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255);
  const int64_t n = 4096;
  for (const Trait& tr : kTraits) {
    const BlockFormat& f = block_format(tr.type);
    const int64_t block = f.block_size;
    EXPECT_EQ(tr.unit_values % block, 0) << ggml_type_name(tr.type);
    EXPECT_EQ(static_cast<int64_t>(tr.unit_bytes), row_bytes(tr.type, tr.unit_values)) << ggml_type_name(tr.type);
    for (int rep = 0; rep < 4; ++rep) {
      std::vector<float> values(static_cast<size_t>(n));
      for (float& v : values) v = normal(rng) * (rep == 3 ? 1e-3f : 1.0f);
      std::vector<uint8_t> row(static_cast<size_t>(row_bytes(tr.type, n)));
      quantize_row(tr.type, values.data(), row.data(), n);
      expect_pieces_match(tr, row, n, "quantized");
      if (tr.type == GgmlType::F32 || tr.type == GgmlType::F16 || tr.type == GgmlType::BF16) continue;
      for (uint8_t& b : row) b = static_cast<uint8_t>(byte(rng));
      for (int64_t u = 0; u < n / block; ++u)
        for (int at : f16_fields(tr.type)) blocks::store_f16(row.data() + u * f.block_bytes + at, normal(rng));
      expect_pieces_match(tr, row, n, "random bytes");
    }
  }
}

// The f16 GEMMs' formats: chunk c (64 values) of a row staged as the kernel stages it (line l from
// line(), 16 bytes, zeros where line() says it is not read), then dequant() for its two halves, against
// dequantize_row rounded to f16. The offset formats (Q2_K, Q4_K, Q5_K) form d sc q - dmin m with one fused
// multiply-add where dequantize_row rounds the product first: at most one f16 step apart, rarely.
template <class F>
void expect_gf16_chunks_match(GgmlType t, const std::vector<uint8_t>& matrix, int64_t rows, int64_t k) {
  const int64_t rb = row_bytes(t, k);
  std::vector<float> want(static_cast<size_t>(k));
  int64_t off_by_one = 0, values = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = matrix.data() + r * rb;
    dequantize_row(t, row, want.data(), k);
    for (int c = 0; c < (k + 63) / 64; ++c) {
      alignas(16) uint8_t raw[16 * 16] = {};
      for (int l = 0; l < F::lines; ++l) {
        const uint8_t* src = nullptr;
        if (F::line(row, static_cast<int>(k), c, l, src)) std::memcpy(raw + 16 * l, src, 16);
      }
      for (int h = 0; h < 2; ++h) {
        uint32_t v[16];
        F::dequant(raw, reinterpret_cast<size_t>(row), static_cast<int>(k), c, h, v);
        for (int i = 0; i < 32; ++i) {
          const int64_t at = 64 * c + 32 * h + i;
          const uint16_t got = static_cast<uint16_t>(v[i / 2] >> (16 * (i % 2)));
          const uint16_t exp = at < k ? f32_to_f16(want[static_cast<size_t>(at)]) : 0;
          const int step = std::abs(static_cast<int>(got) - static_cast<int>(exp));
          ASSERT_LE(step, 1) << ggml_type_name(t) << ": row " << r << " chunk " << c << " value " << 32 * h + i;
          off_by_one += step;
          ++values;
        }
      }
    }
  }
  EXPECT_LE(off_by_one * 1000, values) << ggml_type_name(t) << ": " << off_by_one << " of " << values << " one f16 step off";
  if (t == GgmlType::Q8_0 || t == GgmlType::Q3_K || t == GgmlType::Q6_K) {
    EXPECT_EQ(off_by_one, 0) << ggml_type_name(t);  // no offset: the same two roundings as dequantize_row
  }
}

TEST(BlockTraits, TheF16GemmsChunksAreDequantizeRowsInF16) {
  std::mt19937 rng(38);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t rows = 24;
  for (const GgmlType t : {GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    for (const int64_t k : {int64_t{256}, int64_t{1280}, t == GgmlType::Q8_0 ? int64_t{96} : int64_t{2048}, int64_t{12288}}) {
      // Rows back to back from a 16-byte aligned base (Q6_K's and Q8_0's rows start at any even
      // offset), with a line of room past the last.
      const int64_t rb = row_bytes(t, k);
      std::vector<uint8_t> matrix(static_cast<size_t>(rows * rb + 64));
      std::vector<float> values(static_cast<size_t>(k));
      for (int64_t r = 0; r < rows; ++r) {
        for (float& v : values) v = normal(rng);
        quantize_row(t, values.data(), matrix.data() + r * rb, k);
      }
      SCOPED_TRACE(k);
      switch (t) {
        case GgmlType::Q8_0: expect_gf16_chunks_match<lathe_gf16_q8_0>(t, matrix, rows, k); break;
        case GgmlType::Q2_K: expect_gf16_chunks_match<lathe_gf16_q2_k>(t, matrix, rows, k); break;
        case GgmlType::Q3_K: expect_gf16_chunks_match<lathe_gf16_q3_k>(t, matrix, rows, k); break;
        case GgmlType::Q4_K: expect_gf16_chunks_match<lathe_gf16_q4_k>(t, matrix, rows, k); break;
        case GgmlType::Q5_K: expect_gf16_chunks_match<lathe_gf16_q5_k>(t, matrix, rows, k); break;
        default: expect_gf16_chunks_match<lathe_gf16_q6_k>(t, matrix, rows, k); break;
      }
    }
  }
}

// The decode row walk's pieces (gemv_blocks_walk.cuh): a unit placed in "shared memory" as the walk
// stages it (16-byte aligned for the K formats; Q8_0's and Q6_K's units at any even offset, read from
// the word below with m = offset % 4), each piece j read in both lane orders sw; its 8 words' levels
// (half sw first) times sa (half 0) or sb (half 1) plus offset, against dequantize_row, bit for bit.
template <class F>
void expect_walk_pieces_match(GgmlType t, const std::vector<uint8_t>& row, int64_t n, const char* what) {
  std::vector<float> want(static_cast<size_t>(n));
  dequantize_row(t, row.data(), want.data(), n);
  for (int64_t u = 0; u < n / F::unit_values; ++u)
    for (const unsigned at : {256u, 258u, 260u}) {
      if (at % 16 != 0 && F::unit_bytes % 16 == 0) continue;  // units of whole 16-byte lines stay aligned
      if (at % 4 != 0 && F::unit_bytes % 4 == 0) continue;    // and units of whole words word-aligned
      std::memcpy(g_shared + at, row.data() + u * F::unit_bytes, F::unit_bytes);
      for (int j = 0; j < F::pieces; ++j)
        for (int sw = 0; sw < 2; ++sw) {
          uint32_t q[8];
          float sa, sb, offset, offset_b = 0.0f;
          if constexpr (F::two_offsets)
            F::piece(at & ~3u, at & 3u, j, sw, q, sa, sb, offset, offset_b);
          else
            F::piece(at & ~3u, at & 3u, j, sw, q, sa, sb, offset);
          for (int half = 0; half < 2; ++half)
            for (int i = 0; i < 16; ++i) {
              const uint32_t word = q[(half == sw ? 0 : 4) + i / 4];
              const int level = static_cast<int8_t>(word >> (8 * (i % 4)));
              const float scaled = (half == 0 ? sa : sb) * static_cast<float>(level);
              // (+0 would turn a -0 into +0)
              const float got = F::two_offsets ? scaled + (half == 0 ? offset : offset_b)
                                : F::has_offset ? scaled + offset
                                                : scaled;
              const float w = want[static_cast<size_t>(u * F::unit_values + 32 * j + 16 * half + i)];
              ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(w))
                  << ggml_type_name(t) << " " << what << ": unit " << u << " at " << at << " piece " << j << " sw " << sw
                  << " value " << 16 * half + i << ": " << got << " against " << w;
            }
        }
    }
}

TEST(BlockTraits, TheDecodeWalksPiecesAreDequantizeRowsBits) {
  std::mt19937 rng(39);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255);
  const int64_t n = 2048;
  for (const GgmlType t : {GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    for (int rep = 0; rep < 3; ++rep) {
      std::vector<float> values(static_cast<size_t>(n));
      for (float& v : values) v = normal(rng) * (rep == 2 ? 1e-3f : 1.0f);
      std::vector<uint8_t> row(static_cast<size_t>(row_bytes(t, n)));
      quantize_row(t, values.data(), row.data(), n);
      for (int pass = 0; pass < 2; ++pass) {
        const char* what = pass == 0 ? "quantized" : "random bytes";
        if (pass == 1) {
          const BlockFormat& f = block_format(t);
          for (uint8_t& b : row) b = static_cast<uint8_t>(byte(rng));
          for (int64_t u = 0; u < n / f.block_size; ++u)
            for (int at : f16_fields(t)) blocks::store_f16(row.data() + u * f.block_bytes + at, normal(rng));
        }
        switch (t) {
          case GgmlType::Q8_0: expect_walk_pieces_match<lathe_gemv1_q8_0>(t, row, n, what); break;
          case GgmlType::Q2_K: expect_walk_pieces_match<lathe_gemv1_q2_k>(t, row, n, what); break;
          case GgmlType::Q3_K: expect_walk_pieces_match<lathe_gemv1_q3_k>(t, row, n, what); break;
          case GgmlType::Q4_K: expect_walk_pieces_match<lathe_gemv1_q4_k>(t, row, n, what); break;
          case GgmlType::Q5_K: expect_walk_pieces_match<lathe_gemv1_q5_k>(t, row, n, what); break;
          case GgmlType::Q6_K: expect_walk_pieces_match<lathe_gemv1_q6_k>(t, row, n, what); break;
          default: FAIL();
        }
      }
    }
  }
}

// The decode tiles' units on the host (above: 32 threads as one warp, mma as PTX defines it): 16 rows
// of one unit (256 values) in a slot as a TMA box lays them (rows `box` bytes apart), x's int8x2 (or
// int8) levels and (d1, d2, sum) as the row walk stages them, every lane's x_of and chunk, the lanes'
// sums a row against the f64 sum of dequantize_row's weights times x's levels. Q4_K's and Q6_K's
// (measured on the GPU since the twenty-first and twenty-third sessions) check the emulation; Q5_K's,
// Q3_K's and Q2_K's are the new ones. `o`: the unit's bytes into each box row (Q6_K's and Q3_K's units lie
// 0-14 bytes in, read as words 2 bytes past a word where o % 4 == 2).
template <class F, int C>
void expect_tile_unit_matches(GgmlType t, std::mt19937& rng, unsigned o = 0) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> level(-127, 127);
  const int k = 256, rows = 16;
  const int64_t rb = row_bytes(t, k);
  std::vector<uint8_t> tile(static_cast<size_t>(rows * rb));
  std::vector<float> values(k), w(static_cast<size_t>(rows * k));
  for (int r = 0; r < rows; ++r) {
    for (float& v : values) v = normal(rng);
    quantize_row(t, values.data(), tile.data() + r * rb, k);
    dequantize_row(t, tile.data() + r * rb, w.data() + r * k, k);
  }
  std::memset(g_shared, 0, sizeof g_shared);
  const unsigned s = 0, sx = 8192, sds = 12288;
  for (int r = 0; r < rows; ++r)
    std::memcpy(g_shared + s + r * F::box + o, tile.data() + r * rb, static_cast<size_t>(rb));
  std::vector<int8_t> q1(k), q2(k);
  std::vector<double> x(k);
  for (int b = 0; b < k / 32; ++b) {
    const float d1 = std::abs(normal(rng)) * 0.01f + 1e-3f, d2 = C == 2 ? d1 / 127.0f : 0.0f;
    int s1 = 0, s2 = 0;
    for (int i = 32 * b; i < 32 * b + 32; ++i) {
      q1[i] = static_cast<int8_t>(level(rng));
      q2[i] = C == 2 ? static_cast<int8_t>(level(rng)) : 0;
      s1 += q1[i], s2 += q2[i];
      x[i] = static_cast<double>(d1) * q1[i] + static_cast<double>(d2) * q2[i];
    }
    const float4 ds = {d1, d2, d1 * static_cast<float>(s1) + d2 * static_cast<float>(s2), 0.0f};
    std::memcpy(g_shared + sds + 16 * b, &ds, 16);
  }
  std::memcpy(g_shared + sx, q1.data(), k);
  std::memcpy(g_shared + sx + k, q2.data(), k);
  // int8 stages q1 alone: what lies past it is not x's (on the device, the end of shared memory may be).
  g_unowned = C == 2 ? UnownedRange{} : UnownedRange{sx + k, sds};
  g_unowned_reads = 0;
  float acc[32][2] = {};
  std::barrier<> sync(32);
  g_mma.sync = &sync;
  std::vector<std::thread> lanes;
  for (unsigned lane = 0; lane < 32; ++lane)
    lanes.emplace_back([&, lane] {
      lathe_host_thread_idx.x = lane;
      const typename F::lane_x lx = F::template x_lane<C>(sx, sds, k);
      const typename F::xfrag xf = F::template x_of<C>(lx, 0);
      F::template chunk<C>(s, o, xf, acc[lane][0], acc[lane][1]);
    });
  for (std::thread& l : lanes) l.join();
  g_unowned = {};
  EXPECT_EQ(g_unowned_reads.load(), 0) << ggml_type_name(t) << " C " << C << ": loads past x's int8 levels";
  for (int r = 0; r < rows; ++r) {
    double got = 0, want = 0, scale = 0;
    for (int tt = 0; tt < 4; ++tt) got += acc[4 * (r % 8) + tt][r < 8 ? 0 : 1];
    for (int i = 0; i < k; ++i) {
      want += static_cast<double>(w[static_cast<size_t>(r * k + i)]) * x[i];
      scale += std::abs(static_cast<double>(w[static_cast<size_t>(r * k + i)]) * x[i]);
    }
    EXPECT_NEAR(got, want, 1e-5 * scale) << ggml_type_name(t) << " C " << C << " row " << r << " at " << o;
  }
}

TEST(BlockTraits, TheDecodeTilesUnitsOnAHostWarp) {
  std::mt19937 rng(40);
  for (int rep = 0; rep < 3; ++rep) {
    expect_tile_unit_matches<lathe_gemv1t_fmt_q4_k, 2>(GgmlType::Q4_K, rng);
    expect_tile_unit_matches<lathe_gemv1t_fmt_q4_k, 1>(GgmlType::Q4_K, rng);
    expect_tile_unit_matches<lathe_gemv1t_fmt_q5_k, 2>(GgmlType::Q5_K, rng);
    expect_tile_unit_matches<lathe_gemv1t_fmt_q5_k, 1>(GgmlType::Q5_K, rng);
    for (unsigned o = 0; o < 16; o += 2) {  // every offset a warp's units take in their boxes
      expect_tile_unit_matches<lathe_gemv1t_fmt_q6_k, 2>(GgmlType::Q6_K, rng, o);
      expect_tile_unit_matches<lathe_gemv1t_fmt_q6_k, 1>(GgmlType::Q6_K, rng, o);
      expect_tile_unit_matches<lathe_gemv1t_fmt_q3_k, 2>(GgmlType::Q3_K, rng, o);
      expect_tile_unit_matches<lathe_gemv1t_fmt_q3_k, 1>(GgmlType::Q3_K, rng, o);
      if (o % 4 == 0) {  // Q2_K's 84-byte units lie 4 c % 16 bytes in
        expect_tile_unit_matches<lathe_gemv1t_fmt_q2_k, 2>(GgmlType::Q2_K, rng, o);
        expect_tile_unit_matches<lathe_gemv1t_fmt_q2_k, 1>(GgmlType::Q2_K, rng, o);
      }
    }
  }
}

}  // namespace
}  // namespace lathe
