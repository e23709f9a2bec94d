// Status helpers and the abort paths of Result<T>.
#include "core/status.h"

#include <cstdio>
#include <cstdlib>

namespace sgl {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kOutOfRange:
      return "OutOfRange";
    case StatusCode::kDataLoss:
      return "DataLoss";
    case StatusCode::kUnimplemented:
      return "Unimplemented";
    case StatusCode::kResourceExhausted:
      return "ResourceExhausted";
    case StatusCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

std::string Status::to_string() const {
  if (ok()) return "OK";
  return std::string(status_code_name(code_)) + ": " + message_;
}

Status Status::with_context(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
Status out_of_range(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
Status data_loss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
Status unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
Status resource_exhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
Status internal_error(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

namespace detail {
void result_access_failure(const Status& status) {
  std::fprintf(stderr, "FATAL: value() of an error Result: %s\n", status.to_string().c_str());
  std::abort();
}
void result_from_ok_status() {
  std::fprintf(stderr, "FATAL: Result constructed from an OK Status without a value\n");
  std::abort();
}
}  // namespace detail

}  // namespace sgl
