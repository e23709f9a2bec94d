# Malformed and hostile requests against sgl-server: each gets its documented answer (an
# OpenAI-style error JSON with the right status, or a closed connection for broken transfers),
# the server stays up, and normal requests still succeed afterwards.
import json
import socket
import threading
import time

import pytest

from conftest import Server, http_post, raw_request, status_of

requests = pytest.importorskip("requests")

OK = {"prompt": "Once upon a time", "max_tokens": 2}
MSGS = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("bad"), "--http-read-timeout", "1")
    yield srv
    assert srv.alive(), "the server died: " + srv.log()
    assert srv.stop() == 0, srv.log()


def completion(**fields):
    return json.dumps({**OK, **fields})


def chat(**fields):
    return json.dumps({"messages": MSGS, "max_tokens": 2, **fields})


# (name, method, path, body, expected status, substring of the error message)
CASES = [
    # Broken JSON bodies.
    ("empty body", "POST", "/v1/completions", "", 400, "invalid JSON"),
    ("truncated json", "POST", "/v1/completions", '{"prompt": "a", ', 400, "invalid JSON"),
    ("trailing garbage", "POST", "/v1/completions", '{"prompt": "a"} xyz', 400, "invalid JSON"),
    ("json array body", "POST", "/v1/completions", '["prompt"]', 400, "must be an object"),
    ("json null body", "POST", "/v1/completions", "null", 400, "must be an object"),
    ("json string body", "POST", "/v1/chat/completions", '"hi"', 400, "must be an object"),
    ("NaN literal", "POST", "/v1/completions", '{"prompt": "a", "temperature": NaN}', 400,
     "invalid JSON"),
    ("single quotes", "POST", "/v1/completions", "{'prompt': 'a'}", 400, "invalid JSON"),
    ("invalid utf-8 byte", "POST", "/v1/completions", b'{"prompt": "a\xff"}', 400,
     "invalid JSON"),
    ("overlong utf-8", "POST", "/v1/completions", b'{"prompt": "\xc0\xaf"}', 400, "invalid JSON"),
    ("truncated utf-8", "POST", "/v1/chat/completions",
     b'{"messages": [{"role": "user", "content": "\xe2\x82"}]}', 400, "invalid JSON"),
    ("lone surrogate escape", "POST", "/v1/completions", '{"prompt": "\\ud800"}', 400,
     "invalid JSON"),
    ("deep nesting", "POST", "/v1/completions", "[" * 10000 + "]" * 10000, 400, "nests deeper"),
    ("deep nesting in field", "POST", "/v1/completions",
     '{"prompt": "a", "x": ' + "[" * 100 + "]" * 100 + "}", 400, "nests deeper"),
    # Wrong types.
    ("prompt missing", "POST", "/v1/completions", '{"max_tokens": 2}', 400, "'prompt'"),
    ("prompt number", "POST", "/v1/completions", '{"prompt": 5.5}', 400, "'prompt'"),
    ("prompt empty list", "POST", "/v1/completions", '{"prompt": []}', 400, "'prompt'"),
    ("prompt mixed list", "POST", "/v1/completions", '{"prompt": [1, "a"]}', 400, "'prompt'"),
    ("prompt mixed lists", "POST", "/v1/completions", '{"prompt": ["a", [1]]}', 400, "'prompt'"),
    ("prompt float ids", "POST", "/v1/completions", '{"prompt": [1.5, 2]}', 400, "'prompt'"),
    ("prompt negative id", "POST", "/v1/completions", '{"prompt": [-1]}', 400, "'prompt'"),
    ("prompt id past vocab", "POST", "/v1/completions", '{"prompt": [1, 99999]}', 400,
     "vocabulary"),
    ("prompt id past int32", "POST", "/v1/completions", '{"prompt": [4294967296]}', 400,
     "'prompt'"),
    ("empty id list", "POST", "/v1/completions", '{"prompt": [[]]}', 400, "empty"),
    ("max_tokens string", "POST", "/v1/completions", completion(max_tokens="5"), 400,
     "'max_tokens'"),
    ("max_tokens fraction", "POST", "/v1/completions", completion(max_tokens=1.5), 400,
     "'max_tokens'"),
    ("stream string", "POST", "/v1/completions", completion(stream="yes"), 400, "'stream'"),
    ("echo number", "POST", "/v1/completions", completion(echo=1), 400, "'echo'"),
    ("stop number", "POST", "/v1/completions", completion(stop=5), 400, "'stop'"),
    ("stop list of ints", "POST", "/v1/completions", completion(stop=[1, 2]), 400, "'stop'"),
    ("stop too long", "POST", "/v1/completions", completion(stop="x" * 5000), 400, "'stop'"),
    ("stop_token_ids strings", "POST", "/v1/completions", completion(stop_token_ids=["a"]), 400,
     "'stop_token_ids'"),
    ("stop_token_ids past vocab", "POST", "/v1/completions", completion(stop_token_ids=[10**6]),
     400, "stop_token_ids"),
    ("stop_token_ids too many", "POST", "/v1/completions", completion(stop_token_ids=[0] * 1025),
     400, "at most 1024 token ids"),
    ("seed string", "POST", "/v1/completions", completion(seed="abc"), 400, "'seed'"),
    ("seed huge", "POST", "/v1/completions", '{"prompt": "a", "seed": 1e300}', 400, "'seed'"),
    ("stream_options not object", "POST", "/v1/completions",
     completion(stream=True, stream_options=1), 400, "'stream_options'"),
    ("model number", "POST", "/v1/completions", completion(model=3), 400, "'model'"),
    # Out-of-range values.
    ("negative max_tokens", "POST", "/v1/completions", completion(max_tokens=-1), 400,
     "'max_tokens'"),
    ("max_tokens int64 max", "POST", "/v1/completions",
     '{"prompt": "a", "max_tokens": 9223372036854775807}', 400, "context length"),
    ("huge max_tokens", "POST", "/v1/completions", completion(max_tokens=10**12), 400,
     "context length"),
    ("max_tokens 1e400", "POST", "/v1/completions", '{"prompt": "a", "max_tokens": 1e400}', 400,
     "number overflow"),
    ("negative temperature", "POST", "/v1/completions", completion(temperature=-0.5), 400,
     "'temperature'"),
    ("top_p zero", "POST", "/v1/completions", completion(top_p=0), 400, "'top_p'"),
    ("top_p above one", "POST", "/v1/completions", completion(top_p=1.5), 400, "'top_p'"),
    ("top_k below -1", "POST", "/v1/completions", completion(top_k=-2), 400, "'top_k'"),
    ("min_p above one", "POST", "/v1/completions", completion(min_p=2), 400, "'min_p'"),
    ("n zero", "POST", "/v1/completions", completion(n=0), 400, "'n'"),
    ("n huge", "POST", "/v1/completions", completion(n=100000), 400, "'n'"),
    ("logprobs too many", "POST", "/v1/completions", completion(logprobs=50), 400, "'logprobs'"),
    ("logprobs negative", "POST", "/v1/completions", completion(logprobs=-1), 400, "'logprobs'"),
    ("presence_penalty range", "POST", "/v1/completions", completion(presence_penalty=3), 400,
     "'presence_penalty'"),
    ("frequency_penalty range", "POST", "/v1/completions", completion(frequency_penalty=-9), 400,
     "'frequency_penalty'"),
    ("repetition_penalty zero", "POST", "/v1/completions", completion(repetition_penalty=0), 400,
     "'repetition_penalty'"),
    ("min_tokens negative", "POST", "/v1/completions", completion(min_tokens=-1), 400,
     "'min_tokens'"),
    ("logit_bias bad key", "POST", "/v1/completions", completion(logit_bias={"abc": 1}), 400,
     "'logit_bias'"),
    ("logit_bias out of range", "POST", "/v1/completions", completion(logit_bias={"5": 500}), 400,
     "'logit_bias'"),
    ("logit_bias not object", "POST", "/v1/completions", completion(logit_bias=[1]), 400,
     "'logit_bias'"),
    ("too many prompts", "POST", "/v1/completions", json.dumps({"prompt": ["a"] * 2049}), 400,
     "'prompt'"),
    ("prompt past context", "POST", "/v1/completions", completion(prompt="once upon a time " * 400),
     400, "context length"),
    ("prompt ids past context", "POST", "/v1/completions", json.dumps({"prompt": [300] * 600}),
     400, "context length"),
    ("prompt + max_tokens past context", "POST", "/v1/completions",
     json.dumps({"prompt": [300] * 500, "max_tokens": 100}), 400, "context length"),
    # The context-length error names the limit the route calls it.
    ("prompt + max_completion_tokens past context", "POST", "/v1/chat/completions",
     chat(max_completion_tokens=10**6), 400, "plus max_completion_tokens (1000000)"),
    ("prompt + max_new_tokens past context", "POST", "/generate",
     '{"input_ids": [300], "sampling_params": {"max_new_tokens": 1000000}}', 400,
     "plus max_new_tokens (1000000)"),
    ("prompt + max_output_tokens past context", "POST", "/v1/responses",
     '{"input": "a", "max_output_tokens": 1000000}', 400, "plus max_output_tokens (1000000)"),
    ("min_new_tokens above max_new_tokens", "POST", "/generate",
     '{"text": "a", "sampling_params": {"max_new_tokens": 2, "min_new_tokens": 3}}', 400,
     "'min_new_tokens' must be <= max_new_tokens (2)"),
    ("generate seed and sampling_seed", "POST", "/generate",
     '{"text": "a", "sampling_params": {"seed": 1, "sampling_seed": 2}}', 400,
     "'sampling_seed' and 'seed' name the same seed"),
    # Accepted but not implemented (non-default values only).
    ("suffix", "POST", "/v1/completions", completion(suffix="end"), 400, "--completion-template"),
    ("best_of above n", "POST", "/v1/completions", completion(best_of=3), 400,
     "not supported yet"),
    ("response_format structural_tag without structures", "POST", "/v1/chat/completions",
     chat(response_format={"type": "structural_tag"}), 400, "'structures' must not be empty"),
    ("response_format unknown type", "POST", "/v1/chat/completions",
     chat(response_format={"type": "yaml"}), 400, "'response_format.type'"),
    ("image content part", "POST", "/v1/chat/completions",
     json.dumps({"messages": [{"role": "user", "content": [
         {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}]}), 400,
     "not supported yet"),
    ("tool_choice required without tools", "POST", "/v1/chat/completions",
     chat(tool_choice="required"), 400, "needs a non-empty 'tools'"),
    # Chat messages.
    ("messages missing", "POST", "/v1/chat/completions", '{"max_tokens": 2}', 400, "'messages'"),
    ("messages empty", "POST", "/v1/chat/completions", '{"messages": []}', 400, "'messages'"),
    ("messages object", "POST", "/v1/chat/completions", '{"messages": {"role": "user"}}', 400,
     "'messages'"),
    ("message not object", "POST", "/v1/chat/completions", '{"messages": ["hi"]}', 400,
     "messages[0]"),
    ("message without role", "POST", "/v1/chat/completions",
     '{"messages": [{"content": "hi"}]}', 400, "messages[0].role"),
    ("unknown role", "POST", "/v1/chat/completions",
     '{"messages": [{"role": "wizard", "content": "hi"}]}', 400, "messages[0].role"),
    ("content number", "POST", "/v1/chat/completions",
     '{"messages": [{"role": "user", "content": 5}]}', 400, "messages[0].content"),
    ("content part without text", "POST", "/v1/chat/completions",
     '{"messages": [{"role": "user", "content": [{"type": "text"}]}]}', 400, "text"),
    ("template raises", "POST", "/v1/chat/completions",
     json.dumps({"messages": [{"role": "system", "content": "RAISE"}, *MSGS]}), 400,
     "RAISE is not allowed"),
    ("top_logprobs without logprobs", "POST", "/v1/chat/completions", chat(top_logprobs=2), 400,
     "'top_logprobs'"),
    ("top_logprobs too many", "POST", "/v1/chat/completions", chat(logprobs=True, top_logprobs=30),
     400, "'top_logprobs'"),
    ("tools not list", "POST", "/v1/chat/completions", chat(tools={"a": 1}), 400, "'tools'"),
    ("chat_template_kwargs not object", "POST", "/v1/chat/completions",
     chat(chat_template_kwargs=[1]), 400, "'chat_template_kwargs'"),
    # Unknown models (a request may name any: SGLang serves it), routes and methods.
    ("unknown model retrieve", "GET", "/v1/models/gpt-4", None, 404, "gpt-4"),
    ("unknown route", "GET", "/v2/everything", None, 404, "no route"),
    ("trailing slash", "POST", "/v1/completions/", completion(), 404, "no route"),
    ("GET on completions", "GET", "/v1/completions", None, 405, "not allowed"),
    ("POST on models", "POST", "/v1/models", "{}", 405, "not allowed"),
    ("DELETE on generate", "DELETE", "/generate", None, 405, "not allowed"),
    ("PUT on health", "PUT", "/health", None, 405, "not allowed"),
    # SGLang native endpoints.
    ("generate text and ids", "POST", "/generate", '{"text": "a", "input_ids": [1]}', 400,
     "exactly one"),
    ("generate neither", "POST", "/generate", '{"sampling_params": {}}', 400, "exactly one"),
    ("generate text number", "POST", "/generate", '{"text": 5}', 400, "'text'"),
    ("generate ids strings", "POST", "/generate", '{"input_ids": ["a"]}', 400, "'input_ids'"),
    ("generate params not object", "POST", "/generate", '{"text": "a", "sampling_params": 1}',
     400, "'sampling_params'"),
    ("generate params list of another length", "POST", "/generate",
     '{"text": ["a", "b"], "sampling_params": [{}]}', 400,
     "'sampling_params' as a list must hold one object per prompt (2), got 1"),
    ("generate params list with other n", "POST", "/generate",
     '{"text": ["a", "b"], "sampling_params": [{"n": 2}, {"n": 3}]}', 400,
     "'sampling_params[1].n' must be the same in every sampling_params entry"),
    ("generate params list bad entry", "POST", "/generate",
     '{"text": ["a", "b"], "sampling_params": [{}, {"max_new_tokens": -1}]}', 400,
     "sampling_params[1]: "),
    ("generate logprob list", "POST", "/generate",
     '{"text": ["a", "b"], "return_logprob": [true, false]}', 400,
     "'return_logprob' as a list (one per prompt) is not supported"),
    ("generate unknown sampling key", "POST", "/generate",
     '{"text": "a", "sampling_params": {"max_tokens": 5}}', 400, "no field 'max_tokens'"),
    ("generate negative max_new_tokens", "POST", "/generate",
     '{"text": "a", "sampling_params": {"max_new_tokens": -5}}', 400, "max_new_tokens"),
    ("generate bad regex", "POST", "/generate",
     '{"text": "a", "sampling_params": {"regex": "a{3,1}"}}', 400, "'regex': invalid regex"),
    ("generate bad schema", "POST", "/generate",
     '{"text": "a", "sampling_params": {"json_schema": "{\\"type\\": 5}"}}', 400,
     "'json_schema': invalid json_schema"),
    ("generate two grammars", "POST", "/generate",
     '{"text": "a", "sampling_params": {"regex": "a", "ebnf": "root ::= \\"a\\""}}', 400,
     "only one of"),
    ("generate rid number", "POST", "/generate", '{"text": "a", "rid": 5}', 400, "'rid'"),
    ("generate top_logprobs_num negative", "POST", "/generate",
     '{"text": "a", "top_logprobs_num": -1}', 400, "'top_logprobs_num'"),
    ("generate OpenAI max_tokens", "POST", "/generate", '{"text": "a", "max_tokens": 5}', 400,
     "'max_tokens' is an OpenAI field; /generate takes 'sampling_params.max_new_tokens'"),
    ("generate OpenAI logprobs", "POST", "/generate", '{"text": "a", "logprobs": true}', 400,
     "/generate takes 'return_logprob'"),
    ("chat template in kwargs", "POST", "/v1/chat/completions",
     chat(chat_template_kwargs={"chat_template": "{{ 'x' }}"}), 400,
     "a chat template comes from --chat-template or the tokenizer"),
    ("chat reasoning not object", "POST", "/v1/chat/completions", chat(reasoning="high"), 400,
     "'reasoning' must be an object"),
    ("chat reasoning bad effort", "POST", "/v1/chat/completions",
     chat(reasoning={"effort": "extreme"}), 400, "'reasoning.effort' must be one of"),
    ("chat reasoning enabled string", "POST", "/v1/chat/completions",
     chat(reasoning={"enabled": "yes"}), 400, "'reasoning.enabled' must be a boolean"),
    ("tokenize number", "POST", "/tokenize", '{"prompt": 5}', 400, "'prompt'"),
    ("tokenize missing", "POST", "/tokenize", "{}", 400, "'prompt'"),
    ("detokenize strings", "POST", "/detokenize", '{"tokens": ["a"]}', 400, "'tokens'"),
    ("detokenize past vocab", "POST", "/detokenize", '{"tokens": [123456]}', 400, "vocabulary"),
    ("abort without rid", "POST", "/abort_request", "{}", 400, "'rid'"),
    ("flush_cache bad body", "POST", "/flush_cache", "[1, 2", 400, "invalid JSON"),
    # Accepted: unknown fields are ignored, defaults and nulls are fine.
    ("unknown fields", "POST", "/v1/completions", completion(foo={"bar": [1, 2]}, user="u"), 200,
     None),
    ("null optional fields", "POST", "/v1/completions",
     completion(temperature=None, stop=None, seed=None, logprobs=None), 200, None),
    ("default-valued penalties", "POST", "/v1/completions",
     completion(presence_penalty=0, frequency_penalty=0.0, repetition_penalty=1,
                logit_bias={"5": 0}, min_tokens=0, best_of=1), 200, None),
    ("presence_penalty set", "POST", "/v1/completions", completion(presence_penalty=0.5), 200,
     None),
    ("frequency_penalty set", "POST", "/v1/chat/completions", chat(frequency_penalty=0.5), 200,
     None),
    ("repetition_penalty set", "POST", "/v1/completions", completion(repetition_penalty=1.2), 200,
     None),
    ("logit_bias set", "POST", "/v1/completions", completion(logit_bias={"5": 5}), 200, None),
    ("min_tokens set", "POST", "/v1/completions", completion(min_tokens=2), 200, None),
    ("echo with logprobs", "POST", "/v1/completions", completion(echo=True, logprobs=1), 200,
     None),
    ("logit_bias past vocab", "POST", "/v1/completions", completion(logit_bias={"512": 1}), 400,
     "'logit_bias'"),
    ("min_tokens above max_tokens", "POST", "/v1/completions", completion(min_tokens=3), 400,
     "'min_tokens'"),
    ("generate logprob_start_len past prompt", "POST", "/generate",
     '{"input_ids": [1, 2], "return_logprob": true, "logprob_start_len": 3}', 400,
     "logprob_start_len"),
    ("NUL character in prompt", "POST", "/v1/completions", completion(prompt="a\u0000b"), 200,
     None),
    ("emoji prompt", "POST", "/v1/chat/completions",
     json.dumps({"messages": [{"role": "user", "content": "héllo 🙂 世界"}], "max_tokens": 2}),
     200, None),
    ("integral float max_tokens", "POST", "/v1/completions", completion(max_tokens=2.0), 200, None),
    ("text/plain content type", "POST", "/v1/completions", completion(), 200, None),
    ("stop list with empty string", "POST", "/v1/completions", completion(stop=["", "zz"]), 200,
     None),
]


@pytest.mark.parametrize("name,method,path,body,status,message", CASES,
                         ids=[c[0] for c in CASES])
def test_bad_request_answers(server, name, method, path, body, status, message):
    headers = {"Content-Type": "text/plain"} if name == "text/plain content type" else {}
    if isinstance(body, str):
        body = body.encode()
    r = requests.request(method, server.url + path, data=body, headers=headers, timeout=60)
    assert r.status_code == status, r.text
    if status >= 400:
        error = r.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}
        # A model that is not served is OpenAI's (and SGLang's) named case.
        assert error["code"] == ("model_not_found" if "model retrieve" in name else status)
        assert message in error["message"], error["message"]


def test_case_count():
    assert len(CASES) >= 50


# Raw HTTP: broken framing, limits, slow and vanishing clients.

def test_garbage_request_line(server):
    assert status_of(raw_request(server.host, server.port, b"GARBAGE\r\n\r\n")) == 400


def test_header_without_colon(server):
    data = b"GET /health HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n"
    assert status_of(raw_request(server.host, server.port, data)) == 400


def test_bad_content_length(server):
    data = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}"
    assert status_of(raw_request(server.host, server.port, data)) == 400


