# Reasoning on the Responses and Messages APIs (--reasoning-parser), on stories260K, through the
# official openai and anthropic clients and plain HTTP. The model never thinks by itself, so an
# EBNF grammar (SGLang's `ebnf`, passed through both routes) makes it write <think>...</think> then
# an answer; the qwen3 parser must turn that into a reasoning item / thinking block before the
# message / text block, streamed and whole alike, equal to /v1/chat/completions' reasoning_content.
# A test template reads enable_thinking, reasoning_effort and thinking_mode, so the switches show
# in the prompt.
# deepseek-r1 (the output starts inside the reasoning) makes the whole reply thinking, which
# budget_tokens then closes (a newline and </think> forced) so that the model answers.
import json

import pytest

from conftest import MODEL, Server

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

# The conftest template plus: an assistant turn's reasoning_content as <think>...</think>,
# reasoning_effort written into the prompt, and enable_thinking false closing an empty
# <think></think> (as Qwen3's template does).
TEMPLATE = """{{ bos_token }}
{%- for message in messages %}
{%- if message['role'] == 'user' %}User: {{ message['content'] }}
{% elif message['role'] == 'assistant' %}Assistant: {% if message.reasoning_content %}<think>{{ message.reasoning_content }}</think>{% endif %}{{ message['content'] }}
{% else %}{{ message['content'] }}
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}Assistant:
{%- if reasoning_effort is defined %} Effort {{ reasoning_effort }}.{% endif %}
{%- if thinking_mode is defined %} Mode {{ thinking_mode }}.{% endif %}
{%- if enable_thinking is defined and not enable_thinking %} <think></think>{% endif %}
{%- endif %}"""

FORCED = ('root ::= "<think>" [a-z]{2,10} " " [a-z]{2,10} "</think>" "Sure, " [a-z]{2,10}')
USER = {"role": "user", "content": "Once upon a time"}
BODY = {"model": "m", "temperature": 0, "ebnf": FORCED}


