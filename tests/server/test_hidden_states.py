# SGLang's return_hidden_states on /generate (with --enable-return-hidden-states): the final
# norm's output at every prompt position (one list) and at each output token fed back, in
# SGLang's layout (max_new_tokens entries). Checked against transformers through the golden
# file: stories260K ties its LM head to the embedding, so log_softmax(row @ E^T) must give the
# golden top-5 logprobs at every position, and the sampled tokens and their logprobs.
import json
import struct

import pytest

from conftest import MODEL, Server, golden, raise_fd_limit, requests, stream_chunks

np = pytest.importorskip("numpy")

NEW = 16
HIDDEN = 64
TOL = 1e-3  # f32 against transformers' f32 (the golden file's precision: 1e-6)
SAME = 1e-5  # the same positions computed in another batch or chunking


@pytest.fixture(scope="module")
def hs_server(tmp_path_factory):
    raise_fd_limit()
    # Chunks of 4 tokens: each prompt's rows come from two or more passes; incremental
    # streaming: a stream's items carry only their new rows.
    srv = Server(tmp_path_factory.mktemp("hs"), "--enable-return-hidden-states",
                 "--chunked-prefill-size", "4", "--incremental-streaming-output")
    yield srv
    assert srv.alive(), "the server died: " + srv.log()
    srv.wait_idle_no_leak()
    assert srv.stop() == 0, srv.log()


def embedding():
    """stories260K's embed_tokens (its tied LM head), f32 [vocab, hidden]."""
    raw = (MODEL / "model.safetensors").read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    entry = json.loads(raw[8:8 + n])["model.embed_tokens.weight"]
    begin, end = entry["data_offsets"]
    return np.frombuffer(raw[8 + n + begin:8 + n + end], dtype="<f4").reshape(entry["shape"])


def flat_rows(hidden_states):
    """SGLang's layout (the prompt's rows as one list, then a row each) as one [rows, hidden]."""
    prompt, rest = hidden_states[0], hidden_states[1:]
    return np.array(prompt + rest, dtype=np.float64)


def log_softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def generate(server, body):
    r = server.post("/generate", body)
    assert r.status_code == 200, r.text
    return r.json()


def test_rows_are_the_lm_heads_input(hs_server):
    cases = golden()["cases"][:2]
    out = generate(hs_server, {
        "input_ids": [c["prompt_ids"] for c in cases], "return_hidden_states": True,
        "return_logprob": True,
        "sampling_params": {"max_new_tokens": NEW, "temperature": 0, "ignore_eos": True}})
    E = embedding().astype(np.float64)
    for case, item in zip(cases, out):
        hs = item["meta_info"]["hidden_states"]
        prompt_len = len(case["prompt_ids"])
        assert len(hs) == NEW  # SGLang's count: the prompt's list, then NEW - 1 rows
        assert len(hs[0]) == prompt_len and all(len(r) == HIDDEN for r in hs[0])
        assert all(len(r) == HIDDEN for r in hs[1:])
        logprobs = log_softmax(flat_rows(hs) @ E.T)  # [prompt_len + NEW - 1, vocab]
        assert logprobs.shape[0] == prompt_len + NEW - 1
        # Every position against transformers' top-5 (the golden prefill covers the prompt and
        # the greedy continuation).
        ref = case["prefill"]
        for pos in range(logprobs.shape[0]):
            top = np.argsort(-logprobs[pos])[:5]
            assert list(top) == ref["topk_ids"][pos][:5], pos
            assert np.allclose(logprobs[pos][top], ref["topk_logprobs"][pos][:5], atol=TOL), pos
        # The sampled tokens are the argmax of the rows that fed them, at their logprobs.
        for k, (lp, token, _) in enumerate(item["meta_info"]["output_token_logprobs"]):
            row = logprobs[prompt_len - 1 + k]
            assert token == item["output_ids"][k] == int(np.argmax(row))
            assert abs(row[token] - lp) < 1e-4


def test_a_cached_prompt_reports_every_row(hs_server):
    ids = golden()["cases"][2]["prompt_ids"]
    body = {"input_ids": ids, "return_hidden_states": True,
            "sampling_params": {"max_new_tokens": 4, "temperature": 0}}
    first, again = generate(hs_server, body), generate(hs_server, body)
    assert again["meta_info"]["cached_tokens"] == 0  # the rows need the whole prompt computed
    assert len(again["meta_info"]["hidden_states"][0]) == len(ids)
    assert np.allclose(flat_rows(first["meta_info"]["hidden_states"]),
                       flat_rows(again["meta_info"]["hidden_states"]), atol=SAME)
    plain = generate(hs_server, {**body, "return_hidden_states": False})
    assert "hidden_states" not in plain["meta_info"]
    assert plain["meta_info"]["cached_tokens"] > 0
    assert plain["output_ids"] == first["output_ids"]


def test_an_incremental_stream_sends_each_row_once(hs_server):
    ids = golden()["cases"][3]["prompt_ids"]
    body = {"input_ids": ids, "return_hidden_states": True,
            "sampling_params": {"max_new_tokens": 6, "temperature": 0}}
    whole = flat_rows(generate(hs_server, body)["meta_info"]["hidden_states"])
    r = hs_server.post("/generate", {**body, "stream": True}, stream=True)
    assert r.status_code == 200
    items = [json.loads(line[len(b"data: "):]) for line in r.iter_lines()
             if line.startswith(b"data: ") and line != b"data: [DONE]"]
    rows = []
    for n, item in enumerate(items):
        parts = item["meta_info"]["hidden_states"]
        if n == 0:  # the prompt's rows come as one list first
            assert len(parts[0]) == len(ids)
            rows += parts[0]
            parts = parts[1:]
        rows += parts
    assert np.allclose(np.array(rows), whole, atol=SAME)


