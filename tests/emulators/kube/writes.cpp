// POST, PUT, PATCH and DELETE of ApiServer, with the generic registry's metadata rules,
// status subresource rules, optimistic concurrency and finalizers.
#include <algorithm>

#include "common/text.h"
#include "emulators/kube/api_server.h"
#include "emulators/kube/object_meta.h"
#include "emulators/kube/patch.h"
#include "emulators/kube/protobuf.h"
#include "emulators/kube/schema/schema.h"
#include "emulators/kube/selectors.h"

namespace eslease::kubeemu {

using nlohmann::json;

namespace {

const char* kCrdId = "apiextensions.k8s.io/customresourcedefinitions";
const char* kNamespaceId = "/namespaces";
const char* kModified =
    "the object has been modified; please apply your changes to the latest version and try again";

std::vector<StatusCause> to_causes(const std::vector<schema::Cause>& causes) {
  std::vector<StatusCause> out;
  for (const auto& c : causes) out.push_back({c.type, c.message, c.field});
  return out;
}

// Decodes a request body as the apiserver's JSON (or YAML) decoder would.
std::variant<json, ApiError> decode_body(const http::ServerRequest& request) {
  const std::string content_type = to_lower(request.header("Content-Type").value_or("application/json"));
  json object;
  if (content_type.find("application/vnd.kubernetes.protobuf") != std::string::npos) {
    auto decoded = decode_kubernetes_protobuf(request.body);
    if (!decoded) {
      return unsupported_media_type(content_type, {"application/json", "application/yaml"});
    }
    return std::move(*decoded);
  }
  if (content_type.find("json") == std::string::npos && content_type.find("yaml") == std::string::npos) {
    return unsupported_media_type(content_type, {"application/json", "application/yaml"});
  }
  if (content_type.find("yaml") != std::string::npos) {
    auto parsed = schema::yaml_to_json(request.body);
    if (!parsed) return bad_request("the object provided is unrecognized or malformed: invalid YAML");
    object = std::move(*parsed);
  } else {
    object = json::parse(request.body, nullptr, false);
    if (object.is_discarded()) {
      return bad_request(
          "the object provided is unrecognized or malformed: couldn't get version/kind; json parse error");
    }
  }
  if (!object.is_object())
    return bad_request("the object provided is unrecognized or malformed: not a JSON object");
  if (!object.contains("metadata")) object["metadata"] = json::object();
  const json& meta = object["metadata"];
  if (!meta.is_object())
    return bad_request("the object provided is unrecognized or malformed: metadata must be an object");
  for (const char* key : {"name", "generateName", "namespace", "resourceVersion", "uid"}) {
    if (meta.contains(key) && !meta[key].is_string() && !meta[key].is_null()) {
      return bad_request(std::string("json: cannot unmarshal ") + meta[key].type_name() +
                         " into Go struct field ObjectMeta.metadata." + key + " of type string");
    }
  }
  for (const char* key : {"labels", "annotations"}) {
    if (!meta.contains(key) || meta[key].is_null()) continue;
    bool strings = meta[key].is_object();
    if (strings) {
      for (const auto& [k, v] : meta[key].items()) strings = strings && v.is_string();
    }
    if (!strings) {
      return bad_request(std::string("json: cannot unmarshal into Go struct field ObjectMeta.metadata.") +
                         key + " of type map[string]string");
    }
  }
  if (meta.contains("finalizers") && !meta["finalizers"].is_null()) {
    bool strings = meta["finalizers"].is_array();
    if (strings) {
      for (const auto& f : meta["finalizers"]) strings = strings && f.is_string();
    }
    if (!strings)
      return bad_request(
          "json: cannot unmarshal into Go struct field ObjectMeta.metadata.finalizers of type []string");
  }
  return object;
}

// Built-in types decode into the endpoint's kind when the body omits apiVersion/kind (as
// typed clients send them); custom resources are unstructured and must carry both.
std::optional<ApiError> check_type_meta(json& object, const ResourceType& type, const std::string& version) {
  if (!type.custom) {
    if (object.value("kind", "").empty()) object["kind"] = type.kind;
    if (object.value("apiVersion", "").empty()) object["apiVersion"] = type.group_version(version);
  }
  const std::string kind = object.value("kind", "");
  const std::string api_version = object.value("apiVersion", "");
  if (kind.empty()) return bad_request("Object 'Kind' is missing in '" + object.dump() + "'");
  if (api_version.empty()) return bad_request("Object 'apiVersion' is missing in '" + object.dump() + "'");
  if (api_version != type.group_version(version)) {
    return bad_request("the API version in the data (" + api_version +
                       ") does not match the expected API version (" + type.group_version(version) + ")");
  }
  if (kind != type.kind) {
    return bad_request("the kind in the data (" + kind + ") does not match the expected kind (" + type.kind +
                       ")");
  }
  return std::nullopt;
}

// Strategic merge patch directives have no meaning for a merge patch; drop them.
void strip_patch_directives(json& node) {
  if (node.is_object()) {
    for (auto it = node.begin(); it != node.end();) {
      if (!it.key().empty() && it.key()[0] == '$') {
        it = node.erase(it);
      } else {
        strip_patch_directives(it.value());
        ++it;
      }
    }
  } else if (node.is_array()) {
    for (auto& item : node) strip_patch_directives(item);
  }
}

void copy_or_erase(json& to, const json& from, const char* key) {
  if (from.is_object() && from.contains(key)) {
    to[key] = from[key];
  } else {
    to.erase(key);
  }
}

json crd_status(const json& crd, const std::string& now) {
  json names = crd["spec"]["names"];
  if (!names.contains("singular")) names["singular"] = to_lower(names.value("kind", ""));
  if (!names.contains("listKind")) names["listKind"] = names.value("kind", "") + "List";
  std::string storage;
  for (const auto& v : crd["spec"].value("versions", json::array())) {
    if (v.value("storage", false)) storage = v.value("name", "");
  }
  return {{"conditions",
           {{{"type", "NamesAccepted"},
             {"status", "True"},
             {"reason", "NoConflicts"},
             {"message", "no conflicts found"},
             {"lastTransitionTime", now}},
            {{"type", "Established"},
             {"status", "True"},
             {"reason", "InitialNamesAccepted"},
             {"message", "the initial names have been accepted"},
             {"lastTransitionTime", now}}}},
          {"acceptedNames", names},
          {"storedVersions", {storage}}};
}

// The defaults apiextensions applies to a CRD before validating it.
void default_crd(json& crd) {
  if (!crd.contains("spec") || !crd["spec"].is_object()) return;
  json& spec = crd["spec"];
  if (spec.contains("names") && spec["names"].is_object()) {
    json& names = spec["names"];
    const std::string kind = names.value("kind", "");
    if (!kind.empty() && !names.contains("singular")) names["singular"] = to_lower(kind);
    if (!kind.empty() && !names.contains("listKind")) names["listKind"] = kind + "List";
  }
  if (!spec.contains("conversion")) spec["conversion"] = {{"strategy", "None"}};
}

}  // namespace

std::optional<ApiError> ApiServer::admit_custom(const Call& call, json& object,
                                                std::vector<std::string>& warnings) {
  const auto* version = call.type->version(call.version);
  if (version == nullptr || !version->schema.is_object()) return std::nullopt;
  const auto removed = schema::prune_unknown(version->schema, object);
  const std::string mode = call.param("fieldValidation");
  if (!removed.empty() && mode == "Strict") {
    std::string list;
    for (const auto& path : removed)
      list += (list.empty() ? "" : ", ") + std::string("unknown field ") + json(path).dump();
    return bad_request(call.type->kind + " in version " + json(call.version).dump() +
                       " cannot be handled as a " + call.type->kind + ": strict decoding error: " + list);
  }
  if (mode != "Ignore") {
    for (const auto& path : removed) warnings.push_back("unknown field " + json(path).dump());
  }
  schema::apply_defaults(version->schema, object);
  auto causes = schema::validate(version->schema, object);
  if (!causes.empty()) {
    return invalid(call.type->group, call.type->kind, meta_string(object, "name"), to_causes(causes));
  }
  return std::nullopt;
}

std::optional<ApiError> ApiServer::register_crd(const json& crd) {
  auto causes = schema::validate_crd(crd);
  if (!causes.empty()) {
    return invalid("apiextensions.k8s.io", "CustomResourceDefinition", meta_string(crd, "name"),
                   to_causes(causes));
  }
  ResourceType type = ResourceRegistry::from_crd(crd);
  if (auto clash = registry_.name_clash(type)) {
    return invalid("apiextensions.k8s.io", "CustomResourceDefinition", meta_string(crd, "name"),
                   {{"FieldValueInvalid", "Invalid value: " + json(*clash).dump() + ": is already in use",
                     "spec.names"}});
  }
  registry_.add(std::move(type));
  return std::nullopt;
}

void ApiServer::unregister_crd(const json& crd) {
  ResourceType type = ResourceRegistry::from_crd(crd);
  for (const auto& [ns, name] : store_.keys(type.id(), "")) store_.erase(type.id(), ns, name);
  store_.close_watches(type.id());
  registry_.remove(type.id());
}

void ApiServer::erase_namespace_contents(const std::string& ns) {
  for (const auto& type : registry_.all()) {
    if (!type->namespaced) continue;
    for (const auto& [object_ns, name] : store_.keys(type->id(), ns))
      store_.erase(type->id(), object_ns, name);
  }
}

void ApiServer::create(const Call& call, http::ServerResponse& response) {
  if (!call.subresource.empty())
    return send_error(response, method_not_supported(call.type->group, call.type->plural, "create"));
  auto decoded = decode_body(*call.request);
  if (auto* error = std::get_if<ApiError>(&decoded)) return send_error(response, *error);
  json object = std::move(std::get<json>(decoded));
  if (auto error = check_type_meta(object, *call.type, call.version)) return send_error(response, *error);
  json& meta = object["metadata"];
  if (call.type->namespaced) {
    const std::string body_ns = meta.value("namespace", "");
    if (!body_ns.empty() && body_ns != call.ns) {
      return send_error(
          response,
          bad_request(
              "the namespace of the provided object does not match the namespace sent on the request"));
    }
    meta["namespace"] = call.ns;
  } else {
    meta.erase("namespace");
  }
  if (meta.contains("resourceVersion") && !meta["resourceVersion"].is_null() &&
      meta["resourceVersion"] != "") {
    return send_error(response, bad_request("resourceVersion should not be set on objects to be created"));
  }
  std::string name = meta.value("name", "");
  const std::string generate = meta.value("generateName", "");
  if (name.empty() && !generate.empty()) {
    name = generate_name(generate);
    meta["name"] = name;
  }
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

  std::vector<std::string> warnings;
  std::lock_guard lock(mutex_);
  if (call.type->custom) {
    if (auto error = admit_custom(call, object, warnings)) {
      if (error->code != 422 || causes.empty()) return send_error(response, *error);
      for (const auto& c : error->details.value("causes", json::array())) {
        causes.push_back({c.value("reason", ""), c.value("message", ""), c.value("field", "")});
      }
    }
  }
  if (!causes.empty()) return send_error(response, invalid(call.type->group, call.type->kind, name, causes));
  if (call.type->namespaced && !store_.get(kNamespaceId, "", call.ns)) {
    return send_error(response, not_found("", "namespaces", call.ns));
  }
  if (store_.get(call.type->id(), call.ns, name)) {
    return send_error(response, already_exists(call.type->group, call.type->plural, name));
  }
  const std::string id = call.type->id();
  if (id == "/pods" && options_.simulate_kubelet) {
    // As the pod strategy does; the simulated kubelet takes it from there.
    reset_created_pod_status(object);
  } else if (id == "/pods") {
    // No kubelet: the status given is kept, so tests can seed Ready pods.
    if (!object.contains("status") || !object["status"].is_object()) object["status"] = json::object();
    if (!object["status"].contains("phase")) object["status"]["phase"] = "Pending";
  } else if (id == kNamespaceId) {
    meta["labels"]["kubernetes.io/metadata.name"] = name;
    object["spec"]["finalizers"] = {"kubernetes"};
    object["status"] = {{"phase", "Active"}};
  } else if (id == kCrdId) {
    default_crd(object);
    if (auto error = register_crd(object)) return send_error(response, *error);
    object["status"] = crd_status(object, now);
  }
  auto stored = store_.put(id, call.ns, name, std::move(object));
  send_json(response, 201, present(call, *stored), warnings);
}

std::variant<std::pair<int, json>, ApiError> ApiServer::commit_update(const Call& call, ObjectPtr current,
                                                                      json desired,
                                                                      std::vector<std::string>& warnings) {
  const json& old = *current;
  const auto& type = *call.type;
  const std::string name = meta_string(old, "name");
  const std::string wanted_rv = meta_string(desired, "resourceVersion");
  if (!wanted_rv.empty() && wanted_rv != meta_string(old, "resourceVersion")) {
    return conflict(type.group, type.plural, name, kModified);
  }
  json next;
  if (call.subresource == "status") {
    // Only status may change through /status; everything else is taken from the stored object.
    next = old;
    copy_or_erase(next, desired, "status");
  } else {
    next = std::move(desired);
    json& meta = next["metadata"];
    const json& old_meta = old["metadata"];
    for (const char* key : {"name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                            "deletionGracePeriodSeconds", "generation"}) {
      copy_or_erase(meta, old_meta, key);
    }
    next["kind"] = type.kind;
    if (type.has_status_subresource(call.version)) copy_or_erase(next, old, "status");
  }
  if (type.custom) {
    if (auto error = admit_custom(call, next, warnings)) return *error;
  }
  if (old["metadata"].contains("deletionTimestamp")) {
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
  }
  if (type.bumps_generation && spec_changed(old, next)) {
    next["metadata"]["generation"] = old["metadata"].value("generation", 0) + 1;
  }
  if (type.id() == kCrdId && call.subresource.empty()) {
    default_crd(next);
    auto causes = schema::validate_crd(next);
    if (!causes.empty())
      return invalid("apiextensions.k8s.io", "CustomResourceDefinition", name, to_causes(causes));
  }
  // An update that changes nothing is not written: no new resourceVersion, no event.
  next["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"];
  json old_relabelled = present(call, old);
  if (next == old_relabelled) return std::make_pair(200, old_relabelled);
  const std::string ns = meta_string(old, "namespace");
  // shouldDeleteDuringUpdate: removing the last finalizer removes the object only once its
  // deletion no longer waits on a grace period (a terminating pod waits for its kubelet).
  const json& old_meta = old["metadata"];
  const auto old_grace = old_meta.find("deletionGracePeriodSeconds");
  if (old_meta.contains("deletionTimestamp") && !finalizers_of(old).empty() && finalizers_of(next).empty() &&
      old_grace != old_meta.end() && old_grace->is_number_integer() && *old_grace == 0) {
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
  const bool supported = type == PatchType::kMerge || type == PatchType::kJson ||
                         (type == PatchType::kStrategicMerge && !call.type->custom);
  if (!supported) {
    std::vector<std::string> accepted = {"application/json-patch+json", "application/merge-patch+json"};
    if (!call.type->custom) accepted.push_back("application/strategic-merge-patch+json");
    return send_error(response, unsupported_media_type(content_type, accepted));
  }
  std::vector<std::string> warnings;
  std::lock_guard lock(mutex_);
  auto current = store_.get(call.type->id(), call.ns, call.name);
  if (!current) return send_error(response, not_found(call.type->group, call.type->plural, call.name));
  json target = present(call, *current);
  if (auto error = apply_patch(type, call.request->body, target)) return send_error(response, *error);
  if (type == PatchType::kStrategicMerge) strip_patch_directives(target);
  if (!target.is_object() || !target.contains("metadata") || !target["metadata"].is_object()) {
    return send_error(response, patch_rejected());
  }
  auto result = commit_update(call, current, std::move(target), warnings);
  if (auto* error = std::get_if<ApiError>(&result)) return send_error(response, *error);
  auto& [code, body] = std::get<std::pair<int, json>>(result);
  send_json(response, code, body, warnings);
}

std::variant<json, ApiError> ApiServer::delete_options(const Call& call) {
  // As the delete handler: DeleteOptions from the body when there is one, else from the
  // query (kubectl sends a body; curl users tend to use ?gracePeriodSeconds=0).
  json options = json::object();
  if (!trim(call.request->body).empty()) {
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
  return options;
}

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
  if (options.contains("preconditions") && options["preconditions"].is_object()) {
    const json& pre = options["preconditions"];
    if (pre.contains("uid") && pre["uid"].is_string() && pre["uid"] != meta.value("uid", "")) {
      return conflict(type.group, type.plural, name,
                      "Precondition failed: UID in precondition: " + pre["uid"].get<std::string>() +
                          ", UID in object meta: " + meta.value("uid", ""));
    }
    if (pre.contains("resourceVersion") && pre["resourceVersion"].is_string() &&
        pre["resourceVersion"] != meta.value("resourceVersion", "")) {
      return conflict(type.group, type.plural, name,
                      "Precondition failed: ResourceVersion in precondition: " +
                          pre["resourceVersion"].get<std::string>() +
                          ", ResourceVersion in object meta: " + meta.value("resourceVersion", ""));
    }
  }
  if (type.id() == "/pods" && options_.simulate_kubelet) {
    std::optional<std::int64_t> grace;
    if (options.contains("gracePeriodSeconds") && options["gracePeriodSeconds"].is_number_integer()) {
      grace = options["gracePeriodSeconds"].get<std::int64_t>();
    }
    auto outcome = delete_pod(store_, current, grace, clock_.now());
    return std::make_pair(200, *outcome.object);
  }
  if (!finalizers_of(*current).empty() && type.id() != kNamespaceId) {
    if (meta.contains("deletionTimestamp")) return std::make_pair(200, present(call, *current));
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
  auto labels = LabelSelector::parse(call.param("labelSelector"));
  if (!labels) return send_error(response, bad_request(labels.error().message));
  auto fields = FieldSelector::parse(call.param("fieldSelector"), call.type->extra_field_labels);
  if (!fields) return send_error(response, bad_request(fields.error().message));
  auto parsed = delete_options(call);
  if (auto* error = std::get_if<ApiError>(&parsed)) return send_error(response, *error);
  // Applied to every object, as DeleteCollection passes them to each Delete.
  const json& options = std::get<json>(parsed);
  std::lock_guard lock(mutex_);
  json items = json::array();
  for (const auto& object : store_.list(call.type->id(), call.ns)) {
    if (!labels->matches(*object) || !fields->matches(*object)) continue;
    auto result =
        delete_object(call, meta_string(*object, "namespace"), meta_string(*object, "name"), options);
    if (auto* ok = std::get_if<std::pair<int, json>>(&result);
        ok && ok->second.value("kind", "") != "Status") {
      items.push_back(ok->second);
    }
  }
  send_json(response, 200,
            {{"kind", call.type->list_kind},
             {"apiVersion", call.type->group_version(call.version)},
             {"metadata", {{"resourceVersion", std::to_string(store_.current_rv())}}},
             {"items", items}});
}

}  // namespace eslease::kubeemu
