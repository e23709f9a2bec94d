#!/usr/bin/env python3
"""Reference embeddings of the tiny Qwen3 embedding models, computed by transformers.

Writes tiny_qwen3_embedding_reference.json beside this script: for a few prompts (text, tokenized
by the model's tokenizer, and token ids; long enough to be chunked, and two sharing a prefix), the
vector of each model scripts/make_tiny_embedding_model.py writes:
  "last": tiny-qwen3-embedding-last, last-token pooling, L2-normalised
  "mean": tiny-qwen3-embedding-mean, mean pooling, not normalised
as sentence-transformers computes them: transformers' Qwen3Model (AutoModel) in float32 on the
bf16 weights, its last_hidden_state (the final norm's output) pooled.

NOTE: RoPE's inverse frequencies are rounded to bfloat16, as the shared goldens have them
(transformers 5.17 kept inv_freq in the checkpoint's dtype; later versions keep float32) and as
sgl.cpp computes them for bf16 checkpoints (src/model/rope_cache.cpp). The script first checks
that this recipe reproduces ../shared/testdata/golden/tiny-qwen3.json, and, when
sentence-transformers is installed, that SentenceTransformer gives the same text vectors.

Needs torch and transformers (CI has neither: CI compares against the committed output).
Usage: tests/engine/data/make_embedding_reference.py [--testdata ../shared/testdata]
"""
import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import transformers
from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
OUT = HERE / "tiny_qwen3_embedding_reference.json"

TEXTS = ["Once upon a time",
         "Lily and Ben went to the park. They played with a big red ball all day long."]
LONG = [(37 * i + 11) % 1000 for i in range(100)]
IDS = [[5],
       [(7 * i + 3) % 1000 for i in range(40)],
       LONG,
       LONG[:60] + [999, 998, 997]]  # shares 60 tokens with LONG


def round_inv_freq(model):
    for name, buf in model.named_buffers():
        if name.endswith("inv_freq"):
            buf.copy_(buf.to(torch.bfloat16).to(torch.float32))


def check_recipe_against_golden(testdata):
    """The recipe (f32 math, bf16-rounded inv_freq) reproduces the shared golden's logits."""
    golden = json.loads((testdata / "golden" / "tiny-qwen3.json").read_text())
    model = AutoModelForCausalLM.from_pretrained(testdata / "models" / "tiny-qwen3",
                                                 dtype=torch.float32).eval()
    round_inv_freq(model)
    err = 0.0
    with torch.no_grad():
        for case in golden["cases"]:
            ids = (case["prompt_ids"] + case["greedy_ids"])[:len(case["prefill"]["topk_ids"])]
            logits = model(torch.tensor([ids])).logits[0, -1].double()
            err = max(err, (logits - torch.tensor(case["prefill"]["last_logits"],
                                                  dtype=torch.float64)).abs().max().item())
    print(f"recipe vs golden/tiny-qwen3.json last_logits: max abs diff {err:.2e}")
    assert err < 1e-4, err


def pool(hidden, mode, normalize):
    """hidden: f32 [n, H], the final norm's output. Pooled in float64."""
    h = hidden.double()
    v = h[-1] if mode == "last" else h.mean(dim=0)
    return torch.nn.functional.normalize(v, dim=0) if normalize else v


def vectors(model_dir, mode, normalize, prompts):
    model = AutoModel.from_pretrained(model_dir, dtype=torch.float32).eval()
    round_inv_freq(model)
    out = []
    with torch.no_grad():
        for ids in prompts:
            hidden = model(torch.tensor([ids])).last_hidden_state[0]
            out.append(pool(hidden, mode, normalize))
    return out


def check_sentence_transformers(model_dir, expected):
    """SentenceTransformer reads the same modules.json and gives the same text vectors."""
    if importlib.util.find_spec("sentence_transformers") is None:
        print("sentence-transformers is not installed: cross-check skipped")
        return
    from sentence_transformers import SentenceTransformer
    st = SentenceTransformer(str(model_dir), device="cpu", model_kwargs={"dtype": torch.float32})
    round_inv_freq(st)
    st.tokenizer.pad_token = st.tokenizer.eos_token  # one text per batch: nothing is padded
    got = torch.tensor(st.encode(TEXTS, batch_size=1, convert_to_numpy=True), dtype=torch.float64)
    err = (got - torch.stack(expected)).abs().max().item()
    print(f"SentenceTransformer vs recipe, {model_dir.name}: max abs diff {err:.2e}")
    assert err < 1e-5, err


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--testdata", type=Path, default=REPO.parent / "shared" / "testdata")
    args = ap.parse_args()
    check_recipe_against_golden(args.testdata)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, str(REPO / "scripts" / "make_tiny_embedding_model.py"),
                        "--testdata", str(args.testdata), tmp], check=True)
        models = Path(tmp)
        tokenizer = AutoTokenizer.from_pretrained(models / "tiny-qwen3-embedding-last")
        text_ids = [tokenizer(t)["input_ids"] for t in TEXTS]
        prompts = text_ids + IDS
        last = vectors(models / "tiny-qwen3-embedding-last", "last", True, prompts)
        mean = vectors(models / "tiny-qwen3-embedding-mean", "mean", False, prompts)
        check_sentence_transformers(models / "tiny-qwen3-embedding-last", last[:len(TEXTS)])
        check_sentence_transformers(models / "tiny-qwen3-embedding-mean", mean[:len(TEXTS)])

    def floats(v):  # 9 significant digits: every f32 exactly
        return [float(f"{x:.9g}") for x in v.float().tolist()]

    cases = []
    for i, ids in enumerate(prompts):
        case = {"text": TEXTS[i]} if i < len(TEXTS) else {}
        case.update({"input_ids": ids, "last": floats(last[i]), "mean": floats(mean[i])})
        cases.append(case)
    out = {"models": "scripts/make_tiny_embedding_model.py from tiny-qwen3",
           "last": "tiny-qwen3-embedding-last: last-token pooling, L2-normalised",
           "mean": "tiny-qwen3-embedding-mean: mean pooling, not normalised",
           "reference": "transformers %s, torch %s, CPU, float32 math on the bf16 weights, "
                        "bf16-rounded RoPE inv_freq" % (transformers.__version__,
                                                        torch.__version__),
           "cases": cases}
    OUT.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
