# sgl-server behind 2 engine replicas (--dp-size 2) on stories260K: greedy and seeded outputs equal
# one replica's on every route (n > 1 and streaming included), both replicas serve requests
# (/get_server_info, /v1/loads, /metrics per replica), aborts and disconnects reach the right
# replica without KV leaks, /flush_cache empties every replica, cache_aware keeps a shared prefix on
# one replica (its hit rate beats round_robin's on the same workload), the embedding routes work
# behind 2 replicas, SIGTERM stops them all, and bad --dp-size / --load-balance-method values stop
# the start.
import concurrent.futures
import json
import subprocess
import threading
import time

import pytest

from conftest import (MODEL, Server, golden, make_embedding_models, raise_fd_limit, requests,
                      server_binary)

PROMPTS = [c["prompt"] for c in golden()["cases"]]


def start(tmp_path_factory, name, *extra):
    raise_fd_limit()
    return Server(tmp_path_factory.mktemp(name), *extra)


@pytest.fixture(scope="module")
def dp1(tmp_path_factory):
    srv = start(tmp_path_factory, "dp1", "--dp-size", "1")
    yield srv
    assert srv.stop() == 0, srv.log()


@pytest.fixture(scope="module")
def dp2(tmp_path_factory):
    srv = start(tmp_path_factory, "dp2", "--dp", "2", "--load-balance-method", "round_robin")
    yield srv
    assert srv.alive(), "the server died: " + srv.log()
    srv.wait_idle_no_leak()
    assert srv.stop() == 0, srv.log()


def generate(srv, text, **sampling):
    body = {"text": text, "sampling_params": {"temperature": 0, "max_new_tokens": 24, **sampling}}
    r = srv.post("/generate", body)
    assert r.status_code == 200, r.text
    return r.json()


def completion_texts(srv, body):
    r = srv.post("/v1/completions", {"model": "stories260K", **body})
    assert r.status_code == 200, r.text
    return [c["text"] for c in sorted(r.json()["choices"], key=lambda c: c["index"])]


def test_greedy_and_seeded_outputs_equal_one_replica(dp1, dp2):
    for prompt in PROMPTS:
        assert generate(dp2, prompt)["text"] == generate(dp1, prompt)["text"], prompt
    # n > 1: each sample seeded seed + i, wherever it runs.
    body = {"prompt": PROMPTS[0], "max_tokens": 16, "temperature": 0.9, "seed": 7, "n": 3}
    assert completion_texts(dp2, body) == completion_texts(dp1, body)
    chat = {"model": "stories260K", "max_tokens": 12, "temperature": 0,
            "messages": [{"role": "user", "content": PROMPTS[1]}]}
    a = dp2.post("/v1/chat/completions", chat).json()["choices"][0]["message"]["content"]
    b = dp1.post("/v1/chat/completions", chat).json()["choices"][0]["message"]["content"]
    assert a == b


def stream_text(srv, path, body, field):
    text = ""
    with requests.post(srv.url + path, json=body, stream=True, timeout=60) as r:
        assert r.status_code == 200, r.text
        for line in r.iter_lines():
            if line.startswith(b"data: ") and line != b"data: [DONE]":
                text += field(json.loads(line[6:]))
    return text


def test_streaming_equals_one_replica(dp1, dp2):
    body = {"model": "stories260K", "prompt": PROMPTS[2], "max_tokens": 20, "temperature": 0,
            "stream": True}

    def field(chunk):
        return chunk["choices"][0]["text"] if chunk["choices"] else ""

    assert stream_text(dp2, "/v1/completions", body, field) == stream_text(
        dp1, "/v1/completions", body, field)
    native = {"text": PROMPTS[3], "stream": True,
              "sampling_params": {"temperature": 0, "max_new_tokens": 10}}
    last = {}
    stream_text(dp2, "/generate", native, lambda c: last.update(c) or "")
    assert last["text"] == generate(dp1, PROMPTS[3], max_new_tokens=10)["text"]


