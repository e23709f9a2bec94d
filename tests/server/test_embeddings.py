# Embedding models end to end: sgl-server --is-embedding on the tiny Qwen3 embedding models
# (written by scripts/make_tiny_embedding_model.py) through the official openai client
# (client.embeddings.create: floats, its default base64, token-id inputs) and SGLang's /encode,
# against transformers' committed vectors (tests/engine/data/tiny_qwen3_embedding_reference.json)
# within 1e-4; Ollama's /api/embed through the official ollama client (normalized vectors,
# truncation, dimensions); bad input answers 400 naming the field; generation routes on an
# embedding server
# and embedding routes on a generation server answer 400; bad pooling configs stop the start.
import base64
import concurrent.futures
import json
import shutil
import struct
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO, Server, make_embedding_models, raise_fd_limit, requests, server_binary

openai = pytest.importorskip("openai")

REFERENCE = REPO / "tests" / "engine" / "data" / "tiny_qwen3_embedding_reference.json"
TOL = 1e-4  # transformers' vectors in f32
# The same request again: it may reuse the first one's cached prefix or share another batch, so
# its f32 sums run in another order (a wrong encoding or pooling is off by far more).
REPEAT_TOL = 1e-6
NAME = "tiny-embed"


def reference():
    return json.loads(REFERENCE.read_text())["cases"]


def max_abs_diff(a, b):
    assert len(a) == len(b)
    return max(abs(x - y) for x, y in zip(a, b))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return make_embedding_models(tmp_path_factory.mktemp("models"))


def start(tmp_path_factory, models, variant, *extra):
    raise_fd_limit()
    # Chunks of 16 tokens: the 40- and 100-token prompts are pooled over several prefills.
    return Server(tmp_path_factory.mktemp(variant), "--is-embedding", "--chunked-prefill-size",
                  "16", *extra, model=models / f"tiny-qwen3-embedding-{variant}",
                  served_model_name=NAME)


@pytest.fixture(scope="module")
def last(tmp_path_factory, models):
    srv = start(tmp_path_factory, models, "last")
    yield srv
    assert srv.alive(), "the server died: " + srv.log()
    srv.wait_idle_no_leak()
    assert srv.stop() == 0, srv.log()


@pytest.fixture(scope="module")
def mean(tmp_path_factory, models):
    srv = start(tmp_path_factory, models, "mean", "--disable-overlap-schedule", "--log-requests")
    yield srv
    assert srv.alive(), "the server died: " + srv.log()
    srv.wait_idle_no_leak()
    assert srv.stop() == 0, srv.log()


def client(srv):
    return openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0)


def test_openai_client_float_matches_transformers(last):
    cases = reference()
    texts = [c["text"] for c in cases if "text" in c]
    r = client(last).embeddings.create(model="any-name", input=texts, encoding_format="float")
    assert r.object == "list"
    assert r.model == "any-name"  # SGLang answers with the request's model name
    assert [d.index for d in r.data] == list(range(len(texts)))
    assert all(d.object == "embedding" for d in r.data)
    for d, c in zip(r.data, cases):
        assert max_abs_diff(d.embedding, c["last"]) < TOL, c["text"]
    tokens = sum(len(c["input_ids"]) for c in cases[:len(texts)])
    assert r.usage.prompt_tokens == tokens and r.usage.total_tokens == tokens


def test_openai_client_default_base64_decodes_to_the_same_vectors(last):
    # The client asks for base64 unless told otherwise and decodes it.
    texts = [c["text"] for c in reference() if "text" in c]
    floats = client(last).embeddings.create(model=NAME, input=texts, encoding_format="float")
    decoded = client(last).embeddings.create(model=NAME, input=texts)
    assert len(decoded.data) == len(texts)
    for d, f in zip(decoded.data, floats.data):
        assert max_abs_diff(list(d.embedding), f.embedding) < REPEAT_TOL


