#!/usr/bin/env python3
"""Differential fuzz test: sgl.cpp's tokenizer (through tokenizer_driver) against HF tokenizers.

Seeded random strings (mixed scripts, emoji, combining marks, whitespace runs, digits, code,
special tokens inside text) are encoded and decoded by both implementations for the test-data
tokenizers and for synthetic tokenizer.json variants that exercise every supported normalizer,
pre-tokenizer, decoder and added-token option. Exits 1 on any mismatch, 77 (skip) when the
`tokenizers` package is missing.

  fuzz_vs_hf.py --driver build/tests/tokenizer/tokenizer_driver --testdata ../shared/testdata
"""

import argparse
import copy
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile

os.environ["RUST_BACKTRACE"] = "0"  # HF panics on some inputs; those cases are skipped

try:
    from tokenizers import Tokenizer
except ImportError:
    print("SKIP: python package 'tokenizers' is not installed")
    sys.exit(77)

WHITESPACE = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", " \n ", "\u00a0", "\u3000",
              "\u2009", "\u180e", "\u0085", "\u2028", "\x0b", "\x0c", "\u200b"]
WORDS = ["hello", "Hello", "WORLD", "the", "The", "don't", "I'm", "we'll", "they've", "she's",
         "IT'S", "you'RE", "ſs", "l'été", "über", "naïve", "café", "Straße", "İstanbul", "ΣΑΣ",
         "ὀδυσσεύς", "Привет", "мир", "שלום", "مرحبا", "नमस्ते", "こんにちは", "カタカナ", "世界", "你好吗",
         "한국어", "ไทย", "ﬁne", "Ｆｕｌｌｗｉｄｔｈ", "x²", "½", "Ⅻ", "ⓐⓑ", "a\u0301", "e\u0308\u0323",
         "\u0301\u0302", "Z\u0351\u036b\u0343"]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🇺🇸", "❤️", "🦙", "🤖", "✅", "\U0001F9D1\u200D\U0001F4BB"]
DIGITS = ["0", "7", "42", "123", "1234", "3.14159", "1,000,000", "٣٤٥", "१२३", "⁴²", "0x1F"]
PUNCT = [".", ",", "!", "?", "...", "—", "–", "-", "'", "\"", "(", ")", "[", "]", "{", "}", "<",
         ">", "/", "\\", "@", "#", "$", "%", "^", "&", "*", "_", "=", "+", "~", "`", "|", ";",
         ":", "«", "»", "¿", "¡", "“", "”", "’", "・", "。", "、", "▁", "Ġ", "Ċ"]
CODE = ["def f(x):\n    return x + 1\n", "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}",
        "if x == 3:\n  print('ok')", "<div class=\"a\">&amp;</div>", "SELECT * FROM t;",
        "    indented\n        more", "#include <vector>", "a_b_c", "snake_case", "camelCase",
        "https://example.com/path?q=1&r=2", "user@example.com", "\\n\\t", "$HOME/.bashrc"]

OLD_BLOCKS = [(0x00, 0x1F), (0x20, 0x7E), (0x80, 0x24F), (0x300, 0x36F), (0x370, 0x3FF),
              (0x400, 0x4FF), (0x5D0, 0x5EA), (0x620, 0x64A), (0x900, 0x97F), (0xE01, 0xE3A),
              (0x1E00, 0x1EFF), (0x2000, 0x206F), (0x20A0, 0x20B5), (0x2100, 0x22FF),
              (0x2500, 0x25FF), (0x3000, 0x30FF), (0x4E00, 0x9FA5), (0xAC00, 0xD7A3),
              (0xE000, 0xF8FF), (0xFF01, 0xFFEE), (0x1D400, 0x1D6A3), (0x1F300, 0x1F5FF),
              (0x20000, 0x2A6D6)]


def random_text(rng, specials):
    parts = []
    for _ in range(rng.randint(0, 14)):
        kind = rng.random()
        if kind < 0.30:
            parts.append(rng.choice(WORDS))
        elif kind < 0.50:
            parts.append(rng.choice(WHITESPACE))
        elif kind < 0.58:
            parts.append(rng.choice(EMOJI))
        elif kind < 0.68:
            parts.append(rng.choice(DIGITS))
        elif kind < 0.80:
            parts.append(rng.choice(PUNCT))
        elif kind < 0.86:
            parts.append(rng.choice(CODE))
        elif kind < 0.93 and specials:
            parts.append(rng.choice(specials))
        else:
            # Random code points from blocks assigned long ago: HF's tables (Oniguruma, the
            # unicode_categories crate) and ours (PCRE2, utf8proc) date from different Unicode
            # versions and legitimately disagree on recently assigned characters.
            cps = []
            for _ in range(rng.randint(1, 4)):
                lo, hi = rng.choice(OLD_BLOCKS)
                cps.append(chr(rng.randint(lo, hi)))
            parts.append("".join(cps))
    return "".join(parts)


