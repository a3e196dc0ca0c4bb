#!/usr/bin/env python3
"""Train Lathe's default model: a small Qwen3 on the King James Bible.

Three steps (docs/default-model.md gives the exact command lines):

  prepare  (any machine; needs the `bible` command of Debian's bible-kjv package, or its
           output in a file, and PyPI tokenizers + numpy)
      python3 scripts/train_default_model.py prepare --out .kjv
    extracts the whole text (31102 verses, one a line), trains a byte-level BPE tokenizer on it
    with the Qwen2 pre-tokenizer, and writes token ids of the training and validation chapters.

  train    (GPU machine; needs torch, transformers 5, safetensors, tokenizers, numpy)
      python3 scripts/train_default_model.py train --data .kjv --out RUN [--dropout P --steps N]
    trains transformers' Qwen3ForCausalLM with bf16 autocast and AdamW on random 256-token
    windows, evaluates on the held-out chapters, and saves the best state by validation loss.

  select   (GPU machine, after one or more train runs)
      python3 scripts/train_default_model.py select --data .kjv --out OUT RUN...
    copies the run with the lowest validation loss to OUT and computes reference.json with
    transformers in f32 on the CPU from exactly the saved weights.

The saved weights are what the GGUF holds: matrices rounded to f16, norms in f32, so the
reference logits are those of the shipped file. scripts/export_default_model.py writes the GGUF.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
VOCAB_SIZE = 8192  # BPE tokens + the 3 special tokens, which take the last ids as in Qwen
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
               r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN3 = dict(vocab_size=VOCAB_SIZE, hidden_size=384, intermediate_size=1024,
             num_hidden_layers=6, num_attention_heads=6, num_key_value_heads=2, head_dim=64,
             max_position_embeddings=1024, rms_norm_eps=1e-6, rope_theta=1e6)
SEQ_LEN = 256
VAL_EVERY_NTH_CHAPTER = 40  # chapters 20, 60, 100, ... (counted from Genesis 1 = 0) are held out
REFERENCE_PROMPT = "In the beginning God created"
REFERENCE_NEW_TOKENS = 32
VERSE_LINE = re.compile(r"^(\d?[A-Za-z]+)(\d+):(\d+) (.+)$")


# ---------------------------------------------------------------- prepare

def read_verses(source):
    """(book, chapter, verse, text) for every verse, from `bible -f` output."""
    if source:
        raw = Path(source).read_text(encoding="utf-8")
    else:
        raw = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], check=True,
                             capture_output=True, text=True).stdout
    verses = []
    for line in raw.splitlines():
        m = VERSE_LINE.match(line)
        if not m:
            sys.exit(f"unexpected line in the bible output: {line!r}")
        verses.append((m.group(1), int(m.group(2)), int(m.group(3)), m.group(4).strip()))
    if len(verses) != 31102:
        sys.exit(f"expected the 31102 verses of the KJV, got {len(verses)}")
    return raw, verses


def chapters_of(verses):
    """[(book, chapter, text)] in order; a chapter's text is its verses, each ending in '\\n'."""
    out = []
    for book, chapter, _, text in verses:
        if not out or out[-1][0] != book or out[-1][1] != chapter:
            out.append([book, chapter, ""])
        out[-1][2] += text + "\n"
    return [tuple(c) for c in out]


def make_tokenizer():
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    return tok


