# Classification and reward models end to end: sgl-server on the tiny classifiers that
# scripts/make_tiny_classifier_models.py writes (no --is-embedding: the architecture makes them
# embedding models, as in SGLang). SGLang's /v1/classify (label, softmax probabilities,
# num_classes, usage) and /classify (/encode's reply) against transformers' golden logits through
# the heads' constants; bad input answers 400 naming the field; /v1/classify on a model without
# labels answers 400; a chat template for a classifier stops the start.
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, TESTDATA, Server, raise_fd_limit, requests, server_binary

LOGIT_TOL = 2e-3  # the golden tests' bound on f32 last logits
NAME = "tiny-classifier"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = tmp_path_factory.mktemp("classifiers")
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_tiny_classifier_models.py"),
                    "--testdata", str(TESTDATA), str(out)], check=True)
    return Path(out)


def start(tmp_path_factory, models, name):
    raise_fd_limit()
    return Server(tmp_path_factory.mktemp(name), "--chunked-prefill-size", "16",
                  model=models / name, served_model_name=NAME)


@pytest.fixture(scope="module")
def classifier(tmp_path_factory, models):
    srv = start(tmp_path_factory, models, "tiny-llama-classifier")
    yield srv
    assert srv.alive(), "the server died: " + srv.log()
    srv.wait_idle_no_leak()
    assert srv.stop() == 0, srv.log()


@pytest.fixture(scope="module")
def reward(tmp_path_factory, models):
    srv = start(tmp_path_factory, models, "tiny-qwen2-reward")
    yield srv
    assert srv.alive(), "the server died: " + srv.log()
    assert srv.stop() == 0, srv.log()


def heads(models):
    return json.loads((models / "classifier_heads.json").read_text())


def golden_cases(lm):
    return json.loads((TESTDATA / "golden" / f"{lm}.json").read_text())["cases"]


def softmax(xs):
    top = max(xs)
    exps = [math.exp(x - top) for x in xs]
    return [e / sum(exps) for e in exps]


def classify(srv, body, status=200):
    r = srv.post("/v1/classify", body)
    assert r.status_code == status, r.text
    return r.json()


def test_classify_scores_are_the_golden_logits_through_the_head(classifier, models):
    label_ids = heads(models)["label_ids"]
    for case in golden_cases("tiny-llama"):
        encoded = classifier.post("/encode", {"input_ids": case["prompt_ids"]}).json()
        want = [case["prefill"]["last_logits"][i] for i in label_ids]
        assert max(abs(a - b) for a, b in zip(encoded["embedding"], want)) < LOGIT_TOL
        # /classify is SGLang's /encode under another name.
        again = classifier.post("/classify", {"input_ids": case["prompt_ids"]}).json()
        assert again["embedding"] == pytest.approx(encoded["embedding"], abs=1e-6)
        reply = classify(classifier, {"input": case["prompt_ids"]})
        (item,) = reply["data"]
        assert item["index"] == 0 and item["num_classes"] == 3
        assert item["probs"] == pytest.approx(softmax(encoded["embedding"]), abs=1e-6)
        best = max(range(3), key=lambda i: encoded["embedding"][i])
        assert item["label"] == ["negative", "neutral", "positive"][best]
        assert reply["usage"]["prompt_tokens"] == len(case["prompt_ids"])