def test_header_too_large_is_431(server):
    data = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n"
    assert status_of(raw_request(server.host, server.port, data)) == 431


def test_declared_huge_body_is_413(server):
    data = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 40000000\r\n\r\n{")
    response = raw_request(server.host, server.port, data)
    assert status_of(response) == 413 and b'"error"' in response


def test_declared_huge_body_on_messages_is_an_anthropic_413(server):
    # The Anthropic routes' errors keep their shape before the router sees the request too.
    data = (b"POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\nContent-Length: 40000000\r\n"
            b"\r\n{")
    response = raw_request(server.host, server.port, data)
    assert status_of(response) == 413, response
    body = json.loads(response.split(b"\r\n\r\n", 1)[1])
    assert body["type"] == "error" and body["error"]["type"] == "request_too_large", body


def test_declared_huge_body_on_ollama_is_an_ollama_413(server):
    data = b"POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Length: 40000000\r\n\r\n{"
    response = raw_request(server.host, server.port, data)
    assert status_of(response) == 413, response
    body = json.loads(response.split(b"\r\n\r\n", 1)[1])
    assert set(body) == {"error"} and "too large" in body["error"], body


def test_huge_body_is_413(server):
    body = b'{"prompt": "' + b"a" * (33 << 20) + b'"}'
    r = requests.post(server.url + "/v1/completions", data=body, timeout=120)
    assert r.status_code == 413 and "too large" in r.json()["error"]["message"]


def test_an_object_of_300k_keys_is_read_in_linear_time(server):
    # Bodies keep their keys' order; a parser that searched an object's keys for each new one
    # would hold a worker for many minutes on these 6 MB bodies, rather than about a second.
    keys = {f"k{i}": i for i in range(300_000)}
    body = json.dumps({"prompt": "a", "max_tokens": 1, "max_tokens_x": keys,
                       "logit_bias": {str(i): 0 for i in range(500)}})
    r = requests.post(server.url + "/v1/completions", data=body, timeout=120)
    assert r.status_code == 200, r.text
    # The chat route passes its template arguments on as JSON text, read again the same way.
    body = json.dumps({"messages": [{"role": "user", "content": "a"}], "max_tokens": 1,
                       "chat_template_kwargs": keys})
    r = requests.post(server.url + "/v1/chat/completions", data=body, timeout=120)
    assert r.status_code == 200, r.text
    # A repeated key keeps its last value, as before.
    r = server.post("/v1/completions", '{"prompt": "a", "max_tokens": 5, "max_tokens": 2}')
    assert r.json()["usage"]["completion_tokens"] == 2


def test_huge_chunked_body_is_413(server):
    def chunks():
        yield b'{"prompt": "'
        for _ in range(40):
            yield b"a" * (1 << 20)
        yield b'"}'

    r = requests.post(server.url + "/v1/completions", data=chunks(), timeout=120)
    assert r.status_code == 413


def test_bad_chunked_encoding(server):
    data = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"zz\r\nhello\r\n0\r\n\r\n")
    assert status_of(raw_request(server.host, server.port, data)) == 400


