# The Anthropic Messages API (POST /v1/messages) on stories260K: the official anthropic client
# (create, stream) and plain HTTP for the event order, stop reasons, usage and the error shape.
# Greedy replies must equal /v1/chat/completions' for the same conversation (one chat path).
import json

import pytest

from conftest import MODEL, Server

anthropic = pytest.importorskip("anthropic")

USER = {"role": "user", "content": "Once upon a time"}
# Recent SDKs no longer type temperature / top_p / top_k; the API (and this server) still take
# them, so tests send them as extra body fields.
GREEDY = {"temperature": 0}


@pytest.fixture(scope="module")
def client(server):
    return anthropic.Anthropic(base_url=server.url, api_key="unused", max_retries=0)


def chat_text(server, messages, max_tokens):
    r = server.post("/v1/chat/completions", {"model": "x", "messages": messages,
                                             "max_tokens": max_tokens, "temperature": 0})
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["message"]["content"]


def test_create_equals_chat_completions(server, client):
    m = client.messages.create(model="claude-any-name", max_tokens=12, extra_body=GREEDY,
                               messages=[USER])
    assert m.type == "message" and m.role == "assistant" and m.id.startswith("msg_")
    assert m.model == "claude-any-name"  # any model name is served and echoed, as SGLang does
    assert [b.type for b in m.content] == ["text"]
    assert m.content[0].text == chat_text(server, [USER], 12) and m.content[0].text
    assert m.stop_reason == "max_tokens" and m.stop_sequence is None
    assert m.usage.output_tokens == 12
    assert m.usage.input_tokens + (m.usage.cache_read_input_tokens or 0) > 0


def test_system_and_content_blocks(server, client):
    # A system string and text blocks render as the chat route's system message and joined text.
    m = client.messages.create(
        model="m", max_tokens=10, extra_body=GREEDY, system=[{"type": "text", "text": "Be kind."}],
        messages=[{"role": "user", "content": [{"type": "text", "text": "Once upon"},
                                               {"type": "text", "text": "a time",
                                                "cache_control": {"type": "ephemeral"}}]},
                  {"role": "assistant", "content": "there was"},
                  {"role": "user", "content": "Go on."}])
    want = chat_text(server, [{"role": "system", "content": "Be kind."},
                              {"role": "user", "content": "Once upon a time"},
                              {"role": "assistant", "content": "there was"},
                              {"role": "user", "content": "Go on."}], 10)
    assert m.content[0].text == want


def test_final_assistant_message_is_a_prefill(server, client):
    # Anthropic's prefill: the reply continues the final assistant message (its text is not
    # repeated), greedily into what the model would have written after it.
    full = chat_text(server, [USER], 40)
    cut = [i for i, ch in enumerate(full) if ch == " " and i > 0][3]
    prefix = full[:cut]
    for content in (prefix, [{"type": "text", "text": prefix}]):
        m = client.messages.create(model="m", max_tokens=12, extra_body=GREEDY,
                                   messages=[USER, {"role": "assistant", "content": content}])
        rest = m.content[0].text
        assert rest and full.startswith(prefix + rest), (prefix, rest, full)
        assert m.usage.output_tokens == 12


def test_stop_sequence(server, client):
    full = chat_text(server, [USER], 40)
    words = full.split()
    assert len(words) > 4, full
    stop = words[3]
    m = client.messages.create(model="m", max_tokens=40, extra_body=GREEDY, messages=[USER],
                               stop_sequences=[stop])
    assert m.stop_reason == "stop_sequence" and m.stop_sequence == stop
    assert m.content[0].text == full[:full.index(stop)]


def test_stream_with_client_equals_create(server, client):
    created = client.messages.create(model="m", max_tokens=16, extra_body=GREEDY, messages=[USER])
    with client.messages.stream(model="m", max_tokens=16, extra_body=GREEDY,
                                messages=[USER]) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == created.content[0].text
    assert final.content[0].text == text
    assert final.stop_reason == "max_tokens" and final.usage.output_tokens == 16


def test_stream_event_order(server):
    r = server.post("/v1/messages", {"model": "m", "max_tokens": 6, "temperature": 0,
                                     "messages": [USER], "stream": True}, stream=True)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = []
    name = None
    for line in r.iter_lines(decode_unicode=True):
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            data = json.loads(line[len("data: "):])
            assert data["type"] == name, (name, data)
            events.append(data)
    names = [e["type"] for e in events]
    assert names[:3] == ["message_start", "content_block_start", "ping"], names
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"], names
    assert set(names[3:-3]) == {"content_block_delta"}
    assert events[0]["message"]["content"] == [] and events[0]["message"]["stop_reason"] is None
    assert events[-2]["delta"]["stop_reason"] == "max_tokens"
    assert events[-2]["usage"]["output_tokens"] == 6
    text = "".join(e["delta"]["text"] for e in events[3:-3])
    assert text == chat_text(server, [USER], 6)


