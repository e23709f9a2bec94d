# Every request field of the OpenAI chat / completions / embeddings schemas and of SGLang's
# /generate (sampling_params and the top level) is honoured, refused with 400 naming it, or stated
# to have no effect on the output (and shown not to): one table per route, checked for
# completeness against the schema's field list, each row checked against the server (an
# embedding server, --is-embedding, for the embeddings route). "Honoured" rows name
# the test that shows the field's effect (checked to exist) or carry an inline check here.
import ast
import json
from pathlib import Path

import pytest

from conftest import Server, make_embedding_models

HERE = Path(__file__).parent
PROMPT = "Once upon a time"
MSGS = [{"role": "user", "content": "hi"}]

# The published request schemas (OpenAI's API reference; SGLang's GenerateReqInput /
# SamplingParams), minus the prompt fields themselves.
OPENAI_CHAT = [
    "model", "audio", "frequency_penalty", "function_call", "functions", "logit_bias",
    "logprobs", "max_completion_tokens", "max_tokens", "metadata", "modalities", "n",
    "parallel_tool_calls", "prediction", "presence_penalty", "prompt_cache_key",
    "reasoning_effort", "response_format", "safety_identifier", "seed", "service_tier", "stop",
    "store", "stream", "stream_options", "temperature", "tool_choice", "tools", "top_logprobs",
    "top_p", "user", "verbosity", "web_search_options"]
OPENAI_COMPLETIONS = [
    "model", "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs", "max_tokens", "n",
    "presence_penalty", "seed", "stop", "stream", "stream_options", "suffix", "temperature",
    "top_p", "user"]
SGLANG_SAMPLING = [
    "max_new_tokens", "stop", "stop_token_ids", "stop_regex", "temperature", "top_p", "top_k",
    "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty", "min_new_tokens", "n",
    "json_schema", "regex", "ebnf", "structural_tag", "ignore_eos", "skip_special_tokens",
    "spaces_between_special_tokens", "no_stop_trim", "custom_params", "stream_interval",
    "logit_bias", "sampling_seed"]
OPENAI_EMBEDDINGS = ["model", "dimensions", "encoding_format", "user"]
SGLANG_GENERATE = [
    "rid", "return_logprob", "logprob_start_len", "top_logprobs_num", "token_ids_logprob",
    "return_text_in_logprobs", "stream", "input_embeds", "image_data", "audio_data",
    "video_data", "lora_path", "return_hidden_states", "custom_logit_processor"]


def shown(test):
    return ("shown", test)


def refused(value):
    return ("refused", value)


def no_effect(value, why):
    return ("no effect", value, why)


E2E, FIELDS, BAD = "test_openai_e2e.py", "test_request_fields.py", "test_bad_input.py"
EMB = "test_embeddings.py"
SO = "test_structured_output.py"

