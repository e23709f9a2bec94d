# Ollama's API (/api/chat, /api/generate, /api/tags, /api/show), as SGLang serves it, on
# stories260K through the official ollama client and plain HTTP: greedy replies equal the OpenAI
# routes' for the same conversation or raw prompt, streams are newline-delimited JSON whose pieces
# add up to the whole reply and end with the counts, `format` holds the reply to a schema,
# a reply that is a call (llama3's bare JSON, forced by `format`) comes back as tool_calls, a tool
# history renders as the chat route's, and every refusal is {"error": "..."}.
import json

import pytest

from conftest import MODEL, Server, require

try:
    import ollama
except ImportError:
    ollama = None

# The conftest template plus an assistant's calls and the tool results.
TEMPLATE = """{{ bos_token }}
{%- for message in messages %}
{%- if message['role'] == 'user' %}User: {{ message['content'] }}
{% elif message['role'] == 'assistant' %}Assistant: {{ message['content'] or '' }}
{%- for c in message.tool_calls or [] %} Call {{ c.function.name }} {{ c.function.arguments | tojson }}{% endfor %}
{% elif message['role'] == 'tool' %}Result {{ message.name }}: {{ message['content'] }}
{% else %}{{ message['content'] }}
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}Assistant:{% endif %}"""

USER = {"role": "user", "content": "Once upon a time"}
GREEDY = {"temperature": 0, "num_predict": 12}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("ollama")
    template = workdir / "template.jinja"
    template.write_text(TEMPLATE)
    s = Server(workdir, "--chat-template", str(template), "--tool-call-parser", "llama3",
               model=MODEL)
    yield s
    assert s.stop() == 0, s.log()


@pytest.fixture(scope="module")
def client(server):
    require(ollama is not None, "the ollama client is not installed")
    return ollama.Client(host=server.url)


def openai_chat(server, messages, max_tokens, **extra):
    body = {"model": "m", "messages": messages, "temperature": 0, **extra}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    r = server.post("/v1/chat/completions", body)
    assert r.status_code == 200, r.text
    return r.json()


def test_chat_equals_chat_completions(server, client):
    r = client.chat(model="m", messages=[USER], options=GREEDY, stream=False)
    want = openai_chat(server, [USER], 12)
    assert r.message.role == "assistant"
    assert r.message.content == want["choices"][0]["message"]["content"] and r.message.content
    assert r.done and r.done_reason == "length"
    assert r.eval_count == 12 and r.prompt_eval_count == want["usage"]["prompt_tokens"]
    # From the request's arrival: the prompt's time to the first token, then the output's.
    assert r.prompt_eval_duration > 0 and r.eval_duration > 0 and r.load_duration == 0
    assert r.total_duration >= r.prompt_eval_duration + r.eval_duration