@pytest.fixture(scope="module")
def qwen3(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("qwen3")
    template = workdir / "thinking_template.jinja"
    template.write_text(TEMPLATE)
    s = Server(workdir, "--chat-template", str(template), "--reasoning-parser", "qwen3",
               "--enable-response-store",
               model=MODEL)
    yield s
    assert s.stop() == 0, s.log()


@pytest.fixture(scope="module")
def r1(tmp_path_factory):
    # The conftest template (no enable_thinking): thinking cannot be turned off here.
    s = Server(tmp_path_factory.mktemp("r1"), "--reasoning-parser", "deepseek-r1")
    yield s
    assert s.stop() == 0, s.log()


@pytest.fixture(scope="module")
def oai(qwen3):
    return openai.OpenAI(base_url=qwen3.url + "/v1", api_key="unused", max_retries=0)


@pytest.fixture(scope="module")
def claude(qwen3):
    return anthropic.Anthropic(base_url=qwen3.url, api_key="unused", max_retries=0)


@pytest.fixture(scope="module")
def want(qwen3):
    """The chat route's split of the forced reply: (reasoning_content, content)."""
    r = qwen3.post("/v1/chat/completions", {**BODY, "messages": [USER], "max_tokens": 60})
    assert r.status_code == 200, r.text
    m = r.json()["choices"][0]["message"]
    assert m["reasoning_content"] and "<think>" not in m["reasoning_content"], m
    assert m["content"].startswith("Sure, "), m
    return m["reasoning_content"], m["content"]


def sse(response):
    """(event name, data) of an event stream."""
    name, out = None, []
    for line in response.iter_lines():
        if line.startswith(b"event: "):
            name = line[7:].decode()
        elif line.startswith(b"data: "):
            out.append((name, json.loads(line[6:])))
    return out


# /v1/responses

def test_responses_reasoning_item_comes_first(oai, want):
    r = oai.responses.create(model="m", input="Once upon a time", max_output_tokens=60,
                             temperature=0, extra_body={"ebnf": FORCED})
    assert [o.type for o in r.output] == ["reasoning", "message"]
    item = r.output[0]
    assert item.id.startswith("rs_") and item.summary == [] and item.status == "completed"
    assert [(c.type, c.text) for c in item.content] == [("reasoning_text", want[0])]
    assert r.output_text == want[1]
    details = r.usage.output_tokens_details
    assert 0 < details.reasoning_tokens < r.usage.output_tokens, r.usage
    assert r.reasoning.effort is None


def test_stored_reasoning_continues_as_the_chat_history(qwen3, oai, want):
    # --enable-response-store: a continuation puts the stored reasoning item before its message
    # (the template shows it as <think>...</think>), as a chat history's reasoning_content.
    first = oai.responses.create(model="m", input="Once upon a time", max_output_tokens=60,
                                 temperature=0, extra_body={"ebnf": FORCED})
    assert [o.type for o in first.output] == ["reasoning", "message"]
    after = oai.responses.create(model="m", input="More.", previous_response_id=first.id,
                                 max_output_tokens=4, temperature=0)
    r = qwen3.post("/v1/chat/completions", {"model": "m", "max_tokens": 4, "temperature": 0,
                                            "messages": [USER, {"role": "assistant",
                                                                "content": want[1],
                                                                "reasoning_content": want[0]},
                                                         {"role": "user", "content": "More."}]})
    assert after.usage.input_tokens == r.json()["usage"]["prompt_tokens"]
    assert after.output_text == r.json()["choices"][0]["message"]["content"]
    # Cut short inside its thinking, a response is still continued (its lone reasoning item is
    # not kept: nothing it belongs to came).
    cut = oai.responses.create(model="m", input="Once upon a time", max_output_tokens=8,
                               temperature=0, extra_body={"ebnf": FORCED})
    assert [o.type for o in cut.output] == ["reasoning"] and cut.status == "incomplete"
    more = oai.responses.create(model="m", input="More.", previous_response_id=cut.id,
                                max_output_tokens=2, temperature=0)
    assert more.status == "incomplete" and more.output_text


def test_responses_streams_the_reasoning_item_before_the_message(qwen3, want):
    resp = qwen3.post("/v1/responses", {**BODY, "input": "Once upon a time",
                                        "max_output_tokens": 60, "stream": True}, stream=True)
    assert resp.status_code == 200, resp.text
    events = [data for _, data in sse(resp)]
    types = [e["type"] for e in events]
    # Outside the deltas, the events in order (each delta kind repeats between its neighbours).
    skeleton = [t for i, t in enumerate(types) if not t.endswith(".delta") or types[i - 1] != t]
    assert skeleton == [
        "response.created", "response.in_progress",
        "response.output_item.added", "response.content_part.added",
        "response.reasoning_text.delta", "response.reasoning_text.done",
        "response.content_part.done", "response.output_item.done",
        "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.done",
        "response.content_part.done", "response.output_item.done", "response.completed"]
    added = [e for e in events if e["type"] == "response.output_item.added"]
    assert [(e["output_index"], e["item"]["type"]) for e in added] == [(0, "reasoning"),
                                                                      (1, "message")]
    assert events[3]["part"] == {"type": "reasoning_text", "text": ""}
    reasoning = "".join(e["delta"] for e in events if e["type"] == "response.reasoning_text.delta")
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert (reasoning, text) == want
    done = next(e for e in events if e["type"] == "response.reasoning_text.done")
    assert done["text"] == want[0] and done["output_index"] == 0 and done["content_index"] == 0
    # The reasoning item is complete once the message begins, before the response ends.
    items_done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [(i["type"], i["status"]) for i in items_done] == [("reasoning", "completed"),
                                                              ("message", "completed")]
    final = events[-1]["response"]
    assert final["output"][0]["content"] == [{"type": "reasoning_text", "text": want[0]}]
    assert final["usage"]["output_tokens_details"]["reasoning_tokens"] > 0
    assert [e["sequence_number"] for e in events] == list(range(len(events)))


def test_responses_stream_helper_assembles_the_items(oai, want):
    with oai.responses.stream(model="m", input="Once upon a time", max_output_tokens=60,
                              temperature=0, extra_body={"ebnf": FORCED}) as stream:
        final = stream.get_final_response()
    assert [o.type for o in final.output] == ["reasoning", "message"]
    assert final.output[0].content[0].text == want[0] and final.output_text == want[1]


def test_responses_effort_switches_the_template(oai, qwen3, want):
    base = oai.responses.create(model="m", input="Once upon a time", max_output_tokens=60,
                                temperature=0, extra_body={"ebnf": FORCED})
    # A level turns thinking on and reaches the template (its prompt grows by "Effort low.").
    low = oai.responses.create(model="m", input="Once upon a time", max_output_tokens=60,
                               temperature=0, reasoning={"effort": "low"},
                               extra_body={"ebnf": FORCED})
    assert low.reasoning.effort == "low" and low.usage.input_tokens > base.usage.input_tokens
    assert [o.type for o in low.output] == ["reasoning", "message"]
    # none: enable_thinking false reaches the template (its prompt closes an empty reasoning);
    # reasoning the model writes all the same is still separated (SGLang's: separate_reasoning
    # decides), and the grammar holds from the first token.
    off = oai.responses.create(model="m", input="Once upon a time", max_output_tokens=60,
                               temperature=0, reasoning={"effort": "none"},
                               extra_body={"ebnf": FORCED})
    assert off.reasoning.effort == "none" and off.usage.input_tokens > base.usage.input_tokens
    assert [o.type for o in off.output] == ["reasoning", "message"]
    assert off.output_text.startswith("Sure, ")


def test_responses_reasoning_items_go_back_to_the_template(oai, qwen3):
    first = oai.responses.create(model="m", input="Once upon a time", max_output_tokens=60,
                                 temperature=0, extra_body={"ebnf": FORCED})
    turn = [USER] + [o.model_dump(exclude_none=True) for o in first.output] + [
        {"role": "user", "content": "Go on."}]
    again = oai.responses.create(model="m", input=turn, max_output_tokens=4, temperature=0)
    without = oai.responses.create(model="m", input=[turn[0], turn[2], turn[3]],
                                   max_output_tokens=4, temperature=0)
    # The reasoning item becomes the assistant turn's reasoning_content, which this template
    # shows as <think>...</think>.
    assert again.usage.input_tokens > without.usage.input_tokens


@pytest.mark.parametrize("reasoning,field", [
    ({"effort": "extreme"}, "reasoning.effort"),
    ({"effort": "low", "summary": "auto"}, "reasoning.summary"),
    ({"generate_summary": "concise"}, "reasoning.generate_summary"),
    ({"mode": "pro"}, "reasoning.mode"),
    ("high", "reasoning"),
])
def test_responses_reasoning_refusals(qwen3, reasoning, field):
    r = qwen3.post("/v1/responses", {"model": "m", "input": "hi", "reasoning": reasoning})
    assert r.status_code in (400, 501), r.text
    assert field in r.json()["error"]["message"], r.text


def test_responses_switches_this_server_cannot_honour(server, r1, qwen3):
    # Thinking on needs a reasoning parser; off needs a template that reads enable_thinking.
    on = server.post("/v1/responses", {"model": "m", "input": "hi",
                                       "reasoning": {"effort": "high"}})
    assert on.status_code == 400 and "--reasoning-parser" in on.json()["error"]["message"]
    off = r1.post("/v1/responses", {"model": "m", "input": "hi", "reasoning": {"effort": "none"}})
    assert off.status_code == 400 and "enable_thinking" in off.json()["error"]["message"]
    clash = qwen3.post("/v1/responses", {"model": "m", "input": "hi",
                                         "reasoning": {"effort": "none"},
                                         "chat_template_kwargs": {"enable_thinking": True}})
    assert clash.status_code == 400 and "disagree" in clash.json()["error"]["message"]
    orphan = qwen3.post("/v1/responses", {"model": "m", "input": [
        {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "x"}]},
        {"role": "user", "content": "hi"}]})
    assert orphan.status_code == 400 and "input[0]" in orphan.json()["error"]["message"]


