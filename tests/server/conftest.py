# Shared fixtures for the sgl-server end-to-end suites: launch the server binary on the
# stories260K test model with an ephemeral port, wait for /health, stop it with SIGTERM.
import json
import os
import resource
import select
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

try:
    import requests
except ImportError:  # the suites skip (scripts/install_deps.sh installs it)
    requests = None

REPO = Path(__file__).resolve().parents[2]
TESTDATA = Path(os.environ.get("SGL_TESTDATA_DIR", REPO.parent / "shared" / "testdata"))
MODEL = TESTDATA / "models" / "stories260K"
GOLDEN = TESTDATA / "golden" / "stories260K.json"

# A tiny chat template: plain "User: ... / Assistant:" turns. A system message "RAISE" makes it
# raise (to test template errors); tools are counted into the prompt (to test they reach it).
CHAT_TEMPLATE = """{{ bos_token }}
{%- if tools %}Tools: {{ tools | length }}
{% endif %}
{%- for message in messages %}
{%- if message['role'] == 'system' and message['content'] == 'RAISE' %}
{{- raise_exception('system message RAISE is not allowed') }}
{%- endif %}
{%- if message['role'] == 'user' %}User: {{ message['content'] }}
{% elif message['role'] == 'assistant' %}Assistant: {{ message['content'] }}
{% else %}{{ message['content'] }}
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}Assistant:{% endif %}"""


def server_binary():
    env = os.environ.get("SGL_SERVER_BIN")
    if env:
        return Path(env)
    for candidate in sorted(REPO.glob("build*/**/src/app/sgl-server")) + sorted(
            REPO.glob("build*/src/app/sgl-server")):
        if candidate.is_file():
            return candidate
    return None


def require(available, reason):
    """Skips the calling test or fixture when a client or tool it drives is missing here. CI sets
    SGL_TEST_REQUIRE_CLIENTS=1 (.ci/run), as scripts/install_deps.sh installs them all: there a
    missing one fails the test instead, so CI cannot pass by skipping it."""
    if available:
        return
    if os.environ.get("SGL_TEST_REQUIRE_CLIENTS") == "1":
        pytest.fail(f"{reason} (and SGL_TEST_REQUIRE_CLIENTS=1)", pytrace=False)
    pytest.skip(reason)


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def server_args_from_env():
    """SGL_TEST_SERVER_ARGS: flags for every server a suite starts through Server (e.g.
    "--device cuda --dtype float32"); a suite's own flags come after them and win (the last value
    holds)."""
    return shlex.split(os.environ.get("SGL_TEST_SERVER_ARGS", ""))


def gpu_count():
    """GPUs nvidia-smi lists (0 without one)."""
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def serves_on_gpu():
    args = server_args_from_env()
    return (any(a == "--device" and v.startswith("cuda") for a, v in zip(args, args[1:]))
            or any(a.startswith("--device=cuda") for a in args))


def skip_unless_gpus_for_tp(tp):
    """Skips a test serving at --tp-size `tp` on a GPU machine with too few GPUs: tensor-parallel
    replicas do not share GPUs, so SGL_TEST_DP_SIZE of them take dp x tp."""
    gpus = tp * int(os.environ.get("SGL_TEST_DP_SIZE") or 1)
    if tp > 1 and serves_on_gpu() and gpu_count() < gpus:
        pytest.skip(f"--tp-size {tp} here takes {gpus} GPUs; this machine has {gpu_count()}")