CHAT = {
    "model": shown("test_endpoints_compat.py::test_any_model_name_is_served_and_echoed"),
    "audio": refused({"voice": "alloy", "format": "wav"}),
    "frequency_penalty": shown(f"{FIELDS}::test_frequency_and_presence_penalties_match_a_reference_loop"),
    "function_call": refused({"name": "f"}),
    "functions": refused([{"name": "f", "parameters": {}}]),
    "logit_bias": shown(f"{FIELDS}::test_logit_bias_forces_and_forbids_tokens"),
    "logprobs": shown(f"{E2E}::test_chat_logprobs"),
    "max_completion_tokens": shown(f"{E2E}::test_max_tokens_zero_and_usage"),
    "max_tokens": shown(f"{E2E}::test_chat_completion_and_stream"),
    "metadata": no_effect({"k": "v"}, "tags for stored completions; nothing is stored"),
    "modalities": refused(["text", "audio"]),
    "n": shown(f"{E2E}::test_n_parallel_samples"),
    "parallel_tool_calls": shown("test_tool_calls.py::test_named_function_and_no_parallel_calls"),
    "prediction": no_effect({"type": "content", "content": "x"},
                            "a latency hint; the output is the same"),
    "presence_penalty": shown(f"{FIELDS}::test_frequency_and_presence_penalties_match_a_reference_loop"),
    "prompt_cache_key": no_effect("k", "the radix cache reuses prefixes by itself"),
    "reasoning_effort": refused("low"),
    "response_format": shown(f"{SO}::test_chat_response_format_json_schema_n4"),
    "safety_identifier": no_effect("s", "describes the caller"),
    "seed": shown(f"{E2E}::test_n_parallel_samples"),
    "service_tier": refused("flex"),
    "stop": shown(f"{E2E}::test_stop_strings"),
    "store": refused(True),
    "stream": shown(f"{E2E}::test_chat_completion_and_stream"),
    "stream_options": shown(f"{E2E}::test_continuous_usage_stats_in_every_chunk"),
    "temperature": shown(f"{E2E}::test_chat_completion_and_stream"),
    "tool_choice": shown("test_tool_calls.py::test_required_forces_one_valid_call"),
    "tools": shown(f"{E2E}::test_chat_tools_reach_the_template"),
    "top_logprobs": shown(f"{E2E}::test_chat_logprobs"),
    "top_p": ("effect", {"top_p": 1e-9, "temperature": 1.0}),
    "user": no_effect("u", "describes the caller"),
    "verbosity": refused("low"),
    "web_search_options": refused({"search_context_size": "low"}),
}
COMPLETIONS = {
    "model": shown("test_endpoints_compat.py::test_any_model_name_is_served_and_echoed"),
    "best_of": refused(3),
    "echo": shown(f"{E2E}::test_prompt_forms_and_echo"),
    "frequency_penalty": shown(f"{FIELDS}::test_frequency_and_presence_penalties_match_a_reference_loop"),
    "logit_bias": shown(f"{FIELDS}::test_logit_bias_forces_and_forbids_tokens"),
    "logprobs": shown(f"{E2E}::test_completion_logprobs"),
    "max_tokens": shown(f"{E2E}::test_greedy_completion_matches_golden"),
    "n": shown(f"{E2E}::test_n_parallel_samples"),
    "presence_penalty": shown(f"{FIELDS}::test_frequency_and_presence_penalties_match_a_reference_loop"),
    "seed": shown(f"{E2E}::test_seed_reproducibility"),
    "stop": shown(f"{E2E}::test_stop_strings"),
    "stream": shown(f"{E2E}::test_streaming_completion_equals_non_streaming"),
    "stream_options": shown(f"{E2E}::test_continuous_usage_stats_in_every_chunk"),
    "suffix": refused("the end"),
    "temperature": shown(f"{E2E}::test_greedy_completion_matches_golden"),
    "top_p": ("effect", {"top_p": 1e-9, "temperature": 1.0}),
    "user": no_effect("u", "describes the caller"),
}
SAMPLING = {
    "max_new_tokens": shown(f"{E2E}::test_generate_ids_match_golden"),
    "stop": shown(f"{E2E}::test_no_stop_trim"),
    "stop_token_ids": shown(f"{FIELDS}::test_min_tokens_delays_stop_token_ids_and_eos"),
    "stop_regex": shown(f"{E2E}::test_stop_regex"),
    "temperature": shown(f"{E2E}::test_generate_ids_match_golden"),
    "top_p": ("effect", {"top_p": 1e-9, "temperature": 1.0}),
    "top_k": ("effect", {"top_k": 1, "temperature": 1.0}),
    "min_p": ("effect", {"min_p": 1.0, "temperature": 1.0}),
    "frequency_penalty": shown(f"{FIELDS}::test_frequency_and_presence_penalties_match_a_reference_loop"),
    "presence_penalty": shown(f"{FIELDS}::test_frequency_and_presence_penalties_match_a_reference_loop"),
    "repetition_penalty": shown(f"{FIELDS}::test_repetition_penalty_matches_the_golden_last_logits"),
    "min_new_tokens": shown(f"{FIELDS}::test_min_tokens_delays_stop_token_ids_and_eos"),
    "n": shown(f"{E2E}::test_generate_native"),
    "json_schema": shown(f"{SO}::test_generate_sampling_params"),
    "regex": shown(f"{SO}::test_generate_sampling_params"),
    "ebnf": shown(f"{SO}::test_generate_sampling_params"),
    "structural_tag": shown(f"{SO}::test_structural_tag"),
    "ignore_eos": ("effect", {"ignore_eos": True, "logit_bias": {"2": 100}}),
    "skip_special_tokens": ("effect", {"skip_special_tokens": False, "logit_bias": {"2": 100},
                                       "no_stop_trim": True}),
    "spaces_between_special_tokens": no_effect(
        False, "HF fast tokenizers ignore it in SGLang too"),
    "no_stop_trim": shown(f"{E2E}::test_no_stop_trim"),
    "custom_params": refused({"a": 1}),
    "stream_interval": refused(4),
    "logit_bias": shown(f"{FIELDS}::test_logit_bias_forces_and_forbids_tokens"),
    "sampling_seed": ("effect", {"sampling_seed": 5, "temperature": 1.0}),
}
GENERATE = {
    "rid": shown(f"{E2E}::test_abort_request_by_rid"),
    "return_logprob": shown(f"{E2E}::test_generate_logprobs"),
    "logprob_start_len": shown(f"{FIELDS}::test_generate_input_token_logprobs"),
    "top_logprobs_num": shown(f"{E2E}::test_generate_logprobs"),
    "token_ids_logprob": shown(f"{FIELDS}::test_generate_token_ids_logprob"),
    "return_text_in_logprobs": shown(f"{E2E}::test_generate_logprobs"),
    "stream": shown(f"{E2E}::test_generate_native"),
    "input_embeds": refused([[0.1]]),
    "image_data": refused("img.png"),
    "audio_data": refused("a.wav"),
    "video_data": refused("v.mp4"),
    "lora_path": refused("adapter"),
    "return_hidden_states": refused(True),
    "custom_logit_processor": refused("x"),
}
EMBEDDINGS = {
    "model": shown(f"{EMB}::test_openai_client_float_matches_transformers"),
    "dimensions": refused(64),  # the model's own size (128) is accepted
    "encoding_format": shown(f"{EMB}::test_explicit_base64_is_little_endian_f32"),
    "user": no_effect("u", "describes the caller"),
}
TABLES = {"chat": (CHAT, OPENAI_CHAT), "completions": (COMPLETIONS, OPENAI_COMPLETIONS),
          "sampling": (SAMPLING, SGLANG_SAMPLING), "generate": (GENERATE, SGLANG_GENERATE),
          "embeddings": (EMBEDDINGS, OPENAI_EMBEDDINGS)}


