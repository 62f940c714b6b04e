// Which Kubernetes resource a request is about. The client works on unstructured JSON, so
// a resource is described by its REST coordinates rather than by a C++ type.
#pragma once

#include <string>

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

}  // namespace eslease::kube
