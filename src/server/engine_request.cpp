// Engine request building and submission.
#include "server/engine_request.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "core/logging.h"
#include "server/lora_request.h"
#include "server/request_log_json.h"

namespace sgl::server {

Status check_prompt_ids(const ServerContext& ctx, const std::vector<int32_t>& prompt_ids) {
  const auto len = static_cast<int64_t>(prompt_ids.size());
  const int64_t context = ctx.info.context_length;
  if (len == 0) return invalid_argument("the prompt is empty");
  if (len >= context) {
    return invalid_argument("the prompt has " + std::to_string(len) +
                            " tokens; the model's context length is " + std::to_string(context));
  }
  for (int32_t id : prompt_ids) {
    if (id >= ctx.info.vocab_size) {
      return invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                              std::to_string(ctx.info.vocab_size) + ")");
    }
  }
  return Status::ok_status();
}

Result<engine::GenerateRequest> build_engine_request(const ServerContext& ctx,
                                                     const SamplingInput& s,
                                                     std::vector<int32_t> prompt_ids, int64_t index,
                                                     std::optional<int64_t> default_max_tokens) {
  const int64_t context = ctx.info.context_length;
  const bool truncate = ctx.info.api.allow_auto_truncate;
  if (truncate && static_cast<int64_t>(prompt_ids.size()) >= context && context > 1) {
    // SGLang's --allow-auto-truncate: the prompt's head, with room for one token.
    SGL_LOG_WARN << "a prompt of " << prompt_ids.size() << " tokens is longer than the context ("
                 << context << "): truncated to its first " << context - 1;
    prompt_ids.resize(static_cast<size_t>(context - 1));
  }
  SGL_RETURN_IF_ERROR(check_prompt_ids(ctx, prompt_ids));
  const auto len = static_cast<int64_t>(prompt_ids.size());
  // (len + max_tokens may overflow.) Truncating, the limit is cut to the room left below.
  if (s.max_tokens && *s.max_tokens > context - len && !truncate) {
    return invalid_argument("the prompt (" + std::to_string(len) + " tokens) plus " +
                            s.max_tokens_field + " (" + std::to_string(*s.max_tokens) +
                            ") exceeds the model's context length " + std::to_string(context));
  }
  for (int32_t id : s.stop_token_ids) {
    if (id >= ctx.info.vocab_size) {
      return invalid_argument("stop_token_ids: token id " + std::to_string(id) +
                              " is outside the vocabulary");
    }
  }
  for (const auto& [id, bias] : s.logit_bias) {
    if (id >= ctx.info.vocab_size) {
      return invalid_argument("'logit_bias' token id " + std::to_string(id) +
                              " is outside the vocabulary [0, " +
                              std::to_string(ctx.info.vocab_size) + ")");
    }
  }
  engine::GenerateRequest r;
  r.input_ids = std::move(prompt_ids);
  r.sampling.temperature = static_cast<float>(s.temperature);
  r.sampling.top_p = static_cast<float>(s.top_p);
  r.sampling.top_k = static_cast<int32_t>(std::min<int64_t>(s.top_k, 1 << 30));
  r.sampling.min_p = static_cast<float>(s.min_p);
  if (s.seed) r.sampling.seed = static_cast<uint64_t>(*s.seed) + static_cast<uint64_t>(index);
  r.sampling.presence_penalty = static_cast<float>(s.presence_penalty);
  r.sampling.frequency_penalty = static_cast<float>(s.frequency_penalty);
  r.sampling.repetition_penalty = static_cast<float>(s.repetition_penalty);
  r.sampling.min_new_tokens = static_cast<int32_t>(std::min<int64_t>(s.min_tokens, 1 << 30));
  for (const auto& [id, bias] : s.logit_bias) {
    r.sampling.logit_bias.push_back({static_cast<int32_t>(id), static_cast<float>(bias)});
  }
  const int64_t room = context - len;
  const int64_t max_new = s.max_tokens             ? *s.max_tokens
                          : s.max_tokens_unbounded ? room
                          : s.default_max_tokens   ? *s.default_max_tokens
                                                   : default_max_tokens.value_or(room);
  r.max_new_tokens = static_cast<int32_t>(std::min(max_new, room));
  r.ignore_eos = s.ignore_eos;
  r.stop_token_ids = s.stop_token_ids;
  for (const std::string& stop : s.stop) {
    const std::optional<int32_t> id = special_token_stop(ctx.tokenizer, stop);
    if (id && std::find(r.stop_token_ids.begin(), r.stop_token_ids.end(), *id) ==
                  r.stop_token_ids.end()) {
      r.stop_token_ids.push_back(*id);
    }
  }
  SGL_RETURN_IF_ERROR(r.sampling.validate());
  if (s.grammar) {
    SGL_ASSIGN_OR_RETURN(r.grammar, ctx.grammar.compile(*s.grammar));
  }
  return r;
}

