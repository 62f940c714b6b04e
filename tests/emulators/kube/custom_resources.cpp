// CustomResourceDefinitions and custom resources: the CRD's defaults and status, its
// registration as a served resource, and the schema admission of custom resources.
#include "common/text.h"
#include "emulators/kube/api_server.h"
#include "emulators/kube/object_meta.h"
#include "emulators/kube/write_support.h"

namespace eslease::kubeemu {

using nlohmann::json;

std::vector<StatusCause> to_causes(const std::vector<schema::Cause>& causes) {
  std::vector<StatusCause> out;
  out.reserve(causes.size());
  for (const auto& c : causes) out.push_back({c.type, c.message, c.field});
  return out;
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

}  // namespace eslease::kubeemu