# /v1/messages

def test_messages_thinking_block_comes_first(claude, want):
    m = claude.messages.create(model="m", max_tokens=60, messages=[USER],
                               thinking={"type": "enabled", "budget_tokens": 1024},
                               extra_body=BODY)
    assert [b.type for b in m.content] == ["thinking", "text"]
    assert m.content[0].thinking == want[0] and m.content[0].signature == ""
    assert m.content[1].text == want[1] and m.stop_reason == "end_turn"
    # No thinking parameter: the model's default (this template thinks), still separated.
    default = claude.messages.create(model="m", max_tokens=60, messages=[USER], extra_body=BODY)
    assert [b.type for b in default.content] == ["thinking", "text"]


def test_messages_stream_thinking_then_text(qwen3, claude, want):
    resp = qwen3.post("/v1/messages", {**BODY, "max_tokens": 60, "messages": [USER],
                                       "stream": True, "thinking": {"type": "adaptive"}},
                      stream=True)
    assert resp.status_code == 200, resp.text
    events = sse(resp)
    starts = [d for n, d in events if n == "content_block_start"]
    assert [(d["index"], d["content_block"]) for d in starts] == [
        (0, {"type": "thinking", "thinking": "", "signature": ""}),
        (1, {"type": "text", "text": ""})]
    deltas = [d for n, d in events if n == "content_block_delta"]
    thinking = "".join(d["delta"]["thinking"] for d in deltas if d["index"] == 0)
    text = "".join(d["delta"]["text"] for d in deltas if d["index"] == 1)
    assert {d["delta"]["type"] for d in deltas if d["index"] == 0} == {"thinking_delta"}
    assert (thinking, text) == want
    names = [n for n, _ in events]
    # Each block stops before the next starts.
    assert names.index("content_block_stop") < names.index("content_block_start", names.index(
        "content_block_start") + 1)
    assert names[-1] == "message_stop"
    with claude.messages.stream(model="m", max_tokens=60, messages=[USER], extra_body=BODY,
                                thinking={"type": "enabled", "budget_tokens": 2000}) as s:
        final = s.get_final_message()
    assert [(b.type, getattr(b, "thinking", None) or getattr(b, "text", None))
            for b in final.content] == [("thinking", want[0]), ("text", want[1])]