def test_valid_chunked_body(server):
    body = completion().encode()
    data = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
            format(len(body), "x").encode() + b"\r\n" + body + b"\r\n0\r\n\r\n")
    assert status_of(raw_request(server.host, server.port, data)) == 200


def test_expect_100_continue(server):
    with socket.create_connection((server.host, server.port), timeout=10) as s:
        body = completion().encode()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
        assert s.recv(1024).startswith(b"HTTP/1.1 100 Continue")
        s.sendall(body)
        assert status_of(s.recv(65536)) == 200


def test_pipelined_requests(server):
    with socket.create_connection((server.host, server.port), timeout=10) as s:
        one = http_post("/v1/completions", completion())
        s.sendall(one + one + b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        deadline = time.monotonic() + 10
        while data.count(b"HTTP/1.1 200") < 3 and time.monotonic() < deadline:
            data += s.recv(65536)
        assert data.count(b"HTTP/1.1 200") == 3


def test_expect_100_continue_is_ignored_on_http10(server):
    # RFC 9110 10.1.1: an HTTP/1.0 client knows no 1xx; it sends its body after a pause.
    with socket.create_connection((server.host, server.port), timeout=10) as s:
        body = completion().encode()
        s.sendall(b"POST /v1/completions HTTP/1.0\r\nExpect: 100-continue\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
        s.settimeout(0.5)
        with pytest.raises(socket.timeout):
            s.recv(1024)
        s.settimeout(10)
        s.sendall(body)
        assert s.recv(65536).startswith(b"HTTP/1.0 200")


@pytest.mark.parametrize("version", [b"HTTP/2.0", b"HTTP/1.2", b"HTTP/0.9"])
def test_other_http_versions_are_505(server, version):
    response = raw_request(server.host, server.port, b"GET /health " + version + b"\r\n\r\n")
    assert response.startswith(b"HTTP/1.1 505"), response
    assert b"Connection: close" in response


def test_after_connection_close_the_server_drains_instead_of_resetting(server):
    # After a "Connection: close" answer the server half-closes and reads on (for a while), so
    # bytes the client sends on (pipelined, or racing the close) meet no reset, which would drop
    # whatever of the answer the kernel had not delivered yet.
    with socket.create_connection((server.host, server.port), timeout=30) as s:
        s.sendall(http_post("/v1/completions", completion(),
                            extra_headers=b"Connection: close\r\n"))
        data = b""
        while chunk := s.recv(65536):  # up to the server's FIN
            data += chunk
        assert status_of(data) == 200
        for _ in range(3):
            s.sendall(http_post("/v1/completions", completion()))  # no reset: drained
            time.sleep(0.1)


def test_http10_closes(server):
    data = b"GET /health HTTP/1.0\r\n\r\n"
    response = raw_request(server.host, server.port, data)
    assert response.startswith(b"HTTP/1.0 200")


def closed_within(sock, seconds):
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_partial_body_times_out(server):
    with socket.create_connection((server.host, server.port)) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"p")
        assert closed_within(s, 5)


def test_slow_header_times_out(server):
    with socket.create_connection((server.host, server.port)) as s:
        start = time.monotonic()
        try:
            for byte in b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n":
                s.sendall(bytes([byte]))
                time.sleep(0.2)
                if time.monotonic() - start > 5:
                    break
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert closed_within(s, 5)
        assert time.monotonic() - start < 8


def test_idle_connection_times_out(server):
    with socket.create_connection((server.host, server.port)) as s:
        assert closed_within(s, 5)


def test_disconnect_before_response(server):
    for _ in range(5):
        raw_request(server.host, server.port,
                    http_post("/v1/completions", completion(max_tokens=300, ignore_eos=True)),
                    read=False)
    server.wait_idle_no_leak()


def test_disconnect_mid_upload(server):
    with socket.create_connection((server.host, server.port)) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" +
                  b"a" * 1000)
    assert server.get("/health").status_code == 200


