// The query DSL parser: each query kind read as QueryBuilders read it, with their error
// messages and the [line:col] of the offending key.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "common/text.h"
#include "emulators/es/json_positions.h"
#include "emulators/es/mapping.h"
#include "emulators/es/query.h"

namespace eslease::esemu {

using json = nlohmann::ordered_json;

namespace {

using Parsed = std::variant<Query, EsError>;

EsError query_parsing_error(std::string reason, std::string_view raw, std::string_view key) {
  EsError e = make_es_error(400, "parsing_exception", std::move(reason));
  // locate_value answers "[line:col] "; parsing_exception reports them as fields.
  std::string where = locate_value(raw, key);
  int line = 1, col = 1;
  if (!where.empty()) std::sscanf(where.c_str(), "[%d:%d]", &line, &col);
  e.metadata = {{"line", line}, {"col", col}};
  return e;
}

EsError no_start_object(const std::string& name, std::string_view raw) {
  return query_parsing_error("[" + name + "] query malformed, no start_object after query name", raw, name);
}

// One clause or an array of them, appended to `out`.
std::optional<EsError> parse_clauses(const json& value, std::string_view raw, std::vector<Query>& out) {
  auto add = [&](const json& q) -> std::optional<EsError> {
    auto parsed = parse_query(q, raw);
    if (auto* err = std::get_if<EsError>(&parsed)) return *err;
    out.push_back(std::move(std::get<Query>(parsed)));
    return std::nullopt;
  };
  if (!value.is_array()) return add(value);
  for (const auto& q : value) {
    if (auto err = add(q)) return err;
  }
  return std::nullopt;
}

// The one field a term, prefix, terms, match or range query names (besides boost and _name).
std::optional<EsError> single_field(const json& body, const std::string& name, std::string_view raw,
                                    std::string& field, const json*& spec) {
  if (!body.is_object() || body.empty()) return no_start_object(name, raw);
  int fields = 0;
  for (const auto& [key, value] : body.items()) {
    if (key == "boost" || key == "_name") continue;
    if (++fields > 1) {
      return query_parsing_error(
          "[" + name + "] query doesn't support multiple fields, found [" + field + "] and [" + key + "]",
          raw, key);
    }
    field = key;
    spec = &value;
  }
  if (fields == 0) return query_parsing_error("[" + name + "] query malformed, no field", raw, name);
  return std::nullopt;
}

Parsed parse_match_all_or_none(const std::string& name, const json& body, std::string_view raw) {
  Query q;
  q.kind = name == "match_all" ? Query::Kind::kMatchAll : Query::Kind::kMatchNone;
  if (!body.is_object()) return no_start_object(name, raw);
  return q;
}

Parsed parse_term_or_prefix(const std::string& name, const json& body, std::string_view raw) {
  Query q;
  q.kind = name == "term" ? Query::Kind::kTerm : Query::Kind::kPrefix;
  const json* spec = nullptr;
  if (auto err = single_field(body, name, raw, q.field, spec)) return *err;
  if (spec->is_object()) {
    if (!spec->contains("value"))
      return query_parsing_error("[" + name + "] query does not support [" + q.field + "]", raw, q.field);
    q.values.push_back((*spec)["value"]);
    q.case_insensitive = spec->value("case_insensitive", false);
  } else if (spec->is_array() || spec->is_null()) {
    return query_parsing_error("[" + name + "] query does not support array of values", raw, q.field);
  } else {
    q.values.push_back(*spec);
  }
  return q;
}

Parsed parse_terms(const std::string& name, const json& body, std::string_view raw) {
  Query q;
  q.kind = Query::Kind::kTerms;
  const json* spec = nullptr;
  if (auto err = single_field(body, name, raw, q.field, spec)) return *err;
  if (!spec->is_array()) {
    return query_parsing_error("[terms] query does not support [" + q.field + "]", raw, q.field);
  }
  for (const auto& v : *spec) q.values.push_back(v);
  return q;
}

Parsed parse_ids(const std::string& name, const json& body, std::string_view raw) {
  Query q;
  q.kind = Query::Kind::kIds;
  if (!body.is_object()) return no_start_object(name, raw);
  for (const auto& [key, value] : body.items()) {
    if (key == "values" && value.is_array()) {
      for (const auto& v : value) q.values.push_back(v);
    } else if (key != "boost" && key != "_name") {
      return query_parsing_error("[ids] unknown field [" + key + "]", raw, key);
    }
  }
  return q;
}

Parsed parse_exists(const std::string& name, const json& body, std::string_view raw) {
  Query q;
  q.kind = Query::Kind::kExists;
  if (!body.is_object() || !body.contains("field") || !body["field"].is_string()) {
    return query_parsing_error("[exists] must be provided with a [field]", raw, name);
  }
  q.field = body["field"].get<std::string>();
  return q;
}

Parsed parse_match(const std::string& name, const json& body, std::string_view raw) {
  Query q;
  q.kind = Query::Kind::kMatch;
  const json* spec = nullptr;
  if (auto err = single_field(body, name, raw, q.field, spec)) return *err;
  if (spec->is_object()) {
    if (!spec->contains("query"))
      return query_parsing_error("No text specified for text query", raw, q.field);
    q.values.push_back((*spec)["query"]);
    q.match_all_terms = to_lower(spec->value("operator", std::string("or"))) == "and";
  } else {
    q.values.push_back(*spec);
  }
  return q;
}

Parsed parse_range(const std::string& name, const json& body, std::string_view raw) {
  Query q;
  q.kind = Query::Kind::kRange;
  const json* spec = nullptr;
  if (auto err = single_field(body, name, raw, q.field, spec)) return *err;
  if (!spec->is_object()) {
    return query_parsing_error("[range] query malformed, after field missing start object", raw, q.field);
  }
  bool include_lower = true, include_upper = true;
  std::optional<json> from, to;
  const std::map<std::string, std::optional<json>*> bounds = {{"gt", &q.gt},   {"gte", &q.gte}, {"lt", &q.lt},
                                                              {"lte", &q.lte}, {"from", &from}, {"to", &to}};
  for (const auto& [key, value] : spec->items()) {
    if (auto bound = bounds.find(key); bound != bounds.end()) {
      *bound->second = value;
    } else if (key == "include_lower" || key == "include_upper") {
      (key == "include_lower" ? include_lower : include_upper) = value.is_boolean() && value.get<bool>();
    } else if (key != "format" && key != "time_zone" && key != "boost" && key != "_name" &&
               key != "relation") {
      return query_parsing_error("[range] query does not support [" + key + "]", raw, key);
    }
  }
  if (from) (include_lower ? q.gte : q.gt) = *from;
  if (to) (include_upper ? q.lte : q.lt) = *to;
  return q;
}

Parsed parse_constant_score(const std::string& name, const json& body, std::string_view raw) {
  if (!body.is_object() || !body.contains("filter")) {
    return query_parsing_error("[constant_score] requires a 'filter' element", raw, name);
  }
  Query q;
  q.kind = Query::Kind::kBool;
  if (auto err = parse_clauses(body["filter"], raw, q.filter)) return *err;
  return q;
}

// minimum_should_match: a count or a percentage of the should clauses, negative for "all
// but"; without it one should clause must match when nothing else is required.
int minimum_should_match(const std::optional<json>& msm, const Query& q) {
  const int should_count = static_cast<int>(q.should.size());
  if (!msm) return (!q.should.empty() && q.must.empty() && q.filter.empty()) ? 1 : 0;
  std::string s = msm->is_string() ? msm->get<std::string>() : msm->dump();
  int n = 0;
  if (!s.empty() && s.back() == '%') {
    int pct = std::atoi(s.c_str());
    n = pct >= 0 ? should_count * pct / 100 : should_count + should_count * pct / 100;
  } else {
    n = std::atoi(s.c_str());
    if (n < 0) n = should_count + n;
  }
  // Elasticsearch matches nothing when more clauses are required than exist.
  if (n > should_count) return n;
  return std::clamp(n, 0, should_count);
}

Parsed parse_bool(const std::string& name, const json& body, std::string_view raw) {
  Query q;
  q.kind = Query::Kind::kBool;
  if (!body.is_object()) return no_start_object(name, raw);
  const std::map<std::string, std::vector<Query>*> clauses = {{"must", &q.must},
                                                              {"filter", &q.filter},
                                                              {"should", &q.should},
                                                              {"must_not", &q.must_not},
                                                              {"mustNot", &q.must_not}};
  std::optional<json> msm;
  for (const auto& [key, value] : body.items()) {
    if (auto target = clauses.find(key); target != clauses.end()) {
      if (auto err = parse_clauses(value, raw, *target->second)) return *err;
    } else if (key == "minimum_should_match") {
      msm = value;
    } else if (key != "boost" && key != "_name" && key != "adjust_pure_negative") {
      return query_parsing_error("[bool] query does not support [" + key + "]", raw, key);
    }
  }
  q.minimum_should_match = minimum_should_match(msm, q);
  return q;
}

using Parser = Parsed (*)(const std::string& name, const json& body, std::string_view raw);

const std::map<std::string, Parser, std::less<>> kParsers = {{"match_all", parse_match_all_or_none},
                                                             {"match_none", parse_match_all_or_none},
                                                             {"term", parse_term_or_prefix},
                                                             {"prefix", parse_term_or_prefix},
                                                             {"terms", parse_terms},
                                                             {"ids", parse_ids},
                                                             {"exists", parse_exists},
                                                             {"match", parse_match},
                                                             {"range", parse_range},
                                                             {"constant_score", parse_constant_score},
                                                             {"bool", parse_bool}};

}  // namespace

std::variant<Query, EsError> parse_query(const json& query, std::string_view raw) {
  if (!query.is_object()) {
    return query_parsing_error("[_na] query malformed, must start with start_object", raw, "query");
  }
  if (query.size() != 1) {
    if (query.empty()) return query_parsing_error("query malformed, empty clause found", raw, "query");
    auto second = std::next(query.begin());
    return query_parsing_error(
        "[" + query.begin().key() + "] malformed query, expected [END_OBJECT] but found [FIELD_NAME]", raw,
        second.key());
  }
  const std::string& name = query.begin().key();
  if (auto parser = kParsers.find(name); parser != kParsers.end()) {
    return parser->second(name, query.begin().value(), raw);
  }
  EsError e = query_parsing_error("unknown query [" + name + "]", raw, name);
  e.caused_by = std::make_shared<EsError>(make_es_error(
      400, "named_object_not_found_exception", locate_value(raw, name) + "unknown field [" + name + "]"));
  return e;
}

}  // namespace eslease::esemu