def test_messages_thinking_disabled_still_separates_what_the_model_thinks(claude):
    # disabled reaches the template as enable_thinking false; reasoning the model writes anyway
    # (here the forcing grammar's) is separated, as SGLang's Messages route does.
    m = claude.messages.create(model="m", max_tokens=60, messages=[USER],
                               thinking={"type": "disabled"}, extra_body=BODY)
    assert [b.type for b in m.content] == ["thinking", "text"]
    assert m.content[1].text.startswith("Sure, ")


def test_messages_thinking_history_reaches_the_template(claude):
    def turn(assistant):
        return claude.messages.create(model="m", max_tokens=2, extra_body={"temperature": 0},
                                      messages=[USER, {"role": "assistant", "content": assistant},
                                                {"role": "user", "content": "Go on."}])
    text = {"type": "text", "text": "there was"}
    with_thinking = turn([{"type": "thinking", "thinking": "a long thought", "signature": ""},
                          text])
    assert with_thinking.usage.input_tokens > turn([text]).usage.input_tokens


def test_messages_budget_tokens_closes_the_thinking(r1):
    # deepseek-r1: this reply never leaves its reasoning by itself; the budget closes it (a
    # newline and </think> forced, as SGLang's ThinkingBudgetLogitProcessor does) and the model
    # answers in a text block.
    def ask(budget, stream=False):
        return r1.post("/v1/messages", {"model": "m", "max_tokens": 40, "temperature": 0,
                                        "messages": [USER], "stream": stream,
                                        "thinking": {"type": "enabled",
                                                     "budget_tokens": budget}}, stream=stream)
    whole = ask(100).json()
    assert [b["type"] for b in whole["content"]] == ["thinking"]
    assert whole["usage"]["output_tokens"] == 40 and whole["stop_reason"] == "max_tokens"
    cut = ask(5).json()
    assert [b["type"] for b in cut["content"]] == ["thinking", "text"], cut
    thought, answer = cut["content"][0]["thinking"], cut["content"][1]["text"]
    assert cut["stop_reason"] == "max_tokens" and cut["usage"]["output_tokens"] == 40, cut
    # The first five tokens of the free reasoning, then the close, then an answer.
    five = r1.post("/v1/messages", {"model": "m", "max_tokens": 5, "temperature": 0,
                                    "messages": [USER]}).json()["content"][0]["thinking"]
    assert thought.strip() == five.strip() and whole["content"][0]["thinking"].startswith(five)
    assert answer.strip(), cut
    events = sse(ask(5, stream=True))
    assert [d["content_block"]["type"] for n, d in events if n == "content_block_start"] == [
        "thinking", "text"]
    deltas = [d["delta"] for n, d in events if n == "content_block_delta"]
    assert "".join(d.get("thinking", "") for d in deltas) == thought
    assert "".join(d.get("text", "") for d in deltas) == answer
    delta = next(d for n, d in events if n == "message_delta")
    assert delta["delta"]["stop_reason"] == "max_tokens"
    assert delta["usage"]["output_tokens"] == 40
    assert r1.alive()