def prepare(args):
    from tokenizers import AddedToken, trainers, pre_tokenizers
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    raw, verses = read_verses(args.source)
    chapters = chapters_of(verses)
    books = []
    for book, _, text in chapters:
        if not books or books[-1][0] != book:
            books.append([book, ""])
        books[-1][1] += text
    full_text = "".join(text for _, text in books)
    (out / "kjv.txt").write_text(full_text, encoding="utf-8")

    tok = make_tokenizer()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE - len(SPECIAL_TOKENS), min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False, special_tokens=[])
    tok.train_from_iterator([text for _, text in books], trainer=trainer)
    if tok.get_vocab_size() != VOCAB_SIZE - len(SPECIAL_TOKENS):
        sys.exit(f"BPE training gave {tok.get_vocab_size()} tokens")
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    assert tok.get_vocab_size() == VOCAB_SIZE
    tok.save(str(out / "tokenizer.json"))
    eot = tok.token_to_id("<|endoftext|>")

    # Streams: books (train) or held-out chapters (val), each followed by <|endoftext|>.
    train_docs, val_docs = {}, []
    for i, (book, _, text) in enumerate(chapters):
        if i % VAL_EVERY_NTH_CHAPTER == VAL_EVERY_NTH_CHAPTER // 2:
            val_docs.append(text)
        else:
            train_docs[book] = train_docs.get(book, "") + text

    def stream(docs):
        ids = []
        for enc in tok.encode_batch(docs, add_special_tokens=False):
            ids += enc.ids + [eot]
        return np.array(ids, dtype=np.uint16)

    train_ids, val_ids = stream(list(train_docs.values())), stream(val_docs)
    np.save(out / "train.npy", train_ids)
    np.save(out / "val.npy", val_ids)
    sample = chapters[0][2]
    assert tok.decode(tok.encode(sample).ids) == sample, "tokenizer does not round-trip"
    import hashlib
    info = dict(bible_output_sha256=hashlib.sha256(raw.encode()).hexdigest(), verses=len(verses),
                chapters=len(chapters), val_chapters=len(val_docs), text_bytes=len(full_text.encode()),
                train_tokens=int(train_ids.size), val_tokens=int(val_ids.size),
                bytes_per_token=len(full_text.encode()) / (train_ids.size + val_ids.size))
    (out / "prepare.json").write_text(json.dumps(info, indent=1) + "\n")
    print(json.dumps(info, indent=1))


# ---------------------------------------------------------------- train

def qwen3_config():
    from transformers import Qwen3Config
    c = dict(QWEN3)
    theta = c.pop("rope_theta")
    return Qwen3Config(**c, tie_word_embeddings=True, attention_dropout=0.0,
                       rope_parameters={"rope_type": "default", "rope_theta": theta},
                       bos_token_id=VOCAB_SIZE - 3, eos_token_id=VOCAB_SIZE - 3,
                       pad_token_id=VOCAB_SIZE - 3)


def add_residual_dropout(model, p):
    """Dropout on each block's two residual branches, through hooks, so the state_dict stays
    exactly transformers' Qwen3 (hooks do nothing in eval mode)."""
    import torch.nn.functional as F

    def hook(module, inputs, output):
        return F.dropout(output, p, module.training)
    for layer in model.model.layers:
        layer.self_attn.o_proj.register_forward_hook(hook)
        layer.mlp.down_proj.register_forward_hook(hook)


def shippable_state(model):
    """The state as the GGUF stores it: 2-D tensors f16, norms f32; no lm_head (tied)."""
    import torch
    out = {}
    for k, v in model.state_dict().items():
        if k == "lm_head.weight":
            continue
        v = v.detach().float().cpu()
        out[k] = (v.half() if v.dim() == 2 else v).contiguous().clone()
    return out