@pytest.fixture(scope="module")
def embedding_server(tmp_path_factory):
    models = make_embedding_models(tmp_path_factory.mktemp("models"))
    srv = Server(tmp_path_factory.mktemp("embedding-server"), "--is-embedding",
                 model=models / "tiny-qwen3-embedding-last", served_model_name="tiny-embed")
    yield srv
    assert srv.alive(), "the server died: " + srv.log()
    assert srv.stop() == 0, srv.log()


def server_for(route, request):
    """The route's server: an embedding server for the embeddings route."""
    return request.getfixturevalue("embedding_server" if route == "embeddings" else "server")


def body(route, field, value):
    if route == "chat":
        return "/v1/chat/completions", {"messages": MSGS, "max_tokens": 4, "temperature": 0,
                                        field: value}
    if route == "completions":
        return "/v1/completions", {"prompt": PROMPT, "max_tokens": 4, "temperature": 0,
                                   field: value}
    if route == "sampling":
        return "/generate", {"text": PROMPT, "sampling_params": {"max_new_tokens": 4,
                                                                 "temperature": 0, field: value}}
    if route == "embeddings":
        return "/v1/embeddings", {"input": PROMPT, field: value}
    return "/generate", {"text": PROMPT, "sampling_params": {"max_new_tokens": 4}, field: value}


def rows(kind):
    return [(route, field, spec) for route, (table, _) in TABLES.items()
            for field, spec in table.items() if spec[0] == kind]


@pytest.mark.parametrize("route", list(TABLES))
def test_every_schema_field_has_a_row(route):
    table, schema = TABLES[route]
    assert sorted(set(schema) - set(table)) == []
    assert sorted(set(table) - set(schema)) == []


def test_cited_tests_exist():
    defined = {}
    for route, field, (_, test) in rows("shown"):
        file, name = test.split("::")
        if file not in defined:
            tree = ast.parse((HERE / file).read_text())
            defined[file] = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert name in defined[file], (route, field, test)


@pytest.mark.parametrize("route,field,spec", rows("refused"),
                         ids=[f"{r}:{f}" for r, f, _ in rows("refused")])
def test_refused_fields_name_themselves(request, route, field, spec):
    path, b = body(route, field, spec[1])
    r = server_for(route, request).post(path, b)
    assert r.status_code == 400, r.text
    assert field in r.json()["error"]["message"], r.text


def text_of(route, r):
    assert r.status_code == 200, r.text
    j = r.json()
    if route == "chat":
        return j["choices"][0]["message"]["content"]
    if route == "completions":
        return j["choices"][0]["text"]
    if route == "embeddings":
        return j["data"][0]["embedding"]
    return j["text"]


