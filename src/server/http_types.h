// HTTP request/response values and the deferred-reply interface the HTTP server drives.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sgl::server {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // the target without its query string
  std::string query;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;

  // The first header named `name` (lower case), if any.
  std::optional<std::string_view> header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

// A 200 of plain text (an empty one: what SGLang's health and session endpoints answer).
inline HttpResponse plain_text_response(std::string body = {}) {
  HttpResponse r;
  r.content_type = "text/plain";
  r.body = std::move(body);
  return r;
}

// A reply produced over time (a generation). The HTTP server calls every method on the
// connection's strand, never concurrently.
class DeferredReply {
 public:
  virtual ~DeferredReply() = default;

  // Called once, before the first poll(). `wake` may be called from any thread (typically the
  // engine's) whenever poll() may make progress; it posts to the connection's strand.
  virtual void start(std::function<void()> wake) = 0;

  struct Progress {
    std::string data;                      // streaming: bytes of the event stream to send now
    std::optional<HttpResponse> response;  // non-streaming: the whole response, once ready
    bool done = false;                     // nothing more will come
  };
  // Non-blocking: takes what is ready. A streaming reply returns done together with its last
  // bytes, or, before it has returned any bytes, done with a response that replaces the event
  // stream (an error found while preparing); a non-streaming one returns done with its response.
  virtual Progress poll() = 0;

  // The client went away or the server stops: abort the work. Idempotent; poll() is not called
  // afterwards.
  virtual void cancel() = 0;
};

// What a handler answers: a complete response, or a deferred one. A streaming deferred reply
// is sent as `stream_content_type` (status 200, chunked) whose body comes from poll().
struct Reply {
  HttpResponse response;
  std::unique_ptr<DeferredReply> deferred;
  bool event_stream = false;
  // Server-sent events, or Ollama's newline-delimited JSON (application/x-ndjson); a string
  // literal.
  std::string_view stream_content_type = "text/event-stream";

  static Reply of(HttpResponse response) {
    Reply r;
    r.response = std::move(response);
    return r;
  }
  static Reply later(std::unique_ptr<DeferredReply> deferred, bool event_stream) {
    Reply r;
    r.deferred = std::move(deferred);
    r.event_stream = event_stream;
    return r;
  }
};

using HttpHandler = std::function<Reply(HttpRequest&)>;

}  // namespace sgl::server
