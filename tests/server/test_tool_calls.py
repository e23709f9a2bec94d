# Tool calls and reasoning on the chat routes, on stories260K. The model never writes tool-call
# markup by itself: tool_choice required / named forces it through the tool-call grammar (calls
# checked against their schemas); otherwise what is checked is what greedy output makes
# deterministic: a
# reasoning parser moves the whole reply into reasoning_content (deepseek-r1's reasoning has
# no opening tag; this model never closes it) unless separate_reasoning is false, streaming deltas add up to the non-streaming reply, a reply without markup keeps its
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
    # enable_thinking false does not stop the separation (SGLang's: separate_reasoning decides);
    # DeepSeek-R1's template ignores it, so the model still starts inside its reasoning.
    off = chat(reasoning_server, chat_template_kwargs={"enable_thinking": False})["message"]
    assert off == parsed["message"]


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


MULTIPLE_OF = {"type": "function", "function": {"name": "f", "parameters": {
    "type": "object", "properties": {"n": {"type": "number", "multipleOf": 2}}}}}


# As SGLang, a tool's schema is compiled only where a grammar holds the calls (required, named,
# strict under auto): elsewhere one the grammar engine does not support is served.
@pytest.mark.parametrize("choice", ["auto", "none", {"type": "function", "function":
                                                      {"name": "get_weather"}}])
def test_unsupported_schemas_are_served_where_no_grammar_needs_them(reasoning_server, choice):
    reply = chat(reasoning_server, tools=[MULTIPLE_OF, WEATHER], tool_choice=choice)
    assert reply["finish_reason"] in ("stop", "length", "tool_calls"), reply


@pytest.mark.parametrize("extra,status,words", [
    ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "nope"}}},
     400, ["nope", "not in 'tools'"]),
    # A schema the grammar engine does not support, where a grammar would hold the call to it.
    ({"tools": [MULTIPLE_OF], "tool_choice": "required"}, 400, ["'f'", "multipleOf"]),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": 3}}]}, 400,
     ["tools[0].function.parameters"]),
    ({"tools": [{"type": "function", "function": {"description": "no name"}}]}, 400,
     ["tools[0].function.name"]),
    ({"tools": [{"type": "code_interpreter"}]}, 400, ["tools[0].type"]),
    ({"tool_choice": "required"}, 400, ["tool_choice", "tools"]),
    ({"tools": [WEATHER], "tool_choice": "sometimes"}, 400, ["tool_choice"]),
    ({"tools": [WEATHER], "tool_choice": {"type": "function"}}, 400, ["tool_choice"]),
    ({"tools": [WEATHER], "parallel_tool_calls": "yes"}, 400, ["parallel_tool_calls"]),
    # Forcing a call and a response format at once: two constraints.
    ({"tools": [WEATHER], "tool_choice": "required", "response_format": {"type": "json_object"}},
     400, ["required", "response_format"]),
])
def test_tool_errors_are_400(reasoning_server, extra, status, words):
    r = reasoning_server.post("/v1/chat/completions", {"model": "m", "messages": USER,
                                                       "max_tokens": 2, **extra})
    assert r.status_code == status, r.text
    message = r.json()["error"]["message"]
    for word in words:
        assert word in message, message
    assert reasoning_server.alive()


# /v1/responses: function tools in the Responses form, function_call / function_call_output
# input items as the chat history's tool calls and results, tools and tool_choice echoed.
RESPONSES_TOOL = {"type": "function", "name": "get_weather", "description": "Weather",
                  "parameters": WEATHER["function"]["parameters"]}


