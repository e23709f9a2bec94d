# SGLang's --skip-tokenizer-init: a server that loads no tokenizer (its model directory here has
# none) takes token ids and answers output_ids without text, exactly as a server with the
# tokenizer answers the same ids; what needs text is refused by name. The reference is a server
# of the same model with its tokenizer (conftest's `server`).
import json
import subprocess

import pytest

from conftest import MODEL, Server, golden, raise_fd_limit, server_binary

GREEDY = {"max_new_tokens": 12, "temperature": 0, "ignore_eos": True}


def config_eos():
    """The EOS id the tokenizer-less copy's config.json names: the fourth token of the first golden
    prompt's greedy output (stories260K's own EOS, 2, never comes in its golden outputs)."""
    return golden()["cases"][0]["greedy_ids"][3]


@pytest.fixture(scope="module")
def ids_model(tmp_path_factory):
    """stories260K without its tokenizer files: its weights, and its config.json with
    eos_token_id config_eos()."""
    out = tmp_path_factory.mktemp("ids_model")
    (out / "model.safetensors").symlink_to(MODEL / "model.safetensors")
    config = json.loads((MODEL / "config.json").read_text())
    config["eos_token_id"] = config_eos()
    (out / "config.json").write_text(json.dumps(config))
    return out


@pytest.fixture(scope="module")
def ids_server(tmp_path_factory, ids_model):
    raise_fd_limit()
    srv = Server(tmp_path_factory.mktemp("ids_server"), "--skip-tokenizer-init", model=ids_model)
    yield srv
    assert srv.alive(), "the server died: " + srv.log()
    assert srv.stop() == 0, srv.log()


def prompts():
    return [c["prompt_ids"] for c in golden()["cases"][:3]]


def generate(server, body):
    r = server.post("/generate", body)
    assert r.status_code == 200, r.text
    return r.json()


def test_output_ids_equal_the_tokenized_servers_without_text(ids_server, server):
    for ids in prompts():
        body = {"input_ids": ids, "sampling_params": GREEDY}
        ours, ref = generate(ids_server, body), generate(server, body)
        assert "text" not in ours and ref["text"]
        assert ours["output_ids"] == ref["output_ids"]
        assert len(ours["output_ids"]) == GREEDY["max_new_tokens"]
        meta = ours["meta_info"]
        assert meta["prompt_tokens"] == len(ids)
        assert meta["completion_tokens"] == GREEDY["max_new_tokens"]
        assert meta["finish_reason"] == {"type": "length", "length": GREEDY["max_new_tokens"]}


def test_the_model_configs_eos_ends_generation(ids_server, server):
    # With no tokenizer, EOS comes from the model's config.json: here config_eos(), which the
    # tokenizer's server (EOS 2) generates past.
    case = golden()["cases"][0]
    eos = config_eos()
    body = {"input_ids": case["prompt_ids"], "sampling_params": {"max_new_tokens": 12,
                                                                 "temperature": 0}}
    ref = generate(server, body)
    assert ref["output_ids"][:4] == case["greedy_ids"][:4] and len(ref["output_ids"]) == 12
    ours = generate(ids_server, body)
    assert ours["output_ids"] == ref["output_ids"][:4]
    assert ours["meta_info"]["finish_reason"] == {"type": "stop", "matched": eos}


def test_parallel_samples_and_stop_token_ids(ids_server):
    # SGLang's test_skip_tokenizer_init: n = 3 at temperature 0.5, a list of three items.
    ids = prompts()[0]
    items = generate(ids_server, {"input_ids": ids, "sampling_params": {
        "n": 3, "temperature": 0.5, "max_new_tokens": 10, "ignore_eos": True}})
    assert isinstance(items, list) and len(items) == 3
    for item in items:
        assert "text" not in item
        assert len(item["output_ids"]) == item["meta_info"]["completion_tokens"] == 10
    # A stop token id, as such a client stops: the output ends on it.
    first = generate(ids_server, {"input_ids": ids, "sampling_params": GREEDY})["output_ids"]
    stop = first[4]
    cut = generate(ids_server, {"input_ids": ids, "sampling_params": {
        **GREEDY, "stop_token_ids": [stop]}})
    assert cut["output_ids"] == first[:first.index(stop) + 1]
    assert cut["meta_info"]["finish_reason"] == {"type": "stop", "matched": stop}


# The same prompt may run on a cached prefix in one server and not in the other (or on another
# replica): its f32 sums then run in another order, so logprobs are compared within this.
TOL = 1e-5


def assert_triples_close(ours, ref):
    """[logprob, id, text] lists: the same ids and texts, logprobs within TOL."""
    assert [t[1:] for t in ours] == [t[1:] for t in ref]
    for a, b in zip(ours, ref):
        assert (a[0] is None) == (b[0] is None)
        assert a[0] is None or abs(a[0] - b[0]) < TOL, (a, b)


