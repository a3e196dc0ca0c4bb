#!/usr/bin/env python3
"""Tokenizer peer fixtures for tests/test_tokenizer.cpp.

Trains small but realistic vocabularies on public-domain text found on this machine (the King James
Bible from Debian's bible-kjv package when present, the licence texts in /usr/share/common-licenses,
and some of Python's own library source for code), writes each as a GGUF with the tokenizer keys
llama.cpp's converter writes, and records the ids the peer gives for a corpus of hard strings:

  qwen2.gguf / qwen2.json      byte-level BPE, Qwen2's pre-tokenizer regex (tokenizers)
  llama3.gguf / llama3.json    byte-level BPE, Llama 3's regex, ignore_merges, BOS (tokenizers)
  gpt2.gguf / gpt2.json        byte-level BPE, GPT-2's regex (pre "gpt-2"; llama.cpp's "default") (tokenizers)
  spm.gguf / spm.json          SentencePiece BPE with byte fallback, as Llama 2 (sentencepiece)

Needs: pip tokenizers, sentencepiece, gguf, numpy. Run: python3 scripts/make_tokenizer_fixtures.py
No normalizer is set on the byte-level peers: llama.cpp (and so Lathe) applies none, while Qwen2's
own tokenizer.json has NFC; the hard strings are NFC already, so the two agree on them.
"""
import glob
import io
import json
import os
import subprocess
import sys
import sysconfig

import gguf
import sentencepiece as spm
import tokenizers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "tokenizer")

QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
# Merges are learned on a coarser split than the one the tokenizer then runs with, so the vocabulary
# has tokens across the target regex's boundaries ("123", "(n", "'s," ...): a pre-tokenizer that splits
# differently from the peer then gives different ids, and the fixtures catch it.
TRAIN_REGEX = r" ?\S+|\s+(?!\S)|\s+"
GPT2_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

UNREACHABLE_WORDS = ["\u0120Xyzzy", "plugh", "\u0120\u00d0\u00bf\u00d1\u0122\u00d0\u00b8"]  # " Xyzzy", "plugh", " при"

HARD_STRINGS = [
    "say Xyzzy or plugh, not xyzzy nor Xyzzyx; при приветствии",
    "Hello, world!",
    "In the beginning God created the heaven and the earth.",
    "  leading spaces and trailing   ",
    "multiple     spaces\tand\ttabs\n\nnewlines\r\nCRLF\n\n\n",
    "   \n   \t\t  \n",
    " ",
    "\n",
    "I'm sure you'll see it's what they've done; I'd say we're ready. DON'T SHOUT, IT'S FINE",
    "Café, naïve, façade, résumé, Ångström, Øresund, Straße, Żółć, İstanbul, déjà vu",
    "Привет, мир! Съешь же ещё этих мягких французских булок.",
    "Γειά σου Κόσμε· ἐν ἀρχῇ ἦν ὁ λόγος",
    "你好，世界！今天天气很好。日本語のテキスト、カタカナ、ひらがな。한국어 텍스트",
    "مرحبا بالعالم، هذا نص عربي.",
    "नमस्ते दुनिया, यह हिंदी पाठ है।",
    "emoji 😀😃 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ 🇫🇷 🤷🏻‍♂️",
    "1 12 123 1234 12345 123456 1234567 3.14159265358979 1,000,000 2024-06-01 0x1F",
    "99999999999999999999 and ٣٤٥ and ௧௨௩ and ½",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }  // dot product",
    "if x!=y&&z>=0||!w: print(f\"{x!r:>10}\")  # comment",
    "<html><body class=\"main\">&amp; &lt;tag&gt;</body></html>",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "text<|endoftext|>more text<|endoftext|>",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>",
    "a <tool_call> b<tool_call>c",
    "<|im_start <|im_end| <|endoftext",
    "NEL\u0085between and nbsp\u00a0here and\u2028line sep\u3000ideographic",
    "x \u0085\u0085 \u0085y\n\u0085 z\u0085",
    "zero\u200bwidth joiner\u200d and soft\u00adhyphen",
    "And the LORD said unto Moses, Stretch out thine hand toward heaven.",
    "'s 't 're 've 'm 'll 'd 'S 'T 'RE ''s '''",
    "!!!??? ... --- *** ~~~ ``` ''' \"\"\"",
    "",
]