def test_explicit_base64_is_little_endian_f32(last):
    text = reference()[0]["text"]
    floats = last.post("/v1/embeddings", {"input": text}).json()["data"][0]["embedding"]
    r = last.post("/v1/embeddings", {"input": text, "encoding_format": "base64"})
    assert r.status_code == 200, r.text
    raw = base64.b64decode(r.json()["data"][0]["embedding"])
    assert len(raw) == 4 * len(floats)
    assert max_abs_diff(struct.unpack(f"<{len(floats)}f", raw), floats) < REPEAT_TOL


def test_token_id_inputs_match_transformers(last):
    cases = reference()
    ids = [c["input_ids"] for c in cases]
    r = client(last).embeddings.create(model=NAME, input=ids, encoding_format="float")
    worst = max(max_abs_diff(d.embedding, c["last"]) for d, c in zip(r.data, cases))
    assert worst < TOL
    assert r.usage.prompt_tokens == sum(len(i) for i in ids)
    one = client(last).embeddings.create(model=NAME, input=ids[3], encoding_format="float")
    assert max_abs_diff(one.data[0].embedding, cases[3]["last"]) < TOL
    print(f"last-token pooling over HTTP: max |sgl.cpp - transformers| {worst:.2e}")


def test_mean_pooling_matches_transformers(mean):
    cases = reference()
    r = client(mean).embeddings.create(model=NAME, input=[c["input_ids"] for c in cases],
                                       encoding_format="float")
    worst = max(max_abs_diff(d.embedding, c["mean"]) for d, c in zip(r.data, cases))
    assert worst < TOL
    texts = [c["text"] for c in cases if "text" in c]
    r = client(mean).embeddings.create(model=NAME, input=texts, encoding_format="float")
    assert max(max_abs_diff(d.embedding, c["mean"]) for d, c in zip(r.data, cases)) < TOL
    print(f"mean pooling over HTTP: max |sgl.cpp - transformers| {worst:.2e}")


def test_log_requests_lines(mean):
    r = mean.post("/v1/embeddings", {"input": [7, 8, 9]})
    assert r.status_code == 200, r.text
    def log():  # all of it (Server.log() keeps the tail)
        mean.log()
        return mean.stderr_path.read_text(errors="replace")

    deadline = time.monotonic() + 10
    while "prompt_tokens=3 completion_tokens=0" not in log():
        assert time.monotonic() < deadline, mean.log()
        time.sleep(0.05)
    assert "embedding model: mean pooling, not normalised" in log()
    # At the default level 2: the input ids as received, the vector at the finish.
    received = [l for l in log().splitlines() if "Receive: rid=" in l and '"input_ids":[7,8,9]' in l]
    assert len(received) == 1, log()
    rid = received[0].split("Receive: rid=", 1)[1].split()[0]
    finished = [l for l in log().splitlines() if f"request rid={rid} " in l]
    assert len(finished) == 1 and ' out={"embedding":[' in finished[0], log()
    vector = json.loads(finished[0].split(" out=", 1)[1])["embedding"]
    assert len(vector) == len(r.json()["data"][0]["embedding"])


def test_concurrent_requests_equal_each_alone(last):
    # Many requests at once share prefill batches and chunks; each vector stays its own.
    cases = reference()
    alone = [last.post("/v1/embeddings", {"input": c["input_ids"]}).json()["data"][0]["embedding"]
             for c in cases]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        futures = [pool.submit(last.post, "/v1/embeddings", {"input": cases[i % len(cases)]
                                                             ["input_ids"]})
                   for i in range(48)]
        for i, f in enumerate(futures):
            r = f.result()
            assert r.status_code == 200, r.text
            assert max_abs_diff(r.json()["data"][0]["embedding"], alone[i % len(cases)]) < 1e-5


