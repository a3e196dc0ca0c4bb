#!/usr/bin/env python3
"""Writes tests/data/blocks/: peer results for every GGUF block format Lathe reads, for
tests/test_block_formats.cpp.

    python3 scripts/make_block_fixtures.py [OUT_DIR]      (needs numpy, gguf; ggml-python for the K quantizers)

Peers:
  * PyPI `gguf` (gguf.quants): quantizes F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (ports of ggml's
    quantize_row_*_ref), dequantizes every format but Q8_1 and Q8_K.
  * PyPI `ggml-python` (ggml itself, built from its sdist): its reference quantizers
    (type_traits.from_float_ref = quantize_row_*_ref, no importance matrix) for Q8_1 and Q2_K..Q6_K,
    which gguf.quants cannot quantize, and Q8_K (the CPU trait). Where both peers quantize, the script
    checks that they agree byte for byte. Without ggml-python, pass --no-ggml: those sections are left
    out (the test then skips them and says so).

Each format gets <name>.bin and an entry in index.json (which peer made what). A .bin file is
little-endian:
    magic "LATHEBLK" (8 bytes), u32 version (1), u32 ggml type, u32 section count, then per section:
    u32 flags (1: has input floats, 2: has dequantized floats), u32 n_values, u32 n_bytes,
    [f32 input[n_values]], u8 blocks[n_bytes], [f32 dequantized[n_values]]
A section with inputs holds a peer's quantization of them; one without holds random valid blocks
(random bytes with finite f16 scales), so every bit of every field is exercised.
"""
import argparse
import ctypes
import importlib.metadata
import json
import struct
import sys
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as Q
import gguf
import gguf.quants

ROOT = Path(__file__).resolve().parent.parent

# name, ggml type, block size, block bytes, f16 scale offsets in the block (set to finite values in
# random blocks), f32 scale offsets.
FORMATS = [
    ("f32", 0, 1, 4, [], []),
    ("f16", 1, 1, 2, [], []),
    ("bf16", 30, 1, 2, [], []),
    ("q4_0", 2, 32, 18, [0], []),
    ("q4_1", 3, 32, 20, [0, 2], []),
    ("q5_0", 6, 32, 22, [0], []),
    ("q5_1", 7, 32, 24, [0, 2], []),
    ("q8_0", 8, 32, 34, [0], []),
    ("q8_1", 9, 32, 36, [0, 2], []),
    ("q2_K", 10, 256, 84, [80, 82], []),
    ("q3_K", 11, 256, 110, [108], []),
    ("q4_K", 12, 256, 144, [0, 2], []),
    ("q5_K", 13, 256, 176, [0, 2], []),
    ("q6_K", 14, 256, 210, [208], []),
    ("q8_K", 15, 256, 292, [], [0]),
]
GGUF_QUANTIZES = {"f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0"}
GGUF_DEQUANTIZES = {"f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0",
                    "q2_K", "q3_K", "q4_K", "q5_K", "q6_K"}


def awkward_inputs(rng):
    """4096 floats in sixteen 256-value themes, each theme a K block (and eight 32-value blocks)."""
    n = 256
    themes = [
        rng.standard_normal(n),                                        # plain
        np.zeros(n),                                                   # all zero
        np.full(n, 0.75),                                              # constant block
        rng.standard_normal(n) * 1e-30 * (rng.random(n) < 0.7),       # tiny, and zeros
        rng.standard_normal(n) * 1e-41,                                # f32 subnormals
        np.concatenate([rng.uniform(-1e5, -7e4, 32), rng.uniform(7e4, 1e5, 32),
                        rng.standard_normal(192) * 3e4]),              # huge, past f16's range
        -rng.uniform(0.1, 3.0, n),                                     # a negative run
        np.concatenate([rng.uniform(0.5, 2.0, 128), rng.uniform(-2.0, -0.5, 128)]),  # one-signed halves
        np.where(np.arange(n) % 37 == 0, 100.0, rng.standard_normal(n) * 0.01),     # outliers
        np.tile(np.arange(-16, 16) / 2.0, 8),                          # halves: rounding ties
        rng.uniform(-1, 1, n) * np.repeat(10.0 ** rng.uniform(-4, 2, 16), 16),      # scale per 16
        np.where(np.arange(n) % 2 == 0, 1.0, -1.0),                    # alternating signs
        np.linspace(-1, 1, n),                                         # ramp
        np.where(rng.random(n) < 0.9, 0.0, rng.standard_normal(n)),    # sparse
        f16_edge_values(n, rng),                                       # conversion edges
        rng.standard_normal(n) * 1e-3,
    ]
    x = np.concatenate(themes).astype(np.float32)
    x[3 * n + 5] = -0.0
    return x


