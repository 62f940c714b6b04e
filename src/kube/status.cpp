#include "kube/status.h"

#include <charconv>

#include "common/text.h"

namespace eslease::kube {
namespace {

using nlohmann::json;

std::string string_field(const json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

std::optional<int> int_field(const json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end() || !it->is_number_integer()) return std::nullopt;
  auto value = it->get<std::int64_t>();
  if (value < 0 || value > 1'000'000'000) return std::nullopt;
  return static_cast<int>(value);
}

// Keeps error messages printable and short, whatever the server sent.
std::string excerpt(std::string_view body) {
  constexpr std::size_t kMax = 200;
  std::string out;
  for (char c : body.substr(0, kMax)) {
    auto u = static_cast<unsigned char>(c);
    out.push_back(u >= 0x20 && u < 0x7f ? c : '?');
  }
  if (body.size() > kMax) out += "...";
  return out;
}

ErrorCode code_for(int http_status, const std::string& reason) {
  if (http_status == 409 && reason == "AlreadyExists") return ErrorCode::kAlreadyExists;
  if (http_status == 504) return ErrorCode::kTimeout;
  return error_code_for_http_status(http_status);
}

std::optional<int> parse_retry_after(const std::string& value) {
  std::string trimmed = trim(value);
  int seconds = 0;
  auto [end, ec] = std::from_chars(trimmed.data(), trimmed.data() + trimmed.size(), seconds);
  if (ec != std::errc() || end != trimmed.data() + trimmed.size() || seconds < 0) return std::nullopt;
  return seconds;
}

}  // namespace

std::optional<ApiStatus> status_from_json(const json& object) {
  if (!object.is_object() || string_field(object, "kind") != "Status") return std::nullopt;
  ApiStatus status;
  status.status = string_field(object, "status");
  status.message = string_field(object, "message");
  status.reason = string_field(object, "reason");
  status.code = int_field(object, "code").value_or(0);
  auto details = object.find("details");
  if (details != object.end() && details->is_object()) {
    status.details_name = string_field(*details, "name");
    status.details_kind = string_field(*details, "kind");
    status.retry_after_seconds = int_field(*details, "retryAfterSeconds");
    auto causes = details->find("causes");
    if (causes != details->end() && causes->is_array()) {
      for (const auto& cause : *causes) {
        if (!cause.is_object()) continue;
        status.causes.push_back(
            {string_field(cause, "reason"), string_field(cause, "message"), string_field(cause, "field")});
      }
    }
  }
  return status;
}

std::optional<ApiStatus> parse_status(std::string_view body) {
  json object = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return std::nullopt;
  return status_from_json(object);
}

Error error_from_status(const ApiStatus& status, int http_status) {
  int code = status.code != 0 ? status.code : http_status;
  Error error = make_error(
      code_for(code, status.reason),
      status.message.empty() ? (status.reason.empty() ? "request failed" : status.reason) : status.message,
      code);
  for (const auto& cause : status.causes) {
    std::string detail = cause.field.empty() ? cause.message : cause.field + ": " + cause.message;
    if (!cause.reason.empty()) detail += " (" + cause.reason + ")";
    error.details.push_back(std::move(detail));
  }
  if (status.retry_after_seconds) error.retry_after = std::chrono::seconds(*status.retry_after_seconds);
  return error;
}

Error error_from_response(const http::Response& response) {
  Error error;
  if (auto status = parse_status(response.body)) {
    error = error_from_status(*status, response.status);
    error.http_status = response.status;
    error.code = code_for(response.status, status->reason);
  } else {
    std::string message = "HTTP " + std::to_string(response.status);
    if (!response.body.empty()) message += ": " + excerpt(response.body);
    error = make_error(code_for(response.status, ""), std::move(message), response.status);
  }
  if (auto header = response.header("Retry-After")) {
    if (auto seconds = parse_retry_after(*header)) error.retry_after = std::chrono::seconds(*seconds);
  }
  return error;
}

}  // namespace eslease::kube
