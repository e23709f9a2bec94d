// ChoiceStream: one engine request seen as API text — incremental detokenization with the
// prompt as context, stop strings and stop regexes (a match aborts the engine request and
// finishes with "stop"), the trimming of what matched (SGLang's, unless no_stop_trim), logprob
// token texts, usage, and its latency metrics.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/request_stream.h"
#include "function_call/output_parser.h"
#include "server/server_context.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/stop_regex_matcher.h"

namespace sgl::server {

struct ChoiceOptions {
  std::vector<std::string> stop;
  // Python `re` patterns, already checked to compile; the text ends where the match ends, and a
  // stop string that matches in the same piece wins.
  std::vector<std::string> stop_regex;
  // Keep what ended the choice in its text: the stop string, or the text of the stop / EOS token
  // (which is otherwise dropped, as SGLang drops it; its id and logprob stay listed).
  bool no_stop_trim = false;
  bool skip_special_tokens = true;
  bool token_texts = false;  // fill ChoiceDelta's token texts (logprob listings)
  // With token_texts: the ids whose texts ChoiceDelta::token_ids_texts lists (token_ids_logprob).
  std::vector<int32_t> token_ids_logprob = {};
  // Tool calls and reasoning parsed out of the text (no parser names: the text is all content).
  function_call::OutputParserOptions parser;
  // With a reasoning parser: the choice ends ("length") once its reasoning has taken this many
  // tokens without ending (Anthropic's thinking.budget_tokens). Checked as the engine's events
  // arrive, so a step that carries several tokens may pass it by the rest of that step.
  std::optional<int64_t> max_reasoning_tokens = {};
  // parallel_tool_calls false: only the first parsed call is returned (the later ones are
  // dropped, as vLLM does where no grammar holds the model to one call).
  bool single_tool_call = false;
  // SGLang's no_logs: the request is kept out of --log-requests' lines (its metrics still count).
  bool no_logs = false;
};

// How a choice ended, in API terms.
struct FinishInfo {
  std::string reason;                         // "stop", "length", "abort" or "tool_calls"
  std::optional<int32_t> matched_token;       // the EOS / stop token that ended it
  std::optional<std::string> matched_string;  // the stop string that ended it
  std::string message;                        // why, for "abort"
  // "abort": the HTTP status of one the server decided (a timeout, a full queue, shutdown),
  // which the reply answers as an error, as SGLang does; 0 for the client's own abort.
  int status = 0;
  bool error() const { return reason == "abort" && status >= 400; }
};

// More of one tool call: the first delta of a call carries its id and name.
struct ToolCallDelta {
  int32_t index = 0;      // the call's position in the choice (0, 1, ...)
  std::string id;         // "call_<random>"; only on the call's first delta
  std::string name;       // only on the call's first delta
  std::string arguments;  // more of the arguments' JSON text
};

// What became final since the previous pull (or, in ChoiceStream::total(), so far).
struct ChoiceDelta {
  std::string text;                       // content (without tool-call markup and reasoning)
  std::string reasoning;                  // reasoning_content (a reasoning parser)
  std::vector<ToolCallDelta> tool_calls;  // in total(): one whole entry per call
  std::vector<int32_t> token_ids;
  std::vector<float> logprobs;                                    // when asked for
  std::vector<std::vector<sampling::TokenLogprob>> top_logprobs;  // when asked for
  std::vector<std::string> token_texts;                           // ChoiceOptions::token_texts
  std::vector<std::vector<std::string>> top_token_texts;
  // Per token, the logprobs of the requested ids (token_ids_logprob), when asked for; with
  // ChoiceOptions::token_texts, their texts at that position.
  std::vector<std::vector<float>> token_ids_logprobs = {};
  std::vector<std::vector<std::string>> token_ids_texts = {};
  // The prompt logprobs, in the delta they arrived with (and in total()), when asked for.
  std::optional<sampling::PromptLogprobs> prompt_logprobs;
  // return_hidden_states: the hidden states of the positions computed since the previous delta
  // (in total(): from position 0), f32 [rows, hidden] row-major: the prompt's, then one per
  // output token fed back.
  std::vector<float> hidden_states = {};
  // return_routed_experts: the expert ids of the same positions, i32 [rows, MoE layers, top_k].
  std::vector<int32_t> routed_experts = {};
  bool finished = false;
};

// Merges `d` into `to` (what several deltas say together): a tool call's argument pieces join
// that call's entry in `to`, or become an entry of their own (no id) when the call began before
// the deltas `to` holds.
void append_delta(ChoiceDelta& to, const ChoiceDelta& d);

class ChoiceStream {
 public:
  ChoiceStream(ServerContext& ctx, std::shared_ptr<engine::RequestStream> stream,
               const std::vector<int32_t>& prompt_ids, ChoiceOptions options);
  ~ChoiceStream();  // aborts the engine request if it has not finished
  ChoiceStream(const ChoiceStream&) = delete;
  ChoiceStream& operator=(const ChoiceStream&) = delete;

