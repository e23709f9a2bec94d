# The OpenAI Responses API (POST /v1/responses) on stories260K: the official openai client
# (create, streaming create, the stream helper) and plain HTTP for the event order, statuses,
# usage and refusals. Greedy replies must equal /v1/chat/completions' for the same
# conversation (one chat path).
import json
import time

import requests

import pytest

from conftest import abort_while_running

openai = pytest.importorskip("openai")

USER = {"role": "user", "content": "Once upon a time"}


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def chat_reply(server, messages, max_tokens, **extra):
    r = server.post("/v1/chat/completions", {"model": "x", "messages": messages,
                                             "max_tokens": max_tokens, "temperature": 0, **extra})
    assert r.status_code == 200, r.text
    return r.json()


def chat_text(server, messages, max_tokens, **extra):
    return chat_reply(server, messages, max_tokens, **extra)["choices"][0]["message"]["content"]


def test_create_equals_chat_completions(server, client):
    r = client.responses.create(model="any-name", input="Once upon a time", max_output_tokens=12,
                                temperature=0)
    assert r.object == "response" and r.id.startswith("resp_") and r.created_at > 0
    assert r.model == "any-name"  # any model name is served and echoed, as SGLang does
    assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
    assert [o.type for o in r.output] == ["message"]
    message = r.output[0]
    assert message.role == "assistant" and message.id.startswith("msg_")
    assert [c.type for c in message.content] == ["output_text"]
    assert r.output_text == message.content[0].text == chat_text(server, [USER], 12) != ""
    assert r.usage.output_tokens == 12
    assert r.usage.total_tokens == r.usage.input_tokens + 12 and r.usage.input_tokens > 0
    assert r.max_output_tokens == 12 and r.store is False and r.tools == []


def test_instructions_and_input_items(server, client):
    # instructions render as a system message; developer is system; text parts join by a space
    # (SGLang's chat rendering of a message's text parts).
    r = client.responses.create(
        model="m", max_output_tokens=10, temperature=0, instructions="Be kind.",
        input=[{"role": "user", "content": [{"type": "input_text", "text": "Once upon"},
                                            {"type": "input_text", "text": "a time"}]},
               {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "there was"}]},
               {"role": "developer", "content": "Short answers."},
               {"role": "user", "content": "Go on."}])
    want = chat_reply(server, [{"role": "system", "content": "Be kind."},
                               {"role": "user", "content": "Once upon a time"},
                               {"role": "assistant", "content": "there was"},
                               {"role": "system", "content": "Short answers."},
                               {"role": "user", "content": "Go on."}], 10)
    assert r.output_text == want["choices"][0]["message"]["content"]
    assert r.usage.input_tokens == want["usage"]["prompt_tokens"]  # the same prompt
    assert r.instructions == "Be kind."


def test_completed_status_and_metadata(server, client):
    # A stop string ends the output: completed, no incomplete_details; metadata is echoed.
    full = chat_text(server, [USER], 40)
    word = full.split()[3]
    r = client.responses.create(model="m", input="Once upon a time", max_output_tokens=40,
                                temperature=0, metadata={"k": "v"}, extra_body={"stop": word})
    assert r.status == "completed" and r.incomplete_details is None
    assert r.output_text == chat_text(server, [USER], 40, stop=word)
    assert r.output[0].status == "completed" and r.metadata == {"k": "v"}


def test_streaming_create_matches_and_event_order(server, client):
    r = client.responses.create(model="m", input="Once upon a time", max_output_tokens=16,
                                temperature=0)
    events = list(client.responses.create(model="m", input="Once upon a time",
                                          max_output_tokens=16, temperature=0, stream=True))
    types = [e.type for e in events]
    assert types[:4] == ["response.created", "response.in_progress",
                         "response.output_item.added", "response.content_part.added"], types
    assert types[-4:] == ["response.output_text.done", "response.content_part.done",
                          "response.output_item.done", "response.incomplete"], types
    assert set(types[4:-4]) == {"response.output_text.delta"}
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    text = "".join(e.delta for e in deltas)
    assert text == r.output_text
    item_id = events[2].item.id
    assert all(e.item_id == item_id and e.output_index == 0 and e.content_index == 0
               for e in deltas)
    assert events[0].response.status == "in_progress" and events[0].response.output == []
    final = events[-1].response
    assert final.id == events[0].response.id and final.output_text == text
    assert final.usage.output_tokens == 16 and events[-4].text == text