@pytest.mark.parametrize("body, status, needle", [
    ({"messages": [USER]}, 400, "'max_tokens' is required"),
    ({"max_tokens": 0, "messages": [USER]}, 400, "'max_tokens' must be an integer >= 1"),
    ({"max_tokens": 4, "messages": []}, 400, "'messages' must be a non-empty list"),
    ({"max_tokens": 4, "messages": [{"role": "system", "content": "x"}]}, 400,
     "must be 'user' or 'assistant'"),
    ({"max_tokens": 4, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ""}}]}]},
     400, "blocks of type 'image'"),
    ({"max_tokens": 4, "messages": [USER, {"role": "assistant", "content": "The "}]}, 400,
     "final assistant content cannot end with trailing whitespace"),
    ({"max_tokens": 4, "messages": [USER],
      "tools": [{"type": "web_search_20250305", "name": "web_search"}]}, 400,
     "server tool 'web_search_20250305'"),
    ({"max_tokens": 4, "messages": [USER], "thinking": {"type": "enabled", "budget_tokens": 1024}},
     400, "--reasoning-parser"),
    ({"max_tokens": 4, "messages": [USER], "n": 2}, 400, "'n' is a field of /v1/chat/completions"),
    ({"max_tokens": 4, "messages": [USER], "logprobs": True}, 400, "'logprobs'"),
    ({"max_tokens": 4, "messages": [USER], "stop_sequences": "x"}, 400,
     "'stop_sequences' must be a list of strings"),
    ({"max_tokens": 4, "messages": [USER], "stop_sequences": ["x"] * 65}, 400,
     "'stop_sequences' may hold at most 64 strings"),
    ({"max_tokens": 4, "messages": [USER], "stop_sequences": ["x" * 2000]}, 400,
     "'stop_sequences' strings may be at most 1024 bytes long"),
    ({"max_tokens": 4, "messages": [USER], "temperature": -1}, 400, "'temperature'"),
    ({"max_tokens": 4, "messages": [USER], "regex": "(a"}, 400, "'regex'"),
    ({"max_tokens": 4, "messages": [USER], "service_tier": "priority"}, 400, "'service_tier'"),
    ({"max_tokens": 4, "messages": [USER], "speed": "fast"}, 400, "'speed'"),
    ({"max_tokens": 4, "messages": [USER],
      "output_config": {"task_budget": {"type": "tokens", "total": 100}}}, 400,
     "'output_config.task_budget'"),
    ({"max_tokens": 4, "messages": [USER], "output_config": {"format": {"type": "json"}}}, 400,
     "'output_config.format'"),
    ({"max_tokens": 4, "messages": [USER], "output_config": {"format": {
        "type": "json_schema", "schema": {"type": "strin"}}}}, 400,
     "'output_config.format': invalid json_schema"),
    ({"max_tokens": 4, "messages": [USER], "output_config": {"effort": "high"}}, 400,
     "--reasoning-parser"),
    ({"max_tokens": 4, "messages": [USER], "inference_geo": "us"}, 400, "'inference_geo'"),
    ({"max_tokens": 4, "messages": [USER], "diagnostics": {"previous_message_id": "msg_1"}}, 400,
     "'diagnostics'"),
    ({"max_tokens": 4, "messages": [USER], "mcp_servers": [{"type": "url", "url": "x"}]}, 400,
     "'mcp_servers'"),
])
def test_bad_requests_get_anthropic_errors(server, body, status, needle):
    r = server.post("/v1/messages", {"model": "m", **body})
    assert r.status_code == status, r.text
    err = r.json()
    assert err["type"] == "error" and err["error"]["type"] == "invalid_request_error", err
    assert needle in err["error"]["message"], err


def test_client_raises_bad_request(client):
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(model="m", max_tokens=4, messages=[
            {"role": "user", "content": [{"type": "document", "source": {}}]}])


def test_accepted_no_effect_fields(server, client):
    # Fields that describe the caller, a caching hint the radix cache does not need, the one
    # speed there is and disabled thinking change nothing about the text.
    plain = client.messages.create(model="m", max_tokens=8, extra_body=GREEDY, messages=[USER])
    extra = client.messages.create(model="m", max_tokens=8, extra_body=GREEDY, messages=[USER],
                                   metadata={"user_id": "u-1"}, service_tier="auto",
                                   thinking={"type": "disabled"}, speed="standard",
                                   cache_control={"type": "ephemeral"},
                                   user_profile_id="p-1", workspace_id="w-1")
    assert extra.content[0].text == plain.content[0].text


