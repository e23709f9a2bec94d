# SGLang's sessions: /open_session, /generate's session_params (a turn continues a named earlier
# turn: its prompt and output, then the new prompt without its BOS; drop_previous_output, offset,
# replace), /close_session and idle timeouts. Each turn answers what a plain request on the
# same ids answers, and finds the shared history in the prefix cache. Every request goes to
# replica 0 (routed_dp_rank), so the suite also runs behind two replicas (dp2 suites).
import json
import threading
import time

import pytest

from conftest import golden

GREEDY = {"max_new_tokens": 6, "temperature": 0, "ignore_eos": True}
BOS = 1


def prompts():
    return [c["prompt_ids"] for c in golden()["cases"][:3]]


def open_session(server, **body):
    r = server.post("/open_session", {"capacity_of_str_len": 1000, **body})
    assert r.status_code == 200, r.text
    return r.json()


def turn(server, ids, session, name, sampling=GREEDY, **params):
    """Turn `name` (its request's rid) of `session`; `params`: the rest of session_params (its
    `rid`: the turn it continues)."""
    return server.post("/generate", {"input_ids": ids, "sampling_params": sampling, "rid": name,
                                     "routed_dp_rank": 0,
                                     "session_params": {"id": session, **params}})


def plain(server, ids, sampling=GREEDY):
    r = server.post("/generate", {"input_ids": ids, "sampling_params": sampling,
                                  "routed_dp_rank": 0})
    assert r.status_code == 200, r.text
    return r.json()


def test_turns_continue_the_named_turn(server):
    a, b, c = prompts()
    sid = open_session(server)
    assert isinstance(sid, str) and sid
    first = turn(server, a, sid, "t1")
    assert first.status_code == 200, first.text
    first = first.json()
    assert first["output_ids"] == plain(server, a)["output_ids"]
    # The next turn: a + its output + b without BOS.
    second = turn(server, b, sid, "t2", rid="t1")
    assert second.status_code == 200, second.text
    second = second.json()
    history = a + first["output_ids"] + b[1:]
    assert second["meta_info"]["prompt_tokens"] == len(history)
    assert second["meta_info"]["cached_tokens"] >= len(a)
    assert second["output_ids"] == plain(server, history)["output_ids"]
    # Branch from t1 without its output, and from t2 cut at an offset.
    third = turn(server, c, sid, "t3", rid="t1", drop_previous_output=True).json()
    assert third["output_ids"] == plain(server, a + c[1:])["output_ids"]
    fourth = turn(server, c, sid, "t4", rid="t2", offset=-3).json()
    t2_history = history + second["output_ids"]
    assert fourth["meta_info"]["prompt_tokens"] == len(t2_history[:-3] + c[1:])
    assert fourth["output_ids"] == plain(server, t2_history[:-3] + c[1:])["output_ids"]
    # A turn naming none starts afresh (a new root of the session).
    assert turn(server, a, sid, "t5").json()["output_ids"] == first["output_ids"]
    assert server.post("/close_session", {"session_id": sid}).status_code == 200


def test_streamed_turns_record_their_output(server):
    a, b, _ = prompts()
    sid = open_session(server)
    r = server.post("/generate", {"input_ids": a, "sampling_params": GREEDY, "rid": "s1",
                                  "stream": True, "routed_dp_rank": 0,
                                  "session_params": {"id": sid}}, stream=True)
    assert r.status_code == 200
    assert r.text.rstrip().endswith("data: [DONE]")
    out = turn(server, b, sid, "s2", rid="s1").json()
    first = plain(server, a)["output_ids"]
    assert out["meta_info"]["prompt_tokens"] == len(a + first + b[1:])
    server.post("/close_session", {"session_id": sid})


def test_replace_aborts_the_turns_that_continued(server):
    a, b, c = prompts()
    sid = open_session(server)
    assert turn(server, a, sid, "r1").status_code == 200
    assert server.post("/slow_down", {"forward_sleep_time": 0.02}).status_code == 200
    try:
        long_sampling = {"max_new_tokens": 300, "temperature": 0, "ignore_eos": True}
        result = {}
        t = threading.Thread(target=lambda: result.update(
            r=turn(server, b, sid, "r2", sampling=long_sampling, rid="r1")))
        t.start()
        deadline = time.monotonic() + 20
        while sum(s["num_running_reqs"] for s in server.states()) < 1:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        # Appending to a turn still running is refused; replacing r1 drops (aborts) r2.
        r = turn(server, c, sid, "r3", rid="r2")
        assert r.status_code == 400 and "hasn't finished" in r.text, r.text
        r = turn(server, c, sid, "r3", rid="r1", replace=True)
        assert r.status_code == 200, r.text
    finally:
        server.post("/slow_down", {"forward_sleep_time": None})
    t.join(60)
    aborted = result["r"].json()
    assert aborted["meta_info"]["finish_reason"]["type"] == "abort", aborted["meta_info"]
    r = turn(server, c, sid, "r4", rid="r2")
    assert r.status_code == 400 and "Invalid request session id" in r.text, r.text
    server.post("/close_session", {"session_id": sid})


