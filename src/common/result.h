// The one error-handling policy of eslease (see README, "Errors"):
// anything that can fail because of the outside world (network, a remote server, user
// input, files) returns Result<T>. Exceptions thrown by third-party libraries are caught
// at the seam that calls them and turned into an Error; they never cross a module
// boundary. Programming errors are assertions, not Errors. Outcomes a caller decides on are
// values, not errors: a 409 from Elasticsearch is es::WriteStatus::kConflict, a write that
// can wait and was left for later is nullopt (kube::Api::patch_unless_busy).
#pragma once

#include <cassert>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace eslease {

// What went wrong, one meaning each. The HTTP statuses say which answer a client maps to the
// code (error_code_for_http_status); eslease's own failures have codes of their own.
enum class ErrorCode {
  kInvalidArgument,  // the caller's input (a flag, a name, a request) is wrong; retrying will not help
  kNotFound,         // 404, or the thing asked for does not exist
  kConflict,         // 409: the object changed since it was read, so a conditional write lost
  kAlreadyExists,    // 409 on create: the object exists
  kGone,             // 410: the resource version is too old
  kInvalid,          // 422, or something is not valid as found (a kubeconfig, a mapping, a capacity)
  kUnauthorized,     // 401
  kForbidden,        // 403
  kTooManyRequests,  // 429, or the client-side rate limit would have the call wait too long
  kUnavailable,      // connection refused/reset, 5xx
  kTimeout,          // no answer in time: outcome unknown
  kProtocol,         // the peer answered something we cannot understand
  kCancelled,        // we were asked to stop
  kBusy,             // the lock is someone else's, and the wait for it (if any) ran out
  kLost,             // the caller's hold is gone: the lock is someone else's now
  kUnsettled,        // work is left that cannot be done yet (a reconcile ran out of steps); retry later
  kGrantsPaused,     // no grant until the next fencing token is proven larger; retry later
  kTokensExhausted,  // no fencing token epoch is left above the largest token issued
  kInternal,         // an unexpected failure inside eslease
};

const char* to_string(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  int http_status = 0;                                   // 0 when no HTTP answer
  std::optional<std::chrono::milliseconds> retry_after;  // server's Retry-After, if any
  std::vector<std::string> details;                      // e.g. 422 causes

  // The other side could not answer now: unreachable, overloaded (5xx, 429, a client-side
  // rate limit) or silent past the timeout. Retrying later, with backoff, may succeed; the
  // outcome of a write that failed this way is unknown until it is read back. Every "is the
  // backend away?" question in eslease asks this.
  bool unavailable() const;
  // "code: message" (plus http status), suitable for logs and CLI output.
  std::string describe() const;
};

Error make_error(ErrorCode code, std::string message, int http_status = 0);

// The ErrorCode an HTTP error status stands for, shared by every HTTP client: 4xx by
// meaning, 5xx kUnavailable, anything else kProtocol. Callers refine it where their
// protocol says more (Kubernetes' AlreadyExists, its 504 Timeout).
ErrorCode error_code_for_http_status(int status);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : state_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(state_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(state_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(state_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const {
    assert(!ok());
    return std::get<1>(state_);
  }

 private:
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const {
    assert(!ok());
    return *error_;
  }

 private:
  std::optional<Error> error_;
};

using Status = Result<void>;

}  // namespace eslease
