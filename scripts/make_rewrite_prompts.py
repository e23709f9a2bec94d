#!/usr/bin/env python3
"""Write a "rewrite this code" workload for the n-gram speculative decoding benchmark.

Each request asks a chat model to rewrite a short program (rename, add comments, add types,
change a loop): the answer quotes most of the prompt, which is where n-gram drafts stand. The
prompts are rendered with the model's chat template and encoded by sgl-tokenize, and written as
sgl-generate --batch-file lines (prompt_ids, greedy, EOS kept), which
`sgl-bench offline --prompt-file` reads.

usage: make_rewrite_prompts.py --sgl-tokenize BIN --tokenizer MODEL OUT.jsonl [--max-new-tokens N]
"""
import argparse
import json
import pathlib
import subprocess
import tempfile

PROGRAMS = [
    """def total(xs):
    s = 0
    i = 0
    while i < len(xs):
        s += xs[i]
        i += 1
    return s""",
    """def count_words(text):
    counts = {}
    for word in text.split():
        word = word.lower().strip(".,!?")
        if word in counts:
            counts[word] = counts[word] + 1
        else:
            counts[word] = 1
    return counts""",
    """int find_max(const int* values, int n) {
    int best = values[0];
    for (int i = 1; i < n; i++) {
        if (values[i] > best) {
            best = values[i];
        }
    }
    return best;
}""",
    """function fizzBuzz(n) {
  const out = [];
  for (let i = 1; i <= n; i++) {
    if (i % 15 === 0) out.push("FizzBuzz");
    else if (i % 3 === 0) out.push("Fizz");
    else if (i % 5 === 0) out.push("Buzz");
    else out.push(String(i));
  }
  return out;
}""",
    """class Stack:
    def __init__(self):
        self.items = []

    def push(self, item):
        self.items.append(item)

    def pop(self):
        if len(self.items) == 0:
            return None
        return self.items.pop()

    def size(self):
        return len(self.items)""",
    """def read_config(path):
    config = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, value = line.split("=", 1)
            config[key.strip()] = value.strip()
    return config""",
    """def is_prime(n):
    if n < 2:
        return False
    for d in range(2, n):
        if n % d == 0:
            return False
    return True""",
    """SELECT customers.name, COUNT(orders.id) AS order_count
FROM customers
LEFT JOIN orders ON orders.customer_id = customers.id
WHERE customers.country = 'France'
GROUP BY customers.name
ORDER BY order_count DESC;""",
]

INSTRUCTIONS = [
    "Rewrite this code with more descriptive variable names. Keep everything else the same.",
    "Add a short comment above each line of this code.",
    "Rewrite this code so that it is formatted with four-space indentation, and add a docstring.",
    "Rename the function in this code to something clearer and rewrite it.",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sgl-tokenize", required=True, help="the sgl-tokenize binary")
    ap.add_argument("--tokenizer", required=True, help="the model (directory or GGUF)")
    ap.add_argument("--max-new-tokens", type=int, default=256)
    ap.add_argument("out", type=pathlib.Path)
    args = ap.parse_args()
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        chat = pathlib.Path(tmp) / "chat.json"
        for i, program in enumerate(PROGRAMS):
            for j, instruction in enumerate(INSTRUCTIONS):
                if (i + j) % 2:  # half the pairs: 16 prompts
                    continue
                chat.write_text(json.dumps([{"role": "user",
                                             "content": f"{instruction}\n\n{program}"}]))
                rendered = subprocess.run(
                    [args.sgl_tokenize, "--tokenizer", args.tokenizer, "--chat", str(chat),
                     "--add-generation-prompt"], check=True, capture_output=True, text=True)
                ids = json.loads(rendered.stdout)["ids"]
                lines.append(json.dumps({"prompt_ids": ids, "max_new_tokens": args.max_new_tokens,
                                         "temperature": 0}))
    args.out.write_text("\n".join(lines) + "\n")
    print(f"{args.out}: {len(lines)} prompts")


if __name__ == "__main__":
    main()
