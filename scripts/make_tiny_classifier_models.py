#!/usr/bin/env python3
"""Writes the tiny classification and reward models the classifier tests run, from ../shared/testdata.

Each is a tiny causal LM's decoder (its `model.*` tensors, no `lm_head`) under a task head built
from rows of that LM's head, so that transformers' golden logits (golden/<lm>.json,
prefill.last_logits) give every score exactly, with no new reference to compute:

  tiny-llama-classifier   LlamaForSequenceClassification from tiny-llama: score.weight = the LM
                          head's rows LABEL_IDS, no bias; id2label names the three labels
  tiny-qwen3-classifier   Qwen3ForSequenceClassification from tiny-qwen3: the same rows and
                          score.bias = BIAS; num_labels only (labels LABEL_0 ...)
  tiny-qwen2-reward       Qwen2ForRewardModel from tiny-qwen2: score.0 = the LM head's rows
                          REWARD_IDS (hidden_size of them) with bias, ReLU, score.2 = REWARD_W
                          with bias REWARD_B
  tiny-qwen3-reward       Qwen3ForRewardModel from tiny-qwen3: the same head

so a prompt's scores are last_logits[LABEL_IDS] (+ BIAS), and its reward
sum_j REWARD_W[j] * relu(last_logits[REWARD_IDS[j]] + REWARD_B1[j]) + REWARD_B. The head values
are exact in bfloat16, the checkpoints' dtype. stories260K's tokenizer (512 tokens, inside the
tiny models' 1000) is copied in, so the server can take text. Standard library only (CI has no
torch). tests/engine/classifier_test.cpp and tests/server/test_classify.py recompute the
expected scores from the same constants (this file's JSON summary, classifier_heads.json).

Usage: make_tiny_classifier_models.py [--testdata ../shared/testdata] OUT_DIR
"""
import argparse
import json
import shutil
import struct
from pathlib import Path

from make_tiny_embedding_model import read_safetensors  # this folder's, on sys.path as the script's

REPO = Path(__file__).resolve().parents[1]
LABEL_IDS = [123, 117, 7]
BIAS = [0.5, -1.25, 0.0]
HIDDEN = 128  # the tiny models' hidden_size (checked below)
REWARD_IDS = [(7 * j + 3) % 1000 for j in range(HIDDEN)]
REWARD_B1 = [((j % 5) - 2) / 8 for j in range(HIDDEN)]
REWARD_W = [((j % 7) - 3) / 4 for j in range(HIDDEN)]
REWARD_B = 0.75


def bf16(values):
    """Little-endian bfloat16 bytes of values exact in bfloat16."""
    out = b""
    for v in values:
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        assert bits & 0xFFFF == 0, f"{v} is not exact in bfloat16"
        out += struct.pack("<H", bits >> 16)
    return out


def head_rows(header, payload, ids):
    """The LM head's rows `ids`, as stored (BF16)."""
    info = header["lm_head.weight"]
    assert info["dtype"] == "BF16", info["dtype"]
    cols = info["shape"][1]
    begin = info["data_offsets"][0]
    return b"".join(payload[begin + 2 * cols * i:begin + 2 * cols * (i + 1)] for i in ids)


def write_checkpoint(src, dst, head):
    """src's decoder tensors (no lm_head) and the `head` tensors {name: (shape, bytes)}."""
    header, payload = read_safetensors(src)
    out_header = {"__metadata__": {"format": "pt"}}
    chunks, offset = [], 0
    tensors = [(name, info["dtype"], info["shape"],
                payload[info["data_offsets"][0]:info["data_offsets"][1]])
               for name, info in sorted(header.items())
               if name not in ("__metadata__", "lm_head.weight")]
    tensors += [(name, "BF16", shape, data) for name, (shape, data) in sorted(head.items())]
    for name, dtype, shape, data in tensors:
        out_header[name] = {"dtype": dtype, "shape": shape,
                            "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    encoded = json.dumps(out_header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    dst.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(chunks))


def write_model(out, lm, tokenizer, architecture, config_fields, head_of):
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    config = json.loads((lm / "config.json").read_text())
    assert config["hidden_size"] == HIDDEN and not config.get("tie_word_embeddings", False)
    config["architectures"] = [architecture]
    config.update(config_fields)
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    header, payload = read_safetensors(lm / "model.safetensors")
    write_checkpoint(lm / "model.safetensors", out / "model.safetensors", head_of(header, payload))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(tokenizer / name, out / name)  # not copy(): the source is read-only


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--testdata", type=Path, default=REPO.parent / "shared" / "testdata")
    args = ap.parse_args()
    models, tokenizer = args.testdata / "models", args.testdata / "models" / "stories260K"
    n = len(LABEL_IDS)
    write_model(args.out / "tiny-llama-classifier", models / "tiny-llama", tokenizer,
                "LlamaForSequenceClassification",
                {"id2label": {"0": "negative", "1": "neutral", "2": "positive"},
                 "label2id": {"negative": 0, "neutral": 1, "positive": 2}},
                lambda h, p: {"score.weight": ([n, HIDDEN], head_rows(h, p, LABEL_IDS))})
    write_model(args.out / "tiny-qwen3-classifier", models / "tiny-qwen3", tokenizer,
                "Qwen3ForSequenceClassification", {"num_labels": n},
                lambda h, p: {"score.weight": ([n, HIDDEN], head_rows(h, p, LABEL_IDS)),
                              "score.bias": ([n], bf16(BIAS))})
    def reward_head(h, p):
        return {"score.0.weight": ([HIDDEN, HIDDEN], head_rows(h, p, REWARD_IDS)),
                "score.0.bias": ([HIDDEN], bf16(REWARD_B1)),
                "score.2.weight": ([1, HIDDEN], bf16(REWARD_W)),
                "score.2.bias": ([1], bf16([REWARD_B]))}
    for family in ("qwen2", "qwen3"):
        write_model(args.out / f"tiny-{family}-reward", models / f"tiny-{family}", tokenizer,
                    f"{family.capitalize()}ForRewardModel", {"num_labels": 1}, reward_head)
    (args.out / "classifier_heads.json").write_text(json.dumps(
        {"label_ids": LABEL_IDS, "bias": BIAS, "reward_ids": REWARD_IDS,
         "reward_b1": REWARD_B1, "reward_w": REWARD_W, "reward_b": REWARD_B}, indent=1) + "\n")


if __name__ == "__main__":
    main()
