// distrt::Status and StatusOr: how every distrt function reports failure.
// No exceptions: a function that can fail returns Status (or StatusOr<T>).
// Both are [[nodiscard]]: a caller handles the status, or casts it to void
// with a comment saying why ignoring it is right.
#ifndef DISTRT_STATUS_H_
#define DISTRT_STATUS_H_

#include <memory>
#include <sstream>
#include <string>
#include <utility>

namespace distrt {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // bad input from the caller or in a program file
  kNotFound,            // a file or name that does not exist
  kDataLoss,            // truncated or corrupt file
  kFailedPrecondition,  // e.g. format version mismatch
  kOutOfRange,          // an index or byte range outside its bounds
  kUnimplemented,       // a kernel / dtype combination not supported
  kResourceExhausted,   // allocation failed
  kDeadlineExceeded,    // a collective timed out
  kAborted,             // another rank failed; this one stopped because of it
  kInternal,            // a bug in distrt
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);

  static Status Ok() { return Status(); }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  const std::string& message() const;
  // "INVALID_ARGUMENT: message", or "OK".
  std::string ToString() const;

  // A copy whose message is `prefix + ": " + message()` (same code). OK stays OK.
  Status WithContext(const std::string& prefix) const;

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const Rep> rep_;  // null when OK; cheap to copy
};

inline Status OkStatus() { return Status(); }

namespace internal {
inline void StrAppend(std::ostringstream&) {}
template <typename T, typename... Rest>
void StrAppend(std::ostringstream& os, const T& v, const Rest&... rest) {
  os << v;
  StrAppend(os, rest...);
}
}  // namespace internal

// StrCat("a", 1, "b") -> "a1b" (anything with operator<<).
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream os;
  internal::StrAppend(os, args...);
  return os.str();
}

#define DISTRT_DEFINE_ERROR_FN(Name, Code)            \
  template <typename... Args>                         \
  Status Name(const Args&... args) {                  \
    return Status(StatusCode::Code, StrCat(args...)); \
  }
DISTRT_DEFINE_ERROR_FN(InvalidArgumentError, kInvalidArgument)
DISTRT_DEFINE_ERROR_FN(NotFoundError, kNotFound)
DISTRT_DEFINE_ERROR_FN(DataLossError, kDataLoss)
DISTRT_DEFINE_ERROR_FN(FailedPreconditionError, kFailedPrecondition)
DISTRT_DEFINE_ERROR_FN(OutOfRangeError, kOutOfRange)
DISTRT_DEFINE_ERROR_FN(UnimplementedError, kUnimplemented)
DISTRT_DEFINE_ERROR_FN(ResourceExhaustedError, kResourceExhausted)
DISTRT_DEFINE_ERROR_FN(DeadlineExceededError, kDeadlineExceeded)
DISTRT_DEFINE_ERROR_FN(AbortedError, kAborted)
DISTRT_DEFINE_ERROR_FN(InternalError, kInternal)
#undef DISTRT_DEFINE_ERROR_FN

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // Initialised, not assigned: nvcc takes `status_ = ...` for a discarded Status.
  StatusOr(const Status& status)  // NOLINT: implicit
      : status_(status.ok() ? InternalError("StatusOr built from an OK status without a value")
                            : status) {}
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // Only valid when ok().
  T& value() & { return value_; }
  const T& value() const& { return value_; }
  T&& value() && { return std::move(value_); }
  T* operator->() { return &value_; }
  const T* operator->() const { return &value_; }
  T& operator*() { return value_; }
  const T& operator*() const { return value_; }

 private:
  Status status_;
  T value_{};
};

}  // namespace distrt

#define DISTRT_STATUS_CONCAT_INNER_(a, b) a##b
#define DISTRT_STATUS_CONCAT_(a, b) DISTRT_STATUS_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function if `expr` is not OK.
#define DISTRT_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::distrt::Status distrt_status_ = (expr);        \
    if (!distrt_status_.ok()) return distrt_status_; \
  } while (0)

// DISTRT_ASSIGN_OR_RETURN(auto x, FnReturningStatusOr());
#define DISTRT_ASSIGN_OR_RETURN(lhs, expr) \
  DISTRT_ASSIGN_OR_RETURN_IMPL_(DISTRT_STATUS_CONCAT_(distrt_statusor_, __LINE__), lhs, expr)
#define DISTRT_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()

#endif  // DISTRT_STATUS_H_