def f16_edge_values(n, rng):
    edges = [65504.0, 65519.0, 65520.0, -65520.0, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -25,
             2.0 ** -25 * 1.0000001, 2.0 ** -14, 2.0 ** -14 * (1 - 2.0 ** -11), 1 + 2.0 ** -11,
             1 + 3 * 2.0 ** -11, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, -(1 + 2.0 ** -8), 6.1e-5, 1e-8,
             1.0, -2.5]
    rest = rng.standard_normal(n - len(edges))
    return np.concatenate([edges, rest])


# Extremes for the float formats only (in a quantized block they make an infinite scale).
FLOAT_EXTREMES = np.array([3.0e38, -3.0e38, 3.3895314e38, 3.3961776e38, 3.4028235e38, float("inf"),
                           float("-inf"), 65536.0, 1e10, -1e-45, 1.4e-45, 1.1754942e-38, 0.0, -0.0,
                           1 + 2.0 ** -8, 1 + 2.0 ** -8 + 2.0 ** -23, 1 + 3 * 2.0 ** -8], dtype=np.float32)


def random_blocks(rng, fmt, n_blocks):
    name, _, block_size, block_bytes, f16_offsets, f32_offsets = fmt
    if block_size == 1:  # float formats: random bit patterns, NaN left out (its payload is not kept)
        if name == "f32":
            v = rng.integers(0, 2 ** 32, n_blocks, dtype=np.uint64).astype(np.uint32)
            v = np.where((v & 0x7F800000) == 0x7F800000, v & 0xBFFFFFFF, v)
        else:
            v = rng.integers(0, 2 ** 16, n_blocks, dtype=np.uint32).astype(np.uint16)
            if name == "f16":
                v = np.where(((v & 0x7C00) == 0x7C00) & ((v & 0x3FF) != 0), v & 0xBFFF, v)
            else:
                v = np.where(((v & 0x7F80) == 0x7F80) & ((v & 0x7F) != 0), v & 0xBFFF, v)
        return v.view(np.uint8).copy()
    data = rng.integers(0, 256, (n_blocks, block_bytes), dtype=np.uint16).astype(np.uint8)
    # Finite scales of either sign over many magnitudes, a few zero and a few f16 subnormals.
    for off in f16_offsets:
        s = rng.standard_normal(n_blocks) * 10.0 ** rng.uniform(-4, 1, n_blocks)
        s[rng.random(n_blocks) < 0.05] = 0.0
        s[rng.random(n_blocks) < 0.05] = 3e-6
        data[:, off:off + 2] = s.astype(np.float16).view(np.uint8).reshape(n_blocks, 2)
    for off in f32_offsets:
        s = (rng.standard_normal(n_blocks) * 10.0 ** rng.uniform(-6, 1, n_blocks)).astype(np.float32)
        data[:, off:off + 4] = s.view(np.uint8).reshape(n_blocks, 4)
    return data.reshape(-1)


class GgmlPeer:
    """ggml's own reference quantizers through ggml-python's ctypes bindings."""

    def __init__(self):
        import ggml
        self.ggml = ggml
        self.version = importlib.metadata.version("ggml_python")

    def quantizer(self, ggml_type):
        g = self.ggml
        ref = g.ggml_get_type_traits(ggml_type).contents.from_float_ref
        if ref:
            return ref, "from_float_ref"
        cpu = g.ggml_get_type_traits_cpu(ggml_type).contents.from_float
        if cpu:
            return cpu, "cpu from_float"
        return None, None

    def quantize(self, ggml_type, x, n_bytes):
        fn, _ = self.quantizer(ggml_type)
        out = np.zeros(n_bytes, dtype=np.uint8)
        x = np.ascontiguousarray(x, dtype=np.float32)
        fn(x.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), out.ctypes.data_as(ctypes.c_void_p), x.size)
        return out

    def dequantize(self, ggml_type, data, n_values):
        fn = self.ggml.ggml_get_type_traits(ggml_type).contents.to_float
        if not fn:
            return None
        out = np.zeros(n_values, dtype=np.float32)
        fn(data.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), n_values)
        return out