def test_disconnect_mid_stream(server):
    body = completion(max_tokens=480, ignore_eos=True, stream=True, n=8)
    for _ in range(3):
        with socket.create_connection((server.host, server.port), timeout=10) as s:
            s.sendall(http_post("/v1/completions", body))
            data = b""
            while b"data: " not in data:
                chunk = s.recv(65536)
                assert chunk
                data += chunk
            assert status_of(data) == 200
    server.wait_idle_no_leak()


def test_many_concurrent_bad_requests(server):
    bodies = ["{", "[]", completion(n=0), completion(max_tokens=-1), completion()]
    codes = []

    def hit(body):
        codes.append(requests.post(server.url + "/v1/completions", data=body, timeout=60)
                     .status_code)

    threads = [threading.Thread(target=hit, args=(bodies[i % len(bodies)],)) for i in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(codes) == 100 and sorted(set(codes)) == [200, 400]
    assert codes.count(200) == 20


def test_server_still_healthy_afterwards(server):
    assert server.alive()
    assert server.get("/health").status_code == 200
    r = server.post("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 8,
                                        "temperature": 0})
    assert r.status_code == 200 and r.json()["choices"][0]["text"]
    server.wait_idle_no_leak()


# Fields SGLang or vLLM define that sgl.cpp does not implement yet: on every route they belong
# to, a value that asks for something is a 400 naming the field (never accepted and ignored),
# and a value that asks for nothing is accepted.
UNSUPPORTED_SAMPLING = {
    "structured_outputs": {"regex": "a+"},
    "custom_params": {"a": 1}, "custom_logit_processor": "x",
}
UNSUPPORTED_REQUEST = {
    "image_data": "img.png",
    "audio_data": "a.wav", "video_data": "v.mp4", "input_embeds": [[0.1]],
}


