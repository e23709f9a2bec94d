# SGLang's frontend language (sglang.lang: @function programs with gen / select / fork, on a
# RuntimeEndpoint backend), of the sglang release scripts/install_deps.sh pins, run unmodified
# against sgl-server on stories260K. The frontend talks to /get_model_info, /generate (text and
# batches, max_new_tokens 0 with prompt logprobs for select, regex / json_schema constraints,
# streaming), /flush_cache and /server_info. Greedy results are checked against the server's
# own /generate answers and select's choice and scores against transformers' logprobs (the
# golden file).
import importlib.metadata
import importlib.util
import json
import re
import sys
import types

import pytest

from conftest import golden, require
from test_sglang_bench import SGLANG_VERSION

TOLERANCE = 1e-3  # select's mean of two float32 logprobs against transformers'


def load_frontend():
    """sglang.lang without sglang/__init__.py, which imports the runtime (torch); the frontend
    itself needs only requests, numpy and the standard library."""
    spec = importlib.util.find_spec("sglang")
    require(spec is not None, "sglang is not installed (scripts/install_deps.sh installs it)")
    version = importlib.metadata.version("sglang")
    require(version == SGLANG_VERSION,
            f"sglang {version} is installed; this suite is written for {SGLANG_VERSION}")
    if "sglang" not in sys.modules:
        package = types.ModuleType("sglang")
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules["sglang"] = package
    from sglang.lang import api
    from sglang.lang.backend.runtime_endpoint import RuntimeEndpoint
    return api, RuntimeEndpoint


@pytest.fixture(scope="module")
def sgl(server):
    """The frontend's API (what `import sglang as sgl` gives), on a backend at the server."""
    api, runtime_endpoint = load_frontend()
    api.set_default_backend(runtime_endpoint(server.url))
    return api


def greedy(server, text, max_new_tokens):
    r = server.post("/generate", {"text": text, "sampling_params": {
        "max_new_tokens": max_new_tokens, "temperature": 0}})
    assert r.status_code == 200, r.text
    return r.json()["text"]


def test_gen_is_the_servers_greedy_answer(sgl, server):

    @sgl.function
    def story(s, start):
        s += start
        s += sgl.gen("first", max_tokens=8, temperature=0)
        s += " Then"
        s += sgl.gen("second", max_tokens=6, temperature=0)

    state = story.run(start="Once upon a time")
    assert state["first"] == greedy(server, "Once upon a time", 8)
    assert state["second"] == greedy(server, "Once upon a time" + state["first"] + " Then", 6)
    meta = state.get_meta_info("first")
    assert meta["completion_tokens"] == 8 and meta["finish_reason"]["type"] == "length"
    assert state.text() == "Once upon a time" + state["first"] + " Then" + state["second"]


def test_select_picks_the_likeliest_choice_as_transformers_scores_it(sgl, server):
    case = golden()["cases"][0]
    ids = case["prefill"]["topk_ids"][len(case["prompt_ids"]) - 1][:2]
    logprobs = case["prefill"]["topk_logprobs"][len(case["prompt_ids"]) - 1][:2]

    def text_of(tokens):
        return server.post("/detokenize", {"tokens": tokens}).json()["text"]

    # Each choice as the text its token adds after the prompt (alone it would lose its space).
    prompt_text = text_of(case["prompt_ids"][1:])
    assert prompt_text == case["prompt"]
    choices = [text_of(case["prompt_ids"][1:] + [i])[len(prompt_text):] for i in ids]

    @sgl.function
    def pick(s):
        s += case["prompt"]
        s += sgl.select("next", choices=list(reversed(choices)))

    state = pick.run()
    assert state["next"] == choices[0]
    # Token-length normalized: the mean logprob over the prompt's last token and the choice's.
    scores = state.get_meta_info("next")["normalized_prompt_logprobs"]
    assert abs((scores[1] - scores[0]) - (logprobs[0] - logprobs[1]) / 2) < TOLERANCE, scores
    # (The unconditional_likelihood_normalized method asks for input logprobs without a
    # logprob_start_len, which SGLang 0.5 answers with none, as sgl-server does: it fails there
    # too, so it is left out.)


def test_constrained_gen(sgl):
    schema = {"type": "object", "properties": {"happy": {"type": "boolean"}},
              "required": ["happy"], "additionalProperties": False}

    @sgl.function
    def shaped(s):
        s += "Lily was"
        s += sgl.gen("word", max_tokens=8, regex=r" [a-z]+ [a-z]+")
        s += ". Her age:"
        s += sgl.gen_int("age", max_tokens=4)
        s += " Mood:"
        s += sgl.gen("mood", max_tokens=48, json_schema=json.dumps(schema))
        s += " The end"
        s += sgl.gen("stopped", max_tokens=32, stop=".", temperature=0)

    state = shaped.run()
    assert re.fullmatch(r" [a-z]+ [a-z]+", state["word"]), state["word"]
    assert re.fullmatch(r"[-+]?[0-9]+[ \n]*", state["age"]), state["age"]  # the frontend's int
    assert isinstance(json.loads(state["mood"])["happy"], bool), state["mood"]
    assert "." not in state["stopped"]


def test_batches_forks_and_streams(sgl, server):

    @sgl.function
    def story(s, start):
        s += start
        s += sgl.gen("more", max_tokens=8, temperature=0)

    starts = ["Once upon a time", "Tom had a red ball.", "One day"]
    states = story.run_batch([{"start": x} for x in starts], num_threads=3)
    assert [st["more"] for st in states] == [greedy(server, x, 8) for x in starts]

    @sgl.function
    def forked(s):
        s += "The cat"
        branches = s.fork(2)
        for b in branches:
            b += sgl.gen("g", max_tokens=5, temperature=0)
        s += branches[0]["g"] + "|" + branches[1]["g"]

    alone = greedy(server, "The cat", 5)
    assert forked.run().text() == "The cat" + alone + "|" + alone

    state = story.run(start="Mia and her mom", stream=True)
    pieces = list(state.text_iter("more"))
    assert len(pieces) > 1 and "".join(pieces) == state["more"] == greedy(
        server, "Mia and her mom", 8)


def test_roles_with_the_frontends_template(sgl, server):

    @sgl.function
    def chat(s):
        s += sgl.system("You tell stories.")
        s += sgl.user("Tell me one.")
        s += sgl.assistant(sgl.gen("answer", max_tokens=6, temperature=0))

    state = chat.run()
    prompt = state.text()[: len(state.text()) - len(state["answer"])]
    # The frontend renders the roles itself (by the model path's template, the default one here)
    # and sends plain text: the answer is the greedy continuation of what it rendered.
    assert "You tell stories." in prompt and "Tell me one." in prompt
    assert state["answer"] == greedy(server, prompt, 6)


def test_backend_calls(sgl, server):
    greedy(server, "Once upon a time", 4)  # something cached
    server.wait_idle_no_leak()
    sgl.flush_cache()  # raises unless the server answered 200
    assert server.state()["kv_cached"] == 0
    info = sgl.get_server_info()  # /server_info
    assert info["model_path"].endswith("stories260K")
