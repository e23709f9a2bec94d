# End-to-end tests of sgl-server on stories260K through the official openai client (and plain
# HTTP for SGLang's native endpoints): golden greedy output, streaming, n, stop, logprobs, seeds,
# usage, disconnect aborts without KV leaks, concurrency, API key, queue limits, drain.
import asyncio
import itertools
import json
import re
import signal
import socket
import threading
import time

import pytest
import requests

from conftest import (Server, abort_while_running, golden, http_post, raise_fd_limit,
                      status_of)

openai = pytest.importorskip("openai")

PROMPT = "Once upon a time"


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def case(prompt=PROMPT):
    return next(c for c in golden()["cases"] if c["prompt"] == prompt)


def test_health_models_and_info(server, client):
    assert server.get("/health").status_code == 200
    models = client.models.list()
    assert [m.id for m in models.data] == ["stories260K"]
    assert client.models.retrieve("stories260K").id == "stories260K"
    assert server.get("/v1/models/stories260%4b").json()["id"] == "stories260K"  # %-escaped
    with pytest.raises(openai.NotFoundError) as missing:
        client.models.retrieve("gpt-4")
    assert missing.value.code == "model_not_found" and missing.value.body["param"] == "model"
    info = server.get("/get_model_info").json()
    assert info["model_type"] == "llama" and info["context_length"] == 512
    assert server.get("/health_generate").status_code == 200


def test_greedy_completion_matches_golden(server, client):
    # NOTE: the golden text is the continuation decoded on its own; we decode with the prompt as
    # context (as SGLang's detokenizer does), so a sentencepiece leading space could differ at
    # the very start. Compare after stripping; the token ids are compared exactly below.
    c = case()
    r = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=48,
                                  temperature=0)
    assert r.choices[0].text.strip() == c["greedy_text"].strip()
    assert r.choices[0].finish_reason == "length"
    assert r.object == "text_completion" and r.id.startswith("cmpl-") and r.created > 0
    assert r.model == "stories260K"
    assert (r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens) == (5, 48, 53)


def test_generate_ids_match_golden(server):
    for c in golden()["cases"]:
        out = server.post("/generate", {"input_ids": c["prompt_ids"],
                                        "sampling_params": {"max_new_tokens": 48,
                                                            "temperature": 0}}).json()
        assert out["output_ids"] == c["greedy_ids"]
        assert out["text"].strip() == c["greedy_text"].strip()
        meta = out["meta_info"]
        assert meta["finish_reason"] == {"type": "length", "length": 48}
        assert meta["prompt_tokens"] == len(c["prompt_ids"]) and meta["completion_tokens"] == 48


def test_streaming_completion_equals_non_streaming(server, client):
    full = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=32,
                                     temperature=0).choices[0].text
    chunks = list(client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=32,
                                            temperature=0, stream=True,
                                            stream_options={"include_usage": True}))
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert text == full
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "length" and all(f is None for f in finishes[:-1])
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 32


def test_continuous_usage_stats_in_every_chunk(server):
    # stream_options.continuous_usage_stats: every chunk carries the usage so far. The chunks'
    # logprob listings count the tokens streamed so far (chunks may carry several tokens when
    # the client reads slowly); with include_usage the usual usage chunk ends the stream, without
    # it none does (SGLang's should_include_usage).
    def tokens_in(choice):
        logprobs = choice.get("logprobs") or {}
        return len(logprobs.get("tokens") or logprobs.get("content") or [])

    for (route, body), include_usage in itertools.product(
            (("/v1/completions", {"prompt": PROMPT, "logprobs": 0}),
             ("/v1/chat/completions",
              {"messages": [{"role": "user", "content": PROMPT}], "logprobs": True})),
            (True, False)):
        r = server.post(route, {**body, "model": "m", "max_tokens": 12, "temperature": 0,
                                "stream": True, "stream_options": {
                                    "include_usage": include_usage,
                                    "continuous_usage_stats": True}},
                        stream=True)
        assert r.status_code == 200, r.text
        chunks = [json.loads(line[6:]) for line in r.iter_lines(decode_unicode=True)
                  if line.startswith("data: ") and line != "data: [DONE]"]
        streamed = 0
        for c in chunks:
            u = c["usage"]
            assert u["prompt_tokens"] > 0, c
            assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"], c
            streamed += sum(tokens_in(choice) for choice in c["choices"])
            assert u["completion_tokens"] == streamed, (route, chunks)
        assert streamed == 12 and (chunks[-1]["choices"] == []) == include_usage, chunks


