#!/usr/bin/env python3
"""Writes tests/tokenizer/data/smollm2_gguf_tokenizer_golden.json: expected ids and chat renders.

The reference is HF's tokenizer for SmolLM2 rebuilt from the GGUF's metadata with transformers'
own GGUF tokenizer conversion (transformers.integrations.gguf), which needs no torch. transformers
has no entry for tokenizer.ggml.pre = "smollm" and would keep plain ByteLevel, so the
pre-tokenizer is set to the one in HuggingFaceTB/SmolLM2-135M-Instruct's tokenizer.json:
Sequence[Digits(individual_digits=True), ByteLevel(add_prefix_space=False, use_regex=True)]
(the vocab has no multi-digit token, which this script checks). Chat renders come from
transformers' apply_chat_template with the GGUF's tokenizer.chat_template.

Usage: pip install transformers gguf tokenizers
       python3 make_smollm2_tokenizer_golden.py [--gguf PATH] [--testdata DIR] [--out FILE]
"""
import argparse
import json
import os
import random
import re

from gguf import GGUFReader
from tokenizers import pre_tokenizers
from transformers import PreTrainedTokenizerFast
from transformers.integrations.gguf import gguf_tokenizer_mapping as mapping

HERE = os.path.dirname(os.path.abspath(__file__))
SEPARATOR = "\n__ggml_vocab_test__\n"


def read_metadata(path):
    reader = GGUFReader(path)
    return {k: f.contents() for k, f in reader.fields.items() if k.startswith("tokenizer.")}


def build_tokenizer(md):
    tokens = md["tokenizer.ggml.tokens"]
    assert not any(re.fullmatch(r"Ġ?\d\d+", t) for t in tokens), "multi-digit tokens present"
    backend, _ = mapping.convert_gguf_tokenizer(
        "llama",
        {
            "tokenizer_type": md["tokenizer.ggml.model"],
            "pre_tokenizer_type": md["tokenizer.ggml.pre"],
            "tokens": tokens,
            "merges": md["tokenizer.ggml.merges"],
            "token_type": md["tokenizer.ggml.token_type"],
        },
    )
    assert md["tokenizer.ggml.pre"] == "smollm"
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=tokens[md["tokenizer.ggml.bos_token_id"]],
        eos_token=tokens[md["tokenizer.ggml.eos_token_id"]],
        chat_template=md["tokenizer.chat_template"],
    )


def vector_texts(testdata):
    texts = []
    vectors = os.path.join(testdata, "tokenizers", "vectors")
    for name in sorted(os.listdir(vectors)):
        if not name.endswith(".inp"):
            continue
        with open(os.path.join(vectors, name), encoding="utf-8") as f:
            parts = f.read().split(SEPARATOR)
        texts.extend(p for p in parts[:-1] if p not in texts)
    return texts


def fuzz_texts(count, seed):
    rng = random.Random(seed)
    pieces = [
        "hello", "world", "The", " quick", "brown", "fox", "don't", "I'm", "we'll", "it's",
        "12345", "3.14159", "2024-01-01", " 42", "1,000,000", "0x1F", "  ", "   ", "\n", "\n\n",
        "\t", " \n ", "\r\n", "!", "?!", "...", "--", "==", "->", "(", ")", "{", "}", "[]", "#",
        "@user", "https://example.com/a?b=1", "über", "café", "naïve", "Ελληνικά", "Русский",
        "日本語", "中文字符", "한국어", "🙂", "👍🏽", "🤖🤖", "नमस्ते", "العربية", "ﬁ", "Ⅻ", "x²",
        "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<repo_name>", "<|im_start", "im_end|>",
        "def f(x):", "    return x", "if (a && b) {", "printf(\"%d\\n\", n);", "$$", "€100",
    ]
    out = []
    for _ in range(count):
        n = rng.randint(1, 8)
        s = ""
        for _ in range(n):
            r = rng.random()
            if r < 0.75:
                s += rng.choice(pieces)
            elif r < 0.9:
                s += " "
            else:
                s += chr(rng.choice([rng.randint(0x20, 0x7E), rng.randint(0xA0, 0x2FFF),
                                     rng.randint(0x1F300, 0x1FAFF)]))
        out.append(s)
    return out


def chats():
    return [
        {"messages": [{"role": "user", "content": "Hello!"}], "add_generation_prompt": True},
        {"messages": [{"role": "user", "content": "What is 2+2?"},
                      {"role": "assistant", "content": "4."},
                      {"role": "user", "content": "And 3+3?"}],
         "add_generation_prompt": True},
        {"messages": [{"role": "system", "content": "You are a pirate."},
                      {"role": "user", "content": "Say hi\nin two lines."}],
         "add_generation_prompt": False},
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", default=os.environ.get(
        "SGL_SMOLLM2_GGUF",
        os.path.expanduser("~/.cache/sgl.cpp/SmolLM2-135M-Instruct.Q4_1.gguf")))
    ap.add_argument("--testdata", default="/work/shared/testdata")
    ap.add_argument("--out", default=os.path.join(HERE, "data", "smollm2_gguf_tokenizer_golden.json"))
    ap.add_argument("--fuzz", type=int, default=200)
    ap.add_argument("--seed", type=int, default=455)
    args = ap.parse_args()

    md = read_metadata(args.gguf)
    tok = build_tokenizer(md)
    cases = []
    for text in vector_texts(args.testdata) + fuzz_texts(args.fuzz, args.seed):
        cases.append({"text": text, "ids": tok(text, add_special_tokens=False)["input_ids"]})
    chat_cases = []
    for c in chats():
        rendered = tok.apply_chat_template(c["messages"], tokenize=False,
                                           add_generation_prompt=c["add_generation_prompt"])
        chat_cases.append(dict(c, rendered=rendered))
    golden = {
        "source": "make_smollm2_tokenizer_golden.py (transformers GGUF conversion + SmolLM2 "
                  "Digits/ByteLevel pre-tokenizer)",
        "vocab_size": len(md["tokenizer.ggml.tokens"]),
        "bos_token": tok.bos_token,
        "eos_token": tok.eos_token,
        "encode": cases,
        "chat": chat_cases,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        # One case per line keeps the file small and diffable.
        f.write("{\n")
        lines = []
        for key in ("source", "vocab_size", "bos_token", "eos_token"):
            lines.append(f" {json.dumps(key)}: {json.dumps(golden[key], ensure_ascii=False)}")
        for key in ("encode", "chat"):
            items = ",\n  ".join(json.dumps(c, ensure_ascii=False) for c in golden[key])
            lines.append(f" {json.dumps(key)}: [\n  {items}\n ]")
        f.write(",\n".join(lines) + "\n}\n")
    print(f"wrote {args.out}: {len(cases)} encode cases, {len(chat_cases)} chats")


if __name__ == "__main__":
    main()
