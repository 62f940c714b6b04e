// Index names, mappings and how documents are checked against them, as Elasticsearch 8
// does: strict/false/true dynamic mapping, type checks of mapped fields, dynamic
// inference of new fields (strings become text with a keyword sub-field, or date when
// they look like one).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "emulators/es/es_error.h"

namespace eslease::esemu {

std::optional<EsError> validate_index_name(const std::string& name);

// Validates a create-index "mappings" object and returns it normalized ("type":"object"
// dropped, "dynamic" as a string), or an error.
std::optional<EsError> normalize_mappings(const nlohmann::ordered_json& in, nlohmann::ordered_json& out);

struct DocumentContext {
  std::string index;
  std::string id;
  std::string raw_source;  // the JSON text, to point at a failing field as [line:col]
};

// Checks `source` against `mapping`, extending `mapping` with dynamically mapped fields.
std::optional<EsError> apply_document(nlohmann::ordered_json& mapping, const nlohmann::ordered_json& source,
                                      const DocumentContext& context);

// The mapped type of a dotted field path ("lock", "meta.owner", "name.keyword"), if any.
std::optional<std::string> field_type(const nlohmann::ordered_json& mapping, std::string_view path);

// Every value of a dotted path in a source document (arrays flattened).
void collect_values(const nlohmann::ordered_json& node, std::string_view path,
                    std::vector<const nlohmann::ordered_json*>& out);

bool is_numeric_type(std::string_view type);

}  // namespace eslease::esemu
