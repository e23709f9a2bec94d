#!/usr/bin/env python3
"""Trains an EAGLE-3 draft head for a target model by self-distillation (issue #23).

No data set is downloaded: the prompts are built here (instruction templates x topics, and
"rewrite this code" prompts over small snippets), rendered with the target's chat template. The
target continues each one greedily (or at --temperature), and each training prompt
--samples-per-prompt - 1 more times at --sample-temperature (transformers, or our engine with
--generator sgl-generate), and a teacher-forced pass over prompt + continuation records the
three captured layers' hidden states and the target's final hidden state (its next-token
distribution, computed when needed).

The head is the function our C++ draft computes (src/model/eagle_draft_model.cpp, chain
drafting in src/runner/eagle_worker.cpp), SGLang's LlamaForCausalLMEagle3:
  x = fc(concat(captured layers))       the target's hidden state at position a, or at a later
                                        draft step the head's own previous output (no fc)
  r = x + attn(concat(norm_in(embed(token)), norm_hidden(x)))   token: the one after position a
  out = r + mlp(post_norm(r))           the hidden state the next draft step reads
  logits = lm_head(norm(out))           over the draft vocabulary; d2t maps to target ids
Position a of the draft (RoPE position a) reads token a + 1 and predicts token a + 2.

Training-time test (EAGLE-3): from each anchor a (a position whose target hidden state the
draft has) the head is unrolled num_steps times. Step k > 0 sits at position a + k, reads token
a + k + 1 and step k - 1's output, and attends to the step-0 keys of positions 0..a plus its own
chain's keys of steps 1..k, exactly as a chain verify's draft steps do (their K/V at the verify
positions, the prefix's from the draft extend over target hidden states).

The loss is the cross-entropy against the target's distribution restricted to the draft
vocabulary (the D most frequent ids of the continuations), step k weighted 0.8^k. The accept
length (tokens per verify step, the target's own sample included: SGLang's
avg_spec_accept_length) is simulated on held-out prompts by greedy chain drafting with
num_steps 3 and 5, the continuations generated ignoring EOS as `sgl-bench offline
--prompt-file` does with the eval_prompts.jsonl written here.

Writes OUT/config.json, OUT/model.safetensors (bf16), OUT/train_report.json and
OUT/eval_prompts.jsonl (the held-out prompts as sgl-generate --batch-file lines).

  train_eagle3_head.py --target SmolLM2-135M-Instruct.Q4_1.gguf --out HEAD --device cuda
  train_eagle3_head.py --target MODEL.gguf --out HEAD --device cpu --smoke   # minutes (15 on 2 busy cores)

Needs torch, transformers, numpy, and the gguf package for a .gguf target.
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_eagle_heads import draft_config, read_safetensors, write_safetensors  # noqa: E402

# ---------------------------------------------------------------------------------------------
# Prompts

TOPICS = [
    "photosynthesis", "black holes", "the water cycle", "the French Revolution", "volcanoes",
    "machine learning", "the immune system", "climate change", "the stock market", "gravity",
    "the Roman Empire", "electric cars", "honey bees", "the internet", "coffee", "sleep",
    "the moon landing", "recycling", "vaccines", "earthquakes", "chess", "the Great Wall of China",
    "solar panels", "dinosaurs", "the human heart", "inflation", "rainbows", "the printing press",
    "ocean tides", "democracy", "bread baking", "jazz music", "the Olympic Games", "bacteria",
    "time zones", "credit cards", "the speed of light", "penguins", "renewable energy",
    "the pyramids of Egypt", "friendship", "learning a new language", "public speaking",
    "saving money", "healthy breakfasts", "team work", "video games", "gardening", "rivers",
    "the periodic table", "DNA", "airplanes", "batteries", "cloud computing", "passwords",
    "the solar system", "hurricanes", "deserts", "libraries", "exercise", "meditation",
    "the Renaissance", "trains", "volunteering", "maps", "robots", "tea", "forests", "magnets",
    "the ancient Greeks", "smartphones", "bridges", "music lessons", "camping", "elections",
    "cats", "dogs", "pizza", "the Amazon rainforest", "space travel", "artificial intelligence",
    "social media", "mountains", "the piano", "soccer", "origami", "weather forecasts",
    "the Moon", "Mars", "whales", "snow", "cooking pasta", "remote work", "city parks",
    "first aid", "electricity", "the alphabet", "fractions", "birthdays", "museums",
]

TEMPLATES = [
    "What is {t}?", "Explain {t} to a ten-year-old.", "Give me three fun facts about {t}.",
    "Write a short story about {t}.", "List five things everyone should know about {t}.",
    "Why is {t} important?", "Write a short poem about {t}.",
    "Summarize the history of {t} in a few sentences.", "What are the pros and cons of {t}?",
    "How would you explain {t} in one paragraph?", "Write a haiku about {t}.",
    "What are common misconceptions about {t}?", "Describe {t} in simple words.",
    "Give me a step-by-step guide to learning about {t}.", "Write a tweet about {t}.",
    "Compare {t} with something from everyday life.", "What questions could a teacher ask about {t}?",
    "Write a short dialogue between two friends about {t}.", "How does {t} work?",
    "Tell me a joke about {t}.", "Write an email to a friend recommending a book about {t}.",
    "What would the world be like without {t}?", "Write a product description inspired by {t}.",
    "Give me a quiz with three questions about {t}.", "Explain {t} and give an example.",
    "Write a limerick about {t}.", "What is the future of {t}?",
    "Write a news headline and a short article about {t}.", "Give me a study plan for {t}.",
    "Describe {t} from the point of view of a child.", "What are three surprising facts about {t}?",
    "Write a short speech about {t}.", "How can I teach my friends about {t}?",
    "Write a diary entry of someone who loves {t}.", "Create a short list of tips about {t}.",
]

SNIPPETS = [
    "def add(a, b):\n    return a + b",
    "for i in range(10):\n    if i % 2 == 0:\n        print(i)",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)",
    "x = []\nfor w in words:\n    if len(w) > 3:\n        x.append(w.upper())",
    "function greet(name) {\n  return 'Hello, ' + name + '!';\n}",
    "int max(int a, int b) {\n  if (a > b) return a;\n  return b;\n}",
    "def read(path):\n    f = open(path)\n    data = f.read()\n    f.close()\n    return data",
    "total = 0\nfor price in prices:\n    total = total + price\navg = total / len(prices)",
    "SELECT name, age FROM users WHERE age > 30 ORDER BY name;",
    "def is_prime(n):\n    for d in range(2, n):\n        if n % d == 0:\n            return False\n    return True",
    "const nums = [1, 2, 3];\nlet doubled = [];\nfor (let i = 0; i < nums.length; i++) {\n  doubled.push(nums[i] * 2);\n}",
    "class Counter:\n    def __init__(self):\n        self.n = 0\n    def inc(self):\n        self.n += 1",
]

CODE_TASKS = [
    "Rewrite this code to be more readable:\n\n{c}", "Explain what this code does:\n\n{c}",
    "Add comments to this code:\n\n{c}", "Rewrite this code in Python with type hints:\n\n{c}",
    "Find any bugs in this code:\n\n{c}", "Make this code faster:\n\n{c}",
    "Write a unit test for this code:\n\n{c}", "Rewrite this code as a one-liner if possible:\n\n{c}",
]


def build_prompts(count, seed):
    """`count` distinct user messages, chat and code alike, shuffled by `seed`."""
    chat = [t.format(t=topic) for t in TEMPLATES for topic in TOPICS]
    code = [t.format(c=c) for t in CODE_TASKS for c in SNIPPETS]
    rng = random.Random(seed)
    rng.shuffle(chat)
    rng.shuffle(code)
    # About one prompt in six asks about code.
    n_code = min(len(code), count // 6)
    prompts = chat[:count - n_code] + code[:n_code]
    if len(prompts) < count:
        raise SystemExit(f"only {len(prompts)} distinct prompts; ask for fewer")
    rng.shuffle(prompts)
    return prompts


def render(tokenizer, message):
    """Token ids of the chat-templated conversation, the assistant's turn opened."""
    conversation = [{"role": "user", "content": message}]
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(conversation, tokenize=False,
                                             add_generation_prompt=True)
    else:  # ChatML, SmolLM2's format
        text = f"<|im_start|>user\n{message}<|im_end|>\n<|im_start|>assistant\n"
    return tokenizer(text, add_special_tokens=False)["input_ids"]


