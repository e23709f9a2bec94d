# SGLang's return_routed_experts (with --enable-return-routed-experts; rollout routing replay):
# each MoE layer's top-k expert ids at every position fed to the model, as base64 of i32
# [positions, layers, top_k], on /generate (meta_info.routed_experts, with the finish) and on the
# OpenAI routes (the reply's sglext.routed_experts). tiny-qwen3-moe (2 MoE layers, 8 experts,
# top-2) serves with stories260K's tokenizer, whose ids fit its vocabulary. The ids must be the
# ones the model routed each position to: a generated sequence fed back as a prompt (teacher
# forcing, other passes and chunks) must report the same experts at every position.
import base64
import json

import pytest

from conftest import (CHAT_TEMPLATE, MODEL, Server, golden, raise_fd_limit,
                      skip_unless_gpus_for_tp, stream_chunks)

np = pytest.importorskip("numpy")

MOE = MODEL.parent / "tiny-qwen3-moe"
LAYERS, TOP_K, EXPERTS = 2, 2, 8
NEW = 8


@pytest.fixture(scope="module")
def moe_server(tmp_path_factory):
    raise_fd_limit()
    work = tmp_path_factory.mktemp("routed")
    template = work / "chat_template.jinja"
    template.write_text(CHAT_TEMPLATE)
    # Chunks of 4 tokens: a prompt's rows come from several passes.
    srv = Server(work, "--enable-return-routed-experts", "--tokenizer-path", str(MODEL),
                 "--chat-template", str(template), "--chunked-prefill-size", "4", model=MOE,
                 served_model_name="moe")
    yield srv
    assert srv.alive(), "the server died: " + srv.log()
    srv.wait_idle_no_leak()
    assert srv.stop() == 0, srv.log()


def decode(b64):
    """[positions, layers, top_k] from SGLang's base64 of little-endian i32."""
    return np.frombuffer(base64.b64decode(b64), dtype="<i4").reshape(-1, LAYERS, TOP_K)


def generate(server, ids, new=NEW, **extra):
    r = server.post("/generate", {"input_ids": ids, "return_routed_experts": True, **extra,
                                  "sampling_params": {"max_new_tokens": new, "temperature": 0,
                                                      "ignore_eos": True}})
    assert r.status_code == 200, r.text
    return r.json()


def routed(item):
    """The item's experts, each position's top-k as a sorted set (the order within a top-k is by
    weight, which other passes may round apart where two are nearly tied)."""
    return np.sort(decode(item["meta_info"]["routed_experts"]), axis=-1)


def prompt(i=0):
    return golden()["cases"][i]["prompt_ids"]


def test_every_position_fed_to_the_model_reports_its_experts(moe_server):
    ids = prompt()
    out = generate(moe_server, ids)
    rows = routed(out)
    assert rows.shape == (len(ids) + NEW - 1, LAYERS, TOP_K)  # the last output is never fed
    assert ((rows >= 0) & (rows < EXPERTS)).all()
    assert (rows[:, :, 0] != rows[:, :, 1]).all()  # top-k picks distinct experts
    # Teacher forcing: the sequence fed back as one prompt (other chunks, no decode steps) is
    # routed alike at every position.
    forced = routed(generate(moe_server, ids + out["output_ids"][:-1], new=1))
    assert forced.shape == rows.shape
    assert np.array_equal(forced, rows)
    # From routed_experts_start_len on.
    tail = routed(generate(moe_server, ids, routed_experts_start_len=3))
    assert np.array_equal(tail, rows[3:])
    assert routed(generate(moe_server, ids, routed_experts_start_len=len(ids))).shape[0] == NEW - 1


