# sgl-server with speculative decoding on stories260K (NGRAM; EAGLE and EAGLE-3 with random
# draft heads scripts/make_eagle_heads.py writes): greedy and seeded outputs equal a plain
# server's (streaming too), and the accept length it reports is the same in /get_server_info
# (avg_spec_accept_length) and /metrics (sglang:spec_accept_length, SGLang's gauge), and
# consistent with its accepted-draft and verify-step counts.
import json
import re
import subprocess
import sys

import pytest

from conftest import REPO, TESTDATA, Server, golden, skip_unless_gpus_for_tp

PROMPTS = [c["prompt"] for c in golden()["cases"]]
# Text that repeats itself, so the drafts find earlier occurrences to propose.
REPEATING = "One day, Lily went to the park. " * 6


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("plain"))
    yield srv
    assert srv.stop() == 0, srv.log()


@pytest.fixture(scope="module")
def ngram(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("ngram"), "--speculative-algorithm", "NGRAM",
                 "--speculative-num-draft-tokens", "4")
    yield srv
    assert srv.alive(), "the server died: " + srv.log()
    srv.wait_idle_no_leak()
    assert srv.stop() == 0, srv.log()


@pytest.fixture(scope="module")
def heads(tmp_path_factory):
    out = tmp_path_factory.mktemp("heads")
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_eagle_heads.py"), "--testdata",
                    str(TESTDATA), "--targets", "stories260K", str(out)], check=True)
    return out


# (algorithm, topk, num_draft_tokens, tp size): chains, trees (topk > 1), and a chain at two
# tensor-parallel ranks (every rank drafts alike).
@pytest.fixture(scope="module", params=[("EAGLE", 1, 4, 1), ("EAGLE3", 1, 4, 1), ("EAGLE", 2, 6, 1),
                                        ("EAGLE3", 3, 8, 1), ("EAGLE3", 1, 4, 2)],
                ids=["EAGLE", "EAGLE3", "EAGLE-tree", "EAGLE3-tree", "EAGLE3-tp2"])
def eagle(request, heads, tmp_path_factory):
    algorithm, topk, draft_tokens, tp = request.param
    skip_unless_gpus_for_tp(tp)
    head = heads / ("stories260K-eagle3" if algorithm == "EAGLE3" else "stories260K-eagle")
    srv = Server(tmp_path_factory.mktemp(algorithm.lower()), "--speculative-algorithm",
                 algorithm, "--speculative-draft-model-path", str(head),
                 "--speculative-num-steps", "3", "--speculative-eagle-topk", str(topk),
                 "--speculative-num-draft-tokens", str(draft_tokens), "--tp-size", str(tp))
    yield srv
    assert srv.alive(), "the server died: " + srv.log()
    srv.wait_idle_no_leak()
    assert srv.stop() == 0, srv.log()


def generate(srv, text, **sampling):
    body = {"text": text, "sampling_params": {"temperature": 0, "max_new_tokens": 48, **sampling}}
    r = srv.post("/generate", body)
    assert r.status_code == 200, r.text
    return r.json()["text"]


def test_outputs_equal_plain_decoding(plain, ngram):
    for prompt in PROMPTS + [REPEATING]:
        assert generate(ngram, prompt) == generate(plain, prompt), prompt
        seeded = {"temperature": 0.8, "sampling_seed": 11}
        assert generate(ngram, prompt, **seeded) == generate(plain, prompt, **seeded), prompt


def test_eagle_outputs_equal_plain_decoding(plain, eagle):
    for prompt in PROMPTS + [REPEATING]:
        assert generate(eagle, prompt) == generate(plain, prompt), prompt
        seeded = {"temperature": 0.8, "sampling_seed": 11}
        assert generate(eagle, prompt, **seeded) == generate(plain, prompt, **seeded), prompt
    assert spec_totals(eagle)[0] > 0


def test_streamed_text_equals_plain_decoding(plain, ngram):
    body = {"model": "stories260K", "prompt": REPEATING, "max_tokens": 40, "temperature": 0,
            "stream": True}
    r = ngram.post("/v1/completions", body, stream=True)
    assert r.status_code == 200, r.text
    streamed = ""
    for line in r.iter_lines():
        if line.startswith(b"data: ") and line != b"data: [DONE]":
            streamed += "".join(c["text"] for c in json.loads(line[6:])["choices"])
    whole = plain.post("/v1/completions", {**body, "stream": False}).json()["choices"][0]["text"]
    assert streamed == whole


def test_accept_length_is_reported_alike(ngram):
    check_accept_length(ngram)


def check_spec_details(d):
    """SGLang's per-request spec_* metrics agree with each other."""
    steps, correct = d["spec_verify_ct"], d["spec_num_correct_drafts"]
    histogram = d["spec_correct_drafts_histogram"]
    assert steps > 0 and sum(histogram) == steps, d
    assert sum(k * n for k, n in enumerate(histogram)) == correct, d
    assert correct <= d["spec_num_proposed_drafts"], d
    assert d["spec_accept_rate"] == pytest.approx(correct / d["spec_num_proposed_drafts"])
    assert d["spec_accept_length"] == pytest.approx(1 + correct / steps)


