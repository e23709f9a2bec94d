# sgl-server across two nodes, as two processes on this machine (--nnodes 2 --tp-size 2: one
# tensor-parallel rank each, joined over TCP): node 0 serves HTTP and sends its batches to node 1,
# and its outputs equal one process's at --tp-size 1 (greedy, seeded n > 1, streaming); SIGTERM
# on node 0 stops node 1 too; a node 1 whose flags differ is refused with the reason on both
# ends; node 1 exits with an error when node 0 dies, and node 0 when node 1 dies; bad layouts
# stop the start.
import signal
import socket
import subprocess
import time

import pytest

from conftest import MODEL, Server, golden, raise_fd_limit, server_binary

PROMPTS = [c["prompt"] for c in golden()["cases"]]


def free_port_pair():
    """A port P with P + 1 free too (the node link and the ranks' group)."""
    for _ in range(64):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            if port == 65535:
                continue
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
            return port
    raise AssertionError("no free port pair")


def binary_or_skip():
    binary = server_binary()
    if binary is None or not MODEL.exists():
        pytest.skip("sgl-server or the model is missing")
    return binary


class Follower:
    """sgl-server --node-rank 1: no HTTP, its ranks run node 0's batches."""

    def __init__(self, workdir, port, *extra):
        self.stderr_path = workdir / f"node1-{time.monotonic_ns()}.err"
        self.stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            [str(binary_or_skip()), "--model-path", str(MODEL), "--nnodes", "2", "--node-rank",
             "1", "--dist-init-addr", f"127.0.0.1:{port}", "--log-level", "info", *extra],
            stdout=subprocess.DEVNULL, stderr=self.stderr)

    def wait(self, timeout=30):
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self.stderr.close()

    def log(self):
        return self.stderr_path.read_text(errors="replace")[-4000:]


def node_flags(port, tp="2"):
    return ["--tp-size", tp, "--nnodes", "2", "--dist-init-addr", f"127.0.0.1:{port}"]


def start_two_nodes(workdir):
    """Node 1 (a Follower), then node 0 (a Server): --tp-size 2, one rank each."""
    raise_fd_limit()
    port = free_port_pair()
    follower = Follower(workdir, port, "--tp-size", "2")
    return Server(workdir, *node_flags(port), "--node-rank", "0"), follower


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("tp1"))
    yield srv
    assert srv.stop() == 0, srv.log()


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory):
    srv, follower = start_two_nodes(tmp_path_factory.mktemp("nodes"))
    yield srv, follower
    if srv.alive():
        srv.stop()
    if follower.proc.poll() is None:
        follower.proc.kill()
        follower.wait()


def generate(srv, text, **sampling):
    body = {"text": text, "sampling_params": {"temperature": 0, "max_new_tokens": 32, **sampling}}
    r = srv.post("/generate", body)
    assert r.status_code == 200, r.text
    return r.json()


def test_two_nodes_serve_what_one_process_serves(one_process, two_nodes):
    srv, follower = two_nodes
    for prompt in PROMPTS:
        assert generate(srv, prompt)["text"] == generate(one_process, prompt)["text"], prompt
    # Seeded samples (n > 1) and a stream: the same on both.
    body = {"model": "stories260K", "prompt": PROMPTS[0], "max_tokens": 16, "temperature": 0.9,
            "seed": 7, "n": 3}
    texts = [sorted(c["text"] for c in s.post("/v1/completions", body).json()["choices"])
             for s in (srv, one_process)]
    assert texts[0] == texts[1]
    streamed = srv.post("/v1/completions", {**body, "n": 1, "stream": True}, stream=True)
    assert streamed.status_code == 200 and b"[DONE]" in streamed.content
    srv.wait_idle_no_leak()  # asserts: nothing running, no KV slot leaked
    assert follower.proc.poll() is None, follower.log()


def test_sigterm_on_node_zero_stops_node_one(two_nodes):
    srv, follower = two_nodes
    generate(srv, PROMPTS[0])
    assert srv.stop() == 0, srv.log()
    assert follower.wait() == 0, follower.log()
    assert "node 0 stopped after" in follower.log()


