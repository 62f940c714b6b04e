// Server-side printing: the meta.k8s.io/v1 Table that `kubectl get` asks for with
// `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "emulators/kube/resource_registry.h"

namespace eslease::kubeemu {

enum class IncludeObject { kNone, kMetadata, kObject };

IncludeObject include_object_of(const std::string& query_value);

// A Table of `objects` (already in the requested version) of `type`. Custom resources
// use the CRD's additionalPrinterColumns (JSONPath subset: ".a.b" and ".a[0].b"); built-in
// resources with a printer (printers.h) print its columns; others print Name and Age.
nlohmann::json make_table(const ResourceType& type, const std::string& version,
                          const std::vector<nlohmann::json>& objects,
                          const std::string& list_resource_version, const std::string& continue_token,
                          IncludeObject include, WallTime now);

// kubectl's human-readable durations ("45s", "3m20s", "5h", "2d3h").
std::string human_duration(std::chrono::seconds d);

}  // namespace eslease::kubeemu