def route_body(route, field, value):
    if route == "/generate":
        if field in UNSUPPORTED_SAMPLING:
            return {"text": "Once", "sampling_params": {"max_new_tokens": 2, field: value}}
        return {"text": "Once", "sampling_params": {"max_new_tokens": 2}, field: value}
    if route == "/v1/completions":
        return {"prompt": "Once", "max_tokens": 2, field: value}
    return {"messages": MSGS, "max_tokens": 2, field: value}


# /generate takes this beside sampling_params too (SGLang's GenerateReqInput); the grammar and
# other sampling fields only inside sampling_params, whatever their value (0, false) but null.
TOP_LEVEL_GENERATE = [("custom_logit_processor", "x"), ("json_schema", '{"type": "object"}'),
                      ("regex", "a+"), ("ebnf", 'root ::= "a"'),
                      ("structural_tag", '{"triggers": ["<"], "structures": '
                                         '[{"begin": "<", "end": ">"}]}'),
                      ("temperature", 0), ("max_new_tokens", 512), ("stop", ["x"]), ("n", 2),
                      ("ignore_eos", False), ("seed", 1), ("top_k", 1)]


@pytest.mark.parametrize("field,value", TOP_LEVEL_GENERATE)
def test_generate_top_level_fields_are_refused(server, field, value):
    r = server.post("/generate", {"text": "Once", field: value})
    assert r.status_code == 400 and f"'{field}' is not supported: " in r.text
    r = server.post("/generate", {"text": "Once", "sampling_params": {"max_new_tokens": 2},
                                  field: None})
    assert r.status_code == 200, r.text


