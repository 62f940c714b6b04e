#include "emulators/kube/patch.h"

#include "common/text.h"

namespace eslease::kubeemu {

using nlohmann::json;

PatchType patch_type_of(const std::string& content_type) {
  const std::string media = to_lower(trim(content_type.substr(0, content_type.find(';'))));
  if (media == "application/merge-patch+json") return PatchType::kMerge;
  if (media == "application/json-patch+json") return PatchType::kJson;
  if (media == "application/strategic-merge-patch+json") return PatchType::kStrategicMerge;
  if (media == "application/apply-patch+yaml" || media == "application/apply-patch+cbor")
    return PatchType::kApply;
  return PatchType::kUnknown;
}

namespace {

std::optional<ApiError> check_json_patch(const json& ops) {
  if (!ops.is_array())
    return bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch");
  for (const auto& op : ops) {
    if (!op.is_object() || !op.contains("op") || !op["op"].is_string()) {
      return bad_request("Unexpected kind: missing op");
    }
    const std::string name = op["op"].get<std::string>();
    if (name != "add" && name != "remove" && name != "replace" && name != "move" && name != "copy" &&
        name != "test") {
      return patch_rejected();
    }
    if (!op.contains("path") || !op["path"].is_string()) return patch_rejected();
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> apply_patch(PatchType type, const std::string& patch_body, json& target) {
  json patch = json::parse(patch_body, nullptr, false);
  if (patch.is_discarded()) {
    return bad_request("error decoding patch: invalid character in patch body");
  }
  switch (type) {
    case PatchType::kMerge:
      if (!patch.is_object()) return bad_request("error decoding patch: patch is not a JSON object");
      target.merge_patch(patch);
      return std::nullopt;
    case PatchType::kJson: {
      if (auto bad = check_json_patch(patch)) return bad;
      try {
        target = target.patch(patch);
      } catch (const json::exception&) {
        return patch_rejected();
      }
      return std::nullopt;
    }
    default:
      return bad_request("unsupported patch type");
  }
}

}  // namespace eslease::kubeemu