class Driver:
    def __init__(self, binary, target):
        self.proc = subprocess.Popen([binary, target], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, encoding="utf-8")

    def call(self, request):
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("tokenizer_driver exited")
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def load_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def byte_level_pre(add_prefix_space=False, use_regex=False):
    return {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": False,
            "use_regex": use_regex}


def variants(base_bpe, base_spm):
    """Synthetic tokenizer.json dicts exercising components (name, dict)."""
    out = []

    def bpe(name, **changes):
        d = copy.deepcopy(base_bpe)
        d.update(changes)
        out.append((name, d))

    def spm(name, **changes):
        d = copy.deepcopy(base_spm)
        d.update(changes)
        out.append((name, d))

    bl_dec = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
              "use_regex": False}
    bpe("nfkc-lower-digits-punct",
        normalizer={"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
        pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "Punctuation", "behavior": "Isolated"},
            byte_level_pre(add_prefix_space=True, use_regex=True)]},
        decoder=bl_dec)
    bpe("nfd-stripaccents-digits-contiguous",
        normalizer={"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"},
                                                        {"type": "NFKD"}]},
        pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": False},
            {"type": "Punctuation", "behavior": "MergedWithPrevious"},
            byte_level_pre()]},
        decoder=bl_dec)
    for behavior in ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]:
        for invert in [False, True]:
            bpe("split-%s-%s" % (behavior, invert),
                normalizer={"type": "Replace", "pattern": {"Regex": "\\s{3,}"}, "content": "  "},
                pre_tokenizer={"type": "Sequence", "pretokenizers": [
                    {"type": "Split", "pattern": {"Regex": "\\p{N}+|[\\p{P}\\p{S}]"},
                     "behavior": behavior, "invert": invert},
                    {"type": "Split", "pattern": {"String": " "}, "behavior": behavior,
                     "invert": False},
                    byte_level_pre()]},
                decoder=bl_dec)
    bpe("whitespace", normalizer=None,
        pre_tokenizer={"type": "Sequence", "pretokenizers": [{"type": "Whitespace"},
                                                             byte_level_pre()]},
        decoder=bl_dec)
    bpe("whitespace-split-bert", normalizer={"type": "Strip", "strip_left": True,
                                             "strip_right": False},
        pre_tokenizer={"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"},
                                                             {"type": "BertPreTokenizer"},
                                                             byte_level_pre()]},
        decoder=bl_dec)
    bpe("bytelevel-prefix-regex", normalizer={"type": "NFC"},
        pre_tokenizer=byte_level_pre(add_prefix_space=True, use_regex=True),
        decoder=bl_dec)
    bpe("chardelimiter", normalizer={"type": "Prepend", "prepend": "@@"},
        pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "CharDelimiterSplit", "delimiter": "e"}, byte_level_pre()]},
        decoder={"type": "Sequence", "decoders": [bl_dec, {"type": "Replace",
                                                           "pattern": {"Regex": "[aeiou]+"},
                                                           "content": "_"}]})
    bpe("ignore-merges-off", model=dict(base_bpe["model"], ignore_merges=False))

    # Added-token options on the byte-level BPE (normalizer lowercases so that normalized
    # matching differs from raw matching).
    d = copy.deepcopy(base_bpe)
    d["normalizer"] = {"type": "Lowercase"}
    next_id = max(t["id"] for t in d["added_tokens"]) + 1
    extra = [("<mask>", dict(lstrip=True, rstrip=True, single_word=False, normalized=False)),
             ("hello", dict(lstrip=False, rstrip=False, single_word=True, normalized=True)),
             ("WORLD", dict(lstrip=True, rstrip=False, single_word=False, normalized=True)),
             (" x", dict(lstrip=False, rstrip=True, single_word=False, normalized=False)),
             ("ab", dict(lstrip=False, rstrip=False, single_word=True, normalized=False)),
             ("abc", dict(lstrip=True, rstrip=True, single_word=False, normalized=False))]
    for content, flags in extra:
        d["added_tokens"].append(dict(id=next_id, content=content, special=False, **flags))
        next_id += 1
    out.append(("added-token-options", d))

    ms_dec = lambda scheme: {"type": "Metaspace", "replacement": "\u2581",
                             "prepend_scheme": scheme, "split": True}
    for scheme in ["first", "always", "never"]:
        for split in [True, False]:
            spm("metaspace-%s-%s" % (scheme, split), normalizer=None,
                pre_tokenizer={"type": "Metaspace", "replacement": "\u2581",
                               "prepend_scheme": scheme, "split": split},
                decoder={"type": "Sequence", "decoders": [ms_dec(scheme),
                                                          {"type": "ByteFallback"},
                                                          {"type": "Fuse"}]})
    spm("spm-strip-replace", normalizer={"type": "Sequence", "normalizers": [
        {"type": "Strip", "strip_left": False, "strip_right": True},
        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        decoder={"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 2, "stop": 1}]})
    spm("spm-no-fuse-unk", model=dict(base_spm["model"], byte_fallback=False, fuse_unk=False))
    spm("spm-fuse-unk", model=dict(base_spm["model"], byte_fallback=False, fuse_unk=True))
    return out


def hf_call(fn, *args, **kwargs):
    """HF's result, or None where HF itself panics (e.g. Strip decoder on an empty token)."""
    try:
        return fn(*args, **kwargs)
    except BaseException as e:  # pyo3 PanicException derives from BaseException
        if isinstance(e, KeyboardInterrupt):
            raise
        return None


def compare(name, target, hf, driver, rng, iterations, specials, failures, max_report=8):
    vocab_size = hf.get_vocab_size()
    for i in range(iterations):
        text = random_text(rng, specials)
        add = rng.random() < 0.3
        ours = driver.call({"op": "encode", "text": text, "add_special_tokens": add})["ids"]
        theirs = hf.encode(text, add_special_tokens=add).ids
        if ours != theirs:
            failures.append((name, "encode", text, ours, theirs))
            if len([f for f in failures if f[0] == name]) >= max_report:
                return
            continue
        for skip in (True, False):
            ours_text = driver.call({"op": "decode", "ids": theirs, "skip_special_tokens": skip})
            theirs_text = hf_call(hf.decode, theirs, skip_special_tokens=skip)
            if theirs_text is not None and ours_text["text"] != theirs_text:
                failures.append((name, "decode(skip=%s)" % skip, text, ours_text["text"],
                                 theirs_text))
        if i % 4 == 0:
            ids = [rng.randrange(0, vocab_size + 3) for _ in range(rng.randint(0, 12))]
            ours_text = driver.call({"op": "decode", "ids": ids, "skip_special_tokens": False})
            theirs_text = hf_call(hf.decode, ids, skip_special_tokens=False)
            if theirs_text is not None and ours_text["text"] != theirs_text:
                failures.append((name, "decode(random ids)", ids, ours_text["text"], theirs_text))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--driver", required=True)
    parser.add_argument("--testdata", required=True)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--iterations", type=int, default=300)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    td = args.testdata

    targets = [
        ("stories260K", os.path.join(td, "models/stories260K/tokenizer.json")),
        ("llama3_1", os.path.join(td, "tokenizers/llama3_1/tokenizer.json.gz")),
        ("qwen3", os.path.join(td, "tokenizers/qwen3/tokenizer.json.gz")),
        ("llama2", os.path.join(td, "tokenizers/llama2/tokenizer.json.gz")),
    ]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        docs = []
        for name, path in targets:
            docs.append((name, load_json(path)))
        base_bpe = dict(docs[2][1])  # qwen3: byte-level BPE, merges as pairs
        base_spm = dict(docs[0][1])  # stories260K: small sentencepiece-style BPE
        docs += variants(base_bpe, base_spm)
        for name, doc in docs:
            path = os.path.join(tmp, name + ".json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(doc, f, ensure_ascii=False)
            hf = Tokenizer.from_file(path)
            specials = [t["content"] for t in doc.get("added_tokens", [])][:40]
            driver = Driver(args.driver, path)
            before = len(failures)
            compare(name, path, hf, driver, rng, args.iterations, specials, failures)
            driver.close()
            print("%-40s %s" % (name, "ok" if len(failures) == before else
                                "%d mismatches" % (len(failures) - before)))
        # GPT-2's vocab.json + merges.txt through the directory loader.
        gpt2_dir = os.path.join(td, "tokenizers/gpt2")
        with gzip.open(os.path.join(gpt2_dir, "vocab.json.gz"), "rt", encoding="utf-8") as f:
            vocab = json.load(f)
        with gzip.open(os.path.join(gpt2_dir, "merges.txt.gz"), "rt", encoding="utf-8") as f:
            merges = [l for l in f.read().split("\n")[1:] if l]
        from tokenizers import models, pre_tokenizers, decoders, AddedToken
        hf = Tokenizer(models.BPE(vocab, [tuple(m.split(" ")) for m in merges]))
        hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        hf.decoder = decoders.ByteLevel()
        hf.add_special_tokens([AddedToken("<|endoftext|>", special=True)])
        driver = Driver(args.driver, gpt2_dir)
        before = len(failures)
        compare("gpt2", gpt2_dir, hf, driver, rng, args.iterations, ["<|endoftext|>"], failures)
        driver.close()
        print("%-40s %s" % ("gpt2", "ok" if len(failures) == before else
                            "%d mismatches" % (len(failures) - before)))

    for name, what, text, ours, theirs in failures[:40]:
        print("MISMATCH %s %s\n  input: %r\n  ours:  %r\n  hf:    %r" % (name, what, text, ours,
                                                                         theirs))
    print("%d mismatches" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
