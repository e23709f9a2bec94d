# SGLang's launch flags for how requests are taken and answered: --enable-cache-report (usage's
# prompt_tokens_details.cached_tokens), --allow-auto-truncate (a prompt past the context keeps
# its head, max_tokens is cut to the room left), --stream-interval (a stream sends a choice's
# tokens N at a time, the first and last at once) and --incremental-streaming-output /
# --stream-output (/generate streams deltas).
import json

import pytest

from conftest import Server, golden

CONTEXT = 512  # stories260K's
PROMPT = "Once upon a time, there was a little girl who lived in a village near the forest."


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("api_options"), "--enable-cache-report",
                 "--allow-auto-truncate", "--stream-interval", "4")
    yield srv
    assert srv.stop() == 0, srv.log()


@pytest.fixture(scope="module")
def incremental(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("incremental"), "--stream-output")
    yield srv
    assert srv.stop() == 0, srv.log()


def events(response):
    out = []
    for line in response.iter_lines():
        if line.startswith(b"data: ") and line != b"data: [DONE]":
            out.append(json.loads(line[6:]))
    return out


def test_server_info_reports_the_options(server, incremental):
    info = server.get("/get_server_info").json()
    assert (info["enable_cache_report"], info["allow_auto_truncate"], info["stream_interval"],
            info["incremental_streaming_output"]) == (True, True, 4, False)
    assert incremental.get("/get_server_info").json()["incremental_streaming_output"] is True


def test_usage_reports_cached_prompt_tokens(server):
    server.post("/flush_cache")
    body = {"model": "m", "prompt": PROMPT, "max_tokens": 2, "n": 2}
    first = server.post("/v1/completions", body).json()["usage"]
    assert first["prompt_tokens_details"] == {"cached_tokens": 0}, first
    again = server.post("/v1/completions", body).json()["usage"]
    # The prompt counted once, as its prompt_tokens are: all but its last token cached.
    assert again["prompt_tokens_details"]["cached_tokens"] == again["prompt_tokens"] - 1, again
    r = server.post("/v1/completions", {**body, "stream": True,
                                        "stream_options": {"include_usage": True}}, stream=True)
    usage = [e["usage"] for e in events(r) if e.get("usage")][-1]
    assert usage["prompt_tokens_details"]["cached_tokens"] == usage["prompt_tokens"] - 1


def test_a_prompt_past_the_context_keeps_its_head(server):
    ids = (golden()["cases"][0]["prompt_ids"] * 200)[:CONTEXT + 40]
    r = server.post("/generate", {"input_ids": ids, "sampling_params": {
        "max_new_tokens": 8, "temperature": 0}})
    assert r.status_code == 200, r.text
    meta = r.json()["meta_info"]
    assert meta["prompt_tokens"] == CONTEXT - 1
    assert meta["completion_tokens"] == 1  # the room left
    # A limit past the room left is cut to it.
    r = server.post("/v1/completions", {"model": "m", "prompt": PROMPT, "max_tokens": 100000,
                                        "temperature": 0, "ignore_eos": True})
    assert r.status_code == 200, r.text
    usage = r.json()["usage"]
    assert usage["prompt_tokens"] + usage["completion_tokens"] == CONTEXT


def test_streams_send_tokens_at_the_interval(server):
    r = server.post("/generate", {"text": PROMPT, "stream": True, "sampling_params": {
        "max_new_tokens": 14, "temperature": 0, "ignore_eos": True}}, stream=True)
    lengths = [len(e["output_ids"]) for e in events(r)]
    assert lengths[-1] == 14, lengths
    # After the first, each chunk brings at least 4 new tokens, but the last. (On a busy machine
    # all 14 may be there at the first poll: one chunk.)
    steps = [b - a for a, b in zip(lengths, lengths[1:])]
    assert all(s >= 4 for s in steps[:-1]) and all(s >= 1 for s in steps[-1:]), lengths
    assert len(lengths) <= 1 + 4, lengths


def test_generate_streams_deltas(incremental):
    sampling = {"max_new_tokens": 12, "temperature": 0, "ignore_eos": True}
    whole = incremental.post("/generate", {"text": PROMPT, "sampling_params": sampling,
                                           "return_logprob": True}).json()
    r = incremental.post("/generate", {"text": PROMPT, "sampling_params": sampling,
                                       "return_logprob": True, "stream": True}, stream=True)
    chunks = events(r)
    assert len(chunks) > 1
    assert sum((c["output_ids"] for c in chunks), []) == whole["output_ids"]
    assert "".join(c["text"] for c in chunks) == whole["text"]
    for c in chunks:
        assert len(c["meta_info"]["output_token_logprobs"]) == len(c["output_ids"])
    assert chunks[-1]["meta_info"]["completion_tokens"] == 12
