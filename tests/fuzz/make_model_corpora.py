#!/usr/bin/env python3
"""Writes the seed corpora of the model-reader fuzz targets (tests/fuzz/corpus/<target>/).

Small valid files of each kind the readers accept, plus a few broken ones; every file stays under
64 KiB. Run from anywhere: python3 tests/fuzz/make_model_corpora.py
"""
import json
import pathlib
import struct

HERE = pathlib.Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
TESTDATA = HERE.parent.parent.parent / "shared" / "testdata" / "models"

# ---- GGUF ----

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
          BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}
GGML_F32, GGML_F16, GGML_Q8_0 = 0, 1, 8


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def payload(vtype, value):
    if vtype == STR:
        return gstr(value)
    if vtype == ARR:
        etype, items = value
        return struct.pack("<IQ", etype, len(items)) + b"".join(payload(etype, v) for v in items)
    return struct.pack(SCALAR[vtype], value)


def q8_0(values):
    out = b""
    for b in range(0, len(values), 32):
        block = values[b:b + 32]
        amax = max(abs(v) for v in block)
        d = amax / 127 if amax else 0.0
        out += struct.pack("<e", d)
        out += bytes((int(round(v / d)) if d else 0) & 0xFF for v in block)
    return out


def gguf(kvs, tensors, alignment=32, version=3):
    """kvs: [(key, type, value)]; tensors: [(name, dims innermost first, ggml type, bytes)]."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for key, vtype, value in kvs:
        out += gstr(key) + struct.pack("<I", vtype) + payload(vtype, value)
    offset, data = 0, b""
    for name, dims, ttype, raw in tensors:
        pad = (-offset) % alignment
        offset += pad
        data += b"\0" * pad
        out += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", ttype, offset)
        offset += len(raw)
        data += raw
    out += b"\0" * ((-len(out)) % alignment)
    return out + data


def f32(n, scale=0.01):
    return struct.pack(f"<{n}f", *[((i * 37) % 17 - 8) * scale for i in range(n)])


def llama_gguf(arch="llama", hidden=32, heads=2, kv_heads=1, ff=32, vocab=8, head_dim=None,
               quant=GGML_F32, extra_kvs=(), bias=False, qk_norm=False, tokenizer=True):
    head_dim = head_dim or hidden // heads
    kvs = [("general.architecture", STR, arch),
           (f"{arch}.context_length", U32, 64),
           (f"{arch}.embedding_length", U32, hidden),
           (f"{arch}.block_count", U32, 1),
           (f"{arch}.feed_forward_length", U32, ff),
           (f"{arch}.attention.head_count", U32, heads),
           (f"{arch}.attention.head_count_kv", U32, kv_heads),
           (f"{arch}.rope.freq_base", F32, 10000.0),
           (f"{arch}.attention.layer_norm_rms_epsilon", F32, 1e-5)]
    if head_dim != hidden // heads:
        kvs.append((f"{arch}.attention.key_length", U32, head_dim))
    if tokenizer:
        tokens = ["<unk>", "<s>", "</s>", "a", "b", "ab", " ", "Ġa"][:vocab]
        kvs += [("tokenizer.ggml.model", STR, "gpt2"),
                ("tokenizer.ggml.pre", STR, "default"),
                ("tokenizer.ggml.tokens", ARR, (STR, tokens)),
                ("tokenizer.ggml.token_type", ARR, (I32, [3, 3, 3] + [1] * (len(tokens) - 3))),
                ("tokenizer.ggml.merges", ARR, (STR, ["a b"])),
                ("tokenizer.ggml.bos_token_id", U32, 1),
                ("tokenizer.ggml.eos_token_id", U32, 2)]
    kvs += list(extra_kvs)
    q, kv = heads * head_dim, kv_heads * head_dim

    def mat(rows, cols):
        raw = struct.unpack(f"<{rows * cols}f", f32(rows * cols))
        if quant == GGML_Q8_0 and cols % 32 == 0:
            return ([cols, rows], GGML_Q8_0, q8_0(raw))
        if quant == GGML_F16:
            return ([cols, rows], GGML_F16, struct.pack(f"<{rows * cols}e", *raw))
        return ([cols, rows], GGML_F32, f32(rows * cols))

    def vec(n):
        return ([n], GGML_F32, f32(n, 1.0))

    t = [("token_embd.weight", *mat(vocab, hidden)), ("output_norm.weight", *vec(hidden)),
         ("blk.0.attn_norm.weight", *vec(hidden)), ("blk.0.attn_q.weight", *mat(q, hidden)),
         ("blk.0.attn_k.weight", *mat(kv, hidden)), ("blk.0.attn_v.weight", *mat(kv, hidden)),
         ("blk.0.attn_output.weight", *mat(hidden, q)), ("blk.0.ffn_norm.weight", *vec(hidden)),
         ("blk.0.ffn_gate.weight", *mat(ff, hidden)), ("blk.0.ffn_up.weight", *mat(ff, hidden)),
         ("blk.0.ffn_down.weight", *mat(hidden, ff))]
    if bias:
        t += [("blk.0.attn_q.bias", *vec(q)), ("blk.0.attn_k.bias", *vec(kv)),
              ("blk.0.attn_v.bias", *vec(kv))]
    if qk_norm:
        t += [("blk.0.attn_q_norm.weight", *vec(head_dim)),
              ("blk.0.attn_k_norm.weight", *vec(head_dim))]
    return gguf(kvs, [(name, dims, ttype, raw) for name, dims, ttype, raw in t])


def gguf_corpus():
    every_type = gguf([("u8", U8, 250), ("i8", I8, -3), ("u16", U16, 65000), ("i16", I16, -7),
                       ("u32", U32, 7), ("i32", I32, -9), ("f32", F32, 1.5), ("b", BOOL, True),
                       ("s", STR, "héllo"), ("u64", U64, 1 << 40), ("i64", I64, -5),
                       ("f64", F64, 0.25),
                       ("nested", ARR, (ARR, [(STR, ["x", "yz"]), (I32, [1, 2])])),
                       ("bools", ARR, (BOOL, [True, False]))],
                      [("t", [4], GGML_F32, f32(4))])
    good = llama_gguf()
    huge_count = (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gstr("tokens") +
                  struct.pack("<IIQ", ARR, U8, 1 << 40) + b"\0" * 16)
    return {
        "llama_f32.gguf": good,
        "llama_f16.gguf": llama_gguf(quant=GGML_F16),
        "llama_q8_0.gguf": llama_gguf(quant=GGML_Q8_0),
        "qwen2_bias.gguf": llama_gguf(arch="qwen2", bias=True),
        "qwen3_qk_norm.gguf": llama_gguf(arch="qwen3", head_dim=24, qk_norm=True),
        "llama_swa.gguf": llama_gguf(extra_kvs=[("llama.attention.sliding_window", U32, 16)]),
        "every_type.gguf": every_type,
        "v2.gguf": gguf([("k", U32, 1)], [("t", [2], GGML_F32, f32(2))], version=2),
        "align64.gguf": gguf([("general.alignment", U32, 64)], [("t", [2], GGML_F32, f32(2))],
                             alignment=64),
        "truncated_header.gguf": good[:300],
        "truncated_data.gguf": good[:-40],
        "huge_count.gguf": huge_count,
    }

# ---- safetensors ----


def safetensors(entries, metadata=None, pad=True):
    """entries: [(name, dtype, shape, bytes)] laid out in order."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in entries:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * ((-len(text) - 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def raw_header(text, data):
    text = text.encode()
    return struct.pack("<Q", len(text)) + text + data


