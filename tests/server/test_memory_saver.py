# SGLang's --enable-memory-saver routes, as RL trainers sharing the GPU call them:
# /release_memory_occupation gives the weights' and the KV cache's memory back (by tag, or all),
# /resume_memory_occupation takes it again. Generation stays paused while any tag is released:
# requests sent meanwhile wait and are answered after the resume. With --enable-weights-cpu-backup
# outputs are unchanged across a release; without it the trainer writes the weights again
# (/update_weights_from_disk between the weights' resume and the KV cache's) and the server then
# answers as one started on that checkpoint. Refusals: a server without the flag, bad tags, a
# tag released twice or resumed unreleased, the KV cache under running requests, a weight update
# or /continue_generation while released.
import threading
import time

import pytest

from conftest import MODEL, Server, raise_fd_limit, skip_unless_gpus_for_tp
from test_update_weights import GREEDY, PROMPT, fresh_output, greedy, run_long, scaled_checkpoint


@pytest.fixture(scope="module")
def next_step(tmp_path_factory):
    return scaled_checkpoint(tmp_path_factory.mktemp("ckpt") / "step1", 0.8)


@pytest.fixture(scope="module")
def backed_up(tmp_path_factory):
    raise_fd_limit()
    srv = Server(tmp_path_factory.mktemp("saver"), "--enable-memory-saver",
                 "--enable-weights-cpu-backup")
    yield srv
    assert srv.stop() == 0, srv.log()


@pytest.fixture(scope="module")
def saver(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("saver"), "--enable-memory-saver")
    yield srv
    assert srv.stop() == 0, srv.log()


def release(server, tags=None):
    return server.post("/release_memory_occupation", None if tags is None else {"tags": tags})


def resume(server, tags=None):
    return server.post("/resume_memory_occupation", None if tags is None else {"tags": tags})


def ok(r):
    assert r.status_code == 200 and r.json()["success"] is True, r.text
    return r.json()["message"]


def refused(r, problem):
    """A 400 whose message says `problem`."""
    return r.status_code == 400 and problem in r.json()["error"]["message"]


def generate_in_background(server):
    result = {}
    t = threading.Thread(target=lambda: result.update(r=greedy(server)))
    t.start()
    return t, result


def test_the_flags_are_reported(backed_up, saver):
    info = backed_up.get("/get_server_info").json()
    assert info["enable_memory_saver"] is True and info["enable_weights_cpu_backup"] is True
    info = saver.get("/get_server_info").json()
    assert info["enable_memory_saver"] is True and info["enable_weights_cpu_backup"] is False


def test_a_server_without_the_flag_refuses(tmp_path):
    srv = Server(tmp_path)
    try:
        for route in ("/release_memory_occupation", "/resume_memory_occupation"):
            r = srv.post(route)
            assert r.status_code == 400 and "--enable-memory-saver" in r.text, r.text
        assert greedy(srv)["meta_info"]["completion_tokens"] > 0
    finally:
        assert srv.stop() == 0, srv.log()


@pytest.mark.parametrize("body,problem", [
    ({"tags": ["weights", "activations"]}, '"activations"'),
    ({"tags": "weights"}, "must be a list"),
    ({"tags": [1]}, "has 1"),
    ({"tags": ["weights"], "rid": "x"}, "rid"),
])
def test_bad_tags_are_refused(backed_up, body, problem):
    for route in ("/release_memory_occupation", "/resume_memory_occupation"):
        r = backed_up.post(route, body)
        assert refused(r, problem), (route, r.text)
    assert backed_up.get("/ready").status_code == 200


def test_kept_weights_serve_the_same_outputs_and_queued_requests_wait(backed_up):
    before = greedy(backed_up)
    message = ok(release(backed_up))  # every tag
    assert "cuda_graph, kv_cache, weights" in message and "kept in host memory" in message
    assert backed_up.get("/ready").status_code == 503
    t, result = generate_in_background(backed_up)
    time.sleep(0.5)
    assert "r" not in result, "a request ran while the memory was released"
    r = backed_up.post("/continue_generation")
    assert r.status_code == 400 and "/resume_memory_occupation" in r.text, r.text
    assert "Still released: weights" in ok(resume(backed_up, ["kv_cache", "cuda_graph"]))
    time.sleep(0.3)
    assert "r" not in result
    assert "Generation continues" in ok(resume(backed_up))  # what is still released
    t.join(60)
    assert result["r"]["text"] == before["text"]
    # The cache went with the KV cache's memory: the prompt was computed anew.
    assert result["r"]["meta_info"]["cached_tokens"] == 0, result["r"]["meta_info"]
    assert backed_up.get("/ready").status_code == 200
    backed_up.wait_idle_no_leak()


