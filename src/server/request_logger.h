// RequestLogger: SGLang's --log-requests. A line when a request reaches the engine and when it
// finishes (and, at level >= 2, the body of an OpenAI-style API request as it arrives), with the
// detail of --log-requests-level (SGLang's 0-3, default 2), as text or one JSON object a line
// (--log-requests-format), to the server log or to --log-requests-target's stdout and
// directories. /configure_logging changes the switch, level and format while the server runs.
// The lines themselves are built in request_log_json.h. Thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace sgl::server {

enum class RequestLogFormat : uint8_t { kText, kJson };

// Detail levels (SGLang's --log-requests-level): 0 metadata, 1 and the sampling parameters,
// 2 and the inputs / outputs cut to kRequestLogMaxLength characters (or list entries), 3 all.
inline constexpr int kRequestLogMaxLevel = 3;
inline constexpr int kRequestLogDefaultLevel = 2;
inline constexpr size_t kRequestLogMaxLength = 2048;

struct RequestLogSettings {
  bool enabled = false;  // --log-requests
  int level = kRequestLogDefaultLevel;
  RequestLogFormat format = RequestLogFormat::kText;
  // "stdout" or directories (each gets <hostname>_0.log, appended); empty: the server log.
  std::vector<std::string> targets;
};

// "text" or "json" (kInvalidArgument otherwise, naming `what`).
Result<RequestLogFormat> parse_request_log_format(std::string_view name, std::string_view what);
// 0..kRequestLogMaxLevel (kInvalidArgument otherwise, naming `what`).
Status check_request_log_level(int64_t level, std::string_view what);
// Creates each directory target and checks that its log file opens for appending, so that a
// bad target stops the start instead of losing lines later.
Status prepare_request_log_targets(const std::vector<std::string>& targets);

// What a log line is made with: a consistent snapshot of the switch, level and format.
struct RequestLogView {
  bool enabled = false;
  int level = kRequestLogDefaultLevel;
  RequestLogFormat format = RequestLogFormat::kText;
};

class RequestLogger {
 public:
  // Opens the targets' files (prepare_request_log_targets checked them; one that fails now is
  // logged and left out).
  explicit RequestLogger(const RequestLogSettings& settings);
  ~RequestLogger();
  RequestLogger(const RequestLogger&) = delete;
  RequestLogger& operator=(const RequestLogger&) = delete;

  RequestLogView view() const;
  // /configure_logging: each given setting, all checked before any changes.
  Status configure(std::optional<bool> enabled, std::optional<int64_t> level,
                   std::optional<std::string_view> format);
  // One line to every target: the server log (an info line whatever --log-level says, as
  // SGLang's request logger has a level of its own), or stdout and the files with a
  // "[YYYY-MM-DD HH:MM:SS] " prefix (SGLang's).
  void write(std::string_view line) const;

 private:
  mutable std::mutex mu_;
  RequestLogView view_;
  bool to_stdout_ = false;
  bool to_server_log_ = true;
  std::vector<std::FILE*> files_;
};

}  // namespace sgl::server
