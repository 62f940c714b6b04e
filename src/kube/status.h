// Kubernetes' error answers (metav1.Status) turned into eslease's typed Errors.
// Pure functions over bytes: they are fuzz targets and never throw.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "http/transport.h"

namespace eslease::kube {

struct StatusCause {
  std::string reason;  // e.g. FieldValueRequired
  std::string message;
  std::string field;  // e.g. spec.lockName
};

struct ApiStatus {
  std::string status;  // "Success" or "Failure"
  std::string message;
  std::string reason;  // NotFound, AlreadyExists, Conflict, Expired, Invalid, ...
  int code = 0;
  std::string details_name;
  std::string details_kind;
  std::vector<StatusCause> causes;
  std::optional<int> retry_after_seconds;
};

// The Status in `body`, or nullopt when the body is not a JSON object of kind Status.
std::optional<ApiStatus> parse_status(std::string_view body);
// Same for an already-parsed object (a watch ERROR event's object).
std::optional<ApiStatus> status_from_json(const nlohmann::json& object);

// The typed Error for a Status (code from Status.code, falling back to http_status).
Error error_from_status(const ApiStatus& status, int http_status);
// The typed Error for a non-2xx answer: uses the Status body when there is one, else the
// status code and a bounded, sanitized excerpt of the body. Retry-After (seconds) is read
// from the header, falling back to details.retryAfterSeconds.
Error error_from_response(const http::Response& response);

}  // namespace eslease::kube
