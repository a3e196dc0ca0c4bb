// The Hopper wgmma prefill product with the WEIGHTS in registers (sm_90a only): y^T tiles, wgmma's
// A operand = 64 dequantized weight rows per consumer warpgroup (registers), B = BN rows of x16
// (shared memory, loaded by TMA). Contract: gemm_wgmma_launch.h (the launcher picks this kernel when
// the formats' rows allow a tensor map: row_bytes % 16 == 0; the staged kernel of
// gemm_wgmma_kernel.cuh otherwise).
//
// Why this shape: the staged kernel (one producer warpgroup dequantizing the whole W tile into shared
// memory, cp.async for x) ran at 140-220 TFLOP/s. Here no thread computes a load address (TMA), the
// raw quantized bytes go once from shared memory to the registers of the 256 consumer threads that
// multiply them (no f16 W tile written and read back), and the x tile is shared by 128 weight rows.
//
// A block of 256 threads computes y[m0 .. m0 + BN)[n0 .. n0 + 128) (BN = 128 or 256 rows of x):
//   loads: thread 0 issues chunks 0 .. S - 1, then at step c (after its own warpgroup's release of
//     chunk c - 1) waits empty[(c - 1) % S] and refills that stage with chunk c - 1 + S: it arms
//     full[j % S] with the stage's byte count and issues the TMA loads of the stage: x16 [BN][64]
//     (128-byte swizzle, rows >= R and k past its end zero-filled) and the weight boxes of the format
//     (lathe_gwr_<fmt>: 128 rows of the chunk's raw bytes, rows >= n_out zero-filled).
//   warpgroups 0 and 1, the consumers: warpgroup cw owns weight rows 64 cw .. 64 cw + 63 of the tile;
//     lane (g, t) of warp wi dequantizes rows 64 cw + 16 wi + g and + 8 of each k16 slice into wgmma's
//     A fragment (4 registers a slice, 16 a chunk, double-buffered across chunks), then issues 4
//     wgmma m64nBNk16 (A registers, B the x tile by descriptor), commits, waits until at most that
//     group is in flight, releases chunk c - 1 (empty: one arrival a consumer warp, 8 a phase) and
//     dequantizes chunk c + 1 while chunk c multiplies.
// Each weight is the f16 value gemm_f16 forms (the same f32 formula rounded once; q8_0's d q is exact
// in f16 arithmetic: a correctly rounded f16 product of two f16 values), each output's k16 slices go
// in increasing order into one f32 accumulator.
#pragma once

