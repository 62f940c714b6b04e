#include "emulators/kube/resource_registry.h"

#include <algorithm>

namespace eslease::kubeemu {
namespace {

using nlohmann::json;

ResourceType builtin(std::string group, std::string version, std::string plural, std::string singular,
                     const std::string& kind, bool namespaced, std::vector<std::string> short_names,
                     bool status_subresource) {
  ResourceType type;
  type.group = std::move(group);
  type.plural = std::move(plural);
  type.singular = std::move(singular);
  type.kind = kind;
  type.list_kind = kind + "List";
  type.namespaced = namespaced;
  type.short_names = std::move(short_names);
  ResourceVersionInfo info;
  info.name = std::move(version);
  info.status_subresource = status_subresource;
  type.versions.push_back(std::move(info));
  return type;
}

std::string string_at(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<std::string> strings_at(const json& object, const char* key) {
  std::vector<std::string> out;
  auto it = object.find(key);
  if (it == object.end() || !it->is_array()) return out;
  for (const auto& item : *it) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

// The kinds eslease itself reads and writes, and those around them: pods, namespaces,
// nodes, events, configmaps, secrets and coordination leases.
std::vector<ResourceType> cluster_kinds() {
  std::vector<ResourceType> out;
  auto pods = builtin("", "v1", "pods", "pod", "Pod", true, {"po"}, true);
  pods.categories = {"all"};
  pods.returns_deleted_object = true;
  pods.extra_field_labels = {
      "spec.nodeName",           "status.phase",     "spec.restartPolicy", "spec.schedulerName",
      "spec.serviceAccountName", "spec.hostNetwork", "status.podIP",       "status.nominatedNodeName"};
  out.push_back(std::move(pods));
  auto namespaces = builtin("", "v1", "namespaces", "namespace", "Namespace", false, {"ns"}, true);
  namespaces.extra_field_labels = {"status.phase"};
  out.push_back(std::move(namespaces));
  auto nodes = builtin("", "v1", "nodes", "node", "Node", false, {"no"}, true);
  nodes.extra_field_labels = {"spec.unschedulable"};
  out.push_back(std::move(nodes));
  auto events = builtin("", "v1", "events", "event", "Event", true, {"ev"}, false);
  events.extra_field_labels = {"involvedObject.kind",
                               "involvedObject.namespace",
                               "involvedObject.name",
                               "involvedObject.uid",
                               "involvedObject.apiVersion",
                               "involvedObject.resourceVersion",
                               "involvedObject.fieldPath",
                               "reason",
                               "reportingComponent",
                               "source",
                               "type"};
  out.push_back(std::move(events));
  out.push_back(builtin("", "v1", "configmaps", "configmap", "ConfigMap", true, {"cm"}, false));
  auto secrets = builtin("", "v1", "secrets", "secret", "Secret", true, {}, false);
  secrets.extra_field_labels = {"type"};
  out.push_back(std::move(secrets));
  out.push_back(builtin("coordination.k8s.io", "v1", "leases", "lease", "Lease", true, {}, false));
  return out;
}

// The kinds an operator's Helm chart and its users' workloads install, stored as given: no
// controller acts on them.
std::vector<ResourceType> workload_kinds() {
  std::vector<ResourceType> out;
  out.push_back(
      builtin("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", true, {"sa"}, false));
  out.push_back(builtin("", "v1", "services", "service", "Service", true, {"svc"}, true));
  auto deployments = builtin("apps", "v1", "deployments", "deployment", "Deployment", true, {"deploy"}, true);
  deployments.categories = {"all"};
  deployments.bumps_generation = true;
  out.push_back(std::move(deployments));
  auto stateful_sets =
      builtin("apps", "v1", "statefulsets", "statefulset", "StatefulSet", true, {"sts"}, true);
  stateful_sets.categories = {"all"};
  stateful_sets.bumps_generation = true;
  out.push_back(std::move(stateful_sets));
  auto jobs = builtin("batch", "v1", "jobs", "job", "Job", true, {}, true);
  jobs.categories = {"all"};
  jobs.bumps_generation = true;
  out.push_back(std::move(jobs));
  auto cron_jobs = builtin("batch", "v1", "cronjobs", "cronjob", "CronJob", true, {"cj"}, true);
  cron_jobs.categories = {"all"};
  cron_jobs.bumps_generation = true;
  out.push_back(std::move(cron_jobs));
  auto budgets = builtin("policy", "v1", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget",
                         true, {"pdb"}, true);
  budgets.bumps_generation = true;
  out.push_back(std::move(budgets));
  for (bool cluster : {true, false}) {
    const std::string prefix = cluster ? "cluster" : "";
    const std::string kind_prefix = cluster ? "Cluster" : "";
    out.push_back(builtin("rbac.authorization.k8s.io", "v1", prefix + "roles", prefix + "role",
                          kind_prefix + "Role", !cluster, {}, false));
    out.push_back(builtin("rbac.authorization.k8s.io", "v1", prefix + "rolebindings", prefix + "rolebinding",
                          kind_prefix + "RoleBinding", !cluster, {}, false));
  }
  auto crds = builtin("apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
                      "CustomResourceDefinition", false, {"crd", "crds"}, true);
  crds.categories = {"api-extensions"};
  crds.bumps_generation = true;
  out.push_back(std::move(crds));
  return out;
}

}  // namespace

const ResourceVersionInfo* ResourceType::version(const std::string& name) const {
  for (const auto& v : versions) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

bool ResourceType::has_status_subresource(const std::string& name) const {
  const auto* v = version(name);
  return v != nullptr && v->status_subresource;
}

ResourceRegistry::ResourceRegistry() {
  for (auto& type : cluster_kinds()) add(std::move(type));
  for (auto& type : workload_kinds()) add(std::move(type));
}

ResourceRegistry::TypePtr ResourceRegistry::find(const std::string& group, const std::string& version,
                                                 const std::string& plural) const {
  for (const auto& type : types_) {
    if (type->group == group && type->plural == plural && type->version(version) != nullptr) return type;
  }
  return nullptr;
}

ResourceRegistry::TypePtr ResourceRegistry::find_by_id(const std::string& id) const {
  for (const auto& type : types_) {
    if (type->id() == id) return type;
  }
  return nullptr;
}

std::vector<ResourceRegistry::TypePtr> ResourceRegistry::all() const {
  return types_;
}

std::vector<std::pair<std::string, std::vector<std::string>>> ResourceRegistry::groups() const {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const auto& group : group_order_) {
    std::vector<std::string> versions;
    for (const auto& type : types_) {
      if (type->group != group) continue;
      for (const auto& v : type->versions) {
        if (std::find(versions.begin(), versions.end(), v.name) == versions.end()) versions.push_back(v.name);
      }
    }
    if (!versions.empty()) out.emplace_back(group, std::move(versions));
  }
  return out;
}

ResourceType ResourceRegistry::from_crd(const json& crd) {
  const json& spec = crd.at("spec");
  const json& names = spec.at("names");
  ResourceType type;
  type.custom = true;
  type.crd_name = string_at(crd.at("metadata"), "name");
  type.group = string_at(spec, "group");
  type.plural = string_at(names, "plural");
  type.kind = string_at(names, "kind");
  type.singular = string_at(names, "singular");
  if (type.singular.empty()) {
    type.singular = type.kind;
    std::transform(type.singular.begin(), type.singular.end(), type.singular.begin(), ::tolower);
  }
  type.list_kind = string_at(names, "listKind");
  if (type.list_kind.empty()) type.list_kind = type.kind + "List";
  type.short_names = strings_at(names, "shortNames");
  type.categories = strings_at(names, "categories");
  type.namespaced = string_at(spec, "scope") != "Cluster";
  type.bumps_generation = true;
  auto versions = spec.value("versions", json::array());
  // Storage version first: it is the preferred one in discovery.
  std::stable_sort(versions.begin(), versions.end(), [](const json& a, const json& b) {
    return a.value("storage", false) && !b.value("storage", false);
  });
  for (const auto& v : versions) {
    if (!v.value("served", true)) continue;
    ResourceVersionInfo info;
    info.name = string_at(v, "name");
    if (v.contains("schema") && v["schema"].is_object())
      info.schema = v["schema"].value("openAPIV3Schema", json());
    info.list_types = schema_list_types(info.schema.is_object() ? info.schema : json::object());
    info.status_subresource =
        v.contains("subresources") && v["subresources"].is_object() && v["subresources"].contains("status");
    for (const auto& column : v.value("additionalPrinterColumns", json::array())) {
      if (!column.is_object()) continue;
      PrinterColumn c;
      c.name = string_at(column, "name");
      c.type = string_at(column, "type");
      c.format = string_at(column, "format");
      c.description = string_at(column, "description");
      c.json_path = string_at(column, "jsonPath");
      c.priority = column.value("priority", 0);
      info.columns.push_back(std::move(c));
    }
    if (info.columns.empty()) {
      // apiextensions defaults the Age column when none is declared.
      info.columns.push_back({"Age", "date", "", "", ".metadata.creationTimestamp", 0});
    }
    type.versions.push_back(std::move(info));
  }
  return type;
}

std::optional<std::string> ResourceRegistry::name_clash(const ResourceType& candidate) const {
  for (const auto& type : types_) {
    if (type->group != candidate.group || type->id() == candidate.id()) continue;
    if (type->kind == candidate.kind) return "kind " + candidate.kind;
    if (type->singular == candidate.singular) return "singular " + candidate.singular;
    if (type->plural == candidate.plural) return "plural " + candidate.plural;
  }
  return std::nullopt;
}

void ResourceRegistry::add(ResourceType type) {
  if (std::find(group_order_.begin(), group_order_.end(), type.group) == group_order_.end()) {
    group_order_.push_back(type.group);
  }
  remove(type.id());
  types_.push_back(std::make_shared<const ResourceType>(std::move(type)));
}

void ResourceRegistry::remove(const std::string& id) {
  types_.erase(std::remove_if(types_.begin(), types_.end(), [&](const TypePtr& t) { return t->id() == id; }),
               types_.end());
}

}  // namespace eslease::kubeemu
