// spdlog-backed sink for SGL_LOG_*; logs go to stderr so stdout stays machine-readable.
#include "core/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <string>

#include "core/ascii.h"

namespace sgl {
namespace {

spdlog::logger& logger() {
  // NOTE: a function-local static is the logging sink, not scheduling state; it is thread-safe
  // and shared by every engine in the process like stderr itself.
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto l = spdlog::stderr_color_mt("sgl");
    l->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
    l->set_level(spdlog::level::trace);
    return l;
  }();
  return *instance;
}

std::atomic<int>& min_level() {
  static std::atomic<int> level{static_cast<int>(LogLevel::kInfo)};
  return level;
}

}  // namespace

Result<LogLevel> parse_log_level(std::string_view given) {
  const std::string level = ascii_lower(given);  // any case, as SGLang (Python's are upper)
  if (level == "debug") return LogLevel::kDebug;
  if (level == "info") return LogLevel::kInfo;
  if (level == "warn" || level == "warning") return LogLevel::kWarn;
  if (level == "error" || level == "critical") return LogLevel::kError;
  return invalid_argument("a log level is debug, info, warning, error or critical, got '" + level +
                          "'");
}

void set_log_level(LogLevel level) { min_level().store(static_cast<int>(level)); }

bool log_enabled(LogLevel level) { return static_cast<int>(level) >= min_level().load(); }

void log_message(LogLevel level, std::string_view message) {
  switch (level) {
    case LogLevel::kDebug:
      logger().debug("{}", message);
      break;
    case LogLevel::kInfo:
      logger().info("{}", message);
      break;
    case LogLevel::kWarn:
      logger().warn("{}", message);
      break;
    case LogLevel::kError:
      logger().error("{}", message);
      break;
  }
}

}  // namespace sgl
