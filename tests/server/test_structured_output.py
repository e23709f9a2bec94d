# Structured output end to end on stories260K, sampling at temperature 1 so the grammar alone
# must make the output valid: OpenAI's response_format (json_schema, json_object) through the
# official openai client, streaming and n > 1; SGLang's json_schema / regex / ebnf in the
# sampling parameters of /generate and /v1/completions; vLLM's guided_* aliases; logprobs of the
# masked distribution; and bad grammars answered with a 400 naming the field, the server up.
import json
import math
import re

import pytest

from conftest import require

openai = pytest.importorskip("openai")
try:
    import jsonschema
except ImportError:
    jsonschema = None

PROMPT = "Once upon a time"

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 130},
        "pets": {"type": "array", "items": {"enum": ["cat", "dog", "fish"]}, "maxItems": 3},
        "born": {"type": "string", "format": "date"},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def validate(value, schema):
    require(jsonschema is not None, "the jsonschema package is not installed")
    validator = jsonschema.Draft202012Validator  # its format checker: RFC 3339 date / time
    validator(schema, format_checker=validator.FORMAT_CHECKER).validate(value)


def test_chat_response_format_json_schema_n4(client):
    reply = client.chat.completions.create(
        model="stories260K", messages=[{"role": "user", "content": "Who are you?"}],
        temperature=1.0, seed=11, n=4, max_tokens=200,
        response_format={"type": "json_schema",
                         "json_schema": {"name": "person", "schema": PERSON, "strict": True}})
    assert len(reply.choices) == 4
    texts = set()
    for choice in reply.choices:
        assert choice.finish_reason == "stop", choice
        value = json.loads(choice.message.content)
        validate(value, PERSON)
        # The properties come in the schema's order (as xgrammar writes them), not sorted:
        # "name" before "age".
        assert list(value) == [k for k in PERSON["properties"] if k in value], value
        texts.add(choice.message.content)
    assert len(texts) > 1  # four samples, not one answer four times