SPM_STRINGS = [s for s in HARD_STRINGS if "<" not in s]


def corpus():
    lines = []
    try:
        kjv = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], capture_output=True, text=True,
                             timeout=300, check=True).stdout
        for line in kjv.splitlines():  # "Ge1:1 In the beginning ..."
            lines.append(line.split(" ", 1)[1] if " " in line else line)
    except (OSError, subprocess.SubprocessError):
        print("bible (Debian's bible-kjv) not found; training on licences and Python source only")
    for path in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                lines.extend(f.read().splitlines())
    # Vim's tutor in many languages (Cyrillic, Greek, CJK...), when vim is installed.
    for path in sorted(glob.glob("/usr/share/vim/vim*/tutor/tutor.*.utf-8")):
        with open(path, encoding="utf-8", errors="replace") as f:
            lines.extend(f.read().splitlines())
    lib = sysconfig.get_paths()["stdlib"]
    for name in ["json/decoder.py", "json/encoder.py", "textwrap.py", "heapq.py", "bisect.py",
                 "fractions.py", "string.py", "colorsys.py"]:
        with open(os.path.join(lib, name), encoding="utf-8") as f:
            lines.extend(f.read().splitlines(keepends=True))
    return lines


def split_then_byte_level(regex):
    return pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])


def train_byte_bpe(lines, regex, vocab_size, ignore_merges):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = split_then_byte_level(TRAIN_REGEX)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(lines, trainer)
    tok.pre_tokenizer = split_then_byte_level(regex)
    spec = json.loads(tok.to_str())
    spec["model"]["ignore_merges"] = ignore_merges
    if ignore_merges:
        # Tokens no merge reaches (tiktoken-made vocabularies such as Llama 3's have them): only a
        # tokenizer that looks a whole pre-token up before merging finds them.
        for word in UNREACHABLE_WORDS:
            assert word not in spec["model"]["vocab"]
            spec["model"]["vocab"][word] = len(spec["model"]["vocab"])
    return Tokenizer.from_str(json.dumps(spec))


def vocab_lists(tok):
    """tokens, token types (llama.cpp's: 1 normal, 3 control, 4 user-defined), merges."""
    spec = json.loads(tok.to_str())
    id_to_text = {i: t for t, i in tok.get_vocab(with_added_tokens=True).items()}
    n = max(id_to_text) + 1
    assert sorted(id_to_text) == list(range(n)), "vocabulary ids are not contiguous"
    tokens = [id_to_text[i] for i in range(n)]
    types = [1] * n
    for added in spec["added_tokens"]:
        types[added["id"]] = 3 if added["special"] else 4
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    return tokens, types, merges


