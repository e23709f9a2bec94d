#!/usr/bin/env python3
"""Writes random-weight EAGLE and EAGLE-3 draft heads for the tiny golden models, with the draft
forward's reference outputs computed here in numpy (issue #23's test assets).

Speculative decoding is exact whatever the draft proposes, so the heads are random: the tests
that use them check that a draft of any quality leaves greedy output unchanged, and (with
reference.json) that our draft forward computes what SGLang's does on the same inputs.

For each target model T of --targets (a folder of --testdata/models) it writes:

  OUT/T-eagle/    LlamaForCausalLMEagle, SGLang's llama_eagle.py layout (EAGLE-1/2):
                  fc.weight [H, 2H] and fc.bias [H] over concat(embed(token), target hidden);
                  layers.0.* one Llama decoder layer without its input_layernorm (EAGLE skips
                  it); no final norm; the embeddings and the LM head are the target's.
  OUT/T-eagle-repeat/  an EAGLE head whose drafts repeat the token it reads (fc passes the
                  target hidden state through, the layer adds nothing): the target's own greedy
                  choice at the position before, accepted wherever greedy output repeats.
  OUT/T-eagle3/   LlamaForCausalLMEagle3, SGLang's llama_eagle3.py layout (EAGLE-3):
                  fc.weight [H, 3H] over the target's three captured hidden states;
                  midlayer.{input_layernorm, hidden_norm, post_attention_layernorm}.weight,
                  midlayer.self_attn.{q,k,v}_proj over concat(norm(embed), norm(hidden)) [2H],
                  o_proj, mlp; norm.weight; its own lm_head.weight [D, H] over a draft vocabulary
                  of D ids; d2t i64 [D] (target id = draft id + d2t[draft id]); t2d bool [V].
                  The embeddings are the target's.

Each folder holds config.json, model.safetensors (f32) and reference.json: a draft extend of
--tokens tokens from position 0 (causal attention over them), given token ids and target hidden
states drawn here, with the logits (target vocabulary for EAGLE, draft vocabulary for EAGLE-3)
and the hidden states the next draft step reads (the layer's output before any final norm).

For plain Llama targets (no q/k/v bias, no q/k norm) OUT/T-target.json holds the target's own
forward over those tokens: the residual stream after each layer (what EAGLE-3 captures) and
the final norm's output (what EAGLE reads).

With --repeat-head-for CONFIG it writes only OUT/<CONFIG's name>-eagle-repeat: the repeat head
in that target's shape (e.g. configs/llama-3-8b.json), in bf16, for speed runs.

With --eagle3-head-for CONFIG it writes only OUT/<CONFIG's name>-eagle3-zero: an EAGLE-3 head in
that target's shape (the engine's default aux layers, as the SmolLM2 training script's; a draft
vocabulary of --draft-vocab ids), bf16, zeros but the norms: its drafts never stand, so it is
for speed runs with sgl-bench's --speculative-bench-accept-length, which costs a trained head's
step at a given accept length.

With --fitted-head-for T it writes only OUT/T-eagle-fitted: an EAGLE head whose fc is a ridge
regression of the target's next hidden state on (embed(token), hidden state) over T's golden
continuations, its layer adding nothing: drafts a trained target (stories260K) often accepts,
for the statistical test of sampled output (tests/speculative/speculative_sampling_stats_test).

Usage: make_eagle_heads.py [--testdata ../shared/testdata] [--targets tiny-llama,tiny-qwen3] OUT
numpy only (CI has no torch).
"""
import argparse
import json
import struct
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "BOOL": np.bool_}


