# With --reasoning-parser, a grammar (regex, response_format, ebnf, structural_tag, tool_choice
# required / named) holds the answer after the reasoning, as SGLang's ReasonerGrammarBackend does:
# an output that starts inside the reasoning is free until </think>; one that may open it reasons
# if its first token is <think>; thinking off, the grammar holds from the first token. /generate
# asks for the same with SGLang's require_reasoning, and bounds the reasoning with SGLang's
# max_thinking_tokens (a newline and </think> forced once it is spent).
#
# The model: random weights (--load-format dummy) over the Qwen3 tokenizer's whole vocabulary, in
# which <think> and </think> are single tokens; logit_bias makes the random model write them.
import json

import pytest

from conftest import TESTDATA, Server

THINK, END_THINK, IM_END, NEWLINE = 151667, 151668, 151645, 198
CONFIG = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 151936,
    "max_position_embeddings": 1024, "rms_norm_eps": 1e-6, "rope_theta": 1000000,
    "tie_word_embeddings": True, "eos_token_id": IM_END, "bos_token_id": 151643,
    "torch_dtype": "float32", "hidden_act": "silu"}
ANSWER = {"regex": "(yes|no)"}
USER = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def qwen3(tmp_path_factory):
    model = tmp_path_factory.mktemp("qwen3-vocab")
    (model / "config.json").write_text(json.dumps(CONFIG))
    s = Server(model, "--load-format", "dummy", "--tokenizer-path",
               str(TESTDATA / "tokenizers" / "qwen3"), "--reasoning-parser", "qwen3", "--tool-call-parser", "qwen25",
               model=model)
    yield s
    assert s.stop() == 0, s.log()


def chat(server, **body):
    r = server.post("/v1/chat/completions", {"model": "m", "messages": USER, "max_tokens": 8,
                                             "temperature": 0, **ANSWER, **body})
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]


def opened_reasoning(server):
    """A prompt that ends inside the reasoning (as Qwen3-Thinking-2507's template leaves it)."""
    ids = server.post("/tokenize", {"prompt": "<|im_start|>user\nhi<|im_end|>\n"
                                              "<|im_start|>assistant\n<think>\n"}).json()["tokens"]
    assert ids[-2] == THINK
    return ids


def test_reasoning_opened_by_the_prompt_is_free_until_it_closes(qwen3):
    # The biased </think> can come first only because the grammar waits for it.
    choice = chat(qwen3, input_ids=opened_reasoning(qwen3), logit_bias={str(END_THINK): 100},
                  logprobs=True)
    assert choice["logprobs"]["content"][0]["token"] == "</think>", choice
    assert choice["message"]["content"] in ("yes", "no"), choice
    assert not choice["message"]["reasoning_content"], choice
    assert choice["finish_reason"] == "stop"


def test_a_required_tool_call_follows_the_reasoning(qwen3):
    tool = {"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9}},
        "required": ["a"], "additionalProperties": False}}}
    r = qwen3.post("/v1/chat/completions", {
        "model": "m", "messages": USER, "input_ids": opened_reasoning(qwen3), "max_tokens": 60,
        "temperature": 0, "logit_bias": {str(END_THINK): 100}, "logprobs": True, "tools": [tool],
        "tool_choice": "required", "parallel_tool_calls": False})
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    assert choice["logprobs"]["content"][0]["token"] == "</think>", choice
    assert choice["finish_reason"] == "tool_calls", choice
    [call] = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "f"
    assert set(json.loads(call["function"]["arguments"])) == {"a"}


def test_a_first_think_opens_free_reasoning(qwen3):
    # The template leaves the output free to open its reasoning: <think> first (refused by the
    # grammar) opens it, and what follows is free (the bias repeats <think>, which no answer
    # allows).
    choice = chat(qwen3, logit_bias={str(THINK): 100})
    assert choice["message"]["reasoning_content"] == "<think>" * 7, choice
    assert not choice["message"]["content"], choice
    assert choice["finish_reason"] == "length"
    # Without the bias the model answers at once, under the grammar.
    assert chat(qwen3)["message"]["content"] in ("yes", "no")


