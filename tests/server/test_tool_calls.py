# Tool calls and reasoning on the chat routes, on stories260K. The model never writes tool-call
# markup, so what is checked end to end is what its greedy output does make deterministic: a
# reasoning parser moves the whole reply into reasoning_content (deepseek-r1's reasoning has
# no opening tag; this model never closes it) unless separate_reasoning or enable_thinking is
# false, streaming deltas add up to the non-streaming reply, a reply without markup keeps its
# text, and every tools / tool_choice error is a 400 naming the problem. The parsers themselves
# are tested per format, split at every byte, in tests/function_call/.
import json

import pytest

from conftest import Server

openai = pytest.importorskip("openai")

USER = [{"role": "user", "content": "Once upon a time"}]
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}


@pytest.fixture(scope="module")
def reasoning_server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("reasoning"), "--reasoning-parser", "deepseek-r1",
               "--tool-call-parser", "qwen25")
    yield s
    assert s.stop() == 0


@pytest.fixture(scope="module")
def client(reasoning_server):
    return openai.OpenAI(base_url=reasoning_server.url + "/v1", api_key="unused", max_retries=0)


def chat(server, **extra):
    body = {"model": "m", "messages": USER, "max_tokens": 16, "temperature": 0, **extra}
    r = server.post("/v1/chat/completions", body)
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]


def stream(server, **extra):
    body = {"model": "m", "messages": USER, "max_tokens": 16, "temperature": 0, "stream": True,
            **extra}
    r = server.post("/v1/chat/completions", body, stream=True)
    assert r.status_code == 200, r.text
    content, reasoning, calls, finish = "", "", [], None
    for line in r.iter_lines():
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        for choice in json.loads(line[6:])["choices"]:
            delta = choice["delta"]
            content += delta.get("content") or ""
            reasoning += delta.get("reasoning_content") or ""
            calls += delta.get("tool_calls") or []
            finish = choice["finish_reason"] or finish
    return content, reasoning, calls, finish


def test_deepseek_r1_reasoning_takes_the_unclosed_reply(reasoning_server):
    raw = chat(reasoning_server, separate_reasoning=False)["message"]
    assert raw["content"].strip() != "" and raw["reasoning_content"] is None
    parsed = chat(reasoning_server)
    assert parsed["message"]["reasoning_content"] == raw["content"].strip()
    assert parsed["message"]["content"] == "" and parsed["message"]["tool_calls"] is None
    assert parsed["finish_reason"] == chat(reasoning_server, separate_reasoning=False)[
        "finish_reason"] in ("length", "stop")
    # enable_thinking false: no reasoning is separated (SGLang's chat_template_kwargs).
    off = chat(reasoning_server, chat_template_kwargs={"enable_thinking": False})["message"]
    assert off["content"] == raw["content"] and off["reasoning_content"] is None


def test_streaming_reasoning_adds_up(reasoning_server):
    whole = chat(reasoning_server)
    content, reasoning, calls, finish = stream(reasoning_server)
    assert (content, reasoning, calls, finish) == ("", whole["message"]["reasoning_content"], [],
                                                   whole["finish_reason"])


def test_openai_client_reads_reasoning_content(client, reasoning_server):
    r = client.chat.completions.create(model="m", messages=USER, max_tokens=16, temperature=0)
    assert r.choices[0].message.model_extra["reasoning_content"] == \
        chat(reasoning_server)["message"]["reasoning_content"]


def test_tools_without_markup_make_no_calls(reasoning_server):
    # The reply has no <tool_call>: no calls, finish_reason stays, the text is unchanged.
    raw = chat(reasoning_server, tools=[WEATHER], separate_reasoning=False)
    assert raw["message"]["tool_calls"] is None and raw["finish_reason"] in ("length", "stop")
    assert raw["message"]["content"].strip() != ""
    content, _, calls, finish = stream(reasoning_server, tools=[WEATHER],
                                       separate_reasoning=False)
    assert (content, calls, finish) == (raw["message"]["content"], [], raw["finish_reason"])
    # tool_choice none: the template does not see the tools (its "Tools: N" line is absent).
    none = chat(reasoning_server, tools=[WEATHER], tool_choice="none", separate_reasoning=False)
    plain = chat(reasoning_server, separate_reasoning=False)
    assert none["message"]["content"] == plain["message"]["content"]


