// Server-side apply (PATCH with application/apply-patch+yaml): PatchOptions checks, the
// applied configuration's type and name checks, then the merge with field ownership
// (managed_fields.h). An apply to an object that does not exist creates it.
#include "common/text.h"
#include "emulators/kube/api_server.h"
#include "emulators/kube/object_meta.h"
#include "emulators/kube/write_support.h"

namespace eslease::kubeemu {

using nlohmann::json;

namespace {

std::optional<ApiError> check_patch_options(const std::map<std::string, std::string>& query) {
  auto manager = query.find("fieldManager");
  if (manager == query.end() || manager->second.empty()) {
    return invalid("meta.k8s.io", "PatchOptions", "",
                   {{"FieldValueRequired", "Required value: is required for apply patch", "fieldManager"}});
  }
  if (manager->second.size() > 128) {
    return invalid("meta.k8s.io", "PatchOptions", "",
                   {{"FieldValueTooLong", "Too long: may not be more than 128 bytes", "fieldManager"}});
  }
  return std::nullopt;
}

// The applied configuration must name its type and the object of the URL.
std::optional<ApiError> check_config(const json& config, const ResourceType& type, const std::string& version,
                                     const std::string& ns, const std::string& name) {
  if (!config.is_object()) {
    return bad_request("error decoding YAML: the applied configuration is not an object");
  }
  const std::string kind = config.value("kind", "");
  const std::string api_version = config.value("apiVersion", "");
  if (kind.empty()) return bad_request("Object 'Kind' is missing in '" + config.dump() + "'");
  if (api_version.empty()) return bad_request("Object 'apiVersion' is missing in '" + config.dump() + "'");
  json typed = config;
  if (auto error = check_type_meta(typed, type, version)) return error;
  const json& meta = config.contains("metadata") ? config["metadata"] : json::object();
  if (!meta.is_object()) return bad_request("metadata must be an object");
  if (meta.contains("managedFields") && !meta["managedFields"].is_null()) {
    return bad_request("metadata.managedFields must be nil");
  }
  const std::string body_name = meta.value("name", "");
  if (body_name != name) {
    return bad_request("the name of the object (" + body_name + ") does not match the name on the URL (" +
                       name + ")");
  }
  const std::string body_ns = meta.value("namespace", "");
  if (type.namespaced && !body_ns.empty() && body_ns != ns) {
    return bad_request(
        "the namespace of the provided object does not match the namespace sent on the request");
  }
  return std::nullopt;
}

}  // namespace

void ApiServer::apply(const Call& call, http::ServerResponse& response) {
  if (auto error = check_patch_options(call.query)) return send_error(response, *error);
  auto parsed = schema::yaml_to_json(call.request->body);
  if (!parsed)
    return send_error(response, bad_request("error decoding YAML: the applied configuration is malformed"));
  json config = std::move(*parsed);
  if (auto error = check_config(config, *call.type, call.version, call.ns, call.name)) {
    return send_error(response, *error);
  }
  ApplyRequest request;
  request.applier = writer(call, "Apply");
  request.force = call.flag("force");
  request.lists = list_types(call);
  request.with_status = call.subresource == "status" || !call.type->has_status_subresource(call.version);
  if (call.subresource == "status")
    config = json{{"apiVersion", config["apiVersion"]},
                  {"kind", config["kind"]},
                  {"metadata", config["metadata"]},
                  {"status", config.value("status", json::object())}};
  std::vector<std::string> warnings;
  std::lock_guard lock(mutex_);
  auto current = store_.get(call.type->id(), call.ns, call.name);
  if (!current && !call.subresource.empty()) {
    return send_error(response, not_found(call.type->group, call.type->plural, call.name));
  }
  auto applied = server_side_apply(current ? present(call, *current) : json(), config, request);
  if (auto* error = std::get_if<ApiError>(&applied)) return send_error(response, *error);
  auto& [object, managers] = std::get<Applied>(applied);
  auto result = current ? commit_update(call, current, std::move(object), warnings, &managers)
                        : create_object(call, std::move(object), warnings, &managers);
  if (auto* error = std::get_if<ApiError>(&result)) return send_error(response, *error);
  auto& [code, body] = std::get<std::pair<int, json>>(result);
  send_json(response, code, body, warnings);
}

}  // namespace eslease::kubeemu
