# SGLang's multi-LoRA serving (--enable-lora, --lora-paths, lora_path, model "base:adapter") on
# stories260K with two random PEFT adapters (lora_adapters.py). Serving an adapter must equal
# serving the model with that adapter merged into its weights (W + scaling * B A): the same
# greedy ids, logprobs within float rounding. Requests of different adapters share batches, and
# each adapter's prefixes are cached apart.
import subprocess
import threading
import time

import numpy as np
import pytest

from conftest import CHAT_TEMPLATE, MODEL, Server, golden, raise_fd_limit, server_binary
from lora_adapters import write_adapter, write_merged_model

NEW = 12
LOGPROB_TOL = 2e-4  # f32: (x A^T) B^T against x (W + s B A)^T, summed in another order


@pytest.fixture(scope="module")
def adapters(tmp_path_factory):
    root = tmp_path_factory.mktemp("lora")
    a = write_adapter(root / "a", seed=1)  # every projection
    b = write_adapter(root / "b", seed=2, rank=2, alpha=4,
                      targets=("q_proj", "v_proj", "down_proj"), use_rslora=True, dtype="BF16")
    return root, {"a": a, "b": b}


@pytest.fixture(scope="module")
def servers(tmp_path_factory, adapters):
    raise_fd_limit()
    root, factors = adapters
    lora = Server(tmp_path_factory.mktemp("served"), "--lora-paths", f"a={root / 'a'}",
                  f'{{"lora_name": "b", "lora_path": "{root / "b"}", "pinned": true}}',
                  "--max-loras-per-batch", "3")
    template = root / "chat_template.jinja"  # the one the stories260K servers get
    template.write_text(CHAT_TEMPLATE)
    merged = {name: Server(tmp_path_factory.mktemp("merged_" + name), "--chat-template",
                           str(template),
                           model=write_merged_model(root / ("merged_" + name), *factors[name]))
              for name in factors}
    plain = Server(tmp_path_factory.mktemp("plain"))
    yield lora, merged, plain
    for srv in (lora, plain, *merged.values()):
        assert srv.alive(), "the server died: " + srv.log()
        assert srv.stop() == 0, srv.log()


def generate(server, ids, lora_path=None, **extra):
    body = {"input_ids": ids, "return_logprob": True, "sampling_params": {
        "max_new_tokens": NEW, "temperature": 0, "ignore_eos": True}, **extra}
    if lora_path is not None:
        body["lora_path"] = lora_path
    r = server.post("/generate", body)
    assert r.status_code == 200, r.text
    return r.json()


def generate_n(server, ids, lora_path, new):
    r = server.post("/generate", {"input_ids": ids, "lora_path": lora_path, "sampling_params": {
        "max_new_tokens": new, "temperature": 0, "ignore_eos": True}})
    assert r.status_code == 200, r.text
    return r.json()


def logprobs(reply):
    return [lp for lp, _, _ in reply["meta_info"]["output_token_logprobs"]]


def assert_same(got, want):
    assert got["output_ids"] == want["output_ids"]
    assert logprobs(got) == pytest.approx(logprobs(want), abs=LOGPROB_TOL)


def ask_concurrently(server, cases, names, count):
    """`count` requests at once, request i of cases[i % len] with adapter names[i % len]."""
    replies = [None] * count

    def ask(i):
        replies[i] = generate(server, cases[i % len(cases)]["prompt_ids"], names[i % len(names)])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return replies


def test_an_adapter_serves_as_its_merged_weights(servers):
    lora, merged, plain = servers
    changed = 0
    for case in golden()["cases"][:4]:
        ids = case["prompt_ids"]
        base = generate(lora, ids)
        assert_same(base, generate(plain, ids))
        for name, server in merged.items():
            got = generate(lora, ids, name)
            assert_same(got, generate(server, ids))
            changed += got["output_ids"] != base["output_ids"]
    assert changed >= 4, "the adapters hardly change the model: the test would not see them"