@pytest.mark.parametrize("extra,status,words", [
    ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "nope"}}},
     400, ["nope", "not in 'tools'"]),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"n": {"type": "number", "multipleOf": 2}}}}}]},
     400, ["tools[0].function.parameters", "multipleOf"]),
    ({"tools": [{"type": "function", "function": {"description": "no name"}}]}, 400,
     ["tools[0].function.name"]),
    ({"tools": [{"type": "code_interpreter"}]}, 400, ["tools[0].type"]),
    ({"tool_choice": "required"}, 400, ["tool_choice", "tools"]),
    ({"tools": [WEATHER], "tool_choice": "sometimes"}, 400, ["tool_choice"]),
    ({"tools": [WEATHER], "tool_choice": {"type": "function"}}, 400, ["tool_choice"]),
    ({"tools": [WEATHER], "parallel_tool_calls": "yes"}, 400, ["parallel_tool_calls"]),
    # Valid, but forcing a call needs constrained decoding, not wired yet.
    ({"tools": [WEATHER], "tool_choice": "required"}, 400, ["required", "not supported yet"]),
    ({"tools": [WEATHER], "tool_choice": {"type": "function",
                                          "function": {"name": "get_weather"}}},
     400, ["named tool_choice", "not supported yet"]),
])
def test_tool_errors_are_400(reasoning_server, extra, status, words):
    r = reasoning_server.post("/v1/chat/completions", {"model": "m", "messages": USER,
                                                       "max_tokens": 2, **extra})
    assert r.status_code == status, r.text
    message = r.json()["error"]["message"]
    for word in words:
        assert word in message, message
    assert reasoning_server.alive()


def test_required_needs_a_tool_call_parser(server):
    r = server.post("/v1/chat/completions", {"model": "m", "messages": USER, "max_tokens": 2,
                                             "tools": [WEATHER], "tool_choice": "required"})
    assert r.status_code == 400 and "--tool-call-parser" in r.json()["error"]["message"]


# /v1/responses: function tools in the Responses form, function_call / function_call_output
# input items as the chat history's tool calls and results, tools and tool_choice echoed.
RESPONSES_TOOL = {"type": "function", "name": "get_weather", "description": "Weather",
                  "parameters": WEATHER["function"]["parameters"]}


def test_responses_function_items_reach_the_template(reasoning_server, client):
    history = [{"role": "user", "content": "Weather in Paris?"},
               {"type": "function_call", "call_id": "call_1", "name": "get_weather",
                "arguments": "{\"city\": \"Paris\"}"},
               {"type": "function_call_output", "call_id": "call_1", "output": "Sunny"}]
    r = client.responses.create(model="m", input=history, tools=[RESPONSES_TOOL],
                                max_output_tokens=8, temperature=0)
    # The same conversation as chat messages gives the same greedy text (one chat path).
    chat_messages = [history[0],
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"id": "call_1", "type": "function",
                          "function": {"name": "get_weather",
                                       "arguments": "{\"city\": \"Paris\"}"}}]},
                     {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"}]
    want = reasoning_server.post("/v1/chat/completions", {
        "model": "m", "messages": chat_messages, "tools": [WEATHER], "max_tokens": 8,
        "temperature": 0, "separate_reasoning": False}).json()["choices"][0]["message"]
    assert r.output_text == want["content"] != ""
    assert [o.type for o in r.output] == ["message"]
    assert r.tools[0].name == "get_weather" and r.tool_choice == "auto"


def test_responses_streaming_without_calls_has_one_message(client):
    events = list(client.responses.create(model="m", input="Once upon a time", stream=True,
                                          tools=[RESPONSES_TOOL], max_output_tokens=8,
                                          temperature=0))
    types = [e.type for e in events]
    assert types.count("response.output_item.added") == 1
    assert "response.function_call_arguments.delta" not in types
    assert events[-1].response.output[0].type == "message"


def test_responses_required_is_refused_until_constrained(client):
    with pytest.raises(openai.BadRequestError, match="not supported yet"):
        client.responses.create(model="m", input="hi", tools=[RESPONSES_TOOL],
                                tool_choice="required", max_output_tokens=2)


def test_anthropic_messages_keep_the_reasoning_in_the_text(reasoning_server):
    # No thinking blocks on /v1/messages yet: the text is the raw reply, reasoning included.
    r = reasoning_server.post("/v1/messages", {"model": "m", "max_tokens": 16, "temperature": 0,
                                               "messages": USER})
    assert r.status_code == 200, r.text
    text = "".join(b["text"] for b in r.json()["content"] if b["type"] == "text")
    assert text == chat(reasoning_server, separate_reasoning=False)["message"]["content"] != ""
