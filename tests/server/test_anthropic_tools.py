# Tool use on the Anthropic Messages API (tools, tool_choice, tool_use / tool_result blocks) on
# stories260K, through the official anthropic client and plain HTTP. The model never writes
# tool-call markup by itself: tool_choice any / tool forces calls through the tool-call grammar
# (qwen25's <tool_call> JSON; SGLang's JSON array on a server without --tool-call-parser),
# sampled at temperature 1, and they must come back as tool_use blocks whose input follows the
# schema, streamed (input_json_delta) and whole alike. A history with tool_use and tool_result
# blocks must render as the chat route's tool calls and tool messages (a test template shows
# them), counted and answered the same.
import json

import pytest

from conftest import MODEL, Server

anthropic = pytest.importorskip("anthropic")
jsonschema = pytest.importorskip("jsonschema")

# The conftest template plus the tools' names, an assistant's calls and the tool results.
TEMPLATE = """{{ bos_token }}
{%- if tools %}Tools:{% for t in tools %} {{ t.function.name }}{% endfor %}
{% endif %}
{%- for message in messages %}
{%- if message['role'] == 'user' %}User: {{ message['content'] }}
{% elif message['role'] == 'assistant' %}Assistant: {{ message['content'] or '' }}
{%- for c in message.tool_calls or [] %} Call {{ c.id }} {{ c.function.name }} {{ c.function.arguments | tojson }}{% endfor %}
{% elif message['role'] == 'tool' %}Result {{ message.tool_call_id }}: {{ message['content'] }}
{% else %}{{ message['content'] }}
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}Assistant:{% endif %}"""

USER = {"role": "user", "content": "Once upon a time"}
TIME = {"name": "get_time", "description": "The time in a zone", "input_schema": {
    "type": "object", "properties": {"zone": {"type": "string", "enum": ["UTC", "CET", "PST"]},
                                     "hour24": {"type": "boolean"}},
    "required": ["zone"], "additionalProperties": False}}
CITY = {"name": "find_city", "description": "A city by name", "input_schema": {
    "type": "object", "properties": {"name": {"type": "string", "minLength": 1,
                                              "maxLength": 12}},
    "required": ["name"], "additionalProperties": False}}
SCHEMAS = {t["name"]: t["input_schema"] for t in (TIME, CITY)}
SAMPLED = {"temperature": 1.0, "seed": 5}


def start(workdir, *args):
    template = workdir / "tools_template.jinja"
    template.write_text(TEMPLATE)
    return Server(workdir, "--chat-template", str(template), *args, model=MODEL)


@pytest.fixture(scope="module")
def qwen25(tmp_path_factory):
    s = start(tmp_path_factory.mktemp("qwen25"), "--tool-call-parser", "qwen25")
    yield s
    assert s.stop() == 0, s.log()


@pytest.fixture(scope="module")
def no_parser(tmp_path_factory):
    s = start(tmp_path_factory.mktemp("no_parser"))
    yield s
    assert s.stop() == 0, s.log()


def claude(server):
    return anthropic.Anthropic(base_url=server.url, api_key="unused", max_retries=0)


def check_tool_uses(message):
    assert message.stop_reason in ("tool_use", "max_tokens"), message
    assert message.content and all(b.type == "tool_use" for b in message.content), message
    complete = message.content if message.stop_reason == "tool_use" else message.content[:-1]
    for block in complete:
        assert block.id.startswith("toolu_") and block.name in SCHEMAS, block
        jsonschema.validate(block.input, SCHEMAS[block.name])
    assert len({b.id for b in message.content}) == len(message.content)


@pytest.mark.parametrize("which", ["qwen25", "no_parser"])
def test_any_forces_tool_use_blocks(request, which):
    client = claude(request.getfixturevalue(which))
    m = client.messages.create(model="m", max_tokens=200, messages=[USER], tools=[TIME, CITY],
                               tool_choice={"type": "any"}, extra_body=SAMPLED)
    check_tool_uses(m)
    one = client.messages.create(
        model="m", max_tokens=120, messages=[USER], tools=[TIME, CITY], extra_body=SAMPLED,
        tool_choice={"type": "tool", "name": "get_time", "disable_parallel_tool_use": True})
    assert one.stop_reason == "tool_use", one
    [block] = one.content
    assert block.name == "get_time"
    jsonschema.validate(block.input, SCHEMAS["get_time"])