def test_chat_completion_and_stream(server, client):
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Tell me a story."}]
    r = client.chat.completions.create(model="stories260K", messages=messages, max_tokens=24,
                                       temperature=0)
    choice = r.choices[0]
    assert choice.message.role == "assistant" and len(choice.message.content) > 0
    assert choice.finish_reason in ("length", "stop")
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl-")
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    chunks = list(client.chat.completions.create(model="stories260K", messages=messages,
                                                 max_tokens=24, temperature=0, stream=True))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == choice.message.content
    assert chunks[-1].choices[0].finish_reason == choice.finish_reason
    # Content parts are joined into the text the template sees.
    parts = [{"role": "user", "content": [{"type": "text", "text": "Tell me a story."}]}]
    r2 = client.chat.completions.create(model="stories260K", messages=parts, max_tokens=4,
                                        temperature=0)
    r3 = client.chat.completions.create(model="stories260K", messages=messages[1:], max_tokens=4,
                                        temperature=0)
    assert r2.choices[0].message.content == r3.choices[0].message.content
    assert r2.usage.prompt_tokens == r3.usage.prompt_tokens
    # Several text parts are joined by a space, as SGLang renders them for a string template.
    split = [{"role": "user", "content": [{"type": "text", "text": "Tell me"},
                                          {"type": "text", "text": "a story."}]}]
    r4 = client.chat.completions.create(model="stories260K", messages=split, max_tokens=4,
                                        temperature=0)
    assert r4.usage.prompt_tokens == r3.usage.prompt_tokens
    assert r4.choices[0].message.content == r3.choices[0].message.content


def test_chat_tools_reach_the_template(server, client):
    messages = [{"role": "user", "content": "hi"}]
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    base = client.chat.completions.create(model="stories260K", messages=messages, max_tokens=1)
    with_tools = client.chat.completions.create(model="stories260K", messages=messages,
                                                max_tokens=1, tools=tools, tool_choice="auto")
    none = client.chat.completions.create(model="stories260K", messages=messages, max_tokens=1,
                                          tools=tools, tool_choice="none")
    assert with_tools.usage.prompt_tokens > base.usage.prompt_tokens
    assert none.usage.prompt_tokens == base.usage.prompt_tokens


def test_n_parallel_samples(server, client):
    before = server.state()["cached_prompt_tokens_total"]
    r = client.completions.create(model="stories260K", prompt=PROMPT * 8, max_tokens=16,
                                  temperature=1.0, n=4, seed=7)
    assert sorted(c.index for c in r.choices) == [0, 1, 2, 3]
    assert len({c.text for c in r.choices}) > 1  # seeds differ per sample
    assert r.usage.completion_tokens == 64
    # The n samples share the prompt's prefix through the radix cache.
    assert server.state()["cached_prompt_tokens_total"] > before
    chat = client.chat.completions.create(model="stories260K", n=3, max_tokens=8, seed=3,
                                          messages=[{"role": "user", "content": "hi"}])
    assert sorted(c.index for c in chat.choices) == [0, 1, 2]
    streamed = list(client.completions.create(model="stories260K", prompt=PROMPT, n=2,
                                              max_tokens=8, temperature=0, stream=True))
    texts = ["", ""]
    for chunk in streamed:
        for c in chunk.choices:
            texts[c.index] += c.text
    assert texts[0] == texts[1] and texts[0]


def test_stop_strings(server, client):
    r = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=48,
                                  temperature=0, stop=[" girl", "zzz"])
    assert r.choices[0].text == ", there was a little"
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].model_extra["matched_stop"] == " girl"
    chunks = list(client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=48,
                                            temperature=0, stop=" girl", stream=True))
    assert "".join(c.choices[0].text for c in chunks) == ", there was a little"
    assert chunks[-1].choices[0].finish_reason == "stop"
    # A stop string spanning several tokens.
    r = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=48,
                                  temperature=0, stop="named Lily")
    assert r.choices[0].text == ", there was a little girl "
    server.wait_idle_no_leak()


def test_stop_token_ids_and_eos(server, client):
    r = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=48,
                                  temperature=0, extra_body={"stop_token_ids": [286]})
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].model_extra["matched_stop"] == 286
    assert r.usage.completion_tokens == 3


def greedy_text(client, max_tokens, **extra):
    return client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=max_tokens,
                                     temperature=0, extra_body=extra or None).choices[0].text