def test_mixed_batches_equal_each_request_alone(servers):
    lora, merged, _ = servers
    cases = golden()["cases"][:4]
    names = ["a", None, "b", "a"]
    alone = [generate(lora, c["prompt_ids"], n) for c, n in zip(cases, names)]
    batch = lora.post("/generate", {"input_ids": [c["prompt_ids"] for c in cases],
                                    "lora_path": names, "return_logprob": True,
                                    "sampling_params": {"max_new_tokens": NEW, "temperature": 0,
                                                        "ignore_eos": True}})
    assert batch.status_code == 200, batch.text
    for got, want in zip(batch.json(), alone):
        assert_same(got, want)
    # Concurrent requests of every adapter, decoding in shared batches.
    for i, got in enumerate(ask_concurrently(lora, cases, names, 12)):
        assert_same(got, alone[i % 4])
    lora.wait_idle_no_leak()


def test_each_adapter_caches_its_own_prefixes(servers):
    lora, merged, _ = servers
    ids = golden()["cases"][5]["prompt_ids"]
    first = generate(lora, ids)
    assert generate(lora, ids)["meta_info"]["cached_tokens"] == len(ids) - 1
    # The base model's KV is not the adapter's: of this prompt the adapter's cache holds at most
    # the BOS its earlier prompts began with.
    adapted = generate(lora, ids, "a")
    assert adapted["meta_info"]["cached_tokens"] <= 1
    again = generate(lora, ids, "a")
    assert again["meta_info"]["cached_tokens"] == len(ids) - 1
    assert_same(again, adapted)
    assert_same(adapted, generate(merged["a"], ids))
    assert generate(lora, ids, "b")["meta_info"]["cached_tokens"] <= 1
    assert_same(generate(lora, ids), first)


def test_openai_routes_name_adapters(servers):
    lora, merged, _ = servers
    prompt = "Once upon a time"
    body = {"prompt": prompt, "max_tokens": NEW, "temperature": 0, "logprobs": 1}

    def completion(server, **fields):
        r = server.post("/v1/completions", {**body, **fields})
        assert r.status_code == 200, r.text
        return r.json()["choices"][0]

    want = completion(merged["a"], model="stories260K")
    for fields in ({"model": "stories260K:a"}, {"lora_path": "a"},
                   {"model": "anything:a", "lora_path": "b"}):  # the model's adapter wins
        got = completion(lora, **fields)
        assert got["text"] == want["text"], fields
        assert got["logprobs"]["token_logprobs"] == pytest.approx(
            want["logprobs"]["token_logprobs"], abs=LOGPROB_TOL)
    chat = {"messages": [{"role": "user", "content": "Tell me a story"}], "max_tokens": NEW,
            "temperature": 0}
    r = lora.post("/v1/chat/completions", {**chat, "model": "stories260K:b"})
    want = merged["b"].post("/v1/chat/completions", chat)
    assert r.status_code == 200 and want.status_code == 200, (r.text, want.text)
    assert r.json()["choices"][0]["message"] == want.json()["choices"][0]["message"]
    models = lora.get("/v1/models").json()["data"]
    assert [m["id"] for m in models] == ["stories260K", "a", "b"]
    assert all(m["parent"] == "stories260K" for m in models[1:])
    card = lora.get("/v1/models/b").json()
    assert card["id"] == "b" and card["root"].endswith("/b")