def test_stream_helper_accumulates(server, client):
    # The SDK's helper returns a final response for response.completed only (as on OpenAI, a
    # response cut at max_output_tokens ends with response.incomplete): end on a stop string.
    word = chat_text(server, [USER], 40).split()[3]
    with client.responses.stream(model="m", input="Once upon a time", max_output_tokens=40,
                                 temperature=0, extra_body={"stop": word}) as stream:
        deltas = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert final.status == "completed" and final.output_text == deltas != ""


def aborted_response(server, stream):
    """A long Responses request aborted by /abort_request (by its request_id) while it runs:
    (HTTP status, body)."""
    body = {"model": "m", "input": "Once upon a time", "max_output_tokens": 480,
            "temperature": 0, "ignore_eos": True, "request_id": f"resp-abort-{stream}",
            "stream": stream}
    r = abort_while_running(server, lambda: server.post("/v1/responses", body),
                            body["request_id"], lambda r: "failed" in r.text)
    return r.status_code, r.text


# An aborted response is a response (SGLang, and the Responses API's 'failed' status): HTTP 200,
# status failed, `error` saying why, no output; streamed, it ends with response.failed.
@pytest.mark.parametrize("stream", [False, True])
def test_abort_is_a_failed_response(server, stream):
    status, text = aborted_response(server, stream)
    assert status == 200, text
    if stream:
        events = [json.loads(line[6:]) for line in text.splitlines()
                  if line.startswith("data: ")]
        assert events[-1]["type"] == "response.failed", events[-1]
        r = events[-1]["response"]
    else:
        r = json.loads(text)
    assert r["object"] == "response" and r["status"] == "failed", r
    assert r["error"]["code"] == "server_error" and r["error"]["message"] != ""
    assert r["output"] == [] and r["usage"]["output_tokens"] < 480
    assert r["id"] == f"resp-abort-{stream}"  # SGLang's request_id is the response's id


def test_request_id_names_the_response(server, client):
    r = client.responses.create(model="m", input="Hi", max_output_tokens=2,
                                extra_body={"request_id": "resp-mine"})
    assert r.id == "resp-mine"
    for extra, words in [({"request_id": 5}, "'request_id' must be a non-empty string"),
                         ({"request_id": "a", "rid": "b"}, "give one"),
                         ({"stream_reasoning": False}, "'stream_reasoning' = false")]:
        r = server.post("/v1/responses", {"model": "m", "input": "Hi", **extra})
        assert r.status_code == 400 and words in r.text, r.text


# include: ["message.output_text.logprobs"] with top_logprobs: the chat route's logprobs, on the
# output text and on every delta.
def test_output_text_logprobs(server, client):
    include = ["message.output_text.logprobs"]
    r = client.responses.create(model="m", input="Once upon a time", max_output_tokens=6,
                                temperature=0, include=include, top_logprobs=2)
    part = r.output[0].content[0]
    assert len(part.logprobs) == r.usage.output_tokens == 6
    assert "".join(lp.token for lp in part.logprobs) == part.text
    assert all(lp.logprob <= 0 and len(lp.top_logprobs) == 2 for lp in part.logprobs)
    chat = server.post("/v1/chat/completions", {
        "model": "m", "messages": [USER], "max_tokens": 6, "temperature": 0, "logprobs": True,
        "top_logprobs": 2}).json()["choices"][0]["logprobs"]["content"]
    # (Behind --dp-size 2 the two routes may run on replicas whose prefix caches differ, one
    # holding the /health probe's prompt: f32 sums in another order.)
    same = pytest.approx([c["logprob"] for c in chat], abs=1e-5)
    assert [lp.logprob for lp in part.logprobs] == same
    events = list(client.responses.create(model="m", input="Once upon a time",
                                          max_output_tokens=6, temperature=0, include=include,
                                          stream=True))
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert sum(len(e.logprobs) for e in deltas) == 6
    assert [lp.logprob for e in deltas for lp in e.logprobs] == same
    # Without include, no logprobs.
    plain = client.responses.create(model="m", input="Once upon a time", max_output_tokens=3,
                                    temperature=0)
    assert plain.output[0].content[0].logprobs == []


def test_sse_wire_format(server):
    r = server.post("/v1/responses", {"model": "m", "input": "hi", "max_output_tokens": 4,
                                      "stream": True}, stream=True)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    name, events = None, []
    for line in r.iter_lines(decode_unicode=True):
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            data = json.loads(line[len("data: "):])
            assert data["type"] == name, (name, data)  # every event is named by its type
            events.append(data)
    assert events[-1]["type"] == "response.incomplete"  # no [DONE] after the terminal event