# SGLang drops the text of the stop / EOS token that ended a choice (its id and logprob stay);
# no_stop_trim keeps it, and keeps a matched stop string in the text.
def test_no_stop_trim(server, client):
    two, three = greedy_text(client, 2), greedy_text(client, 3)
    r = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=48,
                                  temperature=0, extra_body={"stop_token_ids": [286]})
    assert r.usage.completion_tokens == 3 and r.choices[0].text == two != three
    assert greedy_text(client, 48, stop_token_ids=[286], no_stop_trim=True) == three
    assert greedy_text(client, 48, stop=" girl", no_stop_trim=True) == ", there was a little girl"
    chunks = list(client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=48,
                                            temperature=0, stop="named Lily", stream=True,
                                            extra_body={"no_stop_trim": True}))
    assert "".join(c.choices[0].text for c in chunks) == ", there was a little girl named Lily"
    out = server.post("/generate", {"text": PROMPT, "sampling_params": {
        "max_new_tokens": 48, "temperature": 0, "stop": " girl", "no_stop_trim": True}}).json()
    assert out["text"] == ", there was a little girl"
    assert out["meta_info"]["finish_reason"]["matched"] == " girl"
    server.wait_idle_no_leak()


# A stop string that is a special token's text stops there although the text skips special
# tokens (SGLang matches stop strings on text that keeps them); matched_stop names the string.
# The logit bias makes <unk> (special, not EOS) the third token.
def test_stop_string_of_a_special_token(server):
    body = {"model": "m", "prompt": PROMPT, "max_tokens": 8, "temperature": 0,
            "stop": ["<unk>"], "logit_bias": {"0": 100}, "min_tokens": 2}
    r = server.post("/v1/completions", body)
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    assert choice["finish_reason"] == "stop" and choice["matched_stop"] == "<unk>", choice
    assert r.json()["usage"]["completion_tokens"] < 8
    del body["stop"]
    assert server.post("/v1/completions", body).json()["choices"][0]["finish_reason"] == "length"


# stop_regex (Python `re` patterns): the choice stops where the first match ends, across
# tokens, and reports the pattern as matched_stop.
def test_stop_regex(server, client):
    r = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=48,
                                  temperature=0, extra_body={"stop_regex": r"l+i"})
    assert r.choices[0].text == ", there was a li"
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].model_extra["matched_stop"] == "l+i"
    assert r.usage.completion_tokens < 48
    # Of two patterns, the match that ends first; a match over several tokens.
    assert greedy_text(client, 48, stop_regex=["Lily", r"girl\s+n"]) == \
        ", there was a little girl n"
    # Chat, streamed: the unstopped greedy text cut where Python's re.search ends its match.
    messages = [{"role": "user", "content": "Once upon a time"}]
    full = client.chat.completions.create(model="stories260K", max_tokens=48, temperature=0,
                                          messages=messages).choices[0].message.content
    pattern = r"\w+ed\b"
    match = re.search(pattern, full)
    assert match, full  # the check below needs the pattern to occur
    chunks = list(client.chat.completions.create(
        model="stories260K", max_tokens=48, temperature=0, stream=True, messages=messages,
        extra_body={"stop_regex": pattern}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == full[:match.end()]
    assert [c.choices[0].finish_reason for c in chunks
            if c.choices and c.choices[0].finish_reason] == ["stop"]
    out = server.post("/generate", {"text": PROMPT, "sampling_params": {
        "max_new_tokens": 48, "temperature": 0, "stop_regex": "a l\\w+"}}).json()
    assert out["text"] == ", there was a little"
    assert out["meta_info"]["finish_reason"] == {"type": "stop", "matched": "a l\\w+"}
    # A pattern that does not compile is the request's error.
    with pytest.raises(openai.BadRequestError, match="stop_regex"):
        greedy_text(client, 4, stop_regex="(unclosed")
    server.wait_idle_no_leak()


def test_completion_logprobs(server, client):
    c = case()
    r = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=8,
                                  temperature=0, logprobs=3)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == 8
    assert "".join(lp.tokens) == r.choices[0].text
    assert lp.text_offset == sorted(lp.text_offset) and lp.text_offset[0] == 0
    for step, got, top in zip(c["steps_top5"], lp.token_logprobs, lp.top_logprobs):
        assert got == pytest.approx(step["logprobs"][0], abs=2e-3)
        assert len(top) == 3
        assert sorted(top.values(), reverse=True) == pytest.approx(step["logprobs"][:3], abs=2e-3)
    # logprobs=0: the chosen tokens' logprobs only.
    r0 = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=4,
                                   temperature=0, logprobs=0)
    assert len(r0.choices[0].logprobs.token_logprobs) == 4
    assert r0.choices[0].logprobs.top_logprobs is None


def test_chat_logprobs(server, client):
    r = client.chat.completions.create(model="stories260K", max_tokens=6, temperature=0,
                                       messages=[{"role": "user", "content": "hi"}],
                                       logprobs=True, top_logprobs=2)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens
    for entry in content:
        assert entry.logprob <= 0 and len(entry.top_logprobs) == 2
        assert entry.top_logprobs[0].logprob >= entry.top_logprobs[1].logprob
        assert bytes(entry.bytes).decode("utf-8", "replace") == entry.token