#ifndef __CUDACC__
#include <cstdint>
#define LATHE_GWR_HD constexpr inline
namespace lathe::kernels {
#else
#define LATHE_GWR_HD __host__ __device__ constexpr __forceinline__
#endif

// Bytes of one weight row's boxes for one chunk, per format (the sum of its boxes' widths; f16: the
// 128 bytes of 64 values) and the width of each tensor map's box (map 0, map 1; 0: unused).
struct LatheGwrBoxes {
  int row_bytes, map0, map1;
};
LATHE_GWR_HD LatheGwrBoxes lathe_gwr_boxes(int fmt) {  // fmt: 0 f16, 1 q8_0, 2 q4_K, 3 q6_K
  return fmt == 0 ? LatheGwrBoxes{128, 128, 0}
       : fmt == 1 ? LatheGwrBoxes{80, 80, 0}
       : fmt == 2 ? LatheGwrBoxes{64, 16, 48}
                  : LatheGwrBoxes{176, 80, 48};
}

// The stage ring: a stage is x [BN][64] f16 (swizzled, 1024-aligned) then the weight boxes (128 rows
// each, densely packed as TMA writes them), rounded up to 1024 bytes; as many stages (<= 8) as fit
// the budget with the 2 S mbarriers and 1 KB of alignment slack. Budget: BN = 128 tiles take half an
// SM's shared memory (113 KB: two blocks a multiprocessor, one's epilogue and prologue hidden by the
// other's products) when that still holds 4 stages, else 227 KB (one block).
struct LatheGwrGeometry {
  int stages, stage_bytes, w_at, bar_at, total, tx_bytes;
};
// The ring of a stage of x [bn][64] f16 and w_row_bytes of weight boxes for each of 128 weight rows,
// in `budget` bytes of shared memory (115712: half an SM's, 232448: all of it); the mixture's kernels
// (gemm_wgmma_rs_moe.cuh) size theirs with it too.
LATHE_GWR_HD LatheGwrGeometry lathe_gwr_ring(int bn, int w_row_bytes, int budget) {
  LatheGwrGeometry g{};
  g.w_at = bn * 128;
  g.tx_bytes = bn * 128 + 128 * w_row_bytes;
  g.stage_bytes = (g.tx_bytes + 1023) & ~1023;
  g.stages = (budget - 1024 - 256) / g.stage_bytes;
  if (g.stages > 8) g.stages = 8;
  g.bar_at = g.stages * g.stage_bytes;
  g.total = g.bar_at + 2 * g.stages * 8 + 1024;
  return g;
}
LATHE_GWR_HD LatheGwrGeometry lathe_gwr_geometry(int bn, int fmt) {
  const LatheGwrGeometry half = lathe_gwr_ring(bn, lathe_gwr_boxes(fmt).row_bytes, 115712);
  return bn == 128 && half.stages >= 4 ? half : lathe_gwr_ring(bn, lathe_gwr_boxes(fmt).row_bytes, 232448);
}

#ifndef __CUDACC__
}  // namespace lathe::kernels
#else