# ---------------------------------------------------------------------------------------------
# The target

def load_target(path, device):
    """(model, tokenizer) from a .gguf file (dequantized) or an HF model directory."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    path = Path(path)
    kwargs = {"gguf_file": path.name} if path.suffix == ".gguf" else {}
    where = str(path.parent if path.suffix == ".gguf" else path)
    tokenizer = AutoTokenizer.from_pretrained(where, **kwargs)
    model = AutoModelForCausalLM.from_pretrained(where, dtype=torch.float32, **kwargs)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    return model.to(device=device, dtype=dtype).eval(), tokenizer


@torch.no_grad()
def generate(model, prompts, new_tokens, batch_size, temperature, pad_id, seed):
    """Each prompt's continuation of exactly `new_tokens` ids (EOS does not stop it, as in
    sgl-bench's ignore_eos), greedy at temperature 0; batches left-padded."""
    from transformers import DynamicCache
    device = next(model.parameters()).device
    gen = torch.Generator(device=device).manual_seed(seed)
    out = []
    for b in range(0, len(prompts), batch_size):
        batch = prompts[b:b + batch_size]
        width = max(map(len, batch))
        ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for i, p in enumerate(batch):
            ids[i, width - len(p):] = torch.tensor(p)
            mask[i, width - len(p):] = 1
        ids, mask = ids.to(device), mask.to(device)
        cache = DynamicCache()
        step_ids, positions = ids, (mask.cumsum(-1) - 1).clamp(min=0)
        tokens = []
        for _ in range(new_tokens):
            logits = model(input_ids=step_ids, attention_mask=mask, position_ids=positions,
                           past_key_values=cache, use_cache=True).logits[:, -1].float()
            if temperature > 0:
                probs = torch.softmax(logits / temperature, -1)
                nxt = torch.multinomial(probs, 1, generator=gen)
            else:
                nxt = logits.argmax(-1, keepdim=True)
            tokens.append(nxt)
            step_ids = nxt
            positions = positions[:, -1:] + 1
            mask = torch.cat([mask, torch.ones_like(nxt)], dim=1)
        out.extend(torch.cat(tokens, 1).tolist())
    return out


