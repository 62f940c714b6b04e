// The scale subresource of Deployments, ReplicaSets and StatefulSets (autoscaling/v1 Scale),
// which `kubectl scale` reads and patches: GET, PUT and PATCH change spec.replicas only.
#include "emulators/kube/api_server.h"
#include "emulators/kube/patch.h"
#include "emulators/kube/write_support.h"

namespace eslease::kubeemu {

using nlohmann::json;

namespace {

// matchLabels as a label selector string ("app=web,tier=front"), as Scale.status.selector.
std::string selector_string(const json& object) {
  std::string out;
  const json* selector = nullptr;
  if (object.contains("spec") && object["spec"].is_object() && object["spec"].contains("selector")) {
    selector = &object["spec"]["selector"];
  }
  if (selector == nullptr || !selector->is_object()) return out;
  if (auto labels = selector->find("matchLabels"); labels != selector->end() && labels->is_object()) {
    for (const auto& [key, value] : labels->items()) {
      out += (out.empty() ? "" : ",") + key + "=" + (value.is_string() ? value.get<std::string>() : "");
    }
  }
  return out;
}

long long replicas_of(const json& object, const char* part) {
  if (!object.contains(part) || !object[part].is_object()) return 0;
  const json& replicas = object[part].value("replicas", json());
  return replicas.is_number_integer() ? replicas.get<long long>() : (std::string(part) == "spec" ? 1 : 0);
}

json scale_of(const json& object) {
  const json& meta = object["metadata"];
  json metadata = json::object();
  for (const char* key : {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"}) {
    if (meta.contains(key)) metadata[key] = meta[key];
  }
  return {{"kind", "Scale"},
          {"apiVersion", "autoscaling/v1"},
          {"metadata", metadata},
          {"spec", {{"replicas", replicas_of(object, "spec")}}},
          {"status", {{"replicas", replicas_of(object, "status")}, {"selector", selector_string(object)}}}};
}

}  // namespace

bool has_scale_subresource(const ResourceType& type) {
  return type.id() == "apps/deployments" || type.id() == "apps/replicasets" ||
         type.id() == "apps/statefulsets";
}

void ApiServer::scale(const Call& call, http::ServerResponse& response) {
  std::lock_guard lock(mutex_);
  auto current = store_.get(call.type->id(), call.ns, call.name);
  if (!current) return send_error(response, not_found(call.type->group, call.type->plural, call.name));
  json scale = scale_of(*current);
  if (call.verb == "get") return send_json(response, 200, scale);
  if (call.verb == "update") {
    auto body = decode_body(*call.request);
    if (auto* error = std::get_if<ApiError>(&body)) return send_error(response, *error);
    scale = std::get<json>(std::move(body));
  } else {
    const PatchType type = patch_type_of(call.request->header("Content-Type").value_or(""));
    if (type != PatchType::kMerge && type != PatchType::kJson && type != PatchType::kStrategicMerge) {
      return send_error(response,
                        unsupported_media_type(call.request->header("Content-Type").value_or(""),
                                               {"application/json-patch+json", "application/merge-patch+json",
                                                "application/strategic-merge-patch+json"}));
    }
    // A Scale has no lists, so a strategic merge patch is a merge patch.
    const PatchType as = type == PatchType::kJson ? PatchType::kJson : PatchType::kMerge;
    if (auto error = apply_patch(as, call.request->body, scale)) return send_error(response, *error);
  }
  const json replicas = scale.is_object() && scale.contains("spec") && scale["spec"].is_object()
                            ? scale["spec"].value("replicas", json())
                            : json();
  const std::string name = call.name;
  if (!replicas.is_number_integer() || replicas.get<long long>() < 0) {
    return send_error(response,
                      invalid("autoscaling", "Scale", name,
                              {{"FieldValueInvalid",
                                "Invalid value: " + replicas.dump() + ": must be greater than or equal to 0",
                                "spec.replicas"}}));
  }
  json next = *current;
  next["spec"]["replicas"] = replicas;
  if (scale.contains("metadata") && scale["metadata"].is_object() &&
      scale["metadata"].contains("resourceVersion")) {
    next["metadata"]["resourceVersion"] = scale["metadata"]["resourceVersion"];
  } else {
    next["metadata"].erase("resourceVersion");
  }
  std::vector<std::string> warnings;
  auto result = commit_update(call, current, std::move(next), warnings);
  if (auto* error = std::get_if<ApiError>(&result)) return send_error(response, *error);
  send_json(response, 200, scale_of(std::get<std::pair<int, json>>(result).second), warnings);
}

}  // namespace eslease::kubeemu