  uint64_t rid() const { return stream_->rid(); }
  void set_notify(std::function<void()> notify) { stream_->set_notify(std::move(notify)); }

  // Non-blocking: what the engine produced since the last call; nullopt when nothing is new
  // or the choice already finished.
  std::optional<ChoiceDelta> pull();
  // Aborts the engine request; the choice finishes with "abort", `message` and `status` (a
  // client that went away: the defaults; a sibling choice the server aborted: its own).
  void abort(const std::string& message = "aborted by the client", int status = 0);

  bool finished() const { return finish_.has_value(); }
  const FinishInfo& finish() const { return *finish_; }
  const ChoiceDelta& total() const { return total_; }
  int32_t prompt_tokens() const { return prompt_tokens_; }
  int32_t completion_tokens() const { return static_cast<int32_t>(total_.token_ids.size()); }
  int32_t cached_tokens() const { return cached_tokens_; }
  int32_t retractions() const { return retractions_; }
  // Its speculative decoding so far (verify_ct 0: none).
  const scheduler::SpecDecodeStats& spec() const { return spec_; }
  // The output tokens that carried reasoning text (OpenAI's reasoning_tokens), counted per engine
  // event: the event that ends the reasoning counts as answer, tokens that showed nothing yet
  // count with what they turn out to carry.
  int32_t reasoning_tokens() const { return reasoning_tokens_; }
  // Steady-clock seconds since its epoch: when the first output token arrived and the latest one
  // (0 until then).
  double first_token_s() const { return first_token_s_; }
  double last_token_s() const { return last_token_s_; }

 private:
  // One event (or a slice of one) through detokenizer, stops, parser and finish.
  ChoiceDelta process(engine::StreamEvent event);
  void add_token_texts(ChoiceDelta& delta);
  // The ids whose text the choice shows: `ids` without the stop / EOS token that ended it
  // (unless no_stop_trim).
  std::vector<int32_t> text_ids(const engine::StreamEvent& event,
                                const std::vector<int32_t>& ids) const;
  void set_finished(FinishInfo finish);
  // Runs the output parser over `d.text` (its content stays in d.text).
  void parse_output(ChoiceDelta& d, bool finished);
  // Adds `d`'s tokens to the reasoning count while the reasoning has not ended.
  void count_reasoning(const ChoiceDelta& d);
  // Whether the reasoning ran past ChoiceOptions::max_reasoning_tokens.
  bool over_reasoning_budget() const;

  ServerContext& ctx_;
  std::shared_ptr<engine::RequestStream> stream_;
  ChoiceOptions options_;
  tokenizer::IncrementalDetokenizer detok_;
  tokenizer::StopStringMatcher stops_;
  tokenizer::StopRegexMatcher stop_regex_;
  std::unique_ptr<function_call::StreamParser> parser_;  // null: no parsing
  function_call::EventSink parsed_;
  std::vector<int32_t> context_;  // prompt tail + outputs, for token texts
  ChoiceDelta total_;
  // Bytes of the generated text passed on to the parser so far (total_.text is what the parser
  // made of them: the content, without reasoning or calls).
  size_t raw_emitted_ = 0;
  std::optional<FinishInfo> finish_;
  bool engine_done_ = false;  // the engine sent its final event (or we aborted it)
  int32_t prompt_tokens_ = 0;
  int32_t cached_tokens_ = 0;
  int32_t retractions_ = 0;
  scheduler::SpecDecodeStats spec_;
  int32_t reasoning_tokens_ = 0;
  int32_t undecided_tokens_ = 0;  // tokens since the last reasoning text, reasoning not ended
  bool reasoning_ended_ = false;  // content or a tool call came
  double start_s_ = 0;
  double first_token_s_ = 0;
  double last_token_s_ = 0;
};

}  // namespace sgl::server