def test_generate_logprobs(server):
    out = server.post("/generate", {"text": PROMPT, "return_logprob": True, "top_logprobs_num": 2,
                                    "return_text_in_logprobs": True,
                                    "sampling_params": {"max_new_tokens": 4,
                                                        "temperature": 0}}).json()
    meta = out["meta_info"]
    assert [t[1] for t in meta["output_token_logprobs"]] == out["output_ids"]
    assert "".join(t[2] for t in meta["output_token_logprobs"]) == out["text"]
    assert all(len(top) == 2 for top in meta["output_top_logprobs"])


def test_seed_reproducibility(server, client):
    def sample(seed):
        return client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=32,
                                         temperature=1.0, seed=seed).choices[0].text

    assert sample(1234) == sample(1234)
    assert len({sample(1), sample(2), sample(3)}) > 1


def test_prompt_forms_and_echo(server, client):
    ids = case()["prompt_ids"]
    by_text = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=6,
                                        temperature=0).choices[0].text
    by_ids = client.completions.create(model="stories260K", prompt=ids, max_tokens=6,
                                       temperature=0).choices[0].text
    assert by_ids == by_text
    many = client.completions.create(model="stories260K", prompt=[PROMPT, "Lily wanted to play"],
                                     max_tokens=6, temperature=0)
    assert [c.index for c in many.choices] == [0, 1] and many.choices[0].text == by_text
    assert many.usage.prompt_tokens == 5 + 6
    id_lists = client.completions.create(model="stories260K", prompt=[ids, ids], max_tokens=6,
                                         temperature=0)
    assert [c.text for c in id_lists.choices] == [by_text, by_text]
    echo = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=6,
                                     temperature=0, echo=True).choices[0].text
    assert echo == PROMPT + by_text


def test_max_tokens_zero_and_usage(server, client):
    r = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=0)
    assert r.choices[0].text == "" and r.usage.completion_tokens == 0
    chat = client.chat.completions.create(model="stories260K", max_completion_tokens=3,
                                          messages=[{"role": "user", "content": "hi"}])
    assert chat.usage.completion_tokens <= 3


def test_generate_native(server):
    out = server.post("/generate", {"text": PROMPT, "sampling_params": {
        "max_new_tokens": 8, "temperature": 0, "stop": " little"}}).json()
    assert out["text"] == ", there was a"
    assert out["meta_info"]["finish_reason"] == {"type": "stop", "matched": " little"}
    batch = server.post("/generate", {"text": [PROMPT, PROMPT],
                                      "sampling_params": {"max_new_tokens": 4,
                                                          "temperature": 0}}).json()
    assert isinstance(batch, list) and len(batch) == 2 and batch[0]["text"] == batch[1]["text"]
    # SGLang's per-prompt sampling_params: each prompt's own, as it would be alone.
    own = [{"max_new_tokens": 3, "temperature": 0, "ignore_eos": True},
           {"max_new_tokens": 6, "temperature": 0, "ignore_eos": True, "stop": " little"}]
    prompts = [PROMPT, "One day"]
    batch = server.post("/generate", {"text": prompts, "sampling_params": own}).json()
    alone = [server.post("/generate", {"text": t, "sampling_params": p}).json()
             for t, p in zip(prompts, own)]
    assert [b["text"] for b in batch] == [a["text"] for a in alone]
    assert [b["meta_info"]["finish_reason"] for b in batch] == [
        a["meta_info"]["finish_reason"] for a in alone]
    assert batch[0]["meta_info"]["completion_tokens"] == 3
    r = server.post("/generate", {"text": PROMPT, "stream": True,
                                  "sampling_params": {"max_new_tokens": 8, "temperature": 0}},
                    stream=True)
    events = [line[6:] for line in r.iter_lines() if line.startswith(b"data: ")]
    assert events[-1] == b"[DONE]"
    last = json.loads(events[-2])
    assert last["meta_info"]["finish_reason"]["type"] == "length"
    # Streamed outputs are cumulative (SGLang).
    assert all(len(json.loads(e)["output_ids"]) <= len(last["output_ids"]) for e in events[:-1])
    assert last["text"] == ", there was a little girl"


def test_tokenize_detokenize(server):
    tok = server.post("/tokenize", {"prompt": PROMPT}).json()
    assert tok["tokens"] == case()["prompt_ids"] and tok["count"] == 5
    assert tok["max_model_len"] == 512
    no_bos = server.post("/tokenize", {"prompt": PROMPT, "add_special_tokens": False}).json()
    assert no_bos["tokens"] == case()["prompt_ids"][1:]
    text = server.post("/detokenize", {"tokens": case()["greedy_ids"]}).json()["text"]
    assert text.strip() == case()["greedy_text"].strip()