def test_thinking_off_holds_the_grammar_from_the_first_token(qwen3):
    choice = chat(qwen3, logit_bias={str(THINK): 100},
                  chat_template_kwargs={"enable_thinking": False})
    assert choice["message"]["content"] in ("yes", "no"), choice
    assert choice["finish_reason"] == "stop"


def test_generate_require_reasoning(qwen3, server):
    def generate(srv, **fields):
        return srv.post("/generate", {"text": "hi", "sampling_params": {
            "max_new_tokens": 8, "temperature": 0, **ANSWER,
            "logit_bias": {str(END_THINK): 100}}, **fields})

    reasoned = generate(qwen3, require_reasoning=True)
    assert reasoned.status_code == 200, reasoned.text
    assert reasoned.json()["output_ids"][0] == END_THINK
    assert reasoned.json()["text"] in ("</think>yes", "</think>no"), reasoned.json()
    assert generate(qwen3).json()["text"] in ("yes", "no")
    assert generate(qwen3, require_reasoning=False).json()["text"] in ("yes", "no")
    # The default test server has no reasoning parser.
    refused = generate(server, require_reasoning=True)
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "require_reasoning"
    assert "--reasoning-parser" in refused.json()["error"]["message"]


def test_generate_max_thinking_tokens(qwen3, server):
    # The biases keep the random model from opening or closing its reasoning by itself.
    def generate(srv, bias=-100, **fields):
        r = srv.post("/generate", {"sampling_params": {
            "max_new_tokens": 10, "temperature": 0,
            "logit_bias": {str(END_THINK): -100, str(THINK): bias}}, **fields})
        return r

    def ids(**fields):
        r = generate(qwen3, **fields)
        assert r.status_code == 200, r.text
        return r.json()["output_ids"]

    opened = opened_reasoning(qwen3)
    free = ids(input_ids=opened)
    assert END_THINK not in free and len(free) == 10
    # The prompt leaves the reasoning open: three tokens, then the close, then the answer.
    budgeted = ids(input_ids=opened, max_thinking_tokens=3)
    assert budgeted[:5] == free[:3] + [NEWLINE, END_THINK], budgeted
    assert budgeted[5:] != free[5:]
    assert ids(input_ids=opened, max_thinking_tokens=0)[:2] == [NEWLINE, END_THINK]
    # A prompt without tags: the output reasons only if it opens with <think>.
    assert ids(text="hi", max_thinking_tokens=2) == ids(text="hi")
    thinks = ids(text="hi", bias=100, max_thinking_tokens=2)
    assert thinks[:5] == [THINK, THINK, THINK, NEWLINE, END_THINK], thinks
    # require_reasoning: the output starts inside it, whatever the prompt.
    assert ids(text="hi", require_reasoning=True, max_thinking_tokens=1)[1:3] == [
        NEWLINE, END_THINK]
    # With a grammar behind require_reasoning, the answer after the forced close is the grammar's.
    constrained = qwen3.post("/generate", {"text": "hi", "require_reasoning": True,
                                           "max_thinking_tokens": 2, "sampling_params": {
                                               "max_new_tokens": 10, "temperature": 0, **ANSWER,
                                               "logit_bias": {str(END_THINK): -100}}})
    assert constrained.status_code == 200, constrained.text
    out = constrained.json()
    assert out["output_ids"][2:4] == [NEWLINE, END_THINK], out
    assert out["text"].endswith("</think>yes") or out["text"].endswith("</think>no"), out

    def refused(srv, words, **fields):
        r = srv.post("/generate", {"text": "hi", **fields})
        assert r.status_code == 400, r.text
        error = r.json()["error"]
        assert "max_thinking_tokens" in (error["param"] or error["message"]), r.text
        assert words in error["message"], r.text

    refused(qwen3, ">= 0", max_thinking_tokens=-1)
    refused(qwen3, "require_reasoning", max_thinking_tokens=4,
            sampling_params={"regex": "(yes|no)"})
    refused(server, "--reasoning-parser", max_thinking_tokens=4)  # no reasoning parser
    chat = qwen3.post("/v1/chat/completions", {"model": "m", "messages": USER,
                                               "max_thinking_tokens": 4})
    assert chat.status_code == 400 and "/generate" in chat.json()["error"]["message"], chat.text
