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

// "[line:col] " of the value following the first occurrence of "key": in raw JSON text,
// the position Elasticsearch's parser reports; empty when not found.
std::string locate_value(std::string_view raw, std::string_view key);
// "[line:col] " of a byte offset in raw text, as Elasticsearch's parser counts them.
std::string locate_offset(std::string_view raw, std::size_t offset);
// "[line:col] " of that "key" itself (its opening quote), where an unknown field is reported.
std::string locate_key(std::string_view raw, std::string_view key);

// Parses a date as a date field does (strict_date_optional_time||epoch_millis), in ms.
std::optional<long long> parse_date_millis(const nlohmann::ordered_json& value);
// Date math for range queries: "now", "now-30s", "now+1h", plus plain dates.
std::optional<long long> parse_date_math(const nlohmann::ordered_json& value, long long now_millis);

bool is_numeric_type(std::string_view type);

}  // namespace eslease::esemu
