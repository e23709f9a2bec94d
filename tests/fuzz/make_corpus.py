#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets in tests/fuzz/corpus/ (run from anywhere).

openai_json_fuzz: request bodies like the server e2e suites send, each prefixed with its route
digit. tokenizer_json_fuzz: small tokenizer.json files of several kinds, trained here with the
`tokenizers` package on a few sentences (pip install tokenizers). jinja_parse_fuzz: chat
templates written for these seeds. Every file stays well under 64 KiB. (The BPE trainer may break
ties in another order from run to run; any of its outputs is as good a seed.)
"""
import json
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus"


def write(target, name, text):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    data = text.encode() if isinstance(text, str) else text
    assert len(data) < 64 * 1024, (target, name, len(data))
    (folder / name).write_bytes(data)


# ---- openai_json_fuzz: "<route digit><body>"; 0 chat, 1 completions, 2 generate, 3 tokenize,
# 4 detokenize, 5 abort, 6 Anthropic messages, 7 OpenAI responses, 8 Ollama chat, 9 Ollama
# generate, ':' (10) Ollama embed, ';' (11) Ollama embeddings (openai_json_fuzz.cpp).
REQUESTS = {
    "chat_basic": ("0", {"model": "stories260K", "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Once upon a time"}], "max_tokens": 8, "temperature": 0}),
    "chat_parts_tools": ("0", {"messages": [
        {"role": "user", "content": [{"type": "text", "text": "Hi"},
                                     {"type": "text", "text": "there"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "content": "42", "tool_call_id": "c1"}],
        "tools": [{"type": "function", "function": {"name": "f",
                                                    "parameters": {"type": "object"}}}],
        "tool_choice": "auto", "chat_template_kwargs": {"enable_thinking": False},
        "logprobs": True, "top_logprobs": 3, "stream": True,
        "stream_options": {"include_usage": True}}),
    "chat_sampling": ("0", {"messages": [{"role": "user", "content": "x"}], "n": 2, "top_p": 0.9,
                            "top_k": 40, "min_p": 0.05, "seed": 7, "stop": ["\n", "The"],
                            "presence_penalty": 0.5, "frequency_penalty": -0.5,
                            "repetition_penalty": 1.1, "min_tokens": 1,
                            "max_completion_tokens": 16, "logit_bias": {"42": -100, "7": 2.5},
                            "response_format": {"type": "text"}}),
    "completion_text": ("1", {"model": "stories260K", "prompt": "Once upon a time",
                              "max_tokens": 16, "temperature": 0, "echo": True, "logprobs": 2}),
    "completion_batch_ids": ("1", {"prompt": [[1, 2, 3], [4, 5]], "max_tokens": 4, "n": 3,
                                   "best_of": 3, "stop_token_ids": [2], "ignore_eos": True,
                                   "skip_special_tokens": False}),
    "completion_text_list": ("1", {"prompt": ["a", "b", "c"], "stream": True, "suffix": "",
                                   "stop": "END"}),
    "generate_ids": ("2", {"input_ids": [1, 403, 407, 261, 378], "sampling_params": {
        "max_new_tokens": 8, "temperature": 0, "min_new_tokens": 2, "sampling_seed": 3,
        "stop": ["."]}, "return_logprob": True, "top_logprobs_num": 2, "logprob_start_len": 0,
        "return_text_in_logprobs": True}),
    "generate_text_batch": ("2", {"text": ["Once upon a time", "One day"],
                                  "sampling_params": {"n": 2, "top_k": -1}, "stream": True,
                                  "rid": "req-1"}),
    "tokenize": ("3", {"prompt": "Once upon a time", "add_special_tokens": False}),
    "tokenize_batch": ("3", {"text": ["a", "b"]}),
    "detokenize": ("4", {"tokens": [1, 403, 407, 261], "skip_special_tokens": True}),
    "abort": ("5", {"rid": "abort-me"}),
    "abort_all": ("5", {"abort_all": True}),
    "messages": ("6", {"model": "m", "max_tokens": 8, "system": [{"type": "text", "text": "Hi"}],
                       "messages": [{"role": "user", "content": "Once"},
                                    {"role": "assistant", "content": "upon"},
                                    {"role": "user", "content": [{"type": "text", "text": "a"}]}],
                       "stop_sequences": ["."], "stream": True, "temperature": 0.5}),
    "messages_tools": ("6", {
        "model": "m", "max_tokens": 8,
        "tools": [{"name": "f", "description": "d", "input_schema": {"type": "object"},
                   "strict": True}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "messages": [{"role": "user", "content": "Once"},
                     {"role": "assistant", "content": [
                         {"type": "thinking", "thinking": "t", "signature": ""},
                         {"type": "text", "text": "a"},
                         {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"x": 1}}]},
                     {"role": "user", "content": [
                         {"type": "text", "text": "b"},
                         {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": False,
                          "content": [{"type": "text", "text": "42"}]}]}],
        "output_config": {"effort": "high", "format": {"type": "json_schema",
                                                       "schema": {"type": "object"}}}}),
    "ollama_chat": ("8", {
        "model": "m", "stream": False, "format": {"type": "object"}, "keep_alive": "5m",
        "think": "low", "options": {"temperature": 0.5, "num_predict": 8, "stop": ["."],
                                    "repeat_penalty": 1.1, "seed": 3},
        "tools": [{"type": "function", "function": {"name": "f",
                                                    "parameters": {"type": "object"}}}],
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "Once"},
                     {"role": "assistant", "content": "", "thinking": "t",
                      "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]},
                     {"role": "tool", "tool_name": "f", "content": "42"}]}),
    "ollama_embed": (":", {"model": "m", "input": ["Once upon", "a time"], "truncate": False,
                           "dimensions": 8, "keep_alive": "5m", "options": {}}),
    "ollama_embeddings": (";", {"model": "m", "prompt": "Once upon", "keep_alive": 0}),
    "ollama_generate": ("9", {"model": "m", "prompt": "Once upon", "system": "s", "raw": True,
                              "format": "json", "options": {"num_predict": -1, "top_k": 4}}),
    "responses": ("7", {"model": "m", "instructions": "Be brief.", "max_output_tokens": 8,
                        "input": [{"role": "developer", "content": "x"},
                                  {"type": "message", "role": "user",
                                   "content": [{"type": "input_text", "text": "Once"}]}],
                        "metadata": {"k": "v"}, "store": False, "tools": [],
                        "text": {"format": {"type": "text"}}, "stream": True, "stop_regex": "a+",
                        "no_stop_trim": True}),
}
RAW_REQUESTS = {
    "bad_json": '0{"messages": [',
    "deep": "2" + "[" * 70 + "]" * 70,
    "escapes": '1{"prompt": "\\u00e9\\ud83d\\ude00\\n\\"", "max_tokens": 1e3}',
    "huge_numbers": '2{"input_ids": [2147483647, 0], "sampling_params": '
                    '{"max_new_tokens": 9223372036854775807, "temperature": 1e308}}',
}


def openai_json():
    for name, (route, body) in REQUESTS.items():
        write("openai_json_fuzz", name, route + json.dumps(body))
    for name, body in RAW_REQUESTS.items():
        write("openai_json_fuzz", name, body)


# ---- tokenizer_json_fuzz
TEXT = [
    "Once upon a time, there was a little girl named Lily. She loved to play outside.",
    "The quick brown fox jumps over the lazy dog 1234567890 times!",
    "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u4f60\u597d\u4e16\u754c \U0001f600 tabs\tand\nnewlines",
    "def f(x):\n    return x ** 2  # squares\n",
] * 4


def tokenizer_json():
    from tokenizers import (Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers,
                            processors, trainers)

    def train(tok, vocab_size, special, **kw):
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special,
                                      show_progress=False, **kw)
        tok.train_from_iterator(TEXT, trainer)
        return tok

    # GPT-2 style byte-level BPE with chat special tokens.
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    train(tok, 300, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
          initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    write("tokenizer_json_fuzz", "byte_level.json", tok.to_str())

    # Llama-2 style: sentencepiece-like BPE with byte fallback, BOS template, spm decoder.
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"),
                                           normalizers.Replace(" ", "\u2581")])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    train(tok, 200, ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)])
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", tok.token_to_id("<s>"))])
    write("tokenizer_json_fuzz", "spm_byte_fallback.json", tok.to_str())

    # Metaspace pre-tokenizer over NFKC + lowercase, with an end-of-word suffix.
    tok = Tokenizer(models.BPE(unk_token="[UNK]", end_of_word_suffix="</w>"))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    train(tok, 150, ["[UNK]", "[CLS]", "[SEP]"], end_of_word_suffix="</w>")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    write("tokenizer_json_fuzz", "metaspace_nfkc.json", tok.to_str())

    # Llama-3 style: a regex Split, individual digits, byte level without its own regex.
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|"
                                   r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"),
                             behavior="isolated"),
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    train(tok, 320, ["<|begin_of_text|>", "<|eot_id|>"],
          initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", special_tokens=[
            ("<|begin_of_text|>", tok.token_to_id("<|begin_of_text|>"))])
    write("tokenizer_json_fuzz", "split_regex_digits.json", tok.to_str())

    # The smallest: a few tokens, no merges, no pipeline.
    tok = Tokenizer(models.BPE(vocab={"a": 0, "b": 1, "ab": 2, "<unk>": 3},
                               merges=[("a", "b")], unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens(["<pad>"])
    tok.add_tokens(["hello world"])
    write("tokenizer_json_fuzz", "tiny.json", tok.to_str())


# ---- jinja_parse_fuzz
TEMPLATES = {
    "chatml.jinja": """{%- for message in messages %}
{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] | trim + '<|im_end|>\\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}""",
    "inst.jinja": """{{ bos_token }}{% if messages[0]['role'] == 'system' %}
{% set system = messages[0]['content'] %}{% set rest = messages[1:] %}
{% else %}{% set system = none %}{% set rest = messages %}{% endif %}
{% for m in rest %}{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}
{{ raise_exception('roles must alternate user/assistant/user/...') }}{% endif %}
{% if m['role'] == 'user' %}[INST] {% if loop.first and system is not none %}<<SYS>>
{{ system }}
<</SYS>>

{% endif %}{{ m['content'] | trim }} [/INST]{% elif m['role'] == 'assistant' %}
 {{ m['content'] | trim }} {{ eos_token }}{% endif %}{% endfor %}""",
    "headers_tools.jinja": """{%- set ns = namespace(tools_text='', last=none) -%}
{%- macro render_tool(t, depth=0) -%}
{{ '  ' * depth }}{{ t.function.name }}({{ t.function.parameters | tojson(indent=2) }})
{%- endmacro -%}
{%- if tools is defined and tools | length > 0 -%}
{%- for t in tools -%}{%- set ns.tools_text = ns.tools_text ~ render_tool(t, 1) ~ '\\n' -%}{%- endfor -%}
{%- endif -%}
<|begin_of_text|>{% for message in messages -%}
<|start_header_id|>{{ message.role }}<|end_header_id|>

{% if message.tool_calls %}{% for call in message.tool_calls %}{{ {'name': call.function.name,
'arguments': call.function.arguments} | tojson }}{% endfor %}{% else %}{{ message.content }}{% endif %}<|eot_id|>
{%- set ns.last = message.role %}{% endfor %}
{%- if ns.tools_text %}Tools:
{{ ns.tools_text }}{% endif %}
{%- if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>

{% endif %}""",
    "expressions.jinja": """{# every kind of expression #}
{%- set xs = [1, 2.5, -3, 'a', "b", true, false, none, [1, [2]], {'k': 'v', "n": 1}] -%}
{{ xs[0] + xs[1] * 2 - 3 / 4 // 1 % 2 ** 3 }} {{ 'a' ~ 'b' }} {{ xs[1:3] }} {{ xs[::-1] }}
{{ 1 if xs | length > 2 else 0 }} {{ not true and (false or 1 < 2 <= 3 != 4) }}
{{ 'x' in 'xyz' }} {{ 3 not in [1, 2] }} {{ xs | selectattr('k', 'defined') | list }}
{{ xs | map('string') | join(', ') }} {{ range(3) | reverse | list }} {{ 'Ab'.lower().upper() }}
{{ '%s-%d' % ('a', 1) }} {{ "{}".format(1) }} {{ {'a': 1}.items() | list }} {{ xs is iterable }}
{{ loop is undefined }} {{ 'a b'.split(' ')[-1] | capitalize | default('z', true) }}
{%- for k, v in {'a': 1, 'b': 2}.items() if v > 1 %}{{ k }}={{ v }}{% else %}empty{% endfor %}""",
    "statements.jinja": """{% raw %}{{ not parsed }}{% endraw %}
{%- macro item(x, caller=none) -%}<{{ x }}{% if caller %}:{{ caller() }}{% endif %}>{%- endmacro %}
{% call item('outer') %}inner{% endcall %}
{% filter upper %}shout {{ 'this' }}{% endfilter %}
{% set block %}captured {{ 1 + 1 }}{% endset %}{{ block }}
{% for m in messages recursive %}{% if loop.depth > 3 %}{% break %}{% endif %}
{{ loop.index }}/{{ loop.length }}{% if m.children %}{{ loop(m.children) }}{% endif %}
{% if loop.last %}{% continue %}{% endif %}{% endfor %}
{%- generation %}{{ messages[-1].content }}{% endgeneration -%}""",
    "whitespace.jinja": "  {%- if true -%}  a  {%+ if false %}b{%- elif true +%} c {% else %} d {%- endif %}\n"
                        "{%- endif %}\n    {# comment #}\n\t{{- ' e ' -}}\t\n{%- for i in range(2) %}\n"
                        "  {{ i }}\n{%- endfor %}",
    "errors_unclosed.jinja": "{% if messages %}{{ messages[0].content {% endif %}",
    "errors_bad_tokens.jinja": "{{ 1 +* 2 }}{% endfor %}{% unknown_tag %}{{ 'unterminated }}",
}


def jinja_parse():
    for name, text in TEMPLATES.items():
        write("jinja_parse_fuzz", name, text)


if __name__ == "__main__":
    openai_json()
    tokenizer_json()
    jinja_parse()
    for folder in sorted(CORPUS.iterdir()):
        files = list(folder.iterdir())
        print(f"{folder.name}: {len(files)} files, {sum(f.stat().st_size for f in files)} bytes")