@pytest.mark.parametrize("body,field", [
    ({"input": ""}, "input"),
    ({"input": []}, "input"),
    ({"input": [""]}, "input[0]"),
    ({"input": [[1, 2], []]}, "input[1]"),
    ({"input": ["a", [1, 2]]}, "input"),
    ({"input": [1, -2]}, "input"),
    ({"input": {"text": "a"}}, "input"),
    ({"model": NAME}, "input"),
    ({"input": "a", "encoding_format": "int8"}, "encoding_format"),
    ({"input": "a", "dimensions": 64}, "dimensions"),
    ({"input": "a", "dimensions": 0}, "dimensions"),
    ({"input": "a", "user": 3}, "user"),
    ({"input": "a", "image_data": "x.png"}, "image_data"),
    ({"input": "a", "lora_path": "adapter"}, "lora_path"),
    ({"input": "a", "embed_overrides": [[[0.5]]]}, "embed_overrides"),
    ({"input": "a", "embed_override_token_id": 5}, "embed_override_token_id"),
    ({"input": "a", "rid": ["r-1"]}, "rid"),
    ({"input": "a", "priority": "high"}, "priority"),
])
def test_bad_input_answers_400_naming_the_field(last, body, field):
    r = last.post("/v1/embeddings", body)
    assert r.status_code == 400, r.text
    assert f"'{field}'" in r.json()["error"]["message"], r.text


def test_a_priority_reaches_the_scheduler(tmp_path_factory, models):
    # SGLang's priority on the pooling routes is scheduled as a generation request's: here the
    # server refuses one (--abort-on-priority-when-disabled), which it can only do if it got there.
    srv = start(tmp_path_factory, models, "last", "--abort-on-priority-when-disabled")
    try:
        for path, body in [("/v1/embeddings", {"input": "a"}), ("/encode", {"text": "a"})]:
            r = srv.post(path, {**body, "priority": 1})
            assert r.status_code == 503 and "priority is disabled" in r.text, (path, r.text)
            assert srv.post(path, body).status_code == 200, path
    finally:
        assert srv.stop() == 0, srv.log()


@pytest.mark.parametrize("path,prompt", [("/v1/embeddings", "input"), ("/encode", "text")])
def test_a_rid_names_the_request_in_flight(last, path, prompt):
    # SGLang's rid: a second request under the rid of one in flight is refused, and
    # /abort_request ends the one it names. Every engine step takes 2 s more (SGLang's
    # /slow_down), so a request is in flight that long.
    assert last.post("/slow_down", {"forward_sleep_time": 2.0}).status_code == 200
    try:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            first = pool.submit(last.post, path, {prompt: "one", "rid": "emb-1"}, timeout=60)
            time.sleep(0.2)
            second = pool.submit(last.post, path, {prompt: "two", "rid": "emb-1"}, timeout=60)
            replies = sorted([first.result(), second.result()], key=lambda r: r.status_code)
            assert [r.status_code for r in replies] == [200, 400], [r.text for r in replies]
            assert "Duplicate request ID detected: emb-1" in replies[1].text, replies[1].text
            running = pool.submit(last.post, path, {prompt: "three", "rid": "emb-2"}, timeout=60)
            deadline = time.monotonic() + 20
            while last.post("/abort_request", {"rid": "emb-2"}).json()["num_aborted"] == 0:
                assert time.monotonic() < deadline and not running.done(), "never in flight"
                time.sleep(0.01)
            r = running.result()
            assert r.status_code == 503 and "aborted by the client" in r.text, r.text
    finally:
        assert last.post("/slow_down", {"forward_sleep_time": None}).status_code == 200
    assert last.post(path, {prompt: "four", "rid": "emb-1"}).status_code == 200


def test_model_limits_answer_400(last):
    r = last.post("/v1/embeddings", {"input": [[1, 999], [1, 1000]]})  # vocabulary: 1000
    assert r.status_code == 400 and "outside the vocabulary" in r.text, r.text
    r = last.post("/v1/embeddings", {"input": [1] * 512})  # the context: 512
    assert r.status_code == 400 and "context length" in r.text, r.text
    r = last.post("/v1/embeddings", "not json")
    assert r.status_code == 400, r.text


def test_accepted_fields(last):
    plain = last.post("/v1/embeddings", {"input": "a"}).json()["data"][0]["embedding"]
    for extra in ({"user": "someone"}, {"dimensions": 128}, {"unknown_field": 1},
                  {"encoding_format": "float"}, {"model": None}):
        r = last.post("/v1/embeddings", {"input": "a", **extra})
        assert r.status_code == 200, (extra, r.text)
        assert max_abs_diff(r.json()["data"][0]["embedding"], plain) < REPEAT_TOL, extra


