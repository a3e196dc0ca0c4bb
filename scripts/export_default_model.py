#!/usr/bin/env python3
"""Write Lathe's default model as GGUF and check the file against the transformers reference.

    python3 scripts/export_default_model.py --weights .kjv/run --tokenizer .kjv/tokenizer.json

reads what `train_default_model.py select` wrote (config.json, model-*.safetensors,
reference.json) and the tokenizer of `train_default_model.py prepare`, and writes
  models/default/lathe-kjv-qwen3.gguf         (architecture qwen3, as llama.cpp's converter lays
                                               it out: f16 matrices, f32 norms, tied output)
  tests/data/default_model/reference.json     (copied once the check below passes)
The check reads the written GGUF back with gguf.GGUFReader, runs a plain numpy Qwen3 forward pass
in f32 on it, and requires the reference's greedy tokens exactly and its top-5 logits to 2e-3.
Needs PyPI gguf, numpy and tokenizers only.
"""
import argparse
import json
import shutil
import struct
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
          "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
MAX_BYTES = 30 * 10**6

# transformers' Qwen3 names -> GGUF names (llama.cpp's tensor map for qwen3).
LAYER_NAMES = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}


def read_safetensors(path):
    """{name: array}; the format is an 8-byte header size, a JSON header, then raw data."""
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    dtypes = {"F16": np.float16, "F32": np.float32, "BF16": None}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if dtypes.get(info["dtype"]) is None:
            sys.exit(f"{path}: tensor {name} has unsupported dtype {info['dtype']}")
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=dtypes[info["dtype"]]) \
            .reshape(info["shape"]).copy()
    return out


def gguf_name(hf_name):
    if hf_name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf_name == "model.norm.weight":
        return "output_norm.weight"
    parts = hf_name.split(".")
    if parts[:2] == ["model", "layers"]:
        return f"blk.{parts[2]}.{LAYER_NAMES['.'.join(parts[3:])]}"
    sys.exit(f"unexpected tensor {hf_name}")


def vocab_of(tokenizer_file):
    """(tokens by id, token types, merges as 'a b' in rank order, special ids by name)."""
    import gguf
    tj = json.loads(Path(tokenizer_file).read_text(encoding="utf-8"))
    by_id = {i: t for t, i in tj["model"]["vocab"].items()}
    specials = {}
    for added in tj["added_tokens"]:
        by_id[added["id"]] = added["content"]
        specials[added["content"]] = added["id"]
    n = max(by_id) + 1
    if sorted(by_id) != list(range(n)) or set(specials) != set(SPECIAL_TOKENS):
        sys.exit("tokenizer ids are not dense or the special tokens are missing")
    tokens = [by_id[i] for i in range(n)]
    types = [gguf.TokenType.CONTROL if t in specials else gguf.TokenType.NORMAL for t in tokens]
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    return tokens, types, merges, specials


def write_gguf(weights_dir, tokenizer_file, out):
    import gguf
    cfg = json.loads((Path(weights_dir) / "config.json").read_text())
    train = cfg.get("lathe_training", {})
    state = {}
    for f in sorted(Path(weights_dir).glob("model-*.safetensors")):
        state.update(read_safetensors(f))
    tokens, types, merges, specials = vocab_of(tokenizer_file)
    if len(tokens) != cfg["vocab_size"]:
        sys.exit(f"tokenizer has {len(tokens)} tokens, the model {cfg['vocab_size']}")
    if not cfg["tie_word_embeddings"] or "lm_head.weight" in state:
        sys.exit("expected tied embeddings and no lm_head.weight")
    eot = specials["<|endoftext|>"]

    w = gguf.GGUFWriter(str(out), "qwen3")
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name("Lathe KJV Qwen3")
    w.add_description("Lathe's default model: a small Qwen3 trained from scratch on the King James "
                      "Bible (Debian bible-kjv-text) by scripts/train_default_model.py; "
                      f"validation loss {train.get('best_val_loss', float('nan')):.4f} nats/token.")
    w.add_size_label(f"{round(train.get('params', 0) / 1e6)}M")
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_key_length(cfg["head_dim"])
    w.add_value_length(cfg["head_dim"])
    w.add_rope_freq_base(float(cfg["rope_parameters"]["rope_theta"]))
    w.add_layer_norm_rms_eps(float(cfg["rms_norm_eps"]))
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)

    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(eot)
    w.add_eos_token_id(eot)
    w.add_pad_token_id(eot)
    w.add_add_bos_token(False)
    w.add_chat_template(CHATML)

    def order(hf_name):  # embedding, blocks in order, final norm: convert_hf_to_gguf's order
        parts = hf_name.split(".")
        layer = int(parts[2]) if parts[:2] == ["model", "layers"] else (-1 if "embed" in hf_name else 1 << 30)
        names = list(LAYER_NAMES)
        rest = ".".join(parts[3:])
        return layer, names.index(rest) if rest in names else 0
    for name in sorted(state, key=order):
        t = state[name]
        # Matrices f16 (the training script already rounded them), norms f32, as ggml wants.
        w.add_tensor(gguf_name(name), t.astype(np.float16 if t.ndim == 2 else np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    size = Path(out).stat().st_size
    print(f"wrote {out}: {size} bytes, {len(state)} tensors, {len(tokens)} tokens, "
          f"{len(merges)} merges")
    if size >= MAX_BYTES:
        sys.exit(f"{out} is {size} bytes, over the 30 MB budget")


# ------------------------------------------------------------ check: numpy Qwen3 on the GGUF

def read_gguf(path):
    import gguf
    r = gguf.GGUFReader(str(path))

    def field(key):
        f = r.fields[key]
        return f.parts[f.data[0]].tolist()[0] if len(f.data) == 1 else None
    hp = {k: field(f"qwen3.{k}") for k in (
        "block_count", "embedding_length", "attention.head_count", "attention.head_count_kv",
        "attention.key_length", "rope.freq_base", "attention.layer_norm_rms_epsilon")}
    # GGUFReader gives each tensor in row-major order with ggml's dims reversed: (out, in).
    tensors = {t.name: np.asarray(t.data, dtype=np.float32) for t in r.tensors}
    return hp, tensors


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, theta):
    """NEOX-style rotation (halves), which is what Qwen3 uses; x is (T, heads, head_dim)."""
    t, _, d = x.shape
    inv = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    ang = np.arange(t, dtype=np.float64)[:, None] * inv[None, :]
    cos = np.cos(np.concatenate([ang, ang], -1)).astype(np.float32)[:, None, :]
    sin = np.sin(np.concatenate([ang, ang], -1)).astype(np.float32)[:, None, :]
    rot = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1)
    return x * cos + rot * sin