def test_bad_adapter_names_are_refused(servers):
    lora, _, plain = servers
    ids = golden()["cases"][0]["prompt_ids"]
    cases = [
        (lora, "/generate", {"input_ids": ids, "lora_path": "c"}, "not loaded: c"),
        (lora, "/generate", {"input_ids": [ids, ids], "lora_path": ["a"]}, "one adapter"),
        (lora, "/generate", {"input_ids": ids, "lora_path": 3}, "adapter's name"),
        (lora, "/generate", {"input_ids": ids, "lora_id": "a"}, "lora_path"),
        (lora, "/v1/completions", {"prompt": "x", "model": "stories260K:zz"}, "not loaded: zz"),
        (lora, "/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                                         "lora_path": ["a"]}, "not supported on this route"),
        (plain, "/generate", {"input_ids": ids, "lora_path": "a"}, "LoRA is not enabled"),
        (plain, "/v1/completions", {"prompt": "x", "model": "stories260K:a"},
         "LoRA is not enabled"),
    ]
    for server, path, body, words in cases:
        r = server.post(path, body)
        assert r.status_code == 400, (body, r.text)
        assert words in r.text, (body, r.text)
    # A model name without an adapter part is the base model.
    r = lora.post("/v1/completions", {"prompt": "x", "model": "stories260K:", "max_tokens": 2})
    assert r.status_code == 200, r.text


def start_fails(*args):
    binary = server_binary()
    if binary is None:
        pytest.skip("no sgl-server")
    # On the CPU: these are the flags' refusals, which a GPU check (--tp-size 2 on one GPU) would
    # otherwise answer first.
    p = subprocess.run([str(binary), "--model-path", str(MODEL), "--port", "0", "--device", "cpu",
                        *args],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0, p.stderr
    return p.stderr


def test_bad_adapters_and_flags_stop_the_start(tmp_path, adapters):
    root, _ = adapters
    a = str(root / "a")
    write_adapter(tmp_path / "dora", seed=3, config_extra={"use_dora": True})
    write_adapter(tmp_path / "regex", seed=3, config_extra={"target_modules": ".*proj"})
    write_adapter(tmp_path / "lm_head", seed=3, config_extra={"target_modules": ["lm_head"]})
    write_adapter(tmp_path / "extra", seed=3, extra_tensors={
        "base_model.model.lm_head.lora_A.weight": np.zeros((4, 64), np.float32)})
    (tmp_path / "empty").mkdir()
    cases = [
        (["--lora-paths", f"x={tmp_path / 'missing'}"], "is not a directory"),
        (["--lora-paths", f"x={tmp_path / 'empty'}"], "adapter_config.json"),
        (["--lora-paths", f"x={tmp_path / 'dora'}"], "use_dora is not supported"),
        (["--lora-paths", f"x={tmp_path / 'regex'}"], "regular expression"),
        (["--lora-paths", f"x={tmp_path / 'lm_head'}"], "target module \"lm_head\""),
        (["--lora-paths", f"x={tmp_path / 'extra'}"], "lm_head.lora_A.weight"),
        (["--lora-paths", f"x={a}", f"x={a}"], "given twice"),
        (["--lora-paths", f"x={a}", "--max-lora-rank", "2"], "over --max-lora-rank 2"),
        (["--lora-paths", f"x={a}", "--lora-target-modules", "q_proj", "v_proj"],
         "which --lora-target-modules leaves out"),
        (["--lora-paths", f"x={a}", "--lora-target-modules", "qkv"], "'qkv' is not one of"),
        (["--lora-paths", f"x={a}", "--max-loaded-loras", "1"], "--max-loaded-loras 1"),
        (["--enable-lora"], "needs --max-lora-rank"),
        (["--lora-paths", f"x={a}", "--max-loras-per-batch", "0"], "--max-loras-per-batch"),
        (["--lora-paths", f"x={a}", "--tp-size", "2"], "--tp-size > 1"),
        (["--lora-paths", f"x={a}", "--speculative-algorithm", "NGRAM"], "speculative decoding"),
    ]
    for args, words in cases:
        err = start_fails(*args)
        assert words in err, (args, err)


def test_one_adapter_per_batch_still_serves_them_all(tmp_path, adapters):
    root, _ = adapters
    server = Server(tmp_path, "--lora-paths", f"a={root / 'a'}", f"b={root / 'b'}",
                    "--max-loras-per-batch", "1")
    cases = golden()["cases"][:3]
    names = [None, "a", "b"]
    alone = [generate(server, c["prompt_ids"], n) for c, n in zip(cases, names)]
    for i, got in enumerate(ask_concurrently(server, cases, names, 9)):
        assert got is not None
        assert_same(got, alone[i % 3])
    server.wait_idle_no_leak()
    assert server.stop() == 0, server.log()


def load(server, name, path, **extra):
    return server.post("/load_lora_adapter", {"lora_name": name, "lora_path": str(path), **extra})


def unload(server, name):
    return server.post("/unload_lora_adapter", {"lora_name": name})


def test_adapters_load_and_unload_at_run_time(tmp_path, adapters, servers):
    """SGLang's /load_lora_adapter and /unload_lora_adapter on a server started with none: a
    loaded adapter serves as its merged weights, an unloaded one is refused, and a name loaded
    again with other weights serves those (not the old adapter's cached prefixes)."""
    root, _ = adapters
    _, merged, plain = servers
    server = Server(tmp_path, "--enable-lora", "--max-lora-rank", "4")
    try:
        ids = golden()["cases"][1]["prompt_ids"]
        assert [m["id"] for m in server.get("/v1/models").json()["data"]] == ["stories260K"]
        r = server.post("/generate", {"input_ids": ids, "lora_path": "x"})
        assert r.status_code == 400 and "not loaded: x" in r.text, r.text
        r = load(server, "x", root / "a")
        assert r.status_code == 200, r.text
        assert r.json() == {"success": True, "error_message": "",
                            "loaded_adapters": {"x": str(root / "a")}}
        assert [m["id"] for m in server.get("/v1/models").json()["data"]] == ["stories260K", "x"]
        assert_same(generate(server, ids, "x"), generate(merged["a"], ids))
        assert generate(server, ids, "x")["meta_info"]["cached_tokens"] == len(ids) - 1
        assert_same(generate(server, ids), generate(plain, ids))

        r = unload(server, "x")
        assert r.status_code == 200 and r.json()["loaded_adapters"] == {}, r.text
        r = server.post("/generate", {"input_ids": ids, "lora_path": "x"})
        assert r.status_code == 400 and "not loaded: x" in r.text, r.text
        # The name again, other weights: nothing of the first adapter's KV is served.
        assert load(server, "x", root / "b").status_code == 200
        again = generate(server, ids, "x")
        assert again["meta_info"]["cached_tokens"] <= 1
        assert_same(again, generate(merged["b"], ids))
        server.wait_idle_no_leak()
    finally:
        assert server.stop() == 0, server.log()


def test_bad_loads_and_unloads_change_nothing(tmp_path, adapters):
    root, _ = adapters
    (tmp_path / "empty").mkdir()
    write_adapter(tmp_path / "wide", seed=5, rank=8)
    server = Server(tmp_path, "--lora-paths", f"a={root / 'a'}", "--max-lora-rank", "4")
    try:
        cases = [
            (load(server, "a", root / "b"), "already loaded"),
            (load(server, "c", tmp_path / "missing"), "is not a directory"),
            (load(server, "c", tmp_path / "empty"), "adapter_config.json"),
            (load(server, "c", tmp_path / "wide"), "over --max-lora-rank 4"),
            (unload(server, "c"), "'c' is not loaded"),
        ]
        for r, words in cases:
            assert r.status_code == 400, r.text
            assert r.json()["success"] is False and words in r.json()["error_message"], r.text
            assert r.json()["loaded_adapters"] == {"a": str(root / "a")}, r.text
        for path, body, words in [
            ("/load_lora_adapter", {"lora_name": "c"}, "lora_path"),
            ("/load_lora_adapter", {"lora_name": "", "lora_path": "/x"}, "lora_name"),
            ("/load_lora_adapter", {"lora_name": "c", "lora_path": "/x", "lora_id": "1"},
             "lora_id"),
            ("/unload_lora_adapter", {"lora_name": 3}, "lora_name"),
        ]:
            r = server.post(path, body)
            assert r.status_code == 400 and words in r.text, (body, r.text)
        ids = golden()["cases"][0]["prompt_ids"]
        assert generate(server, ids, "a")["output_ids"]
    finally:
        assert server.stop() == 0, server.log()
    plain = Server(tmp_path)
    try:
        r = load(plain, "a", root / "a")
        assert r.status_code == 400 and "LoRA is not enabled" in r.json()["error_message"]
    finally:
        assert plain.stop() == 0, plain.log()


def start_slow_request(server, ids, lora_path, new):
    """A request of `new` tokens at 20 ms a step or more, running after this returns: its
    thread and a dict that gets its reply."""
    assert server.post("/slow_down", {"forward_sleep_time": 0.02}).status_code == 200
    done = {}

    def request():
        done["reply"] = generate_n(server, ids, lora_path, new)

    t = threading.Thread(target=request)
    t.start()
    time.sleep(0.5)
    return t, done


def test_an_unload_waits_for_the_requests_running_with_the_adapter(tmp_path, adapters):
    root, _ = adapters
    server = Server(tmp_path, "--lora-paths", f"a={root / 'a'}")
    try:
        ids = golden()["cases"][0]["prompt_ids"]
        t, done = start_slow_request(server, ids, "a", 200)  # 4 s at least, 0.5 s gone
        started = time.monotonic()
        r = unload(server, "a")
        waited = time.monotonic() - started
        t.join(timeout=120)
        server.post("/slow_down", {"forward_sleep_time": None})
        assert r.status_code == 200, r.text
        reply = done["reply"]
        assert reply["meta_info"]["finish_reason"]["type"] == "length", reply
        assert len(reply["output_ids"]) == 200
        # (Its lease goes as the engine lets the request go, before the client reads the reply.)
        assert waited >= 2.5, f"the unload answered after {waited:.2f} s, the request running"
        r = server.post("/generate", {"input_ids": ids, "lora_path": "a"})
        assert r.status_code == 400 and "not loaded: a" in r.text, r.text
    finally:
        assert server.stop() == 0, server.log()


def test_an_unload_behind_paused_requests_is_refused(tmp_path, adapters):
    """Requests paused in place would hold the adapter forever (and /continue_generation waits
    behind the unload): the unload says so, and the adapter goes on serving them."""
    root, _ = adapters
    server = Server(tmp_path, "--lora-paths", f"a={root / 'a'}")
    try:
        ids = golden()["cases"][0]["prompt_ids"]
        t, done = start_slow_request(server, ids, "a", 100)
        assert server.post("/pause_generation", {"mode": "in_place"}).status_code == 200
        r = unload(server, "a")
        assert r.status_code == 400 and "paused" in r.json()["error_message"], r.text
        assert r.json()["loaded_adapters"] == {"a": str(root / "a")}
        server.post("/slow_down", {"forward_sleep_time": None})
        assert server.post("/continue_generation", {}).status_code == 200
        t.join(timeout=120)
        assert len(done["reply"]["output_ids"]) == 100
        assert unload(server, "a").status_code == 200
    finally:
        assert server.stop() == 0, server.log()


def test_max_loaded_loras_unloads_the_least_recently_used(tmp_path, adapters):
    root, _ = adapters
    server = Server(tmp_path, "--enable-lora", "--max-lora-rank", "4", "--max-loaded-loras", "2",
                    "--max-loras-per-batch", "2")
    try:
        ids = golden()["cases"][0]["prompt_ids"]
        assert load(server, "a", root / "a").status_code == 200
        assert load(server, "b", root / "b").status_code == 200
        generate(server, ids, "a")  # b is now the least recently used
        r = load(server, "c", root / "a")
        assert r.status_code == 200, r.text
        assert set(r.json()["loaded_adapters"]) == {"a", "c"}, r.text
        # Pinned adapters stay: with both places pinned a load is refused.
        assert unload(server, "c").status_code == 200
        assert unload(server, "a").status_code == 200
        assert load(server, "a", root / "a", pinned=True).status_code == 200
        assert load(server, "b", root / "b", pinned=True).status_code == 200
        r = load(server, "c", root / "a")
        assert r.status_code == 400 and "pinned" in r.json()["error_message"], r.text
        assert set(r.json()["loaded_adapters"]) == {"a", "b"}
    finally:
        assert server.stop() == 0, server.log()
