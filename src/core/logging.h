// Logging: stream-style macros; the sink (spdlog) lives in logging.cpp so no header needs fmt.
#pragma once

#include <sstream>
#include <string_view>

#include "core/check.h"
#include "core/status.h"

namespace sgl {

enum class LogLevel { kDebug = 0, kInfo, kWarn, kError };

void log_message(LogLevel level, std::string_view message);
void set_log_level(LogLevel level);
bool log_enabled(LogLevel level);
// A level by Python's names, any case (SGLang's --log-level): debug, info, warning (warn),
// error, critical (as error); kInvalidArgument naming the choices otherwise.
Result<LogLevel> parse_log_level(std::string_view given);

namespace detail {
class LogLine {
 public:
  explicit LogLine(LogLevel level) : level_(level) {}
  ~LogLine() { log_message(level_, stream_.str()); }
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};
}  // namespace detail

}  // namespace sgl

#define SGL_LOG(level)                        \
  !::sgl::log_enabled(::sgl::LogLevel::level) \
      ? (void)0                               \
      : ::sgl::detail::Voidify() & ::sgl::detail::LogLine(::sgl::LogLevel::level).stream()
#define SGL_LOG_DEBUG SGL_LOG(kDebug)
#define SGL_LOG_INFO SGL_LOG(kInfo)
#define SGL_LOG_WARN SGL_LOG(kWarn)
#define SGL_LOG_ERROR SGL_LOG(kError)
