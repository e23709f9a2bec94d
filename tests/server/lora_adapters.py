"""Random PEFT LoRA adapters for stories260K, and the model with one merged into its weights
(W + scaling * B A), which serving the adapter must equal."""
import json
import shutil
import struct

import numpy as np

from conftest import MODEL

MODULES = {"q_proj": "self_attn", "k_proj": "self_attn", "v_proj": "self_attn",
           "o_proj": "self_attn", "gate_proj": "mlp", "up_proj": "mlp", "down_proj": "mlp"}
LAYERS = 5


def read_safetensors(path):
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        assert entry["dtype"] == "F32", entry
        begin, end = entry["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + begin:8 + n + end], dtype="<f4").reshape(
            entry["shape"]).copy()
    return out


def write_safetensors(path, tensors, dtype="F32"):
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        if dtype == "BF16":
            bits = np.ascontiguousarray(array, dtype="<f4").view("<u4") >> 16
            blob = bits.astype("<u2").tobytes()
        else:
            blob = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def base_weights():
    return read_safetensors(MODEL / "model.safetensors")


def write_adapter(out, seed, rank=4, alpha=8, targets=tuple(MODULES), use_rslora=False,
                  dtype="F32", config_extra=None, extra_tensors=None):
    """A PEFT adapter in `out` (B random, not PEFT's zeros, so it changes the model); returns
    {(layer, module): (A, B)} and the scaling."""
    rng = np.random.default_rng(seed)
    weights = base_weights()
    tensors, factors = {}, {}
    for layer in range(LAYERS):
        for module in targets:
            w = weights[f"model.layers.{layer}.{MODULES[module]}.{module}.weight"]
            out_features, in_features = w.shape
            a = rng.normal(0, 1 / np.sqrt(in_features), (rank, in_features)).astype(np.float32)
            b = rng.normal(0, 0.05, (out_features, rank)).astype(np.float32)
            if dtype == "BF16":  # what the file holds is what must be served
                a = (a.view("<u4") & 0xFFFF0000).view("<f4")
                b = (b.view("<u4") & 0xFFFF0000).view("<f4")
            prefix = f"base_model.model.model.layers.{layer}.{MODULES[module]}.{module}"
            tensors[prefix + ".lora_A.weight"] = a
            tensors[prefix + ".lora_B.weight"] = b
            factors[(layer, module)] = (a, b)
    tensors.update(extra_tensors or {})
    out.mkdir(parents=True)
    config = {"peft_type": "LORA", "r": rank, "lora_alpha": alpha, "target_modules": list(targets),
              "bias": "none", "use_rslora": use_rslora, "use_dora": False, "fan_in_fan_out": False,
              "modules_to_save": None, "lora_dropout": 0.0, "task_type": "CAUSAL_LM",
              "base_model_name_or_path": "stories260K"}
    config.update(config_extra or {})
    (out / "adapter_config.json").write_text(json.dumps(config))
    write_safetensors(out / "adapter_model.safetensors", tensors, dtype)
    scaling = alpha / (np.sqrt(rank) if use_rslora else rank)
    return factors, scaling


def write_merged_model(out, factors, scaling):
    """stories260K with the adapter merged: W + scaling * B A for each targeted projection."""
    out.mkdir(parents=True)
    for f in MODEL.iterdir():
        if f.name != "model.safetensors":
            shutil.copy(f, out / f.name)
    weights = base_weights()
    for (layer, module), (a, b) in factors.items():
        name = f"model.layers.{layer}.{MODULES[module]}.{module}.weight"
        merged = weights[name].astype(np.float64) + scaling * (b.astype(np.float64) @ a)
        weights[name] = merged.astype(np.float32)
    write_safetensors(out / "model.safetensors", weights)
    return out