Status check_text_length(const ServerContext& ctx, size_t bytes, std::string_view field) {
  const size_t limit =
      std::max<size_t>(size_t{1} << 20, 16 * static_cast<size_t>(ctx.info.context_length));
  if (bytes <= limit) return Status::ok_status();
  return invalid_argument("'" + std::string(field) + "' is " + std::to_string(bytes) +
                          " bytes long; the limit is " + std::to_string(limit) +
                          " bytes (16 per token of the context length, at least 1 MiB)");
}

Status check_prompts(const ServerContext& ctx, const std::vector<PromptInput>& prompts,
                     std::string_view field) {
  for (const PromptInput& p : prompts) {
    if (!p.is_text) continue;
    if (ctx.info.skip_tokenizer_init) {
      return invalid_argument("'" + std::string(field) +
                              "' is text, and this server has no tokenizer "
                              "(--skip-tokenizer-init): send token ids (input_ids) instead");
    }
    SGL_RETURN_IF_ERROR(check_text_length(ctx, p.text.size(), field));
  }
  return Status::ok_status();
}

std::vector<int32_t> prompt_ids(const ServerContext& ctx, const PromptInput& prompt,
                                bool add_special_tokens) {
  if (!prompt.is_text) return prompt.ids;
  tokenizer::EncodeOptions options;
  options.add_special_tokens = add_special_tokens;
  return ctx.tokenizer.encode(prompt.text, options);
}

std::optional<int32_t> special_token_stop(const tokenizer::Tokenizer& tokenizer,
                                          std::string_view stop) {
  const std::optional<int32_t> id = tokenizer.token_to_id(stop);
  if (!id || !tokenizer.is_special(*id)) return std::nullopt;
  return id;
}

Status apply_routing(ServerContext& ctx, const RequestRouting& routing, size_t prompt,
                     engine::GenerateRequest& request) {
  request.cache_namespace = routing.cache_namespace_of(prompt);
  request.priority = routing.priority;
  return lease_lora(ctx.lora, routing, prompt, request);
}

ChoiceOptions choice_options(const SamplingInput& s, bool token_texts) {
  return {.stop = s.stop,
          .stop_regex = s.stop_regex,
          .no_stop_trim = s.no_stop_trim,
          .skip_special_tokens = s.skip_special_tokens,
          .token_texts = token_texts,
          .parser = {}};
}

Result<std::vector<std::unique_ptr<ChoiceStream>>> submit_choices(
    ServerContext& ctx, std::vector<ChoicePlan> plans, std::optional<int64_t> routed_dp_rank) {
  std::vector<std::unique_ptr<ChoiceStream>> choices;
  choices.reserve(plans.size());
  const RequestLogView log = ctx.request_log.view();
  for (ChoicePlan& plan : plans) {
    const std::vector<int32_t> prompt = plan.request.input_ids;
    request_log::json logged;  // built before the request moves into the engine
    if (log.enabled && !plan.options.no_logs) {
      logged = request_log::generate_request(
          plan.request, plan.options, ctx.info.skip_tokenizer_init ? nullptr : &ctx.tokenizer,
          log.level);
    }
    auto stream = ctx.engine.submit(std::move(plan.request), routed_dp_rank);
    // On an error the streams already made abort their requests as they are destroyed.
    if (!stream.ok()) return stream.status();
    if (!logged.is_null()) {
      ctx.request_log.write(
          request_log::received_line(log, std::to_string((*stream)->rid()), logged));
    }
    choices.push_back(std::make_unique<ChoiceStream>(ctx, std::move(stream).value(), prompt,
                                                     std::move(plan.options)));
  }
  return choices;
}

std::string make_request_id(std::string_view prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return std::string(prefix) + hex;
}

std::vector<std::string> client_request_ids(const RequestRouting& routing) {
  if (routing.rid.empty()) return {};
  return {routing.rid};
}

std::string reply_id(const std::string& rid, std::string_view prefix) {
  return rid.empty() ? make_request_id(prefix) : rid;
}

int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace sgl::server
