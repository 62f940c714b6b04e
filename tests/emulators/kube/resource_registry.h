// The resources the emulator serves: the built-in kinds it knows, plus one entry per
// established CustomResourceDefinition. Lookups by URL (group, version, plural) and by
// short name feed routing and discovery.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "emulators/kube/api_status.h"
#include "emulators/kube/list_types.h"

namespace eslease::kubeemu {

struct PrinterColumn {
  std::string name;
  std::string type;  // string, integer, number, boolean, date
  std::string format;
  std::string description;
  std::string json_path;
  int priority = 0;
};

struct ResourceVersionInfo {
  std::string name;                 // "v1alpha1"
  nlohmann::json schema = nullptr;  // openAPIV3Schema, CRDs only
  ListTypes list_types;             // how its lists merge, read from `schema` once
  std::vector<PrinterColumn> columns;
  bool status_subresource = false;
};

struct ResourceType {
  std::string group;  // "" for core
  std::string plural;
  std::string singular;
  std::string kind;
  std::string list_kind;
  bool namespaced = true;
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  std::vector<ResourceVersionInfo> versions;  // served versions, storage version first
  bool custom = false;                        // defined by a CRD
  std::string crd_name;                       // "<plural>.<group>" when custom
  bool bumps_generation = false;              // metadata.generation tracks spec changes
  bool returns_deleted_object = false;        // DELETE answers with the object, not a Status
  // Field selectors the type supports beyond metadata.name/metadata.namespace.
  std::vector<std::string> extra_field_labels;

  std::string id() const { return group + "/" + plural; }
  std::string group_version(const std::string& version) const {
    return group.empty() ? version : group + "/" + version;
  }
  const ResourceVersionInfo* version(const std::string& name) const;
  bool has_status_subresource(const std::string& version) const;
};

// Deployments, ReplicaSets and StatefulSets serve /scale (scale.cpp).
bool has_scale_subresource(const ResourceType& type);

class ResourceRegistry {
 public:
  ResourceRegistry();  // registers the built-in resources

  // Shared: a watch stream keeps its type alive after the CRD that defined it is deleted.
  using TypePtr = std::shared_ptr<const ResourceType>;
  TypePtr find(const std::string& group, const std::string& version, const std::string& plural) const;
  TypePtr find_by_id(const std::string& id) const;
  std::vector<TypePtr> all() const;
  // Group -> served versions (preferred first), in registration order of groups.
  std::vector<std::pair<std::string, std::vector<std::string>>> groups() const;

  // Turns a (validated) CRD object into the resource it defines.
  static ResourceType from_crd(const nlohmann::json& crd);
  // Names another resource already uses (plural, singular, kind, short names) in the group.
  std::optional<std::string> name_clash(const ResourceType& candidate) const;
  void add(ResourceType type);
  void remove(const std::string& id);

 private:
  std::vector<TypePtr> types_;
  std::vector<std::string> group_order_;
};

}  // namespace eslease::kubeemu
