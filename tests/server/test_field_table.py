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
# SGLang's EmbeddingRequest beyond OpenAI's.
SGLANG_EMBEDDINGS = ["rid", "priority", "lora_path", "embed_override_token_id", "embed_overrides"]
# SGLang's GenerateReqInput, minus the prompt (text, input_ids) and sampling_params.
SGLANG_GENERATE = [
    "rid", "session_id", "input_embeds", "image_data", "video_data", "audio_data", "mm_hashes",
    "mm_content_hashes", "use_audio_in_video", "video_config", "watermark", "return_logprob",
    "logprob_start_len", "top_logprobs_num", "token_ids_logprob", "return_sampling_mask",
    "sampling_logprobs_mode", "return_text_in_logprobs", "return_flat_raw_top_logprobs",
    "return_flat_raw_output_top_logprobs", "return_flat_raw_top_logprobs_b64", "stream",
    "log_metrics", "return_hidden_states", "return_routed_experts", "routed_experts_start_len",
    "return_indexer_topk", "modalities", "session_params", "lora_path", "lora_id",
    "custom_logit_processor", "positional_embed_overrides", "bootstrap_host", "bootstrap_port",
    "bootstrap_room", "bootstrap_pair_key", "decode_tp_size", "routed_dp_rank",
    "data_parallel_rank", "disagg_prefill_dp_rank", "routing_key", "conversation_id",
    "http_worker_ipc", "background", "require_reasoning", "max_thinking_tokens", "priority",
    "extra_key", "no_logs", "custom_labels", "return_bytes", "return_entropy",
    "return_prompt_token_ids", "external_trace_header", "received_time",
    "need_wait_for_mm_inputs", "num_items_assigned", "encoder_urls", "max_dynamic_patch",
    "min_dynamic_patch", "image_max_dynamic_patch", "video_max_dynamic_patch", "images_config",
    "mm_processor_kwargs", "multi_item_delimiter_indices", "token_indices_to_pool", "cache_salt",
    "kv_hints"]
# SGLang's fields of ChatCompletionRequest / CompletionRequest beyond OpenAI's schema, with the
# prefill-decode routing fields both take.
SGLANG_PD = ["bootstrap_host", "bootstrap_port", "bootstrap_room", "routed_dp_rank",
             "disagg_prefill_dp_rank"]
SGLANG_CHAT = [
    "return_hidden_states", "return_routed_experts", "routed_experts_start_len",
    "return_cached_tokens_details", "return_spec_tokens_details", "return_prompt_token_ids",
    "return_token_ids", "return_meta_info", "return_input_ids_in_sglext",
    "return_output_ids_in_sglext", "return_sampling_mask", "sampling_logprobs_mode",
    "return_flat_raw_output_top_logprobs", "return_flat_raw_top_logprobs_b64", "thinking",
    "reasoning", "task",
    "top_k", "min_p", "min_tokens", "regex", "ebnf", "repetition_penalty", "stop_token_ids",
    "stop_regex", "no_stop_trim", "ignore_eos", "continue_final_message", "skip_special_tokens",
    "lora_path", "session_id", "session_params", "separate_reasoning", "stream_reasoning",
    "chat_template_kwargs", "max_dynamic_patch", "min_dynamic_patch", "use_audio_in_video",
    "images_config", "video_config", "mm_processor_kwargs", "custom_logit_processor",
    "custom_params", "watermark", "input_ids", "rid", "extra_key", "cache_salt", "priority",
    "data_parallel_rank"] + SGLANG_PD
SGLANG_COMPLETIONS = [
    "return_hidden_states", "return_routed_experts", "routed_experts_start_len",
    "return_cached_tokens_details", "return_spec_tokens_details", "return_token_ids", "top_k",
    "min_p", "min_tokens", "json_schema", "regex", "ebnf", "repetition_penalty", "stop_token_ids",
    "stop_regex", "no_stop_trim", "ignore_eos", "skip_special_tokens", "lora_path", "session_id",
    "session_params", "response_format", "custom_params", "custom_logit_processor", "watermark",
    "images_config", "mm_processor_kwargs", "data_parallel_rank", "rid", "extra_key",
    "cache_salt", "priority", "custom_labels"] + SGLANG_PD


def shown(test):
    return ("shown", test)


def refused(value):
    return ("refused", value)


def no_effect(value, why):
    return ("no effect", value, why)