// ---- device part (sm_90a) ----
__device__ __forceinline__ void lathe_gwr_mma_n128(float* d, const uint32_t* a, uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

__device__ __forceinline__ void lathe_gwr_mma_n256(float* d, const uint32_t* a, uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, {%128, %129, %130, %131}, %132, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

// A CUtensorMap as the kernel receives it (__grid_constant__: TMA reads it from parameter space).
struct __align__(64) LatheGwrMap {
  unsigned long long v[16];
};

__device__ __forceinline__ void lathe_gwr_expect(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

// TMA: box at (c0 inner, c1 outer) of the tensor `map` into shared memory at dst; completes on bar.
__device__ __forceinline__ void lathe_gwr_tma(uint32_t dst, const LatheGwrMap* map, int c0, int c1, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

__device__ __forceinline__ uint32_t lathe_gwr_u16(const uint8_t* p) {  // 2-byte aligned
  return *reinterpret_cast<const uint16_t*>(p);
}

// Two signed bytes (u's low two, as stored) times d2, as packed f16: (1024 + (q + 128)) - 1152 = q
// exactly in f16, then one correctly rounded f16 product: fl16(d q), gemm_f16's value.
__device__ __forceinline__ uint32_t lathe_gwr_q8(uint32_t u, __half2 d2) {
  const uint32_t w = __byte_perm(u ^ 0x8080u, 0x64646464u, 0x4140u);
  const __half2 q = __hsub2(*reinterpret_cast<const __half2*>(&w), __half2half2(__ushort_as_half(0x6480)));
  const __half2 r = __hmul2(q, d2);
  return *reinterpret_cast<const uint32_t*>(&r);
}

// Each format: the TMA boxes of chunk c (map, inner coordinate: a byte, or for f16 a value, of the
// row) and frag(): from this thread's row's boxes in shared memory (b[i]: box i's row), the packed f16
// pairs a[2 s] = values (16 s + 2 t, + 1) and a[2 s + 1] = (16 s + 2 t + 8, + 9) of the chunk, s = 0..3.
struct lathe_gwr_f16 {
  static constexpr int fmt = 0, boxes = 1;
  static __device__ __forceinline__ int box_map(int) { return 0; }
  static __device__ __forceinline__ int box_x(int, int c) { return 64 * c; }
  static __device__ __forceinline__ int box_width(int) { return 128; }
  // Box 0 is 128-byte swizzled: piece p of row r at p ^ (r & 7); r & 7 == g for both rows.
  static __device__ __forceinline__ void frag(const uint8_t* const* b, int g, int t, int, uint32_t* a) {
#pragma unroll
    for (int p = 0; p < 8; ++p) a[p] = *reinterpret_cast<const uint32_t*>(b[0] + ((p ^ g) << 4) + 4 * t);
  }
};

// q8_0: the chunk's two 34-byte blocks at byte 68 c (4-byte aligned as rows are 16-byte aligned: a
// box of 80 from floor16 holds them), a block past k reads as zeros.
struct lathe_gwr_q8_0 {
  static constexpr int fmt = 1, boxes = 1;
  static __device__ __forceinline__ int box_map(int) { return 0; }
  static __device__ __forceinline__ int box_x(int, int c) { return 68 * c; }
  static __device__ __forceinline__ int box_width(int) { return 80; }
  static __device__ __forceinline__ void frag(const uint8_t* const* b, int, int t, int, uint32_t* a) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint8_t* blk = b[0] + 34 * h;
      const __half2 d2 = __half2half2(__ushort_as_half(static_cast<unsigned short>(lathe_gwr_u16(blk))));
#pragma unroll
      for (int sl = 0; sl < 2; ++sl) {
        const int s = 2 * h + sl;
        a[2 * s] = lathe_gwr_q8(lathe_gwr_u16(blk + 2 + 16 * sl + 2 * t), d2);
        a[2 * s + 1] = lathe_gwr_q8(lathe_gwr_u16(blk + 2 + 16 * sl + 2 * t + 8), d2);
      }
    }
  }
};

// q4_K: box 0 the super-block's 16-byte header (d, dmin, scales), box 1 (48 wide: row stride 48
// spreads the 8 rows of a warp over the banks) from qs[32 p], p = c % 4; sub-block 2p + h is half h.
struct lathe_gwr_q4_k {
  static constexpr int fmt = 2, boxes = 2;
  static __device__ __forceinline__ int box_map(int i) { return i; }
  static __device__ __forceinline__ int box_x(int i, int c) { return 144 * (c >> 2) + (i == 0 ? 0 : 16 + 32 * (c & 3)); }
  static __device__ __forceinline__ int box_width(int i) { return i == 0 ? 16 : 48; }
  static __device__ __forceinline__ void frag(const uint8_t* const* b, int, int t, int c, uint32_t* a) {
    const uint8_t* hd = b[0];
    const uint8_t* s = hd + 4;
    const float d = lathe_gf16_half_at(hd), dmin = lathe_gf16_half_at(hd + 2);
    float ds[2], mn[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int j = 2 * (c & 3) + h;
      int sc, m;
      lathe_k4_scale_min(s, j, sc, m);
      ds[h] = d * static_cast<float>(sc);
      mn[h] = -(dmin * static_cast<float>(m));
    }
#pragma unroll
    for (int sl = 0; sl < 2; ++sl)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const uint32_t q = lathe_gwr_u16(b[1] + 16 * sl + 2 * t + 8 * e);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t u = (q >> (4 * h)) & 0x0F0Fu;
          a[2 * (2 * h + sl) + e] = lathe_gf16_pack(fmaf(ds[h], lathe_gf16_byte(u, 0, 0.0f), mn[h]),
                                                   fmaf(ds[h], lathe_gf16_byte(u, 1, 0.0f), mn[h]));
        }
      }
  }
};