def save_state(state, out, max_shard_bytes=15 * 2**20):
    """Shards under 16 MiB, so each file can come back from the GPU machine."""
    from safetensors.torch import save_file
    shards, cur, size = [], {}, 0
    for k, v in state.items():
        n = v.numel() * v.element_size()
        if cur and size + n > max_shard_bytes:
            shards.append(cur)
            cur, size = {}, 0
        cur[k] = v
        size += n
    shards.append(cur)
    for f in Path(out).glob("model-*.safetensors"):
        f.unlink()
    for i, shard in enumerate(shards):
        save_file(shard, str(Path(out) / f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"))


def load_state(run_dir):
    from safetensors.torch import load_file
    state = {}
    for f in sorted(Path(run_dir).glob("model-*.safetensors")):
        state.update(load_file(str(f)))
    return state


def train(args):
    import torch
    import torch.nn.functional as F
    from transformers import Qwen3ForCausalLM

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(args.seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    data = Path(args.data)
    train_ids = torch.from_numpy(np.load(data / "train.npy").astype(np.int64)).to(dev)
    val_ids = torch.from_numpy(np.load(data / "val.npy").astype(np.int64)).to(dev)
    n_val = (val_ids.numel() - 1) // SEQ_LEN
    val_x = val_ids[:n_val * SEQ_LEN].view(n_val, SEQ_LEN)
    val_y = val_ids[1:n_val * SEQ_LEN + 1].view(n_val, SEQ_LEN)
    g = torch.Generator(device="cpu").manual_seed(1)
    fixed = torch.randint(0, train_ids.numel() - SEQ_LEN - 1, (n_val,), generator=g).to(dev)
    ar = torch.arange(SEQ_LEN + 1, device=dev)

    config = qwen3_config()
    model = Qwen3ForCausalLM(config).to(dev)
    if model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr():
        model.lm_head.weight = model.model.embed_tokens.weight  # tie_word_embeddings
    add_residual_dropout(model, args.dropout)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"[{args.name}] params {n_params} attn {model.config._attn_implementation} device {dev}",
          flush=True)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8, fused=(dev == "cuda"))
    V = config.vocab_size

    def loss_of(x, y):
        with torch.autocast(dev, dtype=torch.bfloat16):
            logits = model(input_ids=x).logits
        return F.cross_entropy(logits.float().view(-1, V), y.reshape(-1))

    @torch.no_grad()
    def evaluate():
        model.eval()
        vl, tl = [], []
        for i in range(0, n_val, args.batch):
            vl.append(loss_of(val_x[i:i + args.batch], val_y[i:i + args.batch]).item())
            w = train_ids[fixed[i:i + args.batch, None] + ar]
            tl.append(loss_of(w[:, :-1], w[:, 1:]).item())
        model.train()
        return sum(vl) / len(vl), sum(tl) / len(tl)

    total = args.steps
    history, best = [], (float("inf"), -1)
    best_state, t0, stale, step = None, time.time(), 0, 0
    model.train()
    while step < total:
        if step == 30 and dev == "cuda":  # fit the schedule into the time budget
            torch.cuda.synchronize()
            t_step = (time.time() - t_timer) / 20
            total = min(total, max(step + 1, int(args.seconds / t_step)))
            print(f"[{args.name}] {t_step * 1000:.1f} ms/step -> {total} steps", flush=True)
        if step == 10:
            if dev == "cuda":
                torch.cuda.synchronize()
            t_timer = time.time()
        warm = min(1.0, (step + 1) / args.warmup)
        progress = min(1.0, step / max(1, total))
        lr = args.lr * warm * (0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * progress)))
        for group in opt.param_groups:
            group["lr"] = lr
        off = torch.randint(0, train_ids.numel() - SEQ_LEN - 1, (args.batch,), device=dev)
        w = train_ids[off[:, None] + ar]
        loss = loss_of(w[:, :-1], w[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step % args.eval_every == 0 or step == total:
            val, tr = evaluate()
            history.append(dict(step=step, lr=lr, train_loss=tr, val_loss=val,
                                 seconds=round(time.time() - t0, 1)))
            print(f"[{args.name}] step {step}/{total} lr {lr:.2e} train {tr:.4f} val {val:.4f} "
                  f"({time.time() - t0:.0f}s)", flush=True)
            if val < best[0]:
                best, stale = (val, step), 0
                best_state = shippable_state(model)
            else:
                stale += 1
                if stale >= args.patience:
                    print(f"[{args.name}] no improvement in {stale} evaluations; stop", flush=True)
                    break
    save_state(best_state, out)
    cfg = config.to_dict()
    cfg["lathe_training"] = dict(run=args.name, best_val_loss=best[0], best_step=best[1],
                                 steps_run=step, planned_steps=total, dropout=args.dropout,
                                 lr=args.lr, weight_decay=args.weight_decay, batch=args.batch,
                                 seq_len=SEQ_LEN, seed=args.seed, params=n_params,
                                 train_tokens=int(train_ids.numel()), val_tokens=int(val_ids.numel()),
                                 seconds=round(time.time() - t0, 1), history=history,
                                 torch=torch.__version__)
    (out / "config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    print(f"[{args.name}] best val {best[0]:.4f} at step {best[1]}", flush=True)


# ---------------------------------------------------------------- select + reference

def reference(run_dir, data):
    """Greedy continuation and top-5 logits by transformers in f32 on the CPU, from the saved
    (f16-rounded) weights widened to f32: what the GGUF file computes."""
    import torch
    import transformers
    from tokenizers import Tokenizer
    from transformers import Qwen3ForCausalLM
    torch.set_num_threads(min(8, os.cpu_count() or 1))
    tok = Tokenizer.from_file(str(Path(data) / "tokenizer.json"))
    model = Qwen3ForCausalLM(qwen3_config()).float().eval()
    state = {k: v.float() for k, v in load_state(run_dir).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    if model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr():
        model.lm_head.weight = model.model.embed_tokens.weight  # tie_word_embeddings
    prompt_ids = tok.encode(REFERENCE_PROMPT, add_special_tokens=False).ids
    ids = list(prompt_ids)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0]
        top = torch.topk(logits, 5, dim=-1)
        positions = [dict(position=i, token_id=ids[i], top5_ids=top.indices[i].tolist(),
                          top5_logits=[round(float(x), 5) for x in top.values[i]])
                     for i in range(len(ids))]
        for _ in range(REFERENCE_NEW_TOKENS):
            nxt = int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
            ids.append(nxt)
    greedy = ids[len(prompt_ids):]
    return dict(
        note="Computed by transformers' Qwen3ForCausalLM in f32 on the CPU from the weights the "
             "GGUF holds (matrices f16, norms f32), widened to f32. Logits rounded to 5 decimals; "
             "positions[i] holds the top-5 next-token logits after prompt_ids[0..i]; the last "
             "one predicts greedy_ids[0]. Greedy decoding, no sampling, no BOS.",
        model="models/default/lathe-kjv-qwen3.gguf", prompt=REFERENCE_PROMPT,
        prompt_ids=prompt_ids, greedy_ids=greedy, greedy_text=tok.decode(greedy),
        positions=positions, transformers=transformers.__version__, torch=torch.__version__)


def select(args):
    runs = []
    for r in args.runs:
        cfg_file = Path(r) / "config.json"
        if cfg_file.exists():
            runs.append((json.loads(cfg_file.read_text())["lathe_training"]["best_val_loss"], r))
    if not runs:
        sys.exit("no finished run")
    runs.sort()
    print("runs by validation loss:", runs, flush=True)
    best = runs[0][1]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for f in Path(best).iterdir():
        if f.suffix in (".safetensors", ".json"):
            shutil.copy(f, out / f.name)
    ref = reference(best, args.data)
    (out / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")
    print("greedy:", repr(REFERENCE_PROMPT + ref["greedy_text"]), flush=True)
    for text in samples(best, args.data):
        print("sample:", repr(text), flush=True)


def samples(run_dir, data, prompts=("In the beginning God created", "And Jesus said unto them,",
                                    "The LORD is my shepherd;"), n_new=60):
    """A few temperature-0.8, top-40 samples, for the documentation only."""
    import torch
    from tokenizers import Tokenizer
    from transformers import Qwen3ForCausalLM
    torch.manual_seed(7)
    tok = Tokenizer.from_file(str(Path(data) / "tokenizer.json"))
    model = Qwen3ForCausalLM(qwen3_config()).float().eval()
    model.load_state_dict({k: v.float() for k, v in load_state(run_dir).items()}, strict=False)
    model.lm_head.weight = model.model.embed_tokens.weight
    out = []
    for prompt in prompts:
        ids = tok.encode(prompt, add_special_tokens=False).ids
        with torch.no_grad():
            for _ in range(n_new):
                logits = model(input_ids=torch.tensor([ids[-1024:]])).logits[0, -1] / 0.8
                v, i = torch.topk(logits, 40)
                ids.append(int(i[torch.multinomial(torch.softmax(v, -1), 1)]))
        out.append(tok.decode(ids))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", default=".kjv")
    p.add_argument("--source", help="a file holding `bible -f Gen1:1-Rev22:21` output")
    t = sub.add_parser("train")
    t.add_argument("--data", default=".kjv")
    t.add_argument("--out", required=True)
    t.add_argument("--name", default="run")
    t.add_argument("--steps", type=int, default=3000)
    t.add_argument("--seconds", type=float, default=200.0, help="time budget; shortens --steps")
    t.add_argument("--batch", type=int, default=64)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--warmup", type=int, default=100)
    t.add_argument("--weight-decay", type=float, default=0.1)
    t.add_argument("--dropout", type=float, default=0.1)
    t.add_argument("--eval-every", type=int, default=100)
    t.add_argument("--patience", type=int, default=8)
    t.add_argument("--seed", type=int, default=1234)
    s = sub.add_parser("select")
    s.add_argument("--data", default=".kjv")
    s.add_argument("--out", required=True)
    s.add_argument("runs", nargs="+")
    args = ap.parse_args()
    {"prepare": prepare, "train": train, "select": select}[args.cmd](args)


if __name__ == "__main__":
    main()