E2E, FIELDS, BAD = "test_openai_e2e.py", "test_request_fields.py", "test_bad_input.py"
EMB = "test_embeddings.py"
SO = "test_structured_output.py"
REASONING = "test_reasoning_items.py"
DP = "test_data_parallel.py"
NAMESPACE = "test_cache_namespace.py"
ROLLOUT = "test_rollout_fields.py"
ROUTED_EXPERTS = "test_routed_experts.py::test_every_position_fed_to_the_model_reports_its_experts"
OPENAI_ROUTED_EXPERTS = "test_routed_experts.py::test_openai_replies_carry_them_in_sglext"
OPENAI_HIDDEN_STATES = "test_hidden_states.py::test_openai_choices_carry_the_last_fed_back_row"
NO_PRIORITY = "priority scheduling is off, as in SGLang without --enable-priority-scheduling"
NO_CUSTOM_LABELS = ("metric labels SGLang takes only with "
                    "--tokenizer-metrics-allowed-custom-labels, which sgl.cpp does not have")

# SGLang's request fields of features sgl.cpp does not have, refused wherever a route takes them.
REFUSED_SGLANG = {
    "return_meta_info": True,
    "return_input_ids_in_sglext": True, "return_output_ids_in_sglext": True,
    "return_sampling_mask": True, "sampling_logprobs_mode": "support",
    "return_flat_raw_top_logprobs": True, "return_flat_raw_output_top_logprobs": True,
    "return_flat_raw_top_logprobs_b64": True, "return_indexer_topk": True, "return_bytes": True,
    "return_entropy": True, "lora_path": "adapter", "lora_id": "a1", "session_id": "s1",
    "session_params": {"id": "s1"}, "watermark": {"key": 1}, "custom_params": {"a": 1}, "custom_logit_processor": "x",
    "input_embeds": [[0.1]], "image_data": "img.png", "audio_data": "a.wav",
    "video_data": "v.mp4", "mm_hashes": [1], "mm_content_hashes": [1],
    "use_audio_in_video": True, "video_config": {"fps": 1}, "images_config": {"max": 1},
    "mm_processor_kwargs": {"a": 1}, "max_dynamic_patch": 4, "min_dynamic_patch": 1,
    "image_max_dynamic_patch": 4, "video_max_dynamic_patch": 4, "encoder_urls": ["u"],
    "positional_embed_overrides": {"a": 1}, "multi_item_delimiter_indices": [1],
    "token_indices_to_pool": [0], "kv_hints": {"a": 1}, "bootstrap_host": "h",
    "bootstrap_port": 8998, "bootstrap_room": 7, "bootstrap_pair_key": "k",
    "disagg_prefill_dp_rank": 0, "decode_tp_size": 2,
    "max_thinking_tokens": 8, "background": True, "continue_final_message": True,
    "embed_override_token_id": 5, "embed_overrides": [[[0.5]]],
}