def test_flush_cache(server):
    server.wait_idle_no_leak()
    assert server.post("/flush_cache").status_code == 200
    assert server.state()["kv_cached"] == 0


def test_metrics(server, client):
    client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=4)
    text = server.get("/metrics").text
    for name in ("sglang:http_requests_total", "sglang:time_to_first_token_seconds_bucket",
                 "sglang:inter_token_latency_seconds_count", "sglang:e2e_request_latency_seconds",
                 "sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage",
                 "sglang:cache_hit_rate", "sglang:prompt_tokens_total",
                 "sglang:generation_tokens_total", "sglang:prompt_tokens_histogram_bucket",
                 "sglang:uncached_prompt_tokens_histogram_count",
                 "sglang:generation_tokens_histogram_sum"):
        assert name in text
    values = {line.split("{")[0]: float(line.rsplit(" ", 1)[1])
              for line in text.splitlines() if line and not line.startswith("#")}
    assert values["sglang:generation_tokens_total"] > 0
    # SGLang's labels: requests by endpoint and method, responses by endpoint, status code and
    # method; a method no route serves is "other" (a client cannot grow the label set).
    requests.request("BREW", server.url + "/v1/completions", timeout=10)
    text = server.get("/metrics").text
    assert re.search(r'sglang:http_requests_total\{[^}]*endpoint="/v1/completions",method="POST"\} '
                     r'[1-9]', text), text
    assert 'endpoint="/v1/completions",method="other"' in text and "BREW" not in text
    # A deferred reply (a completion) counted when it answers, an immediate one (the 405) at once.
    assert re.search(r'sglang:http_responses_total\{[^}]*endpoint="/v1/completions",'
                     r'status_code="200",method="POST"\} [1-9]', text), text
    assert re.search(r'sglang:http_responses_total\{[^}]*endpoint="/v1/completions",'
                     r'status_code="405",method="other"\} [1-9]', text), text
    assert re.search(r'sglang:http_responses_total\{[^}]*endpoint="/metrics",'
                     r'status_code="200",method="GET"\} [1-9]', text), text
    assert values["sglang:e2e_request_latency_seconds_count"] > 0


def open_stream(server, body):
    """Starts a raw streaming request; returns the socket after the first SSE chunk."""
    s = socket.create_connection((server.host, server.port), timeout=30)
    s.sendall(http_post("/v1/completions", json.dumps(body)))
    data = b""
    while b"data: " not in data:
        chunk = s.recv(65536)
        assert chunk, data
        data += chunk
    assert status_of(data) == 200
    return s


def aborted_requests(server):
    for line in server.get("/metrics").text.splitlines():
        if line.startswith("sglang:num_requests_total") and 'finish_reason="abort"' in line:
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError("no abort counter")


def test_disconnect_mid_stream_aborts_without_leak(server):
    before = aborted_requests(server)
    # 8 samples of 500 tokens each: far from done when the first chunk arrives.
    sockets = [open_stream(server, {"prompt": PROMPT, "max_tokens": 500, "ignore_eos": True,
                                    "stream": True, "n": 8}) for _ in range(4)]
    for s in sockets:
        s.close()
    state = server.wait_idle_no_leak(timeout=20)
    assert state["num_running_reqs"] == 0
    assert aborted_requests(server) > before


def test_disconnect_behind_pipelined_bytes_aborts(server):
    # A client pipelines megabytes of its next request behind a long reply, then goes away: the
    # server reads on (up to a request's worth), so the disconnect behind those bytes is seen
    # and the generation aborts. (Reading stopped at 1 MiB: no disconnect was seen, every
    # generation ran to its end.)
    before = aborted_requests(server)
    # 32 choices of 500 tokens, each step slowed by 10 ms (5 s a choice): the close is seen
    # before they end however loaded the machine. (Unslowed, all four requests ended before it
    # now and then under ASan: 8 ended first, every one, in one CI-like run of the suite.)
    body = json.dumps({"prompt": PROMPT, "max_tokens": 500, "ignore_eos": True, "n": 32})
    junk = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 4000000\r\n\r\n" +
            b"a" * 1_500_000)
    assert server.post("/slow_down", {"forward_sleep_time": 0.01}).status_code == 200
    try:
        for _ in range(4):
            with socket.create_connection((server.host, server.port), timeout=30) as s:
                s.sendall(http_post("/v1/completions", body))
                s.setblocking(False)
                sent, deadline = 0, time.monotonic() + 10
                while sent < len(junk) and time.monotonic() < deadline:
                    try:
                        sent += s.send(junk[sent:sent + 65536])
                    except BlockingIOError:
                        time.sleep(0.01)
                assert sent == len(junk), f"the server stopped reading after {sent} bytes"
    finally:
        server.post("/slow_down", {"forward_sleep_time": None})
    state = server.wait_idle_no_leak(timeout=20)
    assert state["num_running_reqs"] == 0
    # On a loaded machine a generation may end before its client's close is seen; not all.
    assert aborted_requests(server) >= before + 8