def test_classify_reply_has_sglangs_layout(classifier):
    reply = classify(classifier, {"model": "asked-name",
                                  "input": ["Once upon a time", "Lily and Ben went to the park."],
                                  "user": "someone"})
    assert reply["id"].startswith("classify-") and reply["object"] == "list"
    assert reply["model"] == "asked-name" and isinstance(reply["created"], int)
    assert [d["index"] for d in reply["data"]] == [0, 1]
    for item in reply["data"]:
        assert set(item) == {"index", "label", "probs", "num_classes"}
        assert sum(item["probs"]) == pytest.approx(1, abs=1e-6)
        assert item["label"] in ("negative", "neutral", "positive")
    usage = reply["usage"]
    assert usage["completion_tokens"] == 0 and usage["total_tokens"] == usage["prompt_tokens"] > 0
    # A text and its token ids are one prompt (the tokenizer's special tokens included).
    ids = classifier.post("/tokenize", {"prompt": "Once upon a time"}).json()["tokens"]
    by_ids = classify(classifier, {"input": ids})["data"][0]
    assert by_ids["probs"] == pytest.approx(reply["data"][0]["probs"], abs=1e-6)
    # Generation routes are refused: the model scores, it does not generate.
    r = classifier.post("/v1/completions", {"model": NAME, "prompt": "Hi", "max_tokens": 2})
    assert r.status_code == 400, r.text


def test_reward_model_scores_once(reward, models):
    h = heads(models)
    for case in golden_cases("tiny-qwen2"):
        last = case["prefill"]["last_logits"]
        want = h["reward_b"] + sum(w * max(0.0, last[i] + b) for w, i, b in
                                   zip(h["reward_w"], h["reward_ids"], h["reward_b1"]))
        # Each hidden unit carries its logit's error through ReLU times |w|.
        tol = LOGIT_TOL * sum(abs(w) for w in h["reward_w"])
        (score,) = reward.post("/classify", {"input_ids": case["prompt_ids"]}).json()["embedding"]
        assert abs(score - want) < tol
        (item,) = classify(reward, {"input": case["prompt_ids"]})["data"]
        assert item == {"index": 0, "label": "LABEL_0", "probs": [1.0], "num_classes": 1}


@pytest.mark.parametrize("body, field", [
    ({}, "input"),
    ({"input": ""}, "input"),
    ({"input": "   \n"}, "input"),
    ({"input": ["fine", " "]}, "input[1]"),
    ({"input": []}, "input"),
    ({"input": [[1, 2], [3]]}, "input"),
    ({"input": [1, -2]}, "input"),
    ({"input": 5}, "input"),
    ({"input": "x", "model": 3}, "model"),
    ({"input": "x", "priority": "high"}, "priority"),
    ({"input": "x", "rid": ["a"]}, "rid"),
    ({"input": [1, 5000]}, "vocabulary"),
])
def test_bad_classify_bodies_are_refused(classifier, body, field):
    r = classifier.post("/v1/classify", body)
    assert r.status_code == 400, r.text
    assert field in r.json()["error"]["message"], r.text


def test_classify_needs_labels(server):
    # stories260K, a causal LM: nothing to classify with (SGLang refuses such a server's route).
    r = server.post("/v1/classify", {"input": "Once upon a time"})
    assert r.status_code == 400, r.text


def test_a_chat_template_for_a_classifier_stops_the_start(models, tmp_path):
    binary = server_binary()
    if binary is None or requests is None:
        pytest.skip("sgl-server or the requests package is missing")
    template = tmp_path / "t.jinja"
    template.write_text("{{ messages[0]['content'] }}")
    proc = subprocess.run([str(binary), "--model-path", str(models / "tiny-llama-classifier"),
                           "--port", "0", "--chat-template", str(template)],
                          capture_output=True, timeout=60)
    assert proc.returncode == 1 and b"listening on" not in proc.stdout
    assert b"--chat-template with LlamaForSequenceClassification" in proc.stderr, proc.stderr


def test_a_priority_reaches_the_scheduler(tmp_path_factory, models):
    # As on /v1/embeddings: a refused priority shows the field reached the scheduler.
    raise_fd_limit()
    srv = Server(tmp_path_factory.mktemp("priority"), "--abort-on-priority-when-disabled",
                 model=models / "tiny-llama-classifier", served_model_name=NAME)
    try:
        r = srv.post("/v1/classify", {"input": "x", "priority": 1})
        assert r.status_code == 503 and "priority is disabled" in r.text, r.text
        assert srv.post("/v1/classify", {"input": "x"}).status_code == 200
    finally:
        assert srv.stop() == 0, srv.log()
