// Decoding of write bodies and the CustomResourceDefinition rules the write handlers share
// (writes.cpp, apply.cpp, deletes.cpp, custom_resources.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "emulators/kube/api_status.h"
#include "emulators/kube/resource_registry.h"
#include "emulators/kube/schema/schema.h"
#include "http/server.h"

namespace eslease::kubeemu {

inline constexpr const char* kCrdId = "apiextensions.k8s.io/customresourcedefinitions";
inline constexpr const char* kNamespaceId = "/namespaces";

// Decodes a request body as the apiserver's JSON (or YAML, or protobuf for the kinds kubectl
// sends so) decoder would, checking ObjectMeta's field types.
std::variant<nlohmann::json, ApiError> decode_body(const http::ServerRequest& request);
// Checks apiVersion and kind against the endpoint; built-in kinds may omit both (typed
// clients do) and get the endpoint's.
std::optional<ApiError> check_type_meta(nlohmann::json& object, const ResourceType& type,
                                        const std::string& version);

std::vector<StatusCause> to_causes(const std::vector<schema::Cause>& causes);
// The status apiextensions gives an accepted CRD, and the defaults it applies first.
nlohmann::json crd_status(const nlohmann::json& crd, const std::string& now);
void default_crd(nlohmann::json& crd);

}  // namespace eslease::kubeemu