@pytest.mark.parametrize("body,field", [
    ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
    # Errors name the Responses form's fields, not the chat form's it is translated into.
    ({"tools": [{"type": "function", "name": "f", "parameters": [1]}]},
     "tools[0].parameters must be"),
    ({"tools": [{"type": "function", "name": "f"}, {"type": "function", "name": "f"}]},
     "tools[1].name 'f' is given twice"),
    ({"tools": [{"type": "function", "name": "f"}], "tool_choice": {"type": "function",
                                                                   "name": "g"}}, "'g'"),
    ({"previous_response_id": "resp_1"}, "previous_response_id"),
    ({"store": True}, "store"),
    # No --reasoning-parser here: thinking cannot be turned on (test_reasoning_items.py has one).
    ({"reasoning": {"effort": "low"}}, "--reasoning-parser"),
    ({"text": {"format": {"type": "yaml"}}}, "text.format.type"),
    ({"text": {"format": {"type": "json_schema", "name": "x", "schema": {}, "colour": 1}}},
     "text.format.colour"),
    ({"text": {"format": {"type": "json_schema", "name": "x"}}}, "text.format.schema"),
    ({"text": {"format": {"type": "json_schema", "schema": {}}}}, "text.format.name"),
    ({"text": {"format": {"type": "json_schema", "name": "x", "schema": {
        "type": "object", "multipleOf": 2}}}}, "multipleOf"),
    ({"include": ["reasoning.encrypted_content"]}, "include"),
    ({"top_logprobs": 2}, "top_logprobs"),
    ({"background": True}, "background"),
    ({"messages": [USER]}, "messages"),
    ({"max_tokens": 5}, "max_tokens"),
    ({"input": [{"type": "function_call_output", "call_id": "c"}]}, "input[0].output"),
    ({"input": [{"type": "function_call", "call_id": "c", "name": "f"}]}, "input[0].arguments"),
    ({"input": [{"type": "reasoning", "summary": []}]}, "input[0]"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
     "input_image"),
    ({"input": []}, "input"),
    ({"max_output_tokens": 0}, "max_output_tokens"),
    ({"metadata": {"k": 1}}, "metadata.k"),
    ({"text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "strin"}}}},
     "'text.format': invalid json_schema"),
])
def test_refusals_name_the_field(server, body, field):
    r = server.post("/v1/responses", {"model": "m", "input": "hi", **body})
    assert r.status_code in (400, 501), r.text
    assert field in r.json()["error"]["message"], r.text


def test_text_format_holds_the_output_to_a_schema(server, client):
    # SGLang's mapping: text.format json_schema is the chat route's json_schema response_format
    # (echoed as given), json_object its json_object; sampled, so only the grammar makes it valid.
    jsonschema = pytest.importorskip("jsonschema")
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                               "n": {"type": "integer", "minimum": 0,
                                                     "maximum": 99}},
              "required": ["name", "n"], "additionalProperties": False}
    fmt = {"type": "json_schema", "name": "person", "schema": schema, "strict": True}
    for seed in range(3):
        r = client.responses.create(model="m", input="hi", max_output_tokens=200,
                                    temperature=1.0, text={"format": fmt},
                                    extra_body={"seed": seed})
        assert r.status == "completed", r
        jsonschema.validate(json.loads(r.output_text), schema)
        assert r.text.format.type == "json_schema" and r.text.format.name == "person"
    r = client.responses.create(model="m", input="hi", max_output_tokens=300, temperature=1.0,
                                text={"format": {"type": "json_object"}})
    assert r.output_text.startswith("{") and r.text.format.type == "json_object"


def test_asks_nothing_is_accepted(server, client):
    # store false, empty tools and include, tool_choice auto, text format text: all accepted.
    r = client.responses.create(model="m", input="hi", max_output_tokens=3, temperature=0,
                                store=False, tools=[], include=[], tool_choice="auto",
                                text={"format": {"type": "text"}}, parallel_tool_calls=True,
                                truncation="disabled", user="u1")
    assert r.usage.output_tokens == 3 and r.user == "u1"
    server.wait_idle_no_leak()


# --enable-response-store (SGLang's flag): responses are kept (store defaults to true), read back
# with GET /v1/responses/{id}, removed with DELETE, and continued with previous_response_id,
# which puts the stored conversation (its input and output items) before the new input.
@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    from conftest import Server
    s = Server(tmp_path_factory.mktemp("store"), "--enable-response-store")
    yield s
    assert s.stop() == 0, s.log()


