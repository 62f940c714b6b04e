// Kubernetes `Status` error bodies, built the way apimachinery's api/errors package builds
// them, so clients that switch on `reason` and `code` behave as against kube-apiserver.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace eslease::kubeemu {

struct StatusCause {
  std::string reason;  // e.g. "FieldValueRequired"
  std::string message;
  std::string field;  // e.g. "metadata.name"
};

// A failed request: the HTTP code and the Status body that goes with it. Every error the
// emulator answers is an ApiError made by the functions below, returned as a value
// (std::optional<ApiError> or std::variant<T, ApiError>) and sent by send_error.
struct ApiError {
  int code = 500;
  std::string reason;
  std::string message;
  nlohmann::json details = nullptr;  // StatusDetails, or null when absent
  std::optional<int> retry_after_seconds;
  std::string continue_token;  // metadata.continue: where a list whose token expired goes on

  nlohmann::json body() const;
};

// Any Status: for the answers the named constructors below do not cover (an injected
// fault's bare Status, server-side apply's conflicts). An empty reason is left out.
ApiError make_api_error(int code, std::string reason, std::string message, nlohmann::json details = nullptr);

// "pods" or "leases.eslease.io": GroupResource.String().
std::string qualified_resource(const std::string& group, const std::string& resource);

ApiError not_found(const std::string& group, const std::string& resource, const std::string& name);
ApiError already_exists(const std::string& group, const std::string& resource, const std::string& name);
ApiError conflict(const std::string& group, const std::string& resource, const std::string& name,
                  const std::string& why);
// `kind` is the Kind (not the resource), as NewInvalid reports it.
ApiError invalid(const std::string& group, const std::string& kind, const std::string& name,
                 const std::vector<StatusCause>& causes);
ApiError bad_request(const std::string& message);
ApiError expired(const std::string& message);  // 410 Gone, reason Expired
// 504 for a resourceVersion newer than the server has (NewTooLargeResourceVersionError).
ApiError too_large_resource_version(std::uint64_t requested, std::uint64_t current);
ApiError method_not_supported(const std::string& group, const std::string& resource,
                              const std::string& action);
ApiError forbidden(const std::string& group, const std::string& resource, const std::string& name,
                   const std::string& why);
ApiError unauthorized();
ApiError internal_error(const std::string& message);
ApiError too_many_requests(int retry_after_seconds);
ApiError service_unavailable(const std::string& message);
ApiError unsupported_media_type(const std::string& content_type, const std::vector<std::string>& accepted);
ApiError request_entity_too_large(std::size_t limit);
// The server-level 404 for a path that names no API (no details, as kube-apiserver).
ApiError path_not_found();
// The 422 a failed JSON patch operation yields (NewGenericServerResponse(422, ...)).
ApiError patch_rejected();

// Status Success, as answered by DELETE for resources that do not return the object.
nlohmann::json success_status(const std::string& group, const std::string& resource, const std::string& name,
                              const std::string& uid);

}  // namespace eslease::kubeemu
