// Strategic merge patch (application/strategic-merge-patch+json) for built-in kinds, as
// k8s.io/apimachinery/pkg/util/strategicpatch applies it: maps merge key by key (null deletes
// a key), lists declared `patchStrategy:"merge"` merge by their patchMergeKey (containers by
// name, ports by containerPort, ...) or as sets of primitives (finalizers), other lists are
// replaced. Directives: `$patch: replace|delete|merge` on a map or a list element,
// `$retainKeys`, `$deleteFromPrimitiveList/<list>` and `$setElementOrder/<list>`.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "emulators/kube/api_status.h"
#include "emulators/kube/list_types.h"

namespace eslease::kubeemu {

// Applies `patch` to `target` in place; a malformed directive is a 400 as upstream.
std::optional<ApiError> strategic_merge(nlohmann::json& target, const nlohmann::json& patch,
                                        const ListTypes& lists);

}  // namespace eslease::kubeemu
