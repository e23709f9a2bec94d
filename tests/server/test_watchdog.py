# SGLang's scheduler watchdog: --watchdog-timeout ends the server (exit status 1) when batches
# are in flight and none finishes for that long, after logging what ran; --soft-watchdog-timeout
# only logs. /slow_down's sleep before each batch stands in for a hung GPU. An idle or paused
# server is never stuck, and a working one is never ended.
import subprocess
import threading
import time

import pytest

from conftest import MODEL, Server, golden, requests, server_binary


def generate(server, ids, new=8, timeout=60):
    return server.post("/generate", {"input_ids": ids, "sampling_params": {
        "max_new_tokens": new, "temperature": 0, "ignore_eos": True}}, timeout=timeout)


def wait_exit(server, timeout):
    deadline = time.monotonic() + timeout
    while server.alive():
        assert time.monotonic() < deadline, "the server outlived its watchdog: " + server.log()
        time.sleep(0.1)
    return server.proc.returncode


def test_a_stalled_batch_ends_the_server(tmp_path):
    server = Server(tmp_path, "--watchdog-timeout", "1")
    ids = golden()["cases"][0]["prompt_ids"]
    assert generate(server, ids).status_code == 200
    assert server.post("/slow_down", {"forward_sleep_time": 30}).status_code == 200
    outcome = {}

    def stalled():
        try:
            outcome["status"] = generate(server, ids, timeout=60).status_code
        except requests.exceptions.RequestException as e:
            outcome["error"] = e

    t = threading.Thread(target=stalled)
    t.start()
    start = time.monotonic()
    code = wait_exit(server, timeout=20)
    waited = time.monotonic() - start
    t.join(timeout=30)
    log = server.log()
    server.stop()
    assert code == 1, log
    # Fired after the timeout (checked every half of it), long before the 30 s sleep ended.
    assert 1.0 <= waited < 10, waited
    assert "Scheduler watchdog timeout (watchdog_timeout=1, soft=False)" in log, log
    assert "the latest batch launched: batch" in log and "request ids" in log, log
    assert "the watchdog ends the server (exit status 1)" in log, log
    assert "error" in outcome, outcome  # the connection dropped; no reply was made up


def test_the_soft_watchdog_only_logs(tmp_path):
    server = Server(tmp_path, "--soft-watchdog-timeout", "1")
    ids = golden()["cases"][0]["prompt_ids"]
    assert server.post("/slow_down", {"forward_sleep_time": 2.5}).status_code == 200
    r = generate(server, ids, new=2)
    assert r.status_code == 200, r.text
    assert server.post("/slow_down", {"forward_sleep_time": None}).status_code == 200
    r = generate(server, ids)
    assert r.status_code == 200 and r.json()["output_ids"] == golden()["cases"][0]["greedy_ids"][:8]
    log = server.log()
    assert "Scheduler watchdog timeout (watchdog_timeout=1, soft=True)" in log, log
    assert "the latest batch launched: batch" in log, log
    assert server.alive()
    assert server.stop() == 0, server.log()


def test_idle_and_paused_servers_are_not_stuck(tmp_path):
    server = Server(tmp_path, "--watchdog-timeout", "1")
    cases = golden()["cases"][:4]
    time.sleep(2.5)  # idle for more than twice the timeout
    assert server.alive(), server.log()
    # Requests queued behind a pause wait without a batch in flight.
    assert server.post("/pause_generation", {"mode": "abort"}).status_code == 200
    replies = [None] * len(cases)

    def ask(i):
        replies[i] = generate(server, cases[i]["prompt_ids"])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(cases))]
    for t in threads:
        t.start()
    time.sleep(2.5)
    assert server.alive(), server.log()
    assert server.post("/continue_generation", {}).status_code == 200
    for t in threads:
        t.join(timeout=60)
    for case, r in zip(cases, replies):
        assert r is not None and r.status_code == 200, r
        assert r.json()["output_ids"] == case["greedy_ids"][:8]
    # Busy for longer than the timeout, every batch finishing within it.
    for _ in range(3):
        for case in cases:
            assert generate(server, case["prompt_ids"], new=32).status_code == 200
    assert "watchdog timeout" not in server.log()
    assert server.stop() == 0, server.log()


@pytest.mark.parametrize("flag", ["--watchdog-timeout", "--soft-watchdog-timeout"])
@pytest.mark.parametrize("value", ["-1", "abc", "nan"])
def test_bad_timeouts_are_refused(tmp_path, flag, value):
    binary = server_binary()
    if binary is None:
        pytest.skip("no sgl-server")
    p = subprocess.run([str(binary), "--model-path", str(MODEL), "--port", "0", flag, value],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert flag in p.stderr, p.stderr