@pytest.mark.parametrize("thinking,words", [
    ({"type": "enabled"}, "thinking.budget_tokens"),
    ({"type": "enabled", "budget_tokens": 0}, "thinking.budget_tokens"),
    ({"type": "between_tools"}, "thinking.type"),
    ({"type": "enabled", "budget_tokens": 9, "display": "omitted"}, "thinking.display"),
    ({"type": "disabled", "budget_tokens": 9}, "thinking.budget_tokens"),
    ("on", "'thinking'"),
])
def test_messages_thinking_refusals(qwen3, thinking, words):
    r = qwen3.post("/v1/messages", {"model": "m", "max_tokens": 4, "messages": [USER],
                                    "thinking": thinking})
    assert r.status_code in (400, 501), r.text
    body = r.json()
    assert body["type"] == "error" and words in body["error"]["message"], body


def test_messages_switches_this_server_cannot_honour(server, r1):
    on = server.post("/v1/messages", {"model": "m", "max_tokens": 4, "messages": [USER],
                                      "thinking": {"type": "adaptive"}})
    assert on.status_code == 400 and "--reasoning-parser" in on.json()["error"]["message"]
    off = r1.post("/v1/messages", {"model": "m", "max_tokens": 4, "messages": [USER],
                                   "thinking": {"type": "disabled"}})
    assert off.status_code == 400 and "enable_thinking" in off.json()["error"]["message"]


# /v1/chat/completions: SGLang's stream_reasoning false holds the reasoning back and sends it in one
# chunk when the content begins; SGLang's thinking config reaches the template as thinking_mode.
def chat_deltas(qwen3, **extra):
    r = qwen3.post("/v1/chat/completions", {**BODY, "messages": [USER], "max_tokens": 60,
                                            "stream": True, **extra}, stream=True)
    assert r.status_code == 200, r.text
    chunks = [json.loads(line[6:]) for line in r.iter_lines()
              if line.startswith(b"data: ") and line != b"data: [DONE]"]
    return [c["choices"][0]["delta"] for c in chunks if c.get("choices")]


def test_chat_stream_reasoning_false_sends_the_reasoning_whole(qwen3, want):
    # Streamed, the reasoning comes in several chunks, unless a loaded machine's slow reads let
    # the server merge them: some of a few tries show it.
    tries = []
    for _ in range(5):
        tries.append([d["reasoning_content"] for d in chat_deltas(qwen3)
                      if d.get("reasoning_content")])
        if len(tries[-1]) > 1:
            break
    assert all("".join(t) == want[0] for t in tries)
    assert len(tries[-1]) > 1, tries
    deltas = chat_deltas(qwen3, stream_reasoning=False)
    kinds = [k for d in deltas for k in ("reasoning_content", "content") if d.get(k)]
    assert kinds == ["reasoning_content"] + ["content"] * (len(kinds) - 1), kinds
    assert next(d["reasoning_content"] for d in deltas if d.get("reasoning_content")) == want[0]
    assert "".join(d.get("content") or "" for d in deltas) == want[1]


def test_chat_thinking_config_reaches_the_template(qwen3):
    def prompt_tokens(**extra):
        r = qwen3.post("/v1/chat/completions", {"messages": [USER], "max_tokens": 1, **extra})
        assert r.status_code == 200, r.text
        return r.json()["usage"]["prompt_tokens"]

    plain = prompt_tokens()
    assert prompt_tokens(thinking={"type": "enabled"}) > plain  # " Mode enabled." was rendered
    # chat_template_kwargs' own thinking_mode wins, as SGLang's setdefault leaves it.
    assert (prompt_tokens(thinking={"type": "enabled"},
                          chat_template_kwargs={"thinking_mode": "x"}) ==
            prompt_tokens(chat_template_kwargs={"thinking_mode": "x"}))
    r = qwen3.post("/v1/chat/completions", {"messages": [USER], "thinking": "on"})
    assert r.status_code == 400 and "thinking" in r.text, r.text


