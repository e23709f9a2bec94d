# SGLang's /v1/score on a causal LM: each item scored by the probabilities of the label tokens
# right after query + item, checked against transformers' next-token log probabilities (the
# golden file's first generated position); text and token-id forms, item_first, per-item labels,
# the softmax with its temperature, and SGLang's refusals.
import math

import pytest

from conftest import golden

TOLERANCE = 1e-4  # float32 CPU math against transformers (testdata/README.md)


def first_step(case):
    """The golden next-token top 5 after the prompt: (ids, logprobs)."""
    step = case["steps_top5"][0]
    return step["ids"], step["logprobs"]


def score(server, **body):
    r = server.post("/v1/score", {"model": "m", **body})
    assert r.status_code == 200, r.text
    return r.json()


def test_text_items_score_like_transformers(server):
    cases = golden()["cases"][:3]
    for case in cases:
        ids, logprobs = first_step(case)
        prompt = case["prompt"]
        cut = len(prompt) // 2
        reply = score(server, query=prompt[:cut], items=[prompt[cut:]], label_token_ids=ids,
                      return_token_logprobs=True)
        assert reply["object"] == "scoring" and reply["model"] == "m"
        assert reply["usage"]["prompt_tokens"] == len(case["prompt_ids"])
        [got] = reply["token_logprobs"]
        assert max(abs(a - b) for a, b in zip(got, logprobs)) < TOLERANCE, (got, logprobs)
        [scores] = reply["scores"]
        assert max(abs(s - math.exp(lp)) for s, lp in zip(scores, logprobs)) < TOLERANCE


def test_token_id_items_per_item_labels_and_item_first(server):
    a, b = golden()["cases"][:2]
    (a_ids, a_lp), (b_ids, b_lp) = first_step(a), first_step(b)
    assert a["prompt_ids"][0] == b["prompt_ids"][0]  # BOS
    # One query (BOS), two items, each its own labels.
    reply = score(server, query=a["prompt_ids"][:1], items=[a["prompt_ids"][1:], b["prompt_ids"][1:]],
                  label_token_ids=[a_ids, b_ids], return_token_logprobs=True)
    for got, want in zip(reply["token_logprobs"], [a_lp, b_lp], strict=True):
        assert max(abs(x - y) for x, y in zip(got, want)) < TOLERANCE
    # item_first: the item comes before the query.
    reply = score(server, query=a["prompt_ids"][3:], items=[a["prompt_ids"][:3]],
                  label_token_ids=a_ids, item_first=True, return_token_logprobs=True)
    assert max(abs(x - y) for x, y in zip(reply["token_logprobs"][0], a_lp)) < TOLERANCE
    # Without return_token_logprobs none are returned.
    assert score(server, query=[1], items=[[2]], label_token_ids=[3])["token_logprobs"] is None


def test_softmax_over_the_labels_with_a_temperature(server):
    case = golden()["cases"][0]
    ids, logprobs = first_step(case)
    for temperature in (1.0, 0.5, 3.0):
        [scores] = score(server, query=case["prompt"], items=[""], label_token_ids=ids,
                         apply_softmax=True, temperature=temperature)["scores"]
        weights = [math.exp(lp / temperature) for lp in logprobs]
        expected = [w / sum(weights) for w in weights]
        assert abs(sum(scores) - 1) < 1e-9
        assert max(abs(s - e) for s, e in zip(scores, expected)) < TOLERANCE, temperature


def test_no_items_no_scores(server):
    reply = score(server, query="x", items=[], label_token_ids=[1])
    assert reply["scores"] == [] and reply["usage"]["prompt_tokens"] == 0


@pytest.mark.parametrize("body,words", [
    ({"query": "a", "items": ["b"]}, ["label_token_ids", "required"]),
    ({"query": "a", "label_token_ids": [1]}, ["items", "must be provided"]),
    ({"query": "a", "items": ["b"], "label_token_ids": [1, 1]}, ["duplicate"]),
    ({"query": "a", "items": ["b"], "label_token_ids": []}, ["label_token_ids", "nonempty"]),
    ({"query": "a", "items": ["b", "c"], "label_token_ids": [[1]]}, ["one list per item"]),
    ({"query": "a", "items": ["b"], "label_token_ids": [-1]}, ["label_token_ids"]),
    ({"query": "a", "items": ["b"], "label_token_ids": [100000]}, ["out of vocabulary"]),
    ({"query": "a", "items": ["b"], "label_token_ids": [1], "temperature": 0.5},
     ["temperature", "apply_softmax"]),
    ({"query": "a", "items": ["b"], "label_token_ids": [1], "apply_softmax": True,
      "temperature": 0}, ["temperature", "greater than zero"]),
    ({"query": [1, 2], "items": ["b"], "label_token_ids": [1]}, ["query", "text"]),
    ({"query": "a", "items": [[1, 2]], "label_token_ids": [1]}, ["query", "token ids"]),
    ({"query": "a", "items": ["b", [1]], "label_token_ids": [1]}, ["items"]),
    ({"query": "a", "items": ["b"], "label_token_ids": [1], "score_extraction_token": "<s>"},
     ["score_extraction_token"]),
    ({"query": "a", "items": ["b"], "label_token_ids": [1], "return_pooled_hidden_states": True},
     ["return_pooled_hidden_states"]),
])
def test_bad_requests_are_refused_by_name(server, body, words):
    r = server.post("/v1/score", body)
    assert r.status_code == 400, r.text
    for word in words:
        assert word in r.text, (word, r.text)
