// Which Kubernetes resource a request is about. The client works on unstructured JSON, so
// a resource is described by its REST coordinates rather than by a C++ type.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace eslease::kube {

struct Resource {
  std::string group;    // "" for the core API group
  std::string version;  // "v1", "v1alpha1", ...
  std::string plural;   // "pods", "leases", ...
  bool namespaced = true;

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
};

namespace resources {
inline Resource pods() {
  return {"", "v1", "pods", true};
}
inline Resource nodes() {
  return {"", "v1", "nodes", false};
}
inline Resource namespaces() {
  return {"", "v1", "namespaces", false};
}
inline Resource events() {
  return {"", "v1", "events", true};
}
inline Resource coordination_leases() {
  return {"coordination.k8s.io", "v1", "leases", true};
}
inline Resource eslease_leases() {
  return {"eslease.io", "v1alpha1", "leases", true};
}
inline Resource crds() {
  return {"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};
}
}  // namespace resources

// Whether `version` is a resourceVersion that can be ordered (KEP-5504, comparable resource
// versions, stable since Kubernetes 1.35): a positive decimal integer without leading zeros.
inline bool comparable_resource_version(std::string_view version) {
  if (version.empty() || version.front() == '0') return false;
  for (char c : version)
    if (c < '0' || c > '9') return false;
  return true;
}

// The order of two comparable resourceVersions of objects of one resource: the order the
// API server wrote them in. nullopt when either cannot be ordered (an older server).
inline std::optional<std::strong_ordering> compare_resource_versions(std::string_view a, std::string_view b) {
  if (!comparable_resource_version(a) || !comparable_resource_version(b)) return std::nullopt;
  if (a.size() != b.size()) return a.size() <=> b.size();
  return a <=> b;
}

}  // namespace eslease::kube
