# Requests the server aborts (SGLang's FINISH_ABORT with a status: a timeout, a full queue,
# shutdown) end as errors, as SGLang answers them: the error response with that status, or an
# error event on a stream already answered 200; a request the client aborts stays a reply. The
# server here runs every request into SGLANG_REQ_RUNNING_TIMEOUT (1 ms).
import json
import subprocess

import pytest

from conftest import Server, raise_fd_limit, server_binary, MODEL

LONG = {"max_tokens": 200, "ignore_eos": True, "temperature": 0}
TIMED_OUT = "request timed out while running"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    raise_fd_limit()
    mp = pytest.MonkeyPatch()
    mp.setenv("SGLANG_REQ_RUNNING_TIMEOUT", "0.001")
    try:
        srv = Server(tmp_path_factory.mktemp("server"))
    finally:
        mp.undo()
    yield srv
    assert srv.alive(), "the server died: " + srv.log()
    assert srv.stop() == 0, srv.log()


def data_lines(r):
    return [line[len(b"data: "):] for line in r.iter_lines() if line.startswith(b"data: ")]


def assert_openai_error(body):
    error = body["error"]
    assert error["code"] == 503 and error["message"] == TIMED_OUT, body


def test_completions_answer_503(server):
    r = server.post("/v1/completions", {"model": "m", "prompt": "Once", **LONG})
    assert r.status_code == 503, r.text
    assert_openai_error(r.json())
    # Every choice ends with it.
    r = server.post("/v1/completions", {"model": "m", "prompt": ["Once", "Upon"], "n": 2, **LONG})
    assert r.status_code == 503, r.text


def test_completions_stream_ends_with_the_error_event(server):
    r = server.post("/v1/completions", {"model": "m", "prompt": "Once", "stream": True,
                                        "stream_options": {"include_usage": True}, **LONG},
                    stream=True)
    assert r.status_code == 200
    lines = data_lines(r)
    assert lines[-1] == b"[DONE]"
    chunks = [json.loads(line) for line in lines[:-1]]
    errors = [c for c in chunks if "error" in c]
    assert len(errors) == 1, chunks
    assert_openai_error(errors[0])
    # No choice reports the abort as a finish; the usage chunk still follows the error.
    assert not any(ch.get("finish_reason") == "abort" for c in chunks
                   for ch in c.get("choices", []))
    assert "usage" in chunks[-1] and chunks.index(errors[0]) < len(chunks) - 1


def test_chat_answers_503_and_streams_the_error(server):
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], **LONG}
    r = server.post("/v1/chat/completions", body)
    assert r.status_code == 503, r.text
    assert_openai_error(r.json())
    r = server.post("/v1/chat/completions", {**body, "stream": True}, stream=True)
    lines = data_lines(r)
    assert lines[-1] == b"[DONE]"
    assert_openai_error(json.loads(lines[-2]))


def test_generate_answers_503_and_streams_the_status(server):
    sampling = {"max_new_tokens": 200, "ignore_eos": True, "temperature": 0}
    r = server.post("/generate", {"text": "Once", "sampling_params": sampling})
    assert r.status_code == 503, r.text
    assert_openai_error(r.json())
    # SGLang streams the failed item as any other, its finish_reason carrying the status.
    r = server.post("/generate", {"text": "Once", "stream": True, "sampling_params": sampling},
                    stream=True)
    lines = data_lines(r)
    assert lines[-1] == b"[DONE]"
    finish = json.loads(lines[-2])["meta_info"]["finish_reason"]
    assert finish == {"type": "abort", "message": TIMED_OUT, "status_code": 503}, finish


def test_messages_answer_overloaded(server):
    body = {"model": "m", "max_tokens": 200, "messages": [{"role": "user", "content": "hi"}],
            "temperature": 0}
    r = server.post("/v1/messages", body)
    assert r.status_code == 503, r.text
    assert r.json()["error"] == {"type": "overloaded_error", "message": TIMED_OUT}
    # Streamed: the open text block is closed, then the error event and message_stop (SGLang's).
    r = server.post("/v1/messages", {**body, "stream": True}, stream=True)
    assert r.status_code == 200
    events = [json.loads(line) for line in data_lines(r)]
    kinds = [e["type"] for e in events]
    assert kinds[-2:] == ["error", "message_stop"], kinds
    assert events[-2]["error"] == {"type": "overloaded_error", "message": TIMED_OUT}
    assert kinds.count("content_block_start") == kinds.count("content_block_stop") == 1, kinds


def test_ollama_answers_503_and_an_error_line(server):
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "options": {"temperature": 0, "num_predict": 200}}
    r = server.post("/api/chat", {**body, "stream": False})
    assert r.status_code == 503 and r.json() == {"error": TIMED_OUT}, r.text
    r = server.post("/api/chat", body, stream=True)  # streamed by default
    lines = [json.loads(line) for line in r.iter_lines() if line]
    assert lines[-1] == {"error": TIMED_OUT}, lines


def test_responses_answer_503_and_stream_failed(server):
    body = {"model": "m", "input": "hi", "max_output_tokens": 200, "temperature": 0}
    r = server.post("/v1/responses", body)
    assert r.status_code == 503, r.text
    assert_openai_error(r.json())
    r = server.post("/v1/responses", {**body, "stream": True}, stream=True)
    events = [line for line in r.iter_lines() if line.startswith(b"event: ")]
    assert events[-1] == b"event: response.failed", events


def test_the_server_stays_healthy(server):
    for _ in range(3):
        assert server.post("/v1/completions", {"model": "m", "prompt": "x", **LONG}).status_code == 503
    # /health generates a token, and its probe times out too: a running timeout is the engine's
    # progress, however the abort and the step that ran the probe interleave.
    for _ in range(20):
        assert server.get("/health").status_code == 200
        assert server.get("/health_generate").status_code == 200
    server.wait_idle_no_leak()


def test_a_malformed_timeout_is_refused(tmp_path):
    binary = server_binary()
    if binary is None or not MODEL.exists():
        pytest.skip("sgl-server binary or the model is missing")
    out = subprocess.run([str(binary), "--model-path", str(MODEL), "--port", "0"],
                         env={"SGLANG_REQ_WAITING_TIMEOUT": "soon"}, capture_output=True,
                         timeout=60)
    assert out.returncode != 0
    assert b"SGLANG_REQ_WAITING_TIMEOUT must be a number of seconds, got 'soon'" in out.stderr