def test_stored_responses_read_back_and_continue(stored):
    client = openai.OpenAI(base_url=stored.url + "/v1", api_key="unused", max_retries=0)
    first = client.responses.create(model="m", input="Once upon a time", max_output_tokens=8,
                                    temperature=0)
    assert first.store is True
    got = client.responses.retrieve(first.id)
    assert got.id == first.id and got.output_text == first.output_text and got.status == "incomplete"
    # A continuation renders as the whole conversation would on the chat route.
    second = client.responses.create(model="m", input="Go on.", previous_response_id=first.id,
                                     max_output_tokens=8, temperature=0)
    assert second.previous_response_id == first.id
    chat = chat_reply(stored, [USER, {"role": "assistant", "content": first.output_text},
                               {"role": "user", "content": "Go on."}], 8)
    assert second.output_text == chat["choices"][0]["message"]["content"]
    assert second.usage.input_tokens == chat["usage"]["prompt_tokens"]
    # Instructions are not carried over (OpenAI's rule): only input and output items are.
    told = client.responses.create(model="m", input="Once upon a time", instructions="Be brief.",
                                   max_output_tokens=4, temperature=0)
    after = client.responses.create(model="m", input="Go on.", previous_response_id=told.id,
                                    max_output_tokens=4, temperature=0)
    plain = chat_reply(stored, [USER, {"role": "assistant", "content": told.output_text},
                                {"role": "user", "content": "Go on."}], 4)
    assert after.usage.input_tokens == plain["usage"]["prompt_tokens"]
    # Errors name the client's own items from input[0].
    r = stored.post("/v1/responses", {"model": "m", "previous_response_id": first.id,
                                      "input": [{"role": "robot", "content": "x"}]})
    assert r.status_code == 400 and "input[0].role" in r.json()["error"]["message"], r.text
    # A chain of three: the second's conversation already holds the first's.
    third = client.responses.create(model="m", input="The end.", previous_response_id=second.id,
                                    max_output_tokens=4, temperature=0)
    assert third.usage.input_tokens > second.usage.input_tokens
    # Streamed responses are kept too.
    events = list(client.responses.create(model="m", input="hi", max_output_tokens=4,
                                          temperature=0, stream=True))
    streamed = events[-1].response  # response.incomplete: the limit ended it
    assert events[-1].type == "response.incomplete" and streamed.output_text
    assert client.responses.retrieve(streamed.id).output_text == streamed.output_text


