// Timing one streamed (or whole) response, with SGLang bench_serving's definitions.
#include "bench_serving/timed_request.h"

#include <algorithm>

namespace sgl::bench_serving {
namespace {

// How much of an error body is kept for the report.
constexpr size_t kMaxErrorBodyBytes = 300;

}  // namespace

TimedRequest::TimedRequest(ApiKind api, bool stream, const DatasetRow& row,
                           std::function<void(TimedRequest&)> on_done)
    : api_(api),
      stream_(stream),
      expected_prompt_len_(row.prompt_len),
      on_done_(std::move(on_done)),
      decoder_(api) {}

void TimedRequest::begin(Clock::time_point origin, Clock::time_point now) {
  sent_ = now;
  last_chunk_ = now;
  out_.start_s = std::chrono::duration<double>(now - origin).count();
}

double TimedRequest::seconds_since_start(Clock::time_point t) const {
  return std::chrono::duration<double>(t - sent_).count();
}

void TimedRequest::fail(std::string message) {
  if (out_.error.empty()) out_.error = std::move(message);
}

void TimedRequest::on_status(int status, Clock::time_point) { http_status_ = status; }

void TimedRequest::on_body(std::string_view bytes, Clock::time_point now) {
  if (http_status_ != 200) {
    body_.append(bytes.substr(0, kMaxErrorBodyBytes - std::min(kMaxErrorBodyBytes, body_.size())));
    return;
  }
  if (!stream_) {
    body_.append(bytes);
    return;
  }
  events_.clear();
  sse_.feed(bytes, events_);
  for (const std::string& event : events_) {
    auto update = decoder_.on_event(event);
    if (!update.ok()) {
      fail(update.status().message());
      continue;
    }
    apply(*update, now);
  }
}

void TimedRequest::apply(const ResponseUpdate& u, Clock::time_point now) {
  if (u.done) saw_done_ = true;
  if (u.error) fail("error in the response: " + *u.error);
  if (u.finish_reason == "abort") fail("the server aborted the request");
  if (u.prompt_tokens) prompt_tokens_ = u.prompt_tokens;
  if (u.completion_tokens) completion_tokens_ = u.completion_tokens;
  tokens_since_text_ += u.new_tokens;
  if (u.new_text.empty()) return;
  out_.generated_text += u.new_text;
  ++text_chunks_;
  if (!saw_text_) {
    saw_text_ = true;
    out_.ttft_s = seconds_since_start(now);
  } else {
    // /generate reports how many tokens arrived since the last chunk with text (chunks whose
    // tokens end inside a UTF-8 character carry none): the gap is spread over all of them, as
    // SGLang's bench_serving does with completion_tokens; an OpenAI chunk counts as one token.
    const int64_t tokens = api_ == ApiKind::kGenerate ? tokens_since_text_ : 1;
    if (tokens == 0) return;
    const double gap = std::chrono::duration<double>(now - last_chunk_).count();
    out_.itl_s.insert(out_.itl_s.end(), static_cast<size_t>(tokens),
                      gap / static_cast<double>(tokens));
  }
  tokens_since_text_ = 0;
  last_chunk_ = now;
}

void TimedRequest::on_finish(const Status& transport, Clock::time_point now) {
  out_.latency_s = seconds_since_start(now);
  if (!transport.ok()) {
    fail(transport.message());
  } else if (http_status_ != 200) {
    fail("HTTP " + std::to_string(http_status_) + ": " + body_);
  } else if (stream_) {
    if (!saw_done_) fail("the stream ended before [DONE]");
  } else {
    auto update = decoder_.on_body(body_);
    if (update.ok()) {
      apply(*update, now);
      out_.ttft_s = out_.latency_s;  // not streaming: the first token comes with the last
    } else {
      fail(update.status().message());
    }
  }
  out_.success = out_.error.empty();
  out_.prompt_len = prompt_tokens_.value_or(expected_prompt_len_);
  out_.output_len = completion_tokens_.value_or(text_chunks_);
  body_.clear();
  on_done_(*this);
}

}  // namespace sgl::bench_serving
