#!/usr/bin/env python3
"""Writes a random-weight llama GGUF of a config.json's shape, for load-time benchmarks.

  make_random_gguf.py --config configs/llama-3-8b.json --type q8_0 OUT.gguf

Every projection and the embeddings / LM head are stored as --type (q8_0, f16 or bf16); norms
as F32 ones. Q8_0 blocks (an f16 scale and 32 int8 quants) get scales near 0.02 / 127 so values
stay in the +-0.02 range of dummy weights. The file holds no tokenizer: drive it with prompt ids
(sgl-generate --prompt-ids). The random bytes come from one pool reused at shifting offsets:
loading cost does not depend on the values, and the file is written at disk speed.
"""
import argparse
import json
import struct

import numpy as np

ALIGN = 32
GGML_TYPES = {"f32": 0, "f16": 1, "q8_0": 8, "bf16": 30}


def kv_str(key, value):
    b = value.encode()
    return struct.pack("<Q", len(key)) + key.encode() + struct.pack("<IQ", 8, len(b)) + b


def kv_u32(key, value):
    return struct.pack("<Q", len(key)) + key.encode() + struct.pack("<II", 4, value)


def kv_f32(key, value):
    return struct.pack("<Q", len(key)) + key.encode() + struct.pack("<If", 6, value)


def tensors_of(c):
    h, inter, vocab = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    head_dim = c.get("head_dim") or h // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * head_dim, c["num_key_value_heads"] * head_dim
    out = [("token_embd.weight", (vocab, h), True)]
    for i in range(c["num_hidden_layers"]):
        p = "blk.%d." % i
        out += [(p + "attn_norm.weight", (h,), False), (p + "attn_q.weight", (q, h), True),
                (p + "attn_k.weight", (kv, h), True), (p + "attn_v.weight", (kv, h), True),
                (p + "attn_output.weight", (h, q), True), (p + "ffn_norm.weight", (h,), False),
                (p + "ffn_gate.weight", (inter, h), True), (p + "ffn_up.weight", (inter, h), True),
                (p + "ffn_down.weight", (h, inter), True)]
    out.append(("output_norm.weight", (h,), False))
    if not c.get("tie_word_embeddings", False):
        out.append(("output.weight", (vocab, h), True))
    return out


def nbytes(shape, kind):
    n = int(np.prod(shape))
    if kind == "q8_0":
        return n // 32 * 34
    return n * (4 if kind == "f32" else 2)


def random_pool(kind, size, rng):
    """At least `size` random bytes of `kind` (whole blocks)."""
    if kind == "q8_0":
        blocks = rng.integers(-127, 128, size=(-(-size // 34), 34), dtype=np.int8).view(np.uint8)
        scale = np.frombuffer(np.float16(0.02 / 127).tobytes(), dtype=np.uint8)
        blocks[:, 0:2] = scale
        return blocks.tobytes()
    values = rng.uniform(-0.02, 0.02, size=-(-size // 2)).astype(np.float32)
    if kind == "f16":
        return values.astype(np.float16).tobytes()
    return (values.view(np.uint32) >> 16).astype(np.uint16).tobytes()  # bf16 (truncated)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("out")
    ap.add_argument("--config", required=True)
    ap.add_argument("--type", choices=["q8_0", "f16", "bf16"], default="q8_0")
    args = ap.parse_args()
    with open(args.config) as f:
        c = json.load(f)
    head_dim = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    kvs = [kv_str("general.architecture", "llama"),
           kv_u32("general.alignment", ALIGN),
           kv_u32("llama.context_length", c["max_position_embeddings"]),
           kv_u32("llama.embedding_length", c["hidden_size"]),
           kv_u32("llama.block_count", c["num_hidden_layers"]),
           kv_u32("llama.feed_forward_length", c["intermediate_size"]),
           kv_u32("llama.attention.head_count", c["num_attention_heads"]),
           kv_u32("llama.attention.head_count_kv", c["num_key_value_heads"]),
           kv_u32("llama.rope.dimension_count", head_dim),
           kv_f32("llama.rope.freq_base", float(c.get("rope_theta", 10000.0))),
           kv_f32("llama.attention.layer_norm_rms_epsilon", float(c["rms_norm_eps"])),
           kv_u32("tokenizer.ggml.bos_token_id", int(c.get("bos_token_id", 1))),
           kv_u32("tokenizer.ggml.eos_token_id", int(c.get("eos_token_id", 2)))]
    tensors = tensors_of(c)
    infos, offset, layout = [], 0, []
    for name, shape, quantized in tensors:
        kind = args.type if quantized else "f32"
        dims = list(reversed(shape))  # GGUF lists ne0 (the row length) first
        infos.append(struct.pack("<Q", len(name)) + name.encode() + struct.pack("<I", len(dims)) +
                     struct.pack("<%dQ" % len(dims), *dims) +
                     struct.pack("<IQ", GGML_TYPES[kind], offset))
        layout.append((offset, nbytes(shape, kind), kind))
        offset += nbytes(shape, kind)
        offset += -offset % ALIGN
    header = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + b"".join(infos)
    header += b"\0" * (-len(header) % ALIGN)
    rng = np.random.default_rng(0)
    pool_size = 34 << 21  # whole q8_0 blocks, whole 16-bit values
    pool = random_pool(args.type, pool_size + (1 << 20), rng)
    ones = np.ones(max(s[0] for _, s, q in tensors if not q), dtype=np.float32).tobytes()
    with open(args.out, "wb") as f:
        f.write(header)
        data_start = f.tell()
        shift = 0
        for (start, size, kind), (_, shape, quantized) in zip(layout, tensors):
            f.seek(data_start + start)
            if kind == "f32":
                f.write(ones[:size])
                continue
            written = 0
            while written < size:
                step = min(size - written, pool_size)
                begin = (shift * 34 * 64) % (1 << 20)  # block-aligned for q8_0, even for 16-bit
                chunk = pool[begin:begin + step]
                assert len(chunk) == step
                f.write(chunk)
                written += step
                shift += 1
        f.truncate(data_start + offset)
    print("wrote %s: %d tensors, %.2f GB" % (args.out, len(tensors), (data_start + offset) / 1e9))


if __name__ == "__main__":
    main()