def forward(hp, W, ids):
    """Logits (T, vocab) for the token ids, all in f32."""
    eps, theta = hp["attention.layer_norm_rms_epsilon"], hp["rope.freq_base"]
    nh, nkv, hd = hp["attention.head_count"], hp["attention.head_count_kv"], hp["attention.key_length"]
    x = W["token_embd.weight"][ids]
    t = len(ids)
    mask = np.triu(np.full((t, t), -np.inf, dtype=np.float32), 1)
    for i in range(hp["block_count"]):
        p = f"blk.{i}."
        h = rms_norm(x, W[p + "attn_norm.weight"], eps)
        q = rms_norm((h @ W[p + "attn_q.weight"].T).reshape(t, nh, hd), W[p + "attn_q_norm.weight"], eps)
        k = rms_norm((h @ W[p + "attn_k.weight"].T).reshape(t, nkv, hd), W[p + "attn_k_norm.weight"], eps)
        v = (h @ W[p + "attn_v.weight"].T).reshape(t, nkv, hd)
        q, k = rope(q, theta), rope(k, theta)
        k, v = np.repeat(k, nh // nkv, axis=1), np.repeat(v, nh // nkv, axis=1)
        s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(hd) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        x = x + np.einsum("hqk,khd->qhd", s, v).reshape(t, nh * hd) @ W[p + "attn_output.weight"].T
        h = rms_norm(x, W[p + "ffn_norm.weight"], eps)
        g = h @ W[p + "ffn_gate.weight"].T
        x = x + ((g / (1 + np.exp(-g))) * (h @ W[p + "ffn_up.weight"].T)) @ W[p + "ffn_down.weight"].T
    return rms_norm(x, W["output_norm.weight"], eps) @ W["token_embd.weight"].T


def check(gguf_path, reference, tokenizer_file, tol=2e-3):
    from tokenizers import Tokenizer
    ref = json.loads(Path(reference).read_text())
    tok = Tokenizer.from_file(str(tokenizer_file))
    ids = tok.encode(ref["prompt"], add_special_tokens=False).ids
    if ids != ref["prompt_ids"]:
        sys.exit(f"prompt tokenizes to {ids}, the reference says {ref['prompt_ids']}")
    hp, W = read_gguf(gguf_path)
    if "output.weight" in W:
        sys.exit("tied model must not carry output.weight")
    logits = forward(hp, W, ids)
    worst = 0.0
    for pos in ref["positions"]:
        row = logits[pos["position"]]
        top = np.argsort(-row)[:5].tolist()
        worst = max(worst, float(np.max(np.abs(row[pos["top5_ids"]] - np.array(pos["top5_logits"])))))
        if top != pos["top5_ids"]:
            sys.exit(f"position {pos['position']}: top-5 {top}, reference {pos['top5_ids']}")
    if worst > tol:
        sys.exit(f"top-5 logits differ from the reference by {worst}")
    seq = list(ids)
    for _ in ref["greedy_ids"]:
        seq.append(int(np.argmax(forward(hp, W, seq)[-1])))
    if seq[len(ids):] != ref["greedy_ids"]:
        sys.exit(f"greedy {seq[len(ids):]} != reference {ref['greedy_ids']}")
    print(f"check passed: top-5 at {len(ref['positions'])} positions (max |diff| {worst:.2e}) and "
          f"{len(ref['greedy_ids'])} greedy tokens match: {ref['prompt'] + ref['greedy_text']!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weights", default=".kjv/run", help="folder from train_default_model.py select")
    ap.add_argument("--tokenizer", default=".kjv/tokenizer.json")
    ap.add_argument("--out", default=str(ROOT / "models/default/lathe-kjv-qwen3.gguf"))
    ap.add_argument("--reference-out", default=str(ROOT / "tests/data/default_model/reference.json"))
    args = ap.parse_args()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_gguf(args.weights, args.tokenizer, args.out)
    reference = Path(args.weights) / "reference.json"
    check(args.out, reference, args.tokenizer)
    Path(args.reference_out).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(reference, args.reference_out)
    print(f"wrote {args.reference_out}")


if __name__ == "__main__":
    main()
