// The query DSL subset the emulator evaluates over refreshed documents: match_all,
// match_none, term, terms, range, bool, ids, exists, prefix, match, constant_score. Scores
// are constant (every hit scores 1.0): the emulator does no relevance ranking.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "emulators/es/es_error.h"
#include "emulators/es/store.h"

namespace eslease::esemu {

struct Query {
  enum class Kind { kMatchAll, kMatchNone, kTerm, kTerms, kRange, kBool, kIds, kExists, kPrefix, kMatch };
  Kind kind = Kind::kMatchAll;
  std::string field;
  std::vector<nlohmann::ordered_json> values;  // term/terms/ids/prefix/match values
  bool case_insensitive = false;
  bool match_all_terms = false;  // match with operator "and"
  std::optional<nlohmann::ordered_json> gt, gte, lt, lte;
  std::vector<Query> must, filter, should, must_not;
  int minimum_should_match = 0;
};

// Parses a query object; raw is the request body, to report [line:col] like Elasticsearch.
std::variant<Query, EsError> parse_query(const nlohmann::ordered_json& query, std::string_view raw);

// Whether a document matches. An error when a value cannot be compared with the field's
// type (query_shard_exception).
std::variant<bool, EsError> query_matches(const Query& query, const Index& index, const std::string& id,
                                          const Doc& doc, long long now_millis);

}  // namespace eslease::esemu