def chat_call_history(user, content):
    """`user`, then an assistant turn of `content` with a get_weather call, then its result, as
    chat messages."""
    return [user,
            {"role": "assistant", "content": content, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"}]


def test_responses_function_items_reach_the_template(reasoning_server, client):
    history = [{"role": "user", "content": "Weather in Paris?"},
               {"type": "function_call", "call_id": "call_1", "name": "get_weather",
                "arguments": "{\"city\": \"Paris\"}"},
               {"type": "function_call_output", "call_id": "call_1", "output": "Sunny"}]
    r = client.responses.create(model="m", input=history, tools=[RESPONSES_TOOL],
                                max_output_tokens=8, temperature=0)
    # The same conversation as chat messages gives the same greedy text (one chat path).
    chat_messages = chat_call_history(history[0], None)
    want = reasoning_server.post("/v1/chat/completions", {
        "model": "m", "messages": chat_messages, "tools": [WEATHER], "max_tokens": 8,
        "temperature": 0}).json()["choices"][0]["message"]
    # deepseek-r1: the whole (unclosed) reply is reasoning, a reasoning item without a message.
    assert [o.type for o in r.output] == ["reasoning"]
    assert r.output[0].content[0].text == want["reasoning_content"] != ""
    assert r.tools[0].name == "get_weather" and r.tool_choice == "auto"


def test_responses_text_and_call_of_one_turn_are_one_assistant_message(reasoning_server, client):
    # A reply's text and the call after it (its output items, sent back) are one assistant turn
    # of the history, as the chat route's message with content and tool_calls (SGLang's merge).
    call = {"type": "function_call", "call_id": "call_1", "name": "get_weather",
            "arguments": "{\"city\": \"Paris\"}"}
    history = [{"role": "user", "content": "Weather in Paris?"},
               {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "Let me look."}]},
               call, {"type": "function_call_output", "call_id": "call_1", "output": "Sunny"}]
    r = client.responses.create(model="m", input=history, tools=[RESPONSES_TOOL],
                                max_output_tokens=4, temperature=0)
    chat_messages = chat_call_history(history[0], "Let me look.")
    want = reasoning_server.post("/v1/chat/completions", {
        "model": "m", "messages": chat_messages, "tools": [WEATHER], "max_tokens": 4,
        "temperature": 0}).json()
    assert r.usage.input_tokens == want["usage"]["prompt_tokens"]
    split = reasoning_server.post("/v1/chat/completions", {
        "model": "m", "max_tokens": 4, "temperature": 0, "tools": [WEATHER],
        "messages": [history[0], {"role": "assistant", "content": "Let me look."},
                     {**chat_messages[1], "content": None}, chat_messages[2]]}).json()
    # (the check can fail: two assistant turns render differently from one)
    assert split["usage"]["prompt_tokens"] != want["usage"]["prompt_tokens"]


def test_responses_streaming_without_calls_has_one_item(client):
    events = list(client.responses.create(model="m", input="Once upon a time", stream=True,
                                          tools=[RESPONSES_TOOL], max_output_tokens=8,
                                          temperature=0))
    types = [e.type for e in events]
    assert types.count("response.output_item.added") == 1
    assert "response.function_call_arguments.delta" not in types
    assert [o.type for o in events[-1].response.output] == ["reasoning"]


# tool_choice required / named: the tool-call grammar forces valid calls in the parser's format
# (qwen25's <tool_call> JSON), sampled at temperature 1 so the grammar alone makes them valid;
# the parser turns them into tool_calls.
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The time in a zone",
    "parameters": {"type": "object", "properties": {
        "zone": {"type": "string", "enum": ["UTC", "CET", "PST"]},
        "hour24": {"type": "boolean"}}, "required": ["zone"], "additionalProperties": False}}}
CITY = {"type": "function", "function": {
    "name": "find_city", "description": "A city by name",
    "parameters": {"type": "object", "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 12}},
        "required": ["name"], "additionalProperties": False}}}
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in (WEATHER, TIME, CITY)}


@pytest.fixture(scope="module")
def tool_server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("tools"), "--tool-call-parser", "qwen25",
               "--reasoning-parser", "qwen3")
    yield s
    assert s.stop() == 0


@pytest.fixture(scope="module")
def tool_client(tool_server):
    return openai.OpenAI(base_url=tool_server.url + "/v1", api_key="unused", max_retries=0)


def check_call(name, arguments):
    jsonschema = pytest.importorskip("jsonschema")
    assert name in SCHEMAS, name
    jsonschema.validate(json.loads(arguments), SCHEMAS[name])


def finished_as_stop(server):
    for line in server.get("/metrics").text.splitlines():
        if line.startswith("sglang:num_requests_total") and 'finish_reason="stop"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_required_forces_one_valid_call(tool_server, tool_client):
    before = finished_as_stop(tool_server)
    reply = tool_client.chat.completions.create(
        model="m", messages=USER, tools=[CITY, TIME], tool_choice="required",
        parallel_tool_calls=False, temperature=1.0, seed=3, n=4, max_tokens=160)
    names = set()
    for choice in reply.choices:
        assert choice.finish_reason == "tool_calls", choice
        # SGLang's: a tool_calls finish matched no stop (the EOS id is not reported).
        assert getattr(choice, "matched_stop", None) is None, choice
        assert len(choice.message.tool_calls) == 1, choice
        call = choice.message.tool_calls[0]
        assert call.type == "function" and call.id.startswith("call_")
        check_call(call.function.name, call.function.arguments)
        names.add(call.function.name)
        assert not choice.message.content
    assert len(reply.choices) == 4
    # The metrics count a reply that ended in calls as stopped (SGLang has no such reason).
    assert finished_as_stop(tool_server) == before + 4