def test_encode_native(last):
    cases = reference()
    r = last.post("/encode", {"text": cases[0]["text"], "rid": "my-id"})
    assert r.status_code == 200, r.text
    j = r.json()
    assert max_abs_diff(j["embedding"], cases[0]["last"]) < TOL
    meta = j["meta_info"]
    assert meta["id"] == "my-id"
    assert meta["prompt_tokens"] == len(cases[0]["input_ids"])
    assert meta["finish_reason"] == {"type": "length", "length": 0}
    r = last.post("/encode", {"input_ids": [c["input_ids"] for c in cases[2:4]]})
    assert r.status_code == 200, r.text
    items = r.json()
    assert isinstance(items, list) and len(items) == 2
    for item, c in zip(items, cases[2:4]):
        assert max_abs_diff(item["embedding"], c["last"]) < TOL
    for body, field in [({"text": "a", "sampling_params": {"temperature": 0}}, "sampling_params"),
                        ({"text": "a", "dimensions": 8}, "dimensions"),
                        ({"text": "a", "input_ids": [1]}, "text"),
                        ({"text": ""}, "text"),
                        ({"input_ids": []}, "input_ids")]:
        r = last.post("/encode", body)
        assert r.status_code == 400, (body, r.text)
        assert field in r.json()["error"]["message"], (body, r.text)


@pytest.mark.parametrize("path,body", [
    ("/v1/completions", {"prompt": "a", "max_tokens": 2}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "a"}]}),
    ("/v1/responses", {"input": "a"}),
    ("/v1/messages", {"model": "m", "max_tokens": 2,
                      "messages": [{"role": "user", "content": "a"}]}),
    ("/generate", {"text": "a"}),
])
def test_generation_routes_answer_400_on_an_embedding_server(last, path, body):
    r = last.post(path, body)
    assert r.status_code == 400, r.text
    assert "embedding model" in r.json()["error"]["message"], r.text


@pytest.mark.parametrize("path,body", [("/v1/embeddings", {"input": "a"}),
                                       ("/encode", {"text": "a"})])
def test_embedding_routes_answer_400_on_a_generation_server(server, path, body):
    r = server.post(path, body)
    assert r.status_code == 400, r.text
    assert "--is-embedding" in r.json()["error"]["message"], r.text


def test_ollama_embed_is_the_normalized_vectors(last, server):
    ollama = pytest.importorskip("ollama")
    client = ollama.Client(host=last.url)
    cases = [c for c in reference() if "text" in c]
    texts = [c["text"] for c in cases]

    def unit(v, n=None):
        v = v[:n] if n else v
        norm = sum(x * x for x in v) ** 0.5
        return [x / norm for x in v]

    r = client.embed(model=NAME, input=texts)
    assert r.model == NAME and len(r.embeddings) == len(texts)
    for got, c in zip(r.embeddings, cases):
        assert max_abs_diff(got, unit(c["last"])) < TOL, c["text"]
    assert r.prompt_eval_count == sum(len(c["input_ids"]) for c in cases)
    assert r.total_duration > 0 and r.load_duration == 0
    one = client.embed(model=NAME, input=texts[0])
    assert len(one.embeddings) == 1
    assert max_abs_diff(one.embeddings[0], r.embeddings[0]) < REPEAT_TOL
    # dimensions: the first values, normalized again (Ollama's).
    short = client.embed(model=NAME, input=texts[0], dimensions=8).embeddings[0]
    assert max_abs_diff(short, unit(cases[0]["last"], 8)) < TOL
    # An input past the context: cut to fit by default, refused with truncate false.
    context = last.get("/get_model_info").json()["context_length"]
    long_text = " ".join(["once upon a time"] * context)
    cut = client.embed(model=NAME, input=long_text)
    assert cut.prompt_eval_count == context - 1
    with pytest.raises(ollama.ResponseError) as e:
        client.embed(model=NAME, input=long_text, truncate=False)
    assert e.value.status_code == 400 and "context" in e.value.error
    for body, words in [({"input": []}, "input"), ({"input": [1]}, "input[0]"),
                        ({"input": "a", "options": {"temperature": 0.5}}, "options"),
                        ({"input": "a", "dimensions": 100000}, "dimensions"),
                        ({"input": "a", "prompt": "b"}, "prompt")]:
        bad = last.post("/api/embed", {"model": NAME, **body})
        assert bad.status_code in (400, 501) and words in bad.json()["error"], (body, bad.text)
    assert "embedding" in client.show(NAME).capabilities
    # The older /api/embeddings: one prompt, the model's own vector (not normalized, as Ollama's).
    legacy = client.embeddings(model=NAME, prompt=texts[0])
    assert max_abs_diff(legacy.embedding, cases[0]["last"]) < TOL
    assert client.embeddings(model=NAME, prompt="").embedding == []
    bad = last.post("/api/embeddings", {"model": NAME, "prompt": "a", "input": "b"})
    assert bad.status_code == 400 and "input" in bad.json()["error"], bad.text
    # A generation server has no embeddings to give.
    refused = server.post("/api/embed", {"model": "m", "input": "a"})
    assert refused.status_code == 400 and "--is-embedding" in refused.json()["error"]