class Server:
    """One sgl-server process."""

    def __init__(self, workdir, *extra_args, model=None, served_model_name="stories260K"):
        """`model` defaults to stories260K with the tiny test chat template; any other model
        (e.g. the default GGUF) uses its own template."""
        if requests is None:
            pytest.skip("the requests package is not installed")
        binary = server_binary()
        model_path = Path(model) if model else MODEL
        if binary is None or not model_path.exists():
            pytest.skip(f"sgl-server binary or the model {model_path} is missing")
        self.stderr_path = Path(workdir) / f"server-{time.monotonic_ns()}.err"
        self.stderr = open(self.stderr_path, "wb")
        args = [str(binary), "--model-path", str(model_path), "--host", "127.0.0.1", "--port",
                "0", "--served-model-name", served_model_name]
        args += server_args_from_env()
        if model is None:
            template = Path(workdir) / "chat_template.jinja"
            template.write_text(CHAT_TEMPLATE)
            args += ["--chat-template", str(template)]
        args += list(extra_args)
        # SGL_TEST_DP_SIZE=N runs a suite behind N engine replicas, unless it sets --dp-size or
        # serves across nodes (which --dp-size refuses).
        dp = os.environ.get("SGL_TEST_DP_SIZE")
        if dp and not any(a.split("=")[0] in ("--dp-size", "--dp", "--data-parallel-size",
                                                "--nnodes") for a in args):
            args += ["--dp-size", dp]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.stderr)
        self.url = self._wait_for_url(timeout=120)
        self.host, self.port = "127.0.0.1", int(self.url.rsplit(":", 1)[1])
        deadline = time.monotonic() + 60
        while requests.get(self.url + "/health", timeout=10).status_code != 200:
            assert time.monotonic() < deadline, "server never became healthy"
            time.sleep(0.1)

    def _wait_for_url(self, timeout):
        deadline = time.monotonic() + timeout
        line = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.5)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                if not chunk:
                    break
                line += chunk
                if b"\n" in line:
                    text = line.decode()
                    assert "sgl-server listening on http://" in text, text
                    return text.split("listening on ", 1)[1].split()[0]
            if self.proc.poll() is not None:
                break
        raise AssertionError(f"server did not start: {self.log()}")

    def log(self):
        self.stderr.flush()
        return self.stderr_path.read_text(errors="replace")[-4000:]

    def alive(self):
        return self.proc.poll() is None

    def stop(self, timeout=30):
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
            raise AssertionError("server did not exit within %ss after SIGTERM" % timeout)
        finally:
            self.stderr.close()
        return code

    # Helpers
    def post(self, path, body=None, **kwargs):
        kwargs.setdefault("timeout", 60)
        if body is not None and not isinstance(body, (bytes, str)):
            return requests.post(self.url + path, json=body, **kwargs)
        return requests.post(self.url + path, data=body, **kwargs)

    def get(self, path, **kwargs):
        kwargs.setdefault("timeout", 60)
        return requests.get(self.url + path, **kwargs)

    def state(self):
        """Replica 0's engine state."""
        return self.states()[0]

    def states(self):
        """Every engine replica's state (one per --dp-size replica)."""
        return self.get("/get_server_info").json()["internal_states"]

    def wait_idle_no_leak(self, timeout=20):
        """Waits until nothing runs and every used KV slot belongs to the cache, on every
        replica; returns replica 0's state."""
        deadline = time.monotonic() + timeout
        while True:
            states = self.states()
            if all(s["num_running_reqs"] == 0 and s["num_waiting_reqs"] == 0
                   and s["kv_used"] - s["kv_cached"] == 0 for s in states):
                return states[0]
            assert time.monotonic() < deadline, f"KV leak or stuck requests: {states}"
            time.sleep(0.05)


def raw_request(host, port, data, timeout=10.0, read=True):
    """Sends raw bytes; returns everything the server answers before closing (or timing out)."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(data)
        if not read:
            return b""
        out = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
                if b"\r\n\r\n" in out and _complete(out):
                    break
        except socket.timeout:
            pass
        return out


def _complete(response):
    head, _, body = response.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip())
    return False


def http_post(path, body, host="127.0.0.1", extra_headers=b""):
    if isinstance(body, str):
        body = body.encode()
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: " + host.encode() +
            b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(body)).encode() +
            b"\r\n" + extra_headers + b"\r\n" + body)


def status_of(response):
    line = response.split(b"\r\n", 1)[0]
    parts = line.split()
    return int(parts[1]) if len(parts) >= 2 and parts[1].isdigit() else None


def abort_while_running(server, send, rid, landed, tries=5):
    """Runs send() (a request that takes a while) on a thread and aborts `rid` while it runs;
    returns send()'s result once landed(result) says the abort cut it short. An abort that lands
    after the reply finished (the id is known until the reply is sent) or before the request is
    known is tried again."""
    for _ in range(tries):
        result = {}
        t = threading.Thread(target=lambda: result.update(r=send()))
        t.start()
        deadline, aborted = time.monotonic() + 10, False
        while t.is_alive() and time.monotonic() < deadline and not aborted:
            aborted = server.post("/abort_request", {"rid": rid}).json()["success"]
        t.join(30)
        server.wait_idle_no_leak()
        if aborted and landed(result["r"]):
            return result["r"]
    raise AssertionError(f"no abort of {rid!r} landed while its request ran, in {tries} tries")


def stream_chunks(response):
    """The JSON chunks of an OpenAI-style event stream, after checking it succeeded and ended
    with data: [DONE]."""
    assert response.status_code == 200, response.text
    lines = [line for line in response.iter_lines() if line.startswith(b"data: ")]
    assert lines[-1] == b"data: [DONE]"
    return [json.loads(line[len(b"data: "):]) for line in lines[:-1]]


def golden():
    return json.loads(GOLDEN.read_text())


def make_embedding_models(out):
    """The tiny Qwen3 embedding models (tiny-qwen3-embedding-last / -mean) written into `out` by
    scripts/make_tiny_embedding_model.py; returns `out`."""
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_tiny_embedding_model.py"),
                    "--testdata", str(TESTDATA), str(out)], check=True)
    return Path(out)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    raise_fd_limit()
    srv = Server(tmp_path_factory.mktemp("server"))
    yield srv
    assert srv.alive(), "the server died: " + srv.log()
    assert srv.stop() == 0, srv.log()