def test_abort_request_by_rid(server):
    result = {}

    def run():
        result["r"] = server.post("/generate", {"text": PROMPT, "rid": "abort-me",
                                                "sampling_params": {"max_new_tokens": 480,
                                                                    "ignore_eos": True}}).json()

    # Keep the engine busy so the request is still running when the abort arrives.
    t = threading.Thread(target=run)
    t.start()
    deadline = time.monotonic() + 10
    aborted = False
    while t.is_alive() and time.monotonic() < deadline and not aborted:
        aborted = server.post("/abort_request", {"rid": "abort-me"}).json()["success"]
    t.join(30)
    reason = result["r"]["meta_info"]["finish_reason"]["type"]
    assert reason == ("abort" if aborted else "length")
    assert server.post("/abort_request", {"rid": "no-such-rid"}).json()["success"] is False
    server.wait_idle_no_leak()


# SGLang's batch ids: a list of rids names each prompt's item (its n samples rid_0, rid_1, ...); one
# rid (or none) names them id_0, id_1, ...; /abort_request takes any of them.
def test_generate_batch_rids(server):
    def ids(**extra):
        r = server.post("/generate", {"text": [PROMPT, PROMPT + " again"],
                                      "sampling_params": {"max_new_tokens": 2}, **extra})
        assert r.status_code == 200, r.text
        return [item["meta_info"]["id"] for item in r.json()]

    assert ids(rid=["a-1", "b-2"]) == ["a-1", "b-2"]
    assert ids(rid="batch") == ["batch_0", "batch_1"]
    assert ids(rid=["a", "b"], sampling_params={"max_new_tokens": 2, "n": 2}) == [
        "a_0", "a_1", "b_0", "b_1"]
    for rid, words in [(["a"], "one id per prompt of a batch (2)"), (["a", "a"], "repeats 'a'"),
                       (["a", ""], "non-empty strings")]:
        r = server.post("/generate", {"text": [PROMPT, PROMPT], "rid": rid})
        assert r.status_code == 400 and words in r.text, r.text
    r = server.post("/generate", {"text": PROMPT, "rid": ["a"]})
    assert r.status_code == 400 and "one id per prompt of a batch" in r.text, r.text

    items = abort_while_running(
        server, lambda: server.post("/generate", {
            "text": [PROMPT, PROMPT], "rid": ["keep-me", "stop-me"],
            "sampling_params": {"max_new_tokens": 480, "ignore_eos": True}}).json(),
        "stop-me", lambda r: r[1]["meta_info"]["finish_reason"]["type"] == "abort")
    assert items[0]["meta_info"]["finish_reason"]["type"] == "length"  # the other ran on


# SGLang refuses a request whose rid names one in flight ("Duplicate request ID detected"); once
# answered, the rid is free again, at once.
def test_duplicate_rid_in_flight_is_refused(server):
    body = {"text": PROMPT, "rid": "twice", "stream": True,
            "sampling_params": {"max_new_tokens": 480, "ignore_eos": True}}
    dups = [("/generate", {"text": PROMPT, "rid": "twice",
                           "sampling_params": {"max_new_tokens": 1}}),
            ("/generate", {"text": [PROMPT, PROMPT], "rid": ["other", "twice"],
                           "sampling_params": {"max_new_tokens": 1}}),
            ("/v1/completions", {"prompt": PROMPT, "max_tokens": 1, "rid": "twice"}),
            ("/v1/chat/completions", {"messages": [{"role": "user", "content": PROMPT}],
                                      "max_tokens": 1, "rid": "twice"})]
    for _ in range(5):  # a try whose long request ends before every duplicate was sent: again
        streaming = threading.Event()

        def run():
            with requests.post(server.url + "/generate", json=body, stream=True, timeout=60) as r:
                assert r.status_code == 200, r.text
                for line in r.iter_lines():
                    streaming.set()  # its first event: it runs, under its rid
        t = threading.Thread(target=run)
        t.start()
        assert streaming.wait(30)
        refused = 0
        for path, dup in dups:
            r = server.post(path, dup)
            if r.status_code != 400:  # the long request ended meanwhile: served as any other
                assert r.status_code == 200, r.text
                break
            assert "Duplicate request ID detected: twice" in r.text, r.text
            refused += 1
        server.post("/abort_request", {"rid": "twice"})
        t.join(30)
        server.wait_idle_no_leak()
        if refused == len(dups):
            break
    assert refused == len(dups), "the long request never ran while every duplicate was sent"
    # Sequential reuse: an answered request frees its rid before its client reads the reply.
    for _ in range(20):
        r = server.post("/generate", {"text": PROMPT, "rid": "twice",
                                      "sampling_params": {"max_new_tokens": 1}})
        assert r.status_code == 200, r.text