// q6_K: chunk c is quarter p = 2H + e of super-block c / 4. Box 0 (map 0, 80 wide) ql[64 H ..], box 1
// (map 1, 48) qh[32 H ..], box 2 (map 1, 48) scales[16] and d (bytes 192..209); each region starts
// an even 0..14 bytes into its box. Half h of the chunk is
// group cg = 2e + h: value l has low nibble e of ql[64H + 32h + l], bits 2cg of qh[32H + l], scale
// scales[4p + 2h + l / 16] d, level - 32 (gemm_f16's formula).
struct lathe_gwr_q6_k {
  static constexpr int fmt = 3, boxes = 3;
  static __device__ __forceinline__ int box_map(int i) { return i == 0 ? 0 : 1; }
  static __device__ __forceinline__ int box_x(int i, int c) {
    const int H = (c >> 1) & 1;
    return 210 * (c >> 2) + (i == 0 ? 64 * H : i == 1 ? 128 + 32 * H : 192);
  }
  static __device__ __forceinline__ int box_width(int i) { return i == 0 ? 80 : 48; }
  static __device__ __forceinline__ void frag(const uint8_t* const* b, int, int t, int c, uint32_t* a) {
    const int p = c & 3, e = p & 1;
    const uint8_t* tail = b[2];
    const float d = lathe_gf16_half_at(tail + 16);
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int sl = 0; sl < 2; ++sl) {
        const int cg = 2 * e + h;
        const float sf = d * static_cast<float>(static_cast<int8_t>(tail[4 * p + 2 * h + sl]));
#pragma unroll
        for (int x8 = 0; x8 < 2; ++x8) {
          const int l = 16 * sl + 2 * t + 8 * x8;
          const uint32_t lo = lathe_gwr_u16(b[0] + 32 * h + l), hi = lathe_gwr_u16(b[1] + l);
          const uint32_t u = ((lo >> (4 * e)) & 0x0F0Fu) | (((hi >> (2 * cg)) & 0x0303u) << 4);
          a[2 * (2 * h + sl) + x8] =
              lathe_gf16_pack(sf * lathe_gf16_byte(u, 0, 32.0f), sf * lathe_gf16_byte(u, 1, 32.0f));
        }
      }
  }
};

template <class F, int BN>
struct LatheGwrConfig {
  static constexpr LatheGwrGeometry g = lathe_gwr_geometry(BN, F::fmt);
  static constexpr int S = g.stages;
  static_assert(S >= 3, "the ring needs 3 stages");
  static_assert(g.total <= 232448, "over the 227 KB of shared memory a block may have");
};

// Where box i's bytes of chunk c start inside its staged row: TMA boxes start 16-byte aligned (an
// unaligned start faults), the rows are (row_bytes % 16 == 0), so a quantized box starts at
// floor16 of its region and the region begins box_x & 15 bytes in (the widths leave room for it).
template <class F>
__device__ __forceinline__ int lathe_gwr_box_off(int i, int c) {
  return F::fmt == 0 ? 0 : F::box_x(i, c) & 15;
}

// Box i's region in a stage: after x, the boxes' 128 rows each, in order.
template <class F>
__device__ __forceinline__ int lathe_gwr_box_at(int i) {
  int at = 0;
#pragma unroll
  for (int b = 0; b < F::boxes; ++b)
    if (b < i) at += 128 * F::box_width(b);
  return at;
}

// The block's tensor maps: x16, the weight maps (w0, w1: the format's maps 0 and 1) and the tile's
// corner. u0 == nullptr: one matrix, 128 rows from n0 (boxes of 128 rows). u0 != nullptr (the fused
// SwiGLU, gemm_wgmma_rs_multi.cuh): tile rows 0..63 are rows n0.. of w (gate), rows 64..127 rows n0..
// of u (up), boxes of 64 rows each; the same bytes a stage.
struct LatheGwrMaps {
  const LatheGwrMap *x, *w0, *w1, *u0, *u1;
  int m0, n0;
};