def test_chat_reasoning_effort_switches_the_template(oai, server, r1, want):
    """OpenAI's reasoning_effort on the chat route, as reasoning.effort on Responses."""
    kw = dict(model="m", messages=[USER], max_tokens=60, temperature=0,
              extra_body={"ebnf": FORCED})
    base = oai.chat.completions.create(**kw)
    low = oai.chat.completions.create(reasoning_effort="low", **kw)
    # " Effort low." was rendered (so the forced reply differs), and the reasoning is separated.
    assert low.usage.prompt_tokens > base.usage.prompt_tokens
    assert base.choices[0].message.reasoning_content == want[0]
    reasoning = low.choices[0].message.reasoning_content
    assert reasoning and "<think>" not in reasoning, reasoning
    assert low.choices[0].message.content.startswith("Sure, ")
    off = oai.chat.completions.create(reasoning_effort="none", **kw)
    # enable_thinking false reaches the template; what reasoning the model writes is separated.
    assert off.usage.prompt_tokens > base.usage.prompt_tokens
    assert off.choices[0].message.content.startswith("Sure, ")
    assert off.choices[0].message.reasoning_content
    # SGLang's reasoning object: its effort stands for reasoning_effort, enabled turns thinking
    # on as chat_template_kwargs.enable_thinking does.
    nested = oai.chat.completions.create(
        **dict(kw, extra_body={"ebnf": FORCED, "reasoning": {"effort": "low"}}))
    assert nested.usage.prompt_tokens == low.usage.prompt_tokens
    assert nested.choices[0].message.content == low.choices[0].message.content
    enabled, explicit = (oai.chat.completions.create(**dict(kw, extra_body={"ebnf": FORCED, **e}))
                         for e in ({"reasoning": {"enabled": True}},
                                   {"chat_template_kwargs": {"enable_thinking": True}}))
    assert enabled.usage.prompt_tokens == explicit.usage.prompt_tokens
    assert enabled.choices[0].message.reasoning_content == explicit.choices[0].message.reasoning_content
    none = oai.chat.completions.create(
        **dict(kw, extra_body={"ebnf": FORCED, "reasoning": {"effort": "none"}}))
    assert none.usage.prompt_tokens == off.usage.prompt_tokens
    bad = server.post("/v1/chat/completions", {"messages": [USER], "reasoning_effort": "extreme"})
    assert bad.status_code == 400 and "reasoning_effort" in bad.text, bad.text
    on = server.post("/v1/chat/completions", {"messages": [USER], "reasoning_effort": "high"})
    assert on.status_code == 400 and "--reasoning-parser" in on.text, on.text
    none = r1.post("/v1/chat/completions", {"messages": [USER], "reasoning_effort": "none"})
    assert none.status_code == 400 and "enable_thinking" in none.text, none.text


# stop_regex reads the raw output (reasoning included), and the reply ends where its match ends:
# the content is the answer up to there, the reasoning unrepeated (the cut once read the raw text
# from the content's length, so the reasoning came back inside the content).
@pytest.mark.parametrize("stream", [False, True])
def test_chat_stop_regex_after_the_reasoning(qwen3, want, stream):
    reasoning, content = want
    body = {**BODY, "messages": [USER], "max_tokens": 60, "stop_regex": "Sure, [a-z]"}
    if stream:
        deltas = chat_deltas(qwen3, stop_regex="Sure, [a-z]")
        got = ("".join(d.get("reasoning_content") or "" for d in deltas),
               "".join(d.get("content") or "" for d in deltas))
    else:
        r = qwen3.post("/v1/chat/completions", body)
        assert r.status_code == 200, r.text
        choice = r.json()["choices"][0]
        assert choice["finish_reason"] == "stop", choice
        got = (choice["message"]["reasoning_content"], choice["message"]["content"])
    assert got == (reasoning, content[:len("Sure, x")]), got
