// How hits are ordered (sort) and shaped (_source filtering).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "emulators/es/es_error.h"
#include "emulators/es/store.h"

namespace eslease::esemu {

struct SortField {
  std::string field;  // "_score", "_doc" or a field path
  bool descending = false;
};
std::variant<std::vector<SortField>, EsError> parse_sort(const nlohmann::ordered_json& sort);
// "field:desc,other" as the sort query parameter.
std::vector<SortField> parse_sort_param(const std::string& param);
// The sort value of a document for one sort field (null when missing); an error for a
// field that cannot be sorted on.
std::variant<nlohmann::ordered_json, EsError> sort_value(const SortField& sort, const Index& index,
                                                         const std::string& id, const Doc& doc);
// Orders two sort values as Elasticsearch does (missing values last).
int compare_sort_values(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b, bool descending);

struct SourceFilter {
  bool enabled = true;
  std::vector<std::string> includes;
  std::vector<std::string> excludes;
};
std::variant<SourceFilter, EsError> parse_source_filter(const nlohmann::ordered_json& value);
nlohmann::ordered_json filter_source(const nlohmann::ordered_json& source, const SourceFilter& filter);

}  // namespace eslease::esemu