// Chunk j's TMA loads into stage j % S (thread 0 only): arms full[j % S] with the stage's bytes.
template <class F, int BN>
__device__ __forceinline__ void lathe_gwr_load(uint32_t sbase, const LatheGwrMaps& mp, int j) {
  typedef LatheGwrConfig<F, BN> C;
  const int s = j % C::S;
  const uint32_t full = sbase + C::g.bar_at + 8 * s, st = sbase + s * C::g.stage_bytes;
  lathe_gwr_expect(full, C::g.tx_bytes);
  lathe_gwr_tma(st, mp.x, 64 * j, mp.m0, full);
#pragma unroll
  for (int i = 0; i < F::boxes; ++i) {
    const uint32_t dst = st + C::g.w_at + lathe_gwr_box_at<F>(i);
    const int bx = F::box_x(i, j) - lathe_gwr_box_off<F>(i, j);
    lathe_gwr_tma(dst, F::box_map(i) == 0 ? mp.w0 : mp.w1, bx, mp.n0, full);
    // The up half: 64 rows of box i's width further (a multiple of 1024 bytes: TMA's alignment and
    // the f16 box's 128-byte swizzle atom both hold).
    if (mp.u0 != nullptr) lathe_gwr_tma(dst + 64 * F::box_width(i), F::box_map(i) == 0 ? mp.u0 : mp.u1, bx, mp.n0, full);
  }
}

// This thread's A fragments of chunk c: a[4 s .. 4 s + 3] = wgmma's registers for k16 slice s (rows g
// and g + 8 of the warp's 16: (g, k 2t..), (g + 8, 2t..), (g, 2t + 8..), (g + 8, 2t + 8..)).
template <class F, int BN>
__device__ __forceinline__ void lathe_gwr_frags(uint32_t* a, const uint8_t* stage, int fr, int g, int t, int c) {
  typedef LatheGwrConfig<F, BN> C;
  uint32_t r0[8], r1[8];
  const uint8_t* b0[3];
  const uint8_t* b1[3];
#pragma unroll
  for (int i = 0; i < F::boxes; ++i) {
    const uint8_t* box = stage + C::g.w_at + lathe_gwr_box_at<F>(i);
    b0[i] = box + fr * F::box_width(i) + lathe_gwr_box_off<F>(i, c);
    b1[i] = box + (fr + 8) * F::box_width(i) + lathe_gwr_box_off<F>(i, c);
  }
  F::frag(b0, g, t, c, r0);
  F::frag(b1, g, t, c, r1);
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    a[4 * s] = r0[2 * s];
    a[4 * s + 1] = r1[2 * s];
    a[4 * s + 2] = r0[2 * s + 1];
    a[4 * s + 3] = r1[2 * s + 1];
  }
}

template <int BN>
__device__ __forceinline__ void lathe_gwr_mma(float* acc, const uint32_t* a, uint64_t b) {
  if constexpr (BN == 256) lathe_gwr_mma_n256(acc, a, b);
  else lathe_gwr_mma_n128(acc, a, b);
}

