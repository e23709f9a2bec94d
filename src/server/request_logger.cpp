// RequestLogger: settings, targets and the writing of lines.
#include "server/request_logger.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "core/ascii.h"
#include "core/logging.h"

namespace sgl::server {
namespace {

constexpr std::string_view kStdout = "stdout";

bool is_stdout(std::string_view target) { return ascii_lowers_to(target, kStdout); }

// <dir>/<hostname>_0.log: SGLang's name (its rank is the process's; one process serves here).
std::filesystem::path log_file(const std::string& dir) {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "localhost");
  return std::filesystem::path(dir) / (std::string(host) + "_0.log");
}

// "[YYYY-MM-DD HH:MM:SS] ", local time (SGLang's formatter).
std::string line_prefix() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof(text), "[%Y-%m-%d %H:%M:%S] ", &local);
  return text;
}

}  // namespace

Result<RequestLogFormat> parse_request_log_format(std::string_view name, std::string_view what) {
  if (name == "text") return RequestLogFormat::kText;
  if (name == "json") return RequestLogFormat::kJson;
  return invalid_argument(std::string(what) + " must be \"text\" or \"json\", not \"" +
                          std::string(name) + "\"");
}

Status check_request_log_level(int64_t level, std::string_view what) {
  if (level < 0 || level > kRequestLogMaxLevel) {
    return invalid_argument(std::string(what) + " must be 0, 1, 2 or 3, not " +
                            std::to_string(level));
  }
  return Status::ok_status();
}

Status prepare_request_log_targets(const std::vector<std::string>& targets) {
  for (const std::string& target : targets) {
    if (is_stdout(target)) continue;
    std::error_code ec;
    std::filesystem::create_directories(target, ec);
    if (ec) {
      return invalid_argument("--log-requests-target '" + target +
                              "': cannot create the directory: " + ec.message());
    }
    const std::filesystem::path file = log_file(target);
    std::FILE* f = std::fopen(file.c_str(), "a");
    if (f == nullptr) {
      return invalid_argument("--log-requests-target '" + target + "': cannot open " +
                              file.string() + ": " + std::strerror(errno));
    }
    std::fclose(f);
  }
  return Status::ok_status();
}

RequestLogger::RequestLogger(const RequestLogSettings& settings)
    : view_{settings.enabled, settings.level, settings.format},
      to_server_log_(settings.targets.empty()) {
  for (const std::string& target : settings.targets) {
    if (is_stdout(target)) {
      to_stdout_ = true;
      continue;
    }
    const std::filesystem::path file = log_file(target);
    std::FILE* f = std::fopen(file.c_str(), "a");
    if (f == nullptr) {
      SGL_LOG_ERROR << "request log: cannot open " << file.string() << ": " << std::strerror(errno)
                    << "; its lines are not written";
      continue;
    }
    files_.push_back(f);
  }
}

RequestLogger::~RequestLogger() {
  for (std::FILE* f : files_) std::fclose(f);
}

RequestLogView RequestLogger::view() const {
  std::lock_guard lock(mu_);
  return view_;
}

Status RequestLogger::configure(std::optional<bool> enabled, std::optional<int64_t> level,
                                std::optional<std::string_view> format) {
  if (level) SGL_RETURN_IF_ERROR(check_request_log_level(*level, "'log_requests_level'"));
  std::optional<RequestLogFormat> parsed_format;
  if (format) {
    SGL_ASSIGN_OR_RETURN(parsed_format, parse_request_log_format(*format, "'log_requests_format'"));
  }
  std::lock_guard lock(mu_);
  if (enabled) view_.enabled = *enabled;
  if (level) view_.level = static_cast<int>(*level);
  if (parsed_format) view_.format = *parsed_format;
  return Status::ok_status();
}

void RequestLogger::write(std::string_view line) const {
  // At info level whatever --log-level says (SGLang's request logger has a level of its own).
  if (to_server_log_) log_message(LogLevel::kInfo, line);
  if (!to_stdout_ && files_.empty()) return;
  std::string stamped = line_prefix();
  stamped.append(line);
  stamped.push_back('\n');
  std::lock_guard lock(mu_);  // whole lines, in one order in every target
  if (to_stdout_) {
    std::fwrite(stamped.data(), 1, stamped.size(), stdout);
    std::fflush(stdout);
  }
  for (std::FILE* f : files_) {
    std::fwrite(stamped.data(), 1, stamped.size(), f);
    std::fflush(f);
  }
}

}  // namespace sgl::server