def safetensors_corpus():
    vals = [1.0, -2.0, 0.5, 3.25, -0.125, 8.0]
    f16 = struct.pack("<6e", *vals)
    bf16 = b"".join(struct.pack("<f", v)[2:] for v in vals)
    good = safetensors([("model.w", "F32", [2, 3], struct.pack("<6f", *vals)),
                        ("model.h", "F16", [6], f16), ("model.b", "BF16", [3, 2], bf16),
                        ("model.i", "I32", [2], struct.pack("<2i", 1, -1)),
                        ("model.s", "F32", [], struct.pack("<f", 1.0))],
                       metadata={"format": "pt"})
    return {
        "dtypes.safetensors": good,
        "empty_tensor.safetensors": safetensors([("e", "F32", [0, 4], b""),
                                                 ("w", "F32", [1], struct.pack("<f", 2.0))]),
        "no_padding.safetensors": safetensors([("w", "BF16", [3], bf16[:6])], pad=False),
        "empty_header.safetensors": raw_header("{}", b""),
        "overlap.safetensors": raw_header(
            '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
            '"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', b"\1" * 12),
        "bad_dtype.safetensors": raw_header(
            '{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}', b"\0" * 8),
        "shape_mismatch.safetensors": raw_header(
            '{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', b"\0" * 8),
        "truncated_header.safetensors": good[:40],
        "truncated_data.safetensors": good[:-10],
    }

# ---- config.json ----


def config_corpus():
    out = {}
    if TESTDATA.is_dir():
        for model in sorted(TESTDATA.iterdir()):
            if (model / "config.json").is_file():
                out[f"{model.name}.json"] = (model / "config.json").read_bytes()
    llama3 = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 128256,
              "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
              "num_attention_heads": 32, "num_key_value_heads": 8,
              "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
              "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                               "original_max_position_embeddings": 8192, "rope_type": "llama3"},
              "torch_dtype": "bfloat16", "bos_token_id": 128000,
              "eos_token_id": [128001, 128008, 128009]}
    out["llama3.json"] = json.dumps(llama3).encode()
    mistral = dict(llama3, architectures=["MistralForCausalLM"], model_type="mistral",
                   sliding_window=4096, max_position_embeddings=32768)
    del mistral["rope_scaling"]
    out["mistral_swa.json"] = json.dumps(mistral).encode()
    qwen2 = dict(llama3, architectures=["Qwen2ForCausalLM"], model_type="qwen2",
                 use_sliding_window=True, sliding_window=4096, max_window_layers=28,
                 layer_types=["full_attention"] * 28 + ["sliding_attention"] * 4)
    del qwen2["rope_scaling"]
    out["qwen2_layer_types.json"] = json.dumps(qwen2).encode()
    v5 = dict(llama3, rope_parameters={"rope_theta": 10000.0, "rope_type": "default"}, head_dim=None,
              dtype="float32")
    del v5["rope_scaling"], v5["rope_theta"]
    out["transformers5_layout.json"] = json.dumps(v5).encode()
    out["absurd.json"] = json.dumps(dict(llama3, vocab_size=10**9, num_hidden_layers=2**31)).encode()
    out["odd_head_dim.json"] = json.dumps(dict(llama3, head_dim=127)).encode()
    out["truncated.json"] = json.dumps(llama3).encode()[:200]
    out["not_object.json"] = b"[1, 2, 3]"
    return out


def main():
    for target, files in [("gguf_reader_fuzz", gguf_corpus()),
                          ("safetensors_reader_fuzz", safetensors_corpus()),
                          ("model_config_fuzz", config_corpus())]:
        directory = CORPUS / target
        directory.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            assert len(data) < 64 * 1024, (name, len(data))
            (directory / name).write_bytes(data)
        print(f"{directory}: {len(files)} files")


if __name__ == "__main__":
    main()