// One chunk: multiply chunk c (fragments `cur`), then release chunk c - 1 and prepare chunk c + 1's
// fragments in `nxt` (chunk c - 1's, whose wgmma group is complete after the wait).
// (Tried: three fragment buffers, chunk c + 1's prepared BEFORE the wait with two groups in flight:
// wrong outputs in every format on the H200 and no faster; not understood yet, so one group in flight.)
template <class F, int BN>
__device__ __forceinline__ void lathe_gwr_step(float* acc, const uint32_t* cur, uint32_t* nxt, uint8_t* smem,
                                               uint32_t sbase, const LatheGwrMaps& mp, int fr, int g, int t, int lane,
                                               int c, int n_chunks) {
  typedef LatheGwrConfig<F, BN> C;
  const uint32_t full = sbase + C::g.bar_at, empty = full + 8 * C::S;
  const uint32_t xs = sbase + (c % C::S) * C::g.stage_bytes;
  lathe_gwg_wgmma_fence();
#pragma unroll
  for (int s = 0; s < 4; ++s) lathe_gwr_mma<BN>(acc, cur + 4 * s, lathe_gwg_slice_desc(xs, 0, s));
  lathe_gwg_wgmma_commit();
  lathe_gwg_wgmma_wait<1>();  // chunk c - 1's group is done: its stage and fragments are free
  if (c > 0 && lane == 0) lathe_gwg_bar_arrive(empty + 8 * ((c - 1) % C::S));
  // Thread 0 refills the stage of chunk c - 1 with chunk c - 1 + S once the other warpgroup released
  // it too (the two run the same work in step, so the wait is short): S - 1 chunks load ahead.
  if (threadIdx.x == 0 && c >= 1 && c - 1 + C::S < n_chunks) {
    lathe_gwg_bar_wait(empty + 8 * ((c - 1) % C::S), ((c - 1) / C::S) & 1);
    lathe_gwr_load<F, BN>(sbase, mp, c - 1 + C::S);
  }
  __syncwarp();
  if (c + 1 < n_chunks) {
    const int s1 = (c + 1) % C::S;
    lathe_gwg_bar_wait(full + 8 * s1, ((c + 1) / C::S) & 1);
    lathe_gwr_frags<F, BN>(nxt, smem + s1 * C::g.stage_bytes, fr, g, t, c + 1);
  }
}

// The consumer warpgroup cw's main loop: acc = its 64 weight rows of the tile times the BN x rows, over
// every chunk; returns with every wgmma complete (the stages may be reused once both warpgroups return).
template <class F, int BN>
__device__ __forceinline__ void lathe_gwr_mainloop(float* acc, uint8_t* smem, uint32_t sbase, const LatheGwrMaps& mp,
                                                   int n_chunks, int cw) {
  typedef LatheGwrConfig<F, BN> C;
  const int lane = threadIdx.x & 31, wi = (threadIdx.x >> 5) & 3, g = lane >> 2, t = lane & 3;
  const int fr = 64 * cw + 16 * wi + g;  // this thread's first weight row in the tile (and fr + 8)
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
  uint32_t fa[16], fb[16];
  lathe_gwg_bar_wait(sbase + C::g.bar_at, 0);
  lathe_gwr_frags<F, BN>(fa, smem, fr, g, t, 0);
  for (int c = 0; c < n_chunks; c += 2) {
    lathe_gwr_step<F, BN>(acc, fa, fb, smem, sbase, mp, fr, g, t, lane, c, n_chunks);
    if (c + 1 < n_chunks) lathe_gwr_step<F, BN>(acc, fb, fa, smem, sbase, mp, fr, g, t, lane, c + 1, n_chunks);
  }
  lathe_gwg_wgmma_wait<0>();
}

// Accumulator layout (m64nBN): warp wi holds weight rows 16 wi .. + 15 of its warpgroup's 64; lane
// (g, t) rows g, g + 8 and x rows 8 jn + 2 t, + 1 in acc[4 jn + 2 hh + e] (hh: row g + 8 hh, e: x row
// + e). Writes y[r][f] for the tile's rows r < n_rows and outputs f < n_out (f0: warpgroup's row 0).
template <int BN>
__device__ __forceinline__ void lathe_gwr_store(const float* acc, float* y, int n_rows, int n_out, int m0, int f0) {
  const int lane = threadIdx.x & 31, wi = (threadIdx.x >> 5) & 3, g = lane >> 2, t = lane & 3;
  const int f = f0 + 16 * wi + g;
#pragma unroll
  for (int jn = 0; jn < BN / 8; ++jn)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int r = m0 + 8 * jn + 2 * t + e;
      if (r >= n_rows) continue;
      float* yr = y + static_cast<long long>(r) * n_out;
#pragma unroll
      for (int hh = 0; hh < 2; ++hh)
        if (f + 8 * hh < n_out) yr[f + 8 * hh] = acc[4 * jn + 2 * hh + e];
    }
}