def gguf_dequantize(name, data):
    if name not in GGUF_DEQUANTIZES:
        return None
    return gguf.quants.dequantize(data, Q[name.upper()]).astype(np.float32).reshape(-1)


def section(x, data, deq):
    flags = (1 if x is not None else 0) | (2 if deq is not None else 0)
    n_values = deq.size if deq is not None else x.size
    out = struct.pack("<III", flags, n_values, data.size)
    if x is not None:
        out += x.astype("<f4").tobytes()
    out += data.tobytes()
    if deq is not None:
        out += deq.astype("<f4").tobytes()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?", default=str(ROOT / "tests" / "data" / "blocks"))
    ap.add_argument("--no-ggml", action="store_true", help="leave out the sections that need ggml-python")
    args = ap.parse_args()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    peer = None if args.no_ggml else GgmlPeer()

    rng = np.random.default_rng(20250610)
    x = awkward_inputs(rng)
    # Blocks of f32 subnormals make an infinite 1/d in the quantizers (as in ggml): numpy warns.
    np.seterr(all="ignore")
    index = {"gguf": importlib.metadata.version("gguf"), "numpy": np.__version__,
             "ggml-python": peer.version if peer else None, "formats": {}}
    for fmt in FORMATS:
        name, ggml_type, block_size, block_bytes = fmt[:4]
        n_bytes = x.size // block_size * block_bytes
        sections, notes = [], []
        quantized = None
        if name in GGUF_QUANTIZES:
            quantized = gguf.quants.quantize(x, Q[name.upper()]).view(np.uint8).reshape(-1)
            notes.append("quantized by gguf.quants")
            if peer is not None:
                theirs = peer.quantize(ggml_type, x, n_bytes)
                assert np.array_equal(theirs, quantized), f"gguf and ggml quantize {name} differently"
                notes.append("ggml agrees")
        elif name == "f32":
            quantized = x.view(np.uint8).copy()
            notes.append("f32 bytes of the input")
        elif peer is not None and peer.quantizer(ggml_type)[0]:
            quantized = peer.quantize(ggml_type, x, n_bytes)
            notes.append(f"quantized by ggml ({peer.quantizer(ggml_type)[1]})")
        if quantized is not None:
            deq = gguf_dequantize(name, quantized)
            if deq is not None and peer is not None and name != "f32":
                theirs = peer.dequantize(ggml_type, quantized, x.size)
                if theirs is not None:
                    assert np.array_equal(theirs.view(np.uint32), deq.view(np.uint32)), f"peers dequantize {name} differently"
            assert deq is None or not np.isnan(deq).any(), name
            sections.append(section(x, quantized, deq))
        if block_size == 1:
            ext = FLOAT_EXTREMES
            q = ext.view(np.uint8).copy() if name == "f32" else gguf.quants.quantize(ext, Q[name.upper()]).view(np.uint8).reshape(-1)
            sections.append(section(ext, q, gguf_dequantize(name, q)))
            notes.append("float extremes quantized by gguf.quants")
        n_random = 4096 if block_size == 1 else (64 if block_size == 32 else 16)
        blocks = random_blocks(rng, fmt, n_random)
        deq = gguf_dequantize(name, blocks)
        if deq is not None:
            notes.append(f"{n_random} random blocks dequantized by gguf.quants")
            sections.append(section(None, blocks, deq))
        header = b"LATHEBLK" + struct.pack("<III", 1, ggml_type, len(sections))
        (out_dir / f"{name}.bin").write_bytes(header + b"".join(sections))
        index["formats"][name] = {"file": f"{name}.bin", "sections": len(sections), "notes": notes}
    (out_dir / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    total = sum(p.stat().st_size for p in out_dir.iterdir())
    print(f"wrote {len(FORMATS)} formats to {out_dir} ({total} bytes)")


if __name__ == "__main__":
    sys.exit(main())