def test_chat_stream_adds_up(server, client):
    whole = client.chat(model="m", messages=[USER], options=GREEDY, stream=False)
    parts = list(client.chat(model="m", messages=[USER], options=GREEDY, stream=True))
    assert all(not p.done for p in parts[:-1]) and parts[-1].done
    assert "".join(p.message.content for p in parts) == whole.message.content
    assert parts[-1].done_reason == "length" and parts[-1].eval_count == 12
    # The wire, streamed by default (Ollama's, unlike its client's): application/x-ndjson, one
    # object per line.
    r = server.post("/api/chat", {"model": "m", "messages": [USER], "options": GREEDY},
                    stream=True)
    assert r.headers["content-type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in r.iter_lines() if line]
    assert lines[-1]["done"] is True and "".join(
        line["message"]["content"] for line in lines) == whole.message.content


def test_generate_is_the_raw_prompt(server, client):
    # SGLang's /api/generate: no chat template; a system prompt joins before the prompt.
    r = client.generate(model="m", prompt="Once upon", system="A story.", options=GREEDY)
    c = server.post("/v1/completions", {"model": "m", "prompt": "A story.\n\nOnce upon",
                                        "max_tokens": 12, "temperature": 0})
    assert r.response == c.json()["choices"][0]["text"] and r.response
    assert r.done_reason == "length" and r.eval_count == 12
    parts = list(client.generate(model="m", prompt="Once upon", system="A story.",
                                 options=GREEDY, stream=True))
    assert "".join(p.response for p in parts) == r.response and parts[-1].done
    # A blank prompt (the ollama CLI's load request) is answered at once, streamed too.
    empty = client.generate(model="m", prompt="")
    assert empty.done and empty.response == ""
    [line] = list(client.generate(model="m", prompt=" ", stream=True))
    assert line.done and line.response == ""
    # A negative num_predict: no limit but the context (not the completions route's 16).
    free = client.generate(model="m", prompt="Once upon", options={"temperature": 0,
                                                                  "num_predict": -1})
    assert free.eval_count > 16, free


def test_num_predict_defaults_and_stop(server, client):
    # Without num_predict SGLang's 2048 applies as a default cut to the room the prompt leaves,
    # not as a limit the prompt must fit (this model's context is 512 tokens: that would be a
    # 400).
    r = client.chat(model="m", messages=[USER], options={"temperature": 0, "stop": ["."]})
    want = openai_chat(server, [USER], None, stop=["."])["choices"][0]["message"]["content"]
    assert r.message.content == want and r.done_reason == "stop"


def test_format_holds_the_reply_to_a_schema(client):
    jsonschema = pytest.importorskip("jsonschema")
    schema = {"type": "object", "properties": {"mood": {"type": "string", "enum": ["glad", "sad"]},
                                               "n": {"type": "integer", "minimum": 0,
                                                     "maximum": 9}},
              "required": ["mood", "n"], "additionalProperties": False}
    for seed in range(3):
        r = client.chat(model="m", messages=[USER], format=schema,
                        options={"temperature": 1.0, "seed": seed, "num_predict": 100})
        assert r.done_reason == "stop", r
        jsonschema.validate(json.loads(r.message.content), schema)
    r = client.generate(model="m", prompt="Once", format="json", options={"num_predict": 300})
    assert r.response.startswith("{")
    if r.done_reason == "stop":
        assert isinstance(json.loads(r.response), dict)


TIME = {"type": "function", "function": {"name": "get_time", "description": "The time", "parameters": {
    "type": "object", "properties": {"zone": {"type": "string", "enum": ["UTC", "CET"]}},
    "required": ["zone"]}}}


def test_a_call_comes_back_as_tool_calls(client):
    # llama3's calls are bare JSON: a format that holds the reply to one makes the model call.
    call = {"type": "object", "properties": {"name": {"const": "get_time"}, "parameters":
                                             TIME["function"]["parameters"]},
            "required": ["name", "parameters"], "additionalProperties": False}
    r = client.chat(model="m", messages=[USER], tools=[TIME], format=call,
                    options={"temperature": 1.0, "seed": 2, "num_predict": 100})
    assert r.message.content == "" and r.done_reason == "stop", r
    [tool_call] = r.message.tool_calls
    assert tool_call.function.name == "get_time"
    assert tool_call.function.arguments["zone"] in ("UTC", "CET")
    parts = list(client.chat(model="m", messages=[USER], tools=[TIME], format=call,
                             options={"temperature": 1.0, "seed": 2, "num_predict": 100},
                             stream=True))
    calls = [c for p in parts for c in (p.message.tool_calls or [])]
    assert [(c.function.name, c.function.arguments) for c in calls] == [
        (tool_call.function.name, tool_call.function.arguments)]


def test_tool_history_renders_as_the_chat_routes(server, client):
    history = [USER, {"role": "assistant", "content": "",
                      "tool_calls": [{"function": {"name": "get_time",
                                                   "arguments": {"zone": "CET"}}}]},
               {"role": "tool", "tool_name": "get_time", "content": "noon"}]
    r = client.chat(model="m", messages=history, tools=[TIME], options=GREEDY)
    chat_history = [USER, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_time",
                                                      "arguments": '{"zone": "CET"}'}}]},
        {"role": "tool", "name": "get_time", "tool_call_id": "c1", "content": "noon"}]
    want = openai_chat(server, chat_history, 12, tools=[TIME])
    assert r.prompt_eval_count == want["usage"]["prompt_tokens"]
    assert r.message.content == want["choices"][0]["message"]["content"]


def test_tags_and_show(server, client):
    [model] = client.list().models
    assert model.model == server.get("/v1/models").json()["data"][0]["id"]
    shown = client.show("m")
    assert shown.capabilities == ["completion", "tools"]  # --tool-call-parser, no reasoning one
    assert shown.modelinfo["llama.context_length"] == 512
    assert shown.modelinfo["general.name"] == "m"


def test_running_models_and_version(server, client):
    [running] = client.ps().models
    assert running.model == server.get("/v1/models").json()["data"][0]["id"]
    assert running.context_length == 512
    assert running.expires_at.year == 9999  # loaded while the server runs
    version = server.get("/api/version")
    assert version.status_code == 200 and version.json()["version"].startswith("sgl.cpp-")
    assert server.post("/api/ps", {}).status_code == 405


@pytest.mark.parametrize("path,body,needle", [
    ("/api/chat", {"model": "m", "messages": [dict(USER, images=["aGk="])]}, "images"),
    ("/api/chat", {"model": "m", "messages": [USER], "options": {"num_ctx": 4096}}, "num_ctx"),
    ("/api/chat", {"model": "m", "messages": [USER], "think": True}, "--reasoning-parser"),
    ("/api/chat", {"model": "m", "messages": [USER], "logprobs": True}, "logprobs"),
    ("/api/chat", {"model": "m", "messages": []}, "messages"),
    ("/api/chat", {"model": "m", "messages": [USER], "format": "yaml"}, "format"),
    ("/api/generate", {"model": "m", "prompt": "x", "template": "{{ .Prompt }}"}, "template"),
    ("/api/generate", {"model": "m", "prompt": "x", "think": True}, "think"),
    ("/api/show", {}, "model"),
])
def test_refusals_are_ollama_errors(server, path, body, needle):
    r = server.post(path, body)
    assert r.status_code == 400, r.text
    assert set(r.json()) == {"error"} and needle in r.json()["error"], r.text


def test_the_client_reads_the_errors(client):
    with pytest.raises(ollama.ResponseError) as e:
        client.chat(model="m", messages=[dict(USER, images=["aGk="])])
    assert "images" in str(e.value) and e.value.status_code == 400
