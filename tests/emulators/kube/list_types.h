// How each list field of an object merges, as the Go types declare it: the strategic merge
// patch markers (patchStrategy/patchMergeKey) and the server-side apply markers
// (+listType=atomic|set|map, +listMapKey). Built-in kinds use a table of the lists that are
// not atomic (k8s.io/api core/v1, apps/v1, batch/v1, meta/v1); custom resources read
// x-kubernetes-list-type and x-kubernetes-list-map-keys from their version's schema.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace eslease::kubeemu {

enum class ListKind { kAtomic, kSet, kMap };

struct ListType {
  // Server-side apply: atomic lists are owned whole, sets by value, maps by their keys.
  ListKind apply = ListKind::kAtomic;
  std::vector<std::string> apply_keys;
  // Strategic merge patch: kMap merges by `patch_key`, kSet merges primitives, kAtomic
  // (no patchStrategy) replaces the list.
  ListKind patch = ListKind::kAtomic;
  std::string patch_key;
};

// `path` is field names from the object's root, list positions left out:
// {"spec", "template", "spec", "containers", "ports"}.
using ListTypes = std::function<ListType(const std::vector<std::string>& path)>;

// The lists of a built-in resource ("/pods", "apps/deployments", ...).
ListTypes builtin_list_types(const std::string& resource_id);
// The lists of a custom resource, from one version's openAPIV3Schema.
ListTypes schema_list_types(const nlohmann::json& schema);

}  // namespace eslease::kubeemu