@pytest.mark.parametrize("top", [0, 3])
def test_logprobs_equal_the_tokenized_servers_with_null_texts(ids_server, server, top):
    ids = prompts()[1]
    body = {"input_ids": ids, "sampling_params": GREEDY, "return_logprob": True,
            "top_logprobs_num": top, "logprob_start_len": 0}
    ours, ref = generate(ids_server, body)["meta_info"], generate(server, body)["meta_info"]
    assert len(ours["input_token_logprobs"]) == len(ids)
    assert len(ours["output_token_logprobs"]) == GREEDY["max_new_tokens"]
    for key in ("input_token_logprobs", "output_token_logprobs"):
        assert_triples_close(ours[key], ref[key])
    if top:
        for key in ("input_top_logprobs", "output_top_logprobs"):
            assert len(ours[key]) == len(ref[key])
            for a, b in zip(ours[key], ref[key]):
                assert (a is None) == (b is None)
                assert_triples_close(a or [], b or [])
    assert all(t[2] is None for t in ours["output_token_logprobs"])


def test_a_stream_carries_ids_only(ids_server):
    ids = prompts()[2]
    whole = generate(ids_server, {"input_ids": ids, "sampling_params": GREEDY})
    r = ids_server.post("/generate", {"input_ids": ids, "sampling_params": GREEDY,
                                      "stream": True}, stream=True)
    assert r.status_code == 200
    items = [json.loads(line[len(b"data: "):]) for line in r.iter_lines()
             if line.startswith(b"data: ") and line != b"data: [DONE]"]
    assert items and all("text" not in item for item in items)
    assert items[-1]["output_ids"] == whole["output_ids"]


def test_scores_of_token_ids_equal_the_tokenized_servers(ids_server, server):
    a, b, _ = prompts()
    body = {"query": a, "items": [b[1:4], b[4:6]], "label_token_ids": [432, 383, 286]}
    ours, ref = ids_server.post("/v1/score", body), server.post("/v1/score", body)
    assert ours.status_code == 200, ours.text
    ours, ref = ours.json()["scores"], ref.json()["scores"]
    assert len(ours) == len(ref) == 2
    for a, b in zip(ours, ref):
        assert len(a) == len(b) == 3
        assert all(abs(x - y) <= TOL * max(abs(y), 1e-3) for x, y in zip(a, b)), (a, b)


@pytest.mark.parametrize("extra, field", [
    ({"text": "Once upon a time"}, "'text' is text"),
    ({"sampling_params": {"stop": ["day"]}}, "'stop'"),
    ({"sampling_params": {"stop_regex": ["d.y"]}}, "'stop_regex'"),
    ({"sampling_params": {"json_schema": json.dumps({"type": "object"})}}, "'json_schema'"),
    ({"sampling_params": {"regex": "[a-z]+"}}, "'regex'"),
    ({"sampling_params": [{"max_new_tokens": 2}, {"stop": ["x"]}],
      "input_ids": [[1, 403], [1, 407]]}, "'stop'"),
    ({"return_logprob": True, "return_text_in_logprobs": True}, "'return_text_in_logprobs'"),
    ({"require_reasoning": True}, "'require_reasoning'"),
])
def test_what_needs_text_is_refused_by_name(ids_server, extra, field):
    body = {"input_ids": prompts()[0], **extra}
    if "text" in extra:
        del body["input_ids"]
    r = ids_server.post("/generate", body)
    assert r.status_code == 400, r.text
    message = r.json()["error"]["message"]
    assert field in message and "--skip-tokenizer-init" in message, message


@pytest.mark.parametrize("path, body", [
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
    ("/v1/completions", {"prompt": [1, 403, 407]}),
    ("/v1/responses", {"input": "hi"}),
    ("/v1/messages", {"model": "m", "max_tokens": 4,
                      "messages": [{"role": "user", "content": "hi"}]}),
    ("/api/generate", {"model": "m", "prompt": "hi"}),
    ("/tokenize", {"prompt": "hi"}),
    ("/detokenize", {"tokens": [403, 407]}),
])
def test_the_text_routes_are_refused(ids_server, path, body):
    r = ids_server.post(path, body)
    assert r.status_code == 400, r.text
    assert "--skip-tokenizer-init" in r.text, r.text


def test_server_info_says_so(ids_server, server):
    assert ids_server.get("/get_server_info").json()["skip_tokenizer_init"] is True
    assert server.get("/get_server_info").json()["skip_tokenizer_init"] is False
    assert ids_server.get("/health_generate").status_code == 200
    assert ids_server.wait_idle_no_leak()["kv_used"] >= 0


def run_server(*args):
    binary = server_binary()
    if binary is None:
        pytest.skip("sgl-server binary is missing")
    return subprocess.run([str(binary), "--port", "0", *map(str, args)], capture_output=True,
                          text=True, timeout=60)


def test_without_the_flag_the_missing_tokenizer_stops_the_start(ids_model):
    done = run_server("--model-path", ids_model)
    assert done.returncode != 0
    assert "tokenizer" in done.stderr, done.stderr


def test_a_chat_template_with_the_flag_is_refused(ids_model, tmp_path):
    template = tmp_path / "t.jinja"
    template.write_text("{{ messages }}")
    done = run_server("--model-path", ids_model, "--skip-tokenizer-init", "--chat-template",
                      template)
    assert done.returncode != 0
    assert "--skip-tokenizer-init" in done.stderr, done.stderr
