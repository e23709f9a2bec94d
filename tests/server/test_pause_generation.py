# SGLang's /pause_generation and /continue_generation (RL trainers pause around a weight sync):
# a paused server runs nothing, its readiness probe says 503 while /ping stays 200, requests
# sent meanwhile wait; retract frees the KV so the cache flushes, and on continue a retracted
# request ends with the tokens it would have had; abort (the default) ends what runs.
import threading
import time

import pytest

from conftest import Server, raise_fd_limit, requests

LONG = {"max_new_tokens": 120, "ignore_eos": True, "temperature": 0}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    raise_fd_limit()
    srv = Server(tmp_path_factory.mktemp("pause"))
    yield srv
    assert srv.stop() == 0, srv.log()


def generate(server, text, sampling=LONG):
    r = server.post("/generate", {"text": text, "sampling_params": sampling}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def in_background(fn):
    result = {}
    t = threading.Thread(target=lambda: result.update(r=fn()))
    t.start()
    return t, result


def total(server, key):
    """`key` summed over the engine replicas (one, or --dp-size of them)."""
    return sum(s[key] for s in server.states())


def wait_running(server, n=1):
    deadline = time.monotonic() + 10
    while total(server, "num_running_reqs") < n:
        assert time.monotonic() < deadline, "the request never ran"
        time.sleep(0.01)


def status(server, path):
    return server.get(path).status_code


def test_bad_bodies_are_refused(server):
    for body, field in (({"mode": "later"}, "mode"), ({"mode": 3}, "mode"),
                        ({"rid": "x"}, "rid")):
        r = server.post("/pause_generation", body)
        assert r.status_code == 400 and field in r.text, (body, r.text)
    r = server.post("/continue_generation", {"empty_cache": True})
    assert r.status_code == 400 and "empty_cache" in r.text, r.text
    assert status(server, "/ready") == 200  # nothing was paused


def test_retract_pauses_frees_the_kv_and_continues_exactly(server):
    solo = generate(server, "Once upon a time")
    # Steps slowed so the request still runs when the pause comes.
    assert server.post("/slow_down", {"forward_sleep_time": 0.01}).status_code == 200
    try:
        t, result = in_background(lambda: generate(server, "Once upon a time"))
        wait_running(server)
        r = server.post("/pause_generation", {"mode": "retract"})
        assert r.status_code == 200, r.text
        assert r.json() == {"message": "Generation paused successfully.", "status": "ok"}
        assert total(server, "num_running_reqs") == 0, server.states()
        assert total(server, "num_waiting_reqs") == 1, server.states()
        assert status(server, "/ready") == 503 and status(server, "/ping") == 200
        probe = server.get("/health_generate")
        assert probe.status_code == 503 and "paused" in probe.text, probe.text
        assert status(server, "/ping") == 200  # a paused server is not unhealthy
        waiting, waited = in_background(lambda: generate(server, "The cat", {"max_new_tokens": 4}))
        time.sleep(0.3)
        assert t.is_alive() and waiting.is_alive(), "a request ran while paused"
        r = server.post("/flush_cache")
        assert r.status_code == 200, r.text
        assert total(server, "kv_used") == 0
    finally:
        server.post("/slow_down", {"forward_sleep_time": None})
        r = server.post("/continue_generation", {})
    assert r.status_code == 200, r.text
    assert r.json() == {"message": "Generation continued successfully.", "status": "ok"}
    t.join(60)
    waiting.join(60)
    assert result["r"]["text"] == solo["text"]
    assert result["r"]["meta_info"]["num_retractions"] == 1
    assert waited["r"]["meta_info"]["completion_tokens"] == 4
    assert status(server, "/ready") == 200
    server.wait_idle_no_leak()


def test_abort_is_the_default_and_ends_what_runs(server):
    assert server.post("/slow_down", {"forward_sleep_time": 0.01}).status_code == 200
    try:
        t, result = in_background(lambda: generate(server, "Once upon a time"))
        wait_running(server)
        r = server.post("/pause_generation")  # no body: mode abort
        assert r.status_code == 200, r.text
    finally:
        server.post("/slow_down", {"forward_sleep_time": None})
    t.join(60)
    meta = result["r"]["meta_info"]
    assert meta["finish_reason"]["type"] == "abort", meta
    assert meta["completion_tokens"] < LONG["max_new_tokens"]
    r = server.post("/continue_generation")
    assert r.status_code == 200, r.text
    assert generate(server, "The cat", {"max_new_tokens": 4})["meta_info"]["completion_tokens"] == 4
    server.wait_idle_no_leak()


def test_in_place_keeps_the_running_request_and_its_kv(server):
    solo = generate(server, "Once upon a time")
    assert server.post("/slow_down", {"forward_sleep_time": 0.01}).status_code == 200
    try:
        t, result = in_background(lambda: generate(server, "Once upon a time"))
        wait_running(server)
        r = server.post("/pause_generation", {"mode": "in_place"})
        assert r.status_code == 200, r.text
        assert total(server, "num_running_reqs") == 1
        r = server.post("/flush_cache")  # the running request holds KV
        assert r.status_code == 400, r.text
        time.sleep(0.2)
        assert t.is_alive()
    finally:
        server.post("/slow_down", {"forward_sleep_time": None})
        server.post("/continue_generation")
    t.join(60)
    assert result["r"]["text"] == solo["text"]
    assert result["r"]["meta_info"]["num_retractions"] == 0
    server.wait_idle_no_leak()
