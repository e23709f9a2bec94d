// Status and Result<T>: recoverable errors at boundaries (config, weights, tokenizer, requests).
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace sgl {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kOutOfRange,
  kDataLoss,       // corrupt or truncated file contents
  kUnimplemented,  // valid input we do not support (unknown architecture, dtype)
  kResourceExhausted,
  kInternal,
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "NotFound: <message>"; "OK" for success.
  std::string to_string() const;

  // Returns a copy whose message is prefixed with `context + ": "`.
  Status with_context(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

Status invalid_argument(std::string message);
Status not_found(std::string message);
Status out_of_range(std::string message);
Status data_loss(std::string message);
Status unimplemented(std::string message);
Status resource_exhausted(std::string message);
Status internal_error(std::string message);

// A value or an error Status. Accessing value() of an error aborts (it is a bug).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : storage_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : storage_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    check_not_ok();
  }

  bool ok() const { return std::holds_alternative<T>(storage_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(storage_);
  }
  T& value() & {
    check_ok();
    return std::get<T>(storage_);
  }
  const T& value() const& {
    check_ok();
    return std::get<T>(storage_);
  }
  T&& value() && {
    check_ok();
    return std::get<T>(std::move(storage_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  void check_ok() const;
  void check_not_ok() const;
  std::variant<T, Status> storage_;
};

namespace detail {
[[noreturn]] void result_access_failure(const Status& status);
[[noreturn]] void result_from_ok_status();
}  // namespace detail

template <typename T>
void Result<T>::check_ok() const {
  if (!ok()) detail::result_access_failure(std::get<Status>(storage_));
}

template <typename T>
void Result<T>::check_not_ok() const {
  if (std::get<Status>(storage_).ok()) detail::result_from_ok_status();
}

}  // namespace sgl

#define SGL_CONCAT_INNER_(a, b) a##b
#define SGL_CONCAT_(a, b) SGL_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function if `expr` is not ok.
#define SGL_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::sgl::Status sgl_status_ = (expr);        \
    if (!sgl_status_.ok()) return sgl_status_; \
  } while (false)

// `lhs = value of expr`, or returns its error Status.
#define SGL_ASSIGN_OR_RETURN(lhs, expr) \
  SGL_ASSIGN_OR_RETURN_IMPL_(SGL_CONCAT_(sgl_result_, __LINE__), lhs, expr)
#define SGL_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
