# What SGLang and OpenAI clients probe beyond the core API: SGLang 0.5's endpoint names beside
# the older ones, /ping, /version, /v1/loads, /v1/tokenize, the native parsers
# (/parse_function_call, /separate_reasoning); any `model` name served and echoed,
# as SGLang does; CORS for browser clients (preflight and response headers, allow-all by
# default, restricted by --allowed-origins).
import json
import socket

import pytest

from conftest import Server, raise_fd_limit, requests

ORIGIN = "http://ui.example:5173"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    raise_fd_limit()
    srv = Server(tmp_path_factory.mktemp("compat"))
    yield srv
    assert srv.stop() == 0, srv.log()


@pytest.fixture(scope="module")
def restricted(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("cors"), "--allowed-origins",
                 '["http://allowed.example", "https://app.example:8443"]')
    yield srv
    assert srv.stop() == 0, srv.log()


def test_sglang_05_names_answer_as_the_old_ones(server):
    for new, old in [("/server_info", "/get_server_info"), ("/model_info", "/get_model_info")]:
        a, b = server.get(new), server.get(old)
        assert a.status_code == b.status_code == 200
        assert a.json().keys() == b.json().keys()
    info = server.get("/model_info").json()
    assert info["tokenizer_path"] == info["model_path"]
    assert server.get("/server_info").json()["version"] == server.get("/version").json()["version"]
    assert server.get("/version").json()["version"].startswith("sgl.cpp")
    for method in (server.get, server.post):
        assert method("/ping").status_code == 200
    assert server.get("/ready").status_code == 200  # SGLang's readiness probe
    root = server.get("/")  # SGLang's answers "SGLang is running"
    assert root.status_code == 200 and root.json() == "sgl.cpp is running"


def test_freeze_gc_answers_as_sglang(server):
    # Nothing to freeze (no garbage collector), but scripts that call it after a warm-up work.
    for method in (server.get, server.post):
        r = method("/freeze_gc")
        assert r.status_code == 200 and r.text == "Garbage collection frozen.\n", r.text
    r = server.post("/freeze_gc", {"gc_threshold": [1]})  # it takes no fields
    assert r.status_code == 400 and "gc_threshold" in r.json()["error"]["message"], r.text


def test_invocations_is_chat_completions(server):
    # SageMaker's inference route (with /ping its health check), SGLang's chat completions.
    body = {"model": "m", "messages": [{"role": "user", "content": "Once"}], "max_tokens": 6,
            "temperature": 0}
    a, b = server.post("/invocations", body), server.post("/v1/chat/completions", body)
    assert a.status_code == b.status_code == 200, a.text
    assert a.json()["choices"] == b.json()["choices"]
    assert a.json()["object"] == "chat.completion"


def test_loads_report_the_running_state(server):
    # A finished request leaves its tokens in the prefix cache, which counts as free (SGLang's
    # num_used_tokens / token_usage), idle or not.
    server.post("/generate", {"text": "Once upon a time", "sampling_params": {"max_new_tokens": 8}})
    server.wait_idle_no_leak()
    assert sum(s["kv_cached"] for s in server.states()) > 0
    loads = server.get("/v1/loads").json()["loads"]
    assert len(loads) == len(server.states())  # one per --dp-size replica
    rank = loads[0]
    assert rank["dp_rank"] == 0 and rank["num_reqs"] == 0
    assert rank["max_total_num_tokens"] > 0 and rank["max_running_requests"] > 0
    for r in loads:
        assert r["token_usage"] == 0 and r["num_used_tokens"] == 0 and r["num_total_tokens"] == 0
    metrics = server.get("/metrics").text
    assert 'sglang:token_usage{model_name="stories260K"} 0.0' in metrics, metrics


def test_server_info_has_what_sglang_scripts_read(server):
    info = server.get("/server_info").json()
    assert info["tokenizer_path"] == info["model_path"]
    for state in info["internal_states"]:
        assert state["effective_max_running_requests_per_dp"] > 0
        assert state["last_gen_throughput"] >= 0


def test_v1_tokenize_is_tokenize(server):
    body = {"prompt": "Once upon a time"}
    a, b = server.post("/v1/tokenize", body), server.post("/tokenize", body)
    assert a.status_code == 200 and a.json() == b.json()
    ids = a.json()["tokens"]
    d = server.post("/v1/detokenize", {"tokens": ids})
    assert d.status_code == 200 and "Once upon a time" in d.json()["text"]


WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}
TIME = {"type": "function", "function": {"name": "get_time"}}