def test_short_json_schema_form_equals_the_full_one(client):
    # SGLang's {"type": "json_schema", "schema": {...}} is its json_schema form's schema.
    kwargs = dict(model="stories260K", messages=[{"role": "user", "content": "Hi"}],
                  temperature=1.0, seed=7, max_tokens=200)
    full = client.chat.completions.create(
        response_format={"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON}},
        **kwargs).choices[0].message.content
    short = client.chat.completions.create(
        extra_body={"response_format": {"type": "json_schema", "schema": PERSON}},
        **kwargs).choices[0].message.content
    assert short == full
    validate(json.loads(short), PERSON)


def test_streaming_equals_non_streaming(client):
    kwargs = dict(model="stories260K", messages=[{"role": "user", "content": "Hi"}],
                  temperature=1.0, seed=5, max_tokens=200,
                  response_format={"type": "json_schema",
                                   "json_schema": {"name": "p", "schema": PERSON}})
    whole = client.chat.completions.create(**kwargs).choices[0].message.content
    streamed = "".join(chunk.choices[0].delta.content or ""
                       for chunk in client.chat.completions.create(stream=True, **kwargs)
                       if chunk.choices)
    assert streamed == whole
    validate(json.loads(whole), PERSON)


def test_json_object(client):
    for seed in range(3):
        reply = client.completions.create(model="stories260K", prompt=PROMPT, temperature=1.0,
                                          seed=seed, max_tokens=120,
                                          extra_body={"response_format": {"type": "json_object"}})
        choice = reply.choices[0]
        if choice.finish_reason == "stop":
            assert isinstance(json.loads(choice.text), dict), choice.text
        else:  # a free object may run long: what came is still an object's beginning
            assert choice.text.lstrip().startswith("{"), choice.text


@pytest.mark.parametrize("field,source,check", [
    ("regex", r"(yes|no), [0-9]{1,3} (apples|pears)\.",
     lambda t: re.fullmatch(r"(yes|no), [0-9]{1,3} (apples|pears)\.", t)),
    ("ebnf", 'root ::= "[" item ("," item){0,2} "]"\nitem ::= [a-c]{1,4}',
     lambda t: re.fullmatch(r"\[[a-c]{1,4}(,[a-c]{1,4}){0,2}\]", t)),
    ("json_schema", json.dumps(PERSON), lambda t: validate(json.loads(t), PERSON) is None),
])
def test_generate_sampling_params(server, field, source, check):
    for seed in range(4):
        body = {"text": PROMPT, "sampling_params": {
            "temperature": 1.0, "max_new_tokens": 200, "sampling_seed": seed, field: source}}
        reply = server.post("/generate", body)
        assert reply.status_code == 200, reply.text
        out = reply.json()
        assert out["meta_info"]["finish_reason"]["type"] == "stop", out
        assert check(out["text"]), out["text"]


# SGLang's structural tag: free text in which each trigger opens a structure (begin, a value of
# the schema, end). stories260K writes "." in every few words: each one must go on with an
# integer in [0, 99] and "!".
DOT_TAG = {"type": "structural_tag", "triggers": ["."], "structures": [
    {"begin": ".", "schema": {"type": "integer", "minimum": 0, "maximum": 99}, "end": "!"}]}
TAGGED_TEXT = r"([^.]*\.(0|[1-9][0-9]?)!)*[^.]*"


def check_dot_tags(text, finish):
    # An output cut by max_new_tokens may end inside a tag.
    tail = "" if finish == "stop" else r"(\.(0|[1-9][0-9]?)?)?"
    assert re.fullmatch(TAGGED_TEXT + tail, text), text
    return text.count(".")


def test_structural_tag(server):
    tags = 0
    for seed in range(4):
        body = {"text": PROMPT, "sampling_params": {
            "temperature": 1.0, "max_new_tokens": 60, "sampling_seed": seed,
            "structural_tag": json.dumps(DOT_TAG)}}
        reply = server.post("/generate", body)
        assert reply.status_code == 200, reply.text
        out = reply.json()
        tags += check_dot_tags(out["text"], out["meta_info"]["finish_reason"]["type"])
        chat = server.post("/v1/chat/completions", {
            "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 60,
            "temperature": 1.0, "seed": seed, "response_format": DOT_TAG})
        assert chat.status_code == 200, chat.text
        choice = chat.json()["choices"][0]
        tags += check_dot_tags(choice["message"]["content"], choice["finish_reason"])
    assert tags >= 4  # the triggers fired: the tags were written, not avoided
    # at_least_one: the output opens with a tag.
    first = dict(DOT_TAG, at_least_one=True)
    reply = server.post("/generate", {"text": PROMPT, "sampling_params": {
        "temperature": 1.0, "max_new_tokens": 30, "sampling_seed": 1, "structural_tag": first}})
    assert reply.status_code == 200, reply.text
    assert re.match(r"\.(0|[1-9][0-9]?)!", reply.json()["text"]), reply.json()["text"]


# The format form (xgrammar's tree): a sentence, a number in a tag, then "<b>" opens bold text
# whose end ends the output.
SENTENCE_TAG = {"type": "structural_tag", "format": {"type": "sequence", "elements": [
    {"type": "const_string", "value": "Score: "},
    {"type": "tag", "begin": "<n>", "content": {"type": "json_schema",
                                                "json_schema": {"type": "integer", "minimum": 1,
                                                                "maximum": 9}}, "end": "</n>"},
    {"type": "regex", "pattern": " (good|bad)\\."},
    {"type": "tag", "begin": " <b>", "content": {"type": "any_text", "excludes": ["\n"]},
     "end": ["</b>", "</B>"]}]}}


def test_structural_tag_format_tree(server):
    for seed in range(3):
        reply = server.post("/generate", {"text": PROMPT, "sampling_params": {
            "temperature": 1.0, "max_new_tokens": 80, "sampling_seed": seed,
            "structural_tag": SENTENCE_TAG}})
        assert reply.status_code == 200, reply.text
        out = reply.json()
        text = out["text"]
        if out["meta_info"]["finish_reason"]["type"] == "stop":
            assert re.fullmatch(r"Score: <n>[1-9]</n> (good|bad)\. <b>[^\n]*?</[bB]>", text), text
        else:  # cut inside the bold text
            assert re.fullmatch(r"Score: <n>[1-9]</n> (good|bad)\. <b>[^\n]*", text), text


@pytest.mark.parametrize("tag,words", [
    ({"type": "structural_tag"}, ["'structures' must not be empty"]),
    (dict(DOT_TAG, triggers=[]), ["'triggers' must not be empty"]),
    (dict(DOT_TAG, triggers=["!"]), ["starts with none of the triggers"]),
    (dict(DOT_TAG, stop_after_first=True), ["no field 'stop_after_first'"]),
    ({"type": "structural_tag", "triggers": ["<a"], "structures": [
        {"begin": "<a>", "schema": {"type": "integer", "multipleOf": 2}, "end": "</a>"}]},
     ["structures[0].schema"]),
    ({"type": "structural_tag", "triggers": ["<a"], "structures": [{"begin": "<a>"}]},
     ["needs 'begin' and 'end'"]),
    ({"type": "structural_tag", "format": {"type": "qwen_xml_parameter", "json_schema": {}}},
     ["'qwen_xml_parameter' is not supported"]),
    ({"type": "structural_tag", "format": {"type": "sequence", "elements": [
        {"type": "const_string", "value": "a", "values": "b"}]}},
     ["format.elements[0]' has no field 'values'"]),
    ({"type": "structural_tag", "format": {"type": "tags_with_separator", "separator": ",",
                                           "tags": [{"type": "const_string", "value": "a"}]}},
     ["format.tags[0].type' must be 'tag'"]),
    ({"type": "structural_tag", "format": {"type": "any_text", "excludes": ["a"],
                                           "excluded_str": ["b"]}},
     ["'excludes' or 'excluded_str', not both"]),
    ({"type": "structural_tag", "format": {"type": "tag", "begin": "<a>", "end": "\n</a>",
                                           "content": {"type": "any_text", "excludes": ["\n"]}}},
     ["overlaps"]),
])
def test_structural_tag_errors(server, tag, words):
    for route, body in [
            ("/v1/chat/completions", {"messages": [{"role": "user", "content": PROMPT}],
                                      "max_tokens": 2, "response_format": tag}),
            ("/generate", {"text": PROMPT, "sampling_params": {"max_new_tokens": 2,
                                                               "structural_tag": json.dumps(tag)}})]:
        reply = server.post(route, body)
        assert reply.status_code == 400, (route, reply.text)
        message = reply.json()["error"]["message"]
        for word in words:
            assert word in message, (route, message)


def test_guided_choice_and_regex_aliases(client):
    choices = ["red wine", "green tea", "blue (sky)"]
    for seed in range(4):
        reply = client.completions.create(model="stories260K", prompt=PROMPT, temperature=1.0,
                                          seed=seed, max_tokens=20,
                                          extra_body={"guided_choice": choices})
        assert reply.choices[0].text in choices
    reply = client.completions.create(model="stories260K", prompt=PROMPT, temperature=1.0,
                                      max_tokens=20, extra_body={"guided_regex": "[A-Z]{3}"})
    assert re.fullmatch("[A-Z]{3}", reply.choices[0].text)


def test_logprobs_are_of_the_masked_distribution(client):
    """SGLang masks the logits before it computes logprobs: the reported distribution is the one
    the token was drawn from."""
    reply = client.completions.create(model="stories260K", prompt=PROMPT, temperature=1.0,
                                      seed=3, max_tokens=12, logprobs=5,
                                      extra_body={"regex": "[0-9]{4}"})
    choice = reply.choices[0]
    assert re.fullmatch("[0-9]{4}", choice.text)
    lp = choice.logprobs
    assert len(lp.top_logprobs) >= 4
    for position, top in enumerate(lp.top_logprobs[:4]):
        # Under the mask only digits have any probability: the top tokens of the reported
        # distribution are digits, or impossible (-inf, listed when fewer tokens are allowed).
        assert top, position
        for token, logprob in top.items():
            assert token.isdigit() or math.isinf(logprob), (position, token, top)


@pytest.mark.parametrize("extra,needle", [
    ({"response_format": {"type": "json_schema",
                          "json_schema": {"name": "x", "schema": {"type": "strnig"}}}},
     "response_format"),
    ({"regex": "(unclosed"}, "'regex'"),
    ({"ebnf": "root ::= root \"a\""}, "'ebnf'"),
    ({"ebnf": "root ::= undefined_rule"}, "'ebnf'"),
    ({"json_schema": '{"type": "object", "patternProperties": {"a": {}}}'}, "patternProperties"),
    ({"regex": "a", "json_schema": "{}"}, "only one of"),
    ({"response_format": {"type": "json_object"}, "regex": "a"}, "only one of"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}, "schema"),
    ({"response_format": {"type": "xml"}}, "response_format.type"),
])
def test_bad_grammars_are_400(server, extra, needle):
    body = {"model": "stories260K", "prompt": PROMPT, "max_tokens": 5, **extra}
    reply = server.post("/v1/completions", body)
    assert reply.status_code == 400, reply.text
    assert needle in reply.json()["error"]["message"], reply.text
    assert server.get("/health").status_code == 200


def test_generate_top_level_grammar_field_is_refused(server):
    reply = server.post("/generate", {"text": PROMPT, "regex": "[0-9]+"})
    assert reply.status_code == 400 and "sampling_params" in reply.text, reply.text


def test_no_leak_after_constrained_requests(server):
    server.wait_idle_no_leak()
