// Discovery documents (/version, /api, /apis, resource lists) and the OpenAPI v3 index
// and built-in documents kubectl reads before it validates, applies or explains.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "emulators/kube/resource_registry.h"

namespace eslease::kubeemu {

nlohmann::json version_info();
nlohmann::json api_versions(const std::string& server_address);
nlohmann::json api_group_list(const ResourceRegistry& registry);
// Null when the group is not served.
nlohmann::json api_group(const ResourceRegistry& registry, const std::string& group);
// Null when nothing is served at group/version.
nlohmann::json api_resource_list(const ResourceRegistry& registry, const std::string& group,
                                 const std::string& version);

// A minimal but valid OpenAPI v3 document for the built-in resources of group/version:
// each kind has a schema tagged with x-kubernetes-group-version-kind that keeps unknown
// fields, and PATCH operations that declare fieldValidation (kubectl then leaves
// validation to the server).
nlohmann::json builtin_openapi_v3(const ResourceRegistry& registry, const std::string& group,
                                  const std::string& version);

// The "paths" key of /openapi/v3 for one document ("api/v1", "apis/g/v").
std::string openapi_path_key(const std::string& group, const std::string& version);
// serverRelativeURL with the content hash clients cache by.
std::string openapi_server_relative_url(const std::string& key, const nlohmann::json& document);

}  // namespace eslease::kubeemu
