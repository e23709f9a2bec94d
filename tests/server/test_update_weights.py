# SGLang's /update_weights_from_disk (RL trainers push each step's checkpoint): the served
# weights are overwritten in place with another checkpoint of the same network, after which
# greedy outputs are exactly those of a server started on it; weight_version and model_path
# follow; the cache of the old weights is flushed; a bad checkpoint is refused and changes
# nothing; keep_pause, abort_all_requests and SGLang's refusal to flush under running requests.
# /get_weights_by_name reads a weight back as the checkpoint holds it (its tensor-parallel shares
# put together), before and after an update.
import array
import json
import shutil
import struct
import threading
import time

import pytest

from conftest import MODEL, Server, raise_fd_limit, requests, skip_unless_gpus_for_tp

PROMPT = "Once upon a time"
GREEDY = {"max_new_tokens": 24, "temperature": 0}


def scaled_checkpoint(out, scale):
    """stories260K with every weight times `scale`, in `out` (its tokenizer beside it)."""
    out.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(MODEL / name, out / name)
    blob = (MODEL / "model.safetensors").read_bytes()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    data = bytearray(blob[8 + n:])
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", t
        begin, end = t["data_offsets"]
        values = array.array("f", bytes(data[begin:end]))
        data[begin:end] = array.array("f", (v * scale for v in values)).tobytes()
    (out / "model.safetensors").write_bytes(blob[:8 + n] + bytes(data))
    return out


def checkpoint_rows(path, name, rows, scale=1.0):
    """The first `rows` rows of tensor `name` in the F32 checkpoint at `path` (values of a
    1-D one), times `scale`."""
    blob = (path / "model.safetensors").read_bytes()
    n = struct.unpack("<Q", blob[:8])[0]
    t = json.loads(blob[8:8 + n])[name]
    begin, end = t["data_offsets"]
    values = [v * scale for v in array.array("f", blob[8 + n + begin:8 + n + end])]
    if len(t["shape"]) == 1:
        return values[:rows]
    width = t["shape"][1]
    return [values[r * width:(r + 1) * width] for r in range(min(rows, t["shape"][0]))]


def weights_by_name(server, name, truncate_size):
    """The weight as the server reads it; behind several replicas (SGLang's: one answer each)
    every replica's, checked equal."""
    r = server.post("/get_weights_by_name", {"name": name, "truncate_size": truncate_size})
    assert r.status_code == 200, r.text
    if len(server.states()) == 1:
        return r.json()
    replicas = r.json()
    assert len(replicas) == len(server.states()) and all(w == replicas[0] for w in replicas)
    return replicas[0]


@pytest.fixture(scope="module")
def next_step(tmp_path_factory):
    return scaled_checkpoint(tmp_path_factory.mktemp("ckpt") / "step1", 0.8)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    raise_fd_limit()
    srv = Server(tmp_path_factory.mktemp("update"))
    yield srv
    assert srv.stop() == 0, srv.log()