def test_required_with_parallel_calls(tool_client):
    # Calls may follow calls: every one the output completed is valid (the last may be cut
    # short by max_tokens).
    reply = tool_client.chat.completions.create(
        model="m", messages=USER, tools=[CITY, TIME], tool_choice="required",
        temperature=1.0, seed=4, n=3, max_tokens=300)
    for choice in reply.choices:
        calls = choice.message.tool_calls
        assert calls, choice
        complete = calls if choice.finish_reason == "tool_calls" else calls[:-1]
        assert choice.finish_reason in ("tool_calls", "length")
        for call in complete:
            check_call(call.function.name, call.function.arguments)


def test_named_function_and_no_parallel_calls(tool_client):
    for seed in range(3):
        reply = tool_client.chat.completions.create(
            model="m", messages=USER, tools=[CITY, TIME], temperature=1.0, seed=seed,
            tool_choice={"type": "function", "function": {"name": "get_time"}},
            parallel_tool_calls=False, max_tokens=160)
        calls = reply.choices[0].message.tool_calls
        assert len(calls) == 1 and calls[0].function.name == "get_time", calls
        check_call("get_time", calls[0].function.arguments)


def test_streamed_tool_calls_equal_the_whole(tool_server):
    body = dict(tools=[CITY, TIME], tool_choice="required", parallel_tool_calls=False, seed=9,
                temperature=1.0, max_tokens=300)
    whole = chat(tool_server, **body)
    content, _, deltas, finish = stream(tool_server, **body)
    calls = {}
    for d in deltas:  # OpenAI deltas: id, type and name first, then argument pieces
        c = calls.setdefault(d["index"], {"id": "", "name": "", "arguments": ""})
        c["id"] += d.get("id") or ""
        c["name"] += (d.get("function") or {}).get("name") or ""
        c["arguments"] += (d.get("function") or {}).get("arguments") or ""
    want = whole["message"]["tool_calls"]
    assert finish == whole["finish_reason"] == "tool_calls"
    assert [calls[i]["name"] for i in sorted(calls)] == [c["function"]["name"] for c in want]
    assert [calls[i]["arguments"] for i in sorted(calls)] == [c["function"]["arguments"]
                                                             for c in want]
    assert (content or None) == whole["message"]["content"]


# Where no grammar writes the server's own format (no --tool-call-parser; pythonic, whose
# arguments are Python), tool_choice required / named holds the output to SGLang's JSON array
# [{"name": ..., "parameters": {...}}], read back as the calls, streamed or whole.
@pytest.fixture(scope="module")
def pythonic_server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("pythonic"), "--tool-call-parser", "pythonic")
    yield s
    assert s.stop() == 0


@pytest.mark.parametrize("which", ["server", "pythonic_server"])
def test_required_without_a_format_grammar_is_a_json_array(request, which):
    s = request.getfixturevalue(which)
    client = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0)
    reply = client.chat.completions.create(
        model="m", messages=USER, tools=[CITY, TIME], tool_choice="required", temperature=1.0,
        seed=6, n=3, max_tokens=200)
    for choice in reply.choices:
        calls = choice.message.tool_calls
        assert calls and not choice.message.content, choice
        assert choice.finish_reason in ("tool_calls", "length"), choice
        for call in calls if choice.finish_reason == "tool_calls" else calls[:-1]:
            check_call(call.function.name, call.function.arguments)
    named = client.chat.completions.create(
        model="m", messages=USER, tools=[CITY, TIME], parallel_tool_calls=False, seed=1,
        tool_choice={"type": "function", "function": {"name": "get_time"}}, temperature=1.0,
        max_tokens=100)
    assert named.choices[0].finish_reason == "tool_calls", named
    [call] = named.choices[0].message.tool_calls
    assert call.function.name == "get_time"
    check_call("get_time", call.function.arguments)
    body = dict(tools=[CITY, TIME], tool_choice="required", parallel_tool_calls=False, seed=9,
                temperature=1.0, max_tokens=200)
    whole = chat(s, **body)
    content, _, deltas, finish = stream(s, **body)
    assert finish == whole["finish_reason"] == "tool_calls"
    assert [d["function"]["name"] for d in deltas if d.get("id")] == [
        c["function"]["name"] for c in whole["message"]["tool_calls"]]
    assert "".join((d.get("function") or {}).get("arguments") or "" for d in deltas) == \
        whole["message"]["tool_calls"][0]["function"]["arguments"]
    assert not content and not whole["message"]["content"]