@pytest.mark.parametrize("which", ["qwen25", "no_parser"])
def test_streamed_tool_use_equals_the_whole(request, which):
    server = request.getfixturevalue(which)
    client = claude(server)
    body = dict(model="m", max_tokens=200, messages=[USER], tools=[TIME, CITY],
                tool_choice={"type": "any", "disable_parallel_tool_use": True},
                extra_body=SAMPLED)
    whole = client.messages.create(**body)
    with client.messages.stream(**body) as stream:
        final = stream.get_final_message()
    check_tool_uses(final)
    assert [(b.name, b.input) for b in final.content] == [(b.name, b.input)
                                                         for b in whole.content]
    assert final.stop_reason == whole.stop_reason == "tool_use"
    # The raw events: a tool_use block opened with an empty input, its JSON in pieces.
    r = server.post("/v1/messages", {**{k: v for k, v in body.items() if k != "extra_body"},
                                     **SAMPLED, "stream": True}, stream=True)
    assert r.status_code == 200, r.text
    events = [json.loads(line[6:]) for line in r.iter_lines(decode_unicode=True)
              if line.startswith("data: ")]
    names = [e["type"] for e in events]
    assert names[:3] == ["message_start", "ping", "content_block_start"], names
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"], names
    start_block = events[2]["content_block"]
    assert start_block["type"] == "tool_use" and start_block["input"] == {}
    assert start_block["name"] == whole.content[0].name
    pieces = [e["delta"]["partial_json"] for e in events[3:-3]]
    assert all(e["delta"]["type"] == "input_json_delta" for e in events[3:-3])
    assert json.loads("".join(pieces)) == whole.content[0].input
    assert events[-2]["delta"]["stop_reason"] == "tool_use"


def chat_prompt_tokens(server, messages, tools):
    r = server.post("/v1/chat/completions", {"model": "m", "messages": messages, "max_tokens": 8,
                                             "temperature": 0, "tools": tools})
    assert r.status_code == 200, r.text
    return r.json()["usage"]["prompt_tokens"], r.json()["choices"][0]["message"]["content"]


def test_tool_history_renders_as_the_chat_routes(qwen25):
    client = claude(qwen25)
    history = [USER,
               {"role": "assistant", "content": [
                   {"type": "text", "text": "Let me look."},
                   {"type": "tool_use", "id": "toolu_01", "name": "get_time",
                    "input": {"zone": "CET"}}]},
               {"role": "user", "content": [
                   {"type": "tool_result", "tool_use_id": "toolu_01", "content": "noon"},
                   {"type": "text", "text": "And then?"}]}]
    chat_history = [USER,
                    {"role": "assistant", "content": "Let me look.", "tool_calls": [
                        {"id": "toolu_01", "type": "function", "function": {
                            "name": "get_time", "arguments": json.dumps({"zone": "CET"})}}]},
                    {"role": "tool", "tool_call_id": "toolu_01", "content": "noon"},
                    {"role": "user", "content": "And then?"}]
    chat_tools = [{"type": "function", "function": {
        "name": t["name"], "description": t["description"], "parameters": t["input_schema"]}}
        for t in (TIME, CITY)]
    want_tokens, want_text = chat_prompt_tokens(qwen25, chat_history, chat_tools)
    counted = client.messages.count_tokens(model="m", messages=history, tools=[TIME, CITY])
    assert counted.input_tokens == want_tokens
    m = client.messages.create(model="m", max_tokens=8, messages=history, tools=[TIME, CITY],
                               extra_body={"temperature": 0})
    assert [b.type for b in m.content] == ["text"] and m.content[0].text == want_text
    assert m.stop_reason == "max_tokens"
    # Without the calls and results the prompt is shorter: they were rendered.
    plain = client.messages.count_tokens(model="m", messages=[USER], tools=[TIME, CITY])
    assert plain.input_tokens < counted.input_tokens
    # tool_choice none: the template does not see the tools.
    none = client.messages.count_tokens(model="m", messages=[USER], tools=[TIME, CITY],
                                        tool_choice={"type": "none"})
    assert none.input_tokens < plain.input_tokens


def test_bad_tool_requests_are_anthropic_errors(qwen25):
    client = claude(qwen25)
    with pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(model="m", max_tokens=4, messages=[USER],
                               tools=[{"type": "bash_20250124", "name": "bash"}])
    assert "server tool 'bash_20250124'" in str(e.value)
    r = qwen25.post("/v1/messages", {"model": "m", "max_tokens": 4, "messages": [USER],
                                     "tools": [TIME], "tool_choice": {"type": "tool",
                                                                      "name": "nope"}})
    assert r.status_code == 400 and r.json()["type"] == "error", r.text
    assert "'nope'" in r.json()["error"]["message"]