def test_without_the_flag_the_field_is_refused(server):
    r = server.post("/generate", {"input_ids": [1, 403], "return_hidden_states": True})
    assert r.status_code == 400
    assert "--enable-return-hidden-states" in r.json()["error"]["message"]
    assert server.get("/get_server_info").json()["enable_return_hidden_states"] is False
    for path, body in (("/v1/completions", {"prompt": [1, 403], "max_tokens": 2}),
                       ("/v1/chat/completions", {"messages": [{"role": "user", "content": "a"}],
                                                 "max_tokens": 2})):
        for value in (True, "last"):
            r = server.post(path, {**body, "return_hidden_states": value})
            assert r.status_code == 400, r.text
            assert "--enable-return-hidden-states" in r.json()["error"]["message"], r.text
        r = server.post(path, {**body, "return_hidden_states": "first"})
        assert r.status_code == 400, r.text
        assert 'a boolean or "last"' in r.json()["error"]["message"], r.text


def greedy_rows(server, ids, new):
    """/generate's rows for `ids` and `new` greedy tokens, as one [rows, hidden] array."""
    out = generate(server, {"input_ids": ids, "return_hidden_states": True, "sampling_params": {
        "max_new_tokens": new, "temperature": 0, "ignore_eos": True}})
    return flat_rows(out["meta_info"]["hidden_states"])


def test_openai_choices_carry_the_last_fed_back_row(hs_server):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=hs_server.url + "/v1", api_key="unused", max_retries=0)
    ids = golden()["cases"][1]["prompt_ids"]
    rows = greedy_rows(hs_server, ids, NEW)
    for mode in (True, "last"):
        choice = client.completions.create(
            model="stories260K", prompt=ids, max_tokens=NEW, temperature=0,
            extra_body={"return_hidden_states": mode, "ignore_eos": True}).model_dump()["choices"][0]
        assert np.allclose(choice["hidden_states"], rows[-1], atol=SAME), mode
        chat = client.chat.completions.create(
            model="stories260K", messages=[{"role": "user", "content": "unused"}],
            max_tokens=NEW, temperature=0,
            extra_body={"input_ids": ids, "return_hidden_states": mode, "ignore_eos": True})
        assert np.allclose(chat.model_dump()["choices"][0]["hidden_states"], rows[-1], atol=SAME)
    # /generate's "last": that row alone.
    last = generate(hs_server, {"input_ids": ids, "return_hidden_states": "last",
                                "sampling_params": {"max_new_tokens": NEW, "temperature": 0,
                                                    "ignore_eos": True}})
    assert np.allclose(last["meta_info"]["hidden_states"], rows[-1], atol=SAME)
    # One token feeds no row back: SGLang's [] for true; "last" is the prompt's last row.
    one = {"prompt": ids, "max_tokens": 1, "temperature": 0}
    r = hs_server.post("/v1/completions", {**one, "return_hidden_states": True})
    assert r.json()["choices"][0]["hidden_states"] == []
    r = hs_server.post("/v1/completions", {**one, "return_hidden_states": "last"})
    assert np.allclose(r.json()["choices"][0]["hidden_states"], rows[len(ids) - 1], atol=SAME)
    plain = hs_server.post("/v1/completions", one).json()
    assert "hidden_states" not in plain["choices"][0]


def test_openai_streams_send_the_row_after_the_text(hs_server):
    ids = golden()["cases"][3]["prompt_ids"]
    rows = greedy_rows(hs_server, ids, 6)
    common = {"max_tokens": 6, "temperature": 0, "ignore_eos": True, "stream": True,
              "return_hidden_states": True, "n": 2}
    for path, body, hidden in (
            ("/v1/completions", {"prompt": ids}, lambda c: c.get("hidden_states")),
            ("/v1/chat/completions",
             {"messages": [{"role": "user", "content": "unused"}], "input_ids": ids},
             lambda c: c["delta"].get("hidden_states"))):
        chunks = stream_chunks(hs_server.post(path, {**body, **common}, stream=True))
        carrying = [c["choices"][0] for c in chunks if hidden(c["choices"][0]) is not None]
        assert sorted(c["index"] for c in carrying) == [0, 1], path
        # After every choice's text and finish.
        assert all(hidden(c["choices"][0]) is None for c in chunks[:-2]), path
        for c in carrying:
            assert np.allclose(hidden(c), rows[-1], atol=SAME), path


def test_speculative_decoding_leaves_such_requests_plain(hs_server, tmp_path_factory):
    raise_fd_limit()
    spec = Server(tmp_path_factory.mktemp("hs-spec"), "--enable-return-hidden-states",
                  "--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", "4")
    try:
        ids = golden()["cases"][0]["prompt_ids"]
        body = {"input_ids": ids, "return_hidden_states": True,
                "sampling_params": {"max_new_tokens": 24, "temperature": 0}}
        ours, ref = generate(spec, body), generate(hs_server, body)
        assert ours["output_ids"] == ref["output_ids"]
        assert len(ours["meta_info"]["hidden_states"]) == 24
        assert np.allclose(flat_rows(ours["meta_info"]["hidden_states"]),
                           flat_rows(ref["meta_info"]["hidden_states"]), atol=SAME)
        assert sum(s["spec_plain_requests"] for s in spec.states()) >= 1
    finally:
        assert spec.stop() == 0, spec.log()
