// Reading fields of API objects (Kubernetes JSON) that may be missing, null or of the wrong
// type: every reader treats those alike, as absent, so a malformed object is never fatal.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/clock.h"

namespace eslease::json_fields {

// object[key] when `object` is an object holding a non-null `key`; nullptr otherwise.
const nlohmann::json* find(const nlohmann::json& object, const char* key);
// The string at `key`, "" when absent or not a string.
std::string string_at(const nlohmann::json& object, const char* key);
// An RFC 3339 time at `key`; nullopt when absent or unparseable.
std::optional<WallTime> time_at(const nlohmann::json& object, const char* key);
// An integer at `key`. A float with no fraction (30.0) counts, as kube-openapi accepts it.
std::optional<std::int64_t> integer_at(const nlohmann::json& object, const char* key);

}  // namespace eslease::json_fields
