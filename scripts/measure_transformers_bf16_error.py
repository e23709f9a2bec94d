#!/usr/bin/env python3
"""How far transformers itself lands from the goldens when it runs in bfloat16.

The CUDA golden-parity test holds our bf16 path to max(2e-2, 1.5 x these numbers): the goldens are
float32 math, and bf16 math (what transformers, SGLang and we run on a GPU) moves the tiny test
models' logprobs by more than 2e-2. For each golden model (dense and MoE) this loads the checkpoint in
torch.bfloat16 (weights and activations, transformers' usual GPU path, here on the CPU) and
records the worst error of the per-step top-5 logprobs (teacher-forced over prompt + greedy ids),
the teacher-forced top-10 logprobs and the last-position logits.

Usage: measure_transformers_bf16_error.py OUT_JSON [--testdata ../shared/testdata]
"""
import argparse
import json
import os

import torch
import transformers
from transformers import AutoModelForCausalLM

MODELS = ["stories260K", "tiny-llama", "tiny-llama-tied", "tiny-qwen2", "tiny-qwen3",
          "tiny-mixtral", "tiny-qwen2-moe", "tiny-qwen3-moe"]


def golden_path(testdata, model):
    if model == "stories260K":  # the float32 checkpoint: compare on bf16-rounded weights
        return os.path.join(os.path.dirname(__file__),
                            "../tests/runner/data/stories260K-bf16-weights.json")
    return os.path.join(testdata, "golden", model + ".json")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--testdata", default=os.path.join(os.path.dirname(__file__),
                                                       "../../shared/testdata"))
    args = ap.parse_args()
    result = {"reference": "transformers %s, torch %s, bfloat16 on CPU"
                           % (transformers.__version__, torch.__version__), "models": {}}
    for name in MODELS:
        with open(golden_path(args.testdata, name)) as f:
            golden = json.load(f)
        model = AutoModelForCausalLM.from_pretrained(os.path.join(args.testdata, "models", name),
                                                     dtype=torch.bfloat16).eval()
        step_err = prefill_err = logit_err = 0.0
        with torch.no_grad():
            for case in golden["cases"]:
                prompt = case["prompt_ids"]
                ids = prompt + case["greedy_ids"]
                logits = model(torch.tensor([ids])).logits[0].double()
                logprobs = torch.log_softmax(logits, dim=-1)
                for s, step in enumerate(case["steps_top5"]):
                    for i, ref in zip(step["ids"], step["logprobs"]):
                        step_err = max(step_err, abs(logprobs[len(prompt) - 1 + s, i].item() - ref))
                positions = len(case["prefill"]["topk_ids"])
                for p in range(positions):
                    for i, ref in zip(case["prefill"]["topk_ids"][p],
                                      case["prefill"]["topk_logprobs"][p]):
                        prefill_err = max(prefill_err, abs(logprobs[p, i].item() - ref))
                last = torch.tensor(case["prefill"]["last_logits"], dtype=torch.float64)
                logit_err = max(logit_err, (logits[positions - 1] - last).abs().max().item())
        result["models"][name] = {"step_top5_logprob": round(step_err, 5),
                                  "prefill_top10_logprob": round(prefill_err, 5),
                                  "last_logits": round(logit_err, 5)}
        print(name, result["models"][name])
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
