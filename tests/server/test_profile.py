# SGLang's /start_profile and /stop_profile: the bodies SGLang's clients send (bench_serving's,
# with its step counts as strings; sglang.profiler's; the frontend's bare GET), the trace files
# under SGLang's names (one per engine replica), their events read back, and the refusals.
import gzip
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from conftest import Server, require


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("profile"))
    yield srv
    assert srv.alive(), "the server died: " + srv.log()
    assert srv.stop() == 0, srv.log()


def rank_names(server):
    """The file name's rank part of each engine replica (SGLang's: -DP-i only behind several)."""
    n = len(server.states())
    return ["TP-0"] if n == 1 else [f"TP-0-DP-{i}" for i in range(n)]


def read_trace(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)


def forward_spans(trace):
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and e["tid"] == 2]


def generate(server, prompt, tokens):
    r = server.post("/generate", {"text": prompt, "sampling_params": {
        "max_new_tokens": tokens, "temperature": 0, "ignore_eos": True}})
    assert r.status_code == 200, r.text
    return r.json()


def test_start_generate_stop_writes_a_trace_per_replica(server, tmp_path):
    r = server.post("/start_profile", {"output_dir": str(tmp_path), "profile_id": "run1",
                                       "profile_prefix": "pre"})
    assert r.status_code == 200 and r.text == "Start profiling.\n", r.text
    again = server.post("/start_profile", {"output_dir": str(tmp_path)})
    assert again.status_code == 400
    assert "already in progress" in again.json()["error"]["message"]
    for prompt in ["Once upon a time", "The cat sat", "Tom had a ball"]:
        generate(server, prompt, 6)
    r = server.post("/stop_profile")
    assert r.status_code == 200 and r.text == "Stop profiling. This will take some time.\n"
    # Written before the reply.
    spans = []
    for name in rank_names(server):
        trace = read_trace(tmp_path / f"pre-run1-{name}.trace.json.gz")
        assert trace["traceEvents"][0]["args"]["name"] == f"sgl.cpp {name}"
        spans += forward_spans(trace)
    modes = [s["args"]["mode"] for s in spans]
    # Each request: one prefill pass, then its 5 further tokens in decode passes.
    assert modes.count("extend") + modes.count("mixed") >= 3, modes
    decode_tokens = sum(s["args"]["tokens"] for s in spans if s["args"]["mode"] == "decode")
    assert decode_tokens == 3 * 5, spans
    for s in spans:
        assert s["dur"] >= 0 and s["args"]["requests"] >= 1
    r = server.post("/stop_profile")
    assert r.status_code == 400
    assert "not in progress" in r.json()["error"]["message"]


def test_bench_serving_body_records_num_steps_passes(server, tmp_path):
    # What sglang.bench_serving --profile --profile-steps 3 sends (its numbers as strings).
    body = {"activities": ["CPU", "GPU"], "num_steps": "3", "profile_by_stage": False,
            "profile_stages": None, "output_dir": str(tmp_path), "profile_prefix": None,
            "profile_id": "steps"}
    r = server.post("/start_profile", body)
    assert r.status_code == 200, r.text
    generate(server, "Once upon a time", 12)
    passes = []
    for name in rank_names(server):
        path = tmp_path / f"steps-{name}.trace.json.gz"
        if path.exists():  # behind several replicas, only the one that ran the request
            passes += forward_spans(read_trace(path))
    assert len(passes) == 3, passes
    assert [p["args"]["mode"] for p in passes] == ["extend", "decode", "decode"]
    # Ended by its count on the replica that ran; a stop reaches the idle ones.
    server.post("/stop_profile")


