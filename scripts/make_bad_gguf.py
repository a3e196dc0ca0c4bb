#!/usr/bin/env python3
"""Writes the corpus of hand-made malformed GGUF files (tests/data/gguf_bad/) and manifest.json,
which maps each file to the words its error message must contain. Standard library only.

Usage: scripts/make_bad_gguf.py [OUT_DIR]"""
import json
import os
import struct
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data", "gguf_bad")

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
T_F32, T_Q8_0 = 0, 8


def s(text):
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return s(key) + struct.pack("<I", vtype) + payload


def tinfo(name, dims, ttype, offset):
    out = s(name) + struct.pack("<I", len(dims))
    for d in dims:
        out += struct.pack("<Q", d)
    return out + struct.pack("<IQ", ttype, offset)


def gguf(kvs, tensors, data=b"", version=3, n_kv=None, n_tensors=None, align=32, magic=b"GGUF"):
    head = magic + struct.pack("<I", version)
    head += struct.pack("<QQ", len(tensors) if n_tensors is None else n_tensors, len(kvs) if n_kv is None else n_kv)
    for x in kvs:
        head += x
    for t in tensors:
        head += t
    pad = (-len(head)) % align
    return head + b"\0" * pad + data


ARCH = kv("general.architecture", STR, s("llama"))
GOOD_T = [tinfo("a", [32], T_F32, 0)]
GOOD_DATA = b"\0" * 128

cases = {
    "empty.gguf": (b"", "empty"),
    "bad_magic.gguf": (gguf([ARCH], GOOD_T, GOOD_DATA, magic=b"GGML"), "bad magic"),
    "truncated_header.gguf": (b"GGUF\x03\x00", "the version"),
    "version_1.gguf": (gguf([ARCH], GOOD_T, GOOD_DATA, version=1), "version 1"),
    "version_99.gguf": (gguf([ARCH], GOOD_T, GOOD_DATA, version=99), "unknown GGUF version 99"),
    "lying_kv_count.gguf": (gguf([ARCH], GOOD_T, GOOD_DATA, n_kv=1 << 40), "metadata count"),
    "lying_tensor_count.gguf": (gguf([ARCH], GOOD_T, GOOD_DATA, n_tensors=1 << 50), "tensor count"),
    "string_too_long.gguf": (gguf([s("general.name")[:8] + b"", ], [], n_kv=1)[:24] + struct.pack("<Q", 1 << 60) + b"abc" + b"\0" * 64, "string length"),
    "unknown_value_type.gguf": (gguf([kv("x", 77, b"\0" * 8)], []), "unknown value type 77"),
    "array_count_lies.gguf": (gguf([kv("tokenizer.ggml.tokens", ARR, struct.pack("<IQ", STR, 1 << 40))], []), "array of"),
    "nested_array_bomb.gguf": (gguf([kv("deep", ARR, struct.pack("<IQ", ARR, 1) * 12 + struct.pack("<IQ", U8, 0))], []), "nested more than"),
    "bad_bool.gguf": (gguf([kv("flag", BOOL, b"\x07")], []), "neither 0 nor 1"),
    "duplicate_key.gguf": (gguf([ARCH, ARCH], []), "appears twice"),
    "bad_alignment.gguf": (gguf([kv("general.alignment", U32, struct.pack("<I", 48))], []), "not a power of two"),
    "alignment_wrong_type.gguf": (gguf([kv("general.alignment", U64, struct.pack("<Q", 32))], []), "must be uint32"),
    "zero_dims.gguf": (gguf([ARCH], [tinfo("w", [], T_F32, 0)], GOOD_DATA), "dimensions (must be 1 to 4)"),
    "five_dims.gguf": (gguf([ARCH], [tinfo("w", [1, 1, 1, 1, 1], T_F32, 0)], GOOD_DATA), "dimensions (must be 1 to 4)"),
    "zero_dim.gguf": (gguf([ARCH], [tinfo("w", [32, 0], T_F32, 0)], GOOD_DATA), "dimension 1 is zero"),
    "overflowing_dims.gguf": (gguf([ARCH], [tinfo("w", [1 << 40, 1 << 40], T_F32, 0)], GOOD_DATA), "dimensions overflow"),
    "unknown_tensor_type.gguf": (gguf([ARCH], [tinfo("w", [32], 4, 0)], GOOD_DATA), "unknown or unsupported type 4"),
    "unread_tensor_type.gguf": (gguf([ARCH], [tinfo("w", [256], 23, 0)], GOOD_DATA), "type 23 (iq4_xs, which Lathe does not read"),
    "ragged_block.gguf": (gguf([ARCH], [tinfo("w", [33], T_Q8_0, 0)], GOOD_DATA), "not a multiple of"),
    "offset_past_end.gguf": (gguf([ARCH], [tinfo("w", [32], T_F32, 1 << 20)], GOOD_DATA), "runs past the end"),
    "data_past_end.gguf": (gguf([ARCH], [tinfo("w", [64, 64], T_F32, 0)], GOOD_DATA), "runs past the end"),
    "misaligned_offset.gguf": (gguf([ARCH], [tinfo("w", [8], T_F32, 4)], GOOD_DATA), "not a multiple of the alignment"),
    "overlap.gguf": (gguf([ARCH], [tinfo("a", [32], T_F32, 0), tinfo("b", [32], T_F32, 64)], GOOD_DATA + b"\0" * 128), "overlap"),
    "duplicate_tensor.gguf": (gguf([ARCH], [tinfo("a", [8], T_F32, 0), tinfo("a", [8], T_F32, 32)], GOOD_DATA), "appears twice"),
    "truncated_tensor_table.gguf": (gguf([ARCH], GOOD_T, b"")[:-20], "truncated"),
}

os.makedirs(OUT, exist_ok=True)
manifest = {}
for name, (data, words) in sorted(cases.items()):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
    manifest[name] = words
with open(os.path.join(OUT, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1, sort_keys=True)
    f.write("\n")
print(f"wrote {len(cases)} files to {OUT}")
