#include "common/result.h"

namespace eslease {

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "InvalidArgument";
    case ErrorCode::kNotFound:
      return "NotFound";
    case ErrorCode::kConflict:
      return "Conflict";
    case ErrorCode::kAlreadyExists:
      return "AlreadyExists";
    case ErrorCode::kGone:
      return "Gone";
    case ErrorCode::kInvalid:
      return "Invalid";
    case ErrorCode::kUnauthorized:
      return "Unauthorized";
    case ErrorCode::kForbidden:
      return "Forbidden";
    case ErrorCode::kTooManyRequests:
      return "TooManyRequests";
    case ErrorCode::kUnavailable:
      return "Unavailable";
    case ErrorCode::kTimeout:
      return "Timeout";
    case ErrorCode::kProtocol:
      return "Protocol";
    case ErrorCode::kCancelled:
      return "Cancelled";
    case ErrorCode::kBusy:
      return "Busy";
    case ErrorCode::kLost:
      return "Lost";
    case ErrorCode::kUnsettled:
      return "Unsettled";
    case ErrorCode::kGrantsPaused:
      return "GrantsPaused";
    case ErrorCode::kTokensExhausted:
      return "TokensExhausted";
    case ErrorCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

bool Error::unavailable() const {
  switch (code) {
    case ErrorCode::kUnavailable:
    case ErrorCode::kTooManyRequests:
    case ErrorCode::kTimeout:
      return true;
    default:
      return false;
  }
}

std::string Error::describe() const {
  std::string out = to_string(code);
  if (http_status != 0) out += " (HTTP " + std::to_string(http_status) + ")";
  out += ": " + message;
  for (const auto& d : details) out += "; " + d;
  return out;
}

ErrorCode error_code_for_http_status(int status) {
  switch (status) {
    case 400:
      return ErrorCode::kInvalidArgument;
    case 401:
      return ErrorCode::kUnauthorized;
    case 403:
      return ErrorCode::kForbidden;
    case 404:
      return ErrorCode::kNotFound;
    case 409:
      return ErrorCode::kConflict;
    case 410:
      return ErrorCode::kGone;
    case 422:
      return ErrorCode::kInvalid;
    case 429:
      return ErrorCode::kTooManyRequests;
    default:
      break;
  }
  if (status >= 500 && status <= 599) return ErrorCode::kUnavailable;
  return ErrorCode::kProtocol;
}

Error make_error(ErrorCode code, std::string message, int http_status) {
  Error e;
  e.code = code;
  e.message = std::move(message);
  e.http_status = http_status;
  return e;
}

}  // namespace eslease
