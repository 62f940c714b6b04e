// The PATCH content types kube-apiserver accepts, applied to a stored object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "emulators/kube/api_status.h"

namespace eslease::kubeemu {

enum class PatchType { kMerge, kJson, kStrategicMerge, kApply, kUnknown };

PatchType patch_type_of(const std::string& content_type);

// Applies a merge patch (RFC 7386) or a JSON patch (RFC 6902) to `target` in place; strategic
// merge patch and apply have their own files. Errors mirror the apiserver's patch handler:
// an undecodable patch is 400 BadRequest, a JSON patch operation that fails (including a
// failed "test") is 422 with the generic message.
std::optional<ApiError> apply_patch(PatchType type, const std::string& patch_body, nlohmann::json& target);

}  // namespace eslease::kubeemu