def refused_sglang(fields):
    return {f: refused(REFUSED_SGLANG[f]) for f in fields}

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
    "reasoning_effort": shown("test_reasoning_items.py::test_chat_reasoning_effort_switches_the_template"),
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
    "lora_path": shown("test_lora.py::test_mixed_batches_equal_each_request_alone"),
    "return_hidden_states": shown("test_hidden_states.py::test_rows_are_the_lm_heads_input"),
    "return_prompt_token_ids": shown(f"{ROLLOUT}::test_generate_lists_the_prompt_ids"),
    "custom_logit_processor": refused("x"),
}
GENERATE.update({
    **refused_sglang(["session_id", "mm_hashes", "mm_content_hashes", "use_audio_in_video",
                      "video_config", "watermark", "return_sampling_mask", "sampling_logprobs_mode",
                      "return_flat_raw_top_logprobs", "return_flat_raw_output_top_logprobs",
                      "return_flat_raw_top_logprobs_b64",
                      "return_indexer_topk", "lora_id",
                      "positional_embed_overrides", "bootstrap_host", "bootstrap_port",
                      "bootstrap_room", "bootstrap_pair_key", "decode_tp_size",
                      "disagg_prefill_dp_rank", "background", "return_bytes", "return_entropy",
                      "encoder_urls", "max_dynamic_patch",
                      "min_dynamic_patch", "image_max_dynamic_patch", "video_max_dynamic_patch",
                      "images_config", "mm_processor_kwargs", "multi_item_delimiter_indices",
                      "token_indices_to_pool", "kv_hints"]),
    "modalities": refused(["image"]),
    "log_metrics": no_effect(False, "metrics count every request"),
    "return_routed_experts": shown(ROUTED_EXPERTS),
    "routed_experts_start_len": shown(ROUTED_EXPERTS),
    "routed_dp_rank": shown(f"{DP}::test_routed_dp_rank_names_the_replica"),
    "data_parallel_rank": shown(f"{DP}::test_routed_dp_rank_names_the_replica"),
    "routing_key": no_effect("k", "a hint for SGLang's routing-key schedule policy, not built"),
    "conversation_id": no_effect("c", "tracks requests; changes nothing about them"),
    "http_worker_ipc": no_effect("ipc://x", "SGLang's internal return address"),
    "priority": no_effect(3, NO_PRIORITY),
    "extra_key": shown(f"{NAMESPACE}::test_generate_shares_the_cache_only_within_a_namespace"),
    "cache_salt": shown(f"{NAMESPACE}::test_generate_shares_the_cache_only_within_a_namespace"),
    "session_params": shown("test_sessions.py::test_turns_continue_the_named_turn"),
    "no_logs": shown("test_launch_flags.py::test_log_requests_and_no_logs"),
    "require_reasoning": shown("test_reasoning_grammar.py::test_generate_require_reasoning"),
    "max_thinking_tokens": shown("test_reasoning_grammar.py::test_generate_max_thinking_tokens"),
    "custom_labels": no_effect({"team": "a"}, NO_CUSTOM_LABELS),
    "external_trace_header": no_effect({"traceparent": "00-1-2-01"}, "no tracing is built"),
    "received_time": no_effect(1.5, "SGLang's internal timestamp"),
    "need_wait_for_mm_inputs": no_effect(True, "SGLang's internal multimodal state"),
    "num_items_assigned": no_effect([1], "SGLang's internal multimodal state"),
})
# SGLang's sampling fields at the top level of the OpenAI routes: sampling_params' rows.
SAMPLING_ON_OPENAI = {
    **{f: SAMPLING[f] for f in ["top_k", "min_p", "repetition_penalty", "stop_token_ids",
                                "stop_regex", "no_stop_trim", "ignore_eos", "skip_special_tokens"]},
    "min_tokens": shown(f"{FIELDS}::test_min_tokens_delays_stop_token_ids_and_eos"),
    "regex": shown(f"{SO}::test_logprobs_are_of_the_masked_distribution"),
    "ebnf": shown(f"{REASONING}::test_chat_stream_reasoning_false_sends_the_reasoning_whole"),
    "rid": shown(f"{E2E}::test_chat_and_completions_take_rid"),
    "routed_dp_rank": shown(f"{DP}::test_routed_dp_rank_names_the_replica"),
    "data_parallel_rank": shown(f"{DP}::test_routed_dp_rank_names_the_replica"),
    "priority": no_effect(3, NO_PRIORITY),
    "return_routed_experts": shown(OPENAI_ROUTED_EXPERTS),
    "routed_experts_start_len": shown(ROUTED_EXPERTS),
    "return_cached_tokens_details": shown(
        f"{ROLLOUT}::test_cached_tokens_details_count_the_prefix_served"),
    "return_spec_tokens_details": shown("test_speculative.py::test_each_request_reports_its_drafts"),
    "lora_path": shown("test_lora.py::test_openai_routes_name_adapters"),
    "extra_key": shown(f"{NAMESPACE}::test_openai_routes_take_extra_key_and_cache_salt"),
    "cache_salt": shown(f"{NAMESPACE}::test_openai_routes_take_extra_key_and_cache_salt"),
}
CHAT.update({
    **refused_sglang(["return_meta_info",
                      "return_input_ids_in_sglext", "return_output_ids_in_sglext",
                      "return_sampling_mask", "sampling_logprobs_mode",
                      "return_flat_raw_output_top_logprobs", "return_flat_raw_top_logprobs_b64",
                      "session_id", "session_params",
                      "max_dynamic_patch", "min_dynamic_patch", "use_audio_in_video",
                      "images_config", "video_config", "mm_processor_kwargs",
                      "custom_logit_processor", "custom_params", "watermark",
                      "bootstrap_host", "bootstrap_port", "bootstrap_room",
                      "disagg_prefill_dp_rank"]),
    **{f: SAMPLING_ON_OPENAI[f] for f in SAMPLING_ON_OPENAI if f in SGLANG_CHAT},
    "thinking": shown(f"{REASONING}::test_chat_thinking_config_reaches_the_template"),
    "reasoning": shown(f"{REASONING}::test_chat_reasoning_effort_switches_the_template"),
    "task": no_effect("domain", "read only by DeepSeek-V4's chat encoder, as in SGLang"),
    "separate_reasoning": shown(
        "test_tool_calls.py::test_deepseek_r1_reasoning_takes_the_unclosed_reply"),
    "stream_reasoning": shown(f"{REASONING}::test_chat_stream_reasoning_false_sends_the_reasoning_whole"),
    "chat_template_kwargs": shown(f"{REASONING}::test_responses_effort_switches_the_template"),
    "input_ids": shown(f"{FIELDS}::test_chat_input_ids_replace_the_rendering"),
    "continue_final_message": shown(
        f"{FIELDS}::test_chat_continue_final_message_continues_the_assistants_text"),
    "return_hidden_states": shown(OPENAI_HIDDEN_STATES),
    "return_token_ids": shown(f"{ROLLOUT}::test_chat_lists_the_rendered_prompt_and_the_response"),
    "return_prompt_token_ids": shown(
        f"{ROLLOUT}::test_chat_lists_the_rendered_prompt_and_the_response"),
})
COMPLETIONS.update({
    **refused_sglang(["session_id", "session_params",
                      "custom_params", "custom_logit_processor", "watermark", "images_config",
                      "mm_processor_kwargs", "bootstrap_host",
                      "bootstrap_port", "bootstrap_room", "disagg_prefill_dp_rank"]),
    **{f: SAMPLING_ON_OPENAI[f] for f in SAMPLING_ON_OPENAI if f in SGLANG_COMPLETIONS},
    "json_schema": shown(f"{SO}::test_generate_sampling_params"),
    "response_format": shown(f"{SO}::test_bad_grammars_are_400"),
    "custom_labels": no_effect({"team": "a"}, NO_CUSTOM_LABELS),
    "return_hidden_states": shown(OPENAI_HIDDEN_STATES),
    "return_token_ids": shown(f"{ROLLOUT}::test_completions_list_the_prompt_and_output_ids"),
})
EMBEDDINGS = {
    "model": shown(f"{EMB}::test_openai_client_float_matches_transformers"),
    "dimensions": refused(64),  # the model's own size (128) is accepted
    "encoding_format": shown(f"{EMB}::test_explicit_base64_is_little_endian_f32"),
    "user": no_effect("u", "describes the caller"),
    "rid": shown(f"{EMB}::test_a_rid_names_the_request_in_flight"),
    "priority": shown(f"{EMB}::test_a_priority_reaches_the_scheduler"),
    **refused_sglang(["lora_path", "embed_override_token_id", "embed_overrides"]),
}
TABLES = {"chat": (CHAT, OPENAI_CHAT + SGLANG_CHAT),
          "completions": (COMPLETIONS, OPENAI_COMPLETIONS + SGLANG_COMPLETIONS),
          "sampling": (SAMPLING, SGLANG_SAMPLING), "generate": (GENERATE, SGLANG_GENERATE),
          "embeddings": (EMBEDDINGS, OPENAI_EMBEDDINGS + SGLANG_EMBEDDINGS)}


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
    return "/generate", {"text": PROMPT, "sampling_params": {"max_new_tokens": 4, "temperature": 0},
                         field: value}


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
    if route in ("chat", "completions"):
        with_field = {**with_field, "max_tokens": 12}
    if route == "generate":
        with_field["sampling_params"]["max_new_tokens"] = 12
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
              "parallel_tool_calls": False, "thinking": {"type": "enabled"},
              "separate_reasoning": False, "stream_reasoning": False,
              "chat_template_kwargs": {"enable_thinking": False}, "input_ids": [1, 403],
              "routed_dp_rank": 0, "data_parallel_rank": 0, "no_logs": True, "min_tokens": 1,
              "require_reasoning": False, "max_thinking_tokens": None,
              # True needs --enable-return-hidden-states, which the cited test's server has.
              "return_hidden_states": False,
              "return_token_ids": True, "return_prompt_token_ids": True,
              # True needs a MoE model and --enable-return-routed-experts (the cited test's).
              "return_routed_experts": False, "routed_experts_start_len": 0,
              "return_cached_tokens_details": True, "return_spec_tokens_details": True,
              "extra_key": "tenant", "cache_salt": "salt",
              # An adapter's name needs --lora-paths (the cited test's server); null is none.
              "lora_path": None,
              # True needs a final assistant message (the cited test's conversations).
              "continue_final_message": False,
              # Any level (and a thinking budget) needs a reasoning parser, "none" a template
              # reading enable_thinking: this server has neither (the cited test's servers do).
              "reasoning_effort": None, "reasoning": {"enabled": False},
              # Without --enable-priority-scheduling a priority is taken and has no effect.
              "priority": 3}
    if route == "completions" and field == "logprobs":
        values["logprobs"] = 2
    if field == "session_params":  # a turn of a session opened for it
        opened = server_for(route, request).post("/open_session", {"capacity_of_str_len": 1})
        values["session_params"] = {"id": opened.json()}
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
        def completion_tokens():
            j = server.post(path, b).json()
            return j["meta_info" if route == "sampling" else "usage"]["completion_tokens"]

        assert completion_tokens() == 12
        target.pop("ignore_eos")
        assert completion_tokens() == 1
    elif field == "skip_special_tokens":
        assert text == "</s>"  # EOS first; no_stop_trim keeps its text, here not skipped
        target["skip_special_tokens"] = True
        assert text_of(route, server.post(path, b)) == ""
