#!/usr/bin/env python3
"""Writes a random-weight llama GGUF of a config.json's shape, for load-time benchmarks.

  make_random_gguf.py --config configs/llama-3-8b.json --type q8_0 OUT.gguf

Every projection and the embeddings / LM head are stored as --type (q8_0, f16 or bf16); norms
as F32 ones. --type q4_k_m writes llama.cpp's Q4_K_M mix instead: Q4_K matrices, with Q6_K for
the LM head and for attn_v / ffn_down in the layers llama.cpp gives more bits (the first and
last eighth of the layers and every third one between); its rows must be whole 256-value
super-blocks. Quantized blocks get random quants and fixed small f16 scales, so values stay
near the +-0.02 range of dummy weights. The file holds no tokenizer: drive it with prompt ids
(sgl-generate --prompt-ids). The random bytes come from one pool per stored type reused at
shifting offsets: loading cost does not depend on the values, and the file is written at disk
speed without holding more than the pools in memory.
"""
import argparse
import json
import struct

import numpy as np

ALIGN = 32
GGML_TYPES = {"f32": 0, "f16": 1, "q8_0": 8, "q4_k": 12, "q6_k": 14, "bf16": 30}
# (values, bytes) per block of each stored type (ggml's block structs).
BLOCKS = {"f32": (1, 4), "f16": (1, 2), "bf16": (1, 2), "q8_0": (32, 34), "q4_k": (256, 144),
          "q6_k": (256, 210)}
POOL_BYTES = 64 << 20  # per stored type
SHIFTS = 4096  # distinct block offsets a pool is read from


def kv_str(key, value):
    b = value.encode()
    return struct.pack("<Q", len(key)) + key.encode() + struct.pack("<IQ", 8, len(b)) + b


def kv_u32(key, value):
    return struct.pack("<Q", len(key)) + key.encode() + struct.pack("<II", 4, value)


def kv_f32(key, value):
    return struct.pack("<Q", len(key)) + key.encode() + struct.pack("<If", 6, value)


def tensors_of(c):
    """(name, shape, layer or None, is a matrix) of every tensor."""
    h, inter, vocab = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    head_dim = c.get("head_dim") or h // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * head_dim, c["num_key_value_heads"] * head_dim
    out = [("token_embd.weight", (vocab, h), None, True)]
    for i in range(c["num_hidden_layers"]):
        p = "blk.%d." % i
        out += [(p + "attn_norm.weight", (h,), i, False),
                (p + "attn_q.weight", (q, h), i, True),
                (p + "attn_k.weight", (kv, h), i, True),
                (p + "attn_v.weight", (kv, h), i, True),
                (p + "attn_output.weight", (h, q), i, True),
                (p + "ffn_norm.weight", (h,), i, False),
                (p + "ffn_gate.weight", (inter, h), i, True),
                (p + "ffn_up.weight", (inter, h), i, True),
                (p + "ffn_down.weight", (h, inter), i, True)]
    out.append(("output_norm.weight", (h,), None, False))
    if not c.get("tie_word_embeddings", False):
        out.append(("output.weight", (vocab, h), None, True))
    return out


def more_bits(layer, layers):
    """The layers whose attn_v / ffn_down llama.cpp's Q4_K_M stores as Q6_K."""
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


def kind_of(name, layer, matrix, file_type, layers):
    """The stored type of one tensor."""
    if not matrix:
        return "f32"
    if file_type != "q4_k_m":
        return file_type
    if name == "output.weight":
        return "q6_k"
    if name.endswith(("attn_v.weight", "ffn_down.weight")) and more_bits(layer, layers):
        return "q6_k"
    return "q4_k"


def nbytes(name, shape, kind):
    values, size = BLOCKS[kind]
    if shape[-1] % values:
        raise SystemExit("%s: rows of %d values are not whole %s blocks of %d"
                         % (name, shape[-1], kind, values))
    return int(np.prod(shape)) // values * size


def f16_bytes(value):
    return np.frombuffer(np.float16(value).tobytes(), dtype=np.uint8)


def pool_blocks(kind):
    return POOL_BYTES // BLOCKS[kind][1]


def random_pool(kind, rng):
    """pool_blocks(kind) random blocks of `kind`, as bytes."""
    values, size = BLOCKS[kind]
    if values == 1:
        v = rng.random(pool_blocks(kind), dtype=np.float32) * np.float32(0.04) - np.float32(0.02)
        if kind == "f16":
            return v.astype(np.float16).tobytes()
        if kind == "bf16":
            return (v.view(np.uint32) >> 16).astype(np.uint16).tobytes()  # truncated
        return v.tobytes()
    blocks = rng.integers(0, 256, size=(pool_blocks(kind), size), dtype=np.uint8)
    if kind == "q8_0":  # d | 32 int8: |x| <= 128 d
        blocks[:, 0:2] = f16_bytes(0.02 / 127)
    elif kind == "q4_k":  # d | dmin | 6-bit scales, mins | nibbles: x = d sc q - dmin m
        # mean d * 31.5 * 7.5 - dmin * 31.5 = 0 with dmin = 7.5 d; x in [-0.015, 0.029]
        blocks[:, 0:2] = f16_bytes(2.0 ** -15)
        blocks[:, 2:4] = f16_bytes(7.5 * 2.0 ** -15)
    else:  # q6_k: nibbles | 2-bit highs | int8 scales | d: x = d sc (q - 32), |x| <= 4096 d
        blocks[:, 208:210] = f16_bytes(2.0 ** -18)
    return blocks.tobytes()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("out")
    ap.add_argument("--config", required=True)
    ap.add_argument("--type", choices=["q8_0", "q4_k_m", "f16", "bf16"], default="q8_0")
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
    layers = c["num_hidden_layers"]
    infos, offset, layout = [], 0, []
    for name, shape, layer, matrix in tensors:
        kind = kind_of(name, layer, matrix, args.type, layers)
        dims = list(reversed(shape))  # GGUF lists ne0 (the row length) first
        infos.append(struct.pack("<Q", len(name)) + name.encode() + struct.pack("<I", len(dims)) +
                     struct.pack("<%dQ" % len(dims), *dims) +
                     struct.pack("<IQ", GGML_TYPES[kind], offset))
        size = nbytes(name, shape, kind)
        layout.append((offset, size, kind))
        offset += size
        offset += -offset % ALIGN
    header = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + b"".join(infos)
    header += b"\0" * (-len(header) % ALIGN)
    rng = np.random.default_rng(0)
    pools = {kind: random_pool(kind, rng) for kind in sorted({k for _, _, k in layout})}
    ones = np.ones(max(s[0] for _, s, _, m in tensors if not m), dtype=np.float32).tobytes()
    with open(args.out, "wb") as f:
        f.write(header)
        data_start = f.tell()
        shift = 0
        for start, size, kind in layout:
            f.seek(data_start + start)
            if kind == "f32":
                f.write(ones[:size])
                continue
            pool, block = pools[kind], BLOCKS[kind][1]
            longest = (pool_blocks(kind) - SHIFTS) * block
            written = 0
            while written < size:
                step = min(size - written, longest)  # whole blocks, as size is
                begin = (shift * 61 % SHIFTS) * block
                f.write(pool[begin:begin + step])
                written += step
                shift += 1
        f.truncate(data_start + offset)
    print("wrote %s: %d tensors, %.2f GB" % (args.out, len(tensors), (data_start + offset) / 1e9))


if __name__ == "__main__":
    main()
