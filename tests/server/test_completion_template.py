# SGLang's --completion-template: /v1/completions' suffix joins the prompt in a code model's
# fill-in-the-middle markers (answered as the joined prompt is); without a template, or with
# token-id prompts or echo, a suffix is refused.
import pytest

from conftest import Server

BODY = {"model": "m", "prompt": "Once upon a time", "suffix": " The end.", "max_tokens": 6,
        "temperature": 0}


@pytest.fixture(scope="module")
def fim(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("fim"), "--completion-template", "qwen_coder")
    yield srv
    assert srv.stop() == 0, srv.log()


def test_the_suffix_joins_the_prompt_in_the_markers(fim):
    assert fim.get("/get_server_info").json()["completion_template"] == "qwen_coder"
    r = fim.post("/v1/completions", BODY)
    assert r.status_code == 200, r.text
    joined = "<|fim_prefix|>Once upon a time<|fim_suffix|> The end.<|fim_middle|>"
    same = fim.post("/v1/completions", {**BODY, "suffix": "", "prompt": joined}).json()
    assert r.json()["choices"][0]["text"] == same["choices"][0]["text"]
    assert r.json()["usage"]["prompt_tokens"] == same["usage"]["prompt_tokens"]
    # A batch of prompts: each joined with the suffix.
    r = fim.post("/v1/completions", {**BODY, "prompt": ["Once upon a time", "Once upon a time"]})
    assert [c["text"] for c in r.json()["choices"]] == [same["choices"][0]["text"]] * 2


@pytest.mark.parametrize("body,words", [
    ({"prompt": [1, 2, 3]}, ["suffix", "text prompts"]),
    ({"echo": True}, ["echo", "suffix"]),
])
def test_bad_suffix_requests(fim, body, words):
    r = fim.post("/v1/completions", {**BODY, **body})
    assert r.status_code == 400, r.text
    for word in words:
        assert word in r.text


def test_without_a_template_a_suffix_is_refused(server):
    r = server.post("/v1/completions", BODY)
    assert r.status_code == 400 and "--completion-template" in r.text, r.text
    assert server.post("/v1/completions", {**BODY, "suffix": ""}).status_code == 200
