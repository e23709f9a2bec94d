// SessionStore: SGLang's (non-streaming) sessions. /open_session opens one; a /generate request
// with session_params joins it as a node of its tree of requests. A request that names an earlier
// one (session_params.rid) runs on that request's prompt and output (its prompt alone with
// drop_previous_output; cut at `offset`, Python's slice end), then its own prompt without a
// leading BOS; `replace` first drops the requests that continued the named one (aborting those
// still running), or with no rid every request of the session, and a named request still running
// is aborted and continued from the output it has so far (SGLang's). The engine sees ordinary
// requests: the radix cache serves the shared history. A session with a timeout closes after
// that long without a request. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "server/openai_types.h"

namespace sgl::server {

class SessionStore {
 public:
  using Clock = std::chrono::steady_clock;

  // Opens session `id` (not empty); kInvalidArgument when it is open.
  Status open(const std::string& id, std::optional<double> timeout_s);
  // Closes `id` (nothing when it is not open, as SGLang); its requests still running go on.
  void close(const std::string& id);

  struct Turn {
    std::vector<int32_t> input_ids;     // what the request runs on
    std::vector<std::string> to_abort;  // running requests `replace` dropped or continues
  };
  // Request `rid` of session p.id with prompt `prompt_ids` (`bos`: the tokenizer's BOS, stripped
  // from a continuing prompt): its input, and its node in the session, unfinished until finish().
  // kInvalidArgument (SGLang's 400s) for an unknown session or rid, appending to a rid still
  // running, an rid the session already has, or no tokens at all.
  Result<Turn> begin(const SessionParams& p, const std::string& rid,
                     std::vector<int32_t> prompt_ids, std::optional<int32_t> bos);
  // Request `rid` of session `id`, still running, produced `new_ids` after what it had: the
  // output a `replace` of it continues (nothing if either is gone).
  void append_output(const std::string& id, const std::string& rid,
                     std::span<const int32_t> new_ids);
  // Request `rid` of session `id` ended with `output_ids` (nothing if either is gone).
  void finish(const std::string& id, const std::string& rid, std::span<const int32_t> output_ids);
  // Request `rid` of session `id` never ran (refused after begin()): its node goes.
  void abandon(const std::string& id, const std::string& rid);

  size_t size() const;
  // For tests: now, as the timeouts see it.
  void set_clock_for_testing(std::function<Clock::time_point()> now) { now_ = std::move(now); }

 private:
  struct Node {
    std::string parent;  // empty: a root
    std::vector<std::string> children;
    std::vector<int32_t> input_ids;
    std::vector<int32_t> output_ids;
    bool finished = false;
  };
  struct Session {
    std::optional<double> timeout_s;
    Clock::time_point last_active;
    std::map<std::string, Node> nodes;
  };
  // Closes the sessions idle past their timeout.
  void reap_locked(Clock::time_point now);
  // Removes `rid`'s descendants (collecting those unfinished into `to_abort`).
  static void drop_children(Session& s, const std::string& rid, std::vector<std::string>& to_abort);

  mutable std::mutex mutex_;
  std::map<std::string, Session> sessions_;
  std::function<Clock::time_point()> now_ = [] { return Clock::now(); };
};

}  // namespace sgl::server