@pytest.mark.parametrize("route,field,spec", rows("no effect"),
                         ids=[f"{r}:{f}" for r, f, _ in rows("no effect")])
def test_no_effect_fields_change_nothing(request, route, field, spec):
    server = server_for(route, request)
    path, with_field = body(route, field, spec[1])
    if route not in ("sampling", "embeddings"):
        with_field = {**with_field, "max_tokens": 12}
    plain = {k: v for k, v in with_field.items() if k != field}
    if route == "sampling":
        plain = {**with_field, "sampling_params": {k: v for k, v in
                                                    with_field["sampling_params"].items()
                                                    if k != field}}
    got = text_of(route, server.post(path, with_field))
    expected = text_of(route, server.post(path, plain))
    if route == "embeddings":
        # A repeat may reuse the first one's cached prefix: f32 sums in another order.
        assert max(abs(a - b) for a, b in zip(got, expected)) < 1e-6
    else:
        assert got == expected


@pytest.mark.parametrize("route,field,spec", rows("shown"),
                         ids=[f"{r}:{f}" for r, f, _ in rows("shown")])
def test_shown_fields_are_accepted(request, route, field, spec):
    # The value each route's example takes; the cited test shows the effect.
    values = {"model": "any", "frequency_penalty": 0.5, "logit_bias": {"5": 1}, "logprobs": True,
              "max_completion_tokens": 3, "max_tokens": 3, "n": 2, "presence_penalty": 0.5,
              "seed": 3, "stop": ["zzz"], "stream": False, "stream_options": None,
              "temperature": 0.5, "tools": [], "top_logprobs": 2, "echo": True,
              "max_new_tokens": 3, "stop_token_ids": [2], "stop_regex": "zzz",
              "repetition_penalty": 1.1, "min_new_tokens": 1, "no_stop_trim": True, "rid": "r-1",
              "return_logprob": True, "logprob_start_len": 0, "top_logprobs_num": 2,
              "return_text_in_logprobs": True, "token_ids_logprob": [2, 5],
              "encoding_format": "base64",
              "response_format": {"type": "json_object"}, "json_schema": '{"type": "object"}',
              "regex": "[a-z]{1,3}", "ebnf": 'root ::= "a" | "b"', "tool_choice": "auto",
              "structural_tag": json.dumps({"triggers": ["<a"], "structures": [
                  {"begin": "<a>", "schema": {"type": "integer"}, "end": "</a>"}]}),
              "parallel_tool_calls": False}
    if route == "completions" and field == "logprobs":
        values["logprobs"] = 2
    path, b = body(route, field, values[field])
    if field == "top_logprobs":
        b["logprobs"] = True
    if route == "generate" and field in ("logprob_start_len", "top_logprobs_num",
                                         "return_text_in_logprobs", "token_ids_logprob"):
        b["return_logprob"] = True
    r = server_for(route, request).post(path, b)
    assert r.status_code == 200, r.text
    if field == "token_ids_logprob":
        assert [e[1] for e in r.json()["meta_info"]["output_token_ids_logprobs"][0]] == [2, 5]


def greedy(server, route):
    path, b = body(route, "max_tokens" if route != "sampling" else "max_new_tokens", 12)
    return text_of(route, server.post(path, b))


@pytest.mark.parametrize("route,field,spec", rows("effect"),
                         ids=[f"{r}:{f}" for r, f, _ in rows("effect")])
def test_inline_effects(server, route, field, spec):
    params = spec[1]
    path, b = body(route, "max_tokens" if route != "sampling" else "max_new_tokens", 12)
    target = b["sampling_params"] if route == "sampling" else b
    target.update(params)
    text = text_of(route, server.post(path, b))
    if field in ("top_p", "top_k", "min_p"):
        # Only the most likely token survives the cut: sampling at temperature 1 is greedy.
        assert text == greedy(server, route)
    elif field == "sampling_seed":
        assert text == text_of(route, server.post(path, b))  # the same seed, the same sample
    elif field == "ignore_eos":
        # EOS made overwhelming: without ignore_eos the first token ends the request.
        assert server.post(path, b).json()["meta_info"]["completion_tokens"] == 12
        target.pop("ignore_eos")
        assert server.post(path, b).json()["meta_info"]["completion_tokens"] == 1
    elif field == "skip_special_tokens":
        assert text == "</s>"  # EOS first; no_stop_trim keeps its text, here not skipped
        target["skip_special_tokens"] = True
        assert text_of(route, server.post(path, b)) == ""