def test_every_generation_route_answers(dp2):
    r = dp2.post("/v1/responses", {"model": "m", "input": "hi", "max_output_tokens": 4})
    assert r.status_code == 200 and r.json()["output"][0]["content"][0]["text"], r.text
    r = dp2.post("/v1/messages", {"model": "m", "max_tokens": 4,
                                  "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 200 and r.json()["type"] == "message", r.text
    # Many at once, from many HTTP threads: every one answered.
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        texts = list(pool.map(lambda i: generate(dp2, PROMPTS[i % len(PROMPTS)])["text"],
                              range(24)))
    assert all(texts)


def test_both_replicas_served_and_report_their_load(dp2):
    for prompt in PROMPTS:
        generate(dp2, prompt, max_new_tokens=4)
    info = dp2.get("/get_server_info").json()
    assert info["dp_size"] == 2 and info["load_balance_method"] == "round_robin"
    states = info["internal_states"]
    assert [s["dp_rank"] for s in states] == [0, 1]
    for s in states:
        assert s["routed_requests_total"] > 0 and s["finished_requests_total"] > 0, states
    assert info["max_total_num_tokens"] == sum(s["kv_capacity"] for s in states)
    loads = dp2.get("/v1/loads").json()["loads"]
    assert [l["dp_rank"] for l in loads] == [0, 1]
    metrics = dp2.get("/metrics").text
    for rank in (0, 1):
        assert f'sgl:dp_num_running_reqs{{model_name="stories260K",dp_rank="{rank}"}}' in metrics
        assert f'sgl:dp_cache_hit_rate{{model_name="stories260K",dp_rank="{rank}"}}' in metrics


# SGLang's routed_dp_rank (and its older name data_parallel_rank) names the replica; the load
# balancer is not asked.
def test_routed_dp_rank_names_the_replica(dp1, dp2):
    def routed():
        return [s["routed_requests_total"] for s in dp2.get("/get_server_info").json()[
            "internal_states"]]

    before = routed()
    generate_body = {"text": PROMPTS[0], "sampling_params": {"max_new_tokens": 2},
                     "routed_dp_rank": 1}
    assert dp2.post("/generate", generate_body).status_code == 200
    chat = {"messages": [{"role": "user", "content": PROMPTS[0]}], "max_tokens": 2}
    for body in [{**chat, "data_parallel_rank": 1}, {**chat, "routed_dp_rank": 1, "n": 2}]:
        r = dp2.post("/v1/chat/completions", body)
        assert r.status_code == 200, r.text
    r = dp2.post("/v1/completions", {"prompt": PROMPTS[0], "max_tokens": 2, "routed_dp_rank": 0})
    assert r.status_code == 200, r.text
    after = routed()
    assert [a - b for a, b in zip(after, before)] == [1, 4], (before, after)
    for server, body, words in [
            (dp2, {**chat, "routed_dp_rank": 2}, "names no engine replica (--dp-size 2)"),
            (dp1, {**chat, "routed_dp_rank": 1}, "names no engine replica (--dp-size 1)"),
            (dp2, {**chat, "routed_dp_rank": -1}, "must be >= 0"),
            (dp2, {**chat, "routed_dp_rank": 0, "data_parallel_rank": 1}, "different replicas")]:
        r = server.post("/v1/chat/completions", body)
        assert r.status_code == 400 and words in r.text, r.text
    assert dp1.post("/v1/chat/completions", {**chat, "routed_dp_rank": 0}).status_code == 200


def test_abort_by_rid_and_disconnects_reach_every_replica(dp2):
    results = {}

    def run(rid):
        results[rid] = dp2.post("/generate", {"text": PROMPTS[0], "rid": rid,
                                              "sampling_params": {"max_new_tokens": 480,
                                                                  "ignore_eos": True}}).json()

    # Round robin: the four land on both replicas.
    threads = [threading.Thread(target=run, args=(f"abort-{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while sum(s["num_running_reqs"] + s["num_waiting_reqs"] for s in dp2.states()) < 4:
        assert time.monotonic() < deadline, "the requests never all ran"
        time.sleep(0.01)
    assert [s["num_running_reqs"] + s["num_waiting_reqs"] for s in dp2.states()] == [2, 2]
    assert dp2.post("/abort_request", {"abort_all": True}).json()["num_aborted"] == 4
    for t in threads:
        t.join(30)
    assert {r["meta_info"]["finish_reason"]["type"] for r in results.values()} == {"abort"}
    # A client that goes away mid-stream: its requests end on their replicas.
    for _ in range(2):
        r = requests.post(dp2.url + "/v1/completions", json={
            "model": "m", "prompt": PROMPTS[1], "max_tokens": 480, "ignore_eos": True,
            "stream": True, "n": 2}, stream=True, timeout=30)
        next(r.iter_lines())
        r.close()
    dp2.wait_idle_no_leak()


def test_flush_cache_empties_every_replica(dp2):
    for prompt in PROMPTS[:4]:
        generate(dp2, prompt, max_new_tokens=2)
    dp2.wait_idle_no_leak()
    assert dp2.post("/flush_cache").status_code == 200
    assert [s["kv_cached"] for s in dp2.states()] == [0, 0]


def shared_prefix_workload(srv):
    """3 long shared prefixes x 4 questions, interleaved; the cached prompt tokens per request."""
    prefixes = [f"{p} {p} {p} and then they all went home." for p in PROMPTS[:3]]
    cached = []
    for question in ["Why?", "Who was there?", "What happened next?", "Where?"]:
        for prefix in prefixes:
            meta = generate(srv, prefix + " " + question, max_new_tokens=1)["meta_info"]
            cached.append((meta["cached_tokens"], meta["prompt_tokens"]))
    return cached


def hit_rate(srv):
    states = srv.states()
    return (sum(s["cached_prompt_tokens_total"] for s in states) /
            sum(s["prompt_tokens_total"] for s in states))


def test_cache_aware_keeps_shared_prefixes_on_one_replica(tmp_path_factory, dp2):
    aware = start(tmp_path_factory, "aware", "--dp-size", "2", "--load-balance-method",
                  "cache_aware")
    try:
        cached = shared_prefix_workload(aware)
        # Every repeat of a prefix found it cached: it went where the prefix went.
        for hit, prompt in cached[3:]:
            assert hit >= prompt // 2, cached
        states = aware.states()
        assert all(s["routed_requests_total"] > 0 for s in states), states  # cold ones spread
        dp2.post("/flush_cache")
        dp2.wait_idle_no_leak()
        before = [(s["cached_prompt_tokens_total"], s["prompt_tokens_total"])
                  for s in dp2.states()]
        shared_prefix_workload(dp2)
        after = dp2.states()
        rr = (sum(s["cached_prompt_tokens_total"] for s in after) - sum(b[0] for b in before)) / (
            sum(s["prompt_tokens_total"] for s in after) - sum(b[1] for b in before))
        assert hit_rate(aware) > rr + 0.1, (hit_rate(aware), rr)
    finally:
        assert aware.stop() == 0, aware.log()


def test_embeddings_behind_two_replicas(tmp_path_factory):
    models = make_embedding_models(tmp_path_factory.mktemp("models"))
    model = models / "tiny-qwen3-embedding-last"
    raise_fd_limit()
    one = Server(tmp_path_factory.mktemp("e1"), "--is-embedding", model=model,
                 served_model_name="e")
    two = Server(tmp_path_factory.mktemp("e2"), "--is-embedding", "--dp-size", "2",
                 "--load-balance-method", "shortest_queue", model=model, served_model_name="e")
    try:
        inputs = ["hello world", "a b c d", "the quick brown fox", "x"]
        a = one.post("/v1/embeddings", {"model": "e", "input": inputs}).json()["data"]
        b = two.post("/v1/embeddings", {"model": "e", "input": inputs}).json()["data"]
        for x, y in zip(a, b):
            assert max(abs(p - q) for p, q in zip(x["embedding"], y["embedding"])) < 1e-5
        assert all(s["routed_requests_total"] > 0 for s in two.states())
    finally:
        assert one.stop() == 0, one.log()
        assert two.stop() == 0, two.log()


@pytest.mark.parametrize("args, message", [
    (["--dp-size", "0"], "--dp-size must be in [1, 64]"),
    (["--dp", "-2"], "--dp-size must be in [1, 64]"),
    (["--dp-size", "2", "--load-balance-method", "random"], "'random'"),
])
def test_bad_values_stop_the_start(args, message):
    binary = server_binary()
    if binary is None or not MODEL.exists():
        pytest.skip("sgl-server or the model is missing")
    out = subprocess.run([str(binary), "--model-path", str(MODEL), "--port", "0", *args],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and message in out.stderr, out.stderr