// Barrier setup and the first S chunks' loads (thread 0), then a block-wide barrier.
template <class F, int BN>
__device__ __forceinline__ void lathe_gwr_prologue(uint32_t sbase, const LatheGwrMaps& mp, int n_chunks) {
  typedef LatheGwrConfig<F, BN> C;
  if (threadIdx.x == 0) {
    const uint32_t full = sbase + C::g.bar_at, empty = full + 8 * C::S;
    for (int s = 0; s < C::S; ++s) {
      lathe_gwg_bar_init(full + 8 * s, 1);   // thread 0's arrive.expect_tx (+ the TMA bytes)
      lathe_gwg_bar_init(empty + 8 * s, 8);  // every consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    for (int j = 0; j < C::S && j < n_chunks; ++j) lathe_gwr_load<F, BN>(sbase, mp, j);
  }
  __syncthreads();
}

// The block's shared memory, 1024-aligned (the x tile's 128-byte swizzle atoms).
__device__ __forceinline__ uint8_t* lathe_gwr_smem(uint32_t* sbase) {
  extern __shared__ __align__(1024) uint8_t lathe_gwr_smem_raw[];
  const uint32_t raw_base = lathe_gwg_smem(lathe_gwr_smem_raw);
  const uint32_t pad = ((raw_base + 1023u) & ~1023u) - raw_base;
  *sbase = raw_base + pad;
  return lathe_gwr_smem_raw + pad;
}

// 256 threads, the two consumer warpgroups; thread 0 also issues the TMA loads. (A separate producer
// warp would make 288 threads, which ptxas budgets as 384: 168 registers, and the BN = 256 consumer
// needs about 190: 128 accumulators, 2 x 16 fragments; setmaxnreg does not raise ptxas' count.)
#define LATHE_GWR_THREADS 256

template <class F, int BN>
__device__ __forceinline__ void lathe_gwr_body(const LatheGwrMap* mx, const LatheGwrMap* mw0, const LatheGwrMap* mw1,
                                               float* y, int n_rows, int k, int n_out) {
  uint32_t sbase;
  uint8_t* smem = lathe_gwr_smem(&sbase);
  const int m0 = blockIdx.x * BN, n0 = blockIdx.y * 128;
  const int n_chunks = (k + 63) >> 6;
  const LatheGwrMaps mp{mx, mw0, mw1, nullptr, nullptr, m0, n0};
  lathe_gwr_prologue<F, BN>(sbase, mp, n_chunks);
  const int cw = threadIdx.x >> 7;
  float acc[BN / 2];
  lathe_gwr_mainloop<F, BN>(acc, smem, sbase, mp, n_chunks, cw);
  lathe_gwr_store<BN>(acc, y, n_rows, n_out, m0, n0 + 64 * cw);
}

#define LATHE_GWR_KERNEL(FMT, BN)                                                                              \
  extern "C" __global__ void __launch_bounds__(LATHE_GWR_THREADS, 1) lathe_gemm_wgmma_rs_##FMT##_##BN(                       \
      const __grid_constant__ LatheGwrMap mx, const __grid_constant__ LatheGwrMap mw0,                          \
      const __grid_constant__ LatheGwrMap mw1, float* y, int n_rows, int k, int n_out) {                        \
    lathe_pdl_entry();                                                                                          \
    lathe_gwr_body<lathe_gwr_##FMT, BN>(&mx, &mw0, &mw1, y, n_rows, k, n_out);                                  \
  }

#define LATHE_GWR_FORMAT(FMT) \
  LATHE_GWR_KERNEL(FMT, 128)  \
  LATHE_GWR_KERNEL(FMT, 256)

LATHE_GWR_FORMAT(f16)
LATHE_GWR_FORMAT(q8_0)
LATHE_GWR_FORMAT(q4_k)
LATHE_GWR_FORMAT(q6_k)

#endif  // __CUDACC__