def test_a_tag_twice_or_unreleased_is_refused(backed_up):
    ok(release(backed_up, ["kv_cache"]))
    try:
        r = release(backed_up, ["weights", "kv_cache"])
        assert refused(r, '"kv_cache" is released already'), r.text
        r = resume(backed_up, ["weights"])
        assert refused(r, '"weights" is not released'), r.text
    finally:
        ok(resume(backed_up, ["kv_cache"]))
    assert "nothing" in ok(resume(backed_up))
    assert greedy(backed_up)["meta_info"]["completion_tokens"] > 0


def test_a_pause_asked_for_meanwhile_outlasts_the_resume(backed_up):
    before = greedy(backed_up)["text"]
    ok(release(backed_up, ["weights"]))
    assert backed_up.post("/pause_generation", {"mode": "in_place"}).status_code == 200
    ok(resume(backed_up))
    assert backed_up.get("/ready").status_code == 503  # the trainer's pause stays
    assert backed_up.post("/continue_generation").status_code == 200
    assert greedy(backed_up)["text"] == before


def test_the_kv_cache_is_not_released_under_running_requests(backed_up):
    assert backed_up.post("/slow_down", {"forward_sleep_time": 0.01}).status_code == 200
    try:
        t, result = run_long(backed_up)
        r = release(backed_up, ["kv_cache"])
        assert r.status_code == 400 and "requests are running" in r.text, r.text
    finally:
        backed_up.post("/slow_down", {"forward_sleep_time": None})
    t.join(60)
    assert result["r"]["meta_info"]["completion_tokens"] == 150  # it went on
    assert backed_up.get("/ready").status_code == 200
    # Retracted, they hold no KV: the release goes through and they run after the resume.
    assert backed_up.post("/slow_down", {"forward_sleep_time": 0.01}).status_code == 200
    try:
        t, result = run_long(backed_up)
        assert backed_up.post("/pause_generation", {"mode": "retract"}).status_code == 200
        ok(release(backed_up, ["kv_cache"]))
        ok(resume(backed_up, ["kv_cache"]))
        assert backed_up.post("/continue_generation").status_code == 200
    finally:
        backed_up.post("/slow_down", {"forward_sleep_time": None})
    t.join(60)
    assert result["r"]["meta_info"]["completion_tokens"] == 150
    backed_up.wait_idle_no_leak()


def test_a_trainers_step_without_the_backup(saver, next_step, tmp_path_factory):
    """Release everything, train (elsewhere), take the weights' memory back, write the new
    checkpoint into it, then the KV cache's: the server answers as one started on it."""
    want = fresh_output(tmp_path_factory, next_step)
    assert want != greedy(saver)["text"], "the scaled checkpoint changes nothing"
    message = ok(release(saver))
    assert "write them again after the resume" in message
    r = saver.post("/update_weights_from_disk", {"model_path": str(next_step)})
    assert r.status_code == 400 and "weights' memory is released" in r.json()["message"], r.text
    r = saver.post("/get_weights_by_name", {"name": "model.norm.weight"})
    assert r.status_code == 400 and "weights' memory is released" in r.text, r.text
    ok(resume(saver, ["weights"]))
    r = saver.post("/update_weights_from_disk", {"model_path": str(next_step),
                                                 "weight_version": "step-1"})
    assert r.status_code == 200 and r.json()["success"] is True, r.text
    assert saver.get("/ready").status_code == 503  # the KV cache is still released
    ok(resume(saver, ["kv_cache", "cuda_graph"]))
    out = greedy(saver)
    assert out["text"] == want and out["meta_info"]["weight_version"] == "step-1"
    assert saver.post("/update_weights_from_disk", {"model_path": str(MODEL)}).status_code == 200


def test_every_tensor_parallel_rank_releases_and_takes_its_weights_back(tmp_path):
    skip_unless_gpus_for_tp(2)
    srv = Server(tmp_path, "--enable-memory-saver", "--tp-size", "2")
    try:
        before = greedy(srv)["text"]
        ok(release(srv))
        ok(resume(srv, ["weights"]))
        r = srv.post("/update_weights_from_disk", {"model_path": str(MODEL)})
        assert r.status_code == 200, r.text
        ok(resume(srv))
        assert greedy(srv)["text"] == before
    finally:
        assert srv.stop() == 0, srv.log()
