// The update-mapping API's merge (PUT /{index}/_mapping), as Elasticsearch 8 merges: new
// fields are added, an existing field keeps its type and parameters (a change is refused),
// object fields merge their sub-properties, and root parameters the update names
// (`dynamic`, `_meta`, ...) replace the old values: `_meta` is replaced as a whole, not
// merged key by key.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "emulators/es/es_error.h"

namespace eslease::esemu {

// Merges the request body `body` into the normalized `mapping`; on an error `mapping` is left
// as it was (the update applies entirely or not at all).
std::optional<EsError> merge_mapping(nlohmann::ordered_json& mapping, const nlohmann::ordered_json& body);

}  // namespace eslease::esemu