def test_batches_streams_and_the_cache_report_the_same(moe_server):
    a, b = prompt(1), prompt(2)
    alone = [routed(generate(moe_server, ids)) for ids in (a, b)]
    batch = moe_server.post("/generate", {
        "input_ids": [a, b], "return_routed_experts": True,
        "sampling_params": {"max_new_tokens": NEW, "temperature": 0, "ignore_eos": True}}).json()
    for item, expected in zip(batch, alone):
        assert np.array_equal(routed(item), expected)
        # The repeat computed its whole prompt: a cached prefix would have no routing.
        assert item["meta_info"]["cached_tokens"] == 0
    r = moe_server.post("/generate", {"input_ids": a, "return_routed_experts": True,
                                      "stream": True, "sampling_params": {
                                          "max_new_tokens": NEW, "temperature": 0,
                                          "ignore_eos": True}}, stream=True)
    items = [json.loads(line[len(b"data: "):]) for line in r.iter_lines()
             if line.startswith(b"data: ") and line != b"data: [DONE]"]
    assert all("routed_experts" not in i["meta_info"] for i in items[:-1])
    assert np.array_equal(routed(items[-1]), alone[0])
    plain = moe_server.post("/generate", {"input_ids": a, "sampling_params": {
        "max_new_tokens": 2, "temperature": 0}}).json()
    assert "routed_experts" not in plain["meta_info"]
    assert plain["meta_info"]["cached_tokens"] > 0


def test_openai_replies_carry_them_in_sglext(moe_server):
    ids = prompt(3)
    expected = routed(generate(moe_server, ids))
    common = {"max_tokens": NEW, "temperature": 0, "ignore_eos": True,
              "return_routed_experts": True}
    for path, body in (("/v1/completions", {"prompt": ids}),
                       ("/v1/chat/completions",
                        {"messages": [{"role": "user", "content": "unused"}], "input_ids": ids})):
        whole = moe_server.post(path, {**body, **common})
        assert whole.status_code == 200, whole.text
        got = np.sort(decode(whole.json()["sglext"]["routed_experts"]), axis=-1)
        assert np.array_equal(got, expected), path
        chunks = stream_chunks(moe_server.post(path, {**body, **common, "stream": True}, stream=True))
        ext = [c for c in chunks if "sglext" in c]
        assert len(ext) == 1 and ext[0] is chunks[-1] and ext[0]["choices"] == [], path
        got = np.sort(decode(ext[0]["sglext"]["routed_experts"]), axis=-1)
        assert np.array_equal(got, expected), path
        plain = moe_server.post(path, {**body, "max_tokens": 2}).json()
        assert "sglext" not in plain


def test_bad_requests_are_400(moe_server, server):
    ids = prompt()
    for extra, words in (({"routed_experts_start_len": len(ids) + 1}, "higher than the number"),
                         ({"routed_experts_start_len": -1}, "must be >= 0"),
                         ({"return_routed_experts": "yes"}, "return_routed_experts")):
        r = moe_server.post("/generate", {"input_ids": ids, "return_routed_experts": True,
                                          **extra})
        assert r.status_code == 400 and words in r.text, r.text
    # A server without the flag (here stories260K, dense) says what serves them.
    for path, body in (("/generate", {"input_ids": ids}),
                       ("/v1/completions", {"prompt": ids}),
                       ("/v1/chat/completions", {"messages": [{"role": "user", "content": "a"}]})):
        r = server.post(path, {**body, "return_routed_experts": True})
        assert r.status_code == 400 and "--enable-return-routed-experts" in r.text, r.text
    info = moe_server.get("/get_server_info").json()
    assert info["enable_return_routed_experts"] is True
    assert server.get("/get_server_info").json()["enable_return_routed_experts"] is False


def test_tensor_and_expert_parallel_ranks_report_the_same(moe_server, tmp_path):
    # Every rank routes every token (a replicated router); rank 0's ids are the reply's.
    skip_unless_gpus_for_tp(2)
    ids = prompt(4)
    expected = routed(generate(moe_server, ids))
    for flags in (("--tp-size", "2"), ("--tp-size", "2", "--ep-size", "2")):
        work = tmp_path / "-".join(flags)
        work.mkdir()
        srv = Server(work, "--enable-return-routed-experts",
                     "--tokenizer-path", str(MODEL), *flags, model=MOE, served_model_name="moe")
        try:
            assert np.array_equal(routed(generate(srv, ids)), expected), flags
        finally:
            assert srv.stop() == 0, srv.log()