def test_responses_required_gives_function_call_items(tool_client):
    city = {"type": "function", **CITY["function"]}
    r = tool_client.responses.create(model="m", input="Once upon a time", temperature=1.0,
                                     tools=[city], tool_choice="required",
                                     parallel_tool_calls=False, max_output_tokens=160)
    calls = [o for o in r.output if o.type == "function_call"]
    assert calls, r.output
    for call in calls:
        check_call(call.name, call.arguments)


def test_anthropic_messages_give_the_reasoning_a_thinking_block(reasoning_server):
    # deepseek-r1: the whole reply is reasoning, one thinking block (test_reasoning_items.py
    # covers thinking then text).
    r = reasoning_server.post("/v1/messages", {"model": "m", "max_tokens": 16, "temperature": 0,
                                               "messages": USER})
    assert r.status_code == 200, r.text
    assert r.json()["content"] == [{"type": "thinking", "signature": "",
                                    "thinking": chat(reasoning_server)["message"][
                                        "reasoning_content"]}]


# tool_choice auto and reasoning: the model writes no markup by itself, so an EBNF grammar makes
# it write thinking, text and a call; the parsers must split them, streamed and whole alike.
FORCED = ('root ::= "<think>" [a-z ]{1,20} "</think>" "Sure. <tool_call>\\n{\\"name\\": '
          '\\"find_city\\", \\"arguments\\": {\\"name\\": \\"" [A-Z][a-z]{1,8} '
          '"\\"}}\\n</tool_call>"')


def test_auto_parses_calls_and_reasoning_the_model_wrote(tool_server, tool_client):
    kwargs = dict(model="m", messages=USER, tools=[CITY], tool_choice="auto", temperature=1.0,
                  seed=2, max_tokens=120, extra_body={"ebnf": FORCED})
    reply = tool_client.chat.completions.create(**kwargs)
    choice = reply.choices[0]
    message = choice.message
    assert choice.finish_reason == "tool_calls", choice
    assert message.content.strip() == "Sure."
    assert message.reasoning_content and "<think>" not in message.reasoning_content
    assert [c.function.name for c in message.tool_calls] == ["find_city"]
    check_call("find_city", message.tool_calls[0].function.arguments)
    chunks = list(tool_client.chat.completions.create(stream=True, **kwargs))
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    reasoning = "".join(getattr(c.choices[0].delta, "reasoning_content", None) or ""
                        for c in chunks if c.choices)
    assert content == message.content and reasoning == message.reasoning_content


FORCED_TWO = ('root ::= "<think>" [a-z ]{1,20} "</think>" "Sure. " call "\\n" call\n'
              'call ::= "<tool_call>\\n{\\"name\\": \\"find_city\\", \\"arguments\\": {\\"name\\": '
              '\\"" [A-Z][a-z]{1,8} "\\"}}\\n</tool_call>"')


def test_auto_without_parallel_calls_keeps_the_first(tool_client):
    """Without strict tools tool_choice auto does not hold the model to one call, so with
    parallel_tool_calls false the reply keeps the first call it wrote (streamed or not), as vLLM
    does."""
    kwargs = dict(model="m", messages=USER, tools=[CITY], tool_choice="auto", temperature=1.0,
                  seed=2, max_tokens=400, extra_body={"ebnf": FORCED_TWO})
    reply = tool_client.chat.completions.create(**kwargs).choices[0]
    assert reply.finish_reason == "tool_calls"
    both = reply.message.tool_calls
    assert [c.function.name for c in both] == ["find_city", "find_city"]
    one = tool_client.chat.completions.create(parallel_tool_calls=False, **kwargs).choices[0]
    assert one.finish_reason == "tool_calls"
    assert [c.function.arguments for c in one.message.tool_calls] == [both[0].function.arguments]
    chunks = list(tool_client.chat.completions.create(parallel_tool_calls=False, stream=True,
                                                      **kwargs))
    calls = [t for c in chunks if c.choices for t in (c.choices[0].delta.tool_calls or [])]
    assert calls and {t.index for t in calls} == {0}
    assert "".join(t.function.arguments or "" for t in calls) == both[0].function.arguments


