# SGLang's reply extras for RL rollouts on the OpenAI routes, through the official openai
# client: completions' return_token_ids (each choice's token_ids, streamed per chunk, and
# prompt_token_ids), chat's return_token_ids (prompt_token_ids and response_token_ids) and
# return_prompt_token_ids, /generate's return_prompt_token_ids, and return_cached_tokens_details
# (the reply's sglext). The ids must be the ones /generate reports for the same greedy request,
# and the prompt's must reproduce the reply.
import pytest

from conftest import golden, stream_chunks

openai = pytest.importorskip("openai")

NEW = 12
MSGS = [{"role": "user", "content": "Tell me about Lily."}]


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def generate(server, ids, new=NEW, **extra):
    r = server.post("/generate", {"input_ids": ids, **extra, "sampling_params": {
        "max_new_tokens": new, "temperature": 0}})
    assert r.status_code == 200, r.text
    return r.json()


def test_completions_list_the_prompt_and_output_ids(server, client):
    cases = golden()["cases"][:2]
    reply = client.completions.create(
        model="stories260K", prompt=[c["prompt_ids"] for c in cases], max_tokens=NEW,
        temperature=0, n=2, extra_body={"return_token_ids": True}).model_dump()
    assert len(reply["choices"]) == 4
    for choice in reply["choices"]:
        ids = cases[choice["index"] // 2]["prompt_ids"]
        assert choice["prompt_token_ids"] == ids
        assert choice["token_ids"] == generate(server, ids)["output_ids"]
    plain = client.completions.create(model="stories260K", prompt=cases[0]["prompt_ids"],
                                      max_tokens=NEW, temperature=0).model_dump()
    assert "token_ids" not in plain["choices"][0]
    assert "prompt_token_ids" not in plain["choices"][0]


def test_a_text_prompt_lists_its_tokenization(server, client):
    prompt = "Once upon a time"
    choice = client.completions.create(model="stories260K", prompt=prompt, max_tokens=NEW,
                                       temperature=0, echo=True,
                                       extra_body={"return_token_ids": True}).model_dump()
    tokenized = server.post("/tokenize", {"prompt": prompt}).json()["tokens"]
    assert choice["choices"][0]["prompt_token_ids"] == tokenized
    assert choice["choices"][0]["token_ids"] == generate(server, tokenized)["output_ids"]


def test_completion_streams_carry_each_chunks_ids(server):
    ids = golden()["cases"][2]["prompt_ids"]
    chunks = stream_chunks(server.post("/v1/completions", {
        "prompt": ids, "max_tokens": NEW, "temperature": 0, "stream": True,
        "return_token_ids": True}, stream=True))
    streamed = [t for c in chunks for t in c["choices"][0]["token_ids"]]
    assert streamed == generate(server, ids)["output_ids"]
    assert chunks[0]["choices"][0]["prompt_token_ids"] == ids
    assert all("prompt_token_ids" not in c["choices"][0] for c in chunks[1:])


def test_chat_lists_the_rendered_prompt_and_the_response(server, client):
    reply = client.chat.completions.create(
        model="stories260K", messages=MSGS, max_tokens=NEW, temperature=0, n=2,
        extra_body={"return_token_ids": True}).model_dump()
    prompt = reply["choices"][0]["prompt_token_ids"]
    assert len(prompt) == reply["usage"]["prompt_tokens"]
    # The rendered prompt's ids reproduce the reply through /generate.
    expected = generate(server, prompt)["output_ids"]
    for choice in reply["choices"]:
        assert choice["prompt_token_ids"] == prompt
        assert choice["response_token_ids"] == expected
    only_prompt = client.chat.completions.create(
        model="stories260K", messages=MSGS, max_tokens=NEW, temperature=0,
        extra_body={"return_prompt_token_ids": True}).model_dump()["choices"][0]
    assert only_prompt["prompt_token_ids"] == prompt
    assert "response_token_ids" not in only_prompt


def test_generate_lists_the_prompt_ids(server):
    cases = golden()["cases"][:2]
    out = server.post("/generate", {"input_ids": [c["prompt_ids"] for c in cases],
                                    "return_prompt_token_ids": True,
                                    "sampling_params": {"max_new_tokens": 2}}).json()
    assert [item["prompt_token_ids"] for item in out] == [c["prompt_ids"] for c in cases]
    text = server.post("/generate", {"text": "Once upon a time", "return_prompt_token_ids": True,
                                     "sampling_params": {"max_new_tokens": 2}}).json()
    assert text["prompt_token_ids"] == server.post(
        "/tokenize", {"prompt": "Once upon a time"}).json()["tokens"]
    assert "prompt_token_ids" not in generate(server, cases[0]["prompt_ids"], new=2)


def test_cached_tokens_details_count_the_prefix_served(server):
    ids = golden()["cases"][5]["prompt_ids"]
    # One replica (behind several, the repeat must meet the first's cache).
    body = {"prompt": ids, "max_tokens": 2, "temperature": 0, "return_cached_tokens_details": True,
            "routed_dp_rank": 0}
    first = server.post("/v1/completions", body).json()
    # (At most the BOS token other prompts began with.)
    assert first.get("sglext", {}).get("cached_tokens_details", {"device": 0})["device"] <= 1
    again = server.post("/v1/completions", body).json()
    assert again["sglext"]["cached_tokens_details"] == {"device": len(ids) - 1, "host": 0}
    chat = {"messages": MSGS, "max_tokens": 2, "temperature": 0,
            "return_cached_tokens_details": True, "routed_dp_rank": 0}
    server.post("/v1/chat/completions", chat)
    chunks = stream_chunks(server.post("/v1/chat/completions", {**chat, "stream": True},
                                       stream=True))
    ext = [c for c in chunks if "sglext" in c]
    assert len(ext) == 1 and ext[0]["choices"] == []
    assert ext[0]["sglext"]["cached_tokens_details"]["device"] > 0
    assert ext[0]["sglext"]["cached_tokens_details"]["host"] == 0
    plain = server.post("/v1/completions", {**body, "return_cached_tokens_details": False}).json()
    assert "sglext" not in plain


def test_what_sglang_refuses_is_a_400(server):
    chat = {"messages": MSGS, "max_tokens": 2, "stream": True}
    for field in ("return_token_ids", "return_prompt_token_ids"):
        r = server.post("/v1/chat/completions", {**chat, field: True})
        assert r.status_code == 400, r.text
        assert field in r.text and "streaming" in r.text, r.text
    # Each field belongs to its routes.
    r = server.post("/v1/completions", {"prompt": "a", "return_prompt_token_ids": True})
    assert r.status_code == 400 and "return_token_ids" in r.text, r.text
    r = server.post("/generate", {"text": "a", "return_token_ids": True})
    assert r.status_code == 400 and "return_prompt_token_ids" in r.text, r.text
    r = server.post("/generate", {"text": "a", "return_cached_tokens_details": True})
    assert r.status_code == 400 and "return_cached_tokens_details" in r.text, r.text
    r = server.post("/v1/completions", {"prompt": "a", "return_token_ids": "yes"})
    assert r.status_code == 400 and "return_token_ids" in r.text, r.text
