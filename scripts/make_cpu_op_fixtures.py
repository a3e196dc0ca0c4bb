#!/usr/bin/env python3
"""Writes tests/data/cpu_ops/fixtures.json: inputs and expected outputs of the CPU reference ops,
computed here with numpy in float64 the way the published implementations write them (HF transformers'
rotate_half and _compute_llama3_parameters, Meta's complex-number rope, repeat_kv, a masked softmax with
a sink column, a dense mixture). Inputs are float32; expected outputs are float32-rounded.

    python3 scripts/make_cpu_op_fixtures.py [OUT_PATH]
"""
import json
import math
import sys
from pathlib import Path

import numpy as np

rng = np.random.default_rng(20240611)


def f32(a):
    return np.asarray(a, dtype=np.float32)


def rand(*shape, scale=1.0):
    return f32(rng.standard_normal(shape) * scale)


def enc(a):
    a = f32(a)
    return {"shape": list(a.shape), "data": [float(str(v)) for v in a.reshape(-1)]}


def silu(x):
    return x / (1 + np.exp(-x))


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ---- norms and elementwise
def rms_norm(x, w, eps):
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def layer_norm(x, w, b, eps):
    x = x.astype(np.float64)
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu_tanh(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


# ---- rope
def inv_freq(n_rot, base, scaling):
    freq = 1.0 / base ** (np.arange(0, n_rot, 2, dtype=np.float64) / n_rot)
    if scaling["kind"] == "llama3":
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_context"]
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / freq
        llama = np.where(wavelen > low_wavelen, freq / factor, freq)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * llama / factor + smooth * llama
        medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
        freq = np.where(medium, smoothed, llama)
    return freq


def rope(x, positions, n_rot, base, order, scaling):
    x = x.astype(np.float64)
    pos = np.asarray(positions, dtype=np.float64)
    if scaling["kind"] == "linear":
        pos = pos / scaling["factor"]
    angles = pos[:, None] * inv_freq(n_rot, base, scaling)[None, :]  # [rows, n_rot/2]
    rot, rest = x[..., :n_rot], x[..., n_rot:]
    if order == "normal":  # Meta's llama: adjacent pairs as complex numbers
        z = rot[..., 0::2] + 1j * rot[..., 1::2]
        z = z * np.exp(1j * angles)[:, None, :]
        rot = np.stack([z.real, z.imag], axis=-1).reshape(rot.shape)
    else:  # HF: rotate_half over the two halves
        cos = np.cos(np.concatenate([angles, angles], -1))[:, None, :]
        sin = np.sin(np.concatenate([angles, angles], -1))[:, None, :]
        half = n_rot // 2
        rotated = np.concatenate([-rot[..., half:], rot[..., :half]], -1)
        rot = rot * cos + rotated * sin
    return np.concatenate([rot, rest], -1)


# ---- attention: repeat kv heads, mask, softmax with an optional sink column
def attention(q, k, v, positions, scale, window, cap, sinks):
    rows, n_head, d = q.shape
    n_ctx, n_head_kv, _ = k.shape
    k = np.repeat(k.astype(np.float64), n_head // n_head_kv, axis=1)
    v = np.repeat(v.astype(np.float64), n_head // n_head_kv, axis=1)
    scores = np.einsum("rhd,phd->rhp", q.astype(np.float64), k) * (scale or 1 / math.sqrt(d))
    if cap:
        scores = cap * np.tanh(scores / cap)
    slot = np.arange(n_ctx)[None, :]
    pos = np.asarray(positions)[:, None]
    visible = slot <= pos
    if window:
        visible &= pos - slot < window
    scores = np.where(visible[:, None, :], scores, -np.inf)
    if sinks is not None:
        sink_col = np.broadcast_to(np.asarray(sinks, np.float64)[None, :, None], (rows, n_head, 1))
        probs = softmax(np.concatenate([scores, sink_col], -1))[..., :-1]
    else:
        probs = softmax(scores)
    return np.einsum("rhp,phd->rhd", probs, v)


# ---- mixture: every expert densely, then the top k
def mixture(x, router, gate, up, down, k, renormalize):
    x = x.astype(np.float64)
    logits = f32(x @ router.T.astype(np.float64))  # the router's logits are f32 values
    probs = softmax(logits.astype(np.float64))
    out = np.zeros_like(x)
    for r in range(x.shape[0]):
        top = np.argsort(-logits[r], kind="stable")[:k]
        w = probs[r, top]
        if renormalize:
            w = w / w.sum()
        for e, we in zip(top, w):
            h = f32(silu(f32(x[r] @ gate[e].T)) * f32(x[r] @ up[e].T))
            out[r] += we * f32(h.astype(np.float64) @ down[e].T.astype(np.float64))
    return out


def main():
    out_path = Path(sys.argv[1]) if len(sys.argv) > 1 else \
        Path(__file__).resolve().parent.parent / "tests/data/cpu_ops/fixtures.json"
    cases = []

    x, w = rand(3, 64), rand(64)
    cases.append({"op": "rms_norm", "eps": 1e-6, "x": enc(x), "weight": enc(w),
                  "expected": enc(rms_norm(x, w, 1e-6))})
    x, w = rand(2, 4, 16, scale=3), rand(16)
    cases.append({"op": "rms_norm", "eps": 1e-5, "x": enc(x), "weight": enc(w),
                  "expected": enc(rms_norm(x, w, 1e-5))})
    x, w, b = rand(3, 40, scale=2) + 1, rand(40), rand(40)
    cases.append({"op": "layer_norm", "eps": 1e-5, "x": enc(x), "weight": enc(w), "bias": enc(b),
                  "expected": enc(layer_norm(x, w, b, 1e-5))})
    x = rand(4, 33, scale=4)
    cases.append({"op": "softmax", "x": enc(x), "expected": enc(softmax(x.astype(np.float64)))})
    x = f32(np.linspace(-8, 8, 101))
    cases.append({"op": "gelu", "x": enc(x), "expected": enc(gelu_tanh(x))})
    cases.append({"op": "silu", "x": enc(x), "expected": enc(silu(x.astype(np.float64)))})

    none = {"kind": "none", "factor": 1.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_context": 8192}
    llama3 = {"kind": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_context": 8192}
    linear = dict(none, kind="linear", factor=4.0)
    positions = [0, 1, 17, 5000, 30001]
    x = rand(len(positions), 3, 64)
    for order, n_rot, base, scaling in [("normal", 64, 10000.0, none), ("neox", 64, 1000000.0, none),
                                        ("neox", 32, 10000.0, none), ("normal", 64, 500000.0, llama3),
                                        ("neox", 64, 10000.0, linear)]:
        cases.append({"op": "rope", "x": enc(x), "positions": positions, "n_rot": n_rot, "base": base,
                      "order": order, "scaling": scaling,
                      "expected": enc(rope(x, positions, n_rot, base, order, scaling))})

    q, k, v = rand(4, 8, 16, scale=1.5), rand(12, 2, 16, scale=1.5), rand(12, 2, 16)
    positions = [3, 7, 8, 11]
    sinks = rand(8)
    for scale, window, cap, sink in [(0, 0, 0, None), (0, 4, 0, None), (0.7, 0, 5.0, None),
                                     (0, 0, 0, sinks), (0.5, 3, 2.0, sinks)]:
        cases.append({"op": "attention", "q": enc(q), "k": enc(k), "v": enc(v), "positions": positions,
                      "scale": scale, "window": window, "cap": cap,
                      "sinks": [] if sink is None else enc(sink)["data"],
                      "expected": enc(attention(q, k, v, positions, scale, window, cap, sink))})

    x = rand(5, 16)
    router, gate, up, down = rand(6, 16), rand(6, 12, 16), rand(6, 12, 16), rand(6, 16, 12)
    for k_top, renormalize in [(2, True), (3, False), (6, False)]:
        cases.append({"op": "mixture", "x": enc(x), "router": enc(router), "gate": enc(gate),
                      "up": enc(up), "down": enc(down), "k": k_top, "renormalize": renormalize,
                      "expected": enc(mixture(x, router, gate, up, down, k_top, renormalize))})

    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps({"cases": cases}, separators=(",", ":")) + "\n")
    print(f"wrote {len(cases)} cases to {out_path} ({out_path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
