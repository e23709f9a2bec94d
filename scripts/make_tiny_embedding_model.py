#!/usr/bin/env python3
"""Writes the tiny Qwen3 embedding models the embedding tests run, from ../shared/testdata.

The weights are tiny-qwen3's, stored as sentence-transformers stores Qwen3-Embedding: the bare
decoder (transformers' Qwen3Model: `embed_tokens.weight`, `layers.N.*`, `norm.weight`, no `model.`
prefix, no `lm_head`), with config.json naming Qwen3ForCausalLM as Qwen3-Embedding's does.
Two variants, each with its sentence-transformers modules:

  tiny-qwen3-embedding-last   modules.json: Transformer, Pooling (last token), Normalize
  tiny-qwen3-embedding-mean   modules.json: Transformer, Pooling (mean), no Normalize, so that
                              the mean's divisor shows in the vectors

tiny-qwen3 has no tokenizer; stories260K's (512 tokens, inside tiny-qwen3's 1000) is copied in,
so the server can encode text. Standard library only (CI has no torch): the safetensors file is
rewritten byte for byte under the new names.

Usage: make_tiny_embedding_model.py [--testdata ../shared/testdata] OUT_DIR
"""
import argparse
import json
import shutil
import struct
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VARIANTS = {
    "tiny-qwen3-embedding-last": {"pooling_mode_lasttoken": True, "normalize": True},
    "tiny-qwen3-embedding-mean": {"pooling_mode_mean_tokens": True, "normalize": False},
}


def read_safetensors(path):
    data = path.read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_len])
    return header, data[8 + header_len:]


def write_bare_decoder(src, dst):
    """src's tensors without the `model.` prefix and without lm_head.weight."""
    header, payload = read_safetensors(src)
    out_header = {"__metadata__": header.get("__metadata__", {"format": "pt"})}
    chunks, offset = [], 0
    for name, info in sorted(header.items()):
        if name == "__metadata__" or name == "lm_head.weight":
            continue
        begin, end = info["data_offsets"]
        new_name = name[len("model."):] if name.startswith("model.") else name
        out_header[new_name] = {"dtype": info["dtype"], "shape": info["shape"],
                                "data_offsets": [offset, offset + end - begin]}
        chunks.append(payload[begin:end])
        offset += end - begin
    encoded = json.dumps(out_header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # the data starts 8-byte aligned, as safetensors writes
    dst.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(chunks))


def write_variant(out, source, tokenizer, options):
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    config = json.loads((source / "config.json").read_text())
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    write_bare_decoder(source / "model.safetensors", out / "model.safetensors")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(tokenizer / name, out / name)  # not copy(): the source is read-only
    modules = [{"idx": 0, "name": "0", "path": "",
                "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling",
                "type": "sentence_transformers.models.Pooling"}]
    if options["normalize"]:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize",
                        "type": "sentence_transformers.models.Normalize"})
        (out / "2_Normalize").mkdir()
    (out / "modules.json").write_text(json.dumps(modules, indent=2) + "\n")
    pooling = {"word_embedding_dimension": config["hidden_size"],
               "pooling_mode_cls_token": False,
               "pooling_mode_mean_tokens": options.get("pooling_mode_mean_tokens", False),
               "pooling_mode_max_tokens": False,
               "pooling_mode_mean_sqrt_len_tokens": False,
               "pooling_mode_weightedmean_tokens": False,
               "pooling_mode_lasttoken": options.get("pooling_mode_lasttoken", False),
               "include_prompt": True}
    (out / "1_Pooling").mkdir()
    (out / "1_Pooling" / "config.json").write_text(json.dumps(pooling, indent=2) + "\n")
    (out / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": config["max_position_embeddings"],
                    "do_lower_case": False}, indent=2) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--testdata", type=Path, default=REPO.parent / "shared" / "testdata")
    args = ap.parse_args()
    models = args.testdata / "models"
    for name, options in VARIANTS.items():
        write_variant(args.out / name, models / "tiny-qwen3", models / "stories260K", options)


if __name__ == "__main__":
    main()
