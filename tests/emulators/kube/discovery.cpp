#include "emulators/kube/discovery.h"

#include <cstdio>
#include <functional>

namespace eslease::kubeemu {

using nlohmann::json;

json version_info() {
  return {{"major", "1"},
          {"minor", "32"},
          {"gitVersion", "v1.32.0"},
          {"gitCommit", "0000000000000000000000000000000000000000"},
          {"gitTreeState", "clean"},
          {"buildDate", "2024-12-11T00:00:00Z"},
          {"goVersion", "go1.23.3"},
          {"compiler", "gc"},
          {"platform", "linux/amd64"}};
}

json api_versions(const std::string& server_address) {
  return {{"kind", "APIVersions"},
          {"versions", {"v1"}},
          {"serverAddressByClientCIDRs", {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", server_address}}}}};
}

namespace {

json group_entry(const std::string& group, const std::vector<std::string>& versions) {
  json list = json::array();
  for (const auto& v : versions) list.push_back({{"groupVersion", group + "/" + v}, {"version", v}});
  return {{"name", group},
          {"versions", list},
          {"preferredVersion",
           {{"groupVersion", group + "/" + versions.front()}, {"version", versions.front()}}}};
}

const std::vector<std::string> kAllVerbs = {"create", "delete", "deletecollection", "get",
                                            "list",   "patch",  "update",           "watch"};

}  // namespace

json api_group_list(const ResourceRegistry& registry) {
  json groups = json::array();
  for (const auto& [group, versions] : registry.groups()) {
    if (!group.empty()) groups.push_back(group_entry(group, versions));
  }
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}};
}

json api_group(const ResourceRegistry& registry, const std::string& group) {
  for (const auto& [name, versions] : registry.groups()) {
    if (name == group && !group.empty()) {
      json entry = group_entry(group, versions);
      entry["kind"] = "APIGroup";
      entry["apiVersion"] = "v1";
      return entry;
    }
  }
  return nullptr;
}

json api_resource_list(const ResourceRegistry& registry, const std::string& group,
                       const std::string& version) {
  json resources = json::array();
  for (const auto& type : registry.all()) {
    if (type->group != group || type->version(version) == nullptr) continue;
    json entry = {{"name", type->plural},
                  {"singularName", type->singular},
                  {"namespaced", type->namespaced},
                  {"kind", type->kind},
                  {"verbs", kAllVerbs}};
    if (!type->short_names.empty()) entry["shortNames"] = type->short_names;
    if (!type->categories.empty()) entry["categories"] = type->categories;
    resources.push_back(entry);
    if (type->has_status_subresource(version)) {
      resources.push_back({{"name", type->plural + "/status"},
                           {"singularName", ""},
                           {"namespaced", type->namespaced},
                           {"kind", type->kind},
                           {"verbs", {"get", "patch", "update"}}});
    }
    if (has_scale_subresource(*type)) {
      resources.push_back({{"name", type->plural + "/scale"},
                           {"singularName", ""},
                           {"namespaced", type->namespaced},
                           {"group", "autoscaling"},
                           {"version", "v1"},
                           {"kind", "Scale"},
                           {"verbs", {"get", "patch", "update"}}});
    }
  }
  if (resources.empty()) return nullptr;
  const std::string group_version = group.empty() ? version : group + "/" + version;
  json list = {{"kind", "APIResourceList"}, {"groupVersion", group_version}, {"resources", resources}};
  if (!group.empty()) list["apiVersion"] = "v1";
  return list;
}

namespace {

json query_parameter(const std::string& name) {
  return {{"name", name}, {"in", "query"}, {"schema", {{"type", "string"}, {"uniqueItems", true}}}};
}

std::string schema_name(const ResourceType& type, const std::string& version) {
  const std::string group = type.group.empty() ? "core" : type.group;
  return "io.k8s.emulator." + group + "." + version + "." + type.kind;
}

}  // namespace

json builtin_openapi_v3(const ResourceRegistry& registry, const std::string& group,
                        const std::string& version) {
  json paths = json::object();
  json schemas = json::object();
  for (const auto& type : registry.all()) {
    if (type->custom || type->group != group || type->version(version) == nullptr) continue;
    const json gvk = {{"group", group}, {"version", version}, {"kind", type->kind}};
    const std::string ref = "#/components/schemas/" + schema_name(*type, version);
    const json response = {
        {"200", {{"description", "OK"}, {"content", {{"application/json", {{"schema", {{"$ref", ref}}}}}}}}}};
    const std::string prefix = (group.empty() ? "/api/" : "/apis/" + group + "/") + version + "/" +
                               (type->namespaced ? "namespaces/{namespace}/" : "");
    auto operation = [&](const std::string& action, const std::vector<std::string>& params) {
      json parameters = json::array();
      for (const auto& p : params) parameters.push_back(query_parameter(p));
      return json{{"operationId", action + type->kind},
                  {"parameters", parameters},
                  {"responses", response},
                  {"x-kubernetes-action", action},
                  {"x-kubernetes-group-version-kind", gvk}};
    };
    json path_parameters = json::array();
    path_parameters.push_back(
        {{"name", "name"}, {"in", "path"}, {"required", true}, {"schema", {{"type", "string"}}}});
    if (type->namespaced) {
      path_parameters.push_back(
          {{"name", "namespace"}, {"in", "path"}, {"required", true}, {"schema", {{"type", "string"}}}});
    }
    paths[prefix + type->plural] = {
        {"get", operation("list", {"labelSelector", "fieldSelector", "limit"})},
        {"post", operation("post", {"dryRun", "fieldManager", "fieldValidation"})}};
    paths[prefix + type->plural + "/{name}"] = {
        {"get", operation("get", {})},
        {"put", operation("put", {"dryRun", "fieldManager", "fieldValidation"})},
        {"patch", operation("patch", {"dryRun", "fieldManager", "fieldValidation", "force"})},
        {"delete", operation("delete", {"dryRun", "gracePeriodSeconds", "propagationPolicy"})},
        {"parameters", path_parameters}};
    schemas[schema_name(*type, version)] = {
        {"type", "object"},
        {"x-kubernetes-group-version-kind", json::array({gvk})},
        {"x-kubernetes-preserve-unknown-fields", true},
        {"properties",
         {{"apiVersion", {{"type", "string"}}},
          {"kind", {{"type", "string"}}},
          {"metadata", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}},
          {"spec", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}},
          {"status", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}}}}};
  }
  return {{"openapi", "3.0.0"},
          {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
          {"paths", paths},
          {"components", {{"schemas", schemas}}}};
}

std::string openapi_path_key(const std::string& group, const std::string& version) {
  return group.empty() ? "api/" + version : "apis/" + group + "/" + version;
}

std::string openapi_server_relative_url(const std::string& key, const json& document) {
  char hash[40];
  std::snprintf(hash, sizeof(hash), "%016zX", std::hash<std::string>{}(document.dump()));
  return "/openapi/v3/" + key + "?hash=" + hash;
}

}  // namespace eslease::kubeemu
