#include "common/text.h"
#include "emulators/kube/protobuf.h"
#include "emulators/kube/write_support.h"

namespace eslease::kubeemu {

using nlohmann::json;

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

}  // namespace eslease::kubeemu
