# SGLang's own benchmark client, bench_serving of the sglang release scripts/install_deps.sh
# pins (run by run_sglang_bench.py, which keeps torch out), against sgl-server: once for each
# backend it offers for SGLang servers, `sglang` (/generate), `sglang-oai` (/v1/completions) and
# `sglang-oai-chat` (/v1/chat/completions). Given only the address, it finds the model name
# (/v1/models) and its tokenizer (/model_info's path: it runs offline, so no other source would
# do), flushes the cache (/flush_cache), streams a ShareGPT-format dataset written here, and
# records /server_info in its result file. Every request must complete with the server's own
# greedy answer for its prompt, streamed in more than one piece.
import gzip
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Server, raise_fd_limit, require

SGLANG_VERSION = "0.5.23"  # the release scripts/install_deps.sh installs
# What the client imports besides numpy and requests (scripts/install_deps.sh installs them).
CLIENT_MODULES = ["aiohttp", "msgspec", "orjson", "tqdm", "transformers", "datasets", "PIL",
                  "pybase64", "psutil", "zmq"]
RUNNER = Path(__file__).with_name("run_sglang_bench.py")
OUTPUT_LEN = 16
PROMPTS = [
    "Once upon a time, there was a little girl named Lily.",
    "Tom had a red ball. He liked to play with it in the park.",
    "The sun was shining and the birds were singing.",
    "One day, a big dog came to the farm.",
    "Sam wanted to find the best stick in the forest.",
    "Mia and her mom went to the store to buy some milk.",
    "There was a small boat on the big blue sea.",
    "The cat sat on the mat and looked at the moon.",
]


def client_missing():
    if importlib.util.find_spec("sglang") is None:
        return "sglang is not installed"
    version = importlib.metadata.version("sglang")
    if version != SGLANG_VERSION:
        return f"sglang {version} is installed; run_sglang_bench.py is written for {SGLANG_VERSION}"
    missing = [m for m in CLIENT_MODULES if importlib.util.find_spec(m) is None]
    return f"the bench client's modules {missing} are missing" if missing else None


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    reason = client_missing()
    require(reason is None, f"{reason} (scripts/install_deps.sh installs SGLang's bench client)")
    raise_fd_limit()
    srv = Server(tmp_path_factory.mktemp("bench"))
    yield srv
    assert srv.alive(), "the server died: " + srv.log()
    assert srv.stop() == 0, srv.log()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("dataset") / "sharegpt.json"
    # ShareGPT's layout; the reply only sets a length, which --sharegpt-output-len overrides.
    path.write_text(json.dumps([{"conversations": [{"from": "human", "value": p},
                                                   {"from": "gpt", "value": "The end."}]}
                                for p in PROMPTS]))
    return path


def greedy_answer(server, backend, prompt):
    """The server's answer to the request the client sends, asked without streaming; both
    completion backends against /v1/completions (the native route must agree with it)."""
    common = {"temperature": 0, "ignore_eos": True}
    if backend == "sglang-oai-chat":
        r = server.post("/v1/chat/completions",
                        {"messages": [{"role": "user", "content": prompt}],
                         "max_completion_tokens": OUTPUT_LEN, **common})
        assert r.status_code == 200, r.text
        return r.json()["choices"][0]["message"]["content"]
    r = server.post("/v1/completions", {"prompt": prompt, "max_tokens": OUTPUT_LEN, **common})
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["text"]


def run_bench(server, backend, dataset, workdir, *extra_args):
    result_file = workdir / "result.jsonl"
    args = [sys.executable, str(RUNNER), "--backend", backend, "--host", server.host, "--port",
            str(server.port), "--dataset-name", "sharegpt", "--dataset-path", str(dataset),
            "--num-prompts", str(len(PROMPTS)), "--sharegpt-output-len", str(OUTPUT_LEN),
            "--flush-cache", "--output-file", str(result_file), "--output-details",
            "--disable-tqdm", "--ready-check-timeout-sec", "30", *extra_args]
    # Offline: CI reaches no model hub, and the tokenizer must come from /model_info's path. The
    # working directory is empty so that the model name never resolves to a local folder.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_HOME": str(workdir / "hf")}
    proc = subprocess.run(args, cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    lines = result_file.read_text().splitlines()
    assert len(lines) == 1, output[-6000:]
    return json.loads(lines[0]), output


@pytest.mark.parametrize("backend", ["sglang", "sglang-oai", "sglang-oai-chat"])
def test_bench_serving_backend(server, dataset, backend, tmp_path):
    result, output = run_bench(server, backend, dataset, tmp_path)
    n = len(PROMPTS)
    assert result["backend"] == backend
    assert result["completed"] == n and result["errors"] == [""] * n, output[-6000:]
    # The model name came from /v1/models (no --model given).
    assert "model='stories260K'" in output
    # Each request's streamed text is the server's greedy answer to its prompt (the client sends
    # temperature 0 and ignore_eos), so every token arrived and none twice.
    expected = sorted(greedy_answer(server, backend, p) for p in PROMPTS)
    assert all(expected), expected
    assert sorted(result["generated_texts"]) == expected
    # More than one chunk: the answers were streamed. (Not every request: on a loaded machine a
    # request of this tiny model can finish before its first chunk is written, and the server
    # then sends what it has in one chunk.)
    assert any(len(itl) > 0 for itl in result["itls"]), result["itls"]
    assert all(t > 0 for t in result["ttfts"])
    if backend == "sglang":
        # /generate's meta_info counts: OUTPUT_LEN tokens each, and the prompt as the client's
        # tokenizer counts it (BOS included on both sides).
        assert result["output_lens"] == [OUTPUT_LEN] * n
        assert sum(result["input_lens"]) == result["total_input_tokens"]
    info = result["server_info"]
    assert info is not None, "the client recorded no /server_info"
    live = server.get("/server_info").json()
    for key in ("version", "model_path", "served_model_name", "context_length"):
        assert info[key] == live[key]
    assert info["internal_states"], info  # where the client looks for speculative stats


def test_bench_serving_profile(server, dataset, tmp_path):
    """--profile: the client starts the server's profiler before its requests and stops it
    after them (/start_profile, /stop_profile); the traces land in a folder it makes under
    --profile-output-dir, one per engine replica, with every pass of the run in them."""
    traces = tmp_path / "traces"
    result, output = run_bench(server, "sglang", dataset, tmp_path, "--profile",
                               "--profile-output-dir", str(traces))
    assert result["completed"] == len(PROMPTS), output[-6000:]
    assert "Profiler started" in output and "Profiler stopped" in output, output[-6000:]
    folders = list(traces.iterdir())
    assert len(folders) == 1, folders  # the client's <time> folder
    files = sorted(folders[0].glob("*.trace.json.gz"))
    replicas = len(server.states())
    assert len(files) == replicas, files
    assert all("-TP-0" in f.name for f in files), files
    passes = []
    for f in files:
        with gzip.open(f, "rt") as trace:
            passes += [e for e in json.load(trace)["traceEvents"]
                       if e["ph"] == "X" and e["tid"] == 2]
    # Each request's last OUTPUT_LEN - 1 tokens come from decode entries (alone or beside a
    # prefill): at least that many passes, each of at most every request.
    assert len(passes) >= OUTPUT_LEN - 1, passes
    assert all(1 <= p["args"]["requests"] <= len(PROMPTS) for p in passes), passes
    assert any(p["args"]["mode"] == "decode" for p in passes), passes
