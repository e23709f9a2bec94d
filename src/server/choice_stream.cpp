// ChoiceStream: engine events -> API text, finish and metrics.
#include "server/choice_stream.h"

#include <algorithm>
#include <chrono>
#include <type_traits>

#include "server/engine_request.h"
#include "server/request_log_json.h"
#include "server/token_text.h"

namespace sgl::server {
namespace {

double seconds(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

double now_s() { return seconds(std::chrono::steady_clock::now()); }

tokenizer::DecodeOptions decode_options(bool skip_special_tokens) {
  tokenizer::DecodeOptions o;
  o.skip_special_tokens = skip_special_tokens;
  return o;
}

// Tokens [first, first + count) of `e` as an event of their own: the prompt logprobs with the
// first token, the finish with the last.
engine::StreamEvent slice(const engine::StreamEvent& e, size_t first, size_t count) {
  auto part = [&](const auto& v) {
    using V = std::decay_t<decltype(v)>;
    if (v.empty()) return V{};
    return V(v.begin() + static_cast<std::ptrdiff_t>(first),
             v.begin() + static_cast<std::ptrdiff_t>(first + count));
  };
  engine::StreamEvent s;
  s.token_ids = part(e.token_ids);
  s.logprobs = part(e.logprobs);
  s.top_logprobs = part(e.top_logprobs);
  s.token_ids_logprobs = part(e.token_ids_logprobs);
  s.usage = e.usage;
  s.spec = e.spec;
  if (first == 0) s.input_logprobs = e.input_logprobs;
  if (first == 0) {  // (rows are positions, not new tokens)
    s.hidden_states = e.hidden_states;
    s.routed_experts = e.routed_experts;
  }
  if (first + count == e.token_ids.size()) s.finished = e.finished;
  return s;
}

}  // namespace

void append_delta(ChoiceDelta& to, const ChoiceDelta& d) {
  to.text += d.text;
  to.reasoning += d.reasoning;
  for (const ToolCallDelta& call : d.tool_calls) {
    // The latest entry of this call in `to` (its start, or a continuation when the call began
    // in an earlier delta than those merged into `to`); none: the piece is an entry of its own.
    auto same = std::find_if(to.tool_calls.rbegin(), to.tool_calls.rend(),
                             [&](const ToolCallDelta& c) { return c.index == call.index; });
    if (call.id.empty() && same != to.tool_calls.rend()) {
      same->arguments += call.arguments;
    } else {
      to.tool_calls.push_back(call);
    }
  }
  to.token_ids.insert(to.token_ids.end(), d.token_ids.begin(), d.token_ids.end());
  to.logprobs.insert(to.logprobs.end(), d.logprobs.begin(), d.logprobs.end());
  to.top_logprobs.insert(to.top_logprobs.end(), d.top_logprobs.begin(), d.top_logprobs.end());
  to.token_texts.insert(to.token_texts.end(), d.token_texts.begin(), d.token_texts.end());
  to.top_token_texts.insert(to.top_token_texts.end(), d.top_token_texts.begin(),
                            d.top_token_texts.end());
  to.token_ids_logprobs.insert(to.token_ids_logprobs.end(), d.token_ids_logprobs.begin(),
                               d.token_ids_logprobs.end());
  to.token_ids_texts.insert(to.token_ids_texts.end(), d.token_ids_texts.begin(),
                            d.token_ids_texts.end());
  if (d.prompt_logprobs) to.prompt_logprobs = d.prompt_logprobs;
  to.hidden_states.insert(to.hidden_states.end(), d.hidden_states.begin(), d.hidden_states.end());
  to.routed_experts.insert(to.routed_experts.end(), d.routed_experts.begin(),
                           d.routed_experts.end());
  to.finished = d.finished;
}

ChoiceStream::ChoiceStream(ServerContext& ctx, std::shared_ptr<engine::RequestStream> stream,
                           const std::vector<int32_t>& prompt_ids, ChoiceOptions options)
    : ctx_(ctx),
      stream_(std::move(stream)),
      options_(std::move(options)),
      detok_(ctx.tokenizer, prompt_ids, decode_options(options_.skip_special_tokens)),
      stops_(options_.stop, options_.no_stop_trim),
      stop_regex_(std::move(tokenizer::StopRegexMatcher::compile(options_.stop_regex)).value()),
      prompt_tokens_(static_cast<int32_t>(prompt_ids.size())),
      start_s_(now_s()) {
  // The names were checked at start-up.
  parser_ = std::move(function_call::make_output_parser(options_.parser)).value();
  if (options_.token_texts) {
    const size_t n = std::min(prompt_ids.size(), kTokenTextContext);
    context_.assign(prompt_ids.end() - static_cast<std::ptrdiff_t>(n), prompt_ids.end());
  }
}

ChoiceStream::~ChoiceStream() {
  stream_->set_notify({});
  if (!engine_done_) ctx_.engine.abort(rid());
}

std::optional<ChoiceDelta> ChoiceStream::pull() {
  if (finish_) return std::nullopt;
  std::optional<engine::StreamEvent> event = stream_->next(std::chrono::milliseconds(0));
  if (!event) return std::nullopt;
  const size_t n = event->token_ids.size();
  if (n > 0) {
    // Timed when the engine produced them, not when this reader took them (a first token that
    // came before this stream was made, just after the submission, counts from then).
    const double first = std::max(seconds(event->first_token_time), start_s_);
    const double last = std::max(seconds(event->last_token_time), first);
    size_t gaps = n;
    if (total_.token_ids.empty()) {
      first_token_s_ = first;
      ctx_.metrics.observe_time_to_first_token(first - start_s_);
      last_token_s_ = first;
      --gaps;
    }
    for (size_t i = 0; i < gaps; ++i) {
      ctx_.metrics.observe_inter_token_latency((last - last_token_s_) / static_cast<double>(gaps));
    }
    last_token_s_ = last;
  }
  // An event may carry several tokens (a slow reader's merged steps, a verify's accepted
  // drafts). With stop strings they go through one at a time, so the tokens after the one that
  // completes a stop are dropped with their logprobs and usage, as SGLang checks each accepted
  // token; and so do they while the reasoning is undecided, so the reasoning token count and
  // the thinking budget are exact.
  const bool stops = !stops_.empty() || !stop_regex_.empty();
  if (n <= 1 || (!stops && (!parser_ || reasoning_ended_))) return process(std::move(*event));
  ChoiceDelta all;
  for (size_t i = 0; i < n && !finish_;) {
    const size_t take = stops || !reasoning_ended_ ? 1 : n - i;
    append_delta(all, process(slice(*event, i, take)));
    i += take;
  }
  return all;
}

ChoiceDelta ChoiceStream::process(engine::StreamEvent event) {
  ChoiceDelta d;
  d.token_ids = std::move(event.token_ids);
  d.logprobs = std::move(event.logprobs);
  d.top_logprobs = std::move(event.top_logprobs);
  d.token_ids_logprobs = std::move(event.token_ids_logprobs);
  d.prompt_logprobs = std::move(event.input_logprobs);
  d.hidden_states = std::move(event.hidden_states);
  d.routed_experts = std::move(event.routed_experts);
  if (options_.token_texts) add_token_texts(d);
  if (event.usage.cached_tokens > cached_tokens_) cached_tokens_ = event.usage.cached_tokens;
  retractions_ = std::max(retractions_, event.usage.retractions);
  if (event.spec.verify_ct > spec_.verify_ct) spec_ = std::move(event.spec);

  std::string piece = detok_.add(text_ids(event, d.token_ids));
  if (event.finished) {
    piece += detok_.flush();
    engine_done_ = true;
  }
  const size_t emitted = raw_emitted_;
  tokenizer::StopStringMatcher::Result match = stops_.add(piece);
  d.text = std::move(match.text);
  std::optional<tokenizer::StopRegexMatcher::Match> regex_match;
  if (!match.matched) regex_match = stop_regex_.add(piece);
  std::optional<FinishInfo> finish;
  if (match.matched || regex_match) {
    if (!engine_done_) ctx_.engine.abort(rid());
    engine_done_ = true;
    if (regex_match) {
      // Through the end of the match, held-back text included (none if it ended earlier).
      const size_t end = std::max(regex_match->end, emitted);
      d.text = stop_regex_.text().substr(emitted, end - emitted);
    }
    finish = FinishInfo{"stop", std::nullopt,
                        match.matched ? match.matched_str : regex_match->pattern, ""};
  } else if (event.finished) {
    d.text += stops_.flush();
    const scheduler::FinishState& f = *event.finished;
    finish = FinishInfo{};
    switch (f.reason) {
      case scheduler::FinishReason::kLength:
        finish->reason = "length";
        break;
      case scheduler::FinishReason::kStop:
      case scheduler::FinishReason::kStopString:
        finish->reason = "stop";
        if (f.matched_token >= 0) {
          // A stop string the request stops on as a special token is named as the string (an
          // EOS token as the token, as SGLang checks those first).
          const std::vector<int32_t>& eos = ctx_.engine.options().eos_token_ids;
          const auto named = std::find_if(
              options_.stop.begin(), options_.stop.end(), [&](const std::string& stop) {
                return special_token_stop(ctx_.tokenizer, stop) == f.matched_token;
              });
          if (named != options_.stop.end() &&
              std::find(eos.begin(), eos.end(), f.matched_token) == eos.end()) {
            finish->matched_string = *named;
          } else {
            finish->matched_token = f.matched_token;
          }
        }
        break;
      case scheduler::FinishReason::kAbort:
        finish->reason = "abort";
        finish->message = f.message;
        finish->status = f.status_code;
        break;
    }
  }
  raw_emitted_ += d.text.size();
  parse_output(d, finish.has_value());
  count_reasoning(d);
  if (!finish && over_reasoning_budget()) {
    // The thinking budget is spent: the reply ends here, as at max_tokens.
    ctx_.engine.abort(rid());
    engine_done_ = true;
    finish = FinishInfo{"length", std::nullopt, std::nullopt, ""};
    // What the detokenizer (a partial character) and the stop matcher (a stop string's possible
    // start) held back, then what the parser did.
    ChoiceDelta rest;
    rest.text = stops_.add(detok_.flush()).text + stops_.flush();
    parse_output(rest, true);
    d.text += rest.text;
    d.reasoning += rest.reasoning;
  }
  // SGLang's: a choice that stopped after making calls finished to make them (matched nothing).
  if (finish && finish->reason == "stop" && parsed_.num_calls() > 0) {
    *finish = FinishInfo{"tool_calls", std::nullopt, std::nullopt, ""};
  }
  d.finished = finish.has_value();
  append_delta(total_, d);
  if (finish) set_finished(std::move(*finish));
  return d;
}

void ChoiceStream::parse_output(ChoiceDelta& d, bool finished) {
  if (!parser_) return;
  parser_->feed(d.text, parsed_);
  if (finished) parser_->finish(parsed_);
  d.text.clear();
  for (function_call::ParseEvent& e : parsed_.take()) {
    const bool call = e.kind == function_call::EventKind::kToolCallBegin ||
                      e.kind == function_call::EventKind::kToolCallArguments;
    if (call && options_.single_tool_call && e.call_index > 0) continue;
    switch (e.kind) {
      case function_call::EventKind::kContent:
        d.text += e.text;
        break;
      case function_call::EventKind::kReasoning:
        d.reasoning += e.text;
        break;
      case function_call::EventKind::kToolCallBegin:
        d.tool_calls.push_back({e.call_index, make_request_id("call_"), std::move(e.text), ""});
        break;
      case function_call::EventKind::kToolCallArguments:
        if (d.tool_calls.empty() || d.tool_calls.back().index != e.call_index) {
          d.tool_calls.push_back({e.call_index, "", "", ""});
        }
        d.tool_calls.back().arguments += e.text;
        break;
    }
  }
}

void ChoiceStream::count_reasoning(const ChoiceDelta& d) {
  if (reasoning_ended_ || !parser_) return;
  if (!d.text.empty() || !d.tool_calls.empty()) {
    reasoning_ended_ = true;
    return;
  }
  undecided_tokens_ += static_cast<int32_t>(d.token_ids.size());
  if (!d.reasoning.empty()) {
    reasoning_tokens_ += undecided_tokens_;
    undecided_tokens_ = 0;
  }
}

bool ChoiceStream::over_reasoning_budget() const {
  return options_.max_reasoning_tokens && !reasoning_ended_ && reasoning_tokens_ > 0 &&
         reasoning_tokens_ + undecided_tokens_ >= *options_.max_reasoning_tokens;
}

std::vector<int32_t> ChoiceStream::text_ids(const engine::StreamEvent& event,
                                            const std::vector<int32_t>& ids) const {
  if (options_.no_stop_trim || !event.finished || ids.empty()) return ids;
  const scheduler::FinishState& f = *event.finished;
  if (f.reason != scheduler::FinishReason::kStop || f.matched_token != ids.back()) return ids;
  return {ids.begin(), ids.end() - 1};
}

void ChoiceStream::abort(const std::string& message, int status) {
  if (finish_) return;
  if (!engine_done_) ctx_.engine.abort(rid());
  engine_done_ = true;
  set_finished(FinishInfo{"abort", std::nullopt, std::nullopt, message, status});
}

void ChoiceStream::add_token_texts(ChoiceDelta& d) {
  for (size_t i = 0; i < d.token_ids.size(); ++i) {
    d.token_texts.push_back(token_text(ctx_.tokenizer, context_, d.token_ids[i]));
    if (i < d.top_logprobs.size()) {
      std::vector<std::string> texts;
      texts.reserve(d.top_logprobs[i].size());
      for (const sampling::TokenLogprob& t : d.top_logprobs[i]) {
        texts.push_back(token_text(ctx_.tokenizer, context_, t.id));
      }
      d.top_token_texts.push_back(std::move(texts));
    }
    if (i < d.token_ids_logprobs.size()) {
      std::vector<std::string> texts;
      texts.reserve(options_.token_ids_logprob.size());
      for (int32_t id : options_.token_ids_logprob) {
        texts.push_back(token_text(ctx_.tokenizer, context_, id));
      }
      d.token_ids_texts.push_back(std::move(texts));
    }
    context_.push_back(d.token_ids[i]);
    if (context_.size() > kTokenTextContext) context_.erase(context_.begin());
  }
}

void ChoiceStream::set_finished(FinishInfo finish) {
  finish_ = std::move(finish);
  const double latency = now_s() - start_s_;
  ctx_.metrics.observe_finished(latency, finish_->reason, prompt_tokens_, completion_tokens(),
                                cached_tokens_);
  const RequestLogView log = ctx_.request_log.view();
  if (!log.enabled || options_.no_logs) return;
  request_log::json out = request_log::json::object();
  if (log.level >= 2) {  // (levels 0 and 1 log no outputs)
    // The generated text as detokenized (before stop trimming and the output parsers).
    if (!ctx_.info.skip_tokenizer_init) out["text"] = detok_.emitted();
    out["output_ids"] = total_.token_ids;
  }
  ctx_.request_log.write(
      request_log::finished_line(log,
                                 {std::to_string(rid()), prompt_tokens_, completion_tokens(),
                                  cached_tokens_, finish_->reason, latency},
                                 out));
}

}  // namespace sgl::server