# SGLang's rid on the OpenAI routes: the reply's id, and what /abort_request takes.
def test_chat_and_completions_take_rid(server):
    r = server.post("/v1/completions", {"prompt": PROMPT, "max_tokens": 2, "rid": "cmpl-mine"})
    assert r.status_code == 200 and r.json()["id"] == "cmpl-mine", r.text
    r = server.post("/v1/chat/completions", {"messages": [{"role": "user", "content": PROMPT}],
                                             "max_tokens": 2, "rid": "chat-mine"})
    assert r.status_code == 200 and r.json()["id"] == "chat-mine", r.text
    for route, body in [("/v1/completions", {"prompt": PROMPT}),
                        ("/v1/chat/completions",
                         {"messages": [{"role": "user", "content": PROMPT}]})]:
        for rid, words in [(["a", "b"], "as a list is not supported"), (7, "must be a string")]:
            r = server.post(route, {**body, "rid": rid})
            assert r.status_code == 400 and "rid" in r.text and words in r.text, r.text

    r = abort_while_running(
        server, lambda: server.post("/v1/chat/completions", {
            "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 480,
            "ignore_eos": True, "rid": "chat-abort-me"}).json(),
        "chat-abort-me", lambda r: r["choices"][0]["finish_reason"] == "abort")
    assert r["id"] == "chat-abort-me"


async def one_stream(host, port, index):
    reader, writer = await asyncio.open_connection(host, port)
    body = json.dumps({"prompt": PROMPT, "max_tokens": 8, "temperature": 0, "stream": True})
    writer.write(http_post("/v1/completions", body))
    await writer.drain()
    data = b""
    while b"data: [DONE]" not in data:
        chunk = await reader.read(65536)
        if not chunk:
            break
        data += chunk
    writer.close()
    return status_of(data) == 200 and b"data: [DONE]" in data


async def many_streams(host, port, n):
    return await asyncio.gather(*(one_stream(host, port, i) for i in range(n)))


def test_1024_concurrent_streams(server):
    raise_fd_limit()
    n = 1024
    start = time.monotonic()
    results = asyncio.run(many_streams(server.host, server.port, n))
    elapsed = time.monotonic() - start
    assert sum(results) == n, f"{sum(results)} of {n} streams completed"
    print(f"{n} concurrent streams in {elapsed:.1f}s")
    server.wait_idle_no_leak(timeout=30)


def test_no_kv_leak_after_everything(server):
    state = server.wait_idle_no_leak()
    assert state["kv_in_use_by_requests"] == 0


