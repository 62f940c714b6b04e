// POST, PUT and PATCH (merge, JSON and strategic merge) of ApiServer, with the generic
// registry's metadata rules, status subresource rules, optimistic concurrency, finalizers
// and the managedFields every write records.
#include <algorithm>

#include "common/text.h"
#include "emulators/kube/api_server.h"
#include "emulators/kube/object_meta.h"
#include "emulators/kube/patch.h"
#include "emulators/kube/schema/schema.h"
#include "emulators/kube/strategic_merge.h"
#include "emulators/kube/write_support.h"

namespace eslease::kubeemu {

using nlohmann::json;

namespace {

const char* kModified =
    "the object has been modified; please apply your changes to the latest version and try again";

void copy_or_erase(json& to, const json& from, const char* key) {
  if (from.is_object() && from.contains(key)) {
    to[key] = from[key];
  } else {
    to.erase(key);
  }
}

bool same_ownership(const std::vector<ManagerEntry>& a, const std::vector<ManagerEntry>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].same_manager(b[i]) || a[i].fields != b[i].fields) return false;
  }
  return true;
}

// The object a PUT or PATCH stores: through /status only the status changes; otherwise the
// metadata the server owns (and, with a status subresource, the status) stays as stored.
json updated_object(const ResourceType& type, const std::string& version, bool status_write, const json& old,
                    json desired) {
  if (status_write) {
    json next = old;
    copy_or_erase(next, desired, "status");
    return next;
  }
  json next = std::move(desired);
  json& meta = next["metadata"];
  const json& old_meta = old["metadata"];
  for (const char* key : {"name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                          "deletionGracePeriodSeconds", "generation"}) {
    copy_or_erase(meta, old_meta, key);
  }
  next["kind"] = type.kind;
  if (type.has_status_subresource(version)) copy_or_erase(next, old, "status");
  return next;
}

// No new finalizers while an object is being deleted (422).
std::optional<ApiError> new_finalizer_refusal(const ResourceType& type, const std::string& name,
                                              const json& old, const json& next) {
  if (!old["metadata"].contains("deletionTimestamp")) return std::nullopt;
  const auto before = finalizers_of(old);
  for (const auto& f : finalizers_of(next)) {
    if (std::find(before.begin(), before.end(), f) == before.end()) {
      return invalid(type.group, type.kind, name,
                     {{"FieldValueForbidden",
                       "Forbidden: no new finalizers can be added if the object is being deleted, found "
                       "new finalizers []string{" +
                           json(f).dump() + "}",
                       "metadata.finalizers"}});
    }
  }
  return std::nullopt;
}

// A body's managedFields of [{}] clears them, as kube-apiserver allows; otherwise the server
// keeps its own record.
bool clears_managed_fields(const json& desired) {
  const json* sent_fields = desired.contains("metadata") && desired["metadata"].is_object() &&
                                    desired["metadata"].contains("managedFields")
                                ? &desired["metadata"]["managedFields"]
                                : nullptr;
  return sent_fields && *sent_fields == json::array({json::object()});
}

// A CRD as updated, defaulted, and what its validation refuses.
std::optional<ApiError> defaulted_crd_refusal(const std::string& name, json& crd) {
  default_crd(crd);
  auto causes = schema::validate_crd(crd);
  if (causes.empty()) return std::nullopt;
  return invalid("apiextensions.k8s.io", "CustomResourceDefinition", name, to_causes(causes));
}

// shouldDeleteDuringUpdate: removing the last finalizer removes the object only once its
// deletion no longer waits on a grace period (a terminating pod waits for its kubelet).
bool deletes_during_update(const json& old, const json& next) {
  const json& old_meta = old["metadata"];
  const auto old_grace = old_meta.find("deletionGracePeriodSeconds");
  return old_meta.contains("deletionTimestamp") && !finalizers_of(old).empty() &&
         finalizers_of(next).empty() && old_grace != old_meta.end() && old_grace->is_number_integer() &&
         *old_grace == 0;
}

// The namespace of a created object (the request's), and no resourceVersion from the client.
std::optional<ApiError> place_new_object(const ResourceType& type, const std::string& ns, json& meta) {
  if (type.namespaced) {
    const std::string body_ns = meta.value("namespace", "");
    if (!body_ns.empty() && body_ns != ns) {
      return bad_request(
          "the namespace of the provided object does not match the namespace sent on the request");
    }
    meta["namespace"] = ns;
  } else {
    meta.erase("namespace");
  }
  if (meta.contains("resourceVersion") && !meta["resourceVersion"].is_null() &&
      meta["resourceVersion"] != "") {
    return bad_request("resourceVersion should not be set on objects to be created");
  }
  return std::nullopt;
}

// The name of a created object, generated from generateName when it has none; "" if neither.
std::string name_new_object(json& meta) {
  std::string name = meta.value("name", "");
  const std::string generate = meta.value("generateName", "");
  if (name.empty() && !generate.empty()) {
    name = generate_name(generate);
    meta["name"] = name;
  }
  return name;
}

// The status a created pod or namespace starts with.
void start_builtin_status(const std::string& id, bool simulate_kubelet, const std::string& name,
                          json& object) {
  if (id == "/pods" && simulate_kubelet) {
    // As the pod strategy does; the simulated kubelet takes it from there.
    reset_created_pod_status(object);
  } else if (id == "/pods") {
    // No kubelet: the status given is kept, so tests can seed Ready pods.
    if (!object.contains("status") || !object["status"].is_object()) object["status"] = json::object();
    if (!object["status"].contains("phase")) object["status"]["phase"] = "Pending";
  } else if (id == kNamespaceId) {
    object["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
    object["spec"]["finalizers"] = {"kubernetes"};
    object["status"] = {{"phase", "Active"}};
  }
}

}  // namespace

void ApiServer::create(const Call& call, http::ServerResponse& response) {
  if (!call.subresource.empty())
    return send_error(response, method_not_supported(call.type->group, call.type->plural, "create"));
  auto decoded = decode_body(*call.request);
  if (auto* error = std::get_if<ApiError>(&decoded)) return send_error(response, *error);
  json object = std::move(std::get<json>(decoded));
  if (auto error = check_type_meta(object, *call.type, call.version)) return send_error(response, *error);
  std::vector<std::string> warnings;
  std::lock_guard lock(mutex_);
  auto result = create_object(call, std::move(object), warnings, nullptr);
  if (auto* error = std::get_if<ApiError>(&result)) return send_error(response, *error);
  auto& [code, body] = std::get<std::pair<int, json>>(result);
  send_json(response, code, body, warnings);
}

std::variant<std::pair<int, json>, ApiError> ApiServer::create_object(
    const Call& call, json object, std::vector<std::string>& warnings,
    const std::vector<ManagerEntry>* applied) {
  json& meta = object["metadata"];
  if (auto error = place_new_object(*call.type, call.ns, meta)) return *error;
  const std::string name = name_new_object(meta);
  std::vector<StatusCause> causes;
  if (name.empty()) {
    causes.push_back(
        {"FieldValueRequired", "Required value: name or generateName is required", "metadata.name"});
  } else {
    causes = validate_object_name(name, call.type->id() == kNamespaceId);
  }
  const std::string now = format_rfc3339_seconds(clock_.now());
  meta["uid"] = random_uid();
  meta["creationTimestamp"] = now;
  meta.erase("deletionTimestamp");
  meta.erase("deletionGracePeriodSeconds");
  meta.erase("managedFields");
  if (call.type->bumps_generation) meta["generation"] = 1;
  if (call.type->custom && call.type->has_status_subresource(call.version)) object.erase("status");
  if (call.type->custom) {
    if (auto error = admit_custom(call, object, warnings)) {
      if (error->code != 422 || causes.empty()) return *error;
      for (const auto& c : error->details.value("causes", json::array())) {
        causes.push_back({c.value("reason", ""), c.value("message", ""), c.value("field", "")});
      }
    }
  }
  if (!causes.empty()) return invalid(call.type->group, call.type->kind, name, causes);
  if (call.type->namespaced && !store_.get(kNamespaceId, "", call.ns))
    return not_found("", "namespaces", call.ns);
  if (store_.get(call.type->id(), call.ns, name))
    return already_exists(call.type->group, call.type->plural, name);
  if (applied) {
    write_managed_fields(object, *applied);
  } else {
    std::vector<ManagerEntry> managers;
    record_update(managers, writer(call, "Update"), {}, tracked_fields(call, object), json::object(), object);
    write_managed_fields(object, managers);
  }
  const std::string id = call.type->id();
  if (id == "/pods" || id == kNamespaceId) {
    start_builtin_status(id, options_.simulate_kubelet, name, object);
  } else if (id == kCrdId) {
    default_crd(object);
    if (auto error = register_crd(object)) return *error;
    object["status"] = crd_status(object, now);
  }
  auto stored = store_.put(id, call.ns, name, std::move(object));
  return std::make_pair(201, present(call, *stored));
}

ManagerEntry ApiServer::writer(const Call& call, const std::string& operation) const {
  ManagerEntry who;
  who.manager = call.param("fieldManager");
  if (who.manager.empty() && call.request)
    who.manager = default_manager(call.request->header("User-Agent").value_or(""));
  if (who.manager.empty()) who.manager = call.acting_manager;
  who.operation = operation;
  who.api_version = call.type->group_version(call.version);
  who.time = format_rfc3339_seconds(clock_.now());
  who.subresource = call.subresource;
  return who;
}

ListTypes ApiServer::list_types(const Call& call) const {
  if (!call.type->custom) return builtin_list_types(call.type->id());
  const auto* version = call.type->version(call.version);
  return version && version->list_types ? version->list_types : schema_list_types(json::object());
}

FieldSet ApiServer::tracked_fields(const Call& call, const json& object) const {
  // A status subresource's writes own status fields only; the main resource's none of them.
  if (call.subresource == "status") {
    return fields_of(json{{"status", object.contains("status") ? object["status"] : json()}},
                     list_types(call), true);
  }
  // A scale write owns spec.replicas only.
  if (call.subresource == "scale") {
    const json replicas = object.contains("spec") ? object["spec"].value("replicas", json()) : json();
    return fields_of(json{{"spec", {{"replicas", replicas}}}}, list_types(call), true);
  }
  return fields_of(object, list_types(call), !call.type->has_status_subresource(call.version));
}

std::variant<std::pair<int, json>, ApiError> ApiServer::commit_update(
    const Call& call, const ObjectPtr& current, json desired, std::vector<std::string>& warnings,
    const std::vector<ManagerEntry>* applied) {
  const json& old = *current;
  const auto& type = *call.type;
  const std::string name = meta_string(old, "name");
  const std::string wanted_rv = meta_string(desired, "resourceVersion");
  if (!wanted_rv.empty() && wanted_rv != meta_string(old, "resourceVersion")) {
    return conflict(type.group, type.plural, name, kModified);
  }
  const bool clear_fields = clears_managed_fields(desired);
  json next = updated_object(type, call.version, call.subresource == "status", old, std::move(desired));
  if (type.custom) {
    if (auto error = admit_custom(call, next, warnings)) return *error;
  }
  if (auto error = new_finalizer_refusal(type, name, old, next)) return *error;
  if (type.bumps_generation && spec_changed(old, next)) {
    next["metadata"]["generation"] = old["metadata"].value("generation", 0) + 1;
  }
  if (type.id() == kCrdId && call.subresource.empty()) {
    if (auto error = defaulted_crd_refusal(name, next)) return *error;
  }
  // An update that changes nothing is not written: no new resourceVersion, no event, and
  // managedFields stay as they were.
  next["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"];
  json relabelled;
  const json& old_shown = shown(call, old, relabelled);
  next["metadata"]["managedFields"] =
      old["metadata"].contains("managedFields") ? old["metadata"]["managedFields"] : json();
  if (next["metadata"]["managedFields"].is_null()) next["metadata"].erase("managedFields");
  // An apply that changes no value may still change who owns what; a new time alone is no change.
  const bool ownership_changed = applied && !same_ownership(read_managed_fields(old), *applied);
  if (next == old_shown && !clear_fields && !ownership_changed) return std::make_pair(200, old_shown);
  if (applied) {
    write_managed_fields(next, *applied);
  } else if (clear_fields) {
    next["metadata"].erase("managedFields");  // the write that strips them records nothing
  } else {
    auto managers = read_managed_fields(old);
    record_update(managers, writer(call, "Update"), tracked_fields(call, old), tracked_fields(call, next),
                  old, next);
    write_managed_fields(next, managers);
  }
  const std::string ns = meta_string(old, "namespace");
  if (deletes_during_update(old, next)) {
    auto gone = store_.erase(type.id(), ns, name);
    if (type.id() == kCrdId) unregister_crd(*gone);
    return std::make_pair(200, present(call, *gone));
  }
  if (type.id() == kCrdId && call.subresource.empty()) {
    if (auto error = register_crd(next)) return *error;
  }
  auto stored = store_.put(type.id(), ns, name, std::move(next));
  return std::make_pair(200, present(call, *stored));
}

void ApiServer::update(const Call& call, http::ServerResponse& response) {
  auto decoded = decode_body(*call.request);
  if (auto* error = std::get_if<ApiError>(&decoded)) return send_error(response, *error);
  json object = std::move(std::get<json>(decoded));
  if (auto error = check_type_meta(object, *call.type, call.version)) return send_error(response, *error);
  const std::string body_name = object["metadata"].value("name", "");
  if (body_name != call.name) {
    return send_error(response, bad_request("the name of the object (" + body_name +
                                            ") does not match the name on the URL (" + call.name + ")"));
  }
  const std::string body_ns = object["metadata"].value("namespace", "");
  if (call.type->namespaced && !body_ns.empty() && body_ns != call.ns) {
    return send_error(
        response,
        bad_request("the namespace of the provided object does not match the namespace sent on the request"));
  }
  std::vector<std::string> warnings;
  std::lock_guard lock(mutex_);
  auto current = store_.get(call.type->id(), call.ns, call.name);
  if (!current) return send_error(response, not_found(call.type->group, call.type->plural, call.name));
  auto result = commit_update(call, current, std::move(object), warnings);
  if (auto* error = std::get_if<ApiError>(&result)) return send_error(response, *error);
  auto& [code, body] = std::get<std::pair<int, json>>(result);
  send_json(response, code, body, warnings);
}

void ApiServer::patch(const Call& call, http::ServerResponse& response) {
  const std::string content_type = call.request->header("Content-Type").value_or("");
  const PatchType type = patch_type_of(content_type);
  if (type == PatchType::kApply) return apply(call, response);
  const bool supported = type == PatchType::kMerge || type == PatchType::kJson ||
                         (type == PatchType::kStrategicMerge && !call.type->custom);
  if (!supported) {
    std::vector<std::string> accepted = {"application/json-patch+json", "application/merge-patch+json"};
    if (!call.type->custom) accepted.push_back("application/strategic-merge-patch+json");
    accepted.push_back("application/apply-patch+yaml");
    return send_error(response, unsupported_media_type(content_type, accepted));
  }
  if (call.query.count("force")) {
    return send_error(
        response,
        invalid("meta.k8s.io", "PatchOptions", "",
                {{"FieldValueForbidden", "Forbidden: may not be specified for non-apply patch", "force"}}));
  }
  std::vector<std::string> warnings;
  // The answer is written once the store is free again.
  auto result = [&]() -> std::variant<std::pair<int, json>, ApiError> {
    std::lock_guard lock(mutex_);
    auto current = store_.get(call.type->id(), call.ns, call.name);
    if (!current) return not_found(call.type->group, call.type->plural, call.name);
    json target = present(call, *current);
    if (type == PatchType::kStrategicMerge) {
      json patch = json::parse(call.request->body, nullptr, false);
      if (patch.is_discarded()) return bad_request("error decoding patch: invalid character in patch body");
      if (auto error = strategic_merge(target, patch, list_types(call))) return *error;
    } else if (auto error = apply_patch(type, call.request->body, target)) {
      return *error;
    }
    if (!target.is_object() || !target.contains("metadata") || !target["metadata"].is_object())
      return patch_rejected();
    return commit_update(call, current, std::move(target), warnings);
  }();
  if (auto* error = std::get_if<ApiError>(&result)) return send_error(response, *error);
  auto& [code, body] = std::get<std::pair<int, json>>(result);
  send_json(response, code, body, warnings);
}

}  // namespace eslease::kubeemu