STRICT_CITY = {"type": "function", "function": {**CITY["function"], "strict": True}}


def test_strict_tools_under_auto_constrain_calls_only(tool_server, tool_client):
    """A strict tool under tool_choice auto (SGLang's structural tag): the output is free text in
    which <tool_call> must open a call held to the schema (the grammar is tested per format in
    tests/function_call/tool_constraint_test.cpp; stories260K writes no markup, so here the
    calls are never tried). Its free text is what the model writes without the constraint, and
    another constraint on the same request is the one that holds, as in SGLang."""
    kwargs = dict(model="m", messages=USER, temperature=0, max_tokens=48)
    loose = tool_client.chat.completions.create(tools=[CITY, TIME], **kwargs).choices[0]
    strict = tool_client.chat.completions.create(tools=[STRICT_CITY, TIME], **kwargs).choices[0]
    assert strict.message.content and not strict.message.tool_calls
    assert (strict.message.content, strict.message.reasoning_content, strict.finish_reason) == (
        loose.message.content, loose.message.reasoning_content, loose.finish_reason)
    sampled = tool_client.chat.completions.create(
        model="m", messages=USER, tools=[STRICT_CITY], temperature=1.0, seed=3, n=3,
        max_tokens=48, parallel_tool_calls=False)
    assert all(c.message.content and not c.message.tool_calls for c in sampled.choices)
    r = tool_server.post("/v1/chat/completions", {
        "model": "m", "messages": USER, "max_tokens": 24, "temperature": 0,
        "tools": [STRICT_CITY], "response_format": {"type": "json_object"},
        "chat_template_kwargs": {"enable_thinking": False}})
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"].startswith('{"'), r.text
    r = tool_server.post("/v1/chat/completions", {
        "model": "m", "messages": USER, "max_tokens": 2,
        "tools": [{"type": "function", "function": {**CITY["function"], "strict": "yes"}}]})
    assert r.status_code == 400 and "tools[0].function.strict" in r.json()["error"]["message"]


# Qwen3-Coder's XML-like calls (--tool-call-parser qwen3_coder): parsed into typed JSON
# arguments by the tools' schemas, streamed or whole; tool_choice required holds them to the
# format and the schemas (an enum's raw strings, booleans as JSON).
@pytest.fixture(scope="module")
def coder_server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("coder"), "--tool-call-parser", "qwen3_coder")
    yield s
    assert s.stop() == 0


FORECAST = {"type": "function", "function": {
    "name": "forecast", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}
CODER_FORCED = ('root ::= "Checking. <tool_call>\\n<function=forecast>\\n<parameter=city>\\n" '
                '[A-Z][a-z]{1,8} "\\n</parameter>\\n<parameter=days>\\n" [1-9] '
                '"\\n</parameter>\\n</function>\\n</tool_call>"')


def test_qwen3_coder_calls_are_parsed_with_their_types(coder_server):
    body = dict(tools=[FORECAST], temperature=1.0, seed=4, max_tokens=300, ebnf=CODER_FORCED)
    choice = chat(coder_server, **body)
    assert choice["finish_reason"] == "tool_calls", choice
    assert choice["message"]["content"] == "Checking."
    [call] = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "forecast"
    args = json.loads(call["function"]["arguments"])
    assert list(args) == ["city", "days"] and isinstance(args["days"], int), args
    content, _, deltas, finish = stream(coder_server, **body)
    assert finish == "tool_calls" and content == "Checking."
    assert "".join(d["function"].get("arguments") or "" for d in deltas) == \
        call["function"]["arguments"]


def test_qwen3_coder_required_holds_calls_to_the_schema(coder_server):
    client = openai.OpenAI(base_url=coder_server.url + "/v1", api_key="unused", max_retries=0)
    reply = client.chat.completions.create(
        model="m", messages=USER, tools=[TIME], tool_choice="required", parallel_tool_calls=False,
        temperature=1.0, seed=3, n=4, max_tokens=120)
    for choice in reply.choices:
        assert choice.finish_reason == "tool_calls", choice
        [call] = choice.message.tool_calls
        assert call.function.name == "get_time"
        check_call("get_time", call.function.arguments)
    # A string constraint raw parameter text cannot hold is refused by name.
    r = coder_server.post("/v1/chat/completions", {
        "model": "m", "messages": USER, "tools": [CITY], "tool_choice": "required"})
    assert r.status_code == 400 and "'name'" in r.json()["error"]["message"], r.text
