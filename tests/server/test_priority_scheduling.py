# SGLang's priority scheduling (--enable-priority-scheduling, the request field `priority`): a
# preferred request preempts a running one it outranks by more than the threshold and finishes
# first; the preempted request resumes and answers what it would have alone; a full queue turns
# away its least preferred waiting request; --abort-on-priority-when-disabled refuses a priority.
import threading
import time

import pytest

from conftest import Server

LONG = {"max_new_tokens": 400, "ignore_eos": True, "temperature": 0}
SHORT = {"max_new_tokens": 8, "ignore_eos": True, "temperature": 0}


def start(tmp_path_factory, name, *args):
    return Server(tmp_path_factory.mktemp(name), *args)


class slowed:
    """Every engine step 10 ms longer (SGLang's /slow_down): a long request is still running
    when the next one arrives, however fast the machine."""

    def __init__(self, server):
        self.server = server

    def __enter__(self):
        assert self.server.post("/slow_down", {"forward_sleep_time": 0.01}).status_code == 200

    def __exit__(self, *exc):
        assert self.server.post("/slow_down", {"forward_sleep_time": None}).status_code == 200


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = start(tmp_path_factory, "priority", "--enable-priority-scheduling",
                "--max-running-requests", "1")
    yield srv
    assert srv.stop() == 0, srv.log()


def generate(server, text, sampling, **fields):
    r = server.post("/generate", {"text": text, "sampling_params": sampling, **fields}, timeout=60)
    return r.status_code, r.json()


def in_background(fn):
    result = {}
    t = threading.Thread(target=lambda: result.update(r=fn()))
    t.start()
    return t, result


def wait_until(server, key, n):
    deadline = time.monotonic() + 20
    while sum(s[key] for s in server.states()) < n:
        assert time.monotonic() < deadline, (key, server.states())
        time.sleep(0.01)


def test_server_info_reports_priority_scheduling(server):
    info = server.get("/get_server_info").json()
    assert info["enable_priority_scheduling"] is True
    assert info["schedule_low_priority_values_first"] is False
    assert info["priority_scheduling_preemption_threshold"] == 10


def test_a_preferred_request_preempts_and_the_preempted_one_resumes(server):
    alone = generate(server, "Once upon a time", LONG)[1]["text"]
    preempted_before = sum(s["num_preempted_total"] for s in server.states())
    with slowed(server):
        low, low_result = in_background(
            lambda: generate(server, "Once upon a time", LONG, priority=0))
        wait_until(server, "num_running_reqs", 1)
        status, high = generate(server, "The little dog", SHORT, priority=100)
        assert status == 200, high
        # The preferred request ran while the other waited for its slot back.
        assert low.is_alive()
    low.join(60)
    assert sum(s["num_preempted_total"] for s in server.states()) == preempted_before + 1
    status, body = low_result["r"]
    assert status == 200, body
    assert body["text"] == alone
    assert body["meta_info"]["completion_tokens"] == LONG["max_new_tokens"]
    server.wait_idle_no_leak()


def test_within_the_threshold_a_request_waits(server):
    preempted_before = sum(s["num_preempted_total"] for s in server.states())
    with slowed(server):
        low, low_result = in_background(
            lambda: generate(server, "Once upon a time", LONG, priority=0))
        wait_until(server, "num_running_reqs", 1)
        status, _ = generate(server, "The little dog", SHORT, priority=10)  # not more than 10
        assert status == 200
        assert not low.is_alive()  # it waited for the running request to end
    low.join(60)
    assert low_result["r"][0] == 200
    assert sum(s["num_preempted_total"] for s in server.states()) == preempted_before


def test_a_full_queue_turns_away_the_least_preferred(tmp_path_factory):
    srv = start(tmp_path_factory, "priority_queue", "--enable-priority-scheduling",
                "--max-running-requests", "1", "--max-queued-requests", "1",
                "--disable-priority-preemption")
    try:
        with slowed(srv):
            running, _ = in_background(
                lambda: generate(srv, "Once upon a time", LONG, priority=0))
            wait_until(srv, "num_running_reqs", 1)
            waiting, waiting_result = in_background(
                lambda: generate(srv, "The little dog", SHORT, priority=0))
            wait_until(srv, "num_waiting_reqs", 1)
            status, body = generate(srv, "The cat", SHORT, priority=5)
            assert status == 200, body
            waiting.join(60)
            status, body = waiting_result["r"]
            assert status == 503, body
            assert "aborted by a higher priority request" in str(body)
            running.join(60)
            # A newcomer outranking no one waiting is refused instead.
            running, _ = in_background(
                lambda: generate(srv, "Once upon a time", LONG, priority=0))
            wait_until(srv, "num_running_reqs", 1)
            waiting, waiting_result = in_background(
                lambda: generate(srv, "The little dog", SHORT, priority=3))
            wait_until(srv, "num_waiting_reqs", 1)
            status, body = generate(srv, "The cat", SHORT, priority=1)
            assert status == 503, body
        waiting.join(60)
        assert waiting_result["r"][0] == 200
        running.join(60)
    finally:
        assert srv.stop() == 0, srv.log()


def test_a_priority_is_refused_where_scheduling_by_it_is_off(tmp_path_factory):
    srv = start(tmp_path_factory, "priority_off", "--abort-on-priority-when-disabled")
    try:
        status, body = generate(srv, "Once upon a time", SHORT, priority=1)
        assert status == 503 and "priority is disabled" in str(body), body
        r = srv.post("/v1/chat/completions", {"model": "m", "priority": 1, "max_tokens": 2,
                                             "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 503 and "priority is disabled" in r.text, r.text
        assert generate(srv, "Once upon a time", SHORT)[0] == 200
    finally:
        assert srv.stop() == 0, srv.log()


@pytest.mark.parametrize("value", ["high", 1.5, [1]])
def test_a_priority_must_be_an_integer(server, value):
    r = server.post("/generate", {"text": "hi", "priority": value})
    assert r.status_code == 400 and "priority" in r.text, r.text