def test_unstored_and_deleted_responses_are_not_found(stored):
    client = openai.OpenAI(base_url=stored.url + "/v1", api_key="unused", max_retries=0)
    kept = client.responses.create(model="m", input="hi", max_output_tokens=2, temperature=0)
    unkept = client.responses.create(model="m", input="hi", max_output_tokens=2, temperature=0,
                                     store=False)
    assert unkept.store is False
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(unkept.id)
    client.responses.delete(kept.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(kept.id)
    with pytest.raises(openai.NotFoundError) as e:
        client.responses.create(model="m", input="x", previous_response_id=kept.id,
                                max_output_tokens=2)
    assert "previous response" in str(e.value)


def test_a_client_id_never_replaces_a_stored_response(stored):
    def create(**fields):
        return stored.post("/v1/responses", {"model": "m", "input": "hi", "max_output_tokens": 2,
                                             "temperature": 0, **fields})
    first = create(request_id="resp-client-1")
    assert first.status_code == 200 and first.json()["id"] == "resp-client-1", first.text
    again = create(request_id="resp-client-1", input="something else")
    assert again.status_code == 400, again.text
    assert "names a stored response" in again.json()["error"]["message"]
    assert stored.get("/v1/responses/resp-client-1").json() == first.json()
    # Unstored, the id may repeat; deleted, it is free again.
    assert create(request_id="resp-client-1", store=False).status_code == 200
    assert requests.delete(stored.url + "/v1/responses/resp-client-1").status_code == 200
    assert create(request_id="resp-client-1").status_code == 200


def test_only_the_response_itself_is_served(stored):
    r = stored.get("/v1/responses/resp_1/input_items")
    assert r.status_code == 404 and "not supported" in r.json()["error"]["message"], r.text
    # Cancelling a stored (so ended) response changes nothing and answers it (SGLang's).
    client = openai.OpenAI(base_url=stored.url + "/v1", api_key="unused", max_retries=0)
    done = client.responses.create(model="m", input="hi", max_output_tokens=2, temperature=0)
    cancelled = client.responses.cancel(done.id)
    assert cancelled.id == done.id and cancelled.status == done.status
    assert cancelled.output_text == done.output_text
    assert stored.post("/v1/responses/resp_unknown/cancel").status_code == 404
    for method, path in [("get", f"/v1/responses/{done.id}/cancel"),
                         ("post", f"/v1/responses/{done.id}")]:
        r = getattr(requests, method)(stored.url + path, timeout=10)
        assert r.status_code == 405 and "not supported" in r.json()["error"]["message"], r.text
        assert r.headers["Allow"] == ("POST" if method == "get" else "GET, DELETE")


def finished(client, response_id, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        r = client.responses.retrieve(response_id)
        if r.status not in ("queued", "in_progress"):
            return r
        assert time.monotonic() < deadline, f"{response_id} still {r.status}"
        time.sleep(0.02)


# background (SGLang's, with the store): the create returns the response queued; it runs without
# the connection, and GET /v1/responses/{id} follows it to its end.
def test_background_responses_run_without_the_connection(stored):
    client = openai.OpenAI(base_url=stored.url + "/v1", api_key="unused", max_retries=0)
    fg = client.responses.create(model="m", input="Once upon a time", max_output_tokens=12,
                                 temperature=0)
    bg = client.responses.create(model="m", input="Once upon a time", max_output_tokens=12,
                                 temperature=0, background=True)
    assert bg.background is True and bg.status == "queued" and bg.id != fg.id
    assert bg.output == [] and bg.usage is None
    done = finished(client, bg.id)
    assert done.status == fg.status == "incomplete" and done.background is True
    assert done.output_text == fg.output_text and done.usage.output_tokens == 12
    # It is a stored response like any: continued, then deleted.
    after = client.responses.create(model="m", input="Go on.", previous_response_id=bg.id,
                                    max_output_tokens=4, temperature=0)
    assert after.output_text
    client.responses.delete(bg.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(bg.id)
    # Streamed, the events come on the connection (SGLang's); the response says background.
    events = list(client.responses.create(model="m", input="hi", max_output_tokens=4,
                                          temperature=0, stream=True, background=True))
    assert events[-1].type == "response.incomplete" and events[-1].response.background is True
    r = stored.post("/v1/responses", {"model": "m", "input": "hi", "background": True,
                                      "store": False})
    assert r.status_code == 400 and "'store'" in r.json()["error"]["message"], r.text
    stored.wait_idle_no_leak()


def test_background_responses_cancel_abort_and_delete_while_running(stored):
    client = openai.OpenAI(base_url=stored.url + "/v1", api_key="unused", max_retries=0)

    def start():  # 200 steps of 10 ms at least: still running when the next call comes
        return client.responses.create(model="m", input="Once upon a time", temperature=0,
                                       max_output_tokens=200, background=True,
                                       extra_body={"ignore_eos": True})

    assert stored.post("/slow_down", {"forward_sleep_time": 0.01}).status_code == 200
    try:
        cancelled = start()
        assert client.responses.retrieve(cancelled.id).status in ("queued", "in_progress")
        with pytest.raises(openai.BadRequestError) as e:  # nothing to continue yet
            client.responses.create(model="m", input="x", previous_response_id=cancelled.id)
        assert "still" in str(e.value)
        answer = client.responses.cancel(cancelled.id)
        assert answer.id == cancelled.id and answer.status == "cancelled"
        # /abort_request ends it as any request: failed, with the reason.
        aborted = start()
        assert stored.post("/abort_request", {"rid": aborted.id}).json()["success"]
        failed = finished(client, aborted.id)
        assert failed.status == "failed" and failed.error is not None, failed
        # DELETE aborts it first.
        deleted = start()
        client.responses.delete(deleted.id)
        with pytest.raises(openai.NotFoundError):
            client.responses.retrieve(deleted.id)
    finally:
        stored.post("/slow_down", {"forward_sleep_time": None})
    stored.wait_idle_no_leak()
    # What was cancelled stays so, and nothing brings back what was deleted.
    assert client.responses.retrieve(cancelled.id).status == "cancelled"
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(deleted.id)


def test_without_the_store_flag_nothing_is_kept(server):
    r = server.get("/v1/responses/resp_1")
    assert r.status_code == 400 and "--enable-response-store" in r.json()["error"]["message"]
    r = server.post("/v1/responses", {"model": "m", "input": "hi", "store": True})
    assert r.status_code == 400 and "--enable-response-store" in r.json()["error"]["message"]