# SGLang's rid passes through the Messages route as on the chat route: the message's id.
def test_rid_names_the_message(server, client):
    m = client.messages.create(model="m", max_tokens=2, messages=[USER],
                               extra_body={"rid": "msg-mine"})
    assert m.id == "msg-mine"
    r = server.post("/v1/messages", {"model": "m", "max_tokens": 2, "messages": [USER],
                                     "stream_reasoning": False})
    assert r.status_code == 400 and "stream_reasoning" in r.text, r.text


def test_no_chat_template_is_an_anthropic_error(tmp_path):
    s = Server(tmp_path, model=str(MODEL))  # stories260K has no template of its own
    try:
        r = s.post("/v1/messages", {"model": "m", "max_tokens": 4, "messages": [USER]})
        assert r.status_code == 400 and "no chat template" in r.json()["error"]["message"]
    finally:
        s.stop()


def prompt_tokens(server, messages):
    r = server.post("/v1/chat/completions", {"model": "x", "messages": messages, "max_tokens": 1})
    assert r.status_code == 200, r.text
    return r.json()["usage"]["prompt_tokens"]


def test_system_blocks_join_by_lines_and_a_blank_system_is_none(server, client):
    # SGLang's: the system blocks' texts a line each (empty blocks left out); no system message
    # at all for a blank one.
    user = {"role": "user", "content": "Go on."}
    counted = client.messages.count_tokens(
        model="m", messages=[user], system=[{"type": "text", "text": "Be kind."},
                                            {"type": "text", "text": ""},
                                            {"type": "text", "text": "Be brief."}])
    assert counted.input_tokens == prompt_tokens(
        server, [{"role": "system", "content": "Be kind.\nBe brief."}, user])
    assert counted.input_tokens != prompt_tokens(
        server, [{"role": "system", "content": "Be kind. Be brief."}, user])
    blank = client.messages.count_tokens(model="m", messages=[user], system="  ")
    assert blank.input_tokens == prompt_tokens(server, [user])
    m = client.messages.create(model="m", max_tokens=3, extra_body=GREEDY, messages=[user],
                               system="  ")
    assert m.usage.input_tokens + (m.usage.cache_read_input_tokens or 0) == blank.input_tokens


def test_count_tokens(server, client):
    # The prompt a Messages request would have, counted (SGLang's /v1/messages/count_tokens).
    counted = client.messages.count_tokens(model="m", messages=[USER])
    m = client.messages.create(model="m", max_tokens=2, extra_body=GREEDY, messages=[USER])
    assert counted.input_tokens == prompt_tokens(server, [USER]) > 0
    assert counted.input_tokens == m.usage.input_tokens + (m.usage.cache_read_input_tokens or 0)
    # A field count_tokens does not take is refused, not ignored; errors in Anthropic's shape.
    r = server.post("/v1/messages/count_tokens", {"model": "m", "messages": [USER],
                                                  "max_tokens": 5})
    assert r.status_code == 400 and r.json()["type"] == "error", r.text
    assert "'max_tokens'" in r.json()["error"]["message"]
    r = server.post("/v1/messages/count_tokens", {"model": "m", "messages": []})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error", r.text


def test_output_config_format_holds_the_reply_to_the_schema(server, client):
    # SGLang's mapping: output_config.format is a strict json_schema response_format, so the
    # reply (sampled, so only the grammar makes it valid) follows the schema.
    jsonschema = pytest.importorskip("jsonschema")
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                               "age": {"type": "integer", "minimum": 0,
                                                       "maximum": 120}},
              "required": ["name", "age"], "additionalProperties": False}
    for seed in range(3):
        m = client.messages.create(model="m", max_tokens=200, messages=[USER],
                                   output_config={"format": {"type": "json_schema",
                                                             "schema": schema}},
                                   extra_body={"temperature": 1.0, "seed": seed})
        assert m.stop_reason == "end_turn", m
        jsonschema.validate(json.loads(m.content[0].text), schema)


@pytest.mark.parametrize("method,path,status,kind", [
    ("GET", "/v1/messages", 405, "api_error"),
    ("GET", "/v1/messages/count_tokens", 405, "api_error"),
    ("POST", "/v1/messages/batches", 404, "not_found_error"),
])
def test_router_errors_in_anthropic_shape(server, method, path, status, kind):
    # The router's own errors on these paths are Anthropic's too (SGLang rewrites them), so the
    # SDK can read them; other routes keep OpenAI's shape.
    r = server.get(path) if method == "GET" else server.post(path, {})
    assert r.status_code == status, r.text
    body = r.json()
    assert body["type"] == "error" and body["error"]["type"] == kind, body
    assert set(body) == {"type", "error"} and body["error"]["message"], body
    other = server.get("/v1/chat/completions")
    assert other.status_code == 405 and other.json()["error"]["type"] != "api_error"