def test_replacing_a_running_turn_continues_from_its_output_so_far(server):
    a, _, c = prompts()
    sid = open_session(server)
    assert server.post("/slow_down", {"forward_sleep_time": 0.02}).status_code == 200
    items, first_token = [], threading.Event()

    def run_p1():  # streamed: its first item says the server holds some of its output
        r = server.post("/generate", {"input_ids": a, "stream": True, "rid": "p1",
                                      "sampling_params": {"max_new_tokens": 300,
                                                          "temperature": 0, "ignore_eos": True},
                                      "routed_dp_rank": 0, "session_params": {"id": sid}},
                        stream=True)
        for line in r.iter_lines():
            if line.startswith(b"data: {"):
                items.append(json.loads(line[len(b"data: "):]))
                first_token.set()

    t = threading.Thread(target=run_p1)
    t.start()
    try:
        assert first_token.wait(30)
        # SGLang's replace of a running turn: it is aborted, and the new turn runs on its prompt
        # and the output it had when the replace came.
        r = turn(server, c, sid, "p2", rid="p1", replace=True)
    finally:
        server.post("/slow_down", {"forward_sleep_time": None})
    t.join(60)
    assert r.status_code == 200, r.text
    assert items[-1]["meta_info"]["finish_reason"]["type"] == "abort", items[-1]["meta_info"]
    p1_output = items[-1]["output_ids"]
    so_far = r.json()["meta_info"]["prompt_tokens"] - len(a) - len(c[1:])
    assert 1 <= so_far <= len(p1_output) < 300, (so_far, len(p1_output))
    assert r.json()["output_ids"] == plain(server, a + p1_output[:so_far] + c[1:])["output_ids"]
    server.post("/close_session", {"session_id": sid})


def test_sessions_close_and_time_out(server):
    a, _, _ = prompts()
    sid = open_session(server, session_id="mine")
    assert sid == "mine"
    r = server.post("/open_session", {"capacity_of_str_len": 10, "session_id": "mine"})
    assert r.status_code == 400 and "already open" in r.text, r.text
    assert server.post("/close_session", {"session_id": "mine"}).status_code == 200
    r = turn(server, a, "mine", "x1")
    assert r.status_code == 400 and "does not exist" in r.text, r.text
    assert server.post("/close_session", {"session_id": "never"}).status_code == 200
    sid = open_session(server, timeout=0.3)
    assert turn(server, a, sid, "x2").status_code == 200
    time.sleep(0.6)
    r = turn(server, a, sid, "x3", rid="x2")
    assert r.status_code == 400 and "does not exist" in r.text, r.text


@pytest.mark.parametrize("path,body,words", [
    ("/open_session", {}, ["capacity_of_str_len", "required"]),
    ("/open_session", {"capacity_of_str_len": 1, "streaming": True}, ["streaming"]),
    ("/open_session", {"capacity_of_str_len": 1, "timeout": -1}, ["timeout"]),
    ("/close_session", {}, ["session_id"]),
    ("/generate", {"text": ["a", "b"], "session_params": {"id": "s"}}, ["session_params"]),
    ("/generate", {"text": "a", "sampling_params": {"n": 2}, "session_params": {"id": "s"}},
     ["session_params"]),
    ("/generate", {"text": "a", "session_params": {"id": "s", "bogus": 1}},
     ["session_params.bogus"]),
    ("/generate", {"text": "a", "session_params": "s"}, ["session_params"]),
    ("/v1/completions", {"model": "m", "prompt": "a", "session_params": {"id": "s"}},
     ["session_params", "/generate"]),
])
def test_bad_requests_are_refused(server, path, body, words):
    r = server.post(path, body)
    assert r.status_code == 400, r.text
    for word in words:
        assert word in r.text, (word, r.text)
