// The OpenAPI v3 document kube-apiserver serves at /openapi/v3/apis/<group>/<version> for CRDs.
// kubectl reads it to decide whether the server does field validation (a PATCH operation
// tagged with the resource's x-kubernetes-group-version-kind and a `fieldValidation` query
// parameter), for `kubectl explain`, and for client-side validation by GVK.
#include "emulators/kube/schema/schema.h"
#include "emulators/kube/schema/schema_util.h"

namespace eslease::kubeemu::schema {
namespace {

using nlohmann::json;
using namespace detail;

constexpr const char* kMeta = "io.k8s.apimachinery.pkg.apis.meta.v1.";

std::string meta_ref(const std::string& name) {
  return std::string("#/components/schemas/") + kMeta + name;
}

// "eslease.io" -> "io.eslease", the reversed-domain prefix kube gives CRD schema names.
std::string reversed_group(const std::string& group) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = group.find('.', start);
    parts.push_back(group.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (!out.empty()) out += ".";
    out += *it;
  }
  return out;
}

// Time, FieldsV1, OwnerReference and ManagedFieldsEntry: the types ObjectMeta refers to.
void add_meta_field_types(json& schemas) {
  schemas[std::string(kMeta) + "Time"] = {
      {"type", "string"}, {"format", "date-time"}, {"description", "RFC 3339 date and time in UTC."}};
  schemas[std::string(kMeta) + "FieldsV1"] = {{"type", "object"},
                                              {"description", "FieldsV1 stores a set of fields."}};
  schemas[std::string(kMeta) + "OwnerReference"] = {{"type", "object"},
                                                    {"required", {"apiVersion", "kind", "name", "uid"}},
                                                    {"properties",
                                                     {{"apiVersion", {{"type", "string"}, {"default", ""}}},
                                                      {"blockOwnerDeletion", {{"type", "boolean"}}},
                                                      {"controller", {{"type", "boolean"}}},
                                                      {"kind", {{"type", "string"}, {"default", ""}}},
                                                      {"name", {{"type", "string"}, {"default", ""}}},
                                                      {"uid", {{"type", "string"}, {"default", ""}}}}},
                                                    {"x-kubernetes-map-type", "atomic"}};
  schemas[std::string(kMeta) + "ManagedFieldsEntry"] = {
      {"type", "object"},
      {"properties",
       {{"apiVersion", {{"type", "string"}}},
        {"fieldsType", {{"type", "string"}}},
        {"fieldsV1", {{"allOf", {{{"$ref", meta_ref("FieldsV1")}}}}}},
        {"manager", {{"type", "string"}}},
        {"operation", {{"type", "string"}}},
        {"subresource", {{"type", "string"}}},
        {"time", {{"allOf", {{{"$ref", meta_ref("Time")}}}}}}}}};
}

void add_object_and_list_meta(json& schemas) {
  const json string_map = {{"type", "object"},
                           {"additionalProperties", {{"type", "string"}, {"default", ""}}}};
  const json finalizers = {{"type", "array"},
                           {"items", {{"type", "string"}, {"default", ""}}},
                           {"x-kubernetes-list-type", "set"},
                           {"x-kubernetes-patch-strategy", "merge"}};
  schemas[std::string(kMeta) + "ObjectMeta"] = {
      {"type", "object"},
      {"description", "ObjectMeta is metadata that all persisted resources must have."},
      {"properties",
       {{"annotations", string_map},
        {"creationTimestamp", {{"allOf", {{{"$ref", meta_ref("Time")}}}}}},
        {"deletionGracePeriodSeconds", {{"type", "integer"}, {"format", "int64"}}},
        {"deletionTimestamp", {{"allOf", {{{"$ref", meta_ref("Time")}}}}}},
        {"finalizers", finalizers},
        {"generateName", {{"type", "string"}}},
        {"generation", {{"type", "integer"}, {"format", "int64"}}},
        {"labels", string_map},
        {"managedFields",
         {{"type", "array"},
          {"items", {{"allOf", {{{"$ref", meta_ref("ManagedFieldsEntry")}}}}, {"default", json::object()}}}}},
        {"name", {{"type", "string"}}},
        {"namespace", {{"type", "string"}}},
        {"ownerReferences",
         {{"type", "array"},
          {"items", {{"allOf", {{{"$ref", meta_ref("OwnerReference")}}}}, {"default", json::object()}}},
          {"x-kubernetes-list-map-keys", {"uid"}},
          {"x-kubernetes-list-type", "map"},
          {"x-kubernetes-patch-merge-key", "uid"},
          {"x-kubernetes-patch-strategy", "merge"}}},
        {"resourceVersion", {{"type", "string"}}},
        {"selfLink", {{"type", "string"}}},
        {"uid", {{"type", "string"}}}}}};
  schemas[std::string(kMeta) + "ListMeta"] = {
      {"type", "object"},
      {"properties",
       {{"continue", {{"type", "string"}}},
        {"remainingItemCount", {{"type", "integer"}, {"format", "int64"}}},
        {"resourceVersion", {{"type", "string"}}},
        {"selfLink", {{"type", "string"}}}}}};
}

// Status with its details and causes, DeleteOptions with its preconditions, and Patch.
void add_status_types(json& schemas) {
  schemas[std::string(kMeta) + "StatusCause"] = {{"type", "object"},
                                                 {"properties",
                                                  {{"field", {{"type", "string"}}},
                                                   {"message", {{"type", "string"}}},
                                                   {"reason", {{"type", "string"}}}}}};
  schemas[std::string(kMeta) + "StatusDetails"] = {
      {"type", "object"},
      {"properties",
       {{"causes",
         {{"type", "array"},
          {"items", {{"allOf", {{{"$ref", meta_ref("StatusCause")}}}}, {"default", json::object()}}},
          {"x-kubernetes-list-type", "atomic"}}},
        {"group", {{"type", "string"}}},
        {"kind", {{"type", "string"}}},
        {"name", {{"type", "string"}}},
        {"retryAfterSeconds", {{"type", "integer"}, {"format", "int32"}}},
        {"uid", {{"type", "string"}}}}}};
  schemas[std::string(kMeta) + "Status"] = {
      {"type", "object"},
      {"properties",
       {{"apiVersion", {{"type", "string"}}},
        {"code", {{"type", "integer"}, {"format", "int32"}}},
        {"details", {{"allOf", {{{"$ref", meta_ref("StatusDetails")}}}}}},
        {"kind", {{"type", "string"}}},
        {"message", {{"type", "string"}}},
        {"metadata", {{"allOf", {{{"$ref", meta_ref("ListMeta")}}}}, {"default", json::object()}}},
        {"reason", {{"type", "string"}}},
        {"status", {{"type", "string"}}}}},
      {"x-kubernetes-group-version-kind", {{{"group", ""}, {"kind", "Status"}, {"version", "v1"}}}}};
  schemas[std::string(kMeta) + "Preconditions"] = {
      {"type", "object"},
      {"properties", {{"resourceVersion", {{"type", "string"}}}, {"uid", {{"type", "string"}}}}}};
  schemas[std::string(kMeta) + "DeleteOptions"] = {
      {"type", "object"},
      {"properties",
       {{"apiVersion", {{"type", "string"}}},
        {"dryRun", {{"type", "array"}, {"items", {{"type", "string"}, {"default", ""}}}}},
        {"gracePeriodSeconds", {{"type", "integer"}, {"format", "int64"}}},
        {"kind", {{"type", "string"}}},
        {"orphanDependents", {{"type", "boolean"}}},
        {"preconditions", {{"allOf", {{{"$ref", meta_ref("Preconditions")}}}}}},
        {"propagationPolicy", {{"type", "string"}}}}}};
  schemas[std::string(kMeta) + "Patch"] = {{"type", "object"},
                                           {"description",
                                            "Patch is provided to give a concrete name and type "
                                            "to the Kubernetes PATCH request body."}};
}

json object_meta_schemas() {
  json schemas = json::object();
  add_meta_field_types(schemas);
  add_object_and_list_meta(schemas);
  add_status_types(schemas);
  return schemas;
}

json query_parameter(const std::string& name, const std::string& type, const std::string& description) {
  return {{"name", name},
          {"in", "query"},
          {"description", description},
          {"schema", {{"type", type}, {"uniqueItems", true}}}};
}

json path_parameter(const std::string& name, const std::string& description) {
  return {{"name", name},
          {"in", "path"},
          {"required", true},
          {"description", description},
          {"schema", {{"type", "string"}, {"uniqueItems", true}}}};
}

json write_parameters(bool patch) {
  json parameters = json::array({
      query_parameter("dryRun", "string",
                      "When present, indicates that modifications should not be persisted."),
      query_parameter("fieldManager", "string",
                      "A name associated with the actor or entity making these changes."),
      query_parameter("fieldValidation", "string",
                      "Instructs the server on how to handle objects in the request containing unknown or "
                      "duplicate fields: Ignore, Warn or Strict."),
  });
  if (patch)
    parameters.push_back(query_parameter("force", "boolean", "Force is going to \"force\" Apply requests."));
  return parameters;
}

json json_content(const std::string& schema_ref) {
  json content = json::object();
  for (const char* type : {"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}) {
    content[type] = {{"schema", {{"$ref", schema_ref}}}};
  }
  return content;
}

json operation(const std::string& id, const std::string& action, const json& gvk,
               const std::string& response_ref, json parameters = json::array(),
               json request_body = nullptr) {
  json op = {{"operationId", id},
             {"tags", {gvk.value("group", "") + "_" + gvk.value("version", "")}},
             {"description", action + " the specified resource"},
             {"parameters", std::move(parameters)},
             {"responses",
              {{"200", {{"description", "OK"}, {"content", json_content(response_ref)}}},
               {"401", {{"description", "Unauthorized"}}}}},
             {"x-kubernetes-action", action},
             {"x-kubernetes-group-version-kind", gvk}};
  if (!request_body.is_null()) op["requestBody"] = std::move(request_body);
  return op;
}

json patch_body() {
  json content = json::object();
  for (const char* type : {"application/json-patch+json", "application/merge-patch+json",
                           "application/strategic-merge-patch+json", "application/apply-patch+yaml"}) {
    content[type] = {{"schema", {{"$ref", meta_ref("Patch")}}}};
  }
  return {{"content", content}, {"required", true}};
}

// The schema kube publishes for a CRD version: the structural schema plus apiVersion, kind and
// metadata (as ObjectMeta) and the x-kubernetes-group-version-kind that clients look up.
json resource_schema(const json& crd_schema, const json& gvk) {
  json schema = crd_schema.is_object() ? crd_schema : json{{"type", "object"}};
  if (!schema.contains("type")) schema["type"] = "object";
  json& properties = schema["properties"];
  if (!properties.is_object()) properties = json::object();
  properties["apiVersion"] = {{"type", "string"},
                              {"description",
                               "APIVersion defines the versioned schema of this representation "
                               "of an object."}};
  properties["kind"] = {{"type", "string"},
                        {"description",
                         "Kind is a string value representing the REST resource this object "
                         "represents."}};
  properties["metadata"] = {{"allOf", {{{"$ref", meta_ref("ObjectMeta")}}}},
                            {"description", "Standard object's metadata."}};
  schema["x-kubernetes-group-version-kind"] = json::array({gvk});
  return schema;
}

json list_schema(const std::string& item_ref, const json& list_gvk) {
  return {{"type", "object"},
          {"required", {"items"}},
          {"properties",
           {{"apiVersion", {{"type", "string"}}},
            {"items", {{"type", "array"}, {"items", {{"$ref", item_ref}}}}},
            {"kind", {{"type", "string"}}},
            {"metadata", {{"allOf", {{{"$ref", meta_ref("ListMeta")}}}}, {"default", json::object()}}}}},
          {"x-kubernetes-group-version-kind", json::array({list_gvk})}};
}

// The query parameters of list, watch and deletecollection.
json list_query_parameters() {
  return json::array(
      {query_parameter("continue", "string",
                       "The continue option should be set when retrieving more results."),
       query_parameter("fieldSelector", "string",
                       "A selector to restrict the list of returned objects by fields."),
       query_parameter("labelSelector", "string",
                       "A selector to restrict the list of returned objects by labels."),
       query_parameter("limit", "integer", "The maximum number of responses to return for a list call."),
       query_parameter("resourceVersion", "string",
                       "Constrains the resource versions a request may be served from."),
       query_parameter("watch", "boolean", "Watch for changes to the described resources.")});
}

// GET, PUT and PATCH of the status subresource.
json status_path(const std::string& suffix, const json& gvk, const std::string& item_ref,
                 const json& parameters, const json& body) {
  return {
      {"parameters", parameters},
      {"get", operation("read" + suffix + "Status", "get", gvk, item_ref)},
      {"put", operation("replace" + suffix + "Status", "put", gvk, item_ref, write_parameters(false), body)},
      {"patch",
       operation("patch" + suffix + "Status", "patch", gvk, item_ref, write_parameters(true), patch_body())}};
}

void add_resource(json& document, const std::string& group, const std::string& version, const json& crd,
                  const json& version_entry) {
  const json& names = crd["spec"]["names"];
  const std::string kind = string_member(names, "kind");
  const std::string list_kind =
      string_member(names, "listKind").empty() ? kind + "List" : string_member(names, "listKind");
  const std::string plural = string_member(names, "plural");
  const bool namespaced = string_member(crd["spec"], "scope") == "Namespaced";
  const std::string prefix = reversed_group(group) + "." + version + ".";
  const json gvk = {{"group", group}, {"kind", kind}, {"version", version}};
  const json list_gvk = {{"group", group}, {"kind", list_kind}, {"version", version}};
  const json* schema_wrapper = member(version_entry, "schema");
  const json* crd_schema = schema_wrapper ? member(*schema_wrapper, "openAPIV3Schema") : nullptr;
  const std::string item_ref = "#/components/schemas/" + prefix + kind;
  const std::string list_ref = "#/components/schemas/" + prefix + list_kind;
  document["components"]["schemas"][prefix + kind] = resource_schema(crd_schema ? *crd_schema : json(), gvk);
  document["components"]["schemas"][prefix + list_kind] = list_schema(item_ref, list_gvk);

  const std::string base = "/apis/" + group + "/" + version + "/";
  const std::string collection = base + (namespaced ? "namespaces/{namespace}/" : "") + plural;
  const json name_parameter = path_parameter("name", "name of the " + kind);
  json scope_parameters = json::array();
  if (namespaced) scope_parameters.push_back(path_parameter("namespace", "object name and auth scope"));
  const json list_parameters = list_query_parameters();
  const std::string suffix = kind + (namespaced ? "Namespaced" : "");
  const json body = {{"content", json_content(item_ref)}, {"required", true}};
  auto& paths = document["paths"];
  paths[collection] = {
      {"parameters", scope_parameters},
      {"get", operation("list" + suffix, "list", gvk, list_ref, list_parameters)},
      {"post", operation("create" + suffix, "post", gvk, item_ref, write_parameters(false), body)},
      {"delete",
       operation("deletecollection" + suffix, "deletecollection", gvk, meta_ref("Status"), list_parameters)}};
  json item_parameters = scope_parameters;
  item_parameters.push_back(name_parameter);
  paths[collection + "/{name}"] = {
      {"parameters", item_parameters},
      {"get", operation("read" + suffix, "get", gvk, item_ref)},
      {"put", operation("replace" + suffix, "put", gvk, item_ref, write_parameters(false), body)},
      {"patch", operation("patch" + suffix, "patch", gvk, item_ref, write_parameters(true), patch_body())},
      {"delete", operation("delete" + suffix, "delete", gvk, meta_ref("Status"))}};
  const json* subresources = member(version_entry, "subresources");
  if (subresources && member(*subresources, "status")) {
    paths[collection + "/{name}/status"] = status_path(suffix, gvk, item_ref, item_parameters, body);
  }
  if (namespaced) {
    paths[base + plural] = {
        {"get", operation("list" + kind + "ForAllNamespaces", "list", gvk, list_ref, list_parameters)}};
  }
}

}  // namespace

nlohmann::json openapi_v3_for_group_version(const std::string& group, const std::string& version,
                                            const std::vector<nlohmann::json>& crds) {
  json document = {{"openapi", "3.0.0"},
                   {"info", {{"title", "Kubernetes CRD Swagger"}, {"version", "v0.1.0"}}},
                   {"paths", json::object()},
                   {"components", {{"schemas", object_meta_schemas()}}}};
  for (const auto& crd : crds) {
    const auto* spec = member(crd, "spec");
    if (!spec || string_member(*spec, "group") != group) continue;
    const auto* names = member(*spec, "names");
    const auto* versions = member(*spec, "versions");
    if (!names || !versions || !versions->is_array()) continue;
    for (const auto& entry : *versions) {
      if (string_member(entry, "name") == version && flag(entry, "served"))
        add_resource(document, group, version, crd, entry);
    }
  }
  return document;
}

}  // namespace eslease::kubeemu::schema
