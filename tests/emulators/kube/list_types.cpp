#include "emulators/kube/list_types.h"

#include <algorithm>
#include <map>
#include <memory>

namespace eslease::kubeemu {

using nlohmann::json;

namespace {

ListType map_list(std::vector<std::string> apply_keys, std::string patch_key) {
  ListType t;
  t.apply = ListKind::kMap;
  t.apply_keys = std::move(apply_keys);
  t.patch = patch_key.empty() ? ListKind::kAtomic : ListKind::kMap;
  t.patch_key = std::move(patch_key);
  return t;
}

ListType set_list() {
  ListType t;
  t.apply = ListKind::kSet;
  t.patch = ListKind::kSet;
  return t;
}

std::string joined(const std::vector<std::string>& path, std::size_t from) {
  std::string out;
  for (std::size_t i = from; i < path.size(); ++i) out += (out.empty() ? "" : ".") + path[i];
  return out;
}

// ObjectMeta, wherever it appears (the object's own, a pod template's).
const std::map<std::string, ListType>& meta_lists() {
  static const std::map<std::string, ListType> lists = {
      {"ownerReferences", map_list({"uid"}, "uid")},
      {"finalizers", set_list()},
  };
  return lists;
}

// PodSpec and the containers in it (k8s.io/api/core/v1 types.go markers).
const std::map<std::string, ListType>& pod_spec_lists() {
  static const std::map<std::string, ListType> lists = [] {
    std::map<std::string, ListType> out = {
        {"volumes", map_list({"name"}, "name")},
        {"imagePullSecrets", map_list({"name"}, "name")},
        {"hostAliases", map_list({"ip"}, "ip")},
        {"topologySpreadConstraints", map_list({"topologyKey", "whenUnsatisfiable"}, "topologyKey")},
        {"schedulingGates", map_list({"name"}, "name")},
        {"resourceClaims", map_list({"name"}, "name")},
    };
    for (const char* containers : {"containers", "initContainers", "ephemeralContainers"}) {
      const std::string c = containers;
      out[c] = map_list({"name"}, "name");
      out[c + ".ports"] = map_list({"containerPort", "protocol"}, "containerPort");
      out[c + ".env"] = map_list({"name"}, "name");
      out[c + ".volumeMounts"] = map_list({"mountPath"}, "mountPath");
      out[c + ".volumeDevices"] = map_list({"devicePath"}, "devicePath");
    }
    return out;
  }();
  return lists;
}

ListType lookup(const std::map<std::string, ListType>& table, const std::string& key) {
  auto it = table.find(key);
  return it == table.end() ? ListType{} : it->second;
}

// Where the pod spec sits in a resource that has one: a pod's `spec`, a template's
// `spec.template.spec`.
std::size_t pod_spec_depth(const std::string& resource_id) {
  if (resource_id == "/pods") return 1;
  if (resource_id == "apps/deployments" || resource_id == "batch/jobs") return 3;
  return 0;
}

ListType builtin_list(const std::string& resource_id, const std::vector<std::string>& path) {
  if (path.size() == 2 && path[0] == "metadata") return lookup(meta_lists(), path[1]);
  const std::size_t depth = pod_spec_depth(resource_id);
  if (depth == 3 && path.size() == 4 && path[0] == "spec" && path[1] == "template" && path[2] == "metadata") {
    return lookup(meta_lists(), path[3]);
  }
  if (depth > 0 && path.size() > depth) {
    const std::vector<std::string> prefix =
        depth == 1 ? std::vector<std::string>{"spec"} : std::vector<std::string>{"spec", "template", "spec"};
    if (std::equal(prefix.begin(), prefix.end(), path.begin()))
      return lookup(pod_spec_lists(), joined(path, depth));
  }
  const std::string key = joined(path, 0);
  if (key == "status.conditions") return map_list({"type"}, "type");
  if (resource_id == "/services" && key == "spec.ports") return map_list({"port", "protocol"}, "port");
  if (resource_id == "/nodes" && key == "status.addresses") {
    ListType t;  // merged by type in a patch, atomic for apply (+listType=atomic)
    t.patch = ListKind::kMap;
    t.patch_key = "type";
    return t;
  }
  if (resource_id == "/nodes" && key == "spec.podCIDRs") return set_list();
  return ListType{};
}

// The schema node at `path`, walking properties and array items.
const json* schema_at(const json& schema, const std::vector<std::string>& path) {
  const json* node = &schema;
  for (const auto& field : path) {
    while (node->is_object() && node->value("type", "") == "array" && node->contains("items"))
      node = &(*node)["items"];
    if (!node->is_object() || !node->contains("properties") || !(*node)["properties"].contains(field))
      return nullptr;
    node = &(*node)["properties"][field];
  }
  return node;
}

}  // namespace

ListTypes builtin_list_types(const std::string& resource_id) {
  return [resource_id](const std::vector<std::string>& path) { return builtin_list(resource_id, path); };
}

ListTypes schema_list_types(const json& schema) {
  // Shared, not copied: the function is copied for every write of the resource.
  auto shared = std::make_shared<const json>(schema);
  return [shared](const std::vector<std::string>& path) {
    ListType t;
    if (path.size() == 2 && path[0] == "metadata") return lookup(meta_lists(), path[1]);
    const json* node = schema_at(*shared, path);
    if (node == nullptr || !node->is_object()) return t;
    const std::string kind = node->value("x-kubernetes-list-type", "atomic");
    if (kind == "set") {
      t.apply = ListKind::kSet;
    } else if (kind == "map") {
      t.apply = ListKind::kMap;
      for (const auto& key : node->value("x-kubernetes-list-map-keys", json::array())) {
        if (key.is_string()) t.apply_keys.push_back(key.get<std::string>());
      }
    }
    return t;  // custom resources take no strategic merge patch
  };
}

}  // namespace eslease::kubeemu
