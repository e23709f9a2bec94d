#!/usr/bin/env python3
"""HF tokenizers encode throughput (one thread) on the text tokenizer_bench.cpp builds."""
import gzip
import os
import sys
import time

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
from tokenizers import Tokenizer  # noqa: E402

data = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../shared/testdata")


def mixed_text():
    joined = ""
    for name in ["llama-bpe", "qwen2", "gpt-2", "llama-spm"]:
        with open(f"{data}/tokenizers/vectors/{name}.inp", "rb") as f:
            parts = f.read().decode("utf-8").split("\n__ggml_vocab_test__\n")
        joined += "".join(p + "\n" for p in parts[:-1])
    text = ""
    while len(text.encode("utf-8")) < (1 << 20):
        text += joined
    return text


text = mixed_text()
nbytes = len(text.encode("utf-8"))
for name in ["llama3_1", "qwen3"]:
    with gzip.open(f"{data}/tokenizers/{name}/tokenizer.json.gz", "rt", encoding="utf-8") as f:
        tok = Tokenizer.from_str(f.read())
    tok.encode(text, add_special_tokens=False)  # warm-up
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        ids = tok.encode(text, add_special_tokens=False).ids
        times.append(time.perf_counter() - t0)
    best = sorted(times)[len(times) // 2]
    print(f"hf_tokenizers {name}: {nbytes / best / 1e6:.2f} MB/s ({len(ids)} tokens, median of 5)")