def test_model_info_and_health(last, server):
    assert last.get("/get_model_info").json()["is_generation"] is False
    assert server.get("/get_model_info").json()["is_generation"] is True
    assert last.get("/health_generate").status_code == 200
    assert last.get("/v1/models").json()["data"][0]["id"] == NAME


def test_health_probes_count_in_no_request_metric(last):
    # SGLang's probe request has log_metrics=False: a Kubernetes probe every few seconds is not
    # user traffic in sglang:num_requests_total or sglang:prompt_tokens_total.
    def counted():
        text = last.get("/metrics").text
        return [sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                    if line.startswith(name + "{"))
                for name in ("sglang:num_requests_total", "sglang:prompt_tokens_total")]

    assert last.post("/v1/embeddings", {"input": [7, 8]}).status_code == 200
    before = counted()
    assert before[0] >= 1 and before[1] >= 2, before
    for path in ("/health", "/health_generate"):
        assert last.get(path).status_code == 200
    assert counted() == before


def start_failure(tmp_path, model, *flags):
    """Starts sgl-server expecting it to exit; returns (exit code, stderr)."""
    binary = server_binary()
    if binary is None or requests is None:
        pytest.skip("sgl-server or the requests package is missing")
    err = tmp_path / f"err-{time.monotonic_ns()}.txt"
    with open(err, "wb") as f:
        proc = subprocess.run([str(binary), "--model-path", str(model), "--port", "0", *flags],
                              stdout=subprocess.PIPE, stderr=f, timeout=60)
    assert b"listening on" not in proc.stdout
    return proc.returncode, err.read_text(errors="replace")


def copy_model(models, tmp_path, variant="last"):
    dst = tmp_path / "model"
    shutil.copytree(models / f"tiny-qwen3-embedding-{variant}", dst)
    return dst


@pytest.mark.parametrize("pooling,words", [
    ({"pooling_mode_cls_token": True, "pooling_mode_lasttoken": False},
     ["pooling_mode_cls_token", "not supported"]),
    ({"pooling_mode_mean_tokens": True}, ["pooling_mode_lasttoken and pooling_mode_mean_tokens"]),
    ({"pooling_mode_lasttoken": False}, ["no pooling_mode_* is true"]),
    ({"include_prompt": False}, ["include_prompt"]),
    ({"word_embedding_dimension": 64}, ["word_embedding_dimension 64"]),
])
def test_unsupported_pooling_stops_the_start(models, tmp_path, pooling, words):
    model = copy_model(models, tmp_path)
    config = model / "1_Pooling" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), **pooling}))
    code, log = start_failure(tmp_path, model, "--is-embedding")
    assert code == 1, log
    for word in words:
        assert word in log, log


def test_unsupported_modules_stop_the_start(models, tmp_path):
    model = copy_model(models, tmp_path)
    modules = json.loads((model / "modules.json").read_text())
    modules.append({"idx": 3, "name": "3", "path": "3_Dense",
                    "type": "sentence_transformers.models.Dense"})
    (model / "modules.json").write_text(json.dumps(modules))
    code, log = start_failure(tmp_path, model, "--is-embedding")
    assert code == 1 and "sentence_transformers.models.Dense" in log, log
    modules[1]["path"] = "../elsewhere"
    (model / "modules.json").write_text(json.dumps(modules[:2]))
    code, log = start_failure(tmp_path, model, "--is-embedding")
    assert code == 1 and "leaves the model directory" in log, log