FIELD_CASES = [(route, field, value)
               for route in ("/generate", "/v1/completions", "/v1/chat/completions")
               for field, value in {**UNSUPPORTED_SAMPLING, **UNSUPPORTED_REQUEST}.items()]


@pytest.mark.parametrize("route,field,value", FIELD_CASES,
                         ids=[f"{r}:{f}" for r, f, _ in FIELD_CASES])
def test_unimplemented_fields_are_refused_by_name(server, route, field, value):
    r = server.post(route, route_body(route, field, value))
    assert r.status_code == 400, r.text
    assert f"'{field}' is not supported: " in r.json()["error"]["message"]
    empty = {str: "", bool: False, list: [], dict: {}}[type(value)]
    for nothing in (None, empty):
        r = server.post(route, route_body(route, field, nothing))
        assert r.status_code == 200, (nothing, r.text)


def test_stream_options_fields_are_booleans(server):
    for route, body in (("/v1/completions", {"prompt": "a", "max_tokens": 1}),
                        ("/v1/chat/completions", {"messages": MSGS, "max_tokens": 1})):
        for key in ("include_usage", "continuous_usage_stats"):
            r = server.post(route, {**body, "stream": True, "stream_options": {key: "yes"}})
            assert r.status_code == 400, r.text
            assert f"'stream_options.{key}' must be a boolean" in r.text, r.text
        r = server.post(route, {**body, "stream_options": {"continuous_usage_stats": False}})
        assert r.status_code == 200, r.text