#!/usr/bin/env python3
"""Writes tests/data/gguf/pygguf_qwen3.gguf with PyPI's gguf writer (a peer nobody here wrote):
a small Qwen3-shaped checkpoint (Q8_0 matrices quantized by gguf.quants, f32 norms) whose metadata
uses every value type, nested arrays included. tests/test_gguf.cpp reads it; expected values live
in the test. Needs: pip install gguf numpy.

Usage: scripts/make_gguf_fixtures.py [OUT_DIR]"""
import os
import sys

import numpy as np
import gguf

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data", "gguf")
os.makedirs(OUT, exist_ok=True)
path = os.path.join(OUT, "pygguf_qwen3.gguf")

EMBD, LAYERS, HEADS, KV, HD, FF, VOCAB = 64, 2, 4, 2, 16, 128, 512
rng = np.random.default_rng(7)

w = gguf.GGUFWriter(path, "qwen3")
w.add_name("pygguf tiny qwen3")
w.add_context_length(1024)
w.add_embedding_length(EMBD)
w.add_block_count(LAYERS)
w.add_feed_forward_length(FF)
w.add_head_count(HEADS)
w.add_head_count_kv(KV)
w.add_key_length(HD)
w.add_value_length(HD)
w.add_rope_freq_base(1000000.0)
w.add_layer_norm_rms_eps(1e-6)
w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
# Every value type, for the reader.
w.add_uint8("test.u8", 200)
w.add_int8("test.i8", -100)
w.add_uint16("test.u16", 60000)
w.add_int16("test.i16", -30000)
w.add_uint32("test.u32", 4000000000)
w.add_int32("test.i32", -2000000000)
w.add_float32("test.f32", 0.25)
w.add_uint64("test.u64", 1 << 40)
w.add_int64("test.i64", -(1 << 40))
w.add_float64("test.f64", 1.0 / 3.0)
w.add_bool("test.bool", True)
w.add_string("test.string", "héllo, wörld")
w.add_array("test.strings", ["a", "bc", "", "日本"])
w.add_array("test.nested", [[1, 2], [3]])
tokens = [f"t{i}" for i in range(VOCAB)]
w.add_tokenizer_model("gpt2")
w.add_token_list(tokens)


def q8(shape):
    data = (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)
    return gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q8_0)


def add_q8(name, rows, cols):
    w.add_tensor(name, q8((rows, cols)), raw_dtype=gguf.GGMLQuantizationType.Q8_0)


def add_f32(name, n, value=1.0):
    w.add_tensor(name, np.full((n,), value, dtype=np.float32))


add_q8("token_embd.weight", VOCAB, EMBD)
for l in range(LAYERS):
    b = f"blk.{l}."
    add_f32(b + "attn_norm.weight", EMBD)
    add_q8(b + "attn_q.weight", HEADS * HD, EMBD)
    add_q8(b + "attn_k.weight", KV * HD, EMBD)
    add_q8(b + "attn_v.weight", KV * HD, EMBD)
    add_f32(b + "attn_q_norm.weight", HD)
    add_f32(b + "attn_k_norm.weight", HD)
    add_q8(b + "attn_output.weight", EMBD, HEADS * HD)
    add_f32(b + "ffn_norm.weight", EMBD)
    add_q8(b + "ffn_gate.weight", FF, EMBD)
    add_q8(b + "ffn_up.weight", FF, EMBD)
    add_q8(b + "ffn_down.weight", EMBD, FF)
add_f32("output_norm.weight", EMBD, 0.5)
add_q8("output.weight", VOCAB, EMBD)

w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print("wrote", path, os.path.getsize(path), "bytes")