def test_each_request_reports_its_drafts(plain, ngram):
    # SGLang's per-request metrics: /generate's meta_info spec_* keys, and the OpenAI routes'
    # sglext.spec_tokens_details (return_spec_tokens_details). Whether a step finds drafts
    # depends on the overlap loop's timing, so each form is asked of a few requests and checked
    # on those that verified drafts (most do; at least one must).
    sampling = {"temperature": 0, "max_new_tokens": 128}
    metas = [ngram.post("/generate", {"text": REPEATING[i:], "sampling_params": sampling})
             .json()["meta_info"] for i in range(4)]
    drafted = [m for m in metas if "spec_verify_ct" in m]
    assert drafted, metas
    for meta in drafted:
        check_spec_details(meta)
        # A verify step yields its kept drafts and one more token; a step without drafts one.
        assert meta["completion_tokens"] >= meta["spec_verify_ct"] + meta["spec_num_correct_drafts"]
    plain_meta = plain.post("/generate", {"text": REPEATING, "sampling_params": sampling})
    assert not any(k.startswith("spec_") for k in plain_meta.json()["meta_info"])
    body = {"prompt": REPEATING, "max_tokens": 128, "temperature": 0,
            "return_spec_tokens_details": True}
    ns = [1, 2, 1, 2]
    replies = [ngram.post("/v1/completions", {**body, "prompt": REPEATING[i:], "n": n}).json()
               for i, n in enumerate(ns)]
    reported = [(r["sglext"]["spec_tokens_details"], n) for r, n in zip(replies, ns)
                if "sglext" in r]
    assert reported, replies
    for details, n in reported:
        # n > 1: a list of the choices that verified drafts; n = 1: the object.
        assert isinstance(details, list) == (n > 1), details
        for d in details if n > 1 else [details]:
            check_spec_details(d)
            assert d["spec_cap_length"] == 0 and d["spec_cap_lens_histogram"] == []
    assert "sglext" not in plain.post("/v1/completions", body).json()


def test_eagle_accept_length_is_reported_alike(eagle):
    check_accept_length(eagle)


def test_requests_speculation_leaves_out_are_counted(ngram):
    """A penalty reads one logits row a step: that request decodes without drafts, counted in
    spec_plain_requests (and logged once), not silently."""
    def plain_requests():
        return sum(state["spec_plain_requests"] for state in ngram.states())

    before = plain_requests()
    generate(ngram, REPEATING)
    assert plain_requests() == before
    generate(ngram, REPEATING, repetition_penalty=1.2)
    assert plain_requests() == before + 1
    assert "decode without drafts" in ngram.log()


def test_constrained_requests_take_ngram_drafts(plain, tmp_path_factory):
    """A grammar checks the n-gram drafts (each verify row masked as the grammar stands after
    the drafts before it): JSON Schema and regex outputs equal a plain server's, drafts are
    accepted, and the requests are not left out of speculation. (Fixed drafts: the adaptive
    policy may measure them as not paying on a busy CPU.)"""
    ngram = Server(tmp_path_factory.mktemp("ngram-fixed"), "--speculative-algorithm", "NGRAM",
                   "--speculative-num-draft-tokens", "4", "--speculative-draft-policy", "fixed")
    schema = {"type": "array", "items": {"enum": ["red", "green"]}, "minItems": 8,
              "maxItems": 8}
    constraints = [{"json_schema": json.dumps(schema)},
                   {"regex": "(One day, Lily went to the park\\. ){4}"}]
    try:
        for constraint in constraints:
            plain_before = sum(state["spec_plain_requests"] for state in ngram.states())
            _, accepted_before = spec_totals(ngram)
            body = {"text": "Once upon a time",
                    "sampling_params": {"temperature": 0, "max_new_tokens": 120, **constraint}}
            spec, base = (srv.post("/generate", body) for srv in (ngram, plain))
            assert spec.status_code == 200 and base.status_code == 200, (spec.text, base.text)
            assert spec.json()["output_ids"] == base.json()["output_ids"], constraint
            assert sum(state["spec_plain_requests"] for state in ngram.states()) == plain_before
            assert spec_totals(ngram)[1] > accepted_before, constraint
            if "json_schema" in constraint:
                assert len(json.loads(spec.json()["text"])) == 8
        ngram.wait_idle_no_leak()
    finally:
        assert ngram.stop() == 0, ngram.log()


def spec_totals(srv):
    """(verify steps, accepted drafts) over every replica (internal_states has one each), having
    checked each replica's own average accept length."""
    steps = accepted = 0
    for state in srv.states():
        s, a = state["spec_verify_steps"], state["spec_accepted_tokens"]
        assert state["avg_spec_accept_length"] == pytest.approx(1 + a / s if s else 0), state
        steps, accepted = steps + s, accepted + a
    return steps, accepted


def check_accept_length(srv):
    generate(srv, REPEATING)
    steps, accepted = spec_totals(srv)
    assert steps > 0
    # /metrics reports the server's: all replicas' verify steps together.
    metrics = srv.get("/metrics").text
    match = re.search(r'^sglang:spec_accept_length\{[^}]*\} (\S+)$', metrics, re.M)
    assert match, metrics
    assert float(match.group(1)) == pytest.approx(1 + accepted / steps, rel=1e-6)


def test_stop_strings_drop_the_tokens_after_them(plain, ngram):
    """A stop string completed inside a verify's accepted drafts: the tokens after it go with
    the text (output_ids, logprobs, completion_tokens), as in plain decoding."""
    for stop in (["Lily"], [" park."], ["went"]):
        body = {"text": REPEATING, "return_logprob": True,
                "sampling_params": {"temperature": 0, "max_new_tokens": 48, "stop": stop}}
        spec, base = (srv.post("/generate", body).json() for srv in (ngram, plain))
        assert spec["text"] == base["text"], stop
        assert spec["output_ids"] == base["output_ids"], stop
        for key in ("completion_tokens", "finish_reason"):
            assert spec["meta_info"][key] == base["meta_info"][key], (stop, key)
        assert (len(spec["meta_info"]["output_token_logprobs"]) ==
                len(base["meta_info"]["output_token_logprobs"]) == len(base["output_ids"])), stop