def greedy(server, sampling=GREEDY):
    r = server.post("/generate", {"text": PROMPT, "sampling_params": sampling}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def update(server, path, **fields):
    return server.post("/update_weights_from_disk", {"model_path": str(path), **fields},
                       timeout=60)


def fresh_output(tmp_path_factory, path, *args):
    srv = Server(tmp_path_factory.mktemp("fresh"), *args, model=path)
    try:
        return greedy(srv)["text"]
    finally:
        assert srv.stop() == 0, srv.log()


def test_bad_bodies_are_refused(server, next_step):
    for body, field in (({}, "model_path"), ({"model_path": ""}, "model_path"),
                        ({"model_path": str(next_step), "is_async": True}, "is_async"),
                        ({"model_path": str(next_step), "load_format": "gguf"}, "load_format"),
                        ({"model_path": str(next_step), "manifest": {"a": 1}}, "manifest"),
                        ({"model_path": str(next_step), "token_step": 3}, "token_step"),
                        ({"model_path": str(next_step), "weights": 1}, "weights")):
        r = server.post("/update_weights_from_disk", body)
        assert r.status_code == 400 and field in r.text, (body, r.text)


def test_a_checkpoint_that_cannot_load_changes_nothing(server, tmp_path):
    before = greedy(server)
    r = update(server, tmp_path / "nowhere")
    assert r.status_code == 400, r.text
    assert r.json()["success"] is False and r.json()["num_paused_requests"] == 0, r.text
    other = tmp_path / "other"
    shutil.copytree(MODEL, other)
    config = json.loads((other / "config.json").read_text())
    config["rms_norm_eps"] = 0.5
    (other / "config.json").write_text(json.dumps(config))
    r = update(server, other)
    assert r.status_code == 400 and "rms_norm_eps differs" in r.json()["message"], r.text
    assert greedy(server)["text"] == before["text"]
    info = server.get("/get_model_info").json()
    assert info["model_path"] == str(MODEL) and info["weight_version"] == "default", info
    assert server.get("/ready").status_code == 200  # the update's pause was lifted


def test_an_update_serves_the_new_weights_exactly_and_back(server, next_step, tmp_path_factory):
    before = greedy(server)["text"]
    want = fresh_output(tmp_path_factory, next_step)
    assert want != before, "the scaled checkpoint changes nothing"
    r = update(server, next_step, weight_version="step-1")
    assert r.status_code == 200, r.text
    assert r.json() == {"success": True, "num_paused_requests": 0,
                        "message": "Succeeded to update model weights. Weight version updated "
                                   "to step-1."}, r.text
    out = greedy(server)
    # Not served from the cache the old weights made: the prompt is computed anew.
    assert out["text"] == want and out["meta_info"]["cached_tokens"] == 0, out["meta_info"]
    assert out["meta_info"]["weight_version"] == "step-1"
    info = server.get("/get_model_info").json()
    assert info["model_path"] == str(next_step) and info["weight_version"] == "step-1", info
    assert server.get("/get_server_info").json()["model_path"] == str(next_step)
    r = update(server, MODEL)  # no weight_version: it stays
    assert r.status_code == 200, r.text
    assert greedy(server)["text"] == before
    assert server.get("/get_model_info").json()["weight_version"] == "step-1"


def test_keep_pause_leaves_the_engine_paused(server, next_step):
    r = update(server, next_step, keep_pause=True)
    assert r.status_code == 200, r.text
    assert server.get("/ready").status_code == 503
    assert server.post("/continue_generation").status_code == 200
    assert server.get("/ready").status_code == 200
    assert update(server, MODEL).status_code == 200


def run_long(server):
    t_result = {}
    body = {"text": PROMPT, "sampling_params": {"max_new_tokens": 150, "ignore_eos": True,
                                                "temperature": 0}}
    t = threading.Thread(target=lambda: t_result.update(
        r=server.post("/generate", body, timeout=60).json()))
    t.start()
    deadline = time.monotonic() + 10
    while sum(s["num_running_reqs"] for s in server.states()) == 0:
        assert time.monotonic() < deadline, "the request never ran"
        time.sleep(0.01)
    return t, t_result


def test_running_requests_go_on_and_keep_the_cache_from_flushing(server, next_step):
    assert server.post("/slow_down", {"forward_sleep_time": 0.01}).status_code == 200
    try:
        t, result = run_long(server)
        r = update(server, next_step)
        # SGLang's answer: the weights changed, the cache could not be flushed under a request.
        assert r.status_code == 400 and "cache was not flushed" in r.json()["message"], r.text
        assert server.get("/get_model_info").json()["model_path"] == str(next_step)
    finally:
        server.post("/slow_down", {"forward_sleep_time": None})
    t.join(60)
    assert result["r"]["meta_info"]["completion_tokens"] == 150  # it went on
    server.wait_idle_no_leak()
    assert update(server, MODEL).status_code == 200


def test_abort_all_requests_ends_what_runs(server, next_step):
    assert server.post("/slow_down", {"forward_sleep_time": 0.01}).status_code == 200
    try:
        t, result = run_long(server)
        r = update(server, next_step, abort_all_requests=True)
        assert r.status_code == 200, r.text
    finally:
        server.post("/slow_down", {"forward_sleep_time": None})
    t.join(60)
    assert result["r"]["meta_info"]["finish_reason"]["type"] == "abort", result["r"]
    assert update(server, MODEL).status_code == 200
    server.wait_idle_no_leak()


def test_every_tensor_parallel_rank_is_updated(next_step, tmp_path_factory):
    skip_unless_gpus_for_tp(2)
    srv = Server(tmp_path_factory.mktemp("tp2"), "--tp-size", "2")
    try:
        before = greedy(srv)["text"]
        assert update(srv, next_step).status_code == 200
        assert greedy(srv)["text"] == fresh_output(tmp_path_factory, next_step, "--tp-size", "2")
        assert update(srv, MODEL).status_code == 200
        assert greedy(srv)["text"] == before
    finally:
        assert srv.stop() == 0, srv.log()


def test_update_weight_version_names_the_weights(server):
    for body, field in (({}, "new_version"), ({"new_version": 3}, "new_version"),
                        ({"new_version": "v", "abort": True}, "abort")):
        r = server.post("/update_weight_version", body)
        assert r.status_code == 400 and field in r.text, (body, r.text)
    before = greedy(server)["text"]
    r = server.post("/update_weight_version", {"new_version": "rl-7"})
    assert r.status_code == 200, r.text
    assert r.json() == {"success": True, "message": "Weight version updated to rl-7",
                        "new_version": "rl-7"}
    out = greedy(server)
    assert out["text"] == before and out["meta_info"]["weight_version"] == "rl-7"
    assert server.get("/get_model_info").json()["weight_version"] == "rl-7"
    # By default (SGLang's) what runs is aborted.
    assert server.post("/slow_down", {"forward_sleep_time": 0.01}).status_code == 200
    try:
        t, result = run_long(server)
        assert server.post("/update_weight_version", {"new_version": "rl-8"}).status_code == 200
    finally:
        server.post("/slow_down", {"forward_sleep_time": None})
    t.join(60)
    assert result["r"]["meta_info"]["finish_reason"]["type"] == "abort", result["r"]
    server.wait_idle_no_leak()


NAMES = ("model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
         "model.layers.1.self_attn.v_proj.weight", "model.layers.0.self_attn.o_proj.weight",
         "model.layers.0.mlp.up_proj.weight", "model.layers.1.mlp.down_proj.weight",
         "model.layers.0.input_layernorm.weight", "model.norm.weight")


def test_get_weights_by_name_reads_the_served_weights(server, next_step):
    for body, field in (({}, "name"), ({"name": "x", "truncate_size": -1}, "truncate_size"),
                        ({"name": "x", "size": 3}, "size")):
        r = server.post("/get_weights_by_name", body)
        assert r.status_code == 400 and field in r.text, (body, r.text)
    r = server.post("/get_weights_by_name", {"name": "model.layers.0.nothing.weight"})
    assert r.status_code == 404 and "no weight named" in r.text, r.text
    for name in NAMES:
        assert weights_by_name(server, name, 3) == checkpoint_rows(MODEL, name, 3), name
    assert len(weights_by_name(server, "model.norm.weight", 100)) == 64  # every value, 100 asked
    assert update(server, next_step).status_code == 200
    try:
        for name in NAMES:
            assert weights_by_name(server, name, 2) == checkpoint_rows(next_step, name, 2), name
    finally:
        assert update(server, MODEL).status_code == 200


def test_get_weights_by_name_puts_the_tensor_parallel_shares_together(tmp_path_factory):
    skip_unless_gpus_for_tp(2)
    srv = Server(tmp_path_factory.mktemp("tp2read"), "--tp-size", "2")
    try:
        for name in NAMES:
            assert weights_by_name(srv, name, 4) == checkpoint_rows(MODEL, name, 4), name
    finally:
        assert srv.stop() == 0, srv.log()
