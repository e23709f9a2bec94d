// TimedRequest: one benchmark request's ResponseHandler; turns response arrival times into
// TTFT, inter-token latencies and end-to-end latency, and decides success.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bench_serving/api_protocol.h"
#include "bench_serving/async_http_client.h"
#include "bench_serving/dataset.h"
#include "bench_serving/request_output.h"
#include "bench_serving/sse_parser.h"

namespace sgl::bench_serving {

class TimedRequest final : public ResponseHandler {
 public:
  // `on_done` runs once, from on_finish, after output() is final.
  TimedRequest(ApiKind api, bool stream, const DatasetRow& row,
               std::function<void(TimedRequest&)> on_done);

  // Call just before the request is started; `origin` is the benchmark's start.
  void begin(Clock::time_point origin, Clock::time_point now);

  void on_status(int status, Clock::time_point now) override;
  void on_body(std::string_view bytes, Clock::time_point now) override;
  void on_finish(const Status& transport, Clock::time_point now) override;

  const RequestOutput& output() const { return out_; }

 private:
  void apply(const ResponseUpdate& u, Clock::time_point now);
  void fail(std::string message);
  double seconds_since_start(Clock::time_point t) const;

  ApiKind api_;
  bool stream_;
  int64_t expected_prompt_len_;
  std::function<void(TimedRequest&)> on_done_;
  ResponseDecoder decoder_;
  SseParser sse_;
  std::vector<std::string> events_;

  Clock::time_point sent_{};
  Clock::time_point last_chunk_{};
  int http_status_ = 0;
  std::string body_;  // whole body (not streaming) or the start of an error body
  bool saw_done_ = false;
  bool saw_text_ = false;
  int64_t text_chunks_ = 0;
  std::optional<int64_t> prompt_tokens_;
  std::optional<int64_t> completion_tokens_;
  int64_t tokens_since_text_ = 0;  // /generate tokens since the last chunk with text
  RequestOutput out_;
};

}  // namespace sgl::bench_serving
