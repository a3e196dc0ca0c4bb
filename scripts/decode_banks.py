#!/usr/bin/env python3
"""A model of the shared-memory wavefronts of one 32-piece round of the q8_0 int8x2 decode loop
(src/kernels/gemv_decode.cuh): how many cycles of the SM's shared-memory pipe a warp's loads of one
round take, for a lane -> block layout and an x staging layout. No GPU: it counts bank conflicts the
way the hardware serves them (32-bit loads: one wavefront per distinct word per bank; 128-bit loads:
four phases of 8 lanes, one wavefront per distinct 16-byte line per 16-byte bank group).

Usage: scripts/decode_banks.py        prints the layouts compared in docs/perf.md (2026-12-01)
"""
from collections import defaultdict

UNIT = 34  # bytes of a q8_0 block: f16 scale, 32 int8 levels


def wavefronts_32(addrs):
    banks = defaultdict(set)
    for a in addrs:
        banks[(a // 4) % 32].add(a // 4)
    return max(len(v) for v in banks.values())


def wavefronts_128(addrs):
    total = 0
    for phase in range(4):
        groups = defaultdict(set)
        for a in addrs[8 * phase:8 * phase + 8]:
            groups[(a // 16) % 8].add(a // 16)
        total += max(len(v) for v in groups.values())
    return total


def weights(blocks, swap):
    """The piece's weight loads as the kernel issues them: each 16-value half from its aligned word,
    5 words, the lane's first half first (swap), and the scale as a 16-bit load."""
    total = 0
    for half in range(2):
        for i in range(5):
            total += wavefronts_32([((UNIT * b + (2 + 16 * s if half == 0 else 18 - 16 * s)) & ~3) + 4 * i
                                    for b, s in zip(blocks, swap)])
    return total + wavefronts_32([UNIT * b for b in blocks])


def x_interleaved(blocks, swap, pos):
    """x as staged now: a block's 32 q1 levels at 32 pos (q2 the same k bytes on), the lane reading
    its halves in its swap order, then ds (LDS.64, counted as half an LDS.128)."""
    first = [32 * pos[b] + 16 * s for b, s in zip(blocks, swap)]
    second = [a + 16 - 32 * s for a, s in zip(first, swap)]
    return 2 * (wavefronts_128(first) + wavefronts_128(second)) + wavefronts_128([16 * pos[b] for b in blocks]) // 2


def x_planes(blocks, pos):
    """x staged as four planes (q1's first halves, q1's second, q2's first, q2's second), a block's
    half at 16 pos in each: no swap."""
    return 4 * wavefronts_128([16 * pos[b] for b in blocks]) + wavefronts_128([16 * pos[b] for b in blocks]) // 2


def main():
    lanes = range(32)
    swap = [(l >> 2) & 1 for l in lanes]
    in_order = list(range(64))
    even_odd = [0] * 64  # x staged so that lane l's block of either round is at position l (+ 32)
    for l in lanes:
        even_odd[2 * l], even_odd[2 * l + 1] = l, 32 + l
    rows = [
        ("now: blocks in order, x interleaved, lanes 4-7 of 8 swapped", list(lanes),
         lambda b: weights(b, swap) + x_interleaved(b, swap, in_order), lambda b: weights(b, swap)),
        ("x in planes, blocks in order", list(lanes),
         lambda b: weights(b, [0] * 32) + x_planes(b, in_order), lambda b: weights(b, [0] * 32)),
        ("x in planes, round 0 the even blocks, round 1 the odd", [2 * l for l in lanes],
         lambda b: weights(b, [0] * 32) + x_planes(b, even_odd), lambda b: weights(b, [0] * 32)),
    ]
    print("wavefronts of one 32-piece round (weights of them); a 2,176-byte chunk is two rounds plus"
          " 17 for the bulk copy's writes")
    for name, blocks, total, w in rows:
        print(f"  {name}: {total(blocks)} ({w(blocks)})")


if __name__ == "__main__":
    main()