def test_sglang_profiler_cli(server, tmp_path):
    """SGLang's own `python -m sglang.profiler` (the release scripts/install_deps.sh pins), run
    without torch: it records /server_info beside the traces and starts a profile of its
    --num-steps passes, which the next request's passes fill."""
    require(importlib.util.find_spec("sglang") is not None,
            "sglang is not installed (scripts/install_deps.sh installs SGLang's clients)")
    # The package entered without its __init__ (which imports torch), as run_sglang_bench.py.
    code = ("import importlib.util, runpy, sys, types\n"
            "root = importlib.util.find_spec('sglang').submodule_search_locations[0]\n"
            "package = types.ModuleType('sglang')\n"
            "package.__path__ = [root]\n"
            "sys.modules['sglang'] = package\n"
            "runpy.run_module('sglang.profiler', run_name='__main__', alter_sys=True)\n")
    proc = subprocess.run([sys.executable, "-c", code, "--url", server.url, "--output-dir",
                           str(tmp_path), "--num-steps", "3"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    generate(server, "Once upon a time", 8)
    folders = list(tmp_path.iterdir())
    assert len(folders) == 1, folders  # the client's <time> folder
    assert json.loads((folders[0] / "server_args.json").read_text())["model_path"]
    passes = []
    for path in folders[0].glob("*.trace.json.gz"):
        passes += forward_spans(read_trace(path))
    assert [p["args"]["mode"] for p in passes] == ["extend", "decode", "decode"], passes
    server.post("/stop_profile")  # the replicas that ran nothing


def test_profile_by_stage_writes_extend_and_decode_traces(server, tmp_path):
    r = server.post("/start_profile", {"output_dir": str(tmp_path), "profile_by_stage": True,
                                       "num_steps": 2, "profile_id": "stage",
                                       "activities": ["GPU"]})
    assert r.status_code == 200, r.text
    generate(server, "Once upon a time", 8)
    generate(server, "The cat sat", 8)
    found = {}
    for name in rank_names(server):
        for stage in ("EXTEND", "DECODE"):
            path = tmp_path / f"stage-{name}-{stage}.trace.json.gz"
            if path.exists():
                trace = read_trace(path)
                found.setdefault(stage, []).extend(forward_spans(trace))
                # GPU only: no engine-thread spans or counters.
                assert all(e["ph"] in ("M", "X") for e in trace["traceEvents"])
                assert all(e.get("tid") != 1 for e in trace["traceEvents"] if e["ph"] == "X")
    assert {s["args"]["mode"] for s in found["DECODE"]} == {"decode"}, found
    assert len(found["DECODE"]) >= 2
    assert {s["args"]["mode"] for s in found["EXTEND"]} <= {"extend", "mixed"}
    server.post("/stop_profile")  # replicas that saw no second stage


@pytest.mark.parametrize("body, field", [
    ({"activities": ["MEM"]}, "activities"),
    ({"activities": ["CUDA_PROFILER"]}, "CUDA_PROFILER"),  # a CPU server
    ({"activities": []}, "activities"),
    ({"activities": ["KERNELS"]}, "activities"),
    ({"merge_profiles": True}, "merge_profiles"),
    ({"num_steps": "three"}, "num_steps"),
    ({"num_steps": 0}, "num_steps"),
    ({"start_step": [1]}, "start_step"),
    ({"profile_by_stage": True}, "num_steps"),
    ({"profile_stages": ["decode"]}, "profile_stages"),
    ({"profile_by_stage": True, "num_steps": 1, "profile_stages": ["verify"]}, "profile_stages"),
    ({"profile_id": "a/b"}, "profile_id"),
    ({"trace_kernels": True}, "trace_kernels"),
])
def test_refusals_name_the_field(server, tmp_path, body, field):
    if field == "CUDA_PROFILER" and "cuda" in os.environ.get("SGL_TEST_SERVER_ARGS", ""):
        pytest.skip("the server runs on a GPU")
    r = server.post("/start_profile", {"output_dir": str(tmp_path), **body})
    assert r.status_code == 400, r.text
    assert field in r.json()["error"]["message"]
    # Nothing started: a stop has nothing to end.
    assert server.post("/stop_profile").status_code == 400
    assert not list(tmp_path.glob("*.trace.json.gz"))


def test_output_dir_that_cannot_be_made_is_refused(server, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = server.post("/start_profile", {"output_dir": str(blocker / "traces")})
    assert r.status_code == 400 and "output_dir" in r.json()["error"]["message"], r.text
    r = server.post("/stop_profile", {"output_dir": "x"})  # the stop takes no fields
    assert r.status_code == 400 and "output_dir" in r.json()["error"]["message"], r.text


def test_bare_get_uses_sglang_torch_profiler_dir(tmp_path, monkeypatch):
    # The frontend's RuntimeEndpoint.start_profile(): a GET without a body; the traces go to
    # SGLANG_TORCH_PROFILER_DIR (SGLang's default for an absent output_dir).
    traces = tmp_path / "traces"
    monkeypatch.setenv("SGLANG_TORCH_PROFILER_DIR", str(traces))
    srv = Server(tmp_path)
    try:
        assert srv.get("/start_profile").status_code == 200
        generate(srv, "Once upon a time", 4)
        assert srv.get("/stop_profile").status_code == 200
        files = sorted(p.name for p in traces.glob("*.trace.json.gz"))
        assert len(files) == len(rank_names(srv)), files
        # SGLang's default profile id: the time in seconds.
        profile_id = files[0].split("-TP-0")[0]
        assert float(profile_id) > 1.7e9, files
    finally:
        assert srv.stop() == 0, srv.log()


def test_cuda_profiler_brackets_the_passes_on_a_gpu_server(server, tmp_path):
    if "cuda" not in os.environ.get("SGL_TEST_SERVER_ARGS", ""):
        pytest.skip("the server runs on the CPU (CUDA_PROFILER is refused there: above)")
    r = server.post("/start_profile", {"output_dir": str(tmp_path), "profile_id": "gpu",
                                       "activities": ["GPU", "CUDA_PROFILER"]})
    assert r.status_code == 200, r.text
    generate(server, "Once upon a time", 6)
    assert server.post("/stop_profile").status_code == 200
    spans = []
    for name in rank_names(server):
        spans += forward_spans(read_trace(tmp_path / f"gpu-{name}.trace.json.gz"))
    assert sum(s["args"]["tokens"] for s in spans if s["args"]["mode"] == "decode") == 5
    assert "CUDA_PROFILER" not in server.log(), server.log()  # no warning from the range calls