def write_gguf(path, arch, model, pre, tokens, types, merges=None, scores=None, bos=None, eos=None,
               eot=None, unk=None, add_bos=False, chat_template=None):
    w = gguf.GGUFWriter(path, arch)
    w.add_tokenizer_model(model)
    if pre is not None:
        w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    if scores is not None:
        w.add_token_scores(scores)
    if merges is not None:
        w.add_token_merges(merges)
    for key, value in [("bos", bos), ("eos", eos), ("eot", eot), ("unk", unk)]:
        if value is not None:
            getattr(w, f"add_{key}_token_id")(value)
    w.add_add_bos_token(add_bos)
    if chat_template:
        w.add_chat_template(chat_template)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def byte_bpe_fixture(name, lines, regex, pre, vocab_size, family):
    llama3 = family == "llama3"
    tok = train_byte_bpe(lines, regex, vocab_size, ignore_merges=llama3)
    specials = {
        "llama3": ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                   "<|eot_id|>"],
        "qwen2": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        "gpt2": ["<|endoftext|>"],
    }[family]
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    tok.add_tokens([AddedToken("<tool_call>", special=False, normalized=False)])
    vocab = tok.get_vocab(with_added_tokens=True)
    bos = vocab[specials[0]]
    eos = eot = vocab[specials[-1]]
    if llama3:
        tok.post_processor = processors.TemplateProcessing(single=f"{specials[0]} $A",
                                                            special_tokens=[(specials[0], bos)])
    tokens, types, merges = vocab_lists(tok)
    write_gguf(os.path.join(OUT, f"{name}.gguf"), "llama" if llama3 else family, "gpt2", pre,
               tokens, types, merges=merges, bos=bos, eos=eos, eot=eot, add_bos=llama3)
    cases = []
    for text in HARD_STRINGS:
        tok.encode_special_tokens = False
        ids = tok.encode(text, add_special_tokens=False).ids
        ids_add_special = tok.encode(text, add_special_tokens=True).ids
        tok.encode_special_tokens = True
        ids_no_parse = tok.encode(text, add_special_tokens=False).ids
        tok.encode_special_tokens = False
        assert tok.decode(ids, skip_special_tokens=False) == text, text
        cases.append({"text": text, "ids": ids, "ids_add_special": ids_add_special,
                      "ids_no_parse": ids_no_parse})
    return {"peer": f"tokenizers {tokenizers.__version__}", "n_vocab": len(tokens), "cases": cases}


def spm_fixture(lines):
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=3000, model_type="bpe",
        byte_fallback=True, normalization_rule_name="identity", remove_extra_whitespaces=False,
        add_dummy_prefix=True, split_digits=True, allow_whitespace_only_pieces=True,
        character_coverage=0.9995, num_threads=1, minloglevel=2, input_sentence_size=0)
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
    n = sp.get_piece_size()
    tokens = [sp.id_to_piece(i) for i in range(n)]
    scores = [sp.get_score(i) for i in range(n)]
    types = []
    for i in range(n):
        types.append(2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 6 if sp.is_byte(i)
                     else 5 if sp.is_unused(i) else 1)
    write_gguf(os.path.join(OUT, "spm.gguf"), "llama", "llama", None, tokens, types,
               scores=scores, bos=sp.bos_id(), eos=sp.eos_id(),
               unk=sp.unk_id(), add_bos=True)
    cases = []
    for text in SPM_STRINGS:
        ids = sp.encode(text)
        cases.append({"text": text, "ids": ids, "decoded": sp.decode(ids)})
    return {"peer": f"sentencepiece {spm.__version__}", "n_vocab": n, "cases": cases}


def main():
    os.makedirs(OUT, exist_ok=True)
    lines = corpus()
    print(f"corpus: {len(lines)} lines, {sum(len(l) for l in lines)} characters")
    fixtures = {
        "qwen2": byte_bpe_fixture("qwen2", lines, QWEN2_REGEX, "qwen2", 6000, "qwen2"),
        "llama3": byte_bpe_fixture("llama3", lines, LLAMA3_REGEX, "llama-bpe", 5000, "llama3"),
        "gpt2": byte_bpe_fixture("gpt2", lines, GPT2_REGEX, "gpt-2", 3000, "gpt2"),
        "spm": spm_fixture(lines),
    }
    for name, fixture in fixtures.items():
        with open(os.path.join(OUT, f"{name}.json"), "w", encoding="utf-8") as f:
            json.dump(fixture, f, ensure_ascii=False, indent=1)
        print(f"{name}: {fixture['n_vocab']} tokens, {len(fixture['cases'])} cases")


if __name__ == "__main__":
    sys.exit(main())
