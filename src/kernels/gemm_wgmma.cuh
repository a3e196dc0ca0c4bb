// The Hopper wgmma f16 GEMM (sm_90a only): shared layout math and device primitives. The kernel
// itself is gemm_wgmma_kernel.cuh; the host launcher and the contract gemm_wgmma_launch.h.
//
// Files named gemm_wgmma*.cuh are NOT part of the main kernel library (compiled for the card's plain
// sm_90): library.cpp compiles them into a second module for sm_90a, after common.cuh, gemm_f16.cuh
// and gemm_f16_blocks.cuh (whose weight formats, lathe_gf16_<fmt>, the producer reuses so that both
// GEMMs dequantize every weight to the same f16 value).
//
// The part above `#ifdef __CUDACC__` is plain C++ as well: tests/test_gemm_wgmma_layout.cpp includes
// this file on the host and checks the swizzle and descriptor math against a model of how wgmma
// reads shared memory (PTX ISA: "Shared memory matrix layout", 128-byte swizzle, K-major).
//
// Tiles in shared memory: [rows][64] f16, one 128-byte line a row, 16-byte piece p of row r stored
// at piece p ^ (r & 7) (lathe_gf16_swz's layout), the tile 1024-byte aligned. That is wgmma's
// canonical 128-byte-swizzled K-major layout: 8-row groups 1024 bytes apart (the stride byte
// offset), the swizzle XORing address bits 4-6 with bits 7-9. A k16 slice s (0..3) of the tile is the
// descriptor of the tile's start plus 32 s bytes (the hardware swizzles the summed address, so the
// offset stays inside each row's 128 bytes); base offset 0 because the tile is 1024-byte aligned.
#pragma once

#ifndef __CUDACC__
#include <cstdint>
#define LATHE_GWG_HD constexpr inline
namespace lathe::kernels {
#else
#define LATHE_GWG_HD __host__ __device__ constexpr __forceinline__
#endif

// Byte offset of 16-byte piece p (0..7) of row r in a swizzled [rows][64] f16 tile.
LATHE_GWG_HD int lathe_gwg_swz(int r, int p) { return r * 128 + ((p ^ (r & 7)) << 4); }

// The 64-bit shared-memory matrix descriptor of wgmma (sm_90): start address >> 4 in bits 0-13,
// leading byte offset >> 4 in 16-29 (unused by swizzled K-major layouts: 1 as CUTLASS sets it),
// stride byte offset >> 4 in 32-45 (1024: the next 8-row group), base offset 0 in 49-51, layout in
// 62-63 (1: 128-byte swizzle). `smem_addr` is a shared-window address (< 2^18).
LATHE_GWG_HD uint64_t lathe_gwg_desc(uint32_t smem_addr) {
  return static_cast<uint64_t>((smem_addr & 0x3FFFFu) >> 4) | (static_cast<uint64_t>(1) << 16) |
         (static_cast<uint64_t>(1024 >> 4) << 32) | (static_cast<uint64_t>(1) << 62);
}

// The descriptor of k16 slice s (0..3) of the 64-row group starting at row `row0` (a multiple of 8)
// of the tile at `tile_addr` (1024-byte aligned).
LATHE_GWG_HD uint64_t lathe_gwg_slice_desc(uint32_t tile_addr, int row0, int s) {
  return lathe_gwg_desc(tile_addr + static_cast<uint32_t>(row0) * 128u + 32u * static_cast<uint32_t>(s));
}

// The stage ring's geometry for a tile of BM rows of x by BN outputs (BN weight rows) and a weight
// format whose chunk needs `lines` 16-byte lines a weight row (`direct`: f16 weights, staged as the
// tile itself). A stage: x [BM][64] f16, then W [BN][64] f16 (both swizzled, 1024-aligned). The raw
// ring (quantized formats): R slots of BN rows of (lines | 1) * 16 bytes (an odd count of lines:
// the dequantizing threads' rows fall in different bank groups), then the 2 S mbarriers.
//   S full stages, loads issued D chunks ahead of the dequantizing, R = D + 2 raw slots:
//   - the producer, before loading chunk j into stage j % S, waits until the consumers released
//     chunk j - S; they release chunk i after issuing chunk i + 1's wgmma (one group in flight), so
//     S >= D + 2 keeps the producer from waiting on the chunk it has not yet handed over;
//   - raw slot j % R is loaded at step j - D and read while dequantizing chunk j at step j; the named
//     barrier of step j - D - 1 (every producer thread done dequantizing chunk j - D - 2 = j - R)
//     precedes the load, so R = D + 2 slots never overwrite bytes still being read.
struct LatheGwgGeometry {
  int stages, ahead, raw_slots, raw_stride, stage_bytes, raw_at, bar_at, total;
};

LATHE_GWG_HD LatheGwgGeometry lathe_gwg_geometry(int bm, int bn, int lines, bool direct) {
  LatheGwgGeometry g{};
  g.stage_bytes = (bm + bn) * 128;
  g.raw_stride = direct ? 0 : (lines | 1) * 16;
  // The deepest ring that fits 227 KB (232448 bytes) with the barriers and 1 KB of alignment slack.
  g.stages = 2;
  g.ahead = 0;
  for (int s = 6; s >= 3; --s) {
    const int d = s - 2, r = direct ? 0 : d + 2;
    if (s * g.stage_bytes + r * bn * g.raw_stride + 16 * s + 8 + 1024 <= 232448) {
      g.stages = s;
      g.ahead = d;
      break;
    }
  }
  g.raw_slots = direct ? 0 : g.ahead + 2;
  g.raw_at = g.stages * g.stage_bytes;
  g.bar_at = g.raw_at + g.raw_slots * bn * g.raw_stride;
  g.bar_at = (g.bar_at + 7) & ~7;
  g.total = g.bar_at + 2 * g.stages * 8 + 1024;  // + 1024: the dynamic window aligned up to 1024 bytes
  return g;
}

#ifndef __CUDACC__
}  // namespace lathe::kernels
#else

