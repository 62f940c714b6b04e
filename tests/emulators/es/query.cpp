#include "emulators/es/query.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>

#include "common/text.h"
#include "emulators/es/field_values.h"
#include "emulators/es/mapping.h"

namespace eslease::esemu {

using json = nlohmann::ordered_json;

namespace {

EsError query_parsing_error(std::string reason, std::string_view raw, std::string_view key) {
  EsError e = make_es_error(400, "parsing_exception", std::move(reason));
  // locate_value answers "[line:col] "; parsing_exception reports them as fields.
  std::string where = locate_value(raw, key);
  int line = 1, col = 1;
  if (!where.empty()) std::sscanf(where.c_str(), "[%d:%d]", &line, &col);
  e.metadata = {{"line", line}, {"col", col}};
  return e;
}

// Raised inside evaluation only; query_matches turns it into an EsError.
struct QueryShardError {
  std::string reason;
};

// Three-way comparison of a document value with a query value for a field type.
// nullopt when the document value cannot be compared (it does not match).
std::optional<int> compare(const std::string& type, const json& doc_value, const json& query_value,
                           long long now_millis, bool case_insensitive = false) {
  if (is_numeric_type(type)) {
    auto q = to_number(query_value);
    if (!q)
      throw QueryShardError{"failed to create query: For input string: \"" + to_keyword(query_value) + "\""};
    auto d = to_number(doc_value);
    if (!d) return std::nullopt;
    return *d < *q ? -1 : (*d > *q ? 1 : 0);
  }
  if (type == "date" || type == "date_nanos") {
    auto q = parse_date_math(query_value, now_millis);
    if (!q) {
      throw QueryShardError{"failed to parse date field [" + to_keyword(query_value) +
                            "] with format [strict_date_optional_time||epoch_millis]"};
    }
    auto d = parse_date_millis(doc_value);
    if (!d) return std::nullopt;
    return *d < *q ? -1 : (*d > *q ? 1 : 0);
  }
  if (type == "boolean") {
    auto q = to_bool(query_value);
    if (!q) {
      throw QueryShardError{"Can't parse boolean value [" + to_keyword(query_value) +
                            "], expected [true] or [false]"};
    }
    auto d = to_bool(doc_value);
    if (!d) return std::nullopt;
    return static_cast<int>(*d) - static_cast<int>(*q);
  }
  std::string d = to_keyword(doc_value);
  std::string q = to_keyword(query_value);
  if (case_insensitive) {
    d = to_lower(d);
    q = to_lower(q);
  }
  return d.compare(q) < 0 ? -1 : (d.compare(q) > 0 ? 1 : 0);
}

bool term_matches(const std::string& type, const json& doc_value, const json& term, long long now, bool ci) {
  if (is_text(type)) {
    auto tokens = tokenize(to_keyword(doc_value));
    std::string t = to_keyword(term);
    return std::find(tokens.begin(), tokens.end(), ci ? to_lower(t) : t) != tokens.end();
  }
  auto c = compare(type, doc_value, term, now, ci);
  return c && *c == 0;
}

bool evaluate(const Query& q, const Index& index, const std::string& id, const Doc& doc, long long now);

bool any_value(const Query& q, const Index& index, const Doc& doc,
               const std::function<bool(const std::string& type, const json& value)>& test) {
  auto type = field_type(index.mappings, q.field);
  if (!type || *type == "object" || *type == "nested") return false;
  // A multi-field such as "name.keyword" reads its parent's values.
  std::vector<const json*> values;
  collect_values(doc.source, q.field, values);
  if (values.empty()) {
    auto dot = q.field.rfind('.');
    if (dot != std::string::npos) collect_values(doc.source, q.field.substr(0, dot), values);
  }
  for (const json* v : values) {
    if (!v->is_object() && test(*type, *v)) return true;
  }
  return false;
}

bool evaluate(const Query& q, const Index& index, const std::string& id, const Doc& doc, long long now) {
  switch (q.kind) {
    case Query::Kind::kMatchAll:
      return true;
    case Query::Kind::kMatchNone:
      return false;
    case Query::Kind::kIds:
      return std::any_of(q.values.begin(), q.values.end(),
                         [&](const json& v) { return to_keyword(v) == id; });
    case Query::Kind::kTerm:
    case Query::Kind::kTerms:
      if (q.field == "_id") {
        return std::any_of(q.values.begin(), q.values.end(),
                           [&](const json& v) { return to_keyword(v) == id; });
      }
      return any_value(q, index, doc, [&](const std::string& type, const json& value) {
        return std::any_of(q.values.begin(), q.values.end(), [&](const json& t) {
          return term_matches(type, value, t, now, q.case_insensitive);
        });
      });
    case Query::Kind::kPrefix:
      if (q.field == "_id") return id.rfind(to_keyword(q.values[0]), 0) == 0;
      return any_value(q, index, doc, [&](const std::string& type, const json& value) {
        std::string p = to_keyword(q.values[0]);
        if (is_text(type)) {
          for (const auto& token : tokenize(to_keyword(value))) {
            if (token.rfind(p, 0) == 0) return true;
          }
          return false;
        }
        std::string v = to_keyword(value);
        if (q.case_insensitive) {
          v = to_lower(v);
          p = to_lower(p);
        }
        return v.rfind(p, 0) == 0;
      });
    case Query::Kind::kExists:
      return any_value(q, index, doc, [](const std::string&, const json&) { return true; });
    case Query::Kind::kMatch:
      return any_value(q, index, doc, [&](const std::string& type, const json& value) {
        if (!is_text(type)) return term_matches(type, value, q.values[0], now, false);
        auto doc_tokens = tokenize(to_keyword(value));
        auto query_tokens = tokenize(to_keyword(q.values[0]));
        if (query_tokens.empty()) return false;
        auto has = [&](const std::string& t) {
          return std::find(doc_tokens.begin(), doc_tokens.end(), t) != doc_tokens.end();
        };
        return q.match_all_terms ? std::all_of(query_tokens.begin(), query_tokens.end(), has)
                                 : std::any_of(query_tokens.begin(), query_tokens.end(), has);
      });
    case Query::Kind::kRange:
      return any_value(q, index, doc, [&](const std::string& type, const json& value) {
        auto check = [&](const std::optional<json>& bound, auto accept) {
          if (!bound || bound->is_null()) return true;
          auto c = compare(type, value, *bound, now);
          return c.has_value() && accept(*c);
        };
        return check(q.gt, [](int c) { return c > 0; }) && check(q.gte, [](int c) { return c >= 0; }) &&
               check(q.lt, [](int c) { return c < 0; }) && check(q.lte, [](int c) { return c <= 0; });
      });
    case Query::Kind::kBool: {
      for (const auto& sub : q.must) {
        if (!evaluate(sub, index, id, doc, now)) return false;
      }
      for (const auto& sub : q.filter) {
        if (!evaluate(sub, index, id, doc, now)) return false;
      }
      for (const auto& sub : q.must_not) {
        if (evaluate(sub, index, id, doc, now)) return false;
      }
      int should = 0;
      for (const auto& sub : q.should) {
        if (evaluate(sub, index, id, doc, now)) ++should;
      }
      return should >= q.minimum_should_match;
    }
  }
  return false;
}

std::variant<Query, EsError> parse_clauses(const json& value, std::string_view raw, std::vector<Query>& out) {
  auto add = [&](const json& q) -> std::optional<EsError> {
    auto parsed = parse_query(q, raw);
    if (auto* err = std::get_if<EsError>(&parsed)) return *err;
    out.push_back(std::move(std::get<Query>(parsed)));
    return std::nullopt;
  };
  if (value.is_array()) {
    for (const auto& q : value) {
      if (auto err = add(q)) return *err;
    }
  } else if (auto err = add(value)) {
    return *err;
  }
  return Query{};
}

std::optional<EsError> single_field(const json& body, const std::string& name, std::string_view raw,
                                    std::string& field, const json*& spec) {
  if (!body.is_object() || body.empty()) {
    return query_parsing_error("[" + name + "] query malformed, no start_object after query name", raw, name);
  }
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
  const json& body = query.begin().value();
  Query q;
  if (name == "match_all" || name == "match_none") {
    q.kind = name == "match_all" ? Query::Kind::kMatchAll : Query::Kind::kMatchNone;
    if (!body.is_object())
      return query_parsing_error("[" + name + "] query malformed, no start_object after query name", raw,
                                 name);
    return q;
  }
  if (name == "term" || name == "prefix") {
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
  if (name == "terms") {
    q.kind = Query::Kind::kTerms;
    const json* spec = nullptr;
    if (auto err = single_field(body, name, raw, q.field, spec)) return *err;
    if (!spec->is_array()) {
      return query_parsing_error("[terms] query does not support [" + q.field + "]", raw, q.field);
    }
    for (const auto& v : *spec) q.values.push_back(v);
    return q;
  }
  if (name == "ids") {
    q.kind = Query::Kind::kIds;
    if (!body.is_object())
      return query_parsing_error("[ids] query malformed, no start_object after query name", raw, name);
    for (const auto& [key, value] : body.items()) {
      if (key == "values" && value.is_array()) {
        for (const auto& v : value) q.values.push_back(v);
      } else if (key != "boost" && key != "_name") {
        return query_parsing_error("[ids] unknown field [" + key + "]", raw, key);
      }
    }
    return q;
  }
  if (name == "exists") {
    q.kind = Query::Kind::kExists;
    if (!body.is_object() || !body.contains("field") || !body["field"].is_string()) {
      return query_parsing_error("[exists] must be provided with a [field]", raw, name);
    }
    q.field = body["field"].get<std::string>();
    return q;
  }
  if (name == "match") {
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
  if (name == "range") {
    q.kind = Query::Kind::kRange;
    const json* spec = nullptr;
    if (auto err = single_field(body, name, raw, q.field, spec)) return *err;
    if (!spec->is_object()) {
      return query_parsing_error("[range] query malformed, after field missing start object", raw, q.field);
    }
    bool include_lower = true, include_upper = true;
    std::optional<json> from, to;
    for (const auto& [key, value] : spec->items()) {
      if (key == "gt")
        q.gt = value;
      else if (key == "gte")
        q.gte = value;
      else if (key == "lt")
        q.lt = value;
      else if (key == "lte")
        q.lte = value;
      else if (key == "from")
        from = value;
      else if (key == "to")
        to = value;
      else if (key == "include_lower")
        include_lower = value.is_boolean() && value.get<bool>();
      else if (key == "include_upper")
        include_upper = value.is_boolean() && value.get<bool>();
      else if (key == "format" || key == "time_zone" || key == "boost" || key == "_name" || key == "relation")
        continue;
      else
        return query_parsing_error("[range] query does not support [" + key + "]", raw, key);
    }
    if (from) (include_lower ? q.gte : q.gt) = *from;
    if (to) (include_upper ? q.lte : q.lt) = *to;
    return q;
  }
  if (name == "constant_score") {
    if (!body.is_object() || !body.contains("filter")) {
      return query_parsing_error("[constant_score] requires a 'filter' element", raw, name);
    }
    q.kind = Query::Kind::kBool;
    auto parsed = parse_clauses(body["filter"], raw, q.filter);
    if (auto* err = std::get_if<EsError>(&parsed)) return *err;
    return q;
  }
  if (name == "bool") {
    q.kind = Query::Kind::kBool;
    if (!body.is_object())
      return query_parsing_error("[bool] query malformed, no start_object after query name", raw, name);
    std::optional<json> msm;
    for (const auto& [key, value] : body.items()) {
      std::vector<Query>* target = nullptr;
      if (key == "must")
        target = &q.must;
      else if (key == "filter")
        target = &q.filter;
      else if (key == "should")
        target = &q.should;
      else if (key == "must_not" || key == "mustNot")
        target = &q.must_not;
      else if (key == "minimum_should_match") {
        msm = value;
        continue;
      } else if (key == "boost" || key == "_name" || key == "adjust_pure_negative")
        continue;
      else
        return query_parsing_error("[bool] query does not support [" + key + "]", raw, key);
      auto parsed = parse_clauses(value, raw, *target);
      if (auto* err = std::get_if<EsError>(&parsed)) return *err;
    }
    const int should_count = static_cast<int>(q.should.size());
    if (msm) {
      std::string s = msm->is_string() ? msm->get<std::string>() : msm->dump();
      int n = 0;
      if (!s.empty() && s.back() == '%') {
        int pct = std::atoi(s.c_str());
        n = pct >= 0 ? should_count * pct / 100 : should_count + should_count * pct / 100;
      } else {
        n = std::atoi(s.c_str());
        if (n < 0) n = should_count + n;
      }
      q.minimum_should_match = std::clamp(n, 0, should_count);
      // Elasticsearch matches nothing when more clauses are required than exist.
      if (n > should_count) q.minimum_should_match = n;
    } else {
      q.minimum_should_match = (!q.should.empty() && q.must.empty() && q.filter.empty()) ? 1 : 0;
    }
    return q;
  }
  EsError e = query_parsing_error("unknown query [" + name + "]", raw, name);
  e.caused_by = std::make_shared<EsError>(make_es_error(
      400, "named_object_not_found_exception", locate_value(raw, name) + "unknown field [" + name + "]"));
  return e;
}

std::variant<bool, EsError> query_matches(const Query& query, const Index& index, const std::string& id,
                                          const Doc& doc, long long now_millis) {
  try {
    return evaluate(query, index, id, doc, now_millis);
  } catch (const QueryShardError& e) {
    return make_es_error(400, "query_shard_exception", e.reason,
                         {{"index_uuid", index.uuid}, {"index", index.name}});
  }
}

}  // namespace eslease::esemu