def test_api_key(tmp_path):
    srv = Server(tmp_path, "--api-key", "sekrit")
    try:
        bad = openai.OpenAI(base_url=srv.url + "/v1", api_key="wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            bad.completions.create(model="stories260K", prompt=PROMPT, max_tokens=2)
        assert srv.post("/v1/completions", {"prompt": PROMPT}).status_code == 401
        good = openai.OpenAI(base_url=srv.url + "/v1", api_key="sekrit", max_retries=0)
        assert good.completions.create(model="stories260K", prompt=PROMPT, max_tokens=2).choices
        # The scheme in any case (as SGLang); the key exactly.
        for header, status in [("bearer sekrit", 200), ("BEARER sekrit", 200),
                               ("Bearer sekrit2", 401), ("Basic sekrit", 401), ("sekrit", 401)]:
            r = requests.post(srv.url + "/v1/completions", json={"prompt": PROMPT, "max_tokens": 1},
                              headers={"Authorization": header}, timeout=60)
            assert r.status_code == status, (header, r.text)
        # Anthropic's clients send the key as x-api-key (SGLang takes both).
        for key, status in [("sekrit", 200), ("sekrit2", 401), ("Bearer sekrit", 401)]:
            r = requests.post(srv.url + "/v1/completions", json={"prompt": PROMPT, "max_tokens": 1},
                              headers={"x-api-key": key}, timeout=60)
            assert r.status_code == status, (key, r.text)
        # health, readiness and metrics stay public (SGLang's exemptions); / and /ping do not
        for path in ("/health", "/health_generate", "/ready", "/metrics"):
            assert srv.get(path).status_code == 200, path
        for path in ("/", "/ping"):
            assert srv.get(path).status_code == 401, path
            r = requests.get(srv.url + path, headers={"Authorization": "Bearer sekrit"}, timeout=60)
            assert r.status_code == 200, path
    finally:
        assert srv.stop() == 0


def test_admin_api_key(tmp_path):
    """--admin-api-key (SGLang's): the administrative routes take it and only it; the others keep
    --api-key (or, without one, stay open)."""
    def status(srv, method, path, key=None, body=None):
        headers = {"Authorization": "Bearer " + key} if key else {}
        return requests.request(method, srv.url + path, json=body, headers=headers,
                                timeout=60).status_code

    completion = {"prompt": PROMPT, "max_tokens": 1}
    srv = Server(tmp_path, "--api-key", "user", "--admin-api-key", "root")
    try:
        assert status(srv, "POST", "/v1/completions", "user", completion) == 200
        assert status(srv, "POST", "/v1/completions", "root", completion) == 401
        assert status(srv, "GET", "/get_server_info", "user") == 200
        for method, path in [("POST", "/flush_cache"), ("POST", "/configure_logging"),
                             ("GET", "/get_weights_by_name?name=lm_head.weight")]:
            assert status(srv, method, path, "user") == 401, path
            assert status(srv, method, path) == 401, path
        assert status(srv, "POST", "/flush_cache", "root") == 200
        r = requests.post(srv.url + "/abort_request", json={"rid": "none"},
                          headers={"x-api-key": "root"}, timeout=60)
        assert r.status_code == 200, r.text
        for path in ("/health", "/ready", "/metrics"):
            assert status(srv, "GET", path) == 200, path
    finally:
        assert srv.stop() == 0
    (tmp_path / "admin-only").mkdir()
    srv = Server(tmp_path / "admin-only", "--admin-api-key", "root")
    try:
        assert status(srv, "POST", "/v1/completions", None, completion) == 200
        assert status(srv, "POST", "/flush_cache") == 401
        assert status(srv, "POST", "/flush_cache", "root") == 200
    finally:
        assert srv.stop() == 0


def test_queue_full_is_503(tmp_path):
    # One engine's capacity (replicas would each add theirs).
    srv = Server(tmp_path, "--max-running-requests", "1", "--max-queued-requests", "1",
                 "--dp-size", "1")
    try:
        # One request wanting more samples than running + queued slots: refused as a whole.
        # (Long samples: a short first one could finish, and free its slot, before the third is
        # submitted on a loaded machine.)
        r = srv.post("/v1/completions", {"prompt": PROMPT, "max_tokens": 400, "ignore_eos": True,
                                         "n": 3})
        assert r.status_code == 503 and "capacity" in r.json()["error"]["message"]
        # A burst of long requests: some run, the rest are refused; every one gets an answer.
        body = {"prompt": PROMPT, "max_tokens": 500, "ignore_eos": True}
        codes = []

        def post():
            codes.append(srv.post("/v1/completions", body).status_code)

        threads = [threading.Thread(target=post) for _ in range(24)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert len(codes) == 24 and set(codes) <= {200, 503}
        assert 200 in codes and 503 in codes
        srv.wait_idle_no_leak()
        assert srv.post("/v1/completions", {"prompt": PROMPT, "max_tokens": 4}).status_code == 200
    finally:
        assert srv.stop() == 0


def test_sigterm_drains_in_flight_requests(tmp_path):
    # No drain time: whatever still runs at the signal is aborted at once.
    srv = Server(tmp_path, "--drain-timeout", "0")
    body = {"prompt": PROMPT, "max_tokens": 480, "ignore_eos": True, "stream": True, "n": 64}
    sockets = [open_stream(srv, body) for _ in range(4)]
    srv.proc.send_signal(signal.SIGTERM)
    reasons = []
    for s in sockets:
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        assert b"data: [DONE]" in data
        for line in data.split(b"\n"):
            if line.startswith(b"data: {"):
                reason = json.loads(line[6:])["choices"][0]["finish_reason"]
                if reason:
                    reasons.append(reason)
    assert len(reasons) == 4 * 64 and set(reasons) <= {"length", "abort"}
    print("finish reasons at shutdown:", {r: reasons.count(r) for r in set(reasons)})
    assert srv.stop(timeout=20) == 0
    # The listener is closed.
    with pytest.raises(OSError):
        socket.create_connection((srv.host, srv.port), timeout=2)


def test_sigterm_lets_in_flight_requests_finish(tmp_path):
    srv = Server(tmp_path)  # default drain timeout (10 s): enough to finish
    body = {"prompt": PROMPT, "max_tokens": 64, "ignore_eos": True, "stream": True, "n": 4}
    sockets = [open_stream(srv, body) for _ in range(2)]
    srv.proc.send_signal(signal.SIGTERM)
    for s in sockets:
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        reasons = [json.loads(line[6:])["choices"][0]["finish_reason"]
                   for line in data.split(b"\n") if line.startswith(b"data: {")]
        assert [r for r in reasons if r] == ["length"] * 4
    assert srv.stop(timeout=20) == 0