def test_sigterm_while_node_zero_waits_for_the_others_exits_at_once(tmp_path):
    # Before the server listens there is nothing to drain: a signal ends the wait for a node
    # that never comes (it was pending until the join timed out) and the load with it.
    binary = binary_or_skip()
    err = tmp_path / "node0.err"
    with open(err, "wb") as stderr:
        node0 = subprocess.Popen(
            [str(binary), "--model-path", str(MODEL), "--port", "0", *node_flags(free_port_pair()),
             "--node-rank", "0", "--log-level", "info"], stdout=subprocess.DEVNULL, stderr=stderr)
        deadline = time.monotonic() + 30
        while "waiting for 1 other node(s)" not in err.read_text():
            assert node0.poll() is None and time.monotonic() < deadline, err.read_text()
            time.sleep(0.05)
        node0.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        assert node0.wait(timeout=30) == 0, err.read_text()
    assert time.monotonic() - t0 < 2, err.read_text()
    assert "signal 15 while loading the model: exiting" in err.read_text()


def expect_refused(tmp_path, reason, *follower_flags):
    """Node 0 (--tp-size 2 over two nodes) and a node 1 started with `follower_flags`: both end
    with status 1, node 0 saying `reason` and node 1 that node 0 refused it for it."""
    binary = binary_or_skip()
    port = free_port_pair()
    node0 = subprocess.Popen(
        [str(binary), "--model-path", str(MODEL), "--port", "0", *node_flags(port),
         "--node-rank", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    follower = Follower(tmp_path, port, *follower_flags)
    assert follower.wait() == 1
    _, err0 = node0.communicate(timeout=30)
    assert node0.returncode == 1 and reason in err0, err0
    assert "node 0 refused this node: " + reason in follower.log(), follower.log()


def test_a_node_with_other_flags_is_refused_on_both_ends(tmp_path):
    expect_refused(tmp_path,
                   "node 1 runs with --tp-size 4 --ep-size 1 --nnodes 2; node 0 with --tp-size 2",
                   "--tp-size", "4")


# The KV cache's dtype is one of the engine flags every node must share.
def test_a_node_with_another_kv_cache_dtype_is_refused(tmp_path):
    expect_refused(tmp_path, "node 1's engine flags", "--tp-size", "2", "--kv-cache-dtype",
                   "fp8_e4m3")


def test_node_one_ends_with_an_error_when_node_zero_dies(tmp_path):
    srv, follower = start_two_nodes(tmp_path)
    generate(srv, PROMPTS[0])
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait()
    srv.stderr.close()
    assert follower.wait() == 1, follower.log()
    assert "node 0 closed the link" in follower.log(), follower.log()


def test_node_zero_stops_when_node_one_dies(tmp_path):
    srv, follower = start_two_nodes(tmp_path)
    generate(srv, PROMPTS[0])
    follower.proc.send_signal(signal.SIGKILL)
    follower.wait()
    # Its ranks' shards are gone: node 0 ends at once, saying why (not a server that hangs).
    assert srv.proc.wait(timeout=30) == 1
    log = srv.log()
    srv.stderr.close()
    assert "node 1 is gone: its tensor-parallel ranks are lost" in log, log


@pytest.mark.parametrize("args, code, message", [
    (["--nnodes", "2", "--tp-size", "2"], 2, "needs --dist-init-addr"),
    (["--nnodes", "2", "--node-rank", "2", "--dist-init-addr", "127.0.0.1:5000"], 2,
     "--node-rank 2 is not in [0, --nnodes 2)"),
    (["--nnodes", "2", "--tp-size", "3", "--dist-init-addr", "127.0.0.1:1"], 1,
     "--tp-size 3 does not split evenly over --nnodes 2"),
    (["--nnodes", "2", "--tp-size", "2", "--dp-size", "2", "--dist-init-addr", "127.0.0.1:1"],
     1, "--dp-size 2 with --nnodes 2 is not implemented"),
    (["--nnodes", "2", "--node-rank", "1", "--tp-size", "2", "--dp-size", "2",
      "--dist-init-addr", "127.0.0.1:1"], 1, "--dp-size 2 with --nnodes 2 is not implemented"),
])
def test_bad_layouts_stop_the_start(args, code, message):
    out = subprocess.run([str(binary_or_skip()), "--model-path", str(MODEL), "--port", "0",
                          *args], capture_output=True, text=True, timeout=30)
    assert out.returncode == code and message in out.stderr, out.stderr


def test_other_tools_run_on_one_node():
    generate_bin = binary_or_skip().parent / "sgl-generate"
    if not generate_bin.exists():  # a build of the server alone (CI's ThreadSanitizer stage)
        pytest.skip("sgl-generate is not built beside sgl-server")
    out = subprocess.run([str(generate_bin), "--model-path", str(MODEL), "--prompt", "a",
                          "--nnodes", "2", "--dist-init-addr", "127.0.0.1:1"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode != 0
    assert "sgl-generate runs on one node; sgl-server serves across nodes" in out.stderr
