#include "emulators/kube/api_status.h"

namespace eslease::kubeemu {
namespace {

using nlohmann::json;

json details_of(const std::string& group, const std::string& kind, const std::string& name) {
  json details = json::object();
  if (!name.empty()) details["name"] = name;
  if (!group.empty()) details["group"] = group;
  if (!kind.empty()) details["kind"] = kind;
  return details;
}

std::string quoted(const std::string& s) {
  return json(s).dump();
}

}  // namespace

ApiError make_api_error(int code, std::string reason, std::string message, json details) {
  ApiError error;
  error.code = code;
  error.reason = std::move(reason);
  error.message = std::move(message);
  error.details = std::move(details);
  return error;
}

json ApiError::body() const {
  json metadata = json::object();
  if (!continue_token.empty()) metadata["continue"] = continue_token;
  json status = {{"kind", "Status"},
                 {"apiVersion", "v1"},
                 {"metadata", metadata},
                 {"status", "Failure"},
                 {"message", message}};
  if (!reason.empty()) status["reason"] = reason;
  json d = details.is_object() ? details : json::object();
  if (retry_after_seconds) d["retryAfterSeconds"] = *retry_after_seconds;
  if (!d.empty()) status["details"] = d;
  status["code"] = code;
  return status;
}

std::string qualified_resource(const std::string& group, const std::string& resource) {
  return group.empty() ? resource : resource + "." + group;
}

ApiError not_found(const std::string& group, const std::string& resource, const std::string& name) {
  return make_api_error(404, "NotFound",
                        qualified_resource(group, resource) + " " + quoted(name) + " not found",
                        details_of(group, resource, name));
}

ApiError already_exists(const std::string& group, const std::string& resource, const std::string& name) {
  return make_api_error(409, "AlreadyExists",
                        qualified_resource(group, resource) + " " + quoted(name) + " already exists",
                        details_of(group, resource, name));
}

ApiError conflict(const std::string& group, const std::string& resource, const std::string& name,
                  const std::string& why) {
  return make_api_error(409, "Conflict",
                        "Operation cannot be fulfilled on " + qualified_resource(group, resource) + " " +
                            quoted(name) + ": " + why,
                        details_of(group, resource, name));
}

ApiError invalid(const std::string& group, const std::string& kind, const std::string& name,
                 const std::vector<StatusCause>& causes) {
  // field.ErrorList.ToAggregate(): one error prints bare, several as "[a, b]".
  std::string aggregate;
  json cause_list = json::array();
  for (const auto& cause : causes) {
    const std::string text = cause.field.empty() ? cause.message : cause.field + ": " + cause.message;
    aggregate += (aggregate.empty() ? "" : ", ") + text;
    json c = {{"reason", cause.reason}, {"message", cause.message}};
    if (!cause.field.empty()) c["field"] = cause.field;
    cause_list.push_back(std::move(c));
  }
  if (causes.size() > 1) aggregate = "[" + aggregate + "]";
  json details = details_of(group, kind, name);
  if (!cause_list.empty()) details["causes"] = cause_list;
  const std::string qualified_kind = group.empty() ? kind : kind + "." + group;
  return make_api_error(422, "Invalid", qualified_kind + " " + quoted(name) + " is invalid: " + aggregate,
                        details);
}

ApiError bad_request(const std::string& message) {
  return make_api_error(400, "BadRequest", message);
}

ApiError expired(const std::string& message) {
  return make_api_error(410, "Expired", message);
}

ApiError too_large_resource_version(std::uint64_t requested, std::uint64_t current) {
  ApiError error = make_api_error(504, "Timeout",
                                  "Timeout: Too large resource version: " + std::to_string(requested) +
                                      ", current: " + std::to_string(current));
  error.details = {{"causes", json::array({{{"reason", "ResourceVersionTooLarge"},
                                            {"message", "Too large resource version"}}})}};
  error.retry_after_seconds = 1;
  return error;
}

ApiError method_not_supported(const std::string& group, const std::string& resource,
                              const std::string& action) {
  return make_api_error(
      405, "MethodNotAllowed",
      action + " is not supported on resources of kind " + quoted(qualified_resource(group, resource)),
      details_of(group, resource, ""));
}

ApiError forbidden(const std::string& group, const std::string& resource, const std::string& name,
                   const std::string& why) {
  return make_api_error(403, "Forbidden",
                        qualified_resource(group, resource) + " " + quoted(name) + " is forbidden: " + why,
                        details_of(group, resource, name));
}

ApiError unauthorized() {
  return make_api_error(401, "Unauthorized", "Unauthorized");
}

ApiError internal_error(const std::string& message) {
  return make_api_error(500, "InternalError", "Internal error occurred: " + message,
                        json{{"causes", json::array({json{{"message", message}}})}});
}

ApiError too_many_requests(int retry_after_seconds) {
  ApiError error = make_api_error(429, "TooManyRequests", "Too many requests, please try again later.");
  error.retry_after_seconds = retry_after_seconds;
  return error;
}

ApiError service_unavailable(const std::string& message) {
  return make_api_error(503, "ServiceUnavailable", message);
}

ApiError unsupported_media_type(const std::string& content_type, const std::vector<std::string>& accepted) {
  std::string list;
  for (const auto& type : accepted) list += (list.empty() ? "" : ", ") + type;
  return make_api_error(
      415, "UnsupportedMediaType",
      "the body of the request was in an unknown format - accepted media types include: " + list);
}

ApiError request_entity_too_large(std::size_t limit) {
  return make_api_error(413, "RequestEntityTooLarge",
                        "Request entity too large: limit is " + std::to_string(limit));
}

ApiError path_not_found() {
  return make_api_error(404, "NotFound", "the server could not find the requested resource");
}

ApiError patch_rejected() {
  return make_api_error(422, "Invalid", "the server rejected our request due to an error in our request",
                        json::object());
}

json success_status(const std::string& group, const std::string& resource, const std::string& name,
                    const std::string& uid) {
  json details = details_of(group, resource, name);
  if (!uid.empty()) details["uid"] = uid;
  return {{"kind", "Status"},
          {"apiVersion", "v1"},
          {"metadata", json::object()},
          {"status", "Success"},
          {"details", details}};
}

}  // namespace eslease::kubeemu