@pytest.mark.parametrize("parser,text", [
    ("qwen25", 'Sure. <tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>\n'
               '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
               '</tool_call>'),
    ("llama3", 'Sure. <|python_tag|>{"name": "get_time", "parameters": {}}; '
               '{"name": "get_weather", "parameters": {"city": "Paris"}}'),
    ("pythonic", 'Sure. [get_time(), get_weather(city="Paris")]'),
])
def test_parse_function_call(server, parser, text):
    # SGLang's native parser endpoint: the text's calls in the named format, tool_index the
    # function's place in `tools`; a call to a function not offered is dropped (SGLang's), and
    # the calls around it are read.
    r = server.post("/parse_function_call", {"text": text, "tool_call_parser": parser,
                                             "tools": [WEATHER, TIME]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["normal_text"] == "Sure."
    assert [(c["tool_index"], c["name"], json.loads(c["parameters"])) for c in body["calls"]] == [
        (1, "get_time", {}), (0, "get_weather", {"city": "Paris"})]
    r = server.post("/parse_function_call", {"text": text, "tool_call_parser": parser,
                                             "tools": [TIME]})
    assert [(c["tool_index"], c["name"]) for c in r.json()["calls"]] == [(0, "get_time")], r.text
    assert r.json()["normal_text"] == "Sure."
    r = server.post("/parse_function_call", {"text": text, "tool_call_parser": parser,
                                             "tools": [WEATHER]})
    assert [(c["tool_index"], c["name"]) for c in r.json()["calls"]] == [(0, "get_weather")], r.text
    assert r.json()["normal_text"] == "Sure."


def test_separate_reasoning(server):
    text = "<think>Sum the digits.</think>The answer is 7."
    r = server.post("/separate_reasoning", {"text": text, "reasoning_parser": "qwen3"})
    assert r.status_code == 200, r.text
    assert r.json() == {"reasoning_text": "Sum the digits.", "text": "The answer is 7."}
    blocks = server.post("/separate_reasoning", {"text": text, "reasoning_parser": "qwen3",
                                                 "return_blocks": True}).json()
    assert blocks["blocks"] == [{"type": "reasoning", "text": "Sum the digits."},
                                {"type": "text", "text": "The answer is 7."}]
    assert blocks["reasoning_blocks"] == ["Sum the digits."]
    assert blocks["text_blocks"] == ["The answer is 7."]
    # deepseek-r1's output starts inside the reasoning.
    r1 = server.post("/separate_reasoning", {"text": "hmm</think>ok",
                                             "reasoning_parser": "deepseek-r1"}).json()
    assert (r1["reasoning_text"], r1["text"]) == ("hmm", "ok")
    # The blocks always end with the text, empty if need be (SGLang's).
    unclosed = server.post("/separate_reasoning", {"text": "hmm", "reasoning_parser": "deepseek-r1",
                                                   "return_blocks": True}).json()
    assert unclosed["blocks"] == [{"type": "reasoning", "text": "hmm"}, {"type": "text", "text": ""}]
    assert unclosed["text_blocks"] == [""]


@pytest.mark.parametrize("path,body,field", [
    ("/parse_function_call", {"text": "x", "tool_call_parser": "nope"}, "--tool-call-parser"),
    ("/parse_function_call", {"text": "x"}, "tool_call_parser"),
    ("/parse_function_call", {"text": 1, "tool_call_parser": "qwen25"}, "text"),
    ("/parse_function_call", {"text": "x", "tool_call_parser": "qwen25", "tools": 3}, "tools"),
    ("/parse_function_call", {"text": "x", "tool_call_parser": "qwen25", "extra": 1}, "extra"),
    ("/separate_reasoning", {"text": "x", "reasoning_parser": "r2"}, "--reasoning-parser"),
    ("/separate_reasoning", {"text": "x", "reasoning_parser": "qwen3", "return_blocks": "y"},
     "return_blocks"),
])
def test_parse_endpoints_refuse_bad_input(server, path, body, field):
    r = server.post(path, body)
    assert r.status_code == 400 and field in r.json()["error"]["message"], r.text


def test_any_model_name_is_served_and_echoed(server):
    r = server.post("/v1/completions", {"model": "gpt-4o", "prompt": "Once", "max_tokens": 2})
    assert r.status_code == 200, r.text
    assert r.json()["model"] == "gpt-4o"
    r = server.post("/v1/chat/completions",
                    {"model": "meta-llama/Llama-3.1-8B-Instruct", "max_tokens": 2,
                     "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 200, r.text
    assert r.json()["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    # Without a model, the served name; /v1/models still lists only the served name.
    r = server.post("/v1/completions", {"prompt": "Once", "max_tokens": 1})
    assert r.json()["model"] == "stories260K"
    assert [m["id"] for m in server.get("/v1/models").json()["data"]] == ["stories260K"]


def test_cors_allows_every_origin_by_default(server):
    r = requests.options(server.url + "/v1/chat/completions", timeout=10, headers={
        "Origin": ORIGIN, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert r.status_code == 204
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    assert "POST" in r.headers["Access-Control-Allow-Methods"]
    assert r.headers["Access-Control-Allow-Headers"] == "authorization, content-type"
    # The actual call, plain and streaming, carries the header too.
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}
    r = requests.post(server.url + "/v1/chat/completions", json=body, timeout=60,
                      headers={"Origin": ORIGIN})
    assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == "*"
    r = requests.post(server.url + "/v1/chat/completions", json={**body, "stream": True},
                      timeout=60, headers={"Origin": ORIGIN}, stream=True)
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    assert b"[DONE]" in r.content
    # Errors too (the browser must be able to read them).
    r = requests.post(server.url + "/v1/chat/completions", data="{", timeout=10,
                      headers={"Origin": ORIGIN})
    assert r.status_code == 400 and r.headers["Access-Control-Allow-Origin"] == "*"
    # Also a body refused by its declared size, before any handler runs.
    with socket.create_connection((server.host, server.port), timeout=10) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nOrigin: " + ORIGIN.encode() +
                  b"\r\nContent-Length: 99999999999\r\n\r\n")
        head = s.recv(4096).split(b"\r\n\r\n")[0].decode()
    assert head.startswith("HTTP/1.1 413") and "Access-Control-Allow-Origin: *" in head, head
    # No Origin: no CORS header.
    assert "Access-Control-Allow-Origin" not in server.get("/health").headers


def test_allowed_origins_restrict(restricted):
    url = restricted.url + "/v1/completions"
    ask = {"Access-Control-Request-Method": "POST"}
    ok = requests.options(url, headers={"Origin": "https://app.example:8443", **ask}, timeout=10)
    assert ok.status_code == 204
    assert ok.headers["Access-Control-Allow-Origin"] == "https://app.example:8443"
    assert ok.headers["Vary"] == "Origin"
    refused = requests.options(url, headers={"Origin": ORIGIN, **ask}, timeout=10)
    assert refused.status_code == 403 and "not allowed" in refused.json()["error"]["message"]
    assert "Access-Control-Allow-Origin" not in refused.headers
    # A disallowed origin's request runs (CORS is the browser's to enforce) but carries no
    # header, so a browser refuses to hand the answer to the page.
    r = requests.post(url, json={"prompt": "a", "max_tokens": 1}, headers={"Origin": ORIGIN},
                      timeout=60)
    assert r.status_code == 200 and "Access-Control-Allow-Origin" not in r.headers
    r = requests.post(url, json={"prompt": "a", "max_tokens": 1},
                      headers={"Origin": "http://allowed.example"}, timeout=60)
    assert r.headers["Access-Control-Allow-Origin"] == "http://allowed.example"


def model_with_generation_config(tmp_path, generation_config):
    """stories260K's files beside a generation_config.json of our own."""
    from conftest import MODEL
    model = tmp_path / "model"
    model.mkdir()
    for f in MODEL.iterdir():
        (model / f.name).symlink_to(f)
    (model / "generation_config.json").write_text(json.dumps(generation_config))
    return model


def completion_ids(srv, **fields):
    r = srv.post("/generate", {"text": "Once upon a time",
                               "sampling_params": {"max_new_tokens": 24, "sampling_seed": 7,
                                                   **fields}})
    assert r.status_code == 200, r.text
    return r.json()["output_ids"]


def test_sampling_defaults_come_from_generation_config(tmp_path):
    # The model recommends greedy decoding: requests that leave temperature out get it, unless
    # --sampling-defaults openai; a request's own temperature always wins.
    model = model_with_generation_config(tmp_path, {"temperature": 0.0, "top_k": 40,
                                                    "eos_token_id": 2})
    srv = Server(tmp_path, model=model)
    try:
        greedy = completion_ids(srv, temperature=0)
        assert completion_ids(srv) == greedy
        assert completion_ids(srv, temperature=1.0) != greedy
        # The OpenAI route starts from the same defaults: greedy, so two seeds agree.
        texts = [srv.post("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 24,
                                              "seed": seed}).json()["choices"][0]["text"]
                 for seed in (1, 2)]
        assert texts[0] == texts[1]
    finally:
        assert srv.stop() == 0
    assert "sampling defaults (--sampling-defaults model): temperature 0, top_p 1, top_k 40" \
        in srv.stderr_path.read_text()
    srv = Server(tmp_path, "--sampling-defaults", "openai", model=model)
    try:
        assert completion_ids(srv) == completion_ids(srv, temperature=1.0) != greedy
    finally:
        assert srv.stop() == 0


def test_out_of_range_generation_config_values_are_not_defaults(tmp_path):
    # The recommendation is advice: a value no request could set is left out with a warning,
    # the others still apply, and the model serves.
    model = model_with_generation_config(tmp_path, {"top_p": 1.5, "temperature": 0.0})
    srv = Server(tmp_path, model=model)
    try:
        assert completion_ids(srv) == completion_ids(srv, temperature=0)
    finally:
        assert srv.stop() == 0
    log = srv.stderr_path.read_text()
    assert "'top_p' 1.5 is outside the range a request may set" in log
    assert "sampling defaults (--sampling-defaults model): temperature 0, top_p 1," in log