// ---- device primitives (sm_90a) ----

__device__ __forceinline__ uint32_t lathe_gwg_smem(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void lathe_gwg_cp16(uint32_t dst, const void* g, bool valid) {
  const int n = valid ? 16 : 0;  // 0 bytes read: the piece is zero-filled
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(g), "r"(n) : "memory");
}
__device__ __forceinline__ void lathe_gwg_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void lathe_gwg_cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void lathe_gwg_bar_init(uint32_t bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void lathe_gwg_bar_arrive(uint32_t bar) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.release.cta.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}

// Waits until the phase of `bar` with this parity has completed. A wrong protocol would spin forever:
// after LATHE_GWG_HANG_NS of waiting (%globaltimer) the kernel traps, so the launch fails instead of
// hanging the device (0: no limit).
#ifndef LATHE_GWG_HANG_NS
#define LATHE_GWG_HANG_NS 4000000000ull
#endif
__device__ __forceinline__ uint32_t lathe_gwg_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t ok;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok;
}
__device__ __forceinline__ uint64_t lathe_gwg_now() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}
__device__ __forceinline__ void lathe_gwg_bar_wait(uint32_t bar, uint32_t parity) {
  if (lathe_gwg_try_wait(bar, parity)) return;
  const uint64_t start = lathe_gwg_now();
  while (!lathe_gwg_try_wait(bar, parity)) {
    if (LATHE_GWG_HANG_NS != 0 && lathe_gwg_now() - start > LATHE_GWG_HANG_NS) __trap();
  }
}

// The producer warpgroup's own barrier (id 1; __syncthreads is barrier 0).
__device__ __forceinline__ void lathe_gwg_producer_sync() { asm volatile("bar.sync 1, 128;\n" ::: "memory"); }

// Ordinary shared stores (and completed cp.async) made visible to the async proxy (wgmma).
__device__ __forceinline__ void lathe_gwg_fence_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

template <int N>
__device__ __forceinline__ void lathe_gwg_setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void lathe_gwg_setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

__device__ __forceinline__ void lathe_gwg_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void lathe_gwg_wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void lathe_gwg_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// d[64] (a 64 x 128 f32 tile, wgmma's accumulator layout) += A (64 x 16 f16, K-major, descriptor a)
// . B (16 x 128: 128 rows of 16 f16, K-major, descriptor b)^T. `accumulate` 0: d = A B (the first
// slice, so the accumulators need no zeroing).
__device__ __forceinline__ void lathe_gwg_mma_n128(float* d, uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(a), "l"(b), "r"(accumulate));
}

#endif  // __CUDACC__
