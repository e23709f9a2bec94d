#!/usr/bin/env python3
"""Reference outputs of SmolLM2-135M-Instruct (the default GGUF) from Hugging Face transformers.

transformers reads the GGUF through the `gguf` pip package and dequantizes it to float32; the
forward passes run in float32 on the CPU. For each chat conversation the prompt is rendered with
the model's own chat template (add_generation_prompt=True), then decoded greedily for
--steps tokens (not stopping at EOS), recording the top-5 log-softmax per step. The schema follows
../shared/testdata/golden/*.json so the same checks apply.

It also renders the five conversations of ../shared/testdata/golden/chat_templates.json (tools and
tool calls included) with the GGUF's template, as `template_cases`.

Usage: make_smollm2_golden.py GGUF_FILE OUT_JSON [--steps 24] [--testdata ../shared/testdata]
Run once where torch + transformers + gguf are installed (we ran it on the GPU machine, CPU math).
"""
import argparse
import json
import os

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

CONVERSATIONS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "user", "content": "Write a haiku about the sea."}],
    [{"role": "system", "content": "You are a concise assistant."},
     {"role": "user", "content": "List three primary colors."}],
    [{"role": "user", "content": "What is 12 plus 30?"}],
    [{"role": "user", "content": "Hi!"},
     {"role": "assistant", "content": "Hello! How can I help you today?"},
     {"role": "user", "content": "Tell me a fun fact about cats."}],
    [{"role": "user", "content": "Translate 'good morning' into Spanish."}],
    [{"role": "user", "content": "Explain photosynthesis in one sentence."}],
    [{"role": "user", "content": "Écris une phrase sur Paris. 日本語も少し。"}],
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gguf")
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--testdata", default=os.path.join(os.path.dirname(__file__),
                                                       "../../shared/testdata"))
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    folder, name = os.path.split(os.path.abspath(args.gguf))
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, torch_dtype=torch.float32)
    model.eval()

    cases = []
    for messages in CONVERSATIONS:
        text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        prompt_ids = tok(text, add_special_tokens=False)["input_ids"]
        ids = torch.tensor([prompt_ids])
        greedy, steps = [], []
        past = None
        with torch.no_grad():
            for _ in range(args.steps):
                out = model(input_ids=ids, past_key_values=past, use_cache=True)
                past = out.past_key_values
                logprobs = torch.log_softmax(out.logits[0, -1].double(), dim=-1)
                top = torch.topk(logprobs, 5)
                steps.append({"ids": top.indices.tolist(),
                              "logprobs": [round(v, 6) for v in top.values.tolist()]})
                nxt = int(torch.argmax(logprobs))
                greedy.append(nxt)
                ids = torch.tensor([[nxt]])
        cases.append({"messages": messages, "text": text, "prompt_ids": prompt_ids,
                      "greedy_ids": greedy, "greedy_text": tok.decode(greedy),
                      "steps_top5": steps})
        print(repr(tok.decode(greedy)))

    with open(os.path.join(args.testdata, "golden/chat_templates.json")) as f:
        template_meta = json.load(f)["meta"]["cases"]
    template_cases = {}
    for name, case in template_meta.items():
        kwargs = {"tools": case["tools"]} if "tools" in case else {}
        template_cases[name] = {"case": case, "text": tok.apply_chat_template(
            case["messages"], tokenize=False,
            add_generation_prompt=case["add_generation_prompt"], **kwargs)}

    golden = {"model": "SmolLM2-135M-Instruct.Q4_1.gguf", "dtype": "float32",
              "reference": "transformers %s, torch %s, gguf via transformers' GGUF loader, CPU"
                           % (transformers.__version__, torch.__version__),
              "cases": cases, "template_cases": template_cases}
    with open(args.out, "w") as f:
        json.dump(golden, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