def generate_sgl(binary, target, device, prompts, new_tokens, temperature, seed):
    """generate() through our engine (`sgl-generate --batch-file` on `device`): the same
    continuations of exactly `new_tokens` ids, EOS ignored, in far less time; sampled rows
    draw with seed + their index."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for i, p in enumerate(prompts):
            f.write(json.dumps({"prompt_ids": p, "max_new_tokens": new_tokens,
                                "temperature": temperature, "seed": seed + i,
                                "ignore_eos": True}) + "\n")
    try:
        run = subprocess.run([str(binary), "--model-path", str(target), "--device", device,
                              "--batch-file", f.name, "--json", "--max-running-requests", "256",
                              "--mem-fraction-static", "0.5"],
                             capture_output=True, text=True, check=False)
    finally:
        os.unlink(f.name)
    if run.returncode != 0:
        raise SystemExit(f"{binary} failed ({run.returncode}):\n{run.stderr[-2000:]}")
    # One JSON object a line; str.splitlines() would also cut at separators inside the text.
    out = [json.loads(line)["output_ids"] for line in run.stdout.split("\n")
           if line.startswith("{")]
    if len(out) != len(prompts) or any(len(c) != new_tokens for c in out):
        raise SystemExit(f"{binary}: {len(out)} continuations for {len(prompts)} prompts")
    return out


@torch.no_grad()
def capture(model, sequences, aux_layers, batch_size):
    """Per sequence: (ids [T], captured layers [T, 3H], final normed hidden [T, H]), on the
    model's device in bf16 (f32 on CPU). Layer id i is the residual stream after layer i
    (SGLang captures it as layer i + 1's input)."""
    device = next(model.parameters()).device
    store = torch.bfloat16 if device.type == "cuda" else torch.float32
    out = []
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
    for b in range(0, len(order), batch_size):
        idx = order[b:b + batch_size]
        width = max(len(sequences[i]) for i in idx)
        ids = torch.zeros((len(idx), width), dtype=torch.long)
        for r, i in enumerate(idx):
            ids[r, :len(sequences[i])] = torch.tensor(sequences[i])
        ids = ids.to(device)
        # Right padding: causal attention keeps the padding out of every real position.
        res = model.model(input_ids=ids, output_hidden_states=True)
        aux = torch.cat([res.hidden_states[i + 1] for i in aux_layers], -1)
        for r, i in enumerate(idx):
            n = len(sequences[i])
            out.append((i, ids[r, :n], aux[r, :n].to(store), res.last_hidden_state[r, :n].to(store)))
    out.sort(key=lambda x: x[0])
    return [x[1:] for x in out]


# ---------------------------------------------------------------------------------------------
# The head

def rms_norm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rope_tables(positions, head_dim, theta):
    """cos, sin [..., head_dim] for rotate-half RoPE (transformers' Llama)."""
    inv = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32,
                                       device=positions.device) / head_dim)
    ang = positions.float()[..., None] * inv
    ang = torch.cat([ang, ang], -1)
    return ang.cos(), ang.sin()


