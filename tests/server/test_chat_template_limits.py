# Untrusted chat templates and large texts: renders run on the work pool under limits, answer
# 400 naming the template and the limit, stop when the client goes away or the server stops,
# and a template broken at start fails at start.
import json
import socket
import threading
import time

import pytest

from conftest import MODEL, Server, http_post, raise_fd_limit, requests

# Quadratic string building, except on the start check's one "Hello" message.
QUADRATIC = ("{% if messages[0].content != 'Hello' %}{% set ns = namespace(s='') %}"
             "{% for i in range(100000) %}{% set ns.s = ns.s + 'xxxxxxxxxxxxxxxxxxxxxxxx' %}"
             "{% endfor %}{{ ns.s }}{% endif %}User: {{ messages[0].content }}\nAssistant:")
# Exponential macro fan-out on a message "SLOW": it runs until the work limit (about a second).
SLOW = ("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
        "{% if messages[0].content == 'SLOW' %}{{ f(40) }}{% endif %}"
        "User: {{ messages[0].content }}\nAssistant:")
BROKEN = "{{ raise_exception('broken on purpose') }}"


def model_dir(path, chat_template):
    """stories260K with `chat_template` in its tokenizer_config.json."""
    path.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (path / name).symlink_to(MODEL / name)
    config = json.loads((MODEL / "tokenizer_config.json").read_text())
    config["chat_template"] = chat_template
    (path / "tokenizer_config.json").write_text(json.dumps(config))
    return path


def chat(content, max_tokens=4):
    return {"messages": [{"role": "user", "content": content}], "max_tokens": max_tokens}


def metric(server, name):
    for line in server.get("/metrics").text.splitlines():
        if line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no metric {name}")


def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def start(tmp_path, chat_template, name="model"):
    raise_fd_limit()
    return Server(tmp_path, model=model_dir(tmp_path / name, chat_template))


def test_quadratic_template_answers_400_naming_the_limit(tmp_path):
    srv = start(tmp_path, QUADRATIC)
    try:
        result = {}
        thread = threading.Thread(
            target=lambda: result.update(r=srv.post("/v1/chat/completions", chat("hi"))))
        t0 = time.monotonic()
        thread.start()
        assert srv.get("/health", timeout=5).status_code == 200  # while it renders
        thread.join(30)
        r = result["r"]
        # NOTE: the work limit stops it in about a second; under ThreadSanitizer the render's
        # 10 s deadline may come first, which also bounds it.
        assert time.monotonic() - t0 < 20
        assert r.status_code == 400, r.text
        message = r.json()["error"]["message"]
        assert message.startswith(f"chat template {tmp_path / 'model'}"), message
        assert "work limit" in message or "deadline exceeded" in message, message
        # Streaming too: the event stream's 200 head waits for its first event, so the error
        # is a plain 400.
        r = srv.post("/v1/chat/completions", {**chat("hi"), "stream": True})
        assert r.status_code == 400, r.text
        streamed = r.json()["error"]["message"]
        assert "work limit" in streamed or "deadline exceeded" in streamed, streamed
        assert srv.post("/v1/chat/completions", chat("Hello")).status_code == 200
        r = srv.post("/v1/chat/completions", {**chat("Hello"), "stream": True})
        assert r.status_code == 200 and r.text.rstrip().endswith("data: [DONE]"), r.text
    finally:
        assert srv.stop() == 0, srv.log()


def test_explicit_broken_template_refuses_to_start(tmp_path):
    template = tmp_path / "broken.jinja"
    template.write_text(BROKEN)
    with pytest.raises(AssertionError) as failed:
        Server(tmp_path, "--chat-template", str(template), model=MODEL)
    assert "broken on purpose" in str(failed.value)
    assert str(template) in str(failed.value)


def test_tokenizer_broken_template_disables_chat(tmp_path):
    srv = start(tmp_path, BROKEN)
    try:
        r = srv.post("/v1/chat/completions", chat("hi"))
        assert r.status_code == 400
        assert "no chat template" in r.json()["error"]["message"]
        assert srv.post("/v1/completions", {"prompt": "Once", "max_tokens": 2}).status_code == 200
        assert "chat completions are disabled" in srv.log()
        assert "broken on purpose" in srv.log()
    finally:
        assert srv.stop() == 0, srv.log()


def send_and_keep(srv, body):
    s = socket.create_connection((srv.host, srv.port), timeout=10)
    s.sendall(http_post("/v1/chat/completions", json.dumps(body)))
    return s


def test_disconnect_cancels_the_render(tmp_path):
    srv = start(tmp_path, SLOW)
    try:
        before = metric(srv, "sgl:prepare_cancelled_total")
        clients = [send_and_keep(srv, chat("SLOW")) for _ in range(4)]
        wait_until(lambda: metric(srv, "sgl:num_preparing_reqs") == 4, 10, "renders never queued")
        for c in clients:
            c.close()
        wait_until(lambda: metric(srv, "sgl:prepare_cancelled_total") == before + 4, 20,
                   "the renders were not cancelled")
        wait_until(lambda: metric(srv, "sgl:num_preparing_reqs") == 0, 10, "renders left over")
        assert srv.post("/v1/chat/completions", chat("Hello")).status_code == 200
    finally:
        assert srv.stop() == 0, srv.log()


def test_sigterm_during_slow_renders_exits_promptly(tmp_path):
    srv = start(tmp_path, SLOW)
    clients = [send_and_keep(srv, chat("SLOW")) for _ in range(8)]
    try:
        wait_until(lambda: metric(srv, "sgl:num_preparing_reqs") == 8, 10, "renders never queued")
        t0 = time.monotonic()
        # Eight renders of about a second each on a pool of two threads: waiting for them would
        # take several seconds; cancelled, they stop within milliseconds.
        assert srv.stop(timeout=30) == 0, srv.log()
        assert time.monotonic() - t0 < 3, srv.log()
        for c in clients:
            answer = c.recv(4096)
            assert answer == b"" or answer.startswith(b"HTTP/1.1 503"), answer
    finally:
        for c in clients:
            c.close()


def test_texts_over_the_limit_are_400(tmp_path):
    raise_fd_limit()
    srv = Server(tmp_path)
    try:
        r = srv.post("/tokenize", {"prompt": "a" * (2 << 20)})
        assert r.status_code == 400, r.text
        message = r.json()["error"]["message"]
        assert "'prompt' is 2097152 bytes long; the limit is 1048576 bytes" in message, message
        r = srv.post("/v1/completions", {"prompt": "a " * (1 << 20), "max_tokens": 1})
        assert r.status_code == 400 and "the limit is 1048576 bytes" in r.text, r.text
        # The chat routes: the rendered conversation, before it is tokenized.
        big = [{"role": "user", "content": "a" * (2 << 20)}]
        for path, body in [("/v1/chat/completions", {"messages": big, "max_tokens": 1}),
                           ("/v1/messages", {"messages": big, "max_tokens": 1, "model": "m"}),
                           ("/v1/responses", {"input": big, "max_output_tokens": 16})]:
            r = srv.post(path, body)
            assert r.status_code == 400 and "'messages' is" in r.text, (path, r.text)
        r = srv.post("/tokenize", {"prompt": "Once upon a time"})
        assert r.status_code == 200 and r.json()["count"] > 0
    finally:
        assert srv.stop() == 0, srv.log()
