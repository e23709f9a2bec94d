# SGLang's extra_key and cache_salt: a request takes cached prompt KV only from requests that gave
# the same pair (the radix cache keeps a tree per namespace). Shown by the cached prompt tokens
# each request reports, on every route that takes the fields and per prompt of a /generate batch;
# the answers do not change. Every request goes to replica 0 (routed_dp_rank), so the suite also
# runs behind two replicas (dp2 suites).
import pytest

from conftest import Server

# Long enough that a cache hit is most of the prompt.
PROMPT = ("Once upon a time there was a little girl who lived in a village near the forest. "
          "Whenever she went out, the little girl wore a red riding cloak.")
GREEDY = {"max_new_tokens": 4, "temperature": 0}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("cache_namespace"))
    yield srv
    assert srv.stop() == 0, srv.log()


@pytest.fixture(autouse=True)
def empty_cache(server):
    server.wait_idle_no_leak()
    assert server.post("/flush_cache").status_code == 200


ON_ONE_REPLICA = {"routed_dp_rank": 0}


def generate(server, **fields):
    r = server.post("/generate", {"text": PROMPT, "sampling_params": GREEDY, **ON_ONE_REPLICA,
                                  **fields})
    assert r.status_code == 200, r.text
    return r.json()


def cached_total(server):
    return sum(s["cached_prompt_tokens_total"] for s in server.states())


def cached_by(server, send):
    """The prompt tokens the request `send` makes found cached."""
    before = cached_total(server)
    send()
    server.wait_idle_no_leak()
    return cached_total(server) - before


def test_generate_shares_the_cache_only_within_a_namespace(server):
    first = generate(server, cache_salt="a")
    prompt_tokens = first["meta_info"]["prompt_tokens"]
    assert first["meta_info"]["cached_tokens"] == 0
    # Other namespaces (another salt, none, an extra_key equal to the salt) find nothing.
    for other in ({"cache_salt": "b"}, {}, {"extra_key": "a"}, {"extra_key": "a", "cache_salt": "a"}):
        reply = generate(server, **other)
        assert reply["meta_info"]["cached_tokens"] == 0, other
        assert reply["text"] == first["text"], other
    # The same salt finds the prompt (but its last token, which is computed for the logits).
    again = generate(server, cache_salt="a")
    assert again["meta_info"]["cached_tokens"] == prompt_tokens - 1
    assert again["text"] == first["text"]
    both = generate(server, extra_key="a", cache_salt="a")
    assert both["meta_info"]["cached_tokens"] == prompt_tokens - 1
    # "" is no salt, as SGLang reads it: the default namespace, which the request above filled.
    assert generate(server, cache_salt="")["meta_info"]["cached_tokens"] == prompt_tokens - 1


def test_a_generate_batch_takes_one_namespace_per_prompt(server):
    r = server.post("/generate", {"text": [PROMPT, PROMPT], "sampling_params": GREEDY,
                                  "cache_salt": ["x", "y"], **ON_ONE_REPLICA})
    assert r.status_code == 200, r.text
    r = server.post("/generate", {"text": [PROMPT, PROMPT], "sampling_params": GREEDY,
                                  "cache_salt": ["y", "z"], **ON_ONE_REPLICA})
    assert r.status_code == 200, r.text
    hits = [item["meta_info"]["cached_tokens"] for item in r.json()]
    assert hits[0] > 0 and hits[1] == 0, hits  # "y" was cached by the first batch, "z" was not
    # One string holds for every prompt of a batch.
    r = server.post("/generate", {"text": [PROMPT, PROMPT], "sampling_params": GREEDY,
                                  "extra_key": "k", **ON_ONE_REPLICA})
    assert r.status_code == 200, r.text
    assert generate(server, extra_key="k")["meta_info"]["cached_tokens"] > 0


@pytest.mark.parametrize("route", ["chat", "completions", "responses"])
def test_openai_routes_take_extra_key_and_cache_salt(server, route):
    def send(**fields):
        if route == "chat":
            body = {"model": "m", "messages": [{"role": "user", "content": PROMPT}],
                    "max_tokens": 2, "temperature": 0, **ON_ONE_REPLICA, **fields}
            path = "/v1/chat/completions"
        elif route == "completions":
            body = {"model": "m", "prompt": PROMPT, "max_tokens": 2, "temperature": 0,
                    **ON_ONE_REPLICA, **fields}
            path = "/v1/completions"
        else:
            body = {"model": "m", "input": PROMPT, "max_output_tokens": 2, "temperature": 0,
                    **ON_ONE_REPLICA, **fields}
            path = "/v1/responses"

        def post():
            r = server.post(path, body)
            assert r.status_code == 200, r.text
        return post

    assert cached_by(server, send(cache_salt="tenant-1")) == 0
    assert cached_by(server, send(cache_salt="tenant-2")) == 0
    assert cached_by(server, send(extra_key="tenant-1")) == 0
    assert cached_by(server, send()) == 0
    assert cached_by(server, send(cache_salt="tenant-1")) > 0
    assert cached_by(server, send(extra_key="tenant-1")) > 0


@pytest.mark.parametrize("path,body", [
    ("/generate", {"text": PROMPT, "cache_salt": 3}),
    ("/generate", {"text": PROMPT, "extra_key": ["a"]}),  # a list needs a batch
    ("/generate", {"text": [PROMPT, PROMPT], "cache_salt": ["a"]}),
    ("/generate", {"text": [PROMPT, PROMPT], "extra_key": ["a", 1]}),
    ("/v1/completions", {"model": "m", "prompt": PROMPT, "cache_salt": ["a"]}),
    ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                              "extra_key": {"a": 1}}),
])
def test_bad_values_are_refused_by_name(server, path, body):
    r = server.post(path, body)
    assert r.status_code == 400, r.text
    field = "cache_salt" if "cache_salt" in body else "extra_key"
    assert field in r.text, r.text