def read_safetensors(path):
    data = path.read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_len])
    payload = data[8 + header_len:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = payload[begin:end]
        if info["dtype"] == "BF16":  # the high half of an f32
            bits = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
            array = bits.view(np.float32)
        else:
            array = np.frombuffer(raw, dtype=SAFETENSORS_DTYPES[info["dtype"]])
        tensors[name] = array.reshape(info["shape"])
    return tensors


def write_safetensors(path, tensors):
    # uint16 arrays hold bf16 bit patterns (numpy has no bf16).
    names = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64", np.dtype(np.bool_): "BOOL",
             np.dtype(np.uint16): "BF16"}
    header, chunks, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        array = np.ascontiguousarray(tensors[name])
        raw = array.tobytes()
        header[name] = {"dtype": names[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(chunks))


class Draws:
    """Random weights scaled so activations stay O(1) through the layer."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def linear(self, out_features, in_features):
        return (self.rng.standard_normal((out_features, in_features)) /
                np.sqrt(in_features)).astype(np.float32)

    def norm(self, size):
        return (1.0 + 0.1 * self.rng.standard_normal(size)).astype(np.float32)


def rms_norm(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def round_to_bf16(x):
    """f32 values rounded to the nearest bf16 (ties to even), as f32."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def rope(x, positions, theta, bf16_freqs=False):
    """x [T, heads, head_dim], rotate-half RoPE as transformers' Llama: the angles in f32, from
    frequencies transformers keeps in the checkpoint's dtype (bf16-rounded for bf16 models)."""
    half = x.shape[-1] // 2
    inv_freq = (1.0 / theta ** (np.arange(0, half, dtype=np.float64) * 2 / x.shape[-1]))
    inv_freq = inv_freq.astype(np.float32)
    if bf16_freqs:
        inv_freq = round_to_bf16(inv_freq)
    angles = np.outer(positions.astype(np.float32), inv_freq).astype(np.float32).astype(np.float64)
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def attention(x, w, prefix, cfg, positions):
    """Causal GQA self-attention over x [T, in]; w holds {prefix}{q,k,v,o}_proj.weight."""
    heads, kv_heads, head_dim = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    t = x.shape[0]
    q = (x @ w[prefix + "q_proj.weight"].T).reshape(t, heads, head_dim)
    k = (x @ w[prefix + "k_proj.weight"].T).reshape(t, kv_heads, head_dim)
    v = (x @ w[prefix + "v_proj.weight"].T).reshape(t, kv_heads, head_dim)
    bf16 = cfg.get("dtype", cfg.get("torch_dtype")) == "bfloat16"
    q = rope(q, positions, cfg["rope_theta"], bf16)
    k = rope(k, positions, cfg["rope_theta"], bf16)
    group = heads // kv_heads
    out = np.zeros((t, heads, head_dim))
    causal = np.triu(np.full((t, t), -np.inf), 1)
    for h in range(heads):
        scores = q[:, h] @ k[:, h // group].T / np.sqrt(head_dim) + causal
        p = np.exp(scores - scores.max(axis=-1, keepdims=True))
        out[:, h] = (p / p.sum(axis=-1, keepdims=True)) @ v[:, h // group]
    return out.reshape(t, heads * head_dim) @ w[prefix + "o_proj.weight"].T


def mlp(x, w, prefix):
    gate, up = x @ w[prefix + "gate_proj.weight"].T, x @ w[prefix + "up_proj.weight"].T
    return (gate / (1 + np.exp(-gate)) * up) @ w[prefix + "down_proj.weight"].T


def draft_config(target, architecture, hidden_layers):
    """The draft's config.json: the target's Llama dimensions (head_dim = hidden / heads)."""
    heads = target["num_attention_heads"]
    rope_theta = target.get("rope_parameters", {}).get("rope_theta", target.get("rope_theta", 1e4))
    return {
        "architectures": [architecture], "model_type": "llama", "hidden_act": "silu",
        "hidden_size": target["hidden_size"], "intermediate_size": target["intermediate_size"],
        "num_attention_heads": heads, "num_key_value_heads": target["num_key_value_heads"],
        "head_dim": target["hidden_size"] // heads, "num_hidden_layers": hidden_layers,
        "rms_norm_eps": target["rms_norm_eps"], "rope_theta": rope_theta,
        "max_position_embeddings": target["max_position_embeddings"],
        "vocab_size": target["vocab_size"], "tie_word_embeddings": False,
        "bos_token_id": target.get("bos_token_id"), "eos_token_id": target.get("eos_token_id"),
        "torch_dtype": "float32",
    }


def layer_weights(draws, cfg, prefix, attention_in):
    h, i = cfg["hidden_size"], cfg["intermediate_size"]
    q_out = cfg["num_attention_heads"] * cfg["head_dim"]
    kv_out = cfg["num_key_value_heads"] * cfg["head_dim"]
    return {
        prefix + "self_attn.q_proj.weight": draws.linear(q_out, attention_in),
        prefix + "self_attn.k_proj.weight": draws.linear(kv_out, attention_in),
        prefix + "self_attn.v_proj.weight": draws.linear(kv_out, attention_in),
        prefix + "self_attn.o_proj.weight": draws.linear(h, q_out),
        prefix + "post_attention_layernorm.weight": draws.norm(h),
        prefix + "mlp.gate_proj.weight": draws.linear(i, h),
        prefix + "mlp.up_proj.weight": draws.linear(i, h),
        prefix + "mlp.down_proj.weight": draws.linear(h, i),
    }


def eagle_forward(w, target, cfg, ids, hidden, positions):
    """SGLang's LlamaForCausalLMEagle: fc, one decoder layer without input norm, target head."""
    eps = cfg["rms_norm_eps"]
    x = np.concatenate([target["embed"][ids], hidden], axis=-1) @ w["fc.weight"].T + w["fc.bias"]
    residual = x + attention(x, w, "layers.0.self_attn.", cfg, positions)
    out = mlp(rms_norm(residual, w["layers.0.post_attention_layernorm.weight"], eps), w,
              "layers.0.mlp.") + residual
    return out @ target["lm_head"].T, out


def eagle3_forward(w, target, cfg, ids, hidden, positions):
    """SGLang's LlamaForCausalLMEagle3: fc over three hidden states, the midlayer, own head."""
    eps = cfg["rms_norm_eps"]
    x = hidden @ w["fc.weight"].T
    inputs = np.concatenate([rms_norm(target["embed"][ids], w["midlayer.input_layernorm.weight"], eps),
                             rms_norm(x, w["midlayer.hidden_norm.weight"], eps)], axis=-1)
    residual = x + attention(inputs, w, "midlayer.self_attn.", cfg, positions)
    out = mlp(rms_norm(residual, w["midlayer.post_attention_layernorm.weight"], eps), w,
              "midlayer.mlp.") + residual
    return rms_norm(out, w["norm.weight"], eps) @ w["lm_head.weight"].T, out


def write_head(out, cfg, weights, forward, target, hidden_width, tokens, draws):
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    write_safetensors(out / "model.safetensors", weights)
    ids = draws.rng.integers(0, cfg["vocab_size"], tokens)
    hidden = draws.rng.standard_normal((tokens, hidden_width)).astype(np.float32)
    positions = np.arange(tokens)
    logits, next_hidden = forward(weights, target, cfg, ids, hidden.astype(np.float64), positions)
    reference = {"input_ids": ids.tolist(), "positions": positions.tolist(),
                 "hidden_states": hidden.tolist(), "logits": logits.astype(np.float32).tolist(),
                 "next_hidden_states": next_hidden.astype(np.float32).tolist()}
    (out / "reference.json").write_text(json.dumps(reference) + "\n")


def target_forward(tensors, cfg, ids):
    """transformers' Llama over ids from position 0: each layer's output stream, final norm."""
    eps = cfg["rms_norm_eps"]
    attn_cfg = {**cfg, "rope_theta": cfg.get("rope_parameters", {}).get("rope_theta", 1e4)}
    w = {k: v.astype(np.float64) for k, v in tensors.items()}
    stream = w["model.embed_tokens.weight"][ids]
    positions = np.arange(len(ids))
    layers = []
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        stream = stream + attention(rms_norm(stream, w[p + "input_layernorm.weight"], eps), w,
                                    p + "self_attn.", attn_cfg, positions)
        stream = stream + mlp(rms_norm(stream, w[p + "post_attention_layernorm.weight"], eps), w,
                              p + "mlp.")
        layers.append(stream)
    return layers, rms_norm(stream, w["model.norm.weight"], eps)


def write_target_reference(path, tensors, cfg, tokens, rng):
    ids = rng.integers(0, cfg["vocab_size"], tokens)
    layers, final = target_forward(tensors, cfg, ids)
    reference = {"input_ids": ids.tolist(),
                 "layer_outputs": [layer.astype(np.float32).tolist() for layer in layers],
                 "final_norm_output": final.astype(np.float32).tolist()}
    path.write_text(json.dumps(reference) + "\n")


def load_target(model_dir):
    """The target's config, tensors, and its embeddings and LM head (f64) as the heads share them."""
    target_cfg = json.loads((model_dir / "config.json").read_text())
    tensors = read_safetensors(model_dir / "model.safetensors")
    embed = tensors["model.embed_tokens.weight"].astype(np.float64)
    head = embed if target_cfg.get("tie_word_embeddings") else tensors["lm_head.weight"]
    return target_cfg, tensors, {"embed": embed, "lm_head": head.astype(np.float64)}


def write_heads(model_dir, out_dir, tokens, draft_vocab):
    name = model_dir.name
    target_cfg, tensors, target = load_target(model_dir)
    draws = Draws(sum(map(ord, name)))

    cfg = draft_config(target_cfg, "LlamaForCausalLMEagle", 1)
    h = cfg["hidden_size"]
    weights = {"fc.weight": draws.linear(h, 2 * h),
               "fc.bias": (0.1 * draws.rng.standard_normal(h)).astype(np.float32),
               **layer_weights(draws, cfg, "layers.0.", h)}
    write_head(out_dir / f"{name}-eagle", cfg, weights, eagle_forward, target, h, tokens, draws)

    cfg = draft_config(target_cfg, "LlamaForCausalLMEagle3", 1)
    vocab = cfg["vocab_size"]
    cfg["draft_vocab_size"] = draft_vocab
    layers = target_cfg["num_hidden_layers"]
    # SGLang captures the hidden state entering layer id + 1 for each id: ids <= layers - 2.
    cfg["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": [0, max(0, layers // 2 - 1),
                                                                 max(0, layers - 2)]}
    draft_ids = np.sort(draws.rng.choice(vocab, draft_vocab, replace=False))
    t2d = np.zeros(vocab, dtype=np.bool_)
    t2d[draft_ids] = True
    weights = {"fc.weight": draws.linear(h, 3 * h),
               "midlayer.input_layernorm.weight": draws.norm(h),
               "midlayer.hidden_norm.weight": draws.norm(h),
               **layer_weights(draws, cfg, "midlayer.", 2 * h),
               "norm.weight": draws.norm(h),
               "lm_head.weight": draws.linear(draft_vocab, h),
               "d2t": (draft_ids - np.arange(draft_vocab)).astype(np.int64),
               "t2d": t2d}
    write_head(out_dir / f"{name}-eagle3", cfg, weights, eagle3_forward, target, 3 * h, tokens,
               draws)
    # A config without `architectures` (stories260K's) is a plain Llama by its model_type.
    llama = target_cfg.get("architectures", [target_cfg.get("model_type")]) in (
        ["LlamaForCausalLM"], ["llama"])
    if llama and not target_cfg.get("attention_bias"):
        write_target_reference(out_dir / f"{name}-target.json", tensors, target_cfg, tokens,
                               draws.rng)

    # A head that drafts its input token again: fc passes the target's hidden state through and
    # the layer adds nothing (o_proj and down_proj zero), so its logits are the target's own at
    # that position. Where greedy output repeats a token, every such draft is accepted.
    cfg = draft_config(target_cfg, "LlamaForCausalLMEagle", 1)
    weights = {**layer_weights(draws, cfg, "layers.0.", h),
               "fc.weight": np.concatenate([np.zeros((h, h)), np.eye(h)], axis=1).astype(np.float32),
               "fc.bias": np.zeros(h, dtype=np.float32)}
    weights["layers.0.self_attn.o_proj.weight"][:] = 0
    weights["layers.0.mlp.down_proj.weight"][:] = 0
    write_head(out_dir / f"{name}-eagle-repeat", cfg, weights, eagle_forward, target, h, tokens,
               draws)


def write_fitted_head(model_dir, golden_path, out_dir, tokens):
    """An EAGLE head fitted to the target: fc maps concat(embed(token), target hidden at q) to the
    target's hidden at q + 1 by ridge regression over the golden prompts and greedy continuations,
    and the layer adds nothing (o_proj and down_proj zero), so its drafts are a linear guess of
    the target's next choice. On a trained target (stories260K) they stand often enough under
    sampling for a statistical test of the accepted tokens."""
    name = model_dir.name
    target_cfg, tensors, target = load_target(model_dir)
    inputs, outputs = [], []
    for case in json.loads(golden_path.read_text())["cases"]:
        ids = np.array(case["prompt_ids"] + case["greedy_ids"])
        _, final = target_forward(tensors, target_cfg, ids)
        inputs.append(np.concatenate([target["embed"][ids[1:]], final[:-1], np.ones((len(ids) - 1, 1))], 1))
        outputs.append(final[1:])
    x, y = np.concatenate(inputs), np.concatenate(outputs)
    w = np.linalg.solve(x.T @ x + 0.1 * np.eye(x.shape[1]), x.T @ y)  # [2H + 1, H]
    draws = Draws(sum(map(ord, name)) + 1)
    cfg = draft_config(target_cfg, "LlamaForCausalLMEagle", 1)
    weights = {**layer_weights(draws, cfg, "layers.0.", cfg["hidden_size"]),
               "fc.weight": w[:-1].T.astype(np.float32), "fc.bias": w[-1].astype(np.float32)}
    weights["layers.0.self_attn.o_proj.weight"][:] = 0
    weights["layers.0.mlp.down_proj.weight"][:] = 0
    write_head(out_dir / f"{name}-eagle-fitted", cfg, weights, eagle_forward, target,
               cfg["hidden_size"], tokens, draws)


BF16_ONE = 0x3F80  # bf16 bit patterns are stored as uint16 (write_safetensors)


def zero_layer_bf16(cfg, prefix, attention_in):
    """A decoder layer in bf16 that adds nothing: every projection zero, the post-attention norm
    one."""
    h, inter = cfg["hidden_size"], cfg["intermediate_size"]
    q_out = cfg["num_attention_heads"] * cfg["head_dim"]
    kv_out = cfg["num_key_value_heads"] * cfg["head_dim"]
    zeros = lambda *shape: np.zeros(shape, dtype=np.uint16)  # noqa: E731
    return {prefix + "self_attn.q_proj.weight": zeros(q_out, attention_in),
            prefix + "self_attn.k_proj.weight": zeros(kv_out, attention_in),
            prefix + "self_attn.v_proj.weight": zeros(kv_out, attention_in),
            prefix + "self_attn.o_proj.weight": zeros(h, q_out),
            prefix + "post_attention_layernorm.weight": np.full(h, BF16_ONE, dtype=np.uint16),
            prefix + "mlp.gate_proj.weight": zeros(inter, h),
            prefix + "mlp.up_proj.weight": zeros(inter, h),
            prefix + "mlp.down_proj.weight": zeros(h, inter)}


def write_bf16_head(out, cfg, weights):
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    write_safetensors(out / "model.safetensors", weights)


def write_repeat_head_for(config_path, out_dir):
    """The repeat head in the shape of a target's config (e.g. configs/llama-3-8b.json), bf16,
    without a reference: for speed runs on dummy targets. Only fc and the norms are non-zero."""
    target_cfg = json.loads(config_path.read_text())
    cfg = {**draft_config(target_cfg, "LlamaForCausalLMEagle", 1), "torch_dtype": "bfloat16"}
    h = cfg["hidden_size"]
    fc = np.zeros((h, 2 * h), dtype=np.uint16)
    fc[np.arange(h), h + np.arange(h)] = BF16_ONE
    weights = {"fc.weight": fc, "fc.bias": np.zeros(h, dtype=np.uint16),
               **zero_layer_bf16(cfg, "layers.0.", h)}
    write_bf16_head(out_dir / f"{config_path.stem}-eagle-repeat", cfg, weights)


def write_eagle3_zero_head_for(config_path, out_dir, draft_vocab):
    """An EAGLE-3 head in the shape of a target's config, bf16, zeros but the norms (module
    docstring). Its aux layers are the engine's default for the target (SGLang's)."""
    target_cfg = json.loads(config_path.read_text())
    cfg = {**draft_config(target_cfg, "LlamaForCausalLMEagle3", 1), "torch_dtype": "bfloat16"}
    h = cfg["hidden_size"]
    d = min(draft_vocab, cfg["vocab_size"])
    cfg["draft_vocab_size"] = d
    one = lambda n: np.full(n, BF16_ONE, dtype=np.uint16)  # noqa: E731
    weights = {"fc.weight": np.zeros((h, 3 * h), dtype=np.uint16),
               "midlayer.input_layernorm.weight": one(h),
               "midlayer.hidden_norm.weight": one(h),
               **zero_layer_bf16(cfg, "midlayer.", 2 * h),
               "norm.weight": one(h),
               "lm_head.weight": np.zeros((d, h), dtype=np.uint16),
               "d2t": np.zeros(d, dtype=np.int64)}
    write_bf16_head(out_dir / f"{config_path.stem}-eagle3-zero", cfg, weights)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--testdata", type=Path, default=REPO.parent / "shared" / "testdata")
    parser.add_argument("--targets", default="tiny-llama,tiny-llama-tied,tiny-qwen2,tiny-qwen3")
    parser.add_argument("--tokens", type=int, default=7)
    parser.add_argument("--draft-vocab", type=int, default=256)
    parser.add_argument("--repeat-head-for", type=Path, metavar="CONFIG",
                        help="write only a bf16 repeat head in this target config's shape")
    parser.add_argument("--eagle3-head-for", type=Path, metavar="CONFIG",
                        help="write only a bf16 EAGLE-3 head of zeros in this config's shape")
    parser.add_argument("--fitted-head-for", metavar="TARGET",
                        help="write only TARGET-eagle-fitted (needs the target's golden file)")
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    if args.repeat_head_for:
        write_repeat_head_for(args.repeat_head_for, args.out)
        return
    if args.eagle3_head_for:
        write_eagle3_zero_head_for(args.eagle3_head_for, args.out, args.draft_vocab)
        return
    if args.fitted_head_for:
        write_fitted_head(args.testdata / "models" / args.fitted_head_for,
                          args.testdata / "golden" / f"{args.fitted_head_for}.json", args.out,
                          args.tokens)
        return
    for name in args.targets.split(","):
        write_heads(args.testdata / "models" / name, args.out, args.tokens, args.draft_vocab)


if __name__ == "__main__":
    main()