def apply_rope(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
    return x * cos + rotated * sin


class Eagle3Head(torch.nn.Module):
    """SGLang's LlamaForCausalLMEagle3 as our C++ draft computes it (one midlayer)."""

    def __init__(self, cfg, embed, draft_ids):
        super().__init__()
        h, i = cfg["hidden_size"], cfg["intermediate_size"]
        self.heads, self.kv_heads = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.head_dim, self.eps, self.theta = cfg["head_dim"], cfg["rms_norm_eps"], cfg["rope_theta"]
        lin = lambda o, n: torch.nn.Linear(n, o, bias=False)  # noqa: E731
        self.fc = lin(h, 3 * h)
        self.input_layernorm = torch.nn.Parameter(torch.ones(h))
        self.hidden_norm = torch.nn.Parameter(torch.ones(h))
        self.q_proj = lin(self.heads * self.head_dim, 2 * h)
        self.k_proj = lin(self.kv_heads * self.head_dim, 2 * h)
        self.v_proj = lin(self.kv_heads * self.head_dim, 2 * h)
        self.o_proj = lin(h, self.heads * self.head_dim)
        self.post_attention_layernorm = torch.nn.Parameter(torch.ones(h))
        self.gate_proj, self.up_proj, self.down_proj = lin(i, h), lin(i, h), lin(h, i)
        self.norm = torch.nn.Parameter(torch.ones(h))
        self.lm_head = lin(len(draft_ids), h)
        self.register_buffer("embed", embed, persistent=False)  # the target's, frozen

    def qkv(self, tokens, x, positions):
        """q [B, heads, T, d], k and v [B, kv_heads, T, d] of one step's inputs."""
        b, t, _ = x.shape
        inp = torch.cat([rms_norm(self.embed[tokens].to(x.dtype), self.input_layernorm, self.eps),
                         rms_norm(x, self.hidden_norm, self.eps)], -1)
        cos, sin = rope_tables(positions, self.head_dim, self.theta)
        cos, sin = cos[:, None], sin[:, None]
        q = self.q_proj(inp).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(inp).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(inp).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        return apply_rope(q, cos, sin), apply_rope(k, cos, sin), v

    def finish(self, x, attn):
        """The layer after attention: (logits over the draft vocabulary, output hidden)."""
        b, t = x.shape[:2]
        r = x + self.o_proj(attn.transpose(1, 2).reshape(b, t, -1))
        y = rms_norm(r, self.post_attention_layernorm, self.eps)
        out = r + self.down_proj(F.silu(self.gate_proj(y)) * self.up_proj(y))
        return self.lm_head(rms_norm(out, self.norm, self.eps)), out

    def unroll(self, ids, aux, steps):
        """Steps 0..steps-1 from every anchor a of each sequence (ids [B, T], aux [B, T, 3H]).
        Returns per step (logits [B, T, D], hidden [B, T, H]); row a of step k is position
        a + k, which read token a + k + 1 and predicts token a + k + 2 (rows past the end read
        padding and must be masked by the caller)."""
        b, t = ids.shape
        group = self.heads // self.kv_heads
        anchors = torch.arange(t, device=ids.device).expand(b, t)
        scale = 1.0 / math.sqrt(self.head_dim)
        causal = torch.ones(t, t, dtype=torch.bool, device=ids.device).tril()
        x = self.fc(aux)
        diag_k, diag_v, results = [], [], []
        for k in range(steps):
            tokens = F.pad(ids[:, k + 1:], (0, k + 1))  # token a + k + 1, 0 past the end
            q, kk, vv = self.qkv(tokens, x, anchors + k)
            kk = kk.repeat_interleave(group, 1)
            vv = vv.repeat_interleave(group, 1)
            if k == 0:
                keys, v0 = kk, vv  # the prefix: step 0's keys at positions 0..a
            else:
                diag_k.append(kk)  # the chain's own: steps 1..k at positions a + 1..a + k
                diag_v.append(vv)
            scores = (q @ keys.transpose(-1, -2)).float() * scale
            scores = scores.masked_fill(~causal, float("-inf"))
            diag = [(q * dk).sum(-1, keepdim=True).float() * scale for dk in diag_k]
            p = torch.softmax(torch.cat([scores] + diag, -1), -1).to(q.dtype)
            attn = p[..., :t] @ v0
            for j, dv in enumerate(diag_v):
                attn = attn + p[..., t + j:t + j + 1] * dv
            logits, x = self.finish(x, attn)
            results.append((logits, x))
        return results


def init_head(head, model, draft_ids):
    """lm_head rows and the final norm from the target's head (token identities and their
    scale); the rest small and random, the layer's output projections smaller still."""
    with torch.no_grad():
        w = model.get_output_embeddings().weight.float().cpu()
        head.lm_head.weight.copy_(w[torch.as_tensor(draft_ids)])
        head.norm.copy_(model.model.norm.weight.float().cpu())
        for lin in (head.fc, head.q_proj, head.k_proj, head.v_proj, head.gate_proj, head.up_proj):
            torch.nn.init.normal_(lin.weight, std=0.02)
        torch.nn.init.normal_(head.o_proj.weight, std=0.002)
        torch.nn.init.normal_(head.down_proj.weight, std=0.002)


# ---------------------------------------------------------------------------------------------
# Training and evaluation

def make_batch(data, idx, device):
    """Right-padded ids [B, T], aux [B, T, 3H], final [B, T, H] and lengths [B]."""
    width = max(len(data[i][0]) for i in idx)
    h3, h = data[idx[0]][1].shape[-1], data[idx[0]][2].shape[-1]
    ids = torch.zeros((len(idx), width), dtype=torch.long, device=device)
    aux = torch.zeros((len(idx), width, h3), dtype=data[idx[0]][1].dtype, device=device)
    fin = torch.zeros((len(idx), width, h), dtype=data[idx[0]][2].dtype, device=device)
    lens = torch.tensor([len(data[i][0]) for i in idx], device=device)
    for r, i in enumerate(idx):
        n = len(data[i][0])
        ids[r, :n], aux[r, :n], fin[r, :n] = data[i][0], data[i][1], data[i][2]
    return ids, aux, fin, lens


def step_loss(head, lm_draft, batch, steps, decay=0.8):
    """Soft cross-entropy against the target's distribution over the draft vocabulary, and
    each step's top-1 agreement with the target's argmax (the token a chain verify accepts)."""
    ids, aux, fin, lens = batch
    b, t = ids.shape
    results = head.unroll(ids, aux.to(head.fc.weight.dtype), steps)
    total, accs = 0.0, []
    anchors = torch.arange(t, device=ids.device)
    for k, (logits, _) in enumerate(results):
        label_pos = anchors + k + 1  # the target's distribution there predicts token a + k + 2
        valid = label_pos[None, :] < (lens[:, None] - 1)
        gather = label_pos.clamp(max=t - 1)
        with torch.no_grad():
            target_logits = fin[:, gather].float() @ lm_draft.T
            target_p = torch.softmax(target_logits, -1)
            target_top = target_logits.argmax(-1)
        logp = torch.log_softmax(logits.float(), -1)
        ce = -(target_p * logp).sum(-1)
        n = valid.sum().clamp(min=1)
        total = total + decay ** k * (ce * valid).sum() / n
        accs.append(((logits.argmax(-1) == target_top) & valid).sum().item() / n.item())
    return total, accs


@torch.no_grad()
def simulate_accept_length(head, data, prompt_lens, draft_to_target, steps_list, device):
    """Greedy chain drafting over each held-out continuation: at each verify, the drafts from
    anchor a (the position before the request's last token) are kept while they equal the
    target's tokens; the verify yields those plus one. Mean tokens per verify, as SGLang's
    avg_spec_accept_length, and how many verifies it took."""
    max_steps = max(steps_list)
    totals = {s: [0, 0] for s in steps_list}
    for i in range(len(data)):
        ids, aux, fin, lens = make_batch(data, [i], device)
        t = ids.shape[1]
        results = head.unroll(ids, aux.to(head.fc.weight.dtype), max_steps)
        guesses = torch.stack([draft_to_target[l.argmax(-1)[0]] for l, _ in results])  # [S, T]
        seq = ids[0]
        correct = torch.zeros((max_steps, t), dtype=torch.bool, device=device)
        for k in range(max_steps):
            n = t - k - 2
            if n > 0:
                correct[k, :n] = guesses[k, :n] == seq[k + 2:]
        correct = correct.cpu().numpy()
        for s in steps_list:
            a, generated = prompt_lens[i] - 1, 1  # the prefill sampled the first token
            new_tokens = t - prompt_lens[i]
            while generated < new_tokens:
                # The scheduler drafts at most left - 1 tokens; none left: a plain decode.
                drafts = min(s, new_tokens - generated - 1)
                m = 0
                while m < drafts and a + m + 2 < t and correct[m, a]:
                    m += 1
                generated += m + 1
                a += m + 1
                if drafts > 0:
                    totals[s][0] += m + 1
                    totals[s][1] += 1
    return {s: {"accept_length": tot / max(ver, 1), "verify_steps": ver}
            for s, (tot, ver) in totals.items()}


def head_tensors(head):
    """Our loader's names for the head's parameters."""
    p = "midlayer."
    return {
        "fc.weight": head.fc.weight, p + "input_layernorm.weight": head.input_layernorm,
        p + "hidden_norm.weight": head.hidden_norm,
        p + "self_attn.q_proj.weight": head.q_proj.weight,
        p + "self_attn.k_proj.weight": head.k_proj.weight,
        p + "self_attn.v_proj.weight": head.v_proj.weight,
        p + "self_attn.o_proj.weight": head.o_proj.weight,
        p + "post_attention_layernorm.weight": head.post_attention_layernorm,
        p + "mlp.gate_proj.weight": head.gate_proj.weight,
        p + "mlp.up_proj.weight": head.up_proj.weight,
        p + "mlp.down_proj.weight": head.down_proj.weight,
        "norm.weight": head.norm, "lm_head.weight": head.lm_head.weight,
    }


def saved_head_run(head_dir):
    """A saved head's captured layers, draft vocabulary size, and its training run's settings
    ({} for a head without train_report.json)."""
    cfg = json.loads((head_dir / "config.json").read_text())
    report = head_dir / "train_report.json"
    settings = json.loads(report.read_text()).get("settings", {}) if report.exists() else {}
    return (cfg.get("eagle_config", {}).get("eagle_aux_hidden_state_layer_ids"),
            cfg.get("draft_vocab_size"), settings)


def load_head(head, saved):
    with torch.no_grad():
        for name, param in head_tensors(head).items():
            param.copy_(torch.from_numpy(np.array(saved[name], dtype=np.float32)))


def to_safetensors(head, draft_ids, vocab):
    """Our loader's names, weights in bf16 (uint16 bit patterns), d2t and t2d."""
    bf16 = lambda t: t.detach().to(torch.bfloat16).cpu().view(torch.int16).numpy().view(np.uint16)  # noqa: E731
    tensors = {k: bf16(v) for k, v in head_tensors(head).items()}
    draft_ids = np.asarray(draft_ids, dtype=np.int64)
    tensors["d2t"] = draft_ids - np.arange(len(draft_ids), dtype=np.int64)
    t2d = np.zeros(vocab, dtype=np.bool_)
    t2d[draft_ids] = True
    tensors["t2d"] = t2d
    return tensors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("--target", required=True, help="a .gguf file or an HF model directory")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--num-prompts", type=int, default=2560, help="training prompts")
    ap.add_argument("--eval-prompts", type=int, default=32, help="held-out prompts")
    ap.add_argument("--new-tokens", type=int, default=256, help="tokens per continuation")
    ap.add_argument("--temperature", type=float, default=0.0, help="0: greedy continuations")
    ap.add_argument("--samples-per-prompt", type=int, default=1,
                    help="continuations of each training prompt: the first at --temperature, "
                    "the others sampled at --sample-temperature (more varied training data)")
    ap.add_argument("--sample-temperature", type=float, default=0.8)
    ap.add_argument("--sample-seed", type=int,
                    help="seed of the sampled continuations (default: from --seed); another "
                    "seed gives new data over the same training and held-out prompts")
    ap.add_argument("--generator", type=Path, metavar="SGL_GENERATE",
                    help="generate the continuations with this sgl-generate on the GPU "
                    "(default: transformers, several times slower)")
    ap.add_argument("--gen-batch-size", type=int, default=256)
    ap.add_argument("--draft-vocab-size", type=int, help="default 16384 (a saved head's own "
                    "with --init-head / --eval-head)")
    ap.add_argument("--aux-layers", default="", help="three target layer ids; default SGLang's "
                    "[1, L/2 - 1, L - 4]")
    ap.add_argument("--ttt-steps", type=int, default=5, help="draft steps unrolled in training")
    ap.add_argument("--train-steps", type=int, default=4000)
    ap.add_argument("--train-seconds", type=float, default=150.0, help="wall-clock budget")
    ap.add_argument("--batch-size", type=int, default=16, help="sequences per training step")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-head", type=Path, metavar="DIR",
                    help="no training: simulate the head in DIR (same settings as it was "
                    "trained with) and write it again to --out with the new report")
    ap.add_argument("--init-head", type=Path, metavar="DIR",
                    help="start from the head in DIR (its captured layers and draft vocabulary "
                    "too) instead of from the target's weights: more training on new data "
                    "(--sample-seed) over the head's own prompts")
    ap.add_argument("--eval-on-train", action="store_true",
                    help="simulate on the training prompts (a tiny run that overfits them "
                    "still gives multi-token drafts to check against sgl-bench)")
    ap.add_argument("--smoke", action="store_true",
                    help="a CPU check in minutes: 6 prompts of 24 new tokens, 512 draft ids, "
                    "40 steps, evaluated on the training prompts")
    args = ap.parse_args()
    if args.smoke:
        args.num_prompts, args.eval_prompts, args.new_tokens = 6, 0, 24
        args.draft_vocab_size, args.train_steps, args.batch_size = 512, 40, 6
        args.gen_batch_size, args.train_seconds, args.eval_on_train = 6, 900.0, True
        args.lr = 3e-3
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    start = time.time()
    log = lambda msg: print(f"[{time.time() - start:6.1f}s] {msg}", flush=True)  # noqa: E731

    model, tokenizer = load_target(args.target, device)
    tcfg = model.config.to_dict()
    layers = tcfg["num_hidden_layers"]
    aux_layers = ([int(x) for x in args.aux_layers.split(",")] if args.aux_layers
                  else [1, layers // 2 - 1, layers - 4])
    if args.eval_head and args.init_head:
        raise SystemExit("--eval-head and --init-head: one or the other")
    saved_from = args.eval_head or args.init_head
    saved_settings = {}
    if saved_from:
        # The head's fc reads its own captured layers, its LM head its own draft vocabulary.
        saved_layers, saved_vocab, saved_settings = saved_head_run(saved_from)
        if saved_layers is not None:
            if args.aux_layers and aux_layers != saved_layers:
                raise SystemExit(f"--aux-layers {aux_layers}: {saved_from} reads {saved_layers}")
            aux_layers = list(saved_layers)
        if args.draft_vocab_size is not None and args.draft_vocab_size != saved_vocab:
            raise SystemExit(f"--draft-vocab-size {args.draft_vocab_size}: {saved_from} has "
                             f"{saved_vocab}")
    if args.draft_vocab_size is None:
        args.draft_vocab_size = 16384
    # transformers' hidden_states[i + 1] is layer i's output, except the last (normed).
    if len(aux_layers) != 3 or not all(0 <= i <= layers - 2 for i in aux_layers):
        raise SystemExit(f"--aux-layers: three layer ids in [0, {layers - 2}], got {aux_layers}")
    log(f"target {args.target}: {layers} layers, hidden {tcfg['hidden_size']}, "
        f"vocab {tcfg['vocab_size']}; captured layers {aux_layers}")

    messages = build_prompts(args.num_prompts + args.eval_prompts, args.seed)
    prompts = [render(tokenizer, m) for m in messages]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    saved_eval = saved_from / "eval_prompts.jsonl" if saved_from else None
    if saved_eval and saved_eval.exists() and not args.eval_on_train:
        # The held-out prompts stay held out only if they are the head's own (its --seed,
        # --num-prompts and --eval-prompts).
        with open(saved_eval) as f:
            held_ids = [json.loads(line)["prompt_ids"] for line in f if line.strip()]
        if held_ids != prompts[args.num_prompts:]:
            raise SystemExit(f"{saved_from}'s held-out prompts are not this run's: give its "
                             "--seed, --num-prompts and --eval-prompts")

    def continue_all(batch, temperature, seed):
        if args.generator:
            return generate_sgl(args.generator, args.target, device.type, batch, args.new_tokens,
                                temperature, seed)
        return generate(model, batch, args.new_tokens, args.gen_batch_size, temperature, pad,
                        seed)

    extra = prompts[:args.num_prompts] * (args.samples_per_prompt - 1)
    if args.sample_seed is not None and not extra:
        raise SystemExit("--sample-seed: no sampled continuations (--samples-per-prompt 1)")
    sample_seed = args.seed + len(prompts) if args.sample_seed is None else args.sample_seed
    if args.init_head and extra and saved_settings:
        # Row i is prompt i mod num_prompts drawn with seed sample_seed + i: the same pair as a
        # row of the head's own run repeats its sample.
        first = saved_settings.get("sample_seed")
        if first is None:
            first = saved_settings.get("seed", 0) + len(prompts)
        rows = max(len(extra),
                   (saved_settings.get("samples_per_prompt", 1) - 1) * args.num_prompts)
        if abs(sample_seed - first) < rows and (sample_seed - first) % args.num_prompts == 0:
            raise SystemExit(f"--sample-seed {sample_seed} repeats samples {args.init_head} "
                             f"trained on (its rows were seeded from {first}): pick another")
    # Every prompt once (training, then held-out), then the extra samples of training prompts.
    continuations = continue_all(prompts, args.temperature, args.seed)
    if extra:
        continuations += continue_all(extra, args.sample_temperature, sample_seed)
    sequences = [p + c for p, c in zip(prompts + extra, continuations)]
    log(f"generated {len(sequences)} continuations of {args.new_tokens} tokens"
        + (f" with {args.generator}" if args.generator else ""))
    data = capture(model, sequences, aux_layers, max(1, args.gen_batch_size // 4))
    log(f"captured hidden states of {sum(len(s) for s in sequences)} tokens")
    n_all = len(prompts)
    train = data[:args.num_prompts] + data[n_all:]
    held = data[args.num_prompts:n_all]
    eval_prompts = prompts[args.num_prompts:]
    if args.eval_on_train:
        held, eval_prompts = data[:args.num_prompts], prompts[:args.num_prompts]
    train_continuations = continuations[:args.num_prompts] + continuations[n_all:]

    # The draft vocabulary: the continuations' most frequent ids, then the prompts'.
    vocab = tcfg["vocab_size"]
    counts = np.zeros(vocab, dtype=np.int64)
    for c in train_continuations:
        np.add.at(counts, np.asarray(c), 1)
    counts = counts * (vocab + 1)
    for p in prompts[:args.num_prompts]:
        np.add.at(counts, np.asarray(p), 1)
    d = min(args.draft_vocab_size, vocab)
    draft_ids = np.sort(np.argsort(-counts, kind="stable")[:d])
    if saved_from:
        saved = read_safetensors(saved_from / "model.safetensors")
        d = len(saved["d2t"])
        draft_ids = saved["d2t"] + np.arange(d)
    covered = counts[draft_ids].sum() / max(counts.sum(), 1)
    log(f"draft vocabulary: {d} ids covering {covered:.4f} of the training tokens")

    cfg = draft_config(tcfg, "LlamaForCausalLMEagle3", 1)
    cfg.update({"torch_dtype": "bfloat16", "draft_vocab_size": int(d),
                "eagle_config": {"eagle_aux_hidden_state_layer_ids": aux_layers}})
    embed = model.get_input_embeddings().weight.detach().float()
    head = Eagle3Head(cfg, embed.cpu(), draft_ids)
    init_head(head, model, draft_ids)
    if saved_from:
        load_head(head, saved)
    if args.eval_head:
        args.train_steps = 0
    head = head.to(device)
    lm_draft = model.get_output_embeddings().weight.detach().float()[torch.as_tensor(
        draft_ids, device=device)]
    draft_to_target = torch.as_tensor(draft_ids, device=device)
    del model
    if device.type == "cuda":
        torch.cuda.empty_cache()

    params = [p for p in head.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0, betas=(0.9, 0.95))
    warmup = max(1, min(100, args.train_steps // 20))
    rng = random.Random(args.seed)
    order = sorted(range(len(train)), key=lambda i: len(train[i][0]))  # batches of like lengths
    batches = [order[i:i + args.batch_size] for i in range(0, len(order), args.batch_size)]
    amp = torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else None
    train_start, step, history = time.time(), 0, []
    budget = args.train_seconds
    while step < args.train_steps and time.time() - train_start < budget:
        rng.shuffle(batches)
        for idx in batches:
            if step >= args.train_steps or time.time() - train_start >= budget:
                break
            # Linear warmup, then cosine decay over whichever of the limits comes first.
            elapsed = (time.time() - train_start) / budget
            progress = max(step / args.train_steps, elapsed)
            lr = args.lr * min(1.0, (step + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * progress))
            for g in opt.param_groups:
                g["lr"] = lr
            batch = make_batch(train, idx, device)
            if amp:
                with amp:
                    loss, accs = step_loss(head, lm_draft, batch, args.ttt_steps)
            else:
                loss, accs = step_loss(head, lm_draft, batch, args.ttt_steps)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            step += 1
            if step % max(1, args.train_steps // 40) == 0 or step == 1:
                history.append({"step": step, "loss": loss.item(), "acc": accs})
                log(f"step {step}: loss {loss.item():.3f}, top-1 per step "
                    + " ".join(f"{a:.3f}" for a in accs))
    train_s = time.time() - train_start
    log(f"trained {step} steps in {train_s:.1f}s")

    # Evaluate the weights as saved (bf16), in f32 like the C++ draft on the CPU.
    with torch.no_grad():
        for p in head.parameters():
            p.copy_(p.to(torch.bfloat16).float())
    head = head.float().eval()
    held = [(i, a.float(), f.float()) for i, a, f in held]
    prompt_lens = [len(p) for p in eval_prompts]
    sim = simulate_accept_length(head, held, prompt_lens, draft_to_target, [3, 5], device)
    for s, r in sim.items():
        log(f"simulated accept length ({'training' if args.eval_on_train else 'held-out'} "
            f"prompts), chain num_steps {s}: {r['accept_length']:.3f} "
            f"({r['verify_steps']} verify steps over {len(held)} prompts)")

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    write_safetensors(args.out / "model.safetensors", to_safetensors(head, draft_ids, vocab))
    with open(args.out / "eval_prompts.jsonl", "w") as f:
        for p in eval_prompts:
            f.write(json.dumps({"prompt_ids": p, "max_new_tokens": args.new_tokens,
                                "temperature": 0, "ignore_eos": True}) + "\n")
    report = {
        "target": str(args.target), "device": str(device),
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "aux_layers": aux_layers, "draft_vocab_size": int(d),
        "draft_vocab_coverage": float(covered),
        "eval_head": str(args.eval_head) if args.eval_head else None,
        "init_head": str(args.init_head) if args.init_head else None,
        "eval_prompts": "training" if args.eval_on_train else "held-out",
        "train_tokens": int(sum(len(x[0]) for x in train)), "train_steps": step,
        "train_seconds": train_s, "total_seconds": time.time() - start,
        "history": history,
        "eval_continuations": [continuations[i] for i in (
            range(args.num_prompts) if args.eval_on_train else
            range(args.num_prompts, n_all))],
        "simulated_accept_length": {f"num_steps_{s}": r for s, r in sim.items()},
    }
    (args.out / "train_report.json").write_text(json.dumps(report, indent=2) + "\n")
    log(f"wrote {args.out}/config.json, model.safetensors, train_report.json, eval_prompts.jsonl")


if __name__ == "__main__":
    main()