def test_without_modules_json_last_token_pooling_is_normalised(models, tmp_path_factory):
    # SGLang's default for Qwen3 / Llama embedding models: the last-token variant's vectors.
    model = copy_model(models, tmp_path_factory.mktemp("bare"), "mean")
    (model / "modules.json").unlink()
    raise_fd_limit()
    srv = Server(tmp_path_factory.mktemp("bare-server"), "--is-embedding", model=model,
                 served_model_name=NAME)
    try:
        case = reference()[3]
        r = srv.post("/v1/embeddings", {"input": case["input_ids"]})
        assert r.status_code == 200, r.text
        assert max_abs_diff(r.json()["data"][0]["embedding"], case["last"]) < TOL
    finally:
        assert srv.stop() == 0, srv.log()


def test_skip_tokenizer_init_embeds_token_ids_and_refuses_text(models, tmp_path_factory):
    # SGLang's --skip-tokenizer-init on an embedding model: token-id inputs embed as with the
    # tokenizer (/v1/embeddings and /encode); text answers 400.
    raise_fd_limit()
    srv = Server(tmp_path_factory.mktemp("ids-only"), "--is-embedding", "--skip-tokenizer-init",
                 model=models / "tiny-qwen3-embedding-last", served_model_name=NAME)
    try:
        cases = reference()
        r = srv.post("/v1/embeddings", {"input": [c["input_ids"] for c in cases]})
        assert r.status_code == 200, r.text
        worst = max(max_abs_diff(d["embedding"], c["last"])
                    for d, c in zip(r.json()["data"], cases))
        assert worst < TOL
        r = srv.post("/encode", {"input_ids": cases[0]["input_ids"]})
        assert r.status_code == 200, r.text
        assert max_abs_diff(r.json()["embedding"], cases[0]["last"]) < TOL
        for path, body in (("/v1/embeddings", {"input": "a text"}), ("/encode", {"text": "a"}),
                           ("/api/embed", {"model": NAME, "input": "a"})):
            r = srv.post(path, body)
            assert r.status_code == 400 and "--skip-tokenizer-init" in r.text, (path, r.text)
    finally:
        assert srv.stop() == 0, srv.log()


def test_chat_template_with_is_embedding_is_refused(models, tmp_path):
    template = tmp_path / "t.jinja"
    template.write_text("{{ messages }}")
    code, log = start_failure(tmp_path, models / "tiny-qwen3-embedding-last", "--is-embedding",
                              "--chat-template", str(template))
    assert code == 2 and "--chat-template with --is-embedding" in log, log


def test_openai_sized_input_lists(last):
    # OpenAI takes up to 2048 inputs a request (SGLang has no limit); one more is refused.
    client = openai.OpenAI(base_url=last.url + "/v1", api_key="unused", max_retries=0)
    out = client.embeddings.create(model=NAME, input=[f"text {i}" for i in range(2048)],
                                   encoding_format="float")
    assert [d.index for d in out.data] == list(range(2048))
    r = last.post("/v1/embeddings", {"model": NAME, "input": ["x"] * 2049})
    assert r.status_code == 400 and "at most 2048" in r.json()["error"]["message"]


def test_classify_needs_a_classification_model(last):
    # An embedding model has no labels: SGLang's /v1/classify is for classifiers
    # (tests/server/test_classify.py); /classify is /encode there and here.
    r = last.post("/v1/classify", {"input": "Once upon a time"})
    assert r.status_code == 400, r.text
    assert "has no labels" in r.json()["error"]["message"], r.text
    classified = last.post("/classify", {"text": "Once upon a time"}).json()["embedding"]
    encoded = last.post("/encode", {"text": "Once upon a time"}).json()["embedding"]
    assert max_abs_diff(classified, encoded) < REPEAT_TOL
