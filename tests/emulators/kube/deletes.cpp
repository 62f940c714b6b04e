// DELETE and DELETE of a collection: DeleteOptions, preconditions, finalizers, graceful pod
// deletion, propagationPolicy (Background, Foreground, Orphan), and the calls the garbage
// collector makes.
#include <algorithm>

#include "common/text.h"
#include "emulators/kube/api_server.h"
#include "emulators/kube/object_meta.h"
#include "emulators/kube/protobuf.h"
#include "emulators/kube/selectors.h"
#include "emulators/kube/write_support.h"

namespace eslease::kubeemu {

using nlohmann::json;

void ApiServer::erase_namespace_contents(const std::string& ns) {
  for (const auto& type : registry_.all()) {
    if (!type->namespaced) continue;
    for (const auto& [object_ns, name] : store_.keys(type->id(), ns))
      store_.erase(type->id(), object_ns, name);
  }
}

std::variant<json, ApiError> ApiServer::delete_options(const Call& call) {
  // As the delete handler: DeleteOptions from the body when there is one, else from the
  // query (kubectl sends a body; curl users tend to use ?gracePeriodSeconds=0).
  json options = json::object();
  if (!trim(call.request->body).empty()) {
    const std::string content_type =
        to_lower(call.request->header("Content-Type").value_or("application/json"));
    if (content_type.find("application/vnd.kubernetes.protobuf") != std::string::npos) {
      auto decoded = decode_kubernetes_protobuf(call.request->body);
      if (!decoded || decoded->value("kind", "") != "DeleteOptions") {
        return bad_request("the object provided is unrecognized or malformed");
      }
      return *decoded;
    }
    options = json::parse(call.request->body, nullptr, false);
    if (!options.is_object()) return bad_request("the object provided is unrecognized or malformed");
    if (options.contains("gracePeriodSeconds")) {
      const json& grace = options["gracePeriodSeconds"];
      if (!grace.is_null() && !grace.is_number_integer()) {
        return bad_request(std::string("json: cannot unmarshal ") + grace.type_name() +
                           " into Go struct field DeleteOptions.gracePeriodSeconds of type int64");
      }
    }
    return options;
  }
  if (auto it = call.query.find("gracePeriodSeconds"); it != call.query.end()) {
    const std::string& text = it->second;
    std::size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (text.empty() || used != text.size()) {
      return bad_request("strconv.ParseInt: parsing " + json(text).dump() + ": invalid syntax");
    }
    options["gracePeriodSeconds"] = static_cast<std::int64_t>(value);
  }
  if (auto it = call.query.find("propagationPolicy"); it != call.query.end()) {
    options["propagationPolicy"] = it->second;
  }
  if (auto it = call.query.find("orphanDependents"); it != call.query.end()) {
    options["orphanDependents"] = call.flag("orphanDependents");
  }
  return options;
}

namespace {

// DeleteOptions.propagationPolicy, or the registry's default (Background: the object goes at
// once and the garbage collector deletes its dependents after it). The deprecated
// orphanDependents=true means Orphan.
std::variant<std::string, ApiError> propagation_policy(const json& options) {
  const json policy = options.contains("propagationPolicy") ? options["propagationPolicy"] : json();
  const json orphan = options.contains("orphanDependents") ? options["orphanDependents"] : json();
  if (!policy.is_null() && !orphan.is_null()) {
    return invalid(
        "meta.k8s.io", "DeleteOptions", "",
        {{"FieldValueInvalid",
          "Invalid value: " + orphan.dump() + ": Cannot both set OrphanDependents and PropagationPolicy",
          "orphanDependents"}});
  }
  if (orphan.is_boolean()) return std::string(orphan.get<bool>() ? "Orphan" : "Background");
  if (policy.is_null()) return std::string("Background");
  if (policy != "Orphan" && policy != "Background" && policy != "Foreground") {
    return invalid("meta.k8s.io", "DeleteOptions", "",
                   {{"FieldValueNotSupported",
                     "Unsupported value: " + policy.dump() +
                         ": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
                     "propagationPolicy"}});
  }
  return policy.get<std::string>();
}

// The finalizer a Foreground or Orphan deletion puts on the object (the garbage collector
// removes it once the dependents are deleted or orphaned).
std::string policy_finalizer(const std::string& policy) {
  if (policy == "Foreground") return "foregroundDeletion";
  if (policy == "Orphan") return "orphan";
  return "";
}

// DeleteOptions.preconditions on uid and resourceVersion that the object does not meet.
std::optional<ApiError> precondition_failure(const ResourceType& type, const std::string& name,
                                             const json& meta, const json& options) {
  if (!options.contains("preconditions") || !options["preconditions"].is_object()) return std::nullopt;
  const json& pre = options["preconditions"];
  if (pre.contains("uid") && pre["uid"].is_string() && pre["uid"] != meta.value("uid", "")) {
    return conflict(type.group, type.plural, name,
                    "Precondition failed: UID in precondition: " + pre["uid"].get<std::string>() +
                        ", UID in object meta: " + meta.value("uid", ""));
  }
  if (pre.contains("resourceVersion") && pre["resourceVersion"].is_string() &&
      pre["resourceVersion"] != meta.value("resourceVersion", "")) {
    return conflict(
        type.group, type.plural, name,
        "Precondition failed: ResourceVersion in precondition: " + pre["resourceVersion"].get<std::string>() +
            ", ResourceVersion in object meta: " + meta.value("resourceVersion", ""));
  }
  return std::nullopt;
}

}  // namespace

std::variant<std::pair<int, json>, ApiError> ApiServer::delete_object(const Call& call, const std::string& ns,
                                                                      const std::string& name,
                                                                      const json& options) {
  const auto& type = *call.type;
  auto current = store_.get(type.id(), ns, name);
  if (!current) return not_found(type.group, type.plural, name);
  const json& meta = (*current)["metadata"];
  if (type.id() == kNamespaceId && (name == "default" || name == "kube-system" || name == "kube-public")) {
    return forbidden("", "namespaces", name, "this namespace may not be deleted");
  }
  if (auto failed = precondition_failure(type, name, meta, options)) return *failed;
  auto policy = propagation_policy(options);
  if (auto* error = std::get_if<ApiError>(&policy)) return *error;
  const std::string finalizer = policy_finalizer(std::get<std::string>(policy));
  if (!finalizer.empty() && type.id() != kNamespaceId && !meta.contains("deletionTimestamp")) {
    // The finalizer is written first, so the deletion below waits for the garbage collector.
    json next = *current;
    auto finalizers = finalizers_of(next);
    if (std::find(finalizers.begin(), finalizers.end(), finalizer) == finalizers.end()) {
      next["metadata"]["finalizers"].push_back(finalizer);
      current = store_.put(type.id(), ns, name, std::move(next));
    }
  }
  const json& live_meta = (*current)["metadata"];
  if (type.id() == "/pods" && options_.simulate_kubelet) {
    std::optional<std::int64_t> grace;
    if (options.contains("gracePeriodSeconds") && options["gracePeriodSeconds"].is_number_integer()) {
      grace = options["gracePeriodSeconds"].get<std::int64_t>();
    }
    auto outcome = delete_pod(store_, current, grace, clock_.now());
    return std::make_pair(200, *outcome.object);
  }
  if (!finalizers_of(*current).empty() && type.id() != kNamespaceId) {
    if (live_meta.contains("deletionTimestamp")) return std::make_pair(200, present(call, *current));
    json next = *current;
    next["metadata"]["deletionTimestamp"] = format_rfc3339_seconds(clock_.now());
    next["metadata"]["deletionGracePeriodSeconds"] = 0;
    if (next["metadata"].contains("generation")) {
      next["metadata"]["generation"] = next["metadata"].value("generation", 0) + 1;
    }
    auto stored = store_.put(type.id(), ns, name, std::move(next));
    return std::make_pair(200, present(call, *stored));
  }
  if (type.id() == kNamespaceId) {
    // No namespace controller: contents go at once and the namespace follows.
    erase_namespace_contents(name);
    auto gone = store_.erase(type.id(), ns, name);
    json shown = *gone;
    shown["metadata"]["deletionTimestamp"] = format_rfc3339_seconds(clock_.now());
    shown["status"]["phase"] = "Terminating";
    return std::make_pair(200, shown);
  }
  auto gone = store_.erase(type.id(), ns, name);
  if (type.id() == kCrdId) unregister_crd(*gone);
  if (type.returns_deleted_object) return std::make_pair(200, present(call, *gone));
  return std::make_pair(200, success_status(type.group, type.plural, name, meta_string(*gone, "uid")));
}

void ApiServer::remove(const Call& call, http::ServerResponse& response) {
  auto parsed = delete_options(call);
  if (auto* error = std::get_if<ApiError>(&parsed)) return send_error(response, *error);
  const json& options = std::get<json>(parsed);
  std::lock_guard lock(mutex_);
  auto result = delete_object(call, call.ns, call.name, options);
  if (auto* error = std::get_if<ApiError>(&result)) return send_error(response, *error);
  auto& [code, body] = std::get<std::pair<int, json>>(result);
  send_json(response, code, body);
}

void ApiServer::remove_collection(const Call& call, http::ServerResponse& response) {
  auto selectors = Selectors::parse(call.param("labelSelector"), call.param("fieldSelector"),
                                    call.type->extra_field_labels);
  if (auto* error = std::get_if<ApiError>(&selectors)) return send_error(response, *error);
  const Selectors& filter = std::get<Selectors>(selectors);
  auto parsed = delete_options(call);
  if (auto* error = std::get_if<ApiError>(&parsed)) return send_error(response, *error);
  // Applied to every object, as DeleteCollection passes them to each Delete.
  const json& options = std::get<json>(parsed);
  std::vector<std::pair<std::string, std::string>> matched;  // namespace, name
  {
    std::lock_guard lock(mutex_);
    for (const auto& object : store_.list(call.type->id(), call.ns))
      if (filter.matches(*object))
        matched.emplace_back(meta_string(*object, "namespace"), meta_string(*object, "name"));
  }
  // One at a time, the store free between them, as the API server deletes each item of the
  // collection on its own: watchers see each deletion as it happens, and other requests are
  // served meanwhile. One gone in between is left out.
  json items = json::array();
  for (const auto& [ns, name] : matched) {
    std::lock_guard lock(mutex_);
    auto result = delete_object(call, ns, name, options);
    if (auto* ok = std::get_if<std::pair<int, json>>(&result);
        ok && ok->second.value("kind", "") != "Status") {
      items.push_back(ok->second);
    }
  }
  std::lock_guard lock(mutex_);
  send_json(response, 200,
            {{"kind", call.type->list_kind},
             {"apiVersion", call.type->group_version(call.version)},
             {"metadata", {{"resourceVersion", std::to_string(store_.current_rv())}}},
             {"items", items}});
}

ApiServer::Call ApiServer::internal_call(const ResourceRegistry::TypePtr& type, const std::string& verb,
                                         const std::string& ns, const std::string& name) const {
  Call call;
  call.verb = verb;
  call.type = type;
  call.version = type->versions.front().name;
  call.ns = ns;
  call.name = name;
  call.acting_manager = "generic-garbage-collector";
  return call;
}

void ApiServer::collect_delete(const ResourceRegistry::TypePtr& type, const std::string& ns,
                               const std::string& name, const json& options) {
  counters_.count("delete", type->plural);
  delete_object(internal_call(type, "delete", ns, name), ns, name, options);
}

void ApiServer::collect_update(const ResourceRegistry::TypePtr& type, const ObjectPtr& current, json next) {
  counters_.count("update", type->plural);
  const Call call =
      internal_call(type, "update", meta_string(*current, "namespace"), meta_string(*current, "name"));
  std::vector<std::string> warnings;
  commit_update(call, current, std::move(next), warnings);
}

}  // namespace eslease::kubeemu
